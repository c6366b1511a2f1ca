"""The text work behind a ToolEvent: canonical arguments, normalized results, hashes, status.

Everything here is a pure function of the text and the TraceSettings; the results are memoized on
the settings (``TraceSettings.memos``) because every request carries the whole conversation again
and the same texts would otherwise be parsed, scrubbed and hashed on each one.
"""

from __future__ import annotations

import json
import re
from hashlib import blake2b
from typing import Any

import orjson

from gateway.trace.failure import failure_shapes
from gateway.trace.infos import ArgsInfo, ResultInfo
from gateway.trace.memo import Memo, TextKey
from gateway.trace.model import Status
from gateway.trace.needles import Scanner
from gateway.trace.paths import respelled
from gateway.trace.roles import own_text_start, prose, read_only_command
from gateway.trace.settings import ToolRole, TraceSettings
from gateway.trace.target import acted_on, call_target, file_of
from gateway.trace.volatile import PLACEHOLDER, scrub_args, scrub_random

__all__ = [
    "EMPTY_RESULT_HASH",
    "PLACEHOLDER",
    "ArgsInfo",
    "ResultInfo",
    "args_info",
    "canonical_args",
    "classify",
    "failure_hash",
    "normalize_result",
    "parsed_args",
    "result_info",
    "text_hash",
]
UNKNOWN_SCAN_CHARS = 300  # agents report an unknown tool in a short leading message
RANDOM_SCAN_CHARS = 300  # random-looking tokens are scrubbed this close to a result's edges only
_MEMO_KEY_CHARS = 4096  # longer texts are memoized by digest so the memo never pins big strings
_INVALID = object()
_JSON_START = frozenset('{["-0123456789tfn')
_ERROR_FLAGS = ("is_error", "isError")
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "returnCode")


def text_hash(text: str) -> str:
    """Fast, stable across processes and replicas (unlike ``hash()``), 64 bits."""
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


# The result hash of an empty result, and of one the agent's profile reads as "nothing found /
# nothing new" (TraceSettings.empty_patterns): a read past the end, an unchanged file's stub.
EMPTY_RESULT_HASH = text_hash("")


# --- arguments -------------------------------------------------------------------------------


def canonical_args(raw: str, ignore_keys: frozenset[str] = frozenset()) -> str:
    """Sorted-key compact JSON without ignored keys (at any depth); raw text when not JSON."""
    return _canonical(raw, ignore_keys)[0]


def _canonical(raw: str, ignore_keys: frozenset[str]) -> tuple[str, Any]:
    value = _loads(raw)
    if value is _INVALID:
        return raw, None
    try:
        if ignore_keys:
            value = _drop_keys(value, ignore_keys, fold=False)
        return _dumps(value), value
    except RecursionError:  # absurdly deep JSON: compare it as text rather than fail
        return raw, None


def parsed_args(raw: str) -> Any:
    """The arguments as parsed JSON; None when they are not JSON."""
    value = _loads(raw)
    return None if value is _INVALID else value


def args_info(
    raw: str,
    settings: TraceSettings,
    memo: Memo[ArgsKey, ArgsInfo] | None = None,
    tool: str | None = None,
    cwd: str = "",
) -> ArgsInfo:
    """Canonical arguments, their hash and polling mark; ``memo`` defaults to the settings' own
    (callers in a loop pass it in: reading a pydantic private attribute is slow). ``tool``: the
    call's tool, read through its role when the agent's profile names one; ``cwd``: the working
    directory the agent states, paths under it compared relative to it."""
    memo = memo if memo is not None else settings.memos.args
    role = settings.tool_roles.get(tool) if tool is not None and settings.tool_roles else None
    text = _memo_key(raw)
    key: ArgsKey = text
    if (role is not None and tool is not None) or cwd:
        key = (tool if role is not None and tool is not None else "", cwd, text)
    info = memo.get(key)
    if info is None:
        info = _args_info(raw, settings, role, cwd)
        memo.put(key, info)
    return info


# An arguments text's memo key: itself (or its digest), with the tool whose role reads it and the
# working directory its paths are relative to when there are.
ArgsKey = TextKey | tuple[str, str, TextKey]


