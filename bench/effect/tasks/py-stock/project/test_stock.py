import pytest
from stock import Stock


def test_remove_subtracts():
    stock = Stock()
    stock.add("apple", 5)
    stock.remove("apple", 3)
    assert stock.count("apple") == 2


def test_remove_too_many():
    stock = Stock()
    stock.add("pear", 1)
    with pytest.raises(ValueError):
        stock.remove("pear", 2)


def test_add():
    stock = Stock()
    stock.add("plum", 2)
    stock.add("plum", 3)
    assert stock.count("plum") == 5
