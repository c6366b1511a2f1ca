"""Agent profiles: the shipped pack loads, a request is recognised from its tools, system prompt
or User-Agent, a policy can add, replace, force or switch off profiles, and every problem in a
profile names the file and the key."""

from __future__ import annotations

import re

import pytest
from support.recorded import recordings

from gateway.agents.catalog import AUTO, GENERIC, Catalog, ProfileError, derive, load_profile
from gateway.agents.profile import AgentProfile
from gateway.policy.loader import load_policy_text
from gateway.policy.schema import PolicyError
from gateway.policy.strict_yaml import shipped_profiles
from gateway.trace.model import Conversation, Turn
from gateway.trace.settings import TraceSettings


def profile(name: str, tools=(), system=(), user_agent=()) -> AgentProfile:
    return AgentProfile.model_validate(
        {"name": name, "recognize": {"tools": list(tools), "system": list(system), "user_agent": list(user_agent)}}
    )


def conv(tools=None, system="You are a helpful agent.") -> Conversation:
    return Conversation(
        (Turn(0, "system", system), Turn(1, "user", "go")), frozenset(tools) if tools is not None else None
    )


PARENT = profile("parent", tools=["run_shell_command", "read_file"])
FORK = profile("fork", tools=["run_shell_command", "read_file", "todo_write"])
NAMED = profile("named", system=["You are Named Agent"], user_agent=["named-cli/"])
CATALOG = Catalog((PARENT, FORK, NAMED))


@pytest.mark.parametrize(
    ("request_conv", "user_agent", "expected"),
    [
        (conv(["run_shell_command", "read_file", "glob"]), "", "parent"),
        (conv(["run_shell_command", "read_file", "todo_write"]), "", "fork"),  # the larger set wins
        (conv(["run_shell_command"]), "", None),  # one of two marking tools is not enough
        (conv(None), "", None),
        (conv(["run_shell_command", "read_file"], system="You are Named Agent, a CLI"), "", "named"),
        (conv(["run_shell_command", "read_file"]), "named-cli/1.2 (linux)", "named"),  # named beats tools
        (conv(["get_weather"]), "python-httpx/0.27", None),
    ],
)
def test_a_request_is_recognised_from_its_tools_system_prompt_or_user_agent(request_conv, user_agent, expected):
    found = CATALOG.recognise(request_conv, user_agent)
    assert (found.name if found else None) == expected


OVERLAP = profile("overlap", tools=["plan_step", "run_step", "look_step", "edit_step"])  # share 0.5: two of four


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        (["plan_step", "run_step"], "overlap"),  # tools a later version dropped
        (["run_step", "look_step", "edit_step", "new_step", "mcp__srv__query"], "overlap"),  # and added
        (["run_step", "get_weather", "send_mail"], None),  # one marking tool is no overlap
    ],
)
def test_recognition_by_tools_is_an_overlap_not_an_exact_set(declared, expected):
    found = Catalog((OVERLAP,)).recognise(conv(declared))
    assert (found.name if found else None) == expected


MARKED = {p.name for p in shipped_profiles() if p.recognize.tools}  # not mini-SWE-agent: `bash` alone names nothing


@pytest.mark.parametrize(
    "recording", [r for r in recordings() if r.wire.tools(r.body) and r.client in MARKED], ids=lambda r: r.name
)
def test_every_recorded_version_is_recognised_by_its_declared_tools_alone(recording):
    """With no system prompt or User-Agent to go by, the tools a recorded version declares name
    its agent, whatever its version added or dropped."""
    found = Catalog(shipped_profiles()).recognise(conv(recording.wire.tools(recording.body)))
    assert found is not None and found.name == recording.client


def test_a_catalog_can_force_a_profile_or_switch_recognition_off():
    assert Catalog((PARENT, NAMED), "named").recognise(conv(["get_weather"])).name == "named"
    assert Catalog((PARENT, NAMED), GENERIC).recognise(conv(["run_shell_command", "read_file"])) is None
    with pytest.raises(ValueError, match="unknown profile 'nope'"):
        Catalog((PARENT,), "nope")
    assert Catalog((), AUTO).recognise(conv(["run_shell_command", "read_file"])) is None


def test_the_shipped_profiles_load_with_unique_names_and_a_rule_each():
    profiles = shipped_profiles()
    names = [p.name for p in profiles]
    assert len(names) == len(set(names)) >= 3
    for p in profiles:
        rule = p.recognize
        assert rule.tools or rule.system or rule.user_agent, p.name


