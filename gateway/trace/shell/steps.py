"""Structure: a chain's steps (``;``, ``&&``, ``||``, ``&``, a newline), each a pipeline of stages
(``|``), each stage its words, the files it redirects to or from, and the heredoc fed to it."""

from __future__ import annotations

from dataclasses import dataclass, field

from .lex import DOC, WORD

_CHAIN = frozenset({";", "&&", "||", "&", ";;"})
_PIPE = frozenset({"|", "|&"})
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_NOT_WRITTEN = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})


@dataclass(slots=True)
class Stage:
    words: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    doc: str | None = None  # heredoc or here-string fed to it


def steps(tokens: list[tuple[str, str]]) -> list[list[Stage]]:
    """The pipelines of ``tokens``; writing to ``/dev/null`` (or ``-``) touches no file."""
    found: list[list[Stage]] = [[Stage()]]
    redirect = ""
    docs: list[Stage] = []
    for kind, text in tokens:
        stage = found[-1][-1]
        if kind == DOC:
            if docs:
                docs.pop(0).doc = text
        elif kind == WORD:
            if redirect in _WRITE_OPS:
                if text not in _NOT_WRITTEN:
                    stage.writes.append(text)
            elif redirect == "<":
                stage.reads.append(text)
            elif redirect == "<<<":
                stage.doc = text
            else:
                stage.words.append(text)
            redirect = ""
        elif text in _CHAIN:
            found.append([Stage()])
        elif text in _PIPE:
            found[-1].append(Stage())
        elif text in ("<<", "<<-"):
            docs.append(stage)
        else:
            redirect = text
    return [[s for s in step if s.words or s.writes or s.reads] for step in found]
