"""A local OpenAI-compatible chat-completions server for tests: real HTTP over a real socket.

It answers `POST /v1/chat/completions` from a script of answers (status, body, headers, optional
delay) and records every request it received (path, headers, JSON body). When the script runs out it
answers 500, so a test that sends more requests than it expected sees a failure, not a hang.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_seconds: float = 0.0


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any


def completion(content: str, model: str = "stub-model") -> bytes:
    """A chat-completions response body, as the OpenAI API writes it, carrying `content`."""
    return json.dumps(
        {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()


class OpenAiStub:
    def __init__(self) -> None:
        self.answers: deque[Answer] = deque()
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._answer: Callable[[str, str], str] | None = None
        self.base_url = ""

    def reply(self, content: str) -> None:
        self.answers.append(Answer(200, completion(content), {"Content-Type": "application/json"}))

    def fail(self, status: int, body: str = '{"error": {"message": "stub failure"}}', **headers: str) -> None:
        self.answers.append(Answer(status, body.encode(), {"Content-Type": "application/json", **headers}))

    def raw(self, status: int, body: bytes, delay_seconds: float = 0.0) -> None:
        self.answers.append(Answer(status, body, {"Content-Type": "application/json"}, delay_seconds))

    def answer_with(self, answer: Callable[[str, str], str]) -> None:
        """Reply with `answer(system, user)` of each request instead of from the script, whatever
        order requests arrive in (an audit asks several at once)."""
        self._answer = answer

    def _next(self, request: Request) -> Answer:
        with self._lock:
            self.requests.append(request)
            if self._answer is not None:
                messages = request.body["messages"]
                content = self._answer(messages[0]["content"], messages[-1]["content"])
                return Answer(200, completion(content), {"Content-Type": "application/json"})
            return self.answers.popleft() if self.answers else Answer(500, b'{"error": "no scripted answer left"}')


def environment_without_models(**extra: str) -> dict[str, str]:
    """This process's environment with no model endpoint in it (`TRUST_LLM__*` for decomposition,
    `TRUST_AUDITOR_LLM__*` for the tier-2 auditor), plus `extra`: a `trust` child process then runs
    tier 1 only, or asks exactly the stub that `extra` points it at, whatever the caller's shell has
    set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRUST_LLM", "TRUST_AUDITOR_LLM"))}
    return env | extra


@contextmanager
def openai_stub() -> Iterator[OpenAiStub]:
    """A running stub on an ephemeral port of 127.0.0.1; `stub.base_url` ends in /v1."""
    stub = OpenAiStub()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            try:
                body: Any = json.loads(raw)
            except json.JSONDecodeError:
                body = raw
            if self.path != "/v1/chat/completions":
                answer = Answer(404, b'{"error": "unknown path"}')
                stub.requests.append(Request(self.path, dict(self.headers), body))
            else:
                answer = stub._next(Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            if answer.delay_seconds:
                time.sleep(answer.delay_seconds)
            try:
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    stub.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
