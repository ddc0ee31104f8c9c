"""The adapter to an OpenAI-compatible chat-completions endpoint (vLLM, llama.cpp server, OpenAI, ...).

`LlmClient` implements `trust.core.chat.ChatModel`: `POST {base_url}/chat/completions`
with the model, the messages, the temperature and, when asked, `response_format: {"type":
"json_object"}` (`json_mode`) or a JSON schema the reply must follow (`schema`), and `max_tokens`
when given; the key, when set, goes in an `Authorization: Bearer` header.

Endpoints spell a schema-constrained reply in two ways, so `structured_output` picks one
(`StructuredOutput`):

- `json_schema` (the default): OpenAI's structured outputs, `{"type": "json_schema", "json_schema":
  {"name": <the schema's "title", else "response">, "schema": ..., "strict": true}}`, which OpenAI,
  vLLM and Ollama accept;
- `json_object`: `{"type": "json_object", "schema": ...}`, the only form the llama.cpp server of
  llama-cpp-python (0.3.x) takes: it turns the schema into a grammar that bounds every token (its
  pydantic request model rejects `"type": "json_schema"` with HTTP 422);
- `prompt`: no `response_format` at all, for endpoints that refuse the field; the caller's prompt
  must then describe the answer, and the caller must check it (it always should).
 It retries a 429 or a
5xx answer, a timeout or a dropped connection up to `max_retries` times, waiting
`backoff_seconds * 2**attempt` (or the server's `Retry-After`, capped at `max_backoff_seconds`).
Everything that goes wrong reaches the caller as `LlmError`, naming the URL, the status and an
excerpt of the body.

A client of a server that may move (the embedded judge, restarted on another port by `trust llm
up`) takes `locate`: a function asked for the current base URL before every attempt, which raises
`LlmError` saying why when there is no server; that error ends the call, and a connection that
fails on the last attempt is reported with it (the server crashed, and how) instead of a bare
`ConnectError`.

Use it as an async context manager; once closed, it refuses calls with a clear error instead of
reopening (httpx's client state rule). Built from `trust.settings.LlmSettings`; it reads no
environment of its own (`trust_env=False`).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any

import httpx

from trust.adapters.http import OwnedHttpClient
from trust.core.backoff import backoff_delay
from trust.core.chat import ChatMessage
from trust.errors import ConfigError, LlmError, excerpt
from trust.settings import LlmSettings

__all__ = ["LlmClient", "StructuredOutput"]

# Rate limits and server-side failures pass; 501 and 505 say the request itself will never work.
_RETRY_STATUSES = frozenset({429}) | (frozenset(range(500, 600)) - {501, 505})
# OpenAI's rule for `json_schema.name`; a schema whose title breaks it is sent as "response".
_SCHEMA_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_DEFAULT_SCHEMA_NAME = "response"


class StructuredOutput(StrEnum):
    """How an endpoint is asked for a reply that follows a JSON schema (see the module docstring)."""

    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    PROMPT = "prompt"


class LlmClient(OwnedHttpClient):
    """An async chat-completions client for one endpoint and model (see the module docstring)."""

    def __init__(
        self,
        settings: LlmSettings,
        *,
        backoff_seconds: float = 0.5,
        max_backoff_seconds: float = 30.0,
        structured_output: StructuredOutput | None = None,
        locate: Callable[[], str] | None = None,
    ) -> None:
        if settings.base_url is None:
            raise ConfigError(
                "no LLM endpoint configured: set TRUST_LLM__BASE_URL (for example http://127.0.0.1:8000/v1)"
            )
        if backoff_seconds < 0 or max_backoff_seconds < 0:
            raise ConfigError(f"backoff must be non-negative, got {backoff_seconds} and {max_backoff_seconds}")
        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self._locate = locate
        self._backoff = backoff_seconds
        self._max_backoff = max_backoff_seconds
        self.structured_output = StructuredOutput(structured_output or settings.structured_output)
        headers = {"Accept": "application/json"}
        if settings.api_key:
            headers["Authorization"] = f"Bearer {settings.api_key}"
        self._http = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(settings.timeout_seconds), trust_env=False
        )
        self._closed = False

    async def __aenter__(self) -> LlmClient:
        if self._closed:
            raise LlmError("LlmClient is closed: create a new client")
        return self

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self.settings.model

    @property
    def endpoint(self) -> str:
        """The chat-completions URL requests go to."""
        return self.url

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        json_mode: bool = False,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """The assistant's reply text; `LlmError` when the endpoint fails or answers unusably.

        `schema` (a JSON schema) asks for a reply that follows it, in the client's
        `structured_output` form, and takes precedence over `json_mode`. The reply is returned as
        text either way: the endpoint's promise is not proof, so callers validate it. `max_tokens`
        bounds the reply's length in tokens (a runaway answer is cut, not waited for).
        """
        if self._closed:
            raise LlmError("LlmClient is closed: create a new client to call the model again")
        if max_tokens is not None and max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1, got {max_tokens}")
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": temperature,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        response_format = self._response_format(json_mode, schema)
        if response_format is not None:
            body["response_format"] = response_format
        try:
            response = await self._post(body)
        except LlmError as exc:
            if response_format is None or "response_format" not in str(exc):
                raise
            raise LlmError(
                f"{exc}; the endpoint refused response_format {response_format['type']!r}: "
                "LlmClient(structured_output=...) sends it another way (json_object for llama-cpp-python's "
                "server, prompt for none)"
            ) from exc
        return self._reply_text(response)

    def _response_format(self, json_mode: bool, schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
        style = self.structured_output
        if style is StructuredOutput.PROMPT:
            return None
        if schema is None:
            return {"type": "json_object"} if json_mode else None
        if style is StructuredOutput.JSON_OBJECT:
            return {"type": "json_object", "schema": dict(schema)}
        title = schema.get("title")
        name = title if isinstance(title, str) and _SCHEMA_NAME.fullmatch(title) else _DEFAULT_SCHEMA_NAME
        return {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema), "strict": True}}

    async def _post(self, body: dict[str, Any]) -> httpx.Response:
        attempts = self.settings.max_retries + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            if self._locate is not None:
                self.url = self._locate().rstrip("/") + "/chat/completions"
            try:
                response = await self._http.post(self.url, json=body)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                if last:
                    if self._locate is not None and not isinstance(exc, httpx.TimeoutException):
                        self._locate()  # raises, saying why, when the server is gone
                    raise LlmError(
                        f"chat endpoint {self.url} failed after {attempts} attempt(s): {type(exc).__name__} {exc}; "
                        "check that the server is up and TRUST_LLM__TIMEOUT_SECONDS is long enough"
                    ) from exc
                await asyncio.sleep(self._delay(attempt, None))
                continue
            except httpx.HTTPError as exc:
                raise LlmError(f"chat endpoint {self.url}: {type(exc).__name__} {exc}") from exc
            if response.status_code in _RETRY_STATUSES and not last:
                await asyncio.sleep(self._delay(attempt, response.headers.get("Retry-After")))
                continue
            if response.status_code >= 400:
                tried = f" after {attempts} attempt(s)" if response.status_code in _RETRY_STATUSES else ""
                raise LlmError(
                    f"chat endpoint {self.url} answered HTTP {response.status_code}{tried}: {excerpt(response.text)}"
                )
            return response
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self._max_backoff)
            except ValueError:
                pass  # an HTTP date: fall back to our own schedule
        return backoff_delay(self._backoff, attempt, self._max_backoff)

    def _reply_text(self, response: httpx.Response) -> str:
        try:
            document = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise LlmError(
                f"chat endpoint {self.url} answered HTTP {response.status_code} with a body that is not JSON: "
                f"{excerpt(response.text)}"
            ) from exc
        try:
            content = document["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LlmError(
                f"chat endpoint {self.url} answered without choices[0].message.content: {excerpt(response.text)}"
            ) from None
        if not isinstance(content, str):
            raise LlmError(f"chat endpoint {self.url} answered a non-text message content: {excerpt(response.text)}")
        return content
