"""The failure vocabulary (refusals written as text get error status) and the configurable
failure patterns."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.trace.model import Status
from gateway.trace.normalize import classify, result_info
from gateway.trace.settings import TraceSettings

S = TraceSettings()

FAILURES = {
    "SWE-agent linting editor": "Your proposed edit has introduced new syntax error(s). Please read this error message "
    "carefully and then retry editing the file.\n\nERRORS:\n- E999 IndentationError: unexpected indent",
    "SWE-agent, not applied": "[File: /repo/a.py (20 lines total)]\n1: x = 1\nYour edit was not applied (file not modified).",
    "OpenHands str_replace": "ERROR:\nNo replacement was performed, old_str `x = 1` did not appear verbatim in /workspace/a.py.",
    "OpenHands, several matches": "No replacement was performed. Multiple occurrences of old_str `x` in lines [3, 9].",
    "Claude Code, not found": "<tool_use_error>String to replace not found in file.\nString: x = 1</tool_use_error>",
    "Claude Code, not read": "File has not been read yet. Read it first before writing to it.",
    "Claude Code, many matches": "Found 3 matches of the string to replace, but replace_all is false.",
    "Claude Code, no change": "No changes to make: old_string and new_string are exactly the same.",
    "Codex apply_patch": "apply_patch verification failed: Failed to find expected lines in /repo/a.py:\n    x = 1",
    "Codex, context": "Failed to find context '@@ def f' in /repo/a.py",
    "git apply": "error: patch failed: src/a.py:12\nerror: src/a.py: patch does not apply",
    "ERROR: prefix": "ERROR: Cannot find module 'left-pad'",
    "flake8 report": "src/a.py:3:1: E999 SyntaxError: invalid syntax\n3 | def f(:\n  |      ^",
    "ruff-style echo": "- F821 undefined name 'tokens'\n\n40: return tokens",
    "tsc": "src/index.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.",
    "Python error line": "  File \"run.py\", line 3\n    def f(\n         ^\nSyntaxError: '(' was never closed",
    "Exit code: 1": "> jest\n1 test suite failed\nExit code: 1",
    "exit status 2": "make: *** [build] Error 2\nexit status 2",
    "Codex exit line": "Chunk ID: 3f2a1b\nWall time: 0.0100 seconds\nProcess exited with code 1\nOutput:\nboom",
    "non-zero exit": "Command 'ls x' returned non-zero exit status 2.",
}
SUCCESSES = {
    "Codex exit 0": "Chunk ID: 3f2a1b\nWall time: 0.0100 seconds\nProcess exited with code 0\nOutput:\nhello",
    "Exit code: 0": "ok\nExit code: 0",
    "edited": "The file /workspace/a.py has been edited. Here's the result of running `cat -n` on a snippet:\n 1\tx = 2",
    "code mentioning errors": "def handle(err):\n    raise ValueError(err)  # an error path\n",
    "a linter's clean report": "All checks passed!",
    "a docstring's Raises entry": 'def f(x):\n    """Parse x.\n\n    Raises:\n        ValueError: if x is empty.\n    """',
    "an except clause": "try:\n    run()\nexcept ValueError: pass",
}


def status(text: str, settings: TraceSettings = S) -> Status:
    return classify(result_info(text, settings), None, True)


@pytest.mark.parametrize("text", FAILURES.values(), ids=FAILURES.keys())
def test_refusals_and_exit_codes_written_as_text_are_failures(text):
    assert status(text) is Status.ERROR


@pytest.mark.parametrize("text", SUCCESSES.values(), ids=SUCCESSES.keys())
def test_successes_stay_successes(text):
    assert status(text) is Status.OK


def test_extra_error_patterns_add_to_the_built_in_vocabulary():
    settings = TraceSettings(extra_error_patterns=(r"^REFUSED\b",))
    assert status("REFUSED: the sandbox forbids writes", settings) is Status.ERROR
    assert status(FAILURES["OpenHands str_replace"], settings) is Status.ERROR  # built-ins still apply
    assert status("REFUSED: x") is Status.OK  # not a default


def test_a_bad_extra_pattern_is_refused_at_load_with_its_key_path():
    with pytest.raises(ValidationError) as error:
        TraceSettings(extra_error_patterns=("ok", "(unclosed"))
    assert "extra_error_patterns.1" in str(error.value)
