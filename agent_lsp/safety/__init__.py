"""The safety layer (docs/security.md): the OS sandbox is the boundary for everything that
runs; the classifier only decides what to ask about.

May import: `agent_lsp.config`, the shared root modules and `adapters`. Modules (import them
directly; this package's own module imports nothing). What runs, and where:

- `confined`: `ConfinedShell`, the one way the agent runs a program (commands, tests, linters,
  init.d steps, git), inside `sandbox` (bubblewrap: `Confinement`, the argv), with the
  environment of `sandbox_env`, the private home of `homeview`, the secret files `secretscan`
  finds hidden and the git/agent/editor configuration `protect` keeps read-only.

What may run without asking (the allow-grammar classifier):

- `shellparse` (+ `shellwords`, `shellexpand`, `shellstate`): a bash (and dash) parser that
  splits a command line into its simple commands and follows the shell's state between them.
- `classify` with `builder`, `programs` (the dispatch), `options` and `grammar` (option
  grammars), and the per-program handlers and tables: `readers`/`readspecs`, `search`,
  `builtins`, `fileprogs`, `danger`, `archives`, `textprogs`/`sedscript`, `gitcmd`/`gitopts`/
  `gitmutate`/`gitconfig`, `runners`, `packages`, `projects`/`projectspecs`, `wrappers`.
- `risk`: risks, actions and the level table; `rules`: `policy.toml` / user config rules;
  `engine`: `SafetyPolicy` combines the level, the rules, the sandbox and the classification.

Files, trust and the record:

- `paths`: `PathGuard` resolves every path; secret and protected files. `reads`: `ReadGuard`,
  in front of every file the harness reads or writes on the agent's behalf.
- `trust`: workspaces the user trusts; `setup`: `build_policy` from the settings and the
  policy files; `tools`: `guard_tools`; `decision`: the `Decision` record.

The asking side (`CommandPolicy`) is `agent_lsp.safety.policy`.
"""
