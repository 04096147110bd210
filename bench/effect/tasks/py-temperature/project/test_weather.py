from report import describe
from units import to_celsius


def test_freezing():
    assert to_celsius(32) == 0.0


def test_boiling():
    assert to_celsius(212) == 100.0


def test_describe():
    assert describe("Oslo", 50) == "Oslo: 10.0 °C"
