"""The explorer: server-rendered pages, and the same data as JSON, of what the chain holds.

`explorer_router(index)` serves, under `/explorer/`:

| page | JSON | shows |
|---|---|---|
| `/explorer/` (also `/explorer/sessions`) | `/explorer/api/sessions` | sessions, newest first, paginated |
| `/explorer/sessions/{id}` | `/explorer/api/sessions/{id}` | segments, trace verdict, fee split, claims |
| `/explorer/sessions/{id}/segments/{n}` | `.../segments/{n}` | every round: committee, votes, deadlines, outcome |
| `/explorer/auditors` | `/explorer/api/auditors` | auditors sortable by stake, reputation or earnings |
| `/explorer/auditors/{address}` | `/explorer/api/auditors/{address}` | an auditor's figures, seats and history |

plus `/explorer/api/status` (chain, head block, counts). Every request first refreshes the index
(`ChainIndex.refresh`: only blocks mined since the last one). Unknown ids answer 404, malformed ones
422 (an HTML page for the pages, JSON for the API), an unreadable chain 503.

The pages are Jinja2 templates, autoescaped everywhere (metadata URIs, CIDs and governance reasons
are strings anyone can put on chain), with no script and no external asset: one inline stylesheet
allowed by a per-response nonce in a strict Content-Security-Policy. Amounts in JSON are decimal
strings (wei and token base units exceed the 2^53 that JSON readers hold exactly); hashes and
digests are 0x-prefixed hex.

`create_explorer_app(rpc_url, deployment)` runs the explorer on its own: its lifespan connects a
`ChainClient`, binds the `Protocol`, builds the index and mounts the router, and closes the client
on shutdown.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, TypeVar

import jinja2
from fastapi import APIRouter, FastAPI, Query, Request, Response
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, ConfigDict, Field

from trust.api.index import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    AuditorSort,
    ChainIndex,
    RoundDetail,
    SegmentDetail,
    UnknownEntity,
    parse_address,
)
from trust.chain.client import ChainClient
from trust.chain.compiler import Artifact, compile_protocol
from trust.chain.deployment import Deployment
from trust.chain.protocol import Protocol
from trust.errors import ChainError
from trust.toolchain import Toolchain
from trust.web import set_security_headers

__all__ = [
    "MAX_ID",
    "AuditorOut",
    "AuditorPageOut",
    "AuditorSummaryOut",
    "SegmentOut",
    "SessionOut",
    "SessionPageOut",
    "StatusOut",
    "create_explorer_app",
    "explorer_router",
]

TEMPLATES_DIR = Path(__file__).with_name("templates") / "explorer"
MAX_ID = 2**64 - 1
"""The largest session or segment id accepted (the contracts count sessions from 1 and cap
segments at 4,096; anything larger is malformed rather than unknown)."""
_ID_DIGITS = 20
"""Decimal digits of MAX_ID."""
_NONCE_BYTES = 16
"""Random bytes of a response's CSP nonce (128 bits)."""
TOKEN_DECIMALS = 18
"""Decimals of ETH (wei) and of the staking token (its base units)."""
WAD = 10**18
BRIEF_DECIMALS = 6
"""Decimals shown in the lists' amount columns (micro-ETH; the pages of one entity show all 18)."""
_ADDRESS_PATTERN = r"^0x[0-9a-fA-F]{40}$"
_SHORT_HEX_CHARS = 6
"""Hex digits kept at each end of a shortened hash or address."""

M = TypeVar("M", bound=BaseModel)


# ---------------------------------------------------------------------------------------- JSON models


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TxOut(_Out):
    tx_hash: str = Field(description="0x-prefixed transaction hash")
    block_number: int
    timestamp: int = Field(description="the block's time, unix seconds")


class VoteEventOut(_Out):
    kind: str = Field(description='"commit" or "reveal"')
    auditor: str
    seat_index: int
    vote: bool | None = Field(description="the revealed vote (true: pass); null for a commit")
    at: TxOut


class DrawAttemptOut(_Out):
    attempt: int
    at: TxOut


class RandomnessRefreshOut(_Out):
    randomness_block: int
    at: TxOut


class EnvelopeOut(_Out):
    cid: str
    publications: int
    at: TxOut


