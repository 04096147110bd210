def sign(value: float) -> int:
    """-1, 0 or 1."""
    return (value > 0) - (value < 0)


def clamp(value: float, low: float, high: float) -> float:
    """`value` limited to the range [low, high]."""
    if low > high:
        raise ValueError("low > high")
    return max(low, min(value, high))
