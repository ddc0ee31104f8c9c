"""Files only their owner may read: key shares, passwords, process records.

One helper for everywhere the project writes such a file (the beacon's key shares, the devnet's
review-page passwords, the beacon's process record), so that none of them is ever world-readable,
not even for the instant between creating and chmod-ing it, and none is left half-written by a crash.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_private"]


def write_private(path: Path, text: str) -> None:
    """Writes `text` to `path`, readable and writable by its owner only (0600 from the first byte),
    atomically: a reader sees the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