class SeatOut(_Out):
    index: int
    auditor: str
    weight_units: str = Field(description="stake at the randomness block, token base units (decimal string)")
    committed: bool
    revealed: bool
    vote: bool | None
    outcome: str = Field(description="pending, aligned, misaligned, silent or released")
    forfeited_units: str
    claimed: bool
    committed_at: TxOut | None
    revealed_at: TxOut | None
    envelope: EnvelopeOut | None


class RoundOut(_Out):
    number: int
    tier: int
    committee_size: int | None
    randomness_block: int | None
    randomness_refreshes: list[RandomnessRefreshOut]
    unavailable: list[DrawAttemptOut]
    drawn: TxOut | None
    scheduled_commit_deadline: int | None = Field(description="as CommitteeDrawn announced it, unix seconds")
    commit_deadline: int | None = Field(description="effective, unix seconds")
    reveal_deadline: int | None = Field(description="effective, unix seconds")
    closed_early: bool = Field(description="the commit window closed once every seat had committed")
    commits_complete: TxOut | None = Field(description="the commit that filled the committee")
    seats: list[SeatOut]
    events: list[VoteEventOut]
    closed: TxOut | None
    result: str | None = Field(description="passed, failed, escalated or undetermined; null while open")
    pass_weight_units: str
    fail_weight_units: str
    total_weight_units: str


class SegmentSummaryOut(_Out):
    session_id: int
    segment_id: int
    tier: int
    current_tier: int
    weight: int
    critical: bool
    contradiction: bool
    content_digest: str
    cid: str = Field(description="CIDv1 of a raw block with the registered digest (segments up to 256 KiB)")
    state: str
    rounds: int
    registered: TxOut
    finalized: TxOut | None


class SegmentOut(_Out):
    segment: SegmentSummaryOut
    rounds: list[RoundOut]
    tau_bps: int
    max_rounds: int


class SessionSummaryOut(_Out):
    session_id: int
    provider: str
    trace_root: str
    fee_wei: str
    segment_count: int
    registered_count: int
    state: str
    valid: bool | None
    created: TxOut
    passed: int
    failed: int
    undetermined: int
    pending: int
    trace_finalized: TxOut | None


class FeeSplitOut(_Out):
    auditors_wei: str
    per_seat_wei: str
    treasury_wei: str
    stakers_wei: str
    insurance_wei: str
    at: TxOut


class RewardClaimOut(_Out):
    session_id: int
    auditor: str
    seats: int
    amount_wei: str
    at: TxOut


class SessionOut(_Out):
    session: SessionSummaryOut
    segments: list[SegmentSummaryOut]
    randomness_block: int
    params_version: int
    pass_weight: int
    total_weight: int
    beta_bps: int
    tau_bps: int
    critical_failed: int
    contradictions_confirmed: int
    share_bps: list[int] = Field(description="auditors, treasury, stakers, insurance")
    fee_split: FeeSplitOut | None
    claims: list[RewardClaimOut]
    aligned_seats: int
    refund_wei: str | None


class SessionPageOut(_Out):
    items: list[SessionSummaryOut]
    total: int
    page: int
    per_page: int


class AuditorSummaryOut(_Out):
    address: str
    tier: int
    metadata_uri: str
    registered: TxOut
    is_registered: bool
    available: bool
    credentialed: bool
    stake_units: str
    locked_units: str
    unbonding_units: str
    reputation_wad: str
    seats: int
    open_seats: int
    aligned: int
    misaligned: int
    silent: int
    released: int
    forfeited_units: str
    rewards_claimed_wei: str
    rewards_claimable_wei: str
    staker_claimed_wei: str
    staker_pending_wei: str
    earnings_wei: str


class AuditorSeatOut(_Out):
    session_id: int
    segment_id: int
    round: int
    seat_index: int
    tier: int
    drawn: TxOut
    committed: bool
    revealed: bool
    vote: bool | None
    outcome: str
    forfeited_units: str


class ForfeitOut(_Out):
    amount_units: str
    reason: str
    at: TxOut


class ReputationChangeOut(_Out):
    reputation_wad: str
    at: TxOut


class StakerClaimOut(_Out):
    amount_wei: str
    at: TxOut


class AuditorOut(_Out):
    auditor: AuditorSummaryOut
    seats: list[AuditorSeatOut]
    forfeits: list[ForfeitOut]
    claims: list[RewardClaimOut]
    staker_claims: list[StakerClaimOut]
    reputation_history: list[ReputationChangeOut]


