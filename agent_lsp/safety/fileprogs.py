"""Programs that change files: rm, chmod/chown, touch, mkdir, truncate, cp, mv, ln, install,
tee, split, csplit, patch, dd. Every file they write goes through `Builder` writes (protected,
start-up files, devices, outside); recursive deletion of `/`, the home folder or the workspace
is forbidden (`danger`)."""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.danger import danger
from agent_lsp.safety.grammar import check
from agent_lsp.safety.options import Spec, spec, value_part
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

__all__ = ["FILE_HANDLERS"]

Args = list[Word]
_STD = ("--help", "--version")
_BACKUP = ("--backup =?", "-b", "-S --suffix =")
SPECS: dict[str, Spec] = {
    "rm": spec(
        "-f --force", "-i", "-I", "--interactive =?", "--one-file-system",
        "--no-preserve-root", "--preserve-root =?", "-r -R --recursive", "-d --dir",
        "-v --verbose", *_STD,
    ),
    "rmdir": spec("--ignore-fail-on-non-empty", "-p --parents", "-v --verbose", *_STD),
    "unlink": spec(*_STD),
    "touch": spec(
        "-a", "-c --no-create", "-d --date =", "-f", "-h --no-dereference", "-m",
        "-r --reference =m", "-t =", "--time =", *_STD,
    ),
    "mkdir": spec("-m --mode =", "-p --parents", "-v --verbose", "-Z", "--context =?", *_STD),
    "mkfifo": spec("-m --mode =", "-Z", "--context =?", *_STD),
    "truncate": spec("-c --no-create", "-o --io-blocks", "-r --reference =m", "-s --size =", *_STD),
    "shred": spec(
        "-f --force", "-n --iterations =", "--random-source =r", "-s --size =", "-u",
        "--remove =?", "-v --verbose", "-x --exact", "-z --zero", *_STD,
    ),
    "cp": spec(
        "-a --archive", "--attributes-only", *_BACKUP, "--copy-contents", "-d", "--debug",
        "-f --force", "-i --interactive", "-H", "-l --link", "-L --dereference",
        "-n --no-clobber", "-P --no-dereference", "-p", "--preserve =?", "--no-preserve =",
        "--parents", "-R -r --recursive", "--reflink =?", "--remove-destination", "--sparse =",
        "--strip-trailing-slashes", "-s --symbolic-link", "-t --target-directory =",
        "-T --no-target-directory", "-u", "--update =?", "-v --verbose", "-x --one-file-system",
        "-Z", "--context =?", "--keep-directory-symlink", *_STD,
    ),
    "mv": spec(
        *_BACKUP, "--debug", "-f --force", "-i --interactive", "-n --no-clobber", "--no-copy",
        "--strip-trailing-slashes", "-t --target-directory =", "-T --no-target-directory", "-u",
        "--update =?", "-v --verbose", "-Z --context", "--exchange", *_STD,
    ),
    "ln": spec(
        *_BACKUP, "-d -F --directory", "-f --force", "-i --interactive", "-L --logical",
        "-n --no-dereference", "-P --physical", "-r --relative", "-s --symbolic",
        "-t --target-directory =", "-T --no-target-directory", "-v --verbose", *_STD,
    ),
    "install": spec(
        *_BACKUP, "-c", "-C --compare", "-d --directory", "-D", "-g --group =", "-m --mode =",
        "-o --owner =", "-p --preserve-timestamps", "-s --strip", "--strip-program =x",
        "-t --target-directory =", "-T --no-target-directory", "-v --verbose",
        "--preserve-context", "-Z", "--context =?", *_STD,
    ),
    "tee": spec("-a --append", "-i --ignore-interrupts", "-p", "--output-error =?", *_STD),
    "split": spec(
        "-a --suffix-length =", "--additional-suffix =", "-b --bytes =", "-C --line-bytes =",
        "-d", "--numeric-suffixes =?", "-x", "--hex-suffixes =?", "-e --elide-empty-files",
        "--filter =x", "-l --lines =", "-n --number =", "-t --separator =", "-u --unbuffered",
        "--verbose", *_STD,
    ),
    "csplit": spec(
        "-b --suffix-format =", "-f --prefix =", "-k --keep-files", "--suppress-matched",
        "-n --digits =", "-s -q --quiet --silent", "-z --elide-empty-files", *_STD,
    ),
    "chmod": spec(
        "-c --changes", "-f --silent --quiet", "-v --verbose", "--no-preserve-root",
        "--preserve-root", "--reference =m", "-R --recursive", "-h --no-dereference",
        "--dereference", "-H", "-L", "-P", *_STD,
    ),
    "chown": spec(
        "-c --changes", "-f --silent --quiet", "-v --verbose", "--dereference",
        "-h --no-dereference", "--from =", "--no-preserve-root", "--preserve-root",
        "--reference =m", "-R --recursive", "-H", "-L", "-P", *_STD,
    ),
}  # fmt: skip
SPECS["chgrp"] = SPECS["chown"]
_MODE = re.compile(r"[-+=]?[ugoa]*([-+=][rwxXstugo]*)+(,[ugoa]*([-+=][rwxXstugo]*)+)*|[0-7]{1,4}")
_INTO_CAP = 200
_DD_KEYS = frozenset(
    {"bs", "cbs", "conv", "count", "ibs", "iflag", "obs", "oflag", "seek", "skip", "status"}
)


def remove(b: Builder, name: str, args: Args) -> None:
    parsed = check(b, name, SPECS[name], args)
    recursive = name == "rm" and parsed.has("--recursive")
    if parsed.has("--no-preserve-root"):
        b.add(Risk.FORBIDDEN, "rm --no-preserve-root")
    for i, w in parsed.operands:
        if recursive and not w.dynamic and danger(b, i, w, "rm -r"):
            continue
        if recursive:
            b.add(Risk.DESTRUCTIVE, f"deletes the folder {w.raw} and everything in it", b.token(i))
        b.arg(i, w, "write")


