"""Benchmarks that print figures (gas per seat, graph scaling, refinement savings)."""

__all__: list[str] = []