class AuditorPageOut(_Out):
    items: list[AuditorSummaryOut]
    total: int
    page: int
    per_page: int
    sort: str
    descending: bool


class StatusOut(_Out):
    chain_id: int
    head_block: int
    sessions: int
    auditors: int
    contracts: dict[str, str]


_AMOUNT_SUFFIXES = ("_wei", "_units", "_wad")


def _plain(value: Any, name: str = "") -> Any:
    """A dataclass tree as JSON-ready values: amounts (names ending in _wei, _units, _wad) as
    decimal strings, bytes as 0x hex, enums as their values, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: _plain(getattr(value, f.name), f.name) for f in dataclasses.fields(value)}
        if hasattr(value, "earnings_wei"):
            out["earnings_wei"] = str(value.earnings_wei)
        return out
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and name.endswith(_AMOUNT_SUFFIXES):
        return str(value)
    return value


def _out(model: type[M], value: Any) -> M:
    return model.model_validate(_plain(value))


# ---------------------------------------------------------------------------------------- formatting


def utc_text(unix_seconds: int) -> str:
    """A unix time as people read it: "2025-06-01 14:03:22 UTC"."""
    return datetime.fromtimestamp(unix_seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def amount_text(base_units: int, symbol: str) -> str:
    """An amount of 18 decimals, exact, without trailing zeros: "0.00042 ETH", "2000 TRUST"."""
    value = Decimal(base_units).scaleb(-TOKEN_DECIMALS)
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text} {symbol}"


def brief_amount_text(base_units: int, symbol: str) -> str:
    """An amount for a list's narrow column: at most BRIEF_DECIMALS decimals, cut with "…" when
    more follow (the exact value goes in the cell's title)."""
    exact = amount_text(base_units, symbol)
    number = exact.removesuffix(f" {symbol}")
    whole, _, decimals = number.partition(".")
    if len(decimals) <= BRIEF_DECIMALS:
        return exact
    return f"{whole}.{decimals[:BRIEF_DECIMALS]}… {symbol}"


def wad_text(wad: int) -> str:
    """A WAD ratio (1e18 = 1) with four decimals: reputation 0.5500."""
    return f"{Decimal(wad) / WAD:.4f}"


def bps_text(bps: int) -> str:
    """Basis points as a percentage: 6600 -> "66%", 6550 -> "65.5%"."""
    text = format(Decimal(bps) / 100, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}%"


def ratio_text(part: int, whole: int) -> str:
    """part / whole as a percentage with one decimal; "–" for an empty whole."""
    if whole == 0:
        return "–"
    return f"{Decimal(part) * 100 / whole:.1f}%"


def duration_text(seconds: int) -> str:
    """A signed offset: "+0 s", "+14 s", "+2 min 03 s", "-5 s", "+1 h 02 min"."""
    sign = "-" if seconds < 0 else "+"
    whole = abs(seconds)
    hours, rest = divmod(whole, 3_600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{sign}{hours} h {minutes:02d} min"
    if minutes:
        return f"{sign}{minutes} min {secs:02d} s"
    return f"{sign}{secs} s"


def short_hex(text: str) -> str:
    """0x1234ab…cdef56 for a long hash or address (the full value goes in the title)."""
    if len(text) <= 2 + 2 * _SHORT_HEX_CHARS + 1:
        return text
    return f"{text[: 2 + _SHORT_HEX_CHARS]}…{text[-_SHORT_HEX_CHARS:]}"


def _timeline(round_: RoundDetail) -> list[dict[str, Any]]:
    """A round's events and deadlines in time order, each with its offset from the draw."""
    if round_.drawn is None:
        return []
    base = round_.drawn.timestamp
    rows: list[dict[str, Any]] = [
        {"at": base, "label": "committee drawn", "kind": "draw", "auditor": None, "seat": None, "tx": round_.drawn}
    ]
    for event in round_.events:
        label = "commit" if event.kind == "commit" else ("reveal: pass" if event.vote else "reveal: fail")
        rows.append(
            {
                "at": event.at.timestamp,
                "label": label,
                "kind": event.kind if event.kind == "commit" else ("pass" if event.vote else "fail"),
                "auditor": event.auditor,
                "seat": event.seat_index,
                "tx": event.at,
            }
        )
    for at, label in ((round_.commit_deadline, "commit deadline"), (round_.reveal_deadline, "reveal deadline")):
        if at is not None:
            rows.append({"at": at, "label": label, "kind": "deadline", "auditor": None, "seat": None, "tx": None})
    if round_.closed is not None and round_.result is not None:
        label = "escalated" if round_.result.value == "escalated" else f"finalized: {round_.result.value}"
        rows.append(
            {"at": round_.closed.timestamp, "label": label, "kind": "close", "auditor": None, "seat": None,
             "tx": round_.closed}
        )  # fmt: skip
    order = {"draw": 0, "commit": 1, "pass": 2, "fail": 2, "deadline": 3, "close": 4}
    rows.sort(key=lambda row: (row["at"], order[row["kind"]]))
    for row in rows:
        row["offset"] = duration_text(row["at"] - base)
    return rows


def _templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        eth=lambda wei: amount_text(int(wei), "ETH"),
        tokens=lambda units: amount_text(int(units), "TRUST"),
        eth_brief=lambda wei: brief_amount_text(int(wei), "ETH"),
        tokens_brief=lambda units: brief_amount_text(int(units), "TRUST"),
        wad=wad_text,
        bps=bps_text,
        utc=utc_text,
        short=short_hex,
        hex=lambda b: "0x" + bytes(b).hex(),
    )
    env.globals.update(ratio=ratio_text, duration=duration_text)
    return Jinja2Templates(env=env)


def _security_headers(response: Response, nonce: str | None) -> None:
    style = f"'nonce-{nonce}'" if nonce else "'none'"
    set_security_headers(
        response,
        f"default-src 'none'; style-src {style}; img-src 'self'; form-action 'self'; frame-ancestors 'none'; "
        "base-uri 'none'",
    )


# ---------------------------------------------------------------------------------------- parsing


class _Malformed(ValueError):
    """A path or query value that is not of the expected form (422)."""


def _parse_id(text: str, what: str, minimum: int) -> int:
    if not re.fullmatch(rf"[0-9]{{1,{_ID_DIGITS}}}", text):
        raise _Malformed(f"{what} {text!r} is not a number: use decimal digits, e.g. /explorer/sessions/1")
    value = int(text)
    if not minimum <= value <= MAX_ID:
        raise _Malformed(f"{what} {value} is out of range: ids run from {minimum} to {MAX_ID}")
    return value


def _parse_int_query(request: Request, name: str, default: int, minimum: int, maximum: int) -> int:
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    if not re.fullmatch(r"[0-9]{1,9}", text) or not minimum <= int(text) <= maximum:
        raise _Malformed(f"query parameter {name}={text!r} must be a whole number from {minimum} to {maximum}")
    return int(text)


def _parse_sort(request: Request) -> tuple[AuditorSort, bool]:
    sort_text = request.query_params.get("sort") or AuditorSort.STAKE.value
    order_text = request.query_params.get("order") or "desc"
    try:
        sort = AuditorSort(sort_text)
    except ValueError:
        choices = ", ".join(s.value for s in AuditorSort)
        raise _Malformed(f"sort={sort_text!r} is not an order of the auditors list: use {choices}") from None
    if order_text not in ("asc", "desc"):
        raise _Malformed(f"order={order_text!r} must be asc or desc")
    return sort, order_text == "desc"


def _parse_auditor(text: str) -> str:
    try:
        return parse_address(text)
    except ValueError as exc:
        raise _Malformed(str(exc)) from None


# ---------------------------------------------------------------------------------------- the router

SessionIdParam = Annotated[int, PathParam(ge=1, le=MAX_ID, description="session id (from 1)")]
SegmentIdParam = Annotated[int, PathParam(ge=0, le=MAX_ID, description="segment index in its session (from 0)")]
AddressParam = Annotated[str, PathParam(pattern=_ADDRESS_PATTERN, description="the auditor's address")]
PageParam = Annotated[int, Query(ge=1, le=10**9, description="page number, from 1")]
PerPageParam = Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE, description="rows per page")]


