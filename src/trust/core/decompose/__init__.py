"""Decomposition of a reasoning trace into an HDAG: the rule-based splitter (`rules`) and the one
driven by a chat model passed in by the caller (`model`)."""

__all__: list[str] = []
