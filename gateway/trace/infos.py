"""What normalizing one call's arguments and one result yields: the trace builder memoizes
these per text (``TraceSettings.memos``), so they stand apart from the normalizer that computes
them and from the settings that hold the memos."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ArgsInfo", "ResultInfo"]


class ArgsInfo(NamedTuple):
    canonical: str  # what the call does: without ignored, narrating and range keys and volatile
    # values (see volatile.scrub_args); a read's shell command as the read it is (shell.py)
    hash: str
    polling: bool  # the arguments match TraceSettings.polling_args_patterns
    text: str  # the free text of the arguments (roles.prose), "" when there is none
    text_only: bool  # the arguments are nothing but that free text
    read_only: bool  # a shell command that only reads (roles.read_only_command)
    target: str  # what the call acts on (target.call_target), "" when it names nothing
    action: str = ""  # ToolEvent.action: from the tool's role, else from its shell command
    paced: bool = False  # a shell command that sleeps before it acts
    file: str = ""  # the file it acts on, as spelled (target.file_of), "" when none


class ResultInfo(NamedTuple):
    hash: str  # hash of the normalized result
    error: bool  # error patterns or an error flag in a JSON result
    unknown: bool  # the result says the tool does not exist
    own_text_at: int | None  # where the gateway's own text begins (roles.own_text_start); the
    # three fields above describe the text before it
