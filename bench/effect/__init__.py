"""bench/effect: the effectiveness benchmark with real models (see bench/effect.md)."""
