"""Option grammars of the programs that read and print (GNU coreutils, grep, ripgrep, file,
tree): every option known to be safe, plus the dangerous ones by name so that their
abbreviations resolve to them. What is not listed is an unknown option (not read-only)."""

from __future__ import annotations

from agent_lsp.safety.options import Spec, spec

__all__ = ["READ_SPECS"]

_STD = ("--help", "--version")

CAT = spec(
    "-A --show-all", "-b --number-nonblank", "-e", "-E --show-ends", "-n --number",
    "-s --squeeze-blank", "-t", "-T --show-tabs", "-u", "-v --show-nonprinting", *_STD,
)  # fmt: skip
TAC = spec("-b --before", "-r --regex", "-s --separator =", *_STD)
HEAD = spec(
    "-c --bytes =", "-n --lines =", "-q --quiet --silent", "-v --verbose",
    "-z --zero-terminated", *_STD, numeric=True,
)  # fmt: skip
TAIL = spec(
    "-c --bytes =", "-f", "--follow =?", "-F", "-n --lines =", "--max-unchanged-stats =",
    "--pid =", "-q --quiet --silent", "--retry", "-s --sleep-interval =", "-v --verbose",
    "-z --zero-terminated", "--debug", *_STD, numeric=True,
)  # fmt: skip
WC = spec(
    "-c --bytes", "-m --chars", "-l --lines", "-L --max-line-length", "-w --words",
    "--total =", "--files0-from =u", *_STD,
)  # fmt: skip
LS = spec(
    "-a --all", "-A --almost-all", "--author", "-b --escape", "--block-size =",
    "-B --ignore-backups", "-c", "-C", "--color =?", "-d --directory", "-D --dired", "-f",
    "-F --classify =?", "--file-type", "--format =", "--full-time", "-g",
    "--group-directories-first", "-G --no-group", "-h --human-readable", "--si",
    "-H --dereference-command-line", "--dereference-command-line-symlink-to-dir", "--hide =",
    "--hyperlink =?", "--indicator-style =", "-i --inode", "-I --ignore =", "-k --kibibytes",
    "-l", "-L --dereference", "-m", "-n --numeric-uid-gid", "-N --literal", "-o",
    "-p", "-q --hide-control-chars", "--show-control-chars", "-Q --quote-name",
    "--quoting-style =", "-r --reverse", "-R --recursive", "-s --size", "-S", "--sort =",
    "--time =", "--time-style =", "-t", "-T --tabsize =", "-u", "-U", "-v", "-w --width =",
    "-x", "-X", "-Z --context", "--zero", "-1", *_STD,
)  # fmt: skip
STAT = spec(
    "-L --dereference", "-f --file-system", "-c --format =", "--printf =", "-t --terse",
    "--cached =", *_STD,
)  # fmt: skip
FILE = spec(
    "-b --brief", "-c --checking-printout", "-E", "-e --exclude =", "--exclude-quiet =",
    "-F --separator =", "-h --no-dereference", "-i --mime", "--apple", "--extension",
    "--mime-type", "--mime-encoding", "-k --keep-going", "-l --list", "-L --dereference",
    "-m --magic-file =r", "-N --no-pad", "-n --no-buffer", "-0 --print0", "-P --parameter =",
    "-r --raw", "-s --special-files", "-v --version", "--help", "-f --files-from =u",
    "-z --uncompress !x", "-Z --uncompress-noreport !x", "-C --compile !w",
)  # fmt: skip
DU = spec(
    "-0 --null", "-a --all", "--apparent-size", "-B --block-size =", "-b --bytes", "-c --total",
    "-D --dereference-args", "-d --max-depth =", "--files0-from =u", "-H", "--inodes",
    "-h --human-readable", "-k", "-L --dereference", "-l --count-links", "-m",
    "-P --no-dereference", "-S --separate-dirs", "--si", "-s --summarize", "-t --threshold =",
    "--time =?", "--time-style =", "-X --exclude-from =r", "--exclude =",
    "-x --one-file-system", *_STD,
)  # fmt: skip
TREE = spec(
    "-a", "-d", "-l", "-f", "-x", "-L =", "-P =", "-I =", "--gitignore", "--gitfile =r",
    "--ignore-case", "--matchdirs", "--metafirst", "--prune", "--info", "--infofile =r",
    "--noreport", "--charset =", "--filelimit =", "-o =w", "-q", "-N", "-Q", "-p", "-u", "-g",
    "-s", "-h", "--si", "--du", "-D", "--timefmt =", "-F", "--inodes", "--device", "-v", "-t",
    "-c", "-U", "-r", "--dirsfirst", "--filesfirst", "--sort =", "-i", "-A", "-S", "-n", "-C",
    "-X", "-J", "-H =", "-T =", "--nolinks", "--version", "--help", "-R !w",
    cluster_values=False,
)  # fmt: skip
DIFF = spec(
    "--normal", "-q --brief", "-s --report-identical-files", "-c", "-C =", "--context =?",
    "-u", "-U =", "--unified =?", "-e --ed", "-n --rcs", "-y --side-by-side", "-W --width =",
    "--left-column", "--suppress-common-lines", "-p --show-c-function",
    "-F --show-function-line =", "--label =", "-t --expand-tabs", "-T --initial-tab",
    "--tabsize =", "--suppress-blank-empty", "-r --recursive", "--no-dereference",
    "-N --new-file", "--unidirectional-new-file", "--ignore-file-name-case",
    "--no-ignore-file-name-case", "-x --exclude =", "-X --exclude-from =r",
    "-S --starting-file =", "--from-file =r", "--to-file =r", "-i --ignore-case",
    "-E --ignore-tab-expansion", "-Z --ignore-trailing-space", "-b --ignore-space-change",
    "-w --ignore-all-space", "-B --ignore-blank-lines", "-I --ignore-matching-lines =",
    "-a --text", "--strip-trailing-cr", "-D --ifdef =", "--line-format =",
    "--old-line-format =", "--new-line-format =", "--unchanged-line-format =",
    "--old-group-format =", "--new-group-format =", "--unchanged-group-format =",
    "--changed-group-format =", "-d --minimal", "--horizon-lines =", "--speed-large-files",
    "--color =?", "--palette =", "--help", "-v --version", "-l --paginate !x",
)  # fmt: skip
CMP = spec(
    "-b --print-bytes", "-i --ignore-initial =", "-l --verbose", "-n --bytes =",
    "-s --quiet --silent", "--help", "-v --version",
)  # fmt: skip
SORT = spec(
    "-b --ignore-leading-blanks", "-d --dictionary-order", "-f --ignore-case",
    "-g --general-numeric-sort", "-i --ignore-nonprinting", "-M --month-sort",
    "-h --human-numeric-sort", "-n --numeric-sort", "-R --random-sort", "--random-source =r",
    "-r --reverse", "--sort =", "-V --version-sort", "--batch-size =", "-c", "--check =?", "-C",
    "--debug", "-k --key =", "-m --merge", "-s --stable", "-S --buffer-size =",
    "-t --field-separator =", "--parallel =", "-u --unique", "-z --zero-terminated", *_STD,
    "-o --output =w", "-T --temporary-directory =w", "--compress-program =x",
    "--files0-from =u",
)  # fmt: skip
UNIQ = spec(
    "-c --count", "-d --repeated", "-D", "--all-repeated =?", "-f --skip-fields =",
    "--group =?", "-i --ignore-case", "-s --skip-chars =", "-u --unique",
    "-z --zero-terminated", "-w --check-chars =", *_STD,
)  # fmt: skip
CUT = spec(
    "-b --bytes =", "-c --characters =", "-d --delimiter =", "-f --fields =", "-n",
    "--complement", "-s --only-delimited", "--output-delimiter =", "-z --zero-terminated", *_STD,
)  # fmt: skip
TR = spec("-c -C --complement", "-d --delete", "-s --squeeze-repeats", "-t --truncate-set1", *_STD)
NL = spec(
    "-b --body-numbering =", "-d --section-delimiter =", "-f --footer-numbering =",
    "-h --header-numbering =", "-i --line-increment =", "-l --join-blank-lines =",
    "-n --number-format =", "-p --no-renumber", "-s --number-separator =",
    "-v --starting-line-number =", "-w --number-width =", *_STD,
)  # fmt: skip
OD = spec(
    "-A --address-radix =", "--endian =", "-j --skip-bytes =", "-N --read-bytes =", "-S =",
    "--strings =?", "-t --format =", "-v --output-duplicates", "-w --width =?", "--traditional",
    "-a", "-b", "-c", "-d", "-f", "-i", "-l", "-o", "-s", "-x", *_STD,
)  # fmt: skip
BASENAME = spec("-a --multiple", "-s --suffix =", "-z --zero", *_STD)
DIRNAME = spec("-z --zero", *_STD)
REALPATH = spec(
    "-e --canonicalize-existing", "-m --canonicalize-missing", "-L --logical", "-P --physical",
    "-q --quiet", "--relative-to =m", "--relative-base =m", "-s --strip --no-symlinks",
    "-z --zero", *_STD,
)  # fmt: skip
READLINK = spec(
    "-f --canonicalize", "-e --canonicalize-existing", "-m --canonicalize-missing",
    "-n --no-newline", "-q --quiet", "-s --silent", "-v --verbose", "-z --zero", *_STD,
)  # fmt: skip
WHICH = spec("-a", "-s", "--all", *_STD)
DATE = spec(
    "-d --date =", "--debug", "-I --iso-8601 =?", "--resolution", "-R --rfc-email",
    "--rfc-3339 =", "-u --utc --universal", *_STD, "-f --file =r", "-r --reference =m",
    "-s --set =x",
)  # fmt: skip
PWD = spec("-L", "-P", *_STD)
SUMS = spec(
    "-b --binary", "-c --check", "--tag", "-t --text", "-z --zero", "--ignore-missing",
    "--quiet", "--status", "--strict", "-w --warn", "-l --length =", "-a --algorithm =",
    "--untagged", "--base64", "--raw", "--debug", *_STD,
)  # fmt: skip
BASE64 = spec("-d --decode", "-i --ignore-garbage", "-w --wrap =", *_STD)
PASTE = spec("-d --delimiters =", "-s --serial", "-z --zero-terminated", *_STD)
JOIN = spec(
    "-a =", "-e =", "-i --ignore-case", "-j =", "-o =", "-t =", "-v =", "-1 =", "-2 =",
    "--check-order", "--nocheck-order", "--header", "-z --zero-terminated", *_STD,
)  # fmt: skip
COMM = spec(
    "-1", "-2", "-3", "--check-order", "--nocheck-order", "--output-delimiter =", "--total",
    "-z --zero-terminated", *_STD,
)  # fmt: skip
FOLD = spec("-b --bytes", "-s --spaces", "-w --width =", *_STD, numeric=True)
FMT = spec(
    "-c --crown-margin", "-p --prefix =", "-s --split-only", "-t --tagged-paragraph",
    "-u --uniform-spacing", "-w --width =", "-g --goal =", *_STD, numeric=True,
)  # fmt: skip
EXPAND = spec("-i --initial", "-t --tabs =", "-a --all", "--first-only", *_STD, numeric=True)
COLUMN = spec(
    "-t --table", "-s --separator =", "-o --output-separator =", "-c --output-width =",
    "-x --fillrows", "-N --table-columns =", "-R --table-right =", "-n --table-name =",
    "-J --json", "-L --table-empty-lines", "-e", "-l --table-columns-limit =", "-d", "-H =",
    "-T --table-truncate =", "-W --table-wrap =", "-E --table-noextreme =", "-O =", "-r =",
    "-h --help", "-V --version",
)  # fmt: skip
REV = spec("-0 --zero", "-h --help", "-V --version")
STRINGS = spec(
    "-a --all", "-d --data", "-f --print-file-name", "-n --bytes =", "-t --radix =", "-e =",
    "-w --include-all-whitespace", "-s --output-separator =", "--help", "-v -V --version",
    numeric=True,
)  # fmt: skip
HEXDUMP = spec(
    "-b", "-c", "-C --canonical", "-d", "-o", "-x", "-e --format =", "-f --format-file =r",
    "-L --color =?", "-n --length =", "-s --skip =", "-v --no-squeezing", "-h --help",
    "-V --version",
)  # fmt: skip
XXD = spec(
    "-a", "-b", "-C", "-c =", "-E", "-e", "-g =", "-h", "-i", "-l =", "-n =", "-o =", "-p",
    "-r", "-R =", "-s =", "-u", "-v", "-d", cluster=False,
)  # fmt: skip
ICONV = spec(
    "-f --from-code =", "-t --to-code =", "-l --list", "-c", "-s --silent", "--verbose",
    "-o --output =w", "--help", "-V --version", "--usage",
)  # fmt: skip
DIFF3 = spec(
    "-A --show-all", "-e --ed", "-E --show-overlap", "-3 --easy-only", "-x --overlap-only",
    "-X", "-i", "-m --merge", "-a --text", "--strip-trailing-cr", "-T --initial-tab",
    "--label =", "--help", "-v --version", "--diff-program =x",
)  # fmt: skip
SDIFF = spec(
    "-i --ignore-case", "-E --ignore-tab-expansion", "-Z --ignore-trailing-space",
    "-b --ignore-space-change", "-W --ignore-all-space", "-B --ignore-blank-lines",
    "-I --ignore-matching-lines =", "--strip-trailing-cr", "-a --text", "-w --width =",
    "-l --left-column", "-s --suppress-common-lines", "-t --expand-tabs", "--tabsize =",
    "-d --minimal", "-H --speed-large-files", "--help", "-v --version", "-o --output =w",
    "--diff-program =x",
)  # fmt: skip
ZCAT = spec("-f --force", "-q --quiet", "-v --verbose", "-l --list", "-t --test", *_STD)
SEQ = spec("-f --format =", "-s --separator =", "-w --equal-width", *_STD)
UNAME = spec(
    "-a --all", "-s --kernel-name", "-n --nodename", "-r --kernel-release",
    "-v --kernel-version", "-m --machine", "-p --processor", "-i --hardware-platform",
    "-o --operating-system", *_STD,
)  # fmt: skip
ID = spec(
    "-a", "-Z --context", "-g --group", "-G --groups", "-n --name", "-r --real", "-u --user",
    "-z --zero", *_STD,
)  # fmt: skip
NPROC = spec("--all", "--ignore =", *_STD)
PLAIN = spec(*_STD)

