"""The JSON log line: secrets redacted, timestamps in ISO 8601 UTC, exceptions rendered."""

from __future__ import annotations

import datetime
import json

import pytest
import structlog

from gateway.logging import configure_logging


@pytest.fixture(autouse=True)
def _restore_structlog():
    """These tests configure logging for the process; the tests after them must not inherit it."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def _lines(capfd) -> list[dict]:
    return [json.loads(line) for line in capfd.readouterr().err.splitlines() if line.startswith("{")]


def test_secrets_redacted_at_top_level_and_one_level_down(capfd):
    configure_logging("json", "info")
    structlog.get_logger("t").info("x", Authorization="Bearer sk-1", headers={"API-Key": "k", "x-keep": "v"})
    (line,) = _lines(capfd)
    assert line["Authorization"] == "[redacted]"
    assert line["headers"] == {"API-Key": "[redacted]", "x-keep": "v"}


@pytest.mark.parametrize("header", ["x-goog-api-key", "x-api-key", "X-Amz-Security-Token"])
def test_every_protocols_key_and_session_token_headers_are_redacted(capfd, header):
    configure_logging("json", "info")
    structlog.get_logger("t").info("x", headers={header: "secret", "x-amz-date": "20261203T000000Z"})
    (line,) = _lines(capfd)
    assert line["headers"] == {header: "[redacted]", "x-amz-date": "20261203T000000Z"}


def test_timestamp_is_iso_utc_and_current(capfd):
    configure_logging("json", "info")
    before = datetime.datetime.now(datetime.UTC)
    structlog.get_logger("t").info("first")
    structlog.get_logger("t").info("second")
    after = datetime.datetime.now(datetime.UTC)
    stamps = [line["timestamp"] for line in _lines(capfd)]
    for stamp in stamps:
        assert stamp.endswith("Z")
        parsed = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        assert before - datetime.timedelta(milliseconds=1) <= parsed <= after
    assert stamps[0] <= stamps[1]


def test_exception_rendered_only_where_there_is_one(capfd):
    configure_logging("json", "info")
    log = structlog.get_logger("t")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("failed")
    log.info("fine")
    failed, fine = _lines(capfd)
    assert "ValueError: boom" in failed["exception"] and failed["level"] == "error"
    assert "exception" not in fine and "exc_info" not in fine


def test_a_line_carrying_client_text_is_written_escaped_never_raised(capfd):
    configure_logging("json", "info")
    log = structlog.get_logger("t")
    log.info("chain_unknown", previous_response_id="resp_\ud800", big="z" * 100_000)
    (line,) = _lines(capfd)
    assert line["previous_response_id"] == "resp_\\ud800" and len(line["big"]) < 2000


def test_console_lines_escape_client_text_too(capfd):
    configure_logging("console", "info")
    structlog.get_logger("t").info("x", user="a\ud800")
    assert "a\\ud800" in capfd.readouterr().err
