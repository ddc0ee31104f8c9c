"""The one maths engine: the no-`eval` arithmetic parser with exact fractions and abuse limits
(`expressions`) and what is built on it."""

__all__: list[str] = []
