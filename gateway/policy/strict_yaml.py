"""Strict YAML, shared by policy files and agent profiles: duplicate keys are errors (PyYAML
would silently keep the last one, so an operator could edit a threshold that never applies);
syntax errors name the file and line.

Its own module so that both the loader and the compiler (which reads a policy's profile files)
import it: neither imports the other's caller.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from gateway.agents.catalog import read_profiles
from gateway.agents.profile import AgentProfile
from gateway.policy.schema import PolicyError

_MERGE_TAG = "tag:yaml.org,2002:merge"


@cache
def shipped_profiles() -> tuple[AgentProfile, ...]:
    """The agent profiles shipped in gateway/agents/profiles/, read once (package data)."""
    return read_profiles(read_yaml)


def read_yaml(text: str, file: str) -> Any:
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        reason = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        raise PolicyError(file, "", f"invalid YAML: {reason}", line=line) from None
    except yaml.YAMLError as exc:
        raise PolicyError(file, "", f"invalid YAML: {exc}") from None
    if data is None:
        raise PolicyError(file, "", "the file is empty")
    return data


# libyaml's parser where PyYAML was built with it (its wheels are): a policy or profile parses
# several times faster, and a hot reload or a gateway start reads several files.
_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_SafeLoader):  # type: ignore[misc]
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                continue  # "<<" merges may legitimately be overridden by explicit keys
            key = self.construct_object(key_node)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    f"duplicate key {key!r} (first at line {seen[key]});",
                    None,
                    "a repeated key would silently override the first",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line + 1
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping
