def ratio(part: float, whole: float) -> float:
    """The share of `part` in `whole`, between 0 and 1 for a part of the whole."""
    return part / whole


def percent(part: float, whole: float) -> float:
    return round(ratio(part, whole) * 100, 1)
