"""How warm the next request samples, when the loop asks for it: a small model at temperature 0
that answered with nothing usable answers the same way again, word for word, however it is
corrected (seen in the effectiveness benchmark: the same file echoed back three times). After
such a reply the loop sets `MIN_TEMPERATURE` for its next request; the model client sends the
higher of it and the configured temperature. A context variable, so it reaches the client
through every wrapper (text tools, routes) and only for that task's request."""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["MIN_TEMPERATURE", "temperature_for"]

MIN_TEMPERATURE: ContextVar[float | None] = ContextVar("min_temperature", default=None)


def temperature_for(configured: float | None) -> float | None:
    """The temperature to send: the configured one, raised to the loop's floor when one is
    set (None: the endpoint's default)."""
    floor = MIN_TEMPERATURE.get()
    if floor is None:
        return configured
    return max(floor, configured or 0.0)
