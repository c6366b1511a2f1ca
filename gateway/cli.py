"""The ``loopguard`` command line."""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
from collections.abc import Sequence
from typing import Any


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="loopguard", description="Loop-guarding OpenAI-compatible gateway")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", default=os.environ.get("LOOPGUARD_CONFIG"), help="config YAML")
    serve.add_argument("--host", help="bind address (default from config: 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default from config: 8080)")
    serve.add_argument("--workers", type=int, help="processes serving the port (default from config: 1)")
    check = commands.add_parser("check", help="validate a config or policy file and print the effective policy")
    check.add_argument("path", metavar="CONFIG_OR_POLICY")
    check.add_argument("--format", choices=["yaml", "json"], default="yaml", help="output format (default: yaml)")
    replay = commands.add_parser(
        "replay", help="run a policy offline over agents' session logs or recorded requests, scored against labels"
    )
    replay.add_argument(
        "files",
        nargs="+",
        metavar="PATH",
        help="session logs, folders of them or globs: Claude Code, Codex, Gemini CLI, Cline/Roo, OpenHands, "
        "or JSONL of chat-completions / Messages request bodies (format detected per file)",
    )
    replay.add_argument("--policy", default="default", help="policy file or shipped pack name (default: default)")
    replay.add_argument("--compare", metavar="POLICY", help="a second policy, shown beside the first run by run")
    replay.add_argument("--labels", metavar="FILE", help="CSV or JSON: run (path or session id) -> loop/healthy/...")
    replay.add_argument("--suggest", type=int, default=0, metavar="N", help="list the N runs most worth labelling")
    replay.add_argument(
        "--format",
        dest="fmt",
        metavar="FORMAT",
        help="read every file as this format: claude_code, codex, gemini_cli, cline, openhands, requests, chat, messages",
    )
    replay.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    replay.add_argument("--json", dest="json_out", metavar="FILE", help="also write runs, errors and scores as JSON")
    replay.add_argument("--agent", help="x-loopguard-agent value to resolve per-agent overrides with")
    replay.add_argument("--model", help="price savings as this model (default: each run's model)")
    replay.add_argument("--quiet", action="store_true", help="no progress bar or notes on stderr")
    labels = commands.add_parser("labels", help="the run labels operators set in the console")
    label_commands = labels.add_subparsers(dest="labels_command", required=True)
    export = label_commands.add_parser("export", help="write the console's labels in the format replay --labels reads")
    export.add_argument("--url", default="http://127.0.0.1:8080", help="the gateway (default: http://127.0.0.1:8080)")
    export.add_argument(
        "--key-env",
        default="LOOPGUARD_OPERATOR_KEY",
        help="environment variable holding an operator key (default: LOOPGUARD_OPERATOR_KEY)",
    )
    export.add_argument("--format", dest="fmt", choices=["csv", "json"], default="csv", help="default: csv")
    export.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    commands.add_parser("demo", help="watch a looping agent get warned, vetoed and stopped (no API key needed)")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "check":
        return _check(args)
    if args.command == "replay":
        return _replay(args)
    if args.command == "labels":
        return _labels_export(args)
    if args.command == "demo":
        return _demo()
    return 2


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from gateway.config import ConfigError, load_config
    from gateway.logging import configure_logging
    from gateway.policy.schema import PolicyError
    from gateway.server.app import build_app
    from gateway.serving import serve_workers, tune_gc, uvicorn_options

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"loopguard: {exc}", file=sys.stderr)
        return 1
    configure_logging(config.logging.format, config.logging.level)
    try:
        app = build_app(config)
    except PolicyError as exc:
        print(f"loopguard: {exc}", file=sys.stderr)
        return 1
    workers = args.workers if args.workers is not None else config.server.workers
    if workers < 1:
        print("loopguard: --workers must be at least 1", file=sys.stderr)
        return 2
    host = args.host or config.server.host
    port = args.port if args.port is not None else config.server.port
    if workers > 1:
        return serve_workers(
            app, config, args.config, workers, announce, uvicorn_options(host, port, config.limits, config.server)
        )
    server = uvicorn.Config(app, **uvicorn_options(host, port, config.limits, config.server))
    sock = server.bind_socket()  # bound here, so the startup line names the real address (port 0)

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:  # accepting connections now, not merely bound
                announce(app, config, sock.getsockname())

    tune_gc()
    with contextlib.suppress(KeyboardInterrupt):  # as uvicorn.run: Ctrl-C is a normal stop
        Announcing(server).run(sockets=[sock])
    return 0


def announce(app: Any, config: Any, address: tuple[Any, ...]) -> None:
    """One line an operator reads first: where it listens and what it guards with what."""
    import structlog

    from gateway.server.app import provider_configs
    from gateway.state.redis import redacted_url

    host, port = address[0], address[1]
    state = config.state.backend
    if state == "redis":
        state += " " + redacted_url(config.state.url)
    guarded = list(app.guarded)
    gateway = app.state.gateway
    structlog.get_logger("loopguard").info(
        "gateway_started",
        address=f"http://{'[' + host + ']' if ':' in host else host}:{port}",
        policy=gateway.policies.current.name,
        policy_file=str(gateway.policies.path),
        state=state,
        upstream=config.upstream.base_url,
        # Each provider's base URL as the operator gives it (the API root, before a version suffix).
        **{f"{name}_upstream": up.base_url for name, up in provider_configs(config, suffixed=False).items()},
        guarded=guarded,
    )


def _check(args: argparse.Namespace) -> int:
    from gateway.check import run_check
    from gateway.logging import configure_logging

    configure_logging("console", "warning")  # threshold corrections etc. to stderr; stdout stays YAML
    return run_check(args.path, args.format)


def _replay(args: argparse.Namespace) -> int:
    from gateway.logging import configure_logging
    from gateway.replay.command import run_replay

    configure_logging("console", "warning")  # policy warnings to stderr; stdout is the table
    return run_replay(
        args.files,
        args.policy,
        html=args.html,
        agent=args.agent,
        model=args.model,
        quiet=args.quiet,
        compare=args.compare,
        labels=args.labels,
        suggest=args.suggest,
        json_out=args.json_out,
        fmt=args.fmt,
    )


def _labels_export(args: argparse.Namespace) -> int:
    from gateway.replay.export import export_labels

    return export_labels(args.url, os.environ.get(args.key_env, ""), args.fmt, args.out)


def _demo() -> int:
    from gateway.demo import run_demo
    from gateway.logging import configure_logging

    configure_logging("console", "error")  # the transcript is the output; the gateway's own log stays quiet
    return run_demo()


if __name__ == "__main__":
    raise SystemExit(main())
