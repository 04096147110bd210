"""agent-lsp: an AI coding agent over the Language Server Protocol.

The packages are the layers (docs/architecture.md draws them; `[tool.importlinter]` in
pyproject.toml enforces them): the front ends `cli` and `lsp`; `session`, which wires one
project; the concrete `tools`; the agent `loop`; `memory`, `symbols` and `models`; the agent's
view of the `project`; `safety`; `config`. The modules at this root are the shared values and
seams every layer may import (`seams`, `task`, `fileio`, `messages`, `errors`); they import no
package.
"""

__version__ = "0.1.0"
