"""`trust demo`: the paper's clinical example (section 1.3) audited end to end on a local network."""

__all__: list[str] = []
