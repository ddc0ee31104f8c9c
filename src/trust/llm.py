"""The adapter to an OpenAI-compatible chat-completions endpoint (vLLM, llama.cpp server, OpenAI, ...).

`LlmClient` implements `trust.graphs.llm_decompose.ChatModel`: `POST {base_url}/chat/completions`
with the model, the messages, the temperature and, when asked, `response_format: {"type":
"json_object"}`; the key, when set, goes in an `Authorization: Bearer` header. It retries a 429 or a
5xx answer, a timeout or a dropped connection up to `max_retries` times, waiting
`backoff_seconds * 2**attempt` (or the server's `Retry-After`, capped at `max_backoff_seconds`).
Everything that goes wrong reaches the caller as `LlmError`, naming the URL, the status and an
excerpt of the body.

Use it as an async context manager; once closed, it refuses calls with a clear error instead of
reopening (httpx's client state rule). Built from `trust.settings.LlmSettings`; it reads no
environment of its own (`trust_env=False`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import httpx

from trust.errors import ConfigError, LlmError
from trust.graphs.llm_decompose import ChatMessage
from trust.settings import LlmSettings

__all__ = ["LlmClient"]

# Rate limits and server-side failures pass; 501 and 505 say the request itself will never work.
_RETRY_STATUSES = frozenset({429}) | (frozenset(range(500, 600)) - {501, 505})
_EXCERPT_CHARS = 300


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT_CHARS else f"{flat[:_EXCERPT_CHARS]}..."


class LlmClient:
    """An async chat-completions client for one endpoint and model (see the module docstring)."""

    def __init__(
        self,
        settings: LlmSettings,
        *,
        backoff_seconds: float = 0.5,
        max_backoff_seconds: float = 30.0,
    ) -> None:
        if settings.base_url is None:
            raise ConfigError(
                "no LLM endpoint configured: set TRUST_LLM__BASE_URL (for example http://127.0.0.1:8000/v1)"
            )
        if backoff_seconds < 0 or max_backoff_seconds < 0:
            raise ConfigError(f"backoff must be non-negative, got {backoff_seconds} and {max_backoff_seconds}")
        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self._backoff = backoff_seconds
        self._max_backoff = max_backoff_seconds
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

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self._http.aclose()

    @property
    def closed(self) -> bool:
        return self._closed

    async def complete(self, messages: Sequence[ChatMessage], *, temperature: float, json_mode: bool = False) -> str:
        """The assistant's reply text; `LlmError` when the endpoint fails or answers unusably."""
        if self._closed:
            raise LlmError("LlmClient is closed: create a new client to call the model again")
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": temperature,
        }
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        response = await self._post(body)
        return self._reply_text(response)

    async def _post(self, body: dict[str, Any]) -> httpx.Response:
        attempts = self.settings.max_retries + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = await self._http.post(self.url, json=body)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                if last:
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
                    f"chat endpoint {self.url} answered HTTP {response.status_code}{tried}: {_excerpt(response.text)}"
                )
            return response
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self._max_backoff)
            except ValueError:
                pass  # an HTTP date: fall back to our own schedule
        return float(min(self._backoff * 2**attempt, self._max_backoff))

    def _reply_text(self, response: httpx.Response) -> str:
        try:
            document = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise LlmError(
                f"chat endpoint {self.url} answered HTTP {response.status_code} with a body that is not JSON: "
                f"{_excerpt(response.text)}"
            ) from exc
        try:
            content = document["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LlmError(
                f"chat endpoint {self.url} answered without choices[0].message.content: {_excerpt(response.text)}"
            ) from None
        if not isinstance(content, str):
            raise LlmError(f"chat endpoint {self.url} answered a non-text message content: {_excerpt(response.text)}")
        return content
