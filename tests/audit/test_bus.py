"""The bus is a plain loop over sinks: a failing sink is logged, counted and skipped."""

from __future__ import annotations

from structlog.testing import capture_logs
from support.guarded import sample_event as event

from gateway.audit.bus import AuditBus, build_bus
from gateway.audit.memory_sink import MemorySink
from gateway.config import AuditConfig, Config, ConfigError, load_config


class Broken:
    name = "broken"

    def emit(self, event):
        raise OSError("disk full")

    def start(self):
        raise PermissionError("no")


async def test_a_failing_sink_is_skipped_and_counted():
    first, last = MemorySink(), MemorySink()
    bus = AuditBus([first, Broken(), last])
    with capture_logs() as logs:
        await bus.start()
        bus.emit(event())
        bus.emit(event())
        await bus.stop()
    assert len(first.events) == len(last.events) == 2
    assert bus.errors["broken"] == 3  # one start, two emits
    failures = [e for e in logs if e["event"] == "audit.sink_failed"]
    assert failures[0]["sink"] == "broken" and failures[0]["error"] == "PermissionError"


def test_log_sink_is_always_first():
    bus = build_bus(AuditConfig(jsonl_path="/tmp/x.jsonl"))
    assert [s.name for s in bus.sinks] == ["log", "jsonl"]
    with capture_logs() as logs:
        AuditBus().emit(event())
    (line,) = logs
    assert line["event"] == "loop_intervention" and line["detector"] == "exact_repeat"


def test_audit_config_is_strict_and_names_the_key(tmp_path):
    config = tmp_path / "gw.yaml"
    config.write_text("audit:\n  webhook:\n    url: ftp://x\n")
    try:
        load_config(config)
    except ConfigError as exc:
        assert exc.path == "audit.webhook.url" and str(config) in str(exc)
    else:
        raise AssertionError("an ftp webhook URL was accepted")
    config.write_text("audit:\n  jsonl: /tmp/a\n")
    try:
        load_config(config)
    except ConfigError as exc:
        assert exc.path == "audit.jsonl"
    else:
        raise AssertionError("an unknown audit key was accepted")
    assert Config().audit == AuditConfig()