def test_no_two_shipped_profiles_claim_the_same_tool_set():
    sets = [frozenset(p.recognize.tools) for p in shipped_profiles() if p.recognize.tools]
    assert len(sets) == len(set(sets))


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"name": "Bad Name"}, "name"),
        ({"name": "x", "tools": {"Bash": {"action": "dance"}}}, "tools.Bash.action"),
        ({"name": "x", "results": {"volatile": ["(unclosed"]}}, "results.volatile.0"),
        ({"name": "x", "recognise": {"tools": ["a"]}}, "recognise"),
        ({"name": "x", "text_actions": "xml"}, "text_actions"),
    ],
)
def test_a_bad_profile_is_refused_naming_the_file_and_key(raw, problem):
    with pytest.raises(ProfileError, match=r"^agents/x\.yaml: .*" + re.escape(problem)):
        load_profile(raw, "agents/x.yaml")


POLICY = """
version: 1
profiles:
  - name: my_agent
    recognize: {tools: [do_thing, look_thing]}
    tools:
      do_thing: {action: shell, command: cmd, narration: [why]}
agents:
  - match: {header: forced}
    profile: my_agent
  - match: {header: plain}
    profile: none
"""


def test_a_policy_adds_its_own_profiles_first_and_entries_force_or_refuse_them():
    policy = load_policy_text(POLICY, "ops.yaml")
    tools = conv(["do_thing", "look_thing"])
    assert policy.resolve().for_agent(tools).profile == "my_agent"
    assert policy.resolve(agent="forced").for_agent(conv(["get_weather"])).profile == "my_agent"
    assert policy.resolve(agent="plain").for_agent(tools).profile == ""
    assert policy.resolve().for_agent(conv(["get_weather"])).profile == ""
    names = [p.name for p in policy.resolve().catalog.profiles]
    assert names[0] == "my_agent" and set(names) >= {p.name for p in shipped_profiles()}


def test_the_derived_policy_is_made_once_per_profile():
    policy = load_policy_text(POLICY, "ops.yaml").resolve()
    first = policy.for_agent(conv(["do_thing", "look_thing"]))
    assert policy.for_agent(conv(["do_thing", "look_thing", "extra"])) is first
    assert first.for_agent(conv(["get_weather"])) is first  # a derived policy stays what it is
    assert first.trace_settings.tool_roles["do_thing"].narration == ("why",)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("version: 1\nprofile: nope\n", "profile"),
        ("version: 1\nagents:\n  - match: {header: a}\n    profile: nope\n", "agents[0].profile"),
        ("version: 1\nprofiles:\n  - {name: x, results: {errors: ['(']}}\n", "profiles[0]"),
        ("version: 1\nprofiles:\n  - missing.yaml\n", "profiles[0]"),
    ],
)
def test_policy_problems_with_profiles_name_the_key(text, path):
    with pytest.raises(PolicyError) as caught:
        load_policy_text(text, "/tmp/ops.yaml")
    assert caught.value.path == path


def test_derived_settings_add_to_the_policys_own_and_keep_them():
    base = TraceSettings(extra_error_patterns=(r"^boom",), polling_tools=frozenset({"wait_job"}))
    agent = AgentProfile.model_validate(
        {
            "name": "a",
            "tools": {"todo": {"action": "plan"}},
            "results": {"errors": [r"^oops"], "volatile": [r"^id: \d+$"]},
        }
    )
    derived = derive(base, agent)
    assert derived.extra_error_patterns == (r"^boom", r"^oops")
    assert derived.polling_tools == frozenset({"wait_job"})
    assert "todo" in derived.neutral_tools and derived.profile == "a"
    assert derived.envelope_patterns == (r"^id: \d+$",)


@pytest.mark.parametrize(
    ("mode", "ending", "expected"),
    [
        ("error", "answer", ("answer", 422)),  # a client that retries every error gets the model's answer
        ("error", 404, ("error", 404)),  # ... or the status it takes as final
        ("error", None, ("error", 422)),
        ("answer", 404, ("answer", 422)),  # only error mode is changed
    ],
)
def test_a_profile_says_how_its_client_takes_the_end_of_a_run(mode, ending, expected):
    text = (
        f"version: 1\ninterventions: {{terminate: {{mode: {mode}}}}}\nprofiles:\n  - name: cli\n"
        f"    recognize: {{tools: [go]}}\n" + (f"    terminate: {{error: {ending}}}\n" if ending else "")
    )
    policy = load_policy_text(text, "ops.yaml").resolve().for_agent(conv(["go"]))
    terminate = policy.interventions.terminate
    assert (terminate.mode, terminate.status) == expected
