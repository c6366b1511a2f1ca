"""How conversations become traces: scope, argument canonicalization, result normalization.

Validated once when a policy loads; the compiled patterns live on the instance so the hot path
never compiles a regex.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr

from gateway.trace.infos import ArgsInfo, ResultInfo
from gateway.trace.memo import Memo, TextKey
from gateway.trace.needles import Scanner
from gateway.trace.paths import CwdReader

# Keys whose values change on every call without meaning progress (OpenClaw's list: pid, duration,
# session id, cwd, message/file ids, timestamps). Compared case-insensitively.
DEFAULT_VOLATILE_KEYS: tuple[str, ...] = (
    "pid",
    "duration",
    "duration_ms",
    "durationms",
    "elapsed",
    "elapsed_ms",
    "took",
    "took_ms",
    "cwd",
    "session_id",
    "sessionid",
    "message_id",
    "messageid",
    "file_id",
    "fileid",
    "request_id",
    "requestid",
    "timestamp",
    "ts",
    "time",
    "created",
    "created_at",
    "updated_at",
)
# Text fragments that differ between otherwise identical results.
DEFAULT_VOLATILE_PATTERNS: tuple[str, ...] = (
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?",  # ISO timestamps
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",  # UUIDs
    r"\b(0x)?[0-9a-fA-F]{16,}\b",  # long hex ids
    # Durations ("3.2s", "4 minutes ago", `time`'s "0m0.004s").
    r"\b\d+(?:(\.\d+)?\s*(ms|milliseconds?|s|secs?|seconds?|minutes?|mins?)( ago)?|m\d+(\.\d+)?s)\b",
    # Harness lines coding-agent CLIs write around a command's output (Codex's exec_command:
    # "Chunk ID: 3f2a1b", "Original token count: 42", "Process running with session ID 1234"; its
    # "Wall time: 0.0021 seconds" is a duration), process ids and token counts: the value changes
    # on every call, the command's output does not. "Process exited with code N" is kept: the exit
    # code is the command's status. One branch: each branch costs a scan of the text.
    r"(?:Chunk ID: \S+|(?:token count|tokens?(?: used)?)[:=] ?\d+|"
    r"(?:session ID|pid|PID|process id|Process ID|process)[:= ]\s*\d{2,})",
    r"(?m:^\[\d+\] \d+$)",  # a shell's background job line: "[1] 12345"
)
DEFAULT_ERROR_PATTERNS: tuple[str, ...] = (
    r"^\s*(error|exception|fatal)\b",
    r"\bTraceback \(most recent call last\)",
    # A non-zero exit code written in the result: "Exit code: 1", "exit status 2", Codex's
    # "Process exited with code 1", "returned non-zero exit status 2".
    r"\b(?:(?:exit|return|exited with) (?:code|status)[:= ]+[1-9]\d*|non-zero exit (?:code|status))",
    r'"(is_error|isError|error)"\s*:\s*(true|"[^"]+")',
    r"^(npm|yarn|pnpm) (ERR!|error\b)",  # package managers print no "Error:" prefix
    r"^fatal: ",  # git
    r"^\s*MCP error -?\d+",  # an MCP server's JSON-RPC error, as MCP clients write it into the result
    r"\b(command not found|No such file or directory|Permission denied)\b",  # shell failures
    # An HTTP error page or status line ("403 Forbidden", "HTTP/1.1 502 Bad Gateway").
    r"\b[45]\d\d (Bad Request|Unauthorized|Forbidden|Not Found|Method Not Allowed|Conflict|"
    r"Too Many Requests|Internal Server Error|Bad Gateway|Service Unavailable|Gateway Timeout)\b",
    # The user refused the call (Cline and Roo Code's "The user denied this operation.", Claude
    # Code's "The user doesn't want to proceed with this tool use", Codex's "rejected by user",
    # Gemini CLI's "User cancelled"): it did not run, and asking again is another attempt.
    r"\A\s*(?:\[Operation Cancelled\]\s*(?:Reason:\s*)?)?(?:the )?user (?:denied|rejected|declined|cancell?ed|"
    r"doesn't want to proceed|did not allow)\b",
    r"\b(?:rejected|denied|declined|cancell?ed) by (?:the )?user\b",
)
# The failure vocabulary: what coding-agent editors, patch tools and linters write when they
# refuse an edit, in text rather than with an error flag (docs/detectors.md lists each with the
# agent that writes it). Matched case-sensitively, unlike error_patterns: the tools write them
# exactly so, and a case-sensitive list of literal phrases is scanned several times faster.
DEFAULT_FAILURE_PATTERNS: tuple[str, ...] = (
    "Your proposed edit has introduced new syntax error",  # SWE-agent's linting editor
    r"(?:Your|The) edit was not applied",
    "No replacement was performed",  # OpenHands str_replace_editor
    "did not appear verbatim in",
    "<tool_use_error>",  # Claude Code's refusals (String to replace not found, ...)
    "String to replace not found",
    r"Found \d+ matches of the string to replace",
    "File has not been read yet",
    "No changes to make: old_string and new_string are exactly the same",
    "apply_patch verification failed",  # Codex apply_patch
    r"Failed to find (?:expected lines|context)",
    r"(?m:^error: patch failed)",  # git apply
    # A Python failure's last line, unindented ("SyntaxError: ..."); indented, it is a
    # docstring's "Raises:" entry in a file being read.
    r"(?m:^[A-Z]\w*(?:Error|Exception): )",
    # Linter reports (flake8 / ruff codes, as SWE-agent echoes them), tsc.
    r"(?m:^[^\s:]+:\d+:\d+: [EF]\d{3}\b)",
    r"(?m:^- [EF]\d{3}\b)",
    r"error TS\d+: ",
)
# Calls that repeat by design while waiting for something (check_background_tasks polls a
# background task; Claude Code's BashOutput and Windsurf's command_status read a background
# job's output). Detectors skip them or judge them on their own, higher polling thresholds.
DEFAULT_POLLING_TOOLS: frozenset[str] = frozenset({"check_background_tasks", "BashOutput", "command_status"})
# Matched against the canonical (compact, sorted-key JSON) arguments: `sleep 30 && tail log` in a
# shell tool, OpenClaw's process tool with action poll.
DEFAULT_POLLING_ARGS_PATTERNS: tuple[str, ...] = (r"\bsleep\s+\d", r'"action":"poll"')
# Tools that carry no information for a loop: the agent thinking, planning, logging or keeping a
# to-do list with new text each time. Compared after lower-casing and dropping everything but
# letters and digits, so "TodoWrite", "todo_write" and "todo-write" are one name.
DEFAULT_NEUTRAL_TOOLS: frozenset[str] = frozenset(
    {
        "think",
        "thinking",
        "think_tool",
        "thought",
        "reasoning",
        "reflect",
        "reflection",
        "plan",
        "update_plan",
        "write_plan",
        "plan_update",
        "todo",
        "todos",
        "todo_write",
        "write_todos",
        "todo_read",
        "update_todos",
        "update_todo",
        "todo_update",
        "log",
        "log_thought",
        "log_note",
        "note",
        "take_note",
        "sequentialthinking",
        "scratchpad",
        "record_thought",
        "update_memory",
    }
)
# Argument keys whose value is fresh on every call by design (a request id, a nonce, a cache
# buster): ignored when arguments are compared. Compared case-insensitively. Narrower than
# DEFAULT_VOLATILE_KEYS: in arguments `time`, `session_id` or `file_id` name what to act on.
DEFAULT_VOLATILE_ARG_KEYS: tuple[str, ...] = (
    "request_id",
    "requestid",
    "nonce",
    "idempotency_key",
    "idempotencykey",
    "trace_id",
    "traceid",
    "span_id",
    "correlation_id",
    "correlationid",
    "client_request_id",
    "cache_buster",
    "cachebuster",
    "timestamp",
    "ts",
    "_t",
    "now",
    "sent_at",
)
# Argument keys that name what a call acts on, in order of preference: a call's target is the
# first of them it carries (see gateway/trace/target.py). A shell command's target is its head.
DEFAULT_TARGET_KEYS: tuple[str, ...] = (
    "path",
    "file_path",
    "filepath",
    "file",
    "filename",
    "notebook_path",
    "target_file",
    "url",
    "uri",
    "href",
    "query",
    "q",
    "search_query",
    "selector",
    "element",
    "locator",
    "xpath",
)
DEFAULT_COMMAND_KEYS: tuple[str, ...] = ("command", "cmd", "script")
# Argument keys that hold a file's path (a search or listing given a path, a generic client's
# read or write tool): a call's file is the first of them it carries (gateway/trace/paths.py).
DEFAULT_FILE_KEYS: tuple[str, ...] = (
    "file_path",
    "path",
    "filepath",
    "file",
    "filename",
    "notebook_path",
    "target_file",
    "absolute_path",
    "dir_path",
    "directory",
)
# Where agents state their working directory (the path is the first group that matched):
# Codex's <cwd>, "Working directory: /repo" (Claude Code, Copilot CLI), "I'm currently working
# in the directory: /repo" (Gemini CLI, Qwen Code), "Current Working Directory (/repo)" (Cline).
DEFAULT_CWD_PATTERNS: tuple[str, ...] = (
    r"<cwd>\s*([^<\s]+)\s*</cwd>",
    r"(?i:\bworking directory(?: is)?:\s*(/[^\s'\"`<>]*))",
    r"(?i:\bworking in the directory:?\s*(/[^\s'\"`<>]*))",
    r"(?i:\bcurrent working directory \((/[^)\s]*)\))",
)
DEFAULT_UNKNOWN_TOOL_PATTERNS: tuple[str, ...] = (
    r"\b(unknown|unrecognized|invalid|undefined) (tool|function)\b",
    r"\b(tool|function) .{0,60}\b(not found|does not exist|is not available)\b",
)


ACTIONS = ("read", "edit", "write", "shell", "search", "list", "fetch", "poll", "wait", "delegate", "plan", "finish")
Action = Literal[
    "read", "edit", "write", "shell", "search", "list", "fetch", "poll", "wait", "delegate", "plan", "finish"
]


def _valid_regex(pattern: str) -> str:
    """A bad pattern fails at load as a ValueError, which pydantic reports with its key path
    (e.g. ``error_patterns.2``), instead of a bare re.error later."""
    try:
        re.compile(f"(?:{pattern})")  # as _union will use it: e.g. "(?i)x" is refused there
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
    return pattern


Regex = Annotated[str, AfterValidator(_valid_regex)]


class ToolRole(BaseModel):
    """What one tool of a known agent does (an agent profile's ``tools`` entry, gateway/agents).

    ``target``: the argument naming what the call acts on (a path, a URL, a job id); ``command``:
    the argument holding a shell command line, whose files become the target; ``narration``:
    arguments the model rewrites on every call without changing what the call does (Claude
    Code's ``description``); ``range``: arguments that only pick a part of the target (a read's
    offset and limit). Narration and range are left out when calls are compared, so the same
    read past the end of a file is the same call whatever its offset.

    ``target`` and ``command`` are paths into the arguments: ``a.b`` walks objects, ``a[]``
    takes every element of a list (Cline's ``files[].path``; ``commands[]``: command lines run
    in turn). ``narration`` and ``range`` name keys left out wherever they appear."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Action
    target: str | None = None
    command: str | None = None
    narration: tuple[str, ...] = ()
    range: tuple[str, ...] = ()
    # The argument saying how long the call waits before it looks (Copilot CLI's read_bash
    # `delay`): a positive value makes the call a paced poll.
    wait: str | None = None
    # The tool waits by itself before it looks (Codex's write_stdin: five seconds at least):
    # every call is a paced poll.
    paced: bool = False


@dataclass(frozen=True, slots=True)
class _Memos:
    """The settings' per-text memos, one per kind of work (see gateway.trace.normalize)."""

    args: Memo[TextKey | tuple[str, str, TextKey], ArgsInfo]  # with the tool (a role) and cwd when set
    results: Memo[TextKey, ResultInfo]
    failures: Memo[bytes, tuple[str, str]]  # by the digest of result and arguments


class TraceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    scope: Literal["run", "conversation"] = "run"
    ignore_arg_keys: frozenset[str] = frozenset({"task_progress"})  # Cline's progress field
    volatile_keys: tuple[str, ...] = DEFAULT_VOLATILE_KEYS
    volatile_patterns: tuple[Regex, ...] = DEFAULT_VOLATILE_PATTERNS
    error_patterns: tuple[Regex, ...] = DEFAULT_ERROR_PATTERNS
    # Case-sensitive, like the tools' own texts (see DEFAULT_FAILURE_PATTERNS).
    failure_patterns: tuple[Regex, ...] = DEFAULT_FAILURE_PATTERNS
    # Added to error_patterns (which a policy replaces whole): an agent's own failure texts,
    # case-insensitive like error_patterns.
    extra_error_patterns: tuple[Regex, ...] = ()
    # A short random-looking token (6-15 hex digits with letters and digits mixed, or 8-40
    # letters and digits alternating at least 3 times: a chunk id, a nonce) in the first and last
    # 300 characters of a result (where harnesses and servers stamp them) is volatile too.
    scrub_random_tokens: bool = True
    # Arguments compared without fresh-per-call values: values under volatile_arg_keys, and,
    # with volatile_arg_values, string values that look volatile (UUIDs, long hex or base64
    # tokens, timestamps) unless their key names a target (path, url, command, *_id ...).
    volatile_arg_keys: tuple[str, ...] = DEFAULT_VOLATILE_ARG_KEYS
    volatile_arg_values: bool = True
    target_keys: tuple[str, ...] = DEFAULT_TARGET_KEYS
    command_keys: tuple[str, ...] = DEFAULT_COMMAND_KEYS
    file_keys: tuple[str, ...] = DEFAULT_FILE_KEYS
    # Relative paths are resolved against the working directory an agent states (first group).
    cwd_patterns: tuple[Regex, ...] = DEFAULT_CWD_PATTERNS
    unknown_tool_patterns: tuple[Regex, ...] = DEFAULT_UNKNOWN_TOOL_PATTERNS
    polling_tools: frozenset[str] = DEFAULT_POLLING_TOOLS
    polling_args_patterns: tuple[Regex, ...] = DEFAULT_POLLING_ARGS_PATTERNS
    # Only the latest `horizon` tool events of the scope are materialized (older ones are counted
    # in Trace.skipped): detectors look at bounded windows, so per-request cost and memory stay
    # bounded however long the run is. Must be >= the largest detector window.
    horizon: int = Field(default=64, ge=1)
    # Calls that never reset a repeat count (see DEFAULT_NEUTRAL_TOOLS); ``neutral_by_shape``
    # also marks a call whose arguments are only free text and whose result is trivial or echoes
    # it (a think tool by another name).
    neutral_tools: frozenset[str] = DEFAULT_NEUTRAL_TOOLS
    neutral_by_shape: bool = True
    # With scope run: tool events of earlier user turns kept for cross-turn evidence (0: none).
    prior_horizon: int = Field(default=32, ge=0)
    # Regexes (volatile text, error and unknown-tool patterns) scan the first and last
    # `scan_chars` characters of a result: stamps and error lines sit at the edges, and a 5 MB file
    # read must not cost a second per request. The middle still goes into the hash unscrubbed, so
    # results that differ there never look identical (the safe direction).
    scan_chars: int = Field(default=1024, ge=64)
    # --- what an agent profile adds (gateway/agents); empty for a generic client -------------
    profile: str = ""  # the recognised agent's profile name, for logs and audit
    tool_roles: dict[str, ToolRole] = Field(default_factory=dict)
    # Lines the agent's harness writes around every result (Gemini CLI's "Process Group PGID:
    # 1234", a shell id counting up): removed whole before results are compared or judged, so
    # the same output under a new envelope is the same output. Multi-line, case-sensitive.
    envelope_patterns: tuple[Regex, ...] = ()
    # The harness's own text that is not a failure (Qwen Code's "Error: (none)" in every shell
    # result): removed before error_patterns are matched. Multi-line, case-sensitive.
    not_error_patterns: tuple[Regex, ...] = ()
    # "Nothing found / nothing more" texts (a read past the end of a file, whatever the offset
    # it names): such a result is compared as empty. Multi-line, case-sensitive.
    empty_patterns: tuple[Regex, ...] = ()
    # User messages the harness writes itself ("Tool call error: No tool calls found"): not a
    # genuine user turn, so they never restart a run's counts.
    nudge_patterns: tuple[Regex, ...] = ()
    # Agents that act in text instead of tool calls, read as calls whose result is the next user
    # message: one ```bash block per reply (mini-SWE-agent in text mode), SEARCH/REPLACE edit
    # blocks (Aider), XML tags named after a tool of ``tool_roles`` (Cline before native tools,
    # Roo Code). See gateway/trace/harness.py.
    text_actions: Literal["none", "bash_block", "search_replace", "xml_tags"] = "none"
    # The user messages that answer text actions (Aider's refusal), or native calls whose results
    # the harness writes as a user message (Cline's "[read_file for 'a.py'] Result:"); a
    # ``result`` group, where a pattern has one, is the part that is the result. Empty: the next
    # user message answers text actions, whatever it says (a shell block's output). Multi-line.
    text_result_patterns: tuple[Regex, ...] = ()

    _volatile_keys: frozenset[str] = PrivateAttr()
    _volatile_arg_keys: frozenset[str] = PrivateAttr()
    _volatile_re: re.Pattern[str] | None = PrivateAttr()
    _error_re: re.Pattern[str] | None = PrivateAttr()
    _failure_re: re.Pattern[str] | None = PrivateAttr()
    _unknown_re: re.Pattern[str] | None = PrivateAttr()
    _scans: _Scans = PrivateAttr()
    _polling_re: re.Pattern[str] | None = PrivateAttr()
    _cwd_re: re.Pattern[str] | None = PrivateAttr()
    _cwd_reader: CwdReader = PrivateAttr()
    _file_keys: frozenset[str] = PrivateAttr()
    _command_keys: frozenset[str] = PrivateAttr()
    _memo: _Memos = PrivateAttr()
    _neutral: frozenset[str] = PrivateAttr()
    _envelope_re: re.Pattern[str] | None = PrivateAttr()
    _not_error_re: re.Pattern[str] | None = PrivateAttr()
    _empty_re: re.Pattern[str] | None = PrivateAttr()
    _nudge_re: re.Pattern[str] | None = PrivateAttr()
    _text_result_re: re.Pattern[str] | None = PrivateAttr()
    _xml_call_re: re.Pattern[str] | None = PrivateAttr()

    def model_post_init(self, _context: object) -> None:
        self._volatile_keys = frozenset(k.lower() for k in self.volatile_keys)
        self._volatile_re = _union(self.volatile_patterns, 0)
        self._volatile_arg_keys = frozenset(k.lower() for k in self.volatile_arg_keys)
        self._error_re = _union(self.error_patterns + self.extra_error_patterns, re.IGNORECASE | re.MULTILINE)
        self._failure_re = _union(self.failure_patterns, 0)
        self._unknown_re = _union(self.unknown_tool_patterns, re.IGNORECASE)
        self._polling_re = _union(self.polling_args_patterns, 0)
        self._cwd_re = _union(self.cwd_patterns, 0)
        self._cwd_reader = CwdReader(self._cwd_re)
        self._file_keys = frozenset(self.file_keys)
        self._command_keys = frozenset(self.command_keys)
        # Per-text results of normalization (see gateway.trace.memo): owned by this instance
        # because they depend on exactly these settings.
        self._memo = _Memos(Memo(4096), Memo(4096), Memo(1024))
        self._neutral = frozenset(_tool_key(n) for n in self.neutral_tools)
        self._envelope_re = _union(tuple(f"{p}\n?" for p in self.envelope_patterns), re.MULTILINE)
        self._not_error_re = _union(self.not_error_patterns, re.MULTILINE)
        self._empty_re = _union(self.empty_patterns, re.MULTILINE)
        self._scans = _Scans.of(self._error_re, self._failure_re, self._unknown_re, self._empty_re, self._polling_re)
        self._nudge_re = _union(self.nudge_patterns, re.MULTILINE)
        self._text_result_re = _union(self.text_result_patterns, re.MULTILINE)
        self._xml_call_re = _xml_calls(tuple(self.tool_roles)) if self.text_actions == "xml_tags" else None

    @property
    def volatile_key_set(self) -> frozenset[str]:
        return self._volatile_keys

    @property
    def volatile_re(self) -> re.Pattern[str] | None:
        return self._volatile_re

    @property
    def volatile_arg_key_set(self) -> frozenset[str]:
        return self._volatile_arg_keys

    @property
    def error_re(self) -> re.Pattern[str] | None:
        return self._error_re

    @property
    def failure_re(self) -> re.Pattern[str] | None:
        return self._failure_re

    @property
    def unknown_tool_re(self) -> re.Pattern[str] | None:
        return self._unknown_re

    @property
    def scans(self) -> _Scans:
        """The error, failure, unknown-tool and empty-result unions, each searched after its needles
        (``gateway.trace.needles``): what every new result is read with; and the polling union,
        what every new call's arguments are read with (a file's whole content among them)."""
        return self._scans

    @property
    def cwd_re(self) -> re.Pattern[str] | None:
        return self._cwd_re

    @property
    def file_key_set(self) -> frozenset[str]:
        return self._file_keys

    @property
    def command_key_set(self) -> frozenset[str]:
        return self._command_keys

    @property
    def cwd_reader(self) -> CwdReader:
        """The working directory stated in a conversation's opening texts (gateway/trace/paths.py)."""
        return self._cwd_reader

    @property
    def neutral_names(self) -> frozenset[str]:
        """``neutral_tools`` as :func:`tool_key` forms."""
        return self._neutral

    @property
    def envelope_re(self) -> re.Pattern[str] | None:
        return self._envelope_re

    @property
    def not_error_re(self) -> re.Pattern[str] | None:
        return self._not_error_re

    @property
    def empty_re(self) -> re.Pattern[str] | None:
        return self._empty_re

    @property
    def text_result_re(self) -> re.Pattern[str] | None:
        return self._text_result_re

    @property
    def nudge_re(self) -> re.Pattern[str] | None:
        return self._nudge_re

    @property
    def xml_call_re(self) -> re.Pattern[str] | None:
        """A tool call written as XML tags: group 1 the tool, group 2 its inner tags."""
        return self._xml_call_re

    @property
    def memos(self) -> _Memos:
        return self._memo


@lru_cache(maxsize=4096)  # a handful of tool names, looked up on every event of every request
def _tool_key(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


tool_key = _tool_key


def _xml_calls(tools: tuple[str, ...]) -> re.Pattern[str] | None:
    """``<tool>...</tool>`` for each of ``tools``: another tag (``<thinking>``) is prose."""
    if not tools:
        return None
    names = "|".join(re.escape(t) for t in sorted(tools, key=len, reverse=True))
    return re.compile(rf"<({names})>(.*?)</\1>", re.DOTALL)


@dataclass(frozen=True, slots=True)
class _Scans:
    error: Scanner | None
    failure: Scanner | None
    unknown: Scanner | None
    empty: Scanner | None
    polling: Scanner | None

    @classmethod
    def of(cls, *regexes: re.Pattern[str] | None) -> _Scans:
        error, failure, unknown, empty, polling = (Scanner.of(r) if r is not None else None for r in regexes)
        return cls(error, failure, unknown, empty, polling)


def _union(patterns: tuple[str, ...], flags: int) -> re.Pattern[str] | None:
    """One alternation regex per list: a single scan per result instead of one per pattern."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns), flags)
