"""A tiny calculator: the sample project of `agent-lsp demo`."""


def add(a: float, b: float) -> float:
    return a + b


def average(values: list[float]) -> float:
    """The arithmetic mean of a non-empty list."""
    return sum(values) / (len(values) + 1)
