"""A value with its container types and field names spelled out, so that two results compare equal
only when web3 and the chain client give them the same shape (a named tuple is not a list)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def shape(value: Any) -> Any:
    if isinstance(value, Mapping):
        return ("map", type(value).__name__, {k: shape(v) for k, v in value.items()})
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return ("record", value._fields, [shape(v) for v in value])
    if isinstance(value, tuple | list):
        return (type(value).__name__, [shape(v) for v in value])
    return (type(value).__name__, value)
