class Stock:
    """Counts of items in a shop, by name."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, name: str, amount: int) -> None:
        self.counts[name] = self.counts.get(name, 0) + amount

    def remove(self, name: str, amount: int) -> None:
        have = self.counts.get(name, 0)
        if amount > have:
            raise ValueError(f"only {have} {name} in stock")
        self.counts[name] = have + amount

    def count(self, name: str) -> int:
        return self.counts.get(name, 0)