def modes(b: Builder, name: str, args: Args) -> None:
    mode_word: int | None = None
    if name == "chmod":  # a mode such as -x looks like an option
        mode_word = next(
            (i for i, w in enumerate(args) if w.value.startswith("-") and _MODE.fullmatch(w.value)),
            None,
        )
    rest = [w if i != mode_word else Word("m", "m") for i, w in enumerate(args)]
    parsed = check(b, name, SPECS[name], rest)
    operands = list(parsed.operands)
    if mode_word is None and operands and not parsed.has("--reference"):
        operands = operands[1:]  # the mode or the owner
    recursive = parsed.has("--recursive")
    for i, w in operands:
        if i == mode_word:
            continue
        if recursive and not w.dynamic and danger(b, i, w, f"{name} -R"):
            continue
        if recursive:
            b.add(Risk.DESTRUCTIVE, f"{name} -R {w.raw}", b.token(i))
        b.arg(i, w, "write")


def writes_all(b: Builder, name: str, args: Args) -> None:
    """touch, mkdir, truncate, shred, mkfifo, tee: every operand is written."""
    parsed = check(b, name, SPECS[name], args)
    if name == "shred":
        b.add(Risk.DESTRUCTIVE, "shred destroys file contents")
    for i, w in parsed.operands:
        b.arg(i, w, "write")


def copy(b: Builder, name: str, args: Args) -> None:
    """cp, mv, ln, install: sources read (moved: written), the target written."""
    parsed = check(b, name, SPECS[name], args)
    operands = list(parsed.operands)
    targets = parsed.get("--target-directory")
    if name == "install" and parsed.has("--directory"):
        for i, w in operands:
            b.arg(i, w, "write")
        return
    dest: list[tuple[int, Word]] = []
    for g in targets:
        if g.value is not None and g.value_index is not None:
            dest.append((g.value_index, g.value))
        elif g.value is not None:
            dest.append((g.index, g.value))
    if not targets and len(operands) >= 2:
        dest = [operands.pop()]
    elif not targets and name == "ln" and operands:
        dest = [(-1, Word(".", "."))]
    if name == "cp" and parsed.has("--recursive", "--archive"):
        source = "follow" if parsed.has("--dereference") else "tree"
    else:
        source = "write" if name == "mv" else "read"
    for i, w in operands:
        if name == "mv" and not w.dynamic and danger(b, i, w, "mv"):
            continue
        b.arg(i, w, source)
    for i, w in dest:
        b.arg(i, w, "write")
        if w.static and (targets or (b.state.known and (b.cwd / w.value).is_dir())):
            _into(b, i, w.value, operands)


def _into(b: Builder, idx: int, folder: str, sources: list[tuple[int, Word]]) -> None:
    """Copying into a folder writes folder/NAME for each source (`cp .bashrc ~`)."""
    for _, src in sources:
        names = [src.value] if src.static else []
        if src.glob and not src.dynamic and b.state.known:
            names = glob.glob(src.pattern, root_dir=b.cwd)[:_INTO_CAP]  # noqa: PTH207
        for text in names:
            base = os.path.basename(text.rstrip("/"))  # noqa: PTH119
            if base and base not in (".", ".."):
                b.path(b.token(idx), os.path.join(folder, base), "write")  # noqa: PTH118


def split(b: Builder, name: str, args: Args) -> None:
    """split [INPUT [PREFIX]], csplit FILE PATTERN...: files named PREFIXaa ... are written."""
    parsed = check(b, name, SPECS[name], args)
    operands = list(parsed.operands)
    if name == "split":
        prefix = operands[1] if len(operands) > 1 else (-1, Word("x", "x"))
        inputs = operands[:1]
    else:
        given = parsed.get("--prefix")
        value = given[0].value if given else None
        prefix = (given[0].index, value) if value is not None else (-1, Word("xx", "xx"))
        inputs = operands[:1]
    for i, w in inputs:
        b.arg(i, w, "read")
    i, w = prefix
    b.arg(i, Word(w.raw, w.value + "aa", w.dynamic, w.glob, w.brace, w.pattern + "aa"), "write")


def patch(b: Builder, name: str, args: Args) -> None:
    b.add(Risk.EXEC, "patch may run ed scripts and writes the files a patch names")
    b.path(None, ".", "write")
    for i, w in enumerate(args):
        if not w.value.startswith("-"):
            b.arg(i, w, "write")


def dd(b: Builder, name: str, args: Args) -> None:
    for i, w in enumerate(args):
        key, eq, _ = w.value.partition("=")
        if key in ("if", "of") and eq:
            b.arg(i, value_part(w, len(key) + 1), "read" if key == "if" else "write")
        elif key not in _DD_KEYS or not eq:
            b.add(Risk.EXEC, f"dd {w.raw}: not known to be safe", b.token(i))
        elif w.variable:
            b.add(Risk.UNDECIDABLE, f"dd {w.raw}: the value is a variable", b.token(i))


FILE_HANDLERS: dict[str, Callable[[Builder, str, Args], None]] = {
    **dict.fromkeys(("rm", "unlink", "rmdir"), remove),
    **dict.fromkeys(("chmod", "chown", "chgrp"), modes),
    **dict.fromkeys(("touch", "mkdir", "truncate", "shred", "mkfifo", "tee"), writes_all),
    **dict.fromkeys(("cp", "mv", "ln", "install"), copy),
    **dict.fromkeys(("split", "csplit"), split),
    "patch": patch,
    "dd": dd,
}