READ_SPECS: dict[str, Spec] = {
    "cat": CAT, "tac": TAC, "head": HEAD, "tail": TAIL, "wc": WC, "ls": LS, "dir": LS,
    "vdir": LS, "stat": STAT, "file": FILE, "du": DU, "tree": TREE, "diff": DIFF, "cmp": CMP,
    "sort": SORT, "uniq": UNIQ, "cut": CUT, "tr": TR, "nl": NL, "od": OD, "basename": BASENAME,
    "dirname": DIRNAME, "realpath": REALPATH, "readlink": READLINK, "which": WHICH,
    "date": DATE, "base64": BASE64, "base32": BASE64, "paste": PASTE, "join": JOIN,
    "comm": COMM, "fold": FOLD, "fmt": FMT, "expand": EXPAND, "unexpand": EXPAND,
    "column": COLUMN, "rev": REV, "strings": STRINGS, "hexdump": HEXDUMP, "xxd": XXD,
    "iconv": ICONV, "diff3": DIFF3, "sdiff": SDIFF, "zcat": ZCAT, "seq": SEQ, "uname": UNAME,
    "id": ID, "nproc": NPROC, "whoami": PLAIN, "groups": PLAIN, "arch": PLAIN, "tty": PLAIN,
    "logname": PLAIN, "sleep": PLAIN, "pwd": PWD,
    **dict.fromkeys(
        ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum",
         "cksum", "sum"),
        SUMS,
    ),
}  # fmt: skip
