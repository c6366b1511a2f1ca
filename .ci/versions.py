"""Prints the installed release of each direct dependency pyproject.toml declares, one line:
what a run of the suite was tested against."""

import re
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

project = tomllib.loads(Path(__file__).resolve().parent.parent.joinpath("pyproject.toml").read_text())["project"]
declared = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
names = dict.fromkeys(re.split(r"[\s<>=!~\[;]", r, maxsplit=1)[0] for r in declared)


def installed(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "-"


print("tested with: " + ", ".join(f"{name} {installed(name)}" for name in names))
