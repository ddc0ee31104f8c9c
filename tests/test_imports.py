"""Each module imports on its own, first, in a fresh interpreter: no import cycle hides behind the
order in which the rest of the suite happens to import things. (`trust eval whowhen` once failed
with "partially initialized module 'trust.core.decompose.model'": the decomposer imported the graphs
package, whose audit module imported the decomposer back for its chat protocol.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

FIRST_IMPORTS = [
    "trust.core.decompose.model",
    "trust.core.graphs.localize",
    "trust.core.graphs.logs",
    "trust.lab.evaluation",
    "trust.lab.evaluation.processbench",
    "trust.auditors.graph",
    "trust.services.refine",
]


@pytest.mark.parametrize("module", FIRST_IMPORTS)
def test_the_module_imports_first(module: str) -> None:
    run = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr
