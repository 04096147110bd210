"""Searching programs: `grep` (egrep, fgrep), `rg` and `find`. Recursive searches read every
file of a folder (`-r`, `-R`, `-d recurse`, `--directories=recurse`, rg always); following
symbolic links (`-R`, `rg -L`, `find -L`) may leave the workspace. `find` actions that run,
write or delete (`-exec`, `-fprint`, `-delete`) are not read-only."""

from __future__ import annotations

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.danger import danger
from agent_lsp.safety.grammar import check
from agent_lsp.safety.options import spec
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import UNKNOWN, Word

__all__ = ["find", "grep", "rg"]

GREP = spec(
    "-E --extended-regexp", "-F --fixed-strings", "-G --basic-regexp", "-P --perl-regexp",
    "-e --regexp =", "-f --file =r", "-i -y --ignore-case", "--no-ignore-case",
    "-v --invert-match", "-w --word-regexp", "-x --line-regexp", "-c --count", "--color =?",
    "--colour =?", "-L --files-without-match", "-l --files-with-matches", "-m --max-count =",
    "-o --only-matching", "-q --quiet --silent", "-s --no-messages", "-b --byte-offset",
    "-H --with-filename", "-h --no-filename", "--label =", "-n --line-number",
    "--line-buffered", "-T --initial-tab", "-Z --null", "-z --null-data", "-A --after-context =",
    "-B --before-context =", "-C --context =", "-a --text", "--binary-files =",
    "-D --devices =", "-d --directories =", "--exclude =", "--exclude-from =r",
    "--exclude-dir =", "--include =", "-r --recursive", "-R --dereference-recursive",
    "-U --binary", "--help", "-V --version", numeric=True,
)  # fmt: skip
RG = spec(
    "-A --after-context =", "-B --before-context =", "-C --context =", "-b --byte-offset",
    "-c --count", "--count-matches", "--color =", "--colors =", "--column", "--no-column",
    "--context-separator =", "--no-context-separator", "--crlf", "--no-crlf",
    "--dfa-size-limit =", "-E --encoding =", "--no-encoding", "--engine =",
    "--field-context-separator =", "--field-match-separator =", "-f --file =r", "--files",
    "-l --files-with-matches", "--files-without-match", "-F --fixed-strings",
    "--no-fixed-strings", "-L --follow", "--no-follow", "-g --glob =", "--iglob =",
    "--glob-case-insensitive", "--no-glob-case-insensitive", "--heading", "--no-heading",
    "-. --hidden", "--no-hidden", "-i --ignore-case", "--ignore-file =r",
    "--ignore-file-case-insensitive", "--no-ignore-file-case-insensitive", "--include-zero",
    "--no-include-zero", "-v --invert-match", "--no-invert-match", "--json", "--no-json",
    "--line-buffered", "--block-buffered", "-n --line-number", "-N --no-line-number",
    "-x --line-regexp", "-M --max-columns =", "--max-columns-preview",
    "--no-max-columns-preview", "-m --max-count =", "-d --max-depth --maxdepth =",
    "--max-filesize =", "--mmap", "--no-mmap", "-U --multiline", "--no-multiline",
    "--multiline-dotall", "--no-multiline-dotall", "--no-config", "--no-ignore",
    "--ignore", "--no-ignore-dot", "--no-ignore-exclude", "--no-ignore-files",
    "--no-ignore-global", "--no-ignore-messages", "--no-ignore-parent", "--no-ignore-vcs",
    "--no-messages", "--no-require-git", "--no-unicode", "--unicode", "-0 --null",
    "--null-data", "--one-file-system", "--no-one-file-system", "-o --only-matching",
    "--passthru", "--path-separator =", "-P --pcre2", "--no-pcre2", "--pcre2-version",
    "-p --pretty", "-q --quiet", "--regex-size-limit =", "-e --regexp =", "-r --replace =",
    "-z --search-zip !x", "--no-search-zip", "-S --smart-case", "-s --case-sensitive",
    "--sort =", "--sortr =", "--stats", "--no-stats", "-a --text", "--no-text", "--binary",
    "--no-binary", "-j --threads =", "--trim", "--no-trim", "-t --type =", "-T --type-not =",
    "--type-add =", "--type-clear =", "--type-list", "-u --unrestricted", "--vimgrep",
    "-H --with-filename", "-I --no-filename", "-w --word-regexp", "--auto-hybrid-regex",
    "--no-auto-hybrid-regex", "--debug", "--trace", "-h --help", "-V --version",
    "--pre =x", "--pre-glob =", "--no-pre", "--hyperlink-format =", "--generate =",
)  # fmt: skip
_NOT_RECURSIVE = frozenset({"read", "rea", "skip", "ski", "sk", "s"})


def grep(b: Builder, name: str, args: list[Word]) -> None:
    parsed = check(b, name, GREP, args)
    operands = list(parsed.operands)
    recursive = parsed.has("--recursive", "--dereference-recursive") or any(
        g.value is None or g.value.value not in _NOT_RECURSIVE for g in parsed.get("--directories")
    )
    follow = parsed.has("--dereference-recursive")
    if not parsed.has("--regexp", "--file") and operands:
        _, pattern = operands.pop(0)
        if pattern.variable:
            b.add(Risk.UNDECIDABLE, "the pattern is a variable")
    if recursive and not operands:
        b.path(None, ".", "follow" if follow else "tree")
    for i, w in operands:
        b.arg(i, w, ("follow" if follow else "tree") if recursive else "read")
    b.vet = parsed.clean


