"""The state store is reached through one layer: outside ``gateway.state`` only
``gateway.guard.store`` calls it. The pipeline and the LiteLLM guardrail hold the store only
to hand it to the guard or to a protocol's server-kept history."""

import ast
from pathlib import Path

from gateway.state import claims
from gateway.state.base import StateStore

ROOT = Path(__file__).resolve().parents[2] / "gateway"
METHODS = {name for name in vars(StateStore) if not name.startswith("_")}
STORE_HELPERS = {claims.claim.__name__, claims.owned.__name__}  # gateway.state helpers taking the store


def store_calls(path: Path) -> list[str]:
    """``<...>.store.<method>(...)`` / ``store.<method>(...)`` and ``owned.<helper>(...)`` calls."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        target, name = node.func.value, node.func.attr
        held = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
        if (held == "store" and name in METHODS) or (held == "owned" and name in STORE_HELPERS):
            found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {held}.{name}")
    return found


def test_the_pipeline_and_the_integrations_never_call_the_store():
    files = [*(ROOT / "pipeline").rglob("*.py"), *(ROOT / "integrations").rglob("*.py")]
    assert files and {"add_veto", "session_state", "add_warned"} <= METHODS
    assert [call for path in files for call in store_calls(path)] == []


def test_inside_the_guard_only_its_store_module_does():
    calls = [call for path in (ROOT / "guard").rglob("*.py") for call in store_calls(path)]
    assert calls and all(call.startswith("gateway/guard/store.py:") for call in calls)
