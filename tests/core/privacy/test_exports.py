"""`trust.core.privacy` re-exports exactly its public names."""

from __future__ import annotations

import trust.core.privacy


def test_all_names_resolve_and_are_public() -> None:
    names = trust.core.privacy.__all__
    assert len(names) == len(set(names))
    assert [name for name in names if not hasattr(trust.core.privacy, name)] == []
    assert [name for name in names if name.startswith("_")] == []
    assert set(names) <= {name for name in vars(trust.core.privacy) if not name.startswith("_")}
