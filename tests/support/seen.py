"""What the model was shown: LoopGuard's texts in a request the upstream received."""

MARK = "[loopguard]"  # starts every error observation for a vetoed call


def observations(request: dict) -> list[str]:
    """Error observations standing in for vetoed calls."""
    return [
        m["content"]
        for m in request["messages"]
        if m.get("role") == "tool" and str(m.get("content", "")).startswith(MARK)
    ]


def anchors(request: dict) -> list[str]:
    """Warnings injected as trailing system messages."""
    return [
        m["content"]
        for m in request["messages"]
        if m.get("role") == "system" and str(m.get("content", "")).startswith("[LoopGuard]")
    ]
