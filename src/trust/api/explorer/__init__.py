"""The explorer: read-only pages and JSON over the chain index (`pages`), with its charts, graph
drawings, shapes and number formatting."""

__all__: list[str] = []
