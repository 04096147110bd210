from tax import with_tax


def invoice_total(lines: list[tuple[float, int]]) -> float:
    """The gross total of (unit price, quantity) lines, rounded to the cent."""
    net = sum(price * quantity for price, quantity in lines)
    return round(with_tax(net), 2)
