"""A run's timeline as an HTML table: tool calls as rows, repeats highlighted, a mark on each
step where an action fired, and a stop line past which nothing would have happened. The replay
report and the operator console's run page both render it, with the style in ``style.CSS``."""

from __future__ import annotations

from html import escape

from gateway.replay.model import Row

SHORT = 90  # characters of arguments/results shown in a cell; the full text is in the tooltip


def timeline_table(rows: list[Row], cut: int | None = None, stop: str = "", marks: str = "would") -> str:
    """``cut``: the message index from which calls are past the stop (``stop`` names it);
    ``marks``: the heading of the actions' column (a replay says what would have fired)."""
    head = (
        "<thead><tr><th>step</th><th>msg</th><th>tool</th><th>arguments</th><th>result</th>"
        f"<th>repeat</th><th>{escape(marks)}</th></tr></thead>"
    )
    out, stopped = [], False
    for row in rows:
        after = cut is not None and row.message >= cut
        if after and not stopped:
            stopped = True
            out.append(
                f'<tr class="stop-line"><td colspan="7">{escape(stop)}: what follows would not have happened</td></tr>'
            )
        out.append(_row(row, after=after))
    return f'<table class="timeline">{head}<tbody>{"".join(out)}</tbody></table>'


def _row(row: Row, after: bool) -> str:
    classes = ["call"]
    if row.repeat > 1:
        classes.append("repeat")
        classes.append(f"heat-{min(row.repeat, 6)}")
    if row.marks:
        classes.append("fires")
        classes += [f"fires-{m.action}" for m in row.marks]
    if row.dropped:
        classes.append("dropped")
    if after:
        classes.append("after-stop")
    marks = "".join(
        f'<span class="mark mark-{m.action}" data-action="{m.action}" data-detector="{escape(m.detector)}" '
        f'title="{escape(m.description)}">{m.action} &middot; {escape(m.detector)} &times;{m.count}'
        f"<small>{m.phase}</small></span>"
        for m in row.marks
    )
    if row.dropped:
        marks += '<span class="mark mark-dropped">dropped with its round</span>'
    repeat = f'<span class="times">&times;{row.repeat}</span>' if row.repeat > 1 else ""
    return (
        f'<tr class="{" ".join(classes)}" data-step="{row.step}" data-repeat="{row.repeat}">'
        f'<td class="step">{row.step}</td><td class="msg">{row.message}</td>'
        f'<td class="tool">{escape(row.tool)}</td>{_text(row.args, "args")}{_text(row.result, "result")}'
        f'<td class="repeat">{repeat}</td><td class="marks">{marks}</td></tr>'
    )


def _text(text: str | None, cls: str) -> str:
    if text is None:
        return f'<td class="{cls} none">-</td>'
    flat = " ".join(text.split())
    short = flat if len(flat) <= SHORT else flat[:SHORT] + "\u2026"
    return f'<td class="{cls}" title="{escape(flat[:2000])}"><code>{escape(short)}</code></td>'