def _args_info(raw: str, settings: TraceSettings, role: ToolRole | None, cwd: str = "") -> ArgsInfo:
    ignored = settings.ignore_arg_keys
    if role is not None and (role.narration or role.range):
        ignored = ignored | frozenset(role.narration) | frozenset(role.range)
    canonical, value = _canonical(raw, ignored)
    polling_scan = settings.scans.polling
    polling = polling_scan is not None and polling_scan.search(canonical)
    compared = value
    if value is not None and (settings.volatile_arg_keys or settings.volatile_arg_values):
        compared = scrub_args(value, settings.volatile_arg_key_set, settings.volatile_arg_values)
    found = acted_on(value, role, settings.target_keys, settings.command_keys)
    if found.command is not None and found.read_key and isinstance(compared, dict):
        # One read of one file, whatever program, range or flags spell it: `cat a`, `tail -1 a`
        # and `sed -n '5,9p' a` read the same file (a poll spelled many ways, a read past the end).
        compared = {**compared, found.command: found.read_key}
    if isinstance(compared, dict):
        commands = settings.command_key_set if found.command is None else settings.command_key_set | {found.command}
        compared = respelled(compared, settings.file_key_set, commands, cwd)
    if compared != value:  # scrub_args always copies: dump again only when something changed
        canonical = _dumps(compared)
    target = found.target or call_target(value, settings.target_keys, settings.command_keys)
    return ArgsInfo(
        canonical,
        text_hash(canonical),
        polling,
        *prose(value),
        read_only_command(value),
        target,
        found.action,
        found.paced,
        file_of(value, raw, found, settings.file_keys),
    )


# --- results ---------------------------------------------------------------------------------


def _without_envelope(text: str, settings: TraceSettings) -> str:
    """``text`` without the lines the agent's harness writes around a result
    (``TraceSettings.envelope_patterns``, at the edges where harnesses write them)."""
    envelope_re = settings.envelope_re
    return text if envelope_re is None else _edges(envelope_re, "", text, settings.scan_chars)


def normalize_result(text: str, settings: TraceSettings) -> str:
    """Volatile JSON keys dropped at any depth, volatile text scrubbed (at the edges, see
    ``TraceSettings.scan_chars``), surrounding whitespace removed."""
    text = _without_envelope(text, settings)
    return _normalize(text.strip(), _result_json(text), settings)


def result_info(text: str, settings: TraceSettings, memo: Memo[TextKey, ResultInfo] | None = None) -> ResultInfo:
    """Hash and flags of a tool result, judged without the gateway's own text appended to it
    (a warning placed in the last tool result)."""
    memo = memo if memo is not None else settings.memos.results
    key = _memo_key(text)
    info = memo.get(key)
    if info is None:
        cut = own_text_start(text)
        if cut is not None:
            text = text[:cut]
        text = _without_envelope(text, settings)
        value = _result_json(text)  # parsed once for both the hash and the error flags
        empty = _scan(settings.scans.empty, text, settings.scan_chars)
        info = ResultInfo(
            text_hash("" if empty else _normalize(text.strip(), value, settings)),
            _json_error(value) or _matches_error(text, settings),
            _says_unknown(text, settings),
            cut,
        )
        memo.put(key, info)
    return info


def failure_hash(
    result: str, raw_args: str, settings: TraceSettings, memo: Memo[bytes, tuple[str, str]] | None = None
) -> tuple[str, str]:
    """The hashes of a failed call's refusal without the attempt it echoes, and of the failure
    with only its places folded (failure.py: ``failure_shapes``), volatile text scrubbed first."""
    memo = memo if memo is not None else settings.memos.failures
    # By digest: the pair would pin two texts, and the memo's byte bound counts strings only.
    key = blake2b(f"{result}\0{raw_args}".encode("utf-8", "surrogatepass"), digest_size=16).digest()
    hashes = memo.get(key)
    if hashes is None:
        shape, failure = failure_shapes(normalize_result(result, settings), parsed_args(raw_args), raw_args)
        hashes = (text_hash(shape), text_hash(failure))
        memo.put(key, hashes)
    return hashes


def _result_json(text: str) -> Any:
    body = text.strip()
    return _loads(body) if body[:1] in ("{", "[") else _INVALID


def _normalize(body: str, value: Any, settings: TraceSettings) -> str:
    out = body
    if value is not _INVALID:
        try:
            out = _dumps(_drop_keys(value, settings.volatile_key_set, fold=True))
        except RecursionError:
            pass
    out = _scrub(out, settings)
    # When the volatile part is all there is (`date -Iseconds`, a JSON result whose every field
    # is a stamp or an id), it is the content: comparing the rest would call every call the same.
    return body if out != body and _only_volatile(_HARNESS.sub("", out)) else out


