"""The chat-completions adapter against a local server speaking the OpenAI wire format over a real socket."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.openai_stub import OpenAiStub, completion, openai_stub
from trust.adapters.llm.client import LlmClient
from trust.core.chat import ChatMessage, ChatModel
from trust.errors import ConfigError, LlmError
from trust.settings import LlmSettings

MESSAGES = [ChatMessage("system", "You are terse."), ChatMessage("user", "Say hi.")]


@pytest.fixture
def stub() -> Iterator[OpenAiStub]:
    with openai_stub() as running:
        yield running


def _client(stub: OpenAiStub, **settings: object) -> LlmClient:
    values = {"base_url": stub.base_url, "model": "test-model", "max_retries": 2} | settings
    return LlmClient(LlmSettings.model_validate(values), backoff_seconds=0.01)


async def test_request_body_and_headers(stub: OpenAiStub) -> None:
    stub.reply('{"ok": true}')
    async with _client(stub, api_key="sk-test-123") as client:
        reply = await client.complete(MESSAGES, temperature=0.3, json_mode=True)
    assert reply == '{"ok": true}'
    (request,) = stub.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-123"
    assert request.headers["content-type"] == "application/json"
    assert request.body == {
        "model": "test-model",
        "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hi."}],
        "temperature": 0.3,
        "response_format": {"type": "json_object"},
    }


async def test_no_key_no_json_mode(stub: OpenAiStub) -> None:
    stub.reply("hi")
    async with _client(stub, base_url=stub.base_url + "/") as client:
        assert await client.complete(MESSAGES, temperature=0.0) == "hi"
    (request,) = stub.requests
    assert "authorization" not in request.headers
    assert "response_format" not in request.body and request.body["temperature"] == 0.0


async def test_retries_on_500_and_429_then_succeeds(stub: OpenAiStub) -> None:
    stub.fail(500)
    stub.fail(429, **{"Retry-After": "0"})
    stub.reply("third time")
    async with _client(stub) as client:
        assert await client.complete(MESSAGES, temperature=0.7) == "third time"
    assert len(stub.requests) == 3
    assert all(r.body == stub.requests[0].body for r in stub.requests)


async def test_gives_up_after_max_retries_with_status_and_body(stub: OpenAiStub) -> None:
    for _ in range(3):
        stub.fail(503, '{"error": {"message": "model overloaded"}}')
    async with _client(stub) as client:
        with pytest.raises(LlmError, match=r"HTTP 503 after 3 attempt\(s\).*model overloaded"):
            await client.complete(MESSAGES, temperature=0.7)
    assert len(stub.requests) == 3


async def test_client_errors_are_not_retried(stub: OpenAiStub) -> None:
    stub.fail(401, '{"error": {"message": "invalid api key"}}')
    async with _client(stub) as client:
        with pytest.raises(LlmError, match="HTTP 401: .*invalid api key"):
            await client.complete(MESSAGES, temperature=0.7)
    assert len(stub.requests) == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>gateway</html>", "not JSON: <html>gateway</html>"),
        (b'{"choices": []}', r"without choices\[0\].message.content"),
        (b'{"object": "error"}', r"without choices\[0\].message.content"),
        (json.dumps({"choices": [{"message": {"content": None}}]}).encode(), "non-text message content"),
    ],
)
async def test_garbage_answers_raise(stub: OpenAiStub, body: bytes, message: str) -> None:
    stub.raw(200, body)
    async with _client(stub) as client:
        with pytest.raises(LlmError, match=message):
            await client.complete(MESSAGES, temperature=0.7)


async def test_timeout_is_retried_then_reported(stub: OpenAiStub) -> None:
    stub.raw(200, completion("late"), delay_seconds=1.0)
    stub.reply("on time")
    async with _client(stub, timeout_seconds=0.2, max_retries=1) as client:
        assert await client.complete(MESSAGES, temperature=0.7) == "on time"
    stub.raw(200, completion("late"), delay_seconds=1.0)
    async with _client(stub, timeout_seconds=0.2, max_retries=0) as client:
        with pytest.raises(LlmError, match=r"failed after 1 attempt\(s\): ReadTimeout"):
            await client.complete(MESSAGES, temperature=0.7)


async def test_unreachable_server() -> None:
    with openai_stub() as stub:
        url = stub.base_url
    client = LlmClient(LlmSettings(base_url=url, max_retries=1), backoff_seconds=0.01)
    async with client:
        with pytest.raises(LlmError, match=r"failed after 2 attempt\(s\): ConnectError"):
            await client.complete(MESSAGES, temperature=0.7)


async def test_closed_client_fails_clearly(stub: OpenAiStub) -> None:
    client = _client(stub)
    async with client:
        pass
    assert client.closed
    with pytest.raises(LlmError, match="LlmClient is closed"):
        await client.complete(MESSAGES, temperature=0.7)
    with pytest.raises(LlmError, match="LlmClient is closed"):
        async with client:
            pass
    assert stub.requests == []


def test_needs_an_endpoint() -> None:
    with pytest.raises(ConfigError, match="TRUST_LLM__BASE_URL"):
        LlmClient(LlmSettings())


def test_retry_after_is_honoured_and_capped() -> None:
    client = LlmClient(LlmSettings(base_url="http://127.0.0.1:9/v1"), backoff_seconds=0.5, max_backoff_seconds=4)
    assert client._delay(0, "2") == 2.0
    assert client._delay(0, "3600") == 4.0
    assert client._delay(3, None) == 4.0
    assert client._delay(1, "Wed, 21 Oct 2015 07:28:00 GMT") == 1.0


async def test_implements_the_chat_model_protocol(stub: OpenAiStub) -> None:
    stub.reply("ok")
    async with _client(stub) as client:
        model: ChatModel = client
        assert await model.complete(MESSAGES, temperature=0.7) == "ok"
