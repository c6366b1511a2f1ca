"""Agent profiles: what the coding agents our users run declare, call and write back.

A profile (one YAML file in ``profiles/``, or an entry of a policy's ``profiles:``) says how to
recognise an agent from a request alone, what each of its tools does, and what its harness
writes around a tool's result. The policy turns the recognised profile into trace settings
(``catalog.Catalog.policy_for``), so detectors compare what calls do, not how they are spelled.
"""

from gateway.agents.catalog import Catalog, read_profiles
from gateway.agents.profile import AgentProfile

__all__ = ["AgentProfile", "Catalog", "read_profiles"]
