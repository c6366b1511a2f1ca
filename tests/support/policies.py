"""Policy texts for end-to-end tests."""

import textwrap
from pathlib import Path

OTHERS_OFF = {
    name: {"enabled": False}
    for name in (
        "exact_repeat",
        "similar_repeat",
        "error_repeat",
        "cycle",
        "unknown_tool",
        "tool_rounds",
        "cross_turn",
        "stagnation",
        "target_failure",
    )
}


def ladder_policy(extra: str = "", **no_progress) -> str:
    """Only no_progress, on a 3/4/5 ladder (warn 3, reject 4, terminate 5) unless overridden."""
    ladder = {"warn_at": 3, "reject_at": 4, "terminate_at": 5, **no_progress}
    lines = ["version: 1", "name: test-ladder", "detectors:"]
    lines += [f"  {name}: {{enabled: false}}" for name in OTHERS_OFF]
    lines.append("  no_progress: {" + ", ".join(f"{k}: {v}" for k, v in ladder.items()) + "}")
    return "\n".join(lines) + "\n" + textwrap.dedent(extra)


EXAMPLES = Path(__file__).resolve().parents[2] / "policies" / "examples"


def example_policy(name: str) -> str:
    """A shipped example policy's text (policies/examples/<name>.yaml)."""
    return (EXAMPLES / f"{name}.yaml").read_text(encoding="utf-8")
