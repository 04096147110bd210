import pytest
from stats import percent, ratio


def test_ratio():
    assert ratio(1, 4) == 0.25


def test_zero_whole():
    with pytest.raises(ValueError):
        ratio(3, 0)


def test_percent():
    assert percent(1, 3) == 33.3
