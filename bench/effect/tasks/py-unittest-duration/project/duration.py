import re

UNITS = {"h": 24 * 60, "m": 1}


def parse_duration(text: str) -> int:
    """'1h30m' -> 90: the duration in minutes."""
    parts = re.findall(r"(\d+)([hm])", text)
    if not parts:
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(n) * UNITS[unit] for n, unit in parts)
