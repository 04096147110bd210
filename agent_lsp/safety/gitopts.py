"""Option grammars of git's read-only subcommands (status, diff, log, show, blame, grep ...):
the options known to be safe, and by name the ones that write (`--output`), run programs
(`--ext-diff`, `--open-files-in-pager`, `--show-signature`) or read other files (`--contents`,
`-O<orderfile>`), so that their abbreviations resolve to them."""

from __future__ import annotations

from agent_lsp.safety.options import Spec, merge, spec

__all__ = ["READ_SPECS"]

DIFF = (
    "-p -u --patch", "-s --no-patch", "-U --unified =?", "--output =w", "--raw",
    "--patch-with-raw", "-t", "-z", "--indent-heuristic", "--no-indent-heuristic",
    "--minimal", "--patience", "--histogram", "--anchored =", "--diff-algorithm =",
    "--stat =?", "--stat-width =", "--stat-name-width =", "--stat-count =",
    "--stat-graph-width =", "--compact-summary", "--numstat", "--shortstat",
    "-X --dirstat =?", "--cumulative", "--dirstat-by-file =?", "--summary",
    "--patch-with-stat", "--name-only", "--name-status", "--submodule =?", "--color =?",
    "--no-color", "--color-moved =?", "--no-color-moved", "--color-moved-ws =",
    "--no-color-moved-ws", "--word-diff =?", "--word-diff-regex =", "--color-words =?",
    "--no-renames", "--rename-empty", "--no-rename-empty", "--check",
    "--ws-error-highlight =", "--full-index", "--binary", "--abbrev =?", "--no-abbrev",
    "-B --break-rewrites =?", "-M --find-renames =?", "-C --find-copies =?",
    "--find-copies-harder", "-D --irreversible-delete", "-l =", "--diff-filter =",
    "-S =", "-G =", "--find-object =", "--pickaxe-all", "--pickaxe-regex", "-O =r",
    "--skip-to =", "--rotate-to =", "-R", "--relative =?", "--no-relative", "-a --text",
    "--ignore-cr-at-eol", "--ignore-space-at-eol", "-b --ignore-space-change",
    "-w --ignore-all-space", "--ignore-blank-lines", "-I --ignore-matching-lines =",
    "--inter-hunk-context =", "-W --function-context", "--no-function-context",
    "--exit-code", "--quiet", "--no-ext-diff", "--textconv", "--no-textconv",
    "--ignore-submodules =?", "--src-prefix =", "--dst-prefix =", "--no-prefix",
    "--default-prefix", "--line-prefix =", "--ita-invisible-in-index",
    "--ita-visible-in-index", "--output-indicator-new =", "--output-indicator-old =",
    "--output-indicator-context =", "--cached", "--staged", "--merge-base", "--no-index",
    "-1 --base", "-2 --ours", "-3 --theirs", "-0", "-c", "--cc", "--combined-all-paths",
    "-m", "--diff-merges =", "--no-diff-merges", "--remerge-diff", "--dd", "--no-stat",
    "--ext-diff !x", "--no-color-moved-ws",
)  # fmt: skip
LOG = (
    "-n --max-count =", "--skip =", "--since --after =", "--since-as-filter =",
    "--until --before =", "--author =", "--committer =", "--grep-reflog =", "--grep =",
    "--all-match", "--invert-grep", "-i --regexp-ignore-case", "--basic-regexp",
    "-E --extended-regexp", "-F --fixed-strings", "-P --perl-regexp", "--remove-empty",
    "--merges", "--no-merges", "--min-parents =", "--max-parents =", "--no-min-parents",
    "--no-max-parents", "--first-parent", "--exclude-first-parent-only", "--not", "--all",
    "--branches =?", "--tags =?", "--remotes =?", "--glob =", "--exclude =",
    "--exclude-hidden =", "--reflog", "--alternate-refs", "--single-worktree",
    "--ignore-missing", "--bisect", "--cherry-mark", "--cherry-pick", "--left-only",
    "--right-only", "--cherry", "-g --walk-reflogs", "--merge", "--boundary",
    "--simplify-by-decoration", "--show-pulls", "--full-history", "--dense", "--sparse",
    "--simplify-merges", "--ancestry-path =?", "--date-order", "--author-date-order",
    "--topo-order", "--reverse", "--no-walk =?", "--do-walk", "--pretty =?", "--format =",
    "--abbrev-commit", "--no-abbrev-commit", "--oneline", "--encoding =",
    "--expand-tabs =?", "--no-expand-tabs", "--notes =?", "--no-notes", "--show-notes =?",
    "--standard-notes", "--no-standard-notes", "--show-signature !x", "--relative-date",
    "--date =", "--parents", "--children", "--left-right", "--graph", "--show-linear-break =?",
    "--decorate =?", "--no-decorate", "--decorate-refs =", "--decorate-refs-exclude =",
    "--clear-decorations", "--source", "--use-mailmap", "--mailmap", "--no-mailmap",
    "--no-use-mailmap", "--full-diff", "--log-size", "-L =", "--follow", "--no-follow",
    "--stdin", "--objects", "--objects-edge", "--count", "--timestamp", "--header",
    "--no-commit-id", "--root", "--name-rev", "--show-origin",
)  # fmt: skip
_BASE = spec(*DIFF, numeric=True)
_LOG = merge(_BASE, *LOG)
STATUS = spec(
    "-s --short", "-b --branch", "--show-stash", "--porcelain =?", "--long", "-v --verbose",
    "-u --untracked-files =?", "--ignore-submodules =?", "--ignored =?", "-z --null",
    "--column =?", "--no-column", "--ahead-behind", "--no-ahead-behind", "--renames",
    "--no-renames", "-M --find-renames =?",
)  # fmt: skip
BLAME = spec(
    "-b", "--root", "--show-stats", "-L =", "-l", "-t", "-S =r", "--reverse =", "--first-parent",
    "-p --porcelain", "--line-porcelain", "--incremental", "--encoding =", "--contents =r",
    "--date =", "--progress", "--no-progress", "-M =?", "-C =?", "--ignore-rev =",
    "--ignore-revs-file =r", "--color-lines", "--color-by-age", "--minimal", "-c",
    "-f --show-name", "-n --show-number", "-s", "-e --show-email", "-w", "--abbrev =?",
    "--score-debug",
)  # fmt: skip
LS_FILES = spec(
    "-c --cached", "-d --deleted", "-m --modified", "-o --others", "-i --ignored",
    "-s --stage", "-k --killed", "-u --unmerged", "--resolve-undo", "--directory",
    "--no-empty-directory", "--eol", "-z", "--deduplicate", "-x --exclude =",
    "-X --exclude-from =r", "--exclude-per-directory =", "--exclude-standard",
    "--error-unmatch", "--with-tree =", "-t", "-v", "-f", "--full-name",
    "--recurse-submodules", "--abbrev =?", "--debug", "--sparse", "--format =",
)  # fmt: skip
LS_TREE = spec(
    "-d", "-r", "-t", "-l --long", "-z", "--name-only --name-status", "--object-only",
    "--full-name", "--full-tree", "--abbrev =?", "--format =",
)  # fmt: skip
REV_PARSE = spec(
    "--abbrev-ref =?", "--short =?", "--verify", "-q --quiet", "--show-toplevel",
    "--show-prefix", "--show-cdup", "--git-dir", "--git-common-dir", "--absolute-git-dir",
    "--is-inside-git-dir", "--is-inside-work-tree", "--is-bare-repository",
    "--is-shallow-repository", "--symbolic", "--symbolic-full-name", "--all", "--branches =?",
    "--tags =?", "--remotes =?", "--glob =", "--exclude =", "--disambiguate =", "--since =",
    "--after =", "--until =", "--before =", "--default =", "--revs-only", "--no-revs",
    "--flags", "--no-flags", "--sq", "--not", "--local-env-vars", "--show-object-format =?",
    "--show-superproject-working-tree", "--shared-index-path", "--path-format =",
    "--show-ref-format",
)  # fmt: skip
DESCRIBE = spec(
    "--all", "--tags", "--contains", "--abbrev =", "--candidates =", "--exact-match",
    "--debug", "--long", "--match =", "--exclude =", "--always", "--first-parent",
    "--dirty =?", "--broken =?",
)  # fmt: skip
GREP = spec(
    "--cached", "--no-index", "--untracked", "--no-exclude-standard", "--exclude-standard",
    "--recurse-submodules", "-a --text", "--textconv", "--no-textconv", "-i --ignore-case",
    "-I", "--max-depth =", "-r --recursive", "--no-recursive", "-w --word-regexp",
    "-v --invert-match", "-h", "-H", "--full-name", "-E --extended-regexp",
    "-G --basic-regexp", "-P --perl-regexp", "-F --fixed-strings", "-n --line-number",
    "--column", "-l --files-with-matches --name-only", "-L --files-without-match",
    "-z --null", "-o --only-matching", "-c --count", "--color =?", "--no-color", "--break",
    "--heading", "-p --show-function", "-C --context =", "-A --after-context =",
    "-B --before-context =", "-W --function-context", "-m --max-count =", "--threads =",
    "-f =r", "-e =", "--and", "--or", "--not", "--all-match", "-q --quiet",
    "-O --open-files-in-pager =?x", numeric=True,
)  # fmt: skip
CAT_FILE = spec(
    "-t", "-s", "-e", "-p", "--textconv", "--filters", "--batch =?", "--batch-check =?",
    "--batch-command =?", "--batch-all-objects", "--buffer", "--follow-symlinks",
    "--unordered", "-Z", "--allow-unknown-type", "--path =", "--use-mailmap", "--no-use-mailmap",
)  # fmt: skip
SHOW_REF = spec(
    "--head", "--heads --branches", "--tags", "-d --dereference", "-s --hash =?", "--verify",
    "--abbrev =?", "-q --quiet", "--exists",
)  # fmt: skip
FOR_EACH_REF = spec(
    "--count =", "--sort =", "--format =", "--color =?", "-s --shell", "-p --perl",
    "--python", "--tcl", "--points-at =", "--merged =?", "--no-merged =?", "--contains =?",
    "--no-contains =?", "--ignore-case", "--omit-empty", "--exclude =",
    "--include-root-refs",
)  # fmt: skip
BRANCH_LIST = spec(
    "-a --all", "-r --remotes", "-v --verbose", "--list", "-l", "--contains =?",
    "--no-contains =?", "--merged =?", "--no-merged =?", "--sort =", "--format =",
    "--points-at =", "--color =?", "--no-color", "--column =?", "--no-column", "--abbrev =?",
    "--no-abbrev", "-i --ignore-case", "--show-current", "-q --quiet",
)  # fmt: skip
TAG_LIST = spec(
    "-l --list", "-n =?", "--sort =", "--contains =?", "--no-contains =?", "--merged =?",
    "--no-merged =?", "--points-at =?", "--format =", "--color =?", "-i --ignore-case",
    "--column =?", "--no-column",
)  # fmt: skip
CONFIG_READ = spec(
    "--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l --list", "--show-origin",
    "--show-scope", "--name-only", "-z --null", "--type =", "--bool", "--int",
    "--bool-or-int", "--path", "--expiry-date", "--default =", "--local", "--global",
    "--system", "--worktree", "-f --file =r", "--blob =", "--includes", "--no-includes",
    "--all", "--regexp", "--value =", "--fixed-value", "--url =", "--show-names",
    "--no-show-names",
)  # fmt: skip
PLAIN = spec()
READ_SPECS: dict[str, Spec] = {
    "status": STATUS,
    "diff": _BASE,
    "diff-tree": _LOG,
    "diff-index": _BASE,
    "diff-files": _BASE,
    "log": _LOG,
    "show": _LOG,
    "whatchanged": _LOG,
    "rev-list": _LOG,
    "shortlog": merge(
        _LOG, "-n --numbered", "-s --summary", "-e --email", "--group =", "-c", "-w =?"
    ),
    "blame": BLAME,
    "annotate": BLAME,
    "ls-files": LS_FILES,
    "ls-tree": LS_TREE,
    "rev-parse": REV_PARSE,
    "describe": DESCRIBE,
    "grep": GREP,
    "cat-file": CAT_FILE,
    "show-ref": SHOW_REF,
    "for-each-ref": FOR_EACH_REF,
    "name-rev": spec("--tags", "--refs =", "--exclude =", "--all", "--annotate-stdin",
                     "--name-only", "--no-undefined", "--always"),
    "merge-base": spec("-a --all", "--octopus", "--independent", "--is-ancestor", "--fork-point"),
    "count-objects": spec("-v --verbose", "-H --human-readable"),
    "version": spec("--build-options"),
    "check-ignore": spec("-q --quiet", "-v --verbose", "--stdin", "-z", "-n --non-matching",
                         "--no-index"),
    "check-attr": spec("-a --all", "--cached", "--stdin", "-z", "--source ="),
    "var": spec("-l"),
    "show-branch": spec("-a --all", "-r --remotes", "--current", "--topo-order",
                        "--date-order", "--sparse", "--more =", "--list", "--merge-base",
                        "--independent", "--no-name", "--sha1-name", "--topics",
                        "-g --reflog =?", "--color =?", "--no-color"),
}  # fmt: skip
BRANCH_SPEC = BRANCH_LIST
TAG_SPEC = TAG_LIST
CONFIG_SPEC = CONFIG_READ
