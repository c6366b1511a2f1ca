"""Paths made comparable: one file however a call spells it (gateway/trace/paths.py), and the
file each kind of call names (ToolEvent.file)."""

from __future__ import annotations

import json

import pytest

from gateway.trace.builder import build_trace
from gateway.trace.model import Conversation, ToolCall, Turn
from gateway.trace.paths import canonical_path, inside, patch_file, same_file, stated_cwd
from gateway.trace.settings import TraceSettings


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("./src/a.py", "src/a.py"),
        ("src//a.py/", "src/a.py"),
        ("'/repo/src/../lib/b.py'", "/repo/lib/b.py"),
        ("https://example.com/a.py", ""),
        ("src/**/*.py", ""),
        ("two words.py", ""),
        ("", ""),
    ],
)
def test_canonical_path(text, path):
    assert canonical_path(text) == path


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("/repo/src/a.py", "src/a.py", True),
        ("src/a.py", "/repo/src/a.py", True),
        ("/repo/src/a.py", "/other/src/a.py", False),
        ("/repo/lib/a.py", "src/a.py", False),
        ("a.py", "/repo/xa.py", False),
        ("a.py", "a.py", True),
        ("", "", False),
    ],
)
def test_same_file_matches_a_relative_spelling_by_suffix(a, b, same):
    assert same_file(a, b) is same


@pytest.mark.parametrize(
    ("path", "directory", "within"),
    [
        ("config/app.yaml", "config", True),
        ("/repo/config/app.yaml", "config", True),
        ("/repo/config/app.yaml", "/repo/config", True),
        ("/repo/configs/app.yaml", "/repo/config", False),
        ("src/a.py", ".", True),
        ("/etc/passwd", ".", False),
    ],
)
def test_inside(path, directory, within):
    assert inside(path, directory) is within


def test_a_patch_names_its_first_file():
    patch = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: b.py\n+z\n*** End Patch"
    assert patch_file(patch) == "src/a.py"
    assert patch_file("no patch here") == ""


@pytest.mark.parametrize(
    ("text", "cwd"),
    [
        ("<env>\nWorking directory: /home/u/repo\nIs directory a git repo: Yes\n</env>", "/home/u/repo"),
        ("<environment_context>\n  <cwd>/w/proj</cwd>\n</environment_context>", "/w/proj"),
        ("I'm currently working in the directory: /tmp/x\nHere is the folder structure", "/tmp/x"),
        ("Current Working Directory (/Users/me/p) Files", "/Users/me/p"),
        ("no directory stated", ""),
    ],
)
def test_the_working_directory_agents_state(text, cwd):
    assert stated_cwd([text], TraceSettings().cwd_re) == cwd


CWD = "/home/dev/repo"
CALLS = {
    "a read tool's path": ("read_file", {"path": "config/app.yaml"}),
    "an absolute path": ("read_file", {"path": f"{CWD}/config/app.yaml"}),
    "cat through a shell": ("bash", {"command": "cat ./config/app.yaml"}),
    "a ranged sed": ("bash", {"command": "sed -n '1,20p' config/app.yaml"}),
    "a cd, then a relative path": ("bash", {"command": f"cd {CWD}/config && head app.yaml"}),
    "a python one-liner": ("bash", {"command": "python3 -c \"print(open('config/app.yaml').read())\""}),
    "a search given the file": ("grep", {"pattern": "port", "path": "config/app.yaml"}),
    "a freeform patch": ("apply_patch", "*** Begin Patch\n*** Update File: config/app.yaml\n@@\n-a\n+b\n*** End Patch"),
    "a patch under input": (
        "apply_patch",
        {"input": "*** Begin Patch\n*** Update File: config/app.yaml\n*** End Patch"},
    ),
    "a patch through the shell": (
        "bash",
        {"command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: config/app.yaml\n*** End Patch\nEOF"},
    ),
}


@pytest.mark.parametrize("case", CALLS)
def test_every_way_to_reach_a_file_names_it_resolved_against_the_stated_directory(case):
    tool, args = CALLS[case]
    text = args if isinstance(args, str) else json.dumps(args)
    turns = (
        Turn(0, "system", f"Working directory: {CWD}"),
        Turn(1, "user", "look at the config"),
        Turn(2, "assistant", "", (ToolCall("c1", tool, text),)),
        Turn(3, "tool", "ok", tool_call_id="c1"),
    )
    (event,) = build_trace(Conversation(turns), TraceSettings()).events
    assert event.file == f"{CWD}/config/app.yaml"
