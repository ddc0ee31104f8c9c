"""The one chat-model protocol of the project: what a decomposer, an auditor or a refiner asks of a
model, and the message it sends.

It lives in the core, on its own, because pure code (LLM-driven decomposition, the auditors' prompts)
is written against it while the only implementation that does I/O is an adapter
(`trust.adapters.llm.client.LlmClient`, an OpenAI-compatible endpoint). A test passes any object
with the same `complete` method.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["ChatMessage", "ChatModel"]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a chat-completions conversation; `role` is "system", "user" or "assistant"."""

    role: str
    content: str


class ChatModel(Protocol):
    """An OpenAI-compatible chat model: the reply text to `messages`.

    `json_mode` asks the endpoint for a JSON object reply (`response_format`). Failures are raised as
    `trust.errors.LlmError`.
    """

    async def complete(self, messages: Sequence[ChatMessage], *, temperature: float, json_mode: bool = False) -> str:
        """The assistant's reply to `messages`."""
        ...
