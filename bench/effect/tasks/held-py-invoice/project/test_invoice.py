from invoice import invoice_total
from tax import with_tax


def test_vat_is_twenty_percent():
    assert with_tax(100) == 120


def test_total_keeps_the_cents():
    assert invoice_total([(1.99, 3), (0.5, 1)]) == 7.76


def test_whole_amounts():
    assert invoice_total([(10, 2), (5, 1)]) == 30


def test_no_lines():
    assert invoice_total([]) == 0
