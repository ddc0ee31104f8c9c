"""The model a judging method asks, behind the answer cache, and the endpoint it is found at.

`JudgeChat.ask` sends one question (a system and a user message, as the published methods do) to
any `trust.core.chat.ChatModel` and returns the reply text, reading and writing the answer cache
(`trust.lab.evaluation.judges.cache`). It counts what it asked and what it found cached, so a run
can say how much of it was resumed.

`judge_model` opens the endpoint the settings name, in this order (decision: the judge is an
auditor, so the auditor's endpoint wins; the decomposer's endpoint, `TRUST_LLM__*`, is the one a
user who configured a single model has set):

1. `Settings.auditor_llm` (`TRUST_AUDITOR_LLM__BASE_URL`, `__MODEL`, `__API_KEY`, ...);
2. `Settings.llm` (`TRUST_LLM__BASE_URL`, ...);
3. the embedded SmolLM2-135M server of the home (`trust llm up`), or a private one started in a
   temporary folder and stopped when the run ends. It proves the wiring, not the verdicts.
"""

from __future__ import annotations

import asyncio
import tempfile
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

from trust.core.chat import ChatMessage, ChatModel
from trust.errors import ConfigError
from trust.lab.evaluation.judges.cache import AnswerCache, prompt_key
from trust.settings import Settings

__all__ = ["DEFAULT_MAX_TOKENS", "JUDGE_TEMPERATURE", "JudgeChat", "JudgeEndpoint", "judge_model"]

DEFAULT_MAX_TOKENS = 1024
"""The reply limit of the published Who&When runs (`--max_tokens 1024`); ProcessBench's critic uses it too."""
JUDGE_TEMPERATURE = 0.0
"""Greedy decoding, as ProcessBench's critic runs: one answer per question, so a cached answer is
the answer the endpoint would give again (the Who&When code left the API's default, 1.0)."""


@dataclass
class JudgeChat:
    """One model, asked through the cache; `asked` counts requests sent, `cached` answers reused."""

    model: ChatModel
    cache: AnswerCache | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = JUDGE_TEMPERATURE
    asked: int = 0
    cached: int = 0

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1, got {self.max_tokens}")

    async def ask(self, method: str, system: str | None, user: str) -> str:
        """The model's reply to `user` (after `system`, when given), from the cache when it has it.
        `LlmError` when the endpoint fails; a failure is not cached, so a rerun asks again."""
        messages = ([ChatMessage("system", system)] if system is not None else []) + [ChatMessage("user", user)]
        key = prompt_key(messages, temperature=self.temperature, max_tokens=self.max_tokens)
        if self.cache is not None:
            found = self.cache.get(self.model.model, method, key)
            if found is not None:
                self.cached += 1
                return found
        answer = await self.model.complete(messages, temperature=self.temperature, max_tokens=self.max_tokens)
        self.asked += 1
        if self.cache is not None:
            self.cache.put(self.model.model, method, key, answer)
        return answer


@dataclass(frozen=True, slots=True)
class JudgeEndpoint:
    """The opened model and, for the report, which setting named it."""

    model: ChatModel
    source: str


async def judge_model(settings: Settings, stack: AsyncExitStack) -> JudgeEndpoint:
    """The chat model of the judging methods (see the module docstring), entered on `stack`."""
    from trust.adapters.llm.client import LlmClient

    for source, endpoint in (("TRUST_AUDITOR_LLM", settings.auditor_llm), ("TRUST_LLM", settings.llm)):
        if endpoint.configured:
            client = await stack.enter_async_context(LlmClient(endpoint))
            return JudgeEndpoint(client, f"{source}__BASE_URL ({endpoint.base_url}, model {endpoint.model})")

    from trust.adapters.local.llama import LocalModelServer, ModelServerHome

    server = await asyncio.to_thread(ModelServerHome.from_settings(settings).running)
    if server is None:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="trust-llm-"))
        server = await stack.enter_async_context(await asyncio.to_thread(LocalModelServer.start, Path(folder)))
    # The embedded server answers one request at a time, and a long prompt on a few shared cores
    # takes minutes: TRUST_AUDITOR_LLM__TIMEOUT_SECONDS bounds each request, as for tier 2.
    limits = settings.auditor_llm
    client = await stack.enter_async_context(
        server.client(timeout_seconds=limits.timeout_seconds, max_retries=limits.max_retries)
    )
    return JudgeEndpoint(client, f"the embedded model ({server.model_id} at {server.base_url})")
