import pytest
from summary import median, spread


def test_even_count():
    assert median([4, 1, 3, 2]) == 2.5


def test_two_values():
    assert median([10, 20]) == 15


def test_odd_count():
    assert median([7, 1, 5]) == 5


def test_empty():
    with pytest.raises(ValueError):
        median([])


def test_spread():
    assert spread([3, 9, 4]) == 6
