"""Who&When-shaped logs and ProcessBench items written for these tests, and a chat model on the stub."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.openai_stub import OpenAiStub, openai_stub
from trust.adapters.llm.client import LlmClient
from trust.settings import LlmSettings


def who_when_log(
    path: Path, turns: list[tuple[str, str]], *, agent: str, step: int, ground_truth: str | None = "7"
) -> Path:
    """Writes a log in Who&When's algorithm-generated shape (name + role + content per turn)."""
    document: dict[str, Any] = {
        "question": "How many apples are there in the two baskets?",
        "history": [{"name": name, "role": "user", "content": content} for name, content in turns],
        "mistake_agent": agent,
        "mistake_step": str(step),
        "mistake_reason": "written for a test",
        "system_prompt": {name: f"You are {name}." for name, _ in turns},
    }
    if ground_truth is not None:
        document["ground_truth"] = ground_truth
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.fixture
def stub() -> Iterator[OpenAiStub]:
    with openai_stub() as running:
        yield running


@asynccontextmanager
async def stub_client(stub: OpenAiStub, *, max_retries: int = 0) -> AsyncIterator[LlmClient]:
    async with LlmClient(
        LlmSettings(base_url=stub.base_url, model="judge-under-test", max_retries=max_retries, timeout_seconds=10)
    ) as client:
        yield client
