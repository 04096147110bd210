def median(values: list[float]) -> float:
    """The middle value; for an even number of values, the mean of the two middle ones."""
    if not values:
        raise ValueError("no median of an empty list")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[mid]
    return (ordered[mid] + ordered[mid + 1]) / 2


def spread(values: list[float]) -> float:
    """The largest value minus the smallest."""
    return max(values) - min(values)
