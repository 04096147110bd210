from words import longest, total_length


def test_total_length():
    assert total_length(["ab", "cde"]) == 5


def test_strips_spaces():
    assert total_length([" a ", "b"]) == 2


def test_longest():
    assert longest(["x", "yyy", "zz"]) == "yyy"