def rg(b: Builder, name: str, args: list[Word]) -> None:
    parsed = check(b, name, RG, args)
    operands = list(parsed.operands)
    mode = "follow" if parsed.has("--follow") else "tree"
    listing = parsed.has("--files", "--type-list", "--pcre2-version", "--help", "--version")
    if not listing and not parsed.has("--regexp", "--file") and operands:
        _, pattern = operands.pop(0)
        if pattern.variable:
            b.add(Risk.UNDECIDABLE, "the pattern is a variable")
    if parsed.has("--files"):
        mode = "walk" if mode == "follow" else "meta"
    if not operands and not parsed.has("--type-list", "--help", "--version"):
        b.path(None, ".", mode)
    for i, w in operands:
        b.arg(i, w, mode)
    b.vet = parsed.clean and not parsed.has("--pre", "--search-zip")


_FIND_GLOBAL = {"-H": 0, "-L": 0, "-P": 0, "-D": 1}
_FIND_FLAGS = frozenset(
    {"-depth", "-d", "-mount", "-xdev", "-noleaf", "-ignore_readdir_race", "-daystart"}
    | {"-noignore_readdir_race", "-warn", "-nowarn", "-empty", "-false", "-true", "-nouser"}
    | {"-nogroup", "-readable", "-writable", "-executable", "-print", "-print0", "-ls"}
    | {"-prune", "-quit", "-not", "-a", "-and", "-o", "-or", "(", ")", "!", ",", "-follow"}
    | {"-help", "--help", "-version", "--version"}
)
_FIND_VALUE = frozenset(
    {"-maxdepth", "-mindepth", "-name", "-iname", "-path", "-ipath", "-wholename"}
    | {"-iwholename", "-regex", "-iregex", "-regextype", "-type", "-xtype", "-size", "-mtime"}
    | {"-mmin", "-atime", "-amin", "-ctime", "-cmin", "-used", "-perm", "-user", "-group"}
    | {"-uid", "-gid", "-links", "-inum", "-lname", "-ilname", "-fstype", "-context"}
    | {"-printf"}
)
_FIND_META = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})
_FIND_WRITE = {"-fprint": 1, "-fprint0": 1, "-fls": 1, "-fprintf": 2}
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# what does not narrow down the files an action applies to
_NOT_TESTS = _FIND_FLAGS - {"-empty", "-nouser", "-nogroup", "-readable", "-writable"} | {
    "-maxdepth",
    "-mindepth",
    "-regextype",
    "-type",
    "-xtype",
    "-delete",
    "-printf",
}


def find(b: Builder, name: str, args: list[Word]) -> None:
    i, follow = 0, False
    while i < len(args) and (args[i].value in _FIND_GLOBAL or args[i].value.startswith("-O")):
        follow = follow or args[i].value == "-L"
        i += 1 + _FIND_GLOBAL.get(args[i].value, 0)
    starts: list[tuple[int, Word]] = []
    while i < len(args) and not args[i].value.startswith(("-", "(", "!", ")", ",")):
        starts.append((i, args[i]))
        i += 1
    expression = args[i:]
    known = _expression(b, expression, i)
    follow = follow or any(w.value == "-follow" for w in expression)
    deletes = any(w.value == "-delete" for w in expression)
    filtered = any(
        w.value.startswith("-") and w.value not in _NOT_TESTS and w.value not in _FIND_EXEC
        for w in expression
    )
    if not starts:
        b.path(None, ".", "walk" if follow else "meta")
    for j, w in starts:
        if deletes and not w.dynamic and danger(b, j, w, "find -delete", root_ok=filtered):
            continue
        b.arg(j, w, "walk" if follow else "meta")
    b.vet = known


def _expression(b: Builder, args: list[Word], first: int) -> bool:
    """Check the expression; whether it is read-only and fully known."""
    known = True
    i = 0
    while i < len(args):
        w, token = args[i], b.token(first + i)
        v = w.value
        if not w.static and i and args[i - 1].value not in _FIND_VALUE:
            b.add(Risk.UNDECIDABLE, f"find {w.raw}: not known before running", token)
            known = False
        if v in _FIND_FLAGS:
            i += 1
        elif v in _FIND_VALUE:
            if i + 1 < len(args) and args[i + 1].variable:
                b.add(Risk.UNDECIDABLE, f"find {v}: the value is a variable", token)
            i += 2
        elif v in _FIND_META or (v.startswith("-newer") and len(v) == 8):
            if i + 1 < len(args) and not (len(v) == 8 and v.endswith("t")):
                b.arg(first + i + 1, args[i + 1], "meta")
            i += 2
        elif v in _FIND_WRITE:
            if i + 1 < len(args):
                b.arg(first + i + 1, args[i + 1], "write")
            known = False
            i += 1 + _FIND_WRITE[v]
        elif v == "-delete":
            b.add(Risk.DESTRUCTIVE, "find -delete deletes every file it finds", token)
            known = False
            i += 1
        elif v in _FIND_EXEC:
            end = next(
                (k for k in range(i + 1, len(args)) if args[k].value in (";", "+")), len(args)
            )
            inner = [
                Word("{}", UNKNOWN, dynamic=True) if "{}" in a.value else a
                for a in args[i + 1 : end]
            ]
            b.add(Risk.EXEC, f"find {v} runs a command for every file", token)
            b.nested(inner, f"find {v}")
            known = False
            i = end + 1
        elif v == "-files0-from":
            b.add(Risk.UNDECIDABLE, "find -files0-from: starting points not known", token)
            known = False
            i += 2
        else:
            b.add(Risk.EXEC, f"find {v}: not known to be safe", token)
            known = False
            i += 1
    return known
