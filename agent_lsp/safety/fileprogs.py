"""Programs that change files (rm, cp, mv, ln, chmod, tee, dd, tar ...), text tools whose
scripts may write or run commands (sed, awk, sort, find, jq), and `cd`."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agent_lsp.safety.programs import generic, has_flag, option_paths, split_args
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import UNKNOWN, Word
from agent_lsp.safety.textprogs import TEXT_HANDLERS

if TYPE_CHECKING:
    from agent_lsp.safety.classify import Builder

__all__ = ["FILE_HANDLERS"]

Args = list[Word]
_VALUES: dict[str, frozenset[str]] = {
    "touch": frozenset({"-d", "-t", "-r", "--reference", "--date"}),
    "mkdir": frozenset({"-m", "--mode"}),
    "cp": frozenset({"-t", "--target-directory", "-S", "--suffix"}),
    "mv": frozenset({"-t", "--target-directory", "-S", "--suffix"}),
    "ln": frozenset({"-t", "--target-directory", "-S", "--suffix"}),
    "install": frozenset({"-t", "-m", "-o", "-g", "-S", "--target-directory", "--mode"}),
    "truncate": frozenset({"-s", "--size", "-r", "--reference"}),
    "tar": frozenset({"-f", "--file", "-C", "--directory", "-T", "--files-from", "-X"}),
}


def _danger(b: Builder, idx: int, word: Word, what: str) -> bool:
    """Recursive deletion/chmod of `/`, the home folder, the workspace (or a parent) or a
    `.git` folder, or of everything in one of them: forbidden."""
    guard = b.guard
    texts = b.expand(word, b.offset + 1 + idx) if word.glob else [word.value]
    top = {Path("/"), guard.home, guard.root}
    for text in texts:
        res = b.resolve(text)
        if res is None:
            continue
        p = res.path
        if p in top or guard.root.is_relative_to(p) or guard.home.is_relative_to(p):
            b.add(Risk.FORBIDDEN, f"{what} {word.raw} ({p})", b.offset + 1 + idx)
            return True
        if p.name == ".git" and what.startswith(("rm", "mv")):
            b.add(Risk.FORBIDDEN, f"{what} {word.raw} (a git repository)", b.offset + 1 + idx)
            return True
    if word.glob:
        folder = b.resolve(word.pattern.rpartition("/")[0] or ".")
        if folder is not None and folder.path in top:
            b.add(Risk.FORBIDDEN, f"{what} everything in {folder.path}", b.offset + 1 + idx)
            return True
    return False


def remove(b: Builder, name: str, args: Args) -> None:
    operands, options = split_args(args)
    recursive = name == "rm" and has_flag(options, "rR", "--recursive")
    if any(w.value == "--no-preserve-root" for _, w, _ in options):
        b.add(Risk.FORBIDDEN, "rm --no-preserve-root")
    for i, w in operands:
        if recursive and not w.dynamic and _danger(b, i, w, "rm -r"):
            continue
        if recursive:
            b.add(Risk.DESTRUCTIVE, f"deletes the folder {w.raw} and everything in it")
        b.arg(i, w, "write")


def modes(b: Builder, name: str, args: Args) -> None:
    operands, options = split_args(args, frozenset({"--reference"}))
    recursive = has_flag(options, "R", "--recursive")
    if operands and not any(w.value.startswith("--reference") for _, w, _ in options):
        operands = operands[1:]  # the mode or owner
    for i, w in operands:
        if recursive and not w.dynamic and _danger(b, i, w, f"{name} -R"):
            continue
        if recursive:
            b.add(Risk.DESTRUCTIVE, f"{name} -R {w.raw}")
        b.arg(i, w, "write")


def writes_all(b: Builder, name: str, args: Args) -> None:
    operands, options = split_args(args, _VALUES.get(name, frozenset()))
    option_paths(b, options)
    if name == "shred":
        b.add(Risk.DESTRUCTIVE, "shred destroys file contents")
    for i, w in operands:
        b.arg(i, w, "write")


def copy(b: Builder, name: str, args: Args) -> None:
    operands, options = split_args(args, _VALUES.get(name, frozenset()))
    target = [(i + 1, v) for i, w, v in options if w.value in ("-t", "--target-directory") and v]
    target += [
        (i, Word(w.raw, w.value.split("=", 1)[1], w.dynamic))
        for i, w, _ in options
        if w.value.startswith("--target-directory=")
    ]
    if not target and len(operands) >= 2:
        target = [operands.pop()]
    elif not target and name == "ln" and operands:
        target = [(-1, Word(".", "."))]
    for i, w in operands:
        if name == "mv" and not w.dynamic and _danger(b, i, w, "mv"):
            continue
        b.arg(i, w, "write" if name == "mv" else "read")
    for i, w in target:
        b.arg(i, w, "write")


def dd(b: Builder, name: str, args: Args) -> None:
    for i, w in enumerate(args):
        key, _, value = w.value.partition("=")
        if key in ("if", "of") and value:
            b.arg(
                i,
                Word(w.raw, value, w.dynamic, w.glob, w.brace, value),
                "read" if key == "if" else "write",
            )


def tee(b: Builder, name: str, args: Args) -> None:
    writes_all(b, name, args)


def find(b: Builder, name: str, args: Args) -> None:
    i = 0
    while i < len(args) and args[i].value in ("-L", "-H", "-P", "-O", "-D"):
        i += 2 if args[i].value in ("-O", "-D") else 1
    starts: list[tuple[int, Word]] = []
    while i < len(args) and not args[i].value.startswith(("-", "(", "!", ")")):
        starts.append((i, args[i]))
        i += 1
    for j, w in starts or [(-1, Word(".", "."))]:
        if (
            args[i:]
            and any(a.value == "-delete" for a in args[i:])
            and _danger(b, j, w, "find -delete")
        ):
            continue
        b.arg(j, w, "meta")
    while i < len(args):
        v = args[i].value
        if v in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next(
                (k for k in range(i + 1, len(args)) if args[k].value in (";", "+")), len(args)
            )
            inner = [
                Word("{}", UNKNOWN, dynamic=True) if w.value == "{}" else w
                for w in args[i + 1 : end]
            ]
            b.add(Risk.EXEC, f"find {v} runs a command for every file")
            b.nested(inner, f"find {v}")
            i = end
        elif v == "-delete":
            b.add(Risk.DESTRUCTIVE, "find -delete deletes every file it finds")
        elif v in ("-fprint", "-fprint0", "-fls", "-fprintf") and i + 1 < len(args):
            b.arg(i + 1, args[i + 1], "write")
        i += 1


def archive(b: Builder, name: str, args: Args) -> None:
    values = [w.value for w in args]
    if re.search(
        r"to-command|compress-program|checkpoint-action|-I\b|-TT|unzip-command", " ".join(values)
    ):
        b.add(Risk.EXEC, f"{name} runs a program")
    letters = values[0].lstrip("-") if values and not values[0].startswith("--") else ""
    if name == "unzip":
        extract, create = "-l" not in values and "-t" not in values, False
    elif name == "zip":
        extract, create = False, True
    else:
        extract = "x" in letters or "--extract" in values or "--get" in values
        create = any(c in letters for c in "cru") or "--create" in values
    if extract:
        flags = ("-C", "-d", "--directory")
        dest = next((args[i + 1] for i, v in enumerate(values[:-1]) if v in flags), None)
        b.add(Risk.WRITE, f"{name} extracts files")
        b.path(None, dest.value if dest is not None and dest.static else ".", "write")
    if create:
        b.add(Risk.WRITE, f"{name} creates an archive")
        operands, _ = split_args(args, _VALUES["tar"])
        for i, w in operands:
            b.arg(i, w, "tree")
    else:
        generic(b, args)


def compress(b: Builder, name: str, args: Args) -> None:
    operands, options = split_args(args)
    to_stdout = has_flag(options, "c", "--stdout", "--to-stdout")
    for i, w in operands:
        b.arg(i, w, "read" if to_stdout else "write")


def cd(b: Builder, name: str, args: Args) -> None:
    operands, _ = split_args(args)
    if not operands:
        b.state.cwd = b.guard.home
        return
    i, w = operands[0]
    if w.value == "-" or not w.static:
        b.add(Risk.UNDECIDABLE, f"cd {w.raw}: the folder is not known before running")
        return
    b.arg(i, w, "meta")
    res = b.resolve(w.value)
    if res is not None:
        b.state.cwd = res.path


FILE_HANDLERS: dict[str, Callable[[Builder, str, Args], None]] = {
    "rm": remove,
    "unlink": remove,
    "rmdir": remove,
    "chmod": modes,
    "chown": modes,
    "chgrp": modes,
    **dict.fromkeys(("touch", "mkdir", "truncate", "shred", "mkfifo"), writes_all),
    **dict.fromkeys(("cp", "mv", "ln", "install"), copy),
    "dd": dd,
    "tee": tee,
    **TEXT_HANDLERS,
    "find": find,
    **dict.fromkeys(("tar", "unzip", "zip"), archive),
    **dict.fromkeys(("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd"), compress),
    "cd": cd,
}
