"""The safety layer: permission levels, the command classifier, the policy rules, the path
resolver, workspace trust and the OS sandbox (docs/security.md).

Modules (import them directly; this package imports nothing so that `agent_lsp.settings` can
use `agent_lsp.safety.trust` without a cycle):

- `paths`: `PathGuard` resolves every path a tool touches; secret and protected files.
- `shellparse` (+ `shellwords`, `shellexpand`): a bash parser that splits a command line into
  its simple commands.
- `classify` (+ `programs`, `runners`, `wrappers`, `fileprogs`, `textprogs`, `gitcmd`): what
  each simple command may do, as `risk.Finding`s with reasons.
- `risk`: risks, actions and the level table.
- `rules`: `policy.toml` / user config rules, validated against their own examples.
- `engine`: `SafetyPolicy` combines the level, the rules and the classification.
- `decision`: the typed `Decision` record of every permission decision.
- `trust`: workspaces the user trusts (their project config may then widen settings).
- `sandbox`: bubblewrap availability probe, the argv wrapper and the scrubbed environment.
- `setup`: `build_policy` from the settings and the policy files.
- `tools`: `guard_tools` applies the level and the tool rules to every tool.

The asking side (`CommandPolicy`) is `agent_lsp.permissions`.
"""
