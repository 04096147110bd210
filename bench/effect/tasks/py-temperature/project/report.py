from units import to_celsius


def describe(city: str, fahrenheit: float) -> str:
    """'Oslo: 0.0 °C'."""
    return f"{city}: {to_celsius(fahrenheit)} °F"