def _only_volatile(text: str) -> bool:
    return len(text) <= 256 and not any(ch.isalnum() for ch in text.replace(PLACEHOLDER, ""))


# The lines coding-agent harnesses write around a command's output (Codex's exec_command): a
# clock read through such a harness is still only a clock.
_HARNESS = re.compile(
    r"^(Chunk ID|Wall time|Process exited with code|Original|Output|Exit code|"
    r"Process running with|Total output lines)\b.*$",
    re.MULTILINE,
)


def classify(info: ResultInfo | None, is_error: bool | None, declared: bool | None) -> Status:
    """ok | error | missing | unknown_tool for one executed call.

    An explicit protocol flag beats the patterns. A call to an undeclared tool is unknown_tool
    when it failed (the agent's "no such tool"); when it succeeded the agent evidently has the
    tool (tool lists change between requests), so it is not reported as unknown.
    """
    if info is None:
        return Status.MISSING
    if info.unknown and declared is not True:  # a declared tool exists, whatever its result says
        return Status.UNKNOWN_TOOL
    failed = info.error if is_error is None else is_error
    if failed and declared is False:
        return Status.UNKNOWN_TOOL
    return Status.ERROR if failed else Status.OK


def _matches_error(text: str, settings: TraceSettings) -> bool:
    not_error_re = settings.not_error_re
    if not_error_re is not None:  # the harness's "Error: (none)" says there was none
        text = _edges(not_error_re, "", text, settings.scan_chars)
    scans = settings.scans
    return any(_scan(scan, text, settings.scan_chars) for scan in (scans.error, scans.failure))


def _edges(regex: re.Pattern[str], replacement: str, text: str, n: int) -> str:
    """``text`` with ``regex`` replaced in its first and last ``n`` characters (where harnesses
    write their lines; a big result's middle is the tool's own output)."""
    if len(text) <= 2 * n:
        return regex.sub(replacement, text)
    return regex.sub(replacement, text[:n]) + text[n:-n] + regex.sub(replacement, text[-n:])


def _scan(scan: Scanner | None, text: str, n: int) -> bool:
    if scan is None:
        return False
    if len(text) <= 2 * n:
        return scan.search(text)
    return scan.search(text, 0, n) or scan.search(text, len(text) - n)


def _says_unknown(text: str, settings: TraceSettings) -> bool:
    unknown = settings.scans.unknown
    return unknown is not None and unknown.search(text, 0, UNKNOWN_SCAN_CHARS)


def _json_error(value: Any) -> bool:
    """An error flag or a non-zero exit code at the top of a JSON object result."""
    if not isinstance(value, dict):
        return False
    if any(value.get(k) is True for k in _ERROR_FLAGS):
        return True
    if value.get("error") not in (None, False, "", [], {}):
        return True
    return any(type(value.get(k)) is int and value.get(k) != 0 for k in _EXIT_KEYS)


def _scrub(text: str, settings: TraceSettings) -> str:
    volatile_re = settings.volatile_re
    if volatile_re is not None:
        text = _edges(volatile_re, PLACEHOLDER, text, settings.scan_chars)
    if settings.scrub_random_tokens:
        n = RANDOM_SCAN_CHARS
        text = (
            scrub_random(text) if len(text) <= 2 * n else scrub_random(text[:n]) + text[n:-n] + scrub_random(text[-n:])
        )
    return text


# --- JSON helpers ----------------------------------------------------------------------------


def _loads(text: str) -> Any:
    if not text or text.lstrip()[:1] not in _JSON_START:
        return _INVALID
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:  # valid JSON orjson refuses: integers beyond 64 bits, lone surrogates
        return json.loads(text)
    except (ValueError, RecursionError):
        return _INVALID


def _dumps(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _drop_keys(value: Any, keys: frozenset[str], *, fold: bool) -> Any:
    if isinstance(value, dict):
        return {k: _drop_keys(v, keys, fold=fold) for k, v in value.items() if (k.lower() if fold else k) not in keys}
    if isinstance(value, list):
        return [_drop_keys(v, keys, fold=fold) for v in value]
    return value


def _memo_key(text: str) -> TextKey:
    if len(text) <= _MEMO_KEY_CHARS:
        return text
    return len(text), blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
