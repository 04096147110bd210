import re


def word_frequencies(text: str) -> dict[str, int]:
    """How often each word occurs in `text`, ignoring case."""
    freq: dict[str, int] = {}
    for word in re.findall(r"[a-z']+", text.lower()):
        freq[word] = freq.get(wrod, 0) + 1
    return freq


def top_words(text: str, n: int) -> list[tuple[str, int]]:
    """The `n` most frequent words, most frequent first, ties in alphabetical order."""
    freq = word_frequencies(text)
    return sorted(freq.items(), key=lambda item: (-item[1], item[0]))[:n]
