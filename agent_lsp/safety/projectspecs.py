"""Option grammars of the project test and build runners (pytest, unittest, go, cargo, the
Rust test harness): options known to be safe, and by name those that load other code
(`=x`), write elsewhere (`=w`) or read other files (`=r`)."""

from __future__ import annotations

from agent_lsp.safety.options import Spec, spec

__all__ = ["CARGO", "CARGO_GLOBAL", "GO", "LIBTEST", "PYTEST", "UNITTEST"]

PYTEST = spec(
    "-q --quiet", "-v --verbose", "-x --exitfirst", "-s", "--capture =", "-k =", "-m =",
    "--maxfail =", "--lf --last-failed", "--ff --failed-first", "--nf --new-first",
    "--sw --stepwise", "--sw-skip --stepwise-skip", "--tb =", "-r =", "--durations =",
    "--durations-min =", "-l --showlocals", "--no-showlocals", "--no-header", "--no-summary",
    "--co --collect-only", "--strict-markers", "--strict-config", "--strict",
    "--disable-warnings --disable-pytest-warnings", "--color =", "--code-highlight =",
    "--runxfail", "--doctest-modules", "--doctest-continue-on-failure", "--import-mode =",
    "--ignore =", "--ignore-glob =", "--deselect =", "--keep-duplicates", "--setup-show",
    "--setup-only", "--setup-plan", "--fixtures --funcargs", "--fixtures-per-test",
    "--markers", "-V --version", "-h --help", "--log-level =", "--log-cli-level =",
    "--log-format =", "--log-date-format =", "--show-capture =", "--full-trace",
    "--cache-clear", "--lfnf --last-failed-no-failures =", "-n --numprocesses =", "--dist =",
    "--timeout =", "--no-cov", "--cov-report =", "--cov-fail-under =", "--cov-branch",
    "--noconftest", "--continue-on-collection-errors", "-W --pythonwarnings =", "-p =",
    "--junitxml --junit-xml =w", "--basetemp =w", "--log-file =w", "--debug =?w",
    "-c --config-file =x", "--rootdir =x", "-o --override-ini =x", "--inifile =x",
    "--confcutdir =x", "--pyargs !x", "--pdb !x", "--trace !x", "--pdbcls =x",
    "--cov =?x", "--cache-show =?",
)  # fmt: skip
UNITTEST = spec(
    "-v --verbose", "-q --quiet", "-f --failfast", "-c --catch", "-b --buffer", "-k =",
    "--locals", "--durations =", "-s --start-directory =", "-p --pattern =",
    "-t --top-level-directory =", "-h --help",
)  # fmt: skip
_GO_BUILD = (
    "-a", "-n", "-x", "-v", "-race", "-msan", "-asan", "-trimpath", "-work", "-cover",
    "-linkshared", "-tags =", "-mod =", "-p =", "-pgo =r", "-buildvcs =", "-buildmode =",
    "-covermode =", "-coverpkg =", "-installsuffix =", "-json", "-o =w", "-pkgdir =w",
    "-modfile =r", "-overlay =r", "-ldflags =x", "-gcflags =x", "-asmflags =x",
    "-gccgoflags =x", "-compiler =x", "-toolexec =x", "-C =x", "-exec =x", "-modcacherw",
)  # fmt: skip
_GO_TEST = (
    "-short", "-benchmem", "-failfast", "-fullpath", "-run =", "-skip =", "-count =",
    "-timeout =", "-bench =", "-benchtime =", "-cpu =", "-parallel =", "-list =",
    "-shuffle =", "-vet =", "-coverprofile =w", "-cpuprofile =w", "-memprofile =w",
    "-blockprofile =w", "-mutexprofile =w", "-trace =w", "-outputdir =w", "-args !x",
    "-memprofilerate =", "-blockprofilerate =", "-mutexprofilefraction =", "-c",
)  # fmt: skip
GO: dict[str, Spec] = {
    "build": spec(*_GO_BUILD, single_dash_long=True, abbrev=False),
    "test": spec(*_GO_BUILD, *_GO_TEST, single_dash_long=True, abbrev=False),
    "vet": spec(
        "-n", "-x", "-json", "-c =", "-tags =", "-mod =", "-vettool =x", "-C =x",
        single_dash_long=True, abbrev=False,
    ),
}  # fmt: skip
CARGO_GLOBAL = spec(
    "-v --verbose", "-q --quiet", "--color =", "--offline", "--frozen", "--locked",
    "-Z =x", "--config =x", "-C =x", "-V --version", "--list", "--explain =", "-h --help",
    permute=False,
)  # fmt: skip
CARGO = spec(
    "-p --package =", "--workspace", "--all", "--exclude =", "--lib", "--bins", "--bin =",
    "--examples", "--example =", "--tests", "--test =", "--benches", "--bench =",
    "--all-targets", "--doc", "--no-run", "--no-fail-fast", "-j --jobs =", "--keep-going",
    "-r --release", "--profile =", "-F --features =", "--all-features",
    "--no-default-features", "--target =", "--message-format =", "--ignore-rust-version",
    "--timings =?", "--future-incompat-report", "--locked", "--offline", "--frozen",
    "-q --quiet", "-v --verbose", "--color =", "--target-dir =w", "--artifact-dir =w",
    "--manifest-path =x", "--config =x", "-Z =x", "--unit-graph", "-h --help",
)  # fmt: skip
LIBTEST = spec(
    "--nocapture", "--show-output", "--test-threads =", "--ignored", "--include-ignored",
    "--exact", "-q --quiet", "--list", "--skip =", "--color =", "--format =", "--shuffle",
    "--shuffle-seed =", "--test", "--bench", "--force-run-in-process", "--logfile =w",
    "-Z =x", "--report-time",
)  # fmt: skip
