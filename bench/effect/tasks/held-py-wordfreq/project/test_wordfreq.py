from wordfreq import top_words, word_frequencies


def test_counts_ignore_case():
    assert word_frequencies("A cat, a hat") == {"a": 2, "cat": 1, "hat": 1}


def test_top_words():
    assert top_words("b a b c a b", 2) == [("b", 3), ("a", 2)]


def test_ties_are_alphabetical():
    assert top_words("pear fig apple", 2) == [("apple", 1), ("fig", 1)]


def test_empty_text():
    assert word_frequencies("") == {}
