"""Archives and compression: `tar` (old-style `tar xzf`, short and long options), `zip`,
`unzip`, gzip/bzip2/xz/zstd. Only listing (`tar -t`, `unzip -l`) and writing to standard
output (`gzip -c`) are read-only; every other mode writes. Options that run programs
(`-I`, `--use-compress-program`, `--to-command`, `--checkpoint-action`, `-F`, `--rsh-command`,
`zip -TT`) are not read-only, whatever their abbreviation."""

from __future__ import annotations

from collections.abc import Callable

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.grammar import check
from agent_lsp.safety.options import REQUIRED, Spec, spec
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

__all__ = ["ARCHIVE_HANDLERS"]

Args = list[Word]
TAR = spec(
    "-A --catenate --concatenate", "-c --create", "-d --diff --compare", "--delete",
    "-r --append", "-t --list", "--test-label", "-u --update", "-x --extract --get",
    "-f --file =", "-C --directory =", "-T --files-from =r", "-X --exclude-from =r",
    "--exclude =", "-g --listed-incremental =w", "-G --incremental", "--index-file =w",
    "-a --auto-compress", "-z --gzip --gunzip --ungzip", "-j --bzip2", "-J --xz", "--lzip",
    "--lzma", "--lzop", "--zstd", "-Z --compress --uncompress", "-v --verbose",
    "-O --to-stdout", "-p --preserve-permissions --same-permissions", "-P --absolute-names",
    "-k --keep-old-files", "--skip-old-files", "--overwrite", "--overwrite-dir",
    "--keep-newer-files", "-m --touch", "-h --dereference", "--hard-dereference",
    "-W --verify", "-S --sparse", "-b --blocking-factor =", "--record-size =",
    "-B --read-full-records",
    "-i --ignore-zeros", "-l --check-links", "-H --format =", "--strip-components =",
    "--wildcards", "--no-wildcards", "--anchored", "--no-anchored", "--ignore-case",
    "--no-ignore-case", "--exclude-vcs", "--exclude-vcs-ignores", "--exclude-caches",
    "--exclude-backups", "--no-same-owner", "--same-owner", "--no-same-permissions",
    "--numeric-owner", "--owner =", "--group =", "--mode =", "--mtime =", "--sort =",
    "--totals =?", "--checkpoint =?", "--warning =", "--transform --xform =", "--null",
    "--no-null", "--force-local", "--occurrence =?", "--recursion", "--no-recursion",
    "--full-time", "--utc", "--quoting-style =", "--block-number -R", "-N --newer --after-date =",
    "--newer-mtime =", "--one-file-system", "--one-top-level =?", "--xattrs", "--no-xattrs",
    "--acls", "--no-acls", "--selinux", "--no-selinux", "-o", "--show-transformed-names",
    "--show-defaults", "--help", "--usage", "--version", "-s --preserve-order --same-order",
    "--unlink-first -U", "--recursive-unlink", "--remove-files", "--delay-directory-restore",
    "-I --use-compress-program =x", "--to-command =x", "--checkpoint-action =x",
    "-F --info-script --new-volume-script =x", "--rsh-command =x", "--rmt-command =x",
    "-w --interactive --confirmation !x", "-M --multi-volume", "-L --tape-length =",
    "-V --label =", "-K --starting-file =",
)  # fmt: skip
_TAR_MODES = frozenset(
    {"--catenate", "--create", "--diff", "--delete", "--append", "--list", "--update"}
    | {"--extract", "--test-label"}
)
UNZIP = spec(
    "-l", "-t", "-v", "-z", "-p", "-c", "-d =", "-o", "-n", "-q", "-j", "-a", "-b", "-C",
    "-L", "-U", "-X", "-K", "-V", "-f", "-u", "-h", "-M !x", "-x", "-Z",
)  # fmt: skip
ZIP = spec(
    "-r --recurse-paths", "-q --quiet", "-v --verbose", "-j --junk-paths", "-u --update",
    "-f --freshen", "-d --delete", "-D --no-dir-entries", "-y --symlinks", "-o --latime",
    "-X --no-extra", "-l --to-crlf", "-9", "-0", "-1", "-x --exclude", "-i --include",
    "-m --move", "-T --test", "--unzip-command =x", "-e --encrypt", "-P --password =",
    "-@ --names-stdin", "-h --help",
)  # fmt: skip
COMPRESS: dict[str, Spec] = {}
_GZIP = spec(
    "-c --stdout --to-stdout", "-d --decompress --uncompress", "-z --compress", "-f --force",
    "-k --keep", "-l --list", "-n --no-name", "-N --name", "-q --quiet", "-r --recursive",
    "-S --suffix =", "--synchronous", "-t --test", "-v --verbose", "-V --version", "-h --help",
    "--fast", "--best", "--rsyncable", "-s --small", "-e --extreme", "-T --threads =",
    "--rm", "-o =w", "--ultra", "--long =?", numeric=True,
)  # fmt: skip
for _n in ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lz4", "lzma"):
    COMPRESS[_n] = _GZIP


def _old_style(args: Args) -> Args:
    """`tar xzf a.tgz`: the first word's letters are options; those taking a value take the
    following words in order (`tar cfC out.tar dir ...`)."""
    if not args or args[0].value.startswith("-") or not args[0].static:
        return args
    out: Args = []
    rest = list(args[1:])
    for c in args[0].value:
        opt = TAR.short.get(c)
        out.append(Word("-" + c, "-" + c))
        if opt is not None and opt.arg == REQUIRED and rest:
            out.append(rest.pop(0))
    return out + rest


