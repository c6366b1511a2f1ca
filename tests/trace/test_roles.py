"""What a call means for a loop: neutral, read-only looking, its free text, the gateway's own
text removed from its result, its user turn, and the earlier turns' events."""

from __future__ import annotations

import json

import pytest

from gateway.trace.builder import build_trace, is_genuine_user
from gateway.trace.model import Conversation, ToolCall, Turn
from gateway.trace.roles import looks_read_only, own_text_removed, prose
from gateway.trace.settings import TraceSettings

SETTINGS = TraceSettings()


def trace(*items, settings: TraceSettings = SETTINGS):
    """items: a str is a user message; (tool, args, result) a call with its result."""
    turns = [Turn(0, "system", "sys")]
    n = 0
    for item in items:
        if isinstance(item, str):
            turns.append(Turn(len(turns), "user", item))
            continue
        n += 1
        tool, args, result = item
        call = ToolCall(f"c{n}", tool, json.dumps(args))
        turns.append(Turn(len(turns), "assistant", "", (call,)))
        turns.append(Turn(len(turns), "tool", result, tool_call_id=call.id))
    return build_trace(Conversation(tuple(turns)), settings)


@pytest.mark.parametrize(
    ("tool", "args", "result", "neutral"),
    [
        ("think", {"thought": "x"}, "", "name"),
        (
            "TodoWrite",
            {"todos": [{"content": "a", "status": "pending"}]},
            "Todos have been modified successfully.",
            "name",
        ),
        ("update-plan", {"plan": "1. a"}, "ok", "name"),  # names compared without case and punctuation
        ("journal", {"entry": "I will retry the request once more after this."}, "Saved.", "shape"),
        (
            "journal",
            {"entry": "I will retry the request once more after this."},
            "Saved entry: I will retry the request once more after this.",
            "shape",
        ),  # an echo
        ("journal", {"entry": "I will retry the request once more after this."}, "x" * 200, None),  # says more
        ("journal", {"entry": "I will retry the request once more after this."}, "Error: disk full", None),
        ("send", {"path": "notes.txt", "text": "I will retry the request once more after this."}, "ok", None),
        ("bash", {"command": "git commit -m fix the parser bug now"}, "", None),  # a target key
        ("write_file", {"content": "x = 1\ny = 2\nprint(x + y)"}, "OK", None),  # not prose
    ],
)
def test_neutral_calls(tool, args, result, neutral):
    event = trace("go", (tool, args, result)).events[-1]
    assert (event.neutral, event.neutral_guess) == (neutral == "name", neutral == "shape")


def test_neutral_names_are_configurable():
    settings = TraceSettings(neutral_tools=frozenset({"ponder"}), neutral_by_shape=False)
    assert trace("go", ("Ponder", {"x": 1}, "long result " * 20), settings=settings).events[-1].neutral
    event = trace("go", ("think", {"thought": "a b c d e"}, ""), settings=settings).events[-1]
    assert not event.neutral and not event.neutral_guess


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("read_file", True),
        ("get_user_details", True),
        ("searchIssues", True),
        ("list_dir", True),
        ("Read", True),
        ("Bash", False),
        ("edit_file", False),
        ("update_order", False),
        ("get_and_update", False),
        ("run_tests", False),
    ],
)
def test_read_only_looking_names(name, expected):
    assert looks_read_only(name) is expected


def test_free_text_of_arguments():
    assert prose({"task": "Find the refund policy for enterprise plans"}) == (
        "Find the refund policy for enterprise plans",
        True,
    )
    assert prose({"query": "acme refund policy enterprise"})[0] == "acme refund policy enterprise"
    assert prose({"path": "/a/b.py"}) == ("", False)
    assert prose({"command": "ls -la /tmp && cat /etc/hosts"}) == ("", False)


