from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """The half-open range [start, end): start belongs to it, end does not."""

    start: float
    end: float

    def contains(self, x: float) -> bool:
        return self.start <= x < self.end

    def length(self) -> float:
        return self.end - self.start
