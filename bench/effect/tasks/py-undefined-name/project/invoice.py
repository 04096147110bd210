from dataclasses import dataclass


@dataclass
class Line:
    price: float
    quantity: int


def invoice_total(lines: list[Line], discount: float = 0.0) -> float:
    total = sum(line.price * line.quantity for line in lines)
    return round(totl * (1 - discount), 2)
