"""Tool-call delta entries shaped as providers stream them, for stream tests."""

from typing import Any

OMIT: Any = object()  # leave ``index`` out: a shape some gateways break on


def tc(index: Any = OMIT, id: str | None = None, name: str | None = None, args: str | None = None) -> dict:
    """One tool-call delta entry; only the given fields appear (``index`` omitted with OMIT)."""
    entry: dict[str, Any] = {} if index is OMIT else {"index": index}
    if id is not None:
        entry.update(id=id, type="function")
    function = {}
    if name is not None:
        function["name"] = name
    if args is not None:
        function["arguments"] = args
    if function:
        entry["function"] = function
    return entry
