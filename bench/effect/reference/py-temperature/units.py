def to_celsius(fahrenheit: float) -> float:
    """Degrees Fahrenheit in degrees Celsius, rounded to one decimal."""
    return round((fahrenheit - 32) * 5 / 9, 1)
