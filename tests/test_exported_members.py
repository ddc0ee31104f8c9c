"""Every package re-exports exactly its public names through `__all__` (as httpx checks its own)."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import pytest

import trust

PACKAGES = [
    "trust.core.graphs",
    "trust.adapters.chain",
    "trust.lab.evaluation",
    "trust.lab.evaluation.judges",
    "trust.core.privacy",
    "trust.adapters.storage",
    "trust.auditors",
    "trust.auditors.checks",
    "trust.services.worker",
    "trust.api",
    "trust.api.index",
]


def _public_names(module: ModuleType) -> set[str]:
    return {name for name in vars(module) if not name.startswith("_")}


@pytest.mark.parametrize("package", PACKAGES)
def test_all_names_resolve(package: str) -> None:
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    assert names is not None, f"{package} has no __all__"
    assert len(names) == len(set(names)), f"{package}.__all__ lists a name twice"
    missing = [name for name in names if not hasattr(module, name)]
    assert missing == [], f"{package}.__all__ names what it does not define: {missing}"


def test_every_module_declares_all() -> None:
    without = []
    for info in pkgutil.walk_packages(trust.__path__, prefix="trust."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        if not hasattr(module, "__all__"):
            without.append(info.name)
    assert without == [], f"modules without __all__: {without}"


@pytest.mark.parametrize("package", PACKAGES)
def test_all_lists_only_public_names(package: str) -> None:
    module = importlib.import_module(package)
    private = [name for name in module.__all__ if name.startswith("_")]
    assert private == [], f"{package}.__all__ exports private names: {private}"
    assert set(module.__all__) <= _public_names(module)
