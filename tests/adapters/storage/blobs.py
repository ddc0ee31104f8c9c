"""Test blobs for the storage tests."""

from __future__ import annotations

import hashlib


def blob(size: int, seed: bytes = b"trust") -> bytes:
    """Deterministic, incompressible bytes: sha256 of the seed and a counter, concatenated."""
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(seed + counter.to_bytes(8, "big")).digest()
        counter += 1
    return bytes(out[:size])
