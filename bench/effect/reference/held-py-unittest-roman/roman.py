VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def from_roman(numeral: str) -> int:
    """'XIV' -> 14: a numeral written before a larger one is subtracted."""
    total = 0
    previous = 0
    for letter in numeral.upper():
        value = VALUES[letter]
        total += value
        if previous < value:
            total -= 2 * previous
        previous = value
    return total
