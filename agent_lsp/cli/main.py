"""`agent-lsp serve | acp | run | demo | test | doctor | log | memory | undo` — the same core, in an
editor or headless.

Without `--root`, the project is the nearest folder from the current one upwards holding one of
ROOT_MARKERS (as the editor plugins find it), else the current folder. No traceback reaches the
user: Ctrl-C is one line (exit 130), a closed pipe (`| head`) ends quietly, and anything
unexpected is one line naming the file the full trace was written to."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from agent_lsp import __version__
from agent_lsp.cli import awake, output
from agent_lsp.cli.parser import UsageExit, build_parser
from agent_lsp.cli.roots import find_root

EXIT_OK, EXIT_NOT_DONE, EXIT_USAGE = 0, 1, 2
EXIT_SOFTWARE, EXIT_INTERRUPTED = 70, 130  # an internal error; Ctrl-C (128 + SIGINT)
RESUMABLE = ("run", "demo")  # commands whose interrupted task `run --resume` continues


def _crash_file() -> Path:
    """Where a full trace is written: the user's cache folder (else the temp folder)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agent-lsp"
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    name = f"crash-{stamp}-{os.getpid()}.log"
    with contextlib.suppress(OSError):
        cache.mkdir(parents=True, exist_ok=True)
        return cache / name
    import tempfile

    return Path(tempfile.gettempdir()) / name


_ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]


def _write_trace(exc: BaseException) -> str:
    """The trace written to a file; where it went (or why it could not be written)."""
    text = "".join(traceback.format_exception(exc))
    path = _crash_file()
    try:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"agent-lsp {__version__} {' '.join(sys.argv)}\n{text}\n")
    except OSError as err:
        return f"the trace could not be written ({err})"
    return f"full trace in {path}"


class _SaidInProgress(logging.Filter):
    """The model layer's warnings (a retry, a switch to text tools, a route that failed) are
    in the reply's notes, which a terminal command prints as progress (`· model: …`): on
    stderr they would say it twice. They stay in the session log, and with -v."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name.startswith("agent_lsp.models") and record.levelno < logging.ERROR)


class _OneLine(logging.Formatter):
    """Log records on stderr without their traces (written to a file instead), unless -v."""

    def __init__(self, fmt: str, verbose: bool) -> None:
        super().__init__(fmt)
        self.verbose = verbose

    def formatException(self, ei: _ExcInfo) -> str:
        if self.verbose or ei[1] is None:
            return super().formatException(ei)
        exc = ei[1]
        return f"  {type(exc).__name__}: {exc} ({_write_trace(exc)})"


def _quiet_stdout() -> None:
    """stdout's reader went away (`| head`): further writes, and the flush at exit, go nowhere."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI; nothing it raises reaches the user as a traceback."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args if not a.startswith("-")), "")
    if command == "serve":  # stdout is the protocol's
        return _guarded(args, command)
    with output.safe_streams():  # every string printed is shown, never sent (`shown`)
        return _guarded(args, command)


