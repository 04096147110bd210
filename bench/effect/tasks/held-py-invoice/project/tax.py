VAT_PERCENT = 20


def with_tax(net: float) -> float:
    """The gross amount: `net` plus VAT at VAT_PERCENT percent."""
    return net * (1 + VAT_PERCENT)