@pytest.mark.parametrize(
    ("text", "is_prose"),
    [
        ("退款政策是什么请帮我查", True),  # scripts without spaces: a unit is a word
        ("환불 정책을 찾아 주세요 지금", True),
        ("返金ポリシーを教えてください", True),
        ("退款政策", False),  # too short to be prose in any script
        ("0" * 300_000, False),  # a long blob without spaces
        ("0" * 300_000 + "退款政策是什么请帮", True),  # its units counted to the very end
    ],
    ids=["chinese", "korean", "japanese", "short", "blob", "blob then chinese"],
)
def test_text_in_scripts_without_spaces(text, is_prose):
    assert (prose({"task": text})[0] == text) is is_prose


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("contents", "contents"),
        ("contents\n\n[LoopGuard] Loop detected (no progress): stop.", "contents"),
        ("contents\n[LoopGuard 循环告警] 检测到无进展", "contents"),  # list content joins parts by newlines
        ("[LoopGuard] Loop detected.", ""),  # appended to an empty result
        ("a\n[link](x)\n[loopguard] custom warning", "a\n[link](x)"),
        ("mentions [LoopGuard] mid-line", "mentions [LoopGuard] mid-line"),
    ],
)
def test_the_gateways_own_text_is_removed_from_results(text, expected):
    assert own_text_removed(text) == expected


def test_a_warning_appended_to_a_result_does_not_change_its_hash():
    plain = trace("go", ("read_file", {"path": "a"}, "same"))
    warned = trace("go", ("read_file", {"path": "a"}, "same\n\n[LoopGuard] Loop detected: stop repeating."))
    assert warned.events[-1].result_hash == plain.events[-1].result_hash
    assert warned.events[-1].result == "same"


def test_our_notes_as_user_messages_are_not_user_turns():
    for text in ("[LoopGuard] Loop detected", "[loopguard] rejected", "[LOOPGUARD] re-ask"):
        assert not is_genuine_user(Turn(0, "user", text))
    assert is_genuine_user(Turn(0, "user", "please try again"))
    # A warning placed as a user message keeps the run going.
    t = trace("go", ("a", {}, "x"), "[LoopGuard] Loop detected", ("a", {}, "x"))
    assert len(t.events) == 2


def test_earlier_user_turns_are_kept_as_prior_events():
    t = trace("one", ("a", {"i": 1}, "x"), ("b", {}, "y"), "two", ("a", {"i": 1}, "x"), "three", ("c", {}, "z"))
    assert [(e.tool, e.user_turn, e.step) for e in t.prior] == [("a", 1, -2), ("b", 1, -1), ("a", 2, 0)]
    assert [(e.tool, e.user_turn, e.step) for e in t.events] == [("c", 3, 1)]


def test_prior_events_are_bounded():
    items = ["one", *[("a", {"i": i}, "x") for i in range(50)], "two", ("b", {}, "y")]
    assert len(trace(*items).prior) == SETTINGS.prior_horizon
    assert trace(*items, settings=TraceSettings(prior_horizon=0)).prior == ()


def test_conversation_scope_has_no_prior_events_but_numbers_turns():
    t = trace("one", ("a", {}, "x"), "two", ("a", {}, "x"), settings=TraceSettings(scope="conversation"))
    assert t.prior == () and [e.user_turn for e in t.events] == [1, 2]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat notes.txt", True),
        ("ls -la /tmp", True),
        ("grep -rn TODO src | head -20", True),
        ("git status", True),
        ("git log --oneline -5", True),
        ("/usr/bin/strings ./chall | grep flag", True),
        ("cat > notes.txt", False),
        ("echo hi > f", False),
        ("ls && rm -rf build", False),
        ("git commit -m x", False),
        ("python3 exploit.py", False),
        ("sed -i s/a/b/ f", False),
        ("cat $(ls)", False),
        ("curl http://target/flag", False),
    ],
)
def test_shell_commands_that_only_read_are_observations(command, expected):
    assert trace("go", ("bash", {"command": command}, "out")).events[-1].observation is expected


@pytest.mark.parametrize(
    ("result", "status"),
    [
        ("<html><h1>403 Forbidden</h1></html>", "error"),
        ("HTTP/1.1 502 Bad Gateway", "error"),
        ("HTTP/1.1 200 OK\n\nhello", "ok"),
        ("See the 404 page design in docs/errors.md", "ok"),
    ],
)
def test_http_error_pages_are_failures(result, status):
    assert trace("go", ("fetch", {"url": "http://x"}, result)).events[-1].status == status
