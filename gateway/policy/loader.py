"""Policy files: read (strict YAML, ``gateway.policy.strict_yaml``), compile, and find the
shipped packs."""

from __future__ import annotations

import re
from pathlib import Path

from gateway.policy.compile import compile_policy
from gateway.policy.engine import Registry, default_registry
from gateway.policy.model import Policy
from gateway.policy.schema import PolicyError
from gateway.policy.strict_yaml import read_yaml

_HERE = Path(__file__).resolve().parent
# Searched in this order: package data first (a regular wheel install ships the packs as
# gateway/policies/*.yaml), then the repository's top-level policies/ (a source checkout).
SHIPPED_DIRS: tuple[Path, ...] = (_HERE.parent / "policies", _HERE.parent.parent / "policies")
_PACK_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def load_policy(path: str | Path, registry: Registry | None = None) -> Policy:
    """Read and compile one policy file; every problem raises :class:`PolicyError`."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(file, "", f"cannot read the file: {exc}") from None
    return load_policy_text(text, file, registry)


def load_policy_text(text: str, file: str = "<policy>", registry: Registry | None = None) -> Policy:
    """Compile a policy from YAML text; ``file`` is only used in error messages and logs."""
    return compile_policy(read_yaml(text, file), file, registry or default_registry())


def load_shipped_policy(name: str = "default", registry: Registry | None = None) -> Policy:
    return load_policy(shipped_policy_path(name), registry)


def shipped_policy_path(name: str = "default") -> Path:
    """The file of a shipped pack (``default``, ``shadow``, ``warn-only``, ``strict``,
    ``openclaw``, ``weclaw``): gateway/policies/ first, then the repository's policies/."""
    stem = name.removesuffix(".yaml")
    if not _PACK_NAME.match(stem):
        raise ValueError(f"not a policy pack name: {name!r}")
    for folder in SHIPPED_DIRS:
        candidate = folder / f"{stem}.yaml"
        if candidate.is_file():
            return candidate
    searched = ", ".join(str(d) for d in SHIPPED_DIRS)
    raise FileNotFoundError(f"no shipped policy {stem!r} (searched {searched})")


def policy_path(ref: str, base: Path | None = None) -> Path:
    """A policy reference: a file (relative to ``base`` when given) or a shipped pack's name.
    Anything that exists, ends in .yaml/.yml or has a folder in it is a file (a missing one is
    reported when it is loaded); a bare name is a pack. Raises ValueError/FileNotFoundError
    for a name that is no pack."""
    path = Path(ref)
    if base is not None and not path.is_absolute():
        path = base / path
    if path.is_file() or path.suffix in (".yaml", ".yml") or "/" in ref:
        return path
    return shipped_policy_path(ref)


def shipped_policy_names() -> tuple[str, ...]:
    names = {p.stem for folder in SHIPPED_DIRS if folder.is_dir() for p in folder.glob("*.yaml")}
    return tuple(sorted(names))
