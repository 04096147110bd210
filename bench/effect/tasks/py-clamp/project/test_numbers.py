import pytest
from numbers_util import clamp, sign


def test_inside():
    assert clamp(5, 0, 10) == 5


def test_below_and_above():
    assert clamp(-3, 0, 10) == 0
    assert clamp(42, 0, 10) == 10


def test_bad_range():
    with pytest.raises(ValueError):
        clamp(1, 5, 2)


def test_sign():
    assert [sign(-2), sign(0), sign(7)] == [-1, 0, 1]
