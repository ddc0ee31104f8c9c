"""Where the pairwise development data lives (/work/shared/data/README.md), and the marker that skips
a test when it is not on the machine."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path("/work/shared/data/pairwise")
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="the pairwise development data is not on this machine")
