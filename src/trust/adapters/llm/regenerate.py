"""A regenerator of the refinement loop (`trust.core.graphs.repair.Regenerate`) over an
OpenAI-compatible endpoint (`trust.adapters.llm.client.LlmClient`).

A failed node is re-prompted with its feedback (`Feedback.prompt()`), a descendant with
`rerun_prompt`, at the round's temperature, under `REGENERATION_SYSTEM_PROMPT`. The loop is
synchronous (the SDK runs it in a worker thread), so each regeneration runs the async client on its
own event loop (`asyncio.run`) and closes it there: a client belongs to the loop that opened it, and
a regeneration is seconds of model time against milliseconds of connecting. Do not call it from
inside a running event loop (run the loop in a thread there, `asyncio.to_thread`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from trust.adapters.llm.client import LlmClient
from trust.core.chat import ChatMessage
from trust.core.graphs.repair import (
    REGENERATION_SYSTEM_PROMPT,
    Regenerated,
    RepairRequest,
    approximate_tokens,
    rerun_prompt,
)
from trust.errors import LlmError
from trust.settings import LlmSettings

__all__ = ["LlmRegenerator"]


class LlmRegenerator:
    """A `Regenerate` over `settings`' endpoint; see the module docstring.

    The endpoint reports no token usage through the client, so tokens are `approximate_tokens` of
    the system prompt, the prompt and the reply. A context manager: once closed, it refuses calls.
    """

    def __init__(
        self,
        settings: LlmSettings,
        *,
        system_prompt: str = REGENERATION_SYSTEM_PROMPT,
        token_count: Callable[[str], int] = approximate_tokens,
    ) -> None:
        self._settings = settings
        self._system = system_prompt
        self._tokens = token_count
        self._closed = False

    def __enter__(self) -> LlmRegenerator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True

    async def _complete(self, prompt: str, temperature: float) -> str:
        messages = [ChatMessage("system", self._system), ChatMessage("user", prompt)]
        async with LlmClient(self._settings) as client:
            return await client.complete(messages, temperature=temperature)

    def __call__(self, request: RepairRequest) -> Regenerated:
        if self._closed:
            raise LlmError("LlmRegenerator is closed: create a new one")
        prompt = request.feedback.prompt() if request.feedback is not None else rerun_prompt(request)
        text = asyncio.run(self._complete(prompt, request.temperature)).strip()
        if not text:
            raise LlmError(f"the model answered an empty output when regenerating node {request.node!r}")
        return Regenerated(text, tokens=self._tokens(self._system) + self._tokens(prompt) + self._tokens(text))
