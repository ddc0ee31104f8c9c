"""The one chat-model protocol: what the core and the auditors ask of a language model.

It lives in the core because the core's own LLM step (the HDAG decomposer,
`trust.core.decompose.model`) takes a model as an argument and the core may import nothing above
it; the adapter `trust.adapters.llm.client.LlmClient` implements it (the network stays there), and
the tier-2 auditor (`trust.auditors.llm.LlmAuditor`) and the regenerator of the refinement loop
(`trust.adapters.llm.regenerate.LlmRegenerator`) use it. One protocol, so a model that decomposes
can also judge, and a test endpoint serves both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["ChatMessage", "ChatModel"]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a chat-completions conversation; `role` is "system", "user" or "assistant"."""

    role: str
    content: str


@runtime_checkable
class ChatModel(Protocol):
    """An OpenAI-compatible chat model: the reply text to `messages`.

    `json_mode` asks the endpoint for a JSON object reply; `schema` (a JSON schema) for a reply that
    follows it, and takes precedence over `json_mode`; `max_tokens` bounds the reply's length. The
    reply is text either way: the endpoint's promise is not proof, so callers validate it. `model`
    and `endpoint` name the model and where it is served, for error messages. Failures are raised
    as `trust.errors.LlmError`.
    """

    @property
    def model(self) -> str: ...

    @property
    def endpoint(self) -> str: ...

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        json_mode: bool = False,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """The assistant's reply to `messages`."""
        ...
