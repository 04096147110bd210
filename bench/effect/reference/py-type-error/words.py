def total_length(words: list[str]) -> int:
    """The number of characters in all the words together."""
    cleaned = [w.strip() for w in words]
    return sum(len(w) for w in cleaned)


def longest(words: list[str]) -> str:
    return max(words, key=len) if words else ""
