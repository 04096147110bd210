def to_celsius(fahrenheit: float) -> float:
    """Degrees Fahrenheit in degrees Celsius, rounded to one decimal."""
    return round((fahrenheit - 32) * 9 / 5, 1)
