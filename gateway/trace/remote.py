"""Which calls reach something outside the agent: a remote tool, and the server or host it names.

A tool that fails for every agent of a fleet at once is broken itself (an MCP server down, an
internal API refusing): that is news worth telling the fleet (gateway/fleet). A call the agent
makes on its own machine is not: a shell command, a file read or edit fails because of what it
ran or touched, and a test suite failing in many sessions says nothing about the shell tool. So:

- an MCP tool is remote: ``mcp__<server>__<tool>`` (Claude Code, Codex), ``<server>__<tool>``,
  ``mcp_<name>``; its server is the one the name gives;
- a fetch is remote (an agent profile's ``action: fetch``: web fetch, web search, a browser):
  its host is the one its URL names, when it names one;
- the agent's own work never is: the profile's read / edit / write / shell / search / list /
  poll / wait / delegate / plan / finish, a shell command line, and a tool of a client no
  profile knows whose name says it works on files or runs commands (``bash``, ``read_file``,
  ``run_tests``, ``list_dir`` ...);
- any other tool of a client no profile knows is remote (``lookup_customer``, ``get_weather``):
  an application's function tools are its APIs.

Pure and cached: a fleet uses a handful of tool names, looked up on every event of a request.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import urlsplit

COMMAND_MARK = "$ "  # a shell command's target (gateway/trace/target.py writes it so)
LOCAL_ACTIONS = frozenset(
    {"read", "edit", "write", "shell", "search", "list", "poll", "wait", "delegate", "plan", "finish"}
)
# Words in a tool name that say it works on the agent's own machine (split like
# gateway/trace/roles.py splits names: snake_case, camelCase, kebab-case).
LOCAL_WORDS = frozenset(
    {
        "bash",
        "shell",
        "sh",
        "zsh",
        "powershell",
        "exec",
        "execute",
        "terminal",
        "command",
        "cmd",
        "run",
        "python",
        "ipython",
        "jupyter",
        "notebook",
        "test",
        "tests",
        "pytest",
        "read",
        "write",
        "edit",
        "editor",
        "file",
        "files",
        "dir",
        "directory",
        "folder",
        "path",
        "ls",
        "glob",
        "grep",
        "patch",
        "diff",
        "replace",
        "str",
        "view",
        "cat",
        "mkdir",
        "workspace",
        "codebase",
        "todo",
        "todos",
        "think",
        "plan",
    }
)
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_MCP_PREFIX = re.compile(r"^mcp__(?P<server>[^_].*?)__(?P<tool>.+)$")
_SERVER_TOOL = re.compile(r"^(?P<server>[A-Za-z0-9][A-Za-z0-9-]*(?:_[A-Za-z0-9-]+)*)__(?P<tool>.+)$")


def endpoint(tool: str, action: str = "", target: str = "") -> str | None:
    """None for the agent's own work; for a remote tool, the MCP server or host its call names
    ("" when it names none). ``target``: the call's (``ToolEvent.target``)."""
    url = ""
    if target.startswith(COMMAND_MARK):
        url = COMMAND_MARK
    elif "http" in target:  # "GET https://..." when the arguments name a method beside the URL
        url = next((word for word in target.split() if word.startswith(("http://", "https://"))), "")
    return _endpoint(tool, action, url)


@lru_cache(maxsize=4096)
def _endpoint(tool: str, action: str, url: str) -> str | None:
    server = mcp_server(tool)
    if server is not None:
        return server
    if url == COMMAND_MARK:  # a command line, whatever the tool is called
        return None
    if action == "fetch":
        return _host(url)
    if action in LOCAL_ACTIONS or not tool:
        return None
    if any(word.lower() in LOCAL_WORDS for word in _WORDS.findall(tool)):
        return None
    return _host(url)


def mcp_server(tool: str) -> str | None:
    """The MCP server an MCP tool's name gives ("" for ``mcp_<name>``, which gives none); None
    when the name is not an MCP tool's."""
    found = _MCP_PREFIX.match(tool) or _SERVER_TOOL.match(tool)
    if found is not None:
        return found.group("server")
    return "" if tool.startswith("mcp_") else None


def _host(url: str) -> str:
    if not url or url == COMMAND_MARK:
        return ""
    try:
        return (urlsplit(url).hostname or "")[:120]
    except ValueError:
        return ""