def tar(b: Builder, name: str, args: Args) -> None:
    words = _old_style(args)
    saved = b.offset
    if words is not args:  # indexes no longer match the argv: past its end (never in a rule)
        b.offset = saved + len(words)
    parsed = check(b, name, TAR, words)
    modes = [g.name for g in parsed.given if g.name in _TAR_MODES]
    archive = [g for g in parsed.get("--file") if g.value is not None]
    for g in archive:
        value = g.value
        assert value is not None
        if ":" in value.value.split("/", 1)[0] and not parsed.has("--force-local"):
            b.add(Risk.EXEC, f"tar -f {value.raw}: a remote archive (runs rsh/ssh)")
            b.add(Risk.NETWORK, "tar talks to a remote host")
    if parsed.has("--remove-files"):
        b.add(Risk.DESTRUCTIVE, "tar --remove-files deletes what it archives")
    if len(set(modes)) != 1:
        b.add(Risk.EXEC, "tar: no single mode (list, extract, create ...)")
    mode = modes[0] if modes else ""
    reads_archive = mode in ("--list", "--extract", "--diff", "--test-label", "--catenate")
    for g in archive:
        if g.value is not None and g.value.value != "-":
            _value(b, g.value, "read" if reads_archive else "write")
            if mode in ("--append", "--update", "--delete", "--catenate"):
                _value(b, g.value, "read")
    if mode == "--extract" and not parsed.has("--to-stdout"):
        dest = parsed.get("--directory")
        b.add(Risk.WRITE, "tar extracts files")
        if dest and dest[0].value is not None:
            _value(b, dest[0].value, "write")
        else:
            b.path(None, ".", "write")
        if parsed.has("--absolute-names"):
            b.add(Risk.EXEC, "tar -P extracts to absolute paths, anywhere")
    if mode in ("--create", "--append", "--update"):
        if parsed.has("--directory", "--files-from"):
            b.add(Risk.UNDECIDABLE, "tar -C/-T: the files archived are not followed here")
        follow = parsed.has("--dereference")
        for i, w in parsed.operands:
            b.arg(i, w, "follow" if follow else "tree")
    elif mode == "--diff":
        for i, w in parsed.operands:
            b.arg(i, w, "read")
    b.offset = saved


def _value(b: Builder, w: Word, mode: str) -> None:
    if w.static:
        b.path(None, w.value, mode)
    else:
        b.add(Risk.UNDECIDABLE, f"{w.raw!r} is not known before running")


def unzip(b: Builder, name: str, args: Args) -> None:
    parsed = check(b, name, UNZIP, args)
    operands = parsed.operands
    if operands:
        i, w = operands[0]
        b.arg(i, w, "read")
    listing = parsed.has("-l", "-t", "-v", "-z", "-Z", "-p", "-c")
    if not listing:
        b.add(Risk.WRITE, "unzip extracts files")
        dest = parsed.get("-d")
        if dest and dest[0].value is not None:
            _value(b, dest[0].value, "write")
        else:
            b.path(None, ".", "write")


def zip_files(b: Builder, name: str, args: Args) -> None:
    if any(w.value.startswith("-TT") for w in args):
        b.add(Risk.EXEC, "zip -TT runs a command to test the archive")
    parsed = check(b, name, ZIP, args)
    operands = list(parsed.operands)
    if parsed.has("--move"):
        b.add(Risk.DESTRUCTIVE, "zip -m deletes the files it archives")
    if parsed.has("--names-stdin"):
        b.add(Risk.UNDECIDABLE, "zip -@: the files archived are not known")
    if operands:
        i, w = operands.pop(0)
        b.arg(i, w, "write")
    recursive = parsed.has("--recurse-paths")
    for i, w in operands:
        b.arg(i, w, "tree" if recursive else "read")


_SUFFIX = {
    "gzip": ".gz",
    "bzip2": ".bz2",
    "xz": ".xz",
    "zstd": ".zst",
    "lz4": ".lz4",
    "lzma": ".lzma",
}
_UNPACKS = {"gunzip": "gzip", "bunzip2": "bzip2", "unxz": "xz", "unzstd": "zstd"}


def compress(b: Builder, name: str, args: Args) -> None:
    """Replaces FILE by FILE.gz (or back): both are written, the new name too."""
    parsed = check(b, name, COMPRESS[name], args)
    to_stdout = parsed.has("--stdout", "--list", "--test")
    if parsed.has("--rm"):
        b.add(Risk.WRITE, f"{name} --rm deletes its input")
    base = _UNPACKS.get(name, name)
    decompress = name in _UNPACKS or parsed.has("--decompress")
    suffix = _SUFFIX.get(base, ".gz")
    for g in parsed.get("--suffix"):
        suffix = g.value.value if g.value is not None and g.value.static else suffix
    for i, w in parsed.operands:
        b.arg(i, w, "read" if to_stdout else "write")
        if to_stdout or not w.static:
            continue
        if not decompress:
            b.path(b.token(i), w.value + suffix, "write")
        elif w.value.endswith(suffix) or w.value.endswith(".tgz"):
            stem = w.value[: -len(suffix)] if w.value.endswith(suffix) else w.value[:-4] + ".tar"
            b.path(b.token(i), stem, "write")


ARCHIVE_HANDLERS: dict[str, Callable[[Builder, str, Args], None]] = {
    "tar": tar,
    "unzip": unzip,
    "zip": zip_files,
    **dict.fromkeys(COMPRESS, compress),
}