def explorer_router(index: ChainIndex) -> APIRouter:
    """The explorer's pages and JSON API over `index` (see the module docstring for the routes)."""
    router = APIRouter()
    templates = _templates()
    chain_id = index.protocol.chain.chain_id

    def url(request: Request, name: str, **params: Any) -> str:
        root = str(request.scope.get("root_path", "")).rstrip("/")
        return root + str(request.app.url_path_for(name, **{k: str(v) for k, v in params.items()}))

    def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        nonce = secrets.token_urlsafe(_NONCE_BYTES)
        base = {
            "nonce": nonce,
            "url": lambda route, **params: url(request, route, **params),
            "chain_id": chain_id,
            "head_block": index.head_block,
        }
        response = templates.TemplateResponse(request, name, {**base, **context}, status_code=status_code)
        _security_headers(response, nonce)
        return response

    def message(request: Request, status_code: int, title: str, text: str) -> HTMLResponse:
        return render(request, "message.html", status_code, title=title, text=text)

    async def page(request: Request, build: Callable[[], Awaitable[HTMLResponse]]) -> HTMLResponse:
        """Refreshes the index, then builds the page; errors become their pages."""
        try:
            await index.refresh()
            return await build()
        except _Malformed as exc:
            return message(request, 422, "Malformed request", str(exc))
        except UnknownEntity as exc:
            return message(request, 404, f"No such {exc.kind}", str(exc))
        except ChainError as exc:
            return message(
                request, 503, "Chain unavailable", f"The explorer could not read the chain: {exc}. Try again shortly."
            )

    async def api(build: Callable[[], Awaitable[BaseModel]]) -> Response:
        try:
            await index.refresh()
            model = await build()
        except UnknownEntity as exc:
            return _json_error(404, str(exc))
        except ValueError as exc:
            return _json_error(422, str(exc))
        except ChainError as exc:
            return _json_error(503, f"the explorer could not read the chain: {exc}")
        response = JSONResponse(model.model_dump(mode="json"))
        _security_headers(response, None)
        return response

    def html_page(path: str, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """A page route: HTML, left out of the OpenAPI schema (which describes the JSON)."""
        return router.get(path, response_class=HTMLResponse, name=name, include_in_schema=False)

    # -- pages

    @router.get("/explorer", include_in_schema=False)
    async def explorer_root(request: Request) -> RedirectResponse:
        return RedirectResponse(url(request, "explorer_sessions_page"), status_code=307)

    @html_page("/explorer/", "explorer_home")
    async def explorer_home(request: Request) -> HTMLResponse:
        return await sessions_page(request)

    @html_page("/explorer/sessions", "explorer_sessions_page")
    async def sessions_page(request: Request) -> HTMLResponse:
        async def build() -> HTMLResponse:
            number = _parse_int_query(request, "page", 1, 1, 10**9)
            listing = await index.sessions(page=number, per_page=DEFAULT_PAGE_SIZE)
            pages = max(1, -(-listing.total // listing.per_page))
            if number > pages:
                raise _Malformed(f"page {number} is past the last page ({pages}) of {listing.total} sessions")
            return render(request, "sessions.html", listing=listing, pages=pages)

        return await page(request, build)

    @html_page("/explorer/sessions/{session_id}", "explorer_session_page")
    async def session_page(request: Request, session_id: str) -> HTMLResponse:
        async def build() -> HTMLResponse:
            detail = await index.session(_parse_id(session_id, "session id", 1))
            return render(request, "session.html", detail=detail, s=detail.session)

        return await page(request, build)

    @html_page("/explorer/sessions/{session_id}/segments/{segment_id}", "explorer_segment_page")
    async def segment_page(request: Request, session_id: str, segment_id: str) -> HTMLResponse:
        async def build() -> HTMLResponse:
            sid = _parse_id(session_id, "session id", 1)
            gid = _parse_id(segment_id, "segment id", 0)
            detail: SegmentDetail = await index.segment(sid, gid)
            timelines = {r.number: _timeline(r) for r in detail.rounds}
            return render(request, "segment.html", detail=detail, g=detail.segment, timelines=timelines)

        return await page(request, build)

    @html_page("/explorer/auditors", "explorer_auditors_page")
    async def auditors_page(request: Request) -> HTMLResponse:
        async def build() -> HTMLResponse:
            sort, descending = _parse_sort(request)
            number = _parse_int_query(request, "page", 1, 1, 10**9)
            listing = await index.auditors(sort=sort, descending=descending, page=number, per_page=MAX_PAGE_SIZE)
            pages = max(1, -(-listing.total // listing.per_page))
            if number > pages:
                raise _Malformed(f"page {number} is past the last page ({pages}) of {listing.total} auditors")
            return render(request, "auditors.html", listing=listing, pages=pages, sorts=[s.value for s in AuditorSort])

        return await page(request, build)

    @html_page("/explorer/auditors/{address}", "explorer_auditor_page")
    async def auditor_page(request: Request, address: str) -> HTMLResponse:
        async def build() -> HTMLResponse:
            detail = await index.auditor(_parse_auditor(address))
            return render(request, "auditor.html", detail=detail, a=detail.auditor)

        return await page(request, build)

    # -- JSON

    @router.get("/explorer/api/status", response_model=StatusOut, name="explorer_api_status")
    async def api_status() -> Response:
        async def build() -> StatusOut:
            return StatusOut(
                chain_id=chain_id,
                head_block=index.head_block,
                sessions=index.session_count,
                auditors=index.auditor_count,
                contracts=dict(index.protocol.deployment.contracts),
            )

        return await api(build)

    @router.get("/explorer/api/sessions", response_model=SessionPageOut, name="explorer_api_sessions")
    async def api_sessions(page: PageParam = 1, per_page: PerPageParam = DEFAULT_PAGE_SIZE) -> Response:
        async def build() -> SessionPageOut:
            return _out(SessionPageOut, await index.sessions(page=page, per_page=per_page))

        return await api(build)

    @router.get(
        "/explorer/api/sessions/{session_id}",
        response_model=SessionOut,
        name="explorer_api_session",
        responses={404: {"description": "no such session"}},
    )
    async def api_session(session_id: SessionIdParam) -> Response:
        async def build() -> SessionOut:
            return _out(SessionOut, await index.session(session_id))

        return await api(build)

    @router.get(
        "/explorer/api/sessions/{session_id}/segments/{segment_id}",
        response_model=SegmentOut,
        name="explorer_api_segment",
        responses={404: {"description": "no such session or segment"}},
    )
    async def api_segment(session_id: SessionIdParam, segment_id: SegmentIdParam) -> Response:
        async def build() -> SegmentOut:
            return _out(SegmentOut, await index.segment(session_id, segment_id))

        return await api(build)

    @router.get("/explorer/api/auditors", response_model=AuditorPageOut, name="explorer_api_auditors")
    async def api_auditors(
        sort: AuditorSort = AuditorSort.STAKE,
        order: Annotated[str, Query(pattern="^(asc|desc)$")] = "desc",
        page: PageParam = 1,
        per_page: PerPageParam = DEFAULT_PAGE_SIZE,
    ) -> Response:
        async def build() -> AuditorPageOut:
            listing = await index.auditors(sort=sort, descending=order == "desc", page=page, per_page=per_page)
            return _out(AuditorPageOut, listing)

        return await api(build)

    @router.get(
        "/explorer/api/auditors/{address}",
        response_model=AuditorOut,
        name="explorer_api_auditor",
        responses={404: {"description": "no auditor registered at this address"}},
    )
    async def api_auditor(address: AddressParam) -> Response:
        async def build() -> AuditorOut:
            return _out(AuditorOut, await index.auditor(address))

        return await api(build)

    return router


def _json_error(status_code: int, detail: str) -> JSONResponse:
    response = JSONResponse({"detail": detail}, status_code=status_code)
    _security_headers(response, None)
    return response


# ---------------------------------------------------------------------------------------- standalone


def create_explorer_app(
    rpc_url: str,
    deployment: Deployment,
    *,
    artifacts: dict[str, Artifact] | None = None,
    block_range: int | None = None,
    confirmations: int = 0,
) -> FastAPI:
    """The explorer as an app of its own, over the deployment at `rpc_url`.

    The lifespan connects the chain client (a wrong chain id is a `ChainError` at startup), builds
    the index and mounts the router, and closes the client on shutdown. `artifacts` are the compiled
    contracts' ABIs (compiled from `contracts/` through the toolchain when None).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        abis = artifacts if artifacts is not None else compile_protocol(Toolchain.discover())
        async with ChainClient(rpc_url, abis) as chain:
            protocol = Protocol.bind(chain, deployment)
            options: dict[str, Any] = {"confirmations": confirmations}
            if block_range is not None:
                options["block_range"] = block_range
            index = ChainIndex(protocol, **options)
            app.include_router(explorer_router(index))
            app.state.explorer_index = index
            yield

    return FastAPI(title="TRUST explorer", lifespan=lifespan)
