"""Cline's and Roo Code's older tool protocol: tools used as XML in the assistant's text, answered
in the next user message.

The model writes ``<read_file>\\n<path>src/a.ts</path>\\n</read_file>`` in its reply; the
extension runs the first such block (one tool per message) and answers with a user message whose
text opens ``[read_file for 'src/a.ts'] Result:``, then the result, then the editor's
``<environment_details>`` (open tabs, the time: context the harness adds to every message). The
replay reads the block as the call it is and the text after the marker as its result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# "[read_file for 'a.ts'] Result:", "[attempt_completion] Result:"
RESULT = re.compile(r"^\[(?P<name>[a-z_][a-z0-9_]*)(?: for [^\]]*)?\] Result:", re.DOTALL)
_TAG = re.compile(r"<([a-z_][a-z0-9_]*)>")
_PARAM = re.compile(r"<(?P<key>[a-z_][a-z0-9_]*)>(?P<value>.*?)</(?P=key)>", re.DOTALL)
ENVIRONMENT = "<environment_details>"
# The tools these extensions have declared in their prompts, for a last message no result
# answers (the run was cut there): read from a result marker otherwise.
KNOWN = frozenset(
    [
        "execute_command",
        "read_file",
        "write_to_file",
        "replace_in_file",
        "apply_diff",
        "insert_content",
        "search_and_replace",
        "search_files",
        "list_files",
        "list_code_definition_names",
        "codebase_search",
        "browser_action",
        "use_mcp_tool",
        "access_mcp_resource",
        "ask_followup_question",
        "attempt_completion",
        "new_task",
        "switch_mode",
        "plan_mode_respond",
        "fetch_instructions",
        "update_todo_list",
        "new_rule",
        "web_fetch",
        "condense",
        "report_bug",
        "load_mcp_documentation",
    ]
)


@dataclass(frozen=True, slots=True)
class XmlCall:
    name: str
    params: dict[str, str]
    text: str  # the reply's text without the block


def call_in(text: str, name: str | None) -> XmlCall | None:
    """The first block of tool ``name`` in ``text`` (``None``: of any tool this protocol knows)."""
    if name is None:
        name = next((m[1] for m in _TAG.finditer(text) if m[1] in KNOWN), None)
        if name is None:
            return None
    tool = re.escape(name)
    found = re.search(rf"<{tool}>(?P<inner>.*?)(?:</{tool}>|\Z)", text, re.DOTALL)
    if found is None:
        return None
    params = {m["key"]: _value(m["value"]) for m in _PARAM.finditer(found["inner"])}
    return XmlCall(name, params, (text[: found.start()] + text[found.end() :]).strip())


def result_name(text: str) -> str | None:
    found = RESULT.match(text.lstrip())
    return found["name"] if found else None


def split_result(texts: list[str]) -> tuple[str | None, list[str]]:
    """(the tool result, the other texts) of a user message's text blocks: the result is the text
    after the marker up to the editor's environment block; that block is left out entirely."""
    result: list[str] | None = None
    rest: list[str] = []
    for text in texts:
        stripped = text.lstrip()
        if stripped.startswith(ENVIRONMENT):
            continue
        marker = RESULT.match(stripped)
        if marker is not None and result is None:
            result = [stripped[marker.end() :].strip()]
        elif result is not None and not rest:
            result.append(text)
        else:
            rest.append(text)
    if result is None:
        return None, rest
    return "\n".join(t for t in result if t), rest


def _value(raw: str) -> str:
    return raw[1:-1] if raw.startswith("\n") and raw.endswith("\n") else raw.strip("\n")
