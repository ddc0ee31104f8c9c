"""The tier-3 review page: where the worker's human expert signs in, reads a seat's node and its
parents, and votes with a critique (paper 3.1.1, Tier 3). The worker commits and reveals for them.

Server-rendered HTML (Jinja2, autoescaped: node text is untrusted) with no build step and no
external asset; a few lines of inline script count the deadlines down, and every page works
without it. `create_review_app` builds the FastAPI app over a `ReviewQueue`; `ReviewServer` runs it
with uvicorn as a task of the caller's (the worker's) event loop.

Pages: `GET /sign-in`, `POST /sign-in`, `POST /sign-out`, `GET /queue` (pending seats, nearest
deadline first), `GET|POST /review/{task_id}` (the segment and the vote form), `GET /history`
(past votes with the worker's statuses, newest first), and `GET /healthz` (JSON, no sign-in).

Security, because the page shows decrypted segments and casts staked votes:
- one password (`ReviewSettings.password`), compared in constant time; a burst of wrong passwords
  locks sign-in for a minute;
- a random session token in an HttpOnly, SameSite=Strict cookie (Secure over https), looked up in
  a server-side table and expiring after `ReviewSettings.session_hours`;
- a CSRF token in every POST form: the session's, or before sign-in a double-submit cookie's;
- a signed-out visitor is redirected to the sign-in page and sees no segment;
- a strict Content-Security-Policy (inline style and script only with the response's nonce), no
  framing, no referrer, no caching;
- form bodies are read with a size and field-count limit.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hmac
import math
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl

import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

from trust.adapters.web import page_templates, set_security_headers
from trust.auditors.base import AuditRequest, Outcome, Verdict
from trust.auditors.human import PastVote, RefusalReason, ReviewQueue, ReviewRefused, ReviewTask
from trust.core.graphs.cig import AgentTurn
from trust.core.graphs.hdag import HdagNode
from trust.core.graphs.refinement import ErrorType
from trust.core.times import duration_text as unsigned_duration_text
from trust.core.times import utc_text
from trust.errors import ConfigError
from trust.settings import ReviewSettings

__all__ = [
    "MAX_CRITIQUE_CHARS",
    "MAX_FORM_BYTES",
    "SESSION_COOKIE",
    "ReviewServer",
    "create_review_app",
    "parse_vote",
]

TEMPLATES_DIR = Path(__file__).with_name("templates")

SESSION_COOKIE = "trust_review_session"
"""The cookie holding the session token (HttpOnly, SameSite=Strict)."""
SIGN_IN_COOKIE = "trust_review_sign_in"
"""The double-submit CSRF cookie of the sign-in form (there is no session yet to hold a token)."""

_TOKEN_BYTES = 32
"""Random bytes of a session, CSRF or nonce token: 256 bits, beyond guessing."""
MAX_SESSIONS = 32
"""Sessions kept at once (one expert, a few browsers); signing in beyond it ends the oldest."""
SIGN_IN_FAILURES_ALLOWED = 5
"""Wrong passwords accepted within `SIGN_IN_LOCKOUT_SECONDS` before sign-in pauses."""
SIGN_IN_LOCKOUT_SECONDS = 60.0
"""The window of counted wrong passwords, and the pause once there were too many."""
SIGN_IN_COOKIE_SECONDS = 3_600
"""How long a sign-in form stays valid (its CSRF cookie's lifetime)."""
_SECONDS_PER_HOUR = 3_600.0

MAX_CRITIQUE_CHARS = 4_000
"""The longest critique accepted: a few paragraphs the provider's refinement can act on."""
MAX_FORM_BYTES = 64 * 1024
"""The largest form body read (a critique of MAX_CRITIQUE_CHARS percent-encoded fits easily)."""
MAX_FORM_FIELDS = 16
"""More fields than any of our forms has; a body with more is refused."""
_FORM_TYPE = "application/x-www-form-urlencoded"

SOON_SECONDS = 300.0
"""A deadline nearer than this (5 minutes) shows in red."""

SHUTDOWN_GRACE_SECONDS = 5.0
"""How long a stopping server waits for open requests before cancelling them."""


# ---------------------------------------------------------------------------------------- formatting


def duration_text(seconds: float) -> str:
    """Time left as people read it: "2 h 05 min", "4 min 09 s", "12 s"; "passed" when not positive."""
    return "passed" if seconds <= 0 else unsigned_duration_text(math.ceil(seconds))


def _node_view(node: HdagNode | AgentTurn) -> dict[str, Any]:
    """What the page shows of a node: its facts as (label, value) rows, and its text."""
    if isinstance(node, HdagNode):
        facts = [
            ("level", node.level.label),
            ("domain", node.domain),
            ("difficulty", node.difficulty.value),
            ("stakes", node.stakes),
            ("tier", node.tier.name.lower()),
        ]
        if node.expression:
            facts.append(("expression", node.expression))
        return {"id": node.id, "kind": "HDAG node", "facts": facts, "input": "", "text": node.content}
    facts = [("step", str(node.step)), ("agent", node.agent), ("role", node.role.value)]
    if node.timestamp:
        facts.append(("time", node.timestamp))
    return {"id": node.id, "kind": "agent turn", "facts": facts, "input": node.input, "text": node.output}


def _task_view(task: ReviewTask, now: float) -> dict[str, Any]:
    request: AuditRequest = task.request
    left = task.seconds_left(now)
    return {
        "id": task.id,
        "seat": task.seat,
        "node_id": request.node_id,
        "level": request.level,
        "domain": request.domain,
        "deadline": task.deadline,
        "deadline_text": "none" if task.deadline is None else utc_text(task.deadline),
        "left_text": "no deadline" if left is None else duration_text(left),
        "soon": left is not None and left < SOON_SECONDS,
        "created_text": utc_text(task.created_at),
    }


def _past_view(past: PastVote) -> dict[str, Any]:
    verdict = past.verdict
    return {
        "task": _task_view(past.task, past.closed_at),
        "missed": past.missed,
        "vote": verdict.vote.value.replace("_", " "),
        "score": verdict.score,
        "error_type": None if verdict.error_type is None else verdict.error_type.value,
        "critique": verdict.critique,
        "status": past.status,
        "closed_text": utc_text(past.closed_at),
        "updates": [{"at": utc_text(u.at), "status": u.status, "detail": u.detail} for u in reversed(past.updates)],
    }


# ---------------------------------------------------------------------------------------- the vote form


def parse_vote(form: Mapping[str, str]) -> tuple[Verdict | None, dict[str, str]]:
    """The verdict the vote form describes, or None and a message per wrong field.

    Fields: `vote` ("pass" | "fail"), `score` (optional, 0..1; 1.0 for a pass and 0.0 for a fail
    when empty), `error_type` (an `ErrorType`, required for a fail and empty for a pass), `critique`
    (required, at most MAX_CRITIQUE_CHARS characters).
    """
    errors: dict[str, str] = {}
    vote_text = form.get("vote", "")
    vote = {"pass": Outcome.PASS, "fail": Outcome.FAIL}.get(vote_text)
    if vote is None:
        errors["vote"] = (
            "Choose pass or fail." if not vote_text else f"Unknown vote {vote_text!r}: choose pass or fail."
        )

    score: float | None = None
    score_text = form.get("score", "").strip()
    if score_text:
        try:
            score = float(score_text)
        except ValueError:
            score = None
        if score is None or not math.isfinite(score) or not 0.0 <= score <= 1.0:
            errors["score"] = f"The score is a number from 0 to 1 (got {score_text!r}); leave it empty for the default."
            score = None
    elif vote is not None:
        score = 1.0 if vote is Outcome.PASS else 0.0

    error_type: ErrorType | None = None
    error_text = form.get("error_type", "").strip()
    known = ", ".join(e.value for e in ErrorType)
    if error_text:
        try:
            error_type = ErrorType(error_text)
        except ValueError:
            errors["error_type"] = f"Unknown error type {error_text!r}: choose one of {known}."
    if vote is Outcome.FAIL and not error_text:
        errors["error_type"] = f"A fail vote names its error type: choose one of {known}."
    if vote is Outcome.PASS and error_text:
        errors["error_type"] = "A pass vote names no error type: set it to none, or vote fail."

    critique = form.get("critique", "").replace("\r\n", "\n").strip()
    if not critique:
        errors["critique"] = "Write a critique: what is right or wrong in the node, and why."
    elif len(critique) > MAX_CRITIQUE_CHARS:
        errors["critique"] = f"The critique has {len(critique)} characters; shorten it to at most {MAX_CRITIQUE_CHARS}."

    if errors or vote is None or score is None:
        return None, errors
    return Verdict(vote, score, critique, error_type if vote is Outcome.FAIL else None), {}


class _FormRefused(Exception):
    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


async def _read_form(request: Request) -> dict[str, str]:
    """An url-encoded form body, read with a size and field-count limit; `_FormRefused` otherwise."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != _FORM_TYPE:
        raise _FormRefused(415, f"Expected a form ({_FORM_TYPE}), got {content_type or 'no content type'}.")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_FORM_BYTES:
            raise _FormRefused(413, f"The form is larger than {MAX_FORM_BYTES} bytes; shorten the critique.")
    try:
        pairs = parse_qsl(
            body.decode("ascii"),
            keep_blank_values=True,
            encoding="utf-8",
            errors="strict",
            max_num_fields=MAX_FORM_FIELDS,
        )
    except UnicodeDecodeError:
        raise _FormRefused(400, "The form is not valid UTF-8; send it from the review page.") from None
    except ValueError:
        raise _FormRefused(
            400, f"The form has more than {MAX_FORM_FIELDS} fields; send it from the review page."
        ) from None
    return dict(pairs)


# ---------------------------------------------------------------------------------------- sessions


@dataclass(frozen=True, slots=True)
class _Session:
    """A signed-in browser: its CSRF token and when it expires (time.monotonic seconds)."""

    csrf: str
    expires_at: float


class _Sessions:
    """The server-side session table and the wrong-password counter (in memory: a worker restart
    signs the expert out, which is the safe direction)."""

    def __init__(self, lifetime_seconds: float) -> None:
        self.lifetime_seconds = lifetime_seconds
        self._table: collections.OrderedDict[str, _Session] = collections.OrderedDict()
        self._failures: collections.deque[float] = collections.deque()

    def open(self) -> tuple[str, _Session]:
        token = secrets.token_urlsafe(_TOKEN_BYTES)
        session = _Session(secrets.token_urlsafe(_TOKEN_BYTES), time.monotonic() + self.lifetime_seconds)
        self._table[token] = session
        while len(self._table) > MAX_SESSIONS:
            self._table.popitem(last=False)
        return token, session

    def get(self, token: str | None) -> _Session | None:
        if not token:
            return None
        session = self._table.get(token)
        if session is None:
            return None
        if time.monotonic() >= session.expires_at:
            del self._table[token]
            return None
        return session

    def close(self, token: str | None) -> None:
        if token:
            self._table.pop(token, None)

    def lockout_seconds(self) -> float:
        """Seconds until sign-in opens again; 0 while fewer than the allowed failures are recent."""
        now = time.monotonic()
        while self._failures and now - self._failures[0] > SIGN_IN_LOCKOUT_SECONDS:
            self._failures.popleft()
        if len(self._failures) < SIGN_IN_FAILURES_ALLOWED:
            return 0.0
        return SIGN_IN_LOCKOUT_SECONDS - (now - self._failures[0])

    def failed(self) -> None:
        self._failures.append(time.monotonic())


def _same(given: str, expected: str) -> bool:
    """Constant-time equality of two secrets (an empty one never matches)."""
    return bool(given) and bool(expected) and hmac.compare_digest(given.encode(), expected.encode())


# ---------------------------------------------------------------------------------------- the app


def _set_cookie(response: Response, request: Request, name: str, value: str, max_age: int, path: str) -> None:
    """Every cookie of the page is set here: HttpOnly, SameSite=Strict, and Secure when the page is
    served over https (a Secure cookie never comes back over the plain http of loopback)."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=path,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )


def _security_headers(response: Response, nonce: str) -> None:
    set_security_headers(
        response,
        f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    )


def create_review_app(queue: ReviewQueue, settings: ReviewSettings, *, auditor_address: str) -> FastAPI:
    """The review page of the worker whose wallet is `auditor_address`, over `queue`.

    `settings.password` must be set (the worker generates one when the operator gave none).
    """
    if settings.password is None or not settings.password.get_secret_value():
        raise ConfigError(
            "worker.review.password is unset: the review page needs a sign-in password. Set "
            "TRUST_WORKER__REVIEW__PASSWORD, or let the worker generate one."
        )
    password = settings.password.get_secret_value()
    sessions = _Sessions(settings.session_hours * _SECONDS_PER_HOUR)
    templates = page_templates(TEMPLATES_DIR)
    app = FastAPI(title="TRUST review", docs_url=None, redoc_url=None, openapi_url=None)

    @app.middleware("http")
    async def headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        nonce = secrets.token_urlsafe(_TOKEN_BYTES // 2)
        request.state.nonce = nonce
        response = await call_next(request)
        _security_headers(response, nonce)
        return response

    def render(
        request: Request,
        name: str,
        session: _Session | None,
        status_code: int = 200,
        **context: Any,
    ) -> HTMLResponse:
        now = queue.clock()
        base: dict[str, Any] = {
            "nonce": request.state.nonce,
            "signed_in": session is not None,
            "csrf": "" if session is None else session.csrf,
            "address": auditor_address,
            "now": now,
            "now_text": utc_text(now),
            "pending_count": len(queue.pending()) if session is not None else 0,
        }
        return templates.TemplateResponse(request, name, {**base, **context}, status_code=status_code)

    def message(
        request: Request, session: _Session | None, status_code: int, title: str, text: str, *, link: str, label: str
    ) -> HTMLResponse:
        return render(request, "message.html", session, status_code, title=title, text=text, link=link, label=label)

    def current(request: Request) -> _Session | None:
        return sessions.get(request.cookies.get(SESSION_COOKIE))

    def to_sign_in() -> RedirectResponse:
        return RedirectResponse("/sign-in", status_code=303)

    def sign_in_page(request: Request, status_code: int = 200, error: str = "") -> HTMLResponse:
        token = secrets.token_urlsafe(_TOKEN_BYTES)
        response = render(request, "sign_in.html", None, status_code, sign_in_csrf=token, error=error)
        _set_cookie(response, request, SIGN_IN_COOKIE, token, SIGN_IN_COOKIE_SECONDS, "/sign-in")
        return response

    async def signed_form(request: Request) -> tuple[_Session, dict[str, str]] | Response:
        """The session and form of a POST that changes something, or the answer refusing it: no
        session (the sign-in page), a bad body, a missing or wrong CSRF token. Both checks are made
        here, together, so that no such POST can skip one."""
        session = current(request)
        if session is None:
            return to_sign_in()
        try:
            form = await _read_form(request)
        except _FormRefused as exc:
            return message(request, session, exc.status_code, "Form refused", exc.message, link="/queue", label="queue")
        if not _same(form.get("csrf", ""), session.csrf):
            return message(
                request,
                session,
                403,
                "Form refused",
                "The form's security token is missing or stale (the form came from another page or an old "
                "session). Reload the page and submit it again.",
                link="/queue",
                label="queue",
            )
        return session, form

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok", "auditor": auditor_address, "pending": len(queue.pending())})

    @app.get("/favicon.ico")
    async def favicon() -> Response:
        return Response(status_code=204)

    @app.get("/", response_model=None)
    async def root(request: Request) -> Response:
        return RedirectResponse("/queue" if current(request) else "/sign-in", status_code=303)

    @app.get("/sign-in", response_model=None)
    async def sign_in_form(request: Request) -> Response:
        if current(request) is not None:
            return RedirectResponse("/queue", status_code=303)
        return sign_in_page(request)

    @app.post("/sign-in", response_model=None)
    async def sign_in(request: Request) -> Response:
        try:
            form = await _read_form(request)
        except _FormRefused as exc:
            return sign_in_page(request, exc.status_code, exc.message)
        if not _same(form.get("csrf", ""), request.cookies.get(SIGN_IN_COOKIE, "")):
            return sign_in_page(request, 403, "The sign-in form expired or came from another page; try again.")
        wait = sessions.lockout_seconds()
        if wait > 0:
            return sign_in_page(
                request, 429, f"Too many wrong passwords; sign-in is paused. Try again in {duration_text(wait)}."
            )
        if not _same(form.get("password", ""), password):
            sessions.failed()
            return sign_in_page(request, 401, "Wrong password. The worker printed it when it started.")
        sessions.close(request.cookies.get(SESSION_COOKIE))
        token, _ = sessions.open()
        response = RedirectResponse("/queue", status_code=303)
        _set_cookie(response, request, SESSION_COOKIE, token, math.ceil(sessions.lifetime_seconds), "/")
        response.delete_cookie(SIGN_IN_COOKIE, path="/sign-in")
        return response

    @app.post("/sign-out", response_model=None)
    async def sign_out(request: Request) -> Response:
        signed = await signed_form(request)
        if isinstance(signed, Response):
            return signed
        sessions.close(request.cookies.get(SESSION_COOKIE))
        response = to_sign_in()
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    @app.get("/queue", response_model=None)
    async def queue_page(request: Request) -> Response:
        session = current(request)
        if session is None:
            return to_sign_in()
        now = queue.clock()
        tasks = [_task_view(t, now) for t in queue.pending()]
        return render(request, "queue.html", session, tasks=tasks)

    @app.get("/history", response_model=None)
    async def history_page(request: Request) -> Response:
        session = current(request)
        if session is None:
            return to_sign_in()
        voted = request.query_params.get("voted", "")
        past = [_past_view(p) for p in queue.history()]
        just_voted = next((p for p in past if p["task"]["id"] == voted), None)
        return render(request, "history.html", session, past=past, just_voted=just_voted)

    def review_page(
        request: Request,
        session: _Session,
        task: ReviewTask,
        *,
        status_code: int = 200,
        errors: Mapping[str, str] | None = None,
        values: Mapping[str, str] | None = None,
    ) -> HTMLResponse:
        req = task.request
        return render(
            request,
            "review.html",
            session,
            status_code,
            task=_task_view(task, queue.clock()),
            question=req.audit_question,
            layer=req.layer.value,
            node=_node_view(req.node),
            parents=[_node_view(p) for p in req.parents],
            error_types=[e.value for e in ErrorType],
            errors=errors or {},
            values=values or {},
            max_critique=MAX_CRITIQUE_CHARS,
        )

    def closed_page(request: Request, session: _Session, task_id: str) -> HTMLResponse:
        past = queue.past_vote(task_id)
        if past is None:
            return message(
                request,
                session,
                404,
                "No such review task",
                f"There is no review task {task_id!r}. It may have been withdrawn when the worker stopped; the "
                "worker queues its seats again when it restarts.",
                link="/queue",
                label="queue",
            )
        text = (
            f"The deadline of seat {past.task.seat!r} passed; no vote was committed for it."
            if past.missed
            else f"You voted {past.verdict.vote.value} on seat {past.task.seat!r}; its status: {past.status}."
        )
        return message(request, session, 200, "Seat closed", text, link="/history", label="history")

    @app.get("/review/{task_id}", response_model=None)
    async def review_form(request: Request, task_id: str) -> Response:
        session = current(request)
        if session is None:
            return to_sign_in()
        task = queue.pending_task(task_id)
        if task is None:
            return closed_page(request, session, task_id)
        return review_page(request, session, task)

    @app.post("/review/{task_id}", response_model=None)
    async def vote(request: Request, task_id: str) -> Response:
        signed = await signed_form(request)
        if isinstance(signed, Response):
            return signed
        session, form = signed
        task = queue.pending_task(task_id)
        verdict, errors = parse_vote(form)
        if task is not None and verdict is None:
            return review_page(request, session, task, status_code=422, errors=errors, values=form)
        try:
            if verdict is None:  # the task is gone: say why rather than what was wrong with the form
                raise queue.refusal(task_id)
            queue.decide(task_id, verdict)
        except ReviewRefused as exc:
            status_code = 404 if exc.reason is RefusalReason.UNKNOWN_TASK else 409
            return message(
                request, session, status_code, "Vote refused", f"Vote refused: {exc}.", link="/queue", label="queue"
            )
        return RedirectResponse(f"/history?voted={task_id}", status_code=303)

    return app


# ---------------------------------------------------------------------------------------- the server


class _LoopServer(uvicorn.Server):
    """uvicorn's server without its SIGINT/SIGTERM handlers: the process (the worker) owns its
    signals and stops the review page itself."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class ReviewServer:
    """Serves a review app with uvicorn as a task of the running event loop, for `async with`.

    The socket is bound before uvicorn starts, so a taken port is a `ConfigError` here (uvicorn
    itself would exit the process). `url` is known once entered (port 0 picks a free port).
    """

    def __init__(self, app: FastAPI, host: str, port: int) -> None:
        self._app = app
        self._host = host
        self._port = port
        self._server: _LoopServer | None = None
        self._task: asyncio.Task[None] | None = None
        self.url = ""

    @classmethod
    def from_settings(cls, app: FastAPI, settings: ReviewSettings) -> ReviewServer:
        return cls(app, settings.host, settings.port)

    async def __aenter__(self) -> ReviewServer:
        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        try:
            sock = socket.create_server((self._host, self._port), family=family)
        except OSError as exc:
            raise ConfigError(
                f"the review page cannot listen on {self._host}:{self._port} ({exc.strerror or exc}); choose "
                "another worker.review.host or worker.review.port (0 picks a free port)"
            ) from exc
        config = uvicorn.Config(
            self._app,
            lifespan="off",
            http="h11",
            ws="none",
            log_config=None,
            access_log=False,
            proxy_headers=False,
            server_header=False,
            timeout_graceful_shutdown=int(SHUTDOWN_GRACE_SECONDS),
        )
        self._server = _LoopServer(config)
        host, port = sock.getsockname()[:2]
        self.url = f"http://[{host}]:{port}" if family == socket.AF_INET6 else f"http://{host}:{port}"
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name=f"review page {self.url}")
        while not self._server.started:
            if self._task.done():
                sock.close()
                self._task.result()  # raises what stopped uvicorn
                raise ConfigError(f"the review page on {self.url} stopped while starting; see the log above")
            await asyncio.sleep(0.01)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        await self._task
