"""Shared pieces of the reliability suite: bounded (count and time) so it runs in CI."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

# Each example is a real HTTP round trip; the bound keeps the whole suite to well under a
# minute while still covering thousands of shapes across runs (hypothesis varies them).
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), database=None)
