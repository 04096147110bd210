from pages import paginate


def test_first_page():
    assert paginate([1, 2, 3, 4, 5, 6, 7], 1, 3) == [1, 2, 3]


def test_last_page_is_short():
    assert paginate([1, 2, 3, 4, 5, 6, 7], 3, 3) == [7]


def test_past_the_end():
    assert paginate([1, 2], 5, 3) == []
