from invoice import Line, invoice_total


def test_total():
    assert invoice_total([Line(2.5, 2), Line(1.0, 3)]) == 8.0


def test_discount():
    assert invoice_total([Line(10.0, 1)], discount=0.25) == 7.5


def test_empty():
    assert invoice_total([]) == 0.0
