"""curl, wget, httpie: the URL is the target; files named by ``-o``/``-O`` are written."""

from __future__ import annotations

from ..part import Part
from ..steps import Stage
from ..words import key, options, resolve

_VALUES = {
    "curl": frozenset(
        {
            "-X",
            "-H",
            "-d",
            "-o",
            "-u",
            "-A",
            "-e",
            "-m",
            "-w",
            "-b",
            "-c",
            "-F",
            "-T",
            "-x",
            "-K",
            "-r",
            "--data",
            "--data-raw",
            "--data-binary",
            "--data-urlencode",
            "--json",
            "--max-time",
            "--connect-timeout",
            "--retry",
            "--header",
            "--request",
            "--output",
            "--user",
            "--config",
            "--cert",
            "--key",
            "--cacert",
            "--resolve",
            "--limit-rate",
            "--user-agent",
            "--form",
        }
    ),
    "wget": frozenset(
        {
            "-O",
            "-P",
            "-o",
            "-t",
            "-T",
            "-a",
            "-e",
            "--header",
            "--output-document",
            "--directory-prefix",
            "--output-file",
            "--tries",
            "--timeout",
            "--user",
            "--password",
        }
    ),
}
_OUTPUTS = frozenset({"-o", "-O", "--output", "--output-document", "-T"})


def fetch(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """curl, wget: the URL is the target (files named by ``-o``/``-O`` are written)."""
    values = _VALUES.get(program, _VALUES["curl"])
    operands, flags = options(words, values, numbers=False)
    outputs = [resolve(v, cwd) for n, v in flags if n in _OUTPUTS and n in values and v and v != "-"]
    return Part(program, operands + outputs, "run", key(program, *operands))