def _guarded(args: list[str], command: str) -> int:
    try:
        return _main(args)
    except KeyboardInterrupt:
        if sys.stderr.isatty():
            output.control(sys.stderr, "\r\x1b[K")
        hint = "; resume with: agent-lsp run --resume" if command in RESUMABLE else ""
        print(f"agent-lsp: interrupted{hint}", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_OK
    except Exception as exc:
        from agent_lsp.errors import AgentLspError

        if isinstance(exc, AgentLspError):
            print(f"agent-lsp: {exc}", file=sys.stderr, flush=True)
            return EXIT_NOT_DONE
        where = _write_trace(exc)
        print(
            f"agent-lsp: internal error: {type(exc).__name__}: {exc} ({where})",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_SOFTWARE


def _main(argv: list[str]) -> int:
    wrapped: list[str] | None = None
    if "--wrap" in argv:  # everything after it is the wrapped server's command line
        at = argv.index("--wrap")
        argv, wrapped = argv[: at + 1], argv[at + 1 :]
        wrapped = wrapped[1:] if wrapped[:1] == ["--"] else wrapped
    try:
        args = build_parser(__doc__ or "").parse_args(argv)
    except UsageExit as exc:  # said on stderr; `run --json` says it on stdout too
        if next((a for a in argv if not a.startswith("-")), "") == "run" and "--json" in argv:
            _json_error(exc.text)
        raise
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine("%(asctime)s %(name)s %(levelname)s: %(message)s", args.verbose))
    level = logging.DEBUG if args.verbose else logging.WARNING
    if args.command != "serve" and not args.verbose:
        handler.addFilter(_SaidInProgress())
    logging.basicConfig(level=level, handlers=[handler])
    if getattr(args, "root", False) is None:
        args.root = find_root(Path.cwd())
    elif isinstance(getattr(args, "root", None), Path):
        args.root = args.root.absolute()  # a sandboxed run starts in it: never relative
    from agent_lsp.safety import tempdirs

    tempdirs.remove_on_signals()  # an editor's SIGTERM leaves no temporary folder behind
    tempdirs.sweep_stale()  # nor did a killed agent-lsp before us
    if args.command == "serve":
        from agent_lsp.lsp import create_server

        server = create_server()
        if wrapped is not None:
            command = wrapped
            if not command:
                print("agent-lsp: --wrap needs a command: serve --wrap -- pylsp", file=sys.stderr)
                return EXIT_USAGE
            from agent_lsp.lsp.proxy import serve_proxy

            return awake.run(serve_proxy(server, command))
        if args.tcp:
            server.start_tcp(args.host, args.tcp)
        else:
            from agent_lsp.lsp.stdio import serve_stdio

            serve_stdio(server)
        return EXIT_OK

    if args.command == "acp":
        return _acp(args.pinned_root)
    from agent_lsp.cli import commands, doctor

    if args.command == "run":
        given = [bool(args.task), bool(args.resume), args.hint is not None]
        if sum(given) != 1:
            return _run_usage(
                args, 'agent-lsp run: give a task, --resume or --continue "hint" (one of them)'
            )
        if getattr(args, "task_id", None) and args.hint is None:
            return _run_usage(args, "agent-lsp run: --task goes with --continue")
        if args.team and args.hint is not None:
            return _run_usage(
                args, "agent-lsp run: --continue finds a team task itself: drop --team"
            )
        if args.at is not None and not args.task:
            return _run_usage(
                args,
                "agent-lsp run: --at goes with a new task (a resumed or continued task keeps "
                "the place it started with)",
            )
        from agent_lsp.cli import team
        from agent_lsp.errors import AgentLspError

        continues = None
        if args.hint is not None:  # the latest stopped task (or --task) may be a team task
            try:
                continues = team.continued_team(args.root, getattr(args, "task_id", None))
            except AgentLspError as exc:
                return _run_usage(args, f"agent-lsp: {exc}")
        chosen = args.team or (bool(args.task) and team.team_enabled(args.root))
        if chosen or continues or (args.resume and team.pending_team(args.root)):
            return awake.run(
                team.run_team(
                    args.root,
                    args.task or "",
                    resume=args.resume,
                    max_steps=args.max_steps,
                    hint=args.hint,
                    continues=continues,
                    as_json=args.json,
                    at=args.at,
                )
            )
        return awake.run(
            commands.run(
                args.root,
                args.task or "",
                max_steps=args.max_steps,
                resume=args.resume,
                hint=args.hint,
                task_id=getattr(args, "task_id", None),
                as_json=args.json,
                at=args.at,
            )
        )
    if args.command == "demo":
        if (
            args.dir is not None
            and args.dir.exists()
            and (not args.dir.is_dir() or any(args.dir.iterdir()))
        ):
            print(
                f"agent-lsp demo: {args.dir} already exists and is not an empty folder; "
                "give a new folder (it is created) or an empty one",
                file=sys.stderr,
            )
            return EXIT_USAGE
        return awake.run(commands.demo(live=args.live, dest=args.dir))
    if args.command == "test":
        return awake.run(commands.test(args.root, args.targets, as_json=args.json))
    if args.command == "doctor":
        return awake.run(doctor.doctor(args.root))
    from agent_lsp.cli import memory as memory_commands

    if args.command == "log":
        return memory_commands.show_log(
            args.root, follow=args.follow, session=args.session, listing=args.list, raw=args.json
        )
    if args.command == "memory":
        return awake.run(memory_commands.memory(args.root, args.action, args.name))
    if args.command == "undo":
        steps = None if args.all else args.steps
        return awake.run(memory_commands.undo(args.root, steps, args.task, args.force))
    if args.command == "improve":
        return _improve(args)
    if args.command == "trust":
        return _trust(args.root, remove=args.remove, listing=args.list)
    return EXIT_USAGE


def _json_error(text: str, code: int = EXIT_USAGE) -> None:
    """`run --json`'s outcome of a run that did not start: its one line, on stdout."""
    from agent_lsp.cli.jsonl import JsonLines

    JsonLines().emit("outcome", status="error", summary=text, exit_code=code)


def _run_usage(args: argparse.Namespace, text: str) -> int:
    """A usage error of `run`: one line on stderr (and with --json the outcome on stdout)."""
    print(text, file=sys.stderr, flush=True)
    if args.json:
        _json_error(text)
    return EXIT_USAGE


def _acp(root: Path | None) -> int:
    if root is not None and not root.is_dir():
        print(f"agent-lsp acp: {root} is not a folder", file=sys.stderr)
        return EXIT_USAGE
    from agent_lsp.acp import serve

    return awake.run(serve(root=root.resolve() if root is not None else None))


def _improve(args: argparse.Namespace) -> int:
    from agent_lsp.cli import improve

    given = [bool(args.request), bool(args.list), args.revert is not None]
    if sum(given) != 1:
        print("agent-lsp improve: give a request, --list or --revert ID (one)", file=sys.stderr)
        return EXIT_USAGE
    if args.list:
        return improve.show_list(args.root)
    if args.revert is not None:
        return improve.revert(args.root, args.revert)
    return awake.run(improve.improve(args.root, args.request, yes=args.yes))


def _trust(root: Path, *, remove: bool, listing: bool) -> int:
    from agent_lsp.config.trust import TrustStore

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
