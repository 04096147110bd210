"""The headless front end: `agent-lsp` (`main` parses and dispatches; `commands` runs the
subcommands; `doctor` the setup checks; `memory` the memory subcommands), and the terminal as
the user's channel (`terminal`: progress on stderr, questions at the prompt); `awake` runs
the event loop so that a signal (Ctrl-C) always reaches it.

May import everything below it, the LSP layer included (`agent-lsp serve` starts the server).
Nothing imports it except `agent_lsp.__main__`.
"""
