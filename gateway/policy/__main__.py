"""``python -m gateway.policy FILE...``: validate policy files without starting a gateway.

Exit status 0 when every file loads, 1 otherwise; errors name the file and the key path. Meant
for CI of a policy repository and as the core of ``loopguard check``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from gateway.policy.loader import load_policy
from gateway.policy.model import Policy
from gateway.policy.schema import PolicyError


def describe(policy: Policy) -> str:
    eff = policy.default
    line = (
        f"{policy.source}: ok: policy {policy.name!r}, mode {eff.mode}, max_action "
        f"{eff.max_action.label}, detectors {', '.join(eff.detectors) or 'none'}"
    )
    return line + "".join(f"\n  agents: {rule.label}" for rule in policy.rules)


def main(argv: Sequence[str] | None = None) -> int:
    files = list(sys.argv[1:] if argv is None else argv)
    if not files:
        print("usage: python -m gateway.policy FILE...", file=sys.stderr)
        return 2
    status = 0
    for file in files:
        try:
            print(describe(load_policy(file)))
        except PolicyError as exc:
            print(exc, file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
