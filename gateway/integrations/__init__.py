"""LoopGuard inside other gateways: the same trace, detectors, policy and state, driven by the
host's hooks instead of LoopGuard's own HTTP server."""
