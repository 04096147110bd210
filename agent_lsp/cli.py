"""`agent-lsp serve | run | demo | test | doctor | log | memory | undo` — the same core, in an
editor or headless."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from agent_lsp import __version__

EXIT_OK, EXIT_NOT_DONE, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-lsp", description=__doc__)
    parser.add_argument("--version", action="version", version=f"agent-lsp {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the language server (stdio by default)")
    serve.add_argument("--tcp", type=int, metavar="PORT", help="listen on TCP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument(
        "--wrap",
        action="store_true",
        help="proxy mode: `serve --wrap -- CMD...` runs your language server behind agent-lsp",
    )

    run = sub.add_parser(
        "run",
        help="run a task headless; exit 0 only if it was completed and the tests proved it "
        "(1 not done, 3 completed unverified)",
    )
    run.add_argument("task", nargs="?", help="what to do, in plain words")
    _project_args(run)
    run.add_argument("--max-steps", type=int, help="override maxSteps")
    run.add_argument(
        "--resume", action="store_true", help="continue the task a crash or restart cut short"
    )

    demo = sub.add_parser("demo", help="fix a bundled sample project (scripted model, no API key)")
    demo.add_argument("--live", action="store_true", help="use the configured model instead")
    demo.add_argument("--dir", type=Path, help="copy the sample here instead of a temp folder")

    test = sub.add_parser("test", help="run the project's tests through the adapter")
    _project_args(test)
    test.add_argument("targets", nargs="*", help="test ids or paths (default: all)")

    doctor = sub.add_parser("doctor", help="show settings, toolchain and model endpoint status")
    _project_args(doctor)

    log = sub.add_parser("log", help="show a session log (the latest by default)")
    _project_args(log)
    log.add_argument("-f", "--follow", action="store_true", help="keep printing new events")
    log.add_argument("--session", help="a session id (or a unique part of it)")
    log.add_argument("--list", action="store_true", help="list the sessions")
    log.add_argument("--json", action="store_true", help="print the raw JSON lines")

    memory = sub.add_parser("memory", help="list, show, search or forget experiences")
    memory.add_argument("action", choices=["list", "show", "forget", "search"])
    memory.add_argument("name", nargs="?", help="an experience file (or a unique part of it)")
    _project_args(memory)

    undo = sub.add_parser("undo", help="revert the agent's last step (or more) of a task")
    _project_args(undo)
    undo.add_argument("--steps", type=int, default=1, help="how many steps (default 1)")
    undo.add_argument("--all", action="store_true", help="every step of the task")
    undo.add_argument("--task", help="the task id (default: the latest with changes)")
    undo.add_argument("--force", action="store_true", help="overwrite later changes")

    trust = sub.add_parser(
        "trust", help="trust this workspace's .agent-lsp/config.toml and policy.toml allow rules"
    )
    _project_args(trust)
    trust.add_argument("--remove", action="store_true", help="stop trusting it")
    trust.add_argument("--list", action="store_true", help="list the trusted workspaces")
    return parser


def _project_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", type=Path, default=Path.cwd(), help="project root (default: cwd)")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    wrapped: list[str] | None = None
    if "--wrap" in argv:  # everything after it is the wrapped server's command line
        at = argv.index("--wrap")
        argv, wrapped = argv[: at + 1], argv[at + 1 :]
        wrapped = wrapped[1:] if wrapped[:1] == ["--"] else wrapped
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
    )
    if args.command == "serve":
        from agent_lsp.lsp import create_server

        server = create_server()
        if wrapped is not None:
            command = wrapped
            if not command:
                print("agent-lsp: --wrap needs a command: serve --wrap -- pylsp", file=sys.stderr)
                return EXIT_USAGE
            from agent_lsp.lsp.proxy import serve_proxy

            return asyncio.run(serve_proxy(server, command))
        if args.tcp:
            server.start_tcp(args.host, args.tcp)
        else:
            from agent_lsp.lsp.stdio import serve_stdio

            serve_stdio(server)
        return EXIT_OK

    from agent_lsp import commands

    if args.command == "run":
        if bool(args.task) == bool(args.resume):
            print("agent-lsp run: give a task, or --resume (not both)", file=sys.stderr)
            return EXIT_USAGE
        return asyncio.run(
            commands.run(args.root, args.task or "", max_steps=args.max_steps, resume=args.resume)
        )
    if args.command == "demo":
        return asyncio.run(commands.demo(live=args.live, dest=args.dir))
    if args.command == "test":
        return asyncio.run(commands.test(args.root, args.targets))
    if args.command == "doctor":
        return asyncio.run(commands.doctor(args.root))
    from agent_lsp.memory import commands as memory_commands

    if args.command == "log":
        return memory_commands.show_log(
            args.root, follow=args.follow, session=args.session, listing=args.list, raw=args.json
        )
    if args.command == "memory":
        return asyncio.run(memory_commands.memory(args.root, args.action, args.name))
    if args.command == "undo":
        steps = None if args.all else args.steps
        return asyncio.run(memory_commands.undo(args.root, steps, args.task, args.force))
    if args.command == "trust":
        return _trust(args.root, remove=args.remove, listing=args.list)
    return EXIT_USAGE


def _trust(root: Path, *, remove: bool, listing: bool) -> int:
    from agent_lsp.safety.trust import TrustStore

    store = TrustStore()
    if listing:
        for entry in store.trusted():
            print(entry)
        return EXIT_OK
    if remove:
        done = store.untrust(root)
        print(f"agent-lsp: {root.resolve()} is {'no longer' if done else 'not'} trusted")
        return EXIT_OK
    print(f"agent-lsp: trusted {store.trust(root)}")
    print("its .agent-lsp/config.toml and the allow rules of .agent-lsp/policy.toml now apply")
    return EXIT_OK
