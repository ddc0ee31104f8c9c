"""The explorer: server-rendered pages, and the same data as JSON, of what the chain holds.

`explorer_router(index)` serves, under `/explorer/`:

| page | JSON | shows |
|---|---|---|
| `/explorer/` (also `/explorer/sessions`) | `/explorer/api/sessions` | sessions, newest first, paginated |
| `/explorer/sessions/{id}` | `/explorer/api/sessions/{id}` | segments, trace verdict, fee split, claims |
| `/explorer/sessions/{id}/segments/{n}` | `.../segments/{n}` | every round: committee, votes, deadlines, outcome |
| `/explorer/auditors` | `/explorer/api/auditors` | auditors sortable by stake, reputation or earnings |
| `/explorer/auditors/{address}` | `/explorer/api/auditors/{address}` | an auditor's figures, seats and history |
| (drawn on the session page) | `/explorer/api/sessions/{id}/graph` | the session's graph as drawn |

plus `/explorer/api/status` (chain, head block, counts). The session page draws the session's HDAG
or CIG as SVG (`trust.api.explorer.session_graph`; the shape comes from a `ShapeSource`, since the chain
holds no edges) and the auditor page charts stake, reputation and earnings over time
(`trust.api.explorer.charts`). Every request first refreshes the index
(`ChainIndex.refresh`: only blocks mined since the last one). Unknown ids answer 404, malformed ones
422 (an HTML page for the pages, JSON for the API), an unreadable chain 503.

The pages are Jinja2 templates, autoescaped everywhere (metadata URIs, CIDs and governance reasons
are strings anyone can put on chain), with no script and no external asset: one inline stylesheet
allowed by a per-response nonce in a strict Content-Security-Policy; the drawings are inline SVG with
presentation attributes only. Amounts in JSON are decimal strings (wei and token base units exceed
the 2^53 that JSON readers hold exactly), on the pages exact decimals (`trust.api.explorer.formatting`);
hashes and digests are 0x-prefixed hex.

`create_explorer_app(rpc_url, deployment)` runs the explorer on its own: its lifespan connects a
`ChainClient`, binds the `Protocol`, builds the index and mounts the router, and closes the client
on shutdown.

Seats' audit reports (their critiques) are sealed to the session's provider: the segment page says
where each lies and that only the provider can read it. With the opt-in provider view
(`trust.api.explorer.provider_view`: the provider's wallet and an IPFS node), and for that provider's
sessions only, the segment page opens them and shows each seat's critique; critiques discuss the
trace's content, so a public explorer never runs with it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import markupsafe
from fastapi import APIRouter, FastAPI, Query, Request, Response
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, ConfigDict, Field

from trust.adapters.chain.compiler import Artifact
from trust.adapters.chain.deployment import Deployment
from trust.adapters.chain.protocol import Protocol, open_chain
from trust.adapters.web import page_templates, set_security_headers
from trust.api.explorer.charts import ChartPoint, ChartSeries, line_chart_svg
from trust.api.explorer.formatting import (
    amount_text,
    bps_text,
    brief_amount_text,
    decimal_text,
    duration_text,
    ratio_text,
    short_hex,
    utc_text,
    wad_text,
)
from trust.api.explorer.provider_view import ProviderView, ReportReader, SeatReading
from trust.api.explorer.session_graph import SessionGraph, node_place, session_graph
from trust.api.explorer.shapes import GraphShape, ShapeSource, mismatch
from trust.api.index import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    AuditorDetail,
    AuditorHistoryPoint,
    AuditorSort,
    ChainIndex,
    RoundDetail,
    SegmentDetail,
    SessionDetail,
    UnknownEntity,
    parse_address,
)
from trust.errors import ChainError, TrustError

__all__ = [
    "MAX_ID",
    "AuditorOut",
    "AuditorPageOut",
    "AuditorSummaryOut",
    "GraphOut",
    "SegmentOut",
    "SessionOut",
    "SessionPageOut",
    "StatusOut",
    "create_explorer_app",
    "explorer_router",
]

TEMPLATES_DIR = Path(__file__).with_name("templates")
MAX_ID = 2**64 - 1
"""The largest session or segment id accepted (the contracts count sessions from 1 and cap
segments at 4,096; anything larger is malformed rather than unknown)."""
_ID_DIGITS = 20
"""Decimal digits of MAX_ID."""
_NONCE_BYTES = 16
"""Random bytes of a response's CSP nonce (128 bits)."""
_ADDRESS_PATTERN = r"^0x[0-9a-fA-F]{40}$"

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
    votes: int = Field(
        description="the committee draws the member won (drawn with replacement): the seat's votes, and how many "
        "times it locked P, earns R when aligned and forfeits P"
    )
    committed: bool
    revealed: bool
    vote: bool | None
    outcome: str = Field(description="pending, aligned, misaligned, silent or released")
    forfeited_units: str
    claimed: bool
    committed_at: TxOut | None
    revealed_at: TxOut | None
    envelope: EnvelopeOut | None
    report: EnvelopeOut | None = Field(
        description="the auditor's published audit report (sealed to the provider's reply key): CID and time"
    )


class RoundOut(_Out):
    number: int
    tier: int
    committee_size: int | None = Field(description="the round's committee draws: its votes in all")
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
    pass_votes: int
    fail_votes: int
    total_votes: int


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
    units: int = Field(description="the claimed seats' votes in all: R each")
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
    aligned_seats: int = Field(
        description="aligned votes of decided segments' final rounds (the chain's alignedSeats): a seat counts the "
        "committee draws its member won, and the auditors' pool pays R per vote"
    )
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


class AuditorHistoryPointOut(_Out):
    at: TxOut
    event: str
    stake_units: str
    unbonding_units: str
    reputation_wad: str
    seat_rewards_wei: str = Field(description="seat rewards earned so far (cumulative wei)")
    staker_share_wei: str = Field(description="stakers' share accrued so far, claimed or not (cumulative wei)")
    claimed_wei: str = Field(description="seat rewards and stakers' share taken so far (cumulative wei)")
    earnings_wei: str = Field(description="seat_rewards_wei + staker_share_wei")


class AuditorOut(_Out):
    auditor: AuditorSummaryOut
    seats: list[AuditorSeatOut]
    forfeits: list[ForfeitOut]
    claims: list[RewardClaimOut]
    staker_claims: list[StakerClaimOut]
    reputation_history: list[ReputationChangeOut]
    history: list[AuditorHistoryPointOut] = Field(description="the figures after each event, oldest first")
    head_time: int = Field(description="the newest indexed block's time, unix seconds")


class GraphNodeOut(_Out):
    key: str = Field(description='"s<segment id>" for a segment, "c<leaf>" for a context-only node')
    label: str
    sublabel: str
    fill: str = Field(description="passed, failed, undetermined, voting, awaiting draw or not audited")
    mark: str | None = Field(description="root cause, negligent or cascade (Table 1); null otherwise")
    href: str | None


class GraphEdgeOut(_Out):
    source: str
    target: str
    type: str


class GraphOut(_Out):
    session_id: int
    drawn_from: str = Field(description='"shape" (the graph\'s skeleton was known) or "chain" (segments alone)')
    note: str
    nodes: list[GraphNodeOut]
    edges: list[GraphEdgeOut]


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


_STAKE_COLOUR, _UNBONDING_COLOUR = "#2446a6", "#8a5a00"
_REPUTATION_COLOUR = "#6b3fa0"
_EARNED_COLOUR, _CLAIMED_COLOUR = "#17663a", "#5b6577"


def _series(
    label: str,
    history: tuple[AuditorHistoryPoint, ...],
    value: Callable[[AuditorHistoryPoint], int],
    text: Callable[[int], str],
    colour: str,
    dash: str = "",
) -> ChartSeries:
    """One chart line: a point at each transaction that changed the value (and the first one), with
    a tooltip naming the event, its block and time, and the exact value. Of several events in one
    transaction only the last state counts (registering stakes in the same transaction: the stake
    was never 0 in any block)."""
    points: list[ChartPoint] = []
    txs: list[str] = []  # the transaction of each point
    for point in history:
        y = value(point)
        note = f"{label} {text(y)} after {point.event}, block {point.at.block_number}, {utc_text(point.at.timestamp)}"
        if txs and txs[-1] == point.at.tx_hash:
            if points[-1].y != y:
                points[-1] = ChartPoint(point.at.timestamp, y, note)
        elif not points or points[-1].y != y:
            points.append(ChartPoint(point.at.timestamp, y, note))
            txs.append(point.at.tx_hash)
    deduplicated = [p for i, p in enumerate(points) if i == 0 or p.y != points[i - 1].y]
    return ChartSeries(label, tuple(deduplicated), colour, dash)


def auditor_charts(detail: AuditorDetail) -> dict[str, str]:
    """The auditor page's three charts (SVG text): stake (and unbonding), reputation, cumulative
    earnings (and what was claimed), each over block time up to the newest indexed block."""
    history, end = detail.history, detail.head_time or None

    def tokens(units: int) -> str:
        return amount_text(units, "TRUST")

    def eth(wei: int) -> str:
        return amount_text(wei, "ETH")

    stake = [_series("stake", history, lambda p: p.stake_units, tokens, _STAKE_COLOUR)]
    if any(p.unbonding_units for p in history):  # a line along 0 would only squash the stake's axis
        stake.append(_series("unbonding", history, lambda p: p.unbonding_units, tokens, _UNBONDING_COLOUR, "6 4"))
    reputation = [_series("reputation", history, lambda p: p.reputation_wad, decimal_text, _REPUTATION_COLOUR)]
    earnings = [
        _series("earned", history, lambda p: p.earnings_wei, eth, _EARNED_COLOUR),
        _series("claimed", history, lambda p: p.claimed_wei, eth, _CLAIMED_COLOUR, "6 4"),
    ]
    charts = (
        ("stake", "Stake (TRUST)", stake, False),
        ("reputation", "Reputation", reputation, False),
        ("earnings", "Earnings, cumulative (ETH)", earnings, True),
    )
    return {
        name: line_chart_svg(
            title=title,
            series=series,
            value_text=decimal_text,
            x_end=end,
            element_id=f"chart-{name}",
            include_zero=include_zero,
        )
        for name, title, series, include_zero in charts
    }


def _templates() -> Jinja2Templates:
    templates = page_templates(TEMPLATES_DIR)
    env = templates.env
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
    return templates


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


_NO_SOURCE = (
    "The chain holds no graph, only the segments: this explorer has no source of graph shapes, so the segments "
    "are drawn alone, in segment order."
)
_NO_SHAPE = (
    "The chain holds no graph, only the segments, and no shape of this trace is known here (only its provider "
    "has it): the segments are drawn alone, in segment order."
)
_FROM_SHAPE = (
    "Nodes, levels and edges from the provider's record of this trace, checked against the session on chain "
    "(the trace root and every segment's digest, tier, weight and flag); colours and marks from the verdicts on "
    "chain. The edges are the provider's word: the trace root commits to the segments, not to the edges."
)


@dataclass(frozen=True, slots=True)
class _Reports:
    """What a segment page says about its seats' reports: `mode` is "sealed" (no provider view),
    "other provider" (a provider view of `viewer`, a session of `provider`) or "provider" (opened:
    `readings` by (round, seat index))."""

    mode: str
    provider: str
    viewer: str | None
    readings: dict[tuple[int, int], SeatReading]


def explorer_router(
    index: ChainIndex, *, shapes: ShapeSource | None = None, reports: ReportReader | None = None
) -> APIRouter:
    """The explorer's pages and JSON API over `index` (see the module docstring for the routes).

    `shapes` gives a session's graph skeleton when it is known (`trust.api.explorer.shapes`); without it, or
    when it knows none, a session's graph is drawn from the chain alone: its segments, no edges.
    `reports` is the provider view (`trust.api.explorer.provider_view`): with it, the segment pages of its
    provider's sessions show the seats' critiques; without it, no page shows any.
    """
    router = APIRouter()
    templates = _templates()
    chain_id = index.protocol.chain.chain_id

    async def shape_for(detail: SessionDetail) -> tuple[GraphShape | None, str]:
        """The session's shape when known and matching the chain, and a sentence saying where it
        came from or why there is none."""
        if shapes is None:
            return None, _NO_SOURCE
        try:
            shape = await asyncio.to_thread(shapes.shape, chain_id, detail.session.trace_root)
        except TrustError as exc:
            return None, f"The provider's graph of this trace could not be read ({exc}); the segments are drawn alone."
        if shape is None:
            return None, _NO_SHAPE
        problem = mismatch(shape, detail.segments)
        if problem is not None:
            return None, (
                f"The provider's graph of this trace does not match the chain: {problem}. The segments are drawn alone."
            )
        return shape, _FROM_SHAPE

    async def reports_for(session: SessionDetail, detail: SegmentDetail) -> _Reports:
        provider = session.session.provider
        if reports is None:
            return _Reports("sealed", provider, None, {})
        if not reports.reads(session.session):
            return _Reports("other provider", provider, reports.address, {})
        return _Reports("provider", provider, reports.address, await reports.read(session.session, detail))

    async def graph_for(request: Request, detail: SessionDetail) -> SessionGraph:
        shape, note = await shape_for(detail)
        sid = detail.session.session_id
        return session_graph(
            detail.segments,
            shape,
            note=note,
            href=lambda g: url(request, "explorer_segment_page", session_id=sid, segment_id=g),
            title=f"The graph of session {sid}: one node per segment, coloured by its verdict",
        )

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
            graph = await graph_for(request, detail)
            # Markup: graph_svg built these and escaped every text in them.
            return render(
                request,
                "session.html",
                detail=detail,
                s=detail.session,
                graph=graph,
                graph_svg=markupsafe.Markup(graph.svg) if graph.svg else None,
                legend_svg=markupsafe.Markup(graph.legend),
            )

        return await page(request, build)

    @html_page("/explorer/sessions/{session_id}/segments/{segment_id}", "explorer_segment_page")
    async def segment_page(request: Request, session_id: str, segment_id: str) -> HTMLResponse:
        async def build() -> HTMLResponse:
            sid = _parse_id(session_id, "session id", 1)
            gid = _parse_id(segment_id, "segment id", 0)
            detail: SegmentDetail = await index.segment(sid, gid)
            timelines = {r.number: _timeline(r) for r in detail.rounds}
            session = await index.session(sid)
            shape, _ = await shape_for(session)
            place = None
            if shape is not None:
                place = node_place(
                    session.segments,
                    shape,
                    gid,
                    lambda g: url(request, "explorer_segment_page", session_id=sid, segment_id=g),
                )
            sealed = await reports_for(session, detail)
            return render(
                request,
                "segment.html",
                detail=detail,
                g=detail.segment,
                timelines=timelines,
                place=place,
                reports=sealed,
            )

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
            # Markup: the chart module built these and escaped every text in them.
            charts = {name: markupsafe.Markup(svg) for name, svg in auditor_charts(detail).items()}
            return render(request, "auditor.html", detail=detail, a=detail.auditor, charts=charts)

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

    @router.get(
        "/explorer/api/sessions/{session_id}/graph",
        response_model=GraphOut,
        name="explorer_api_session_graph",
        responses={404: {"description": "no such session"}},
    )
    async def api_session_graph(request: Request, session_id: SessionIdParam) -> Response:
        async def build() -> GraphOut:
            graph = await graph_for(request, await index.session(session_id))
            nodes = [
                GraphNodeOut(
                    key=n.key,
                    label=n.label,
                    sublabel=n.sublabel,
                    fill=n.fill.value,
                    mark=None if n.mark is None else n.mark.value,
                    href=n.href,
                )
                for n in graph.nodes
            ]
            edges = [GraphEdgeOut(source=e.source, target=e.target, type=e.style) for e in graph.edges]
            return GraphOut(
                session_id=session_id, drawn_from=graph.drawn_from, note=graph.note, nodes=nodes, edges=edges
            )

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
    shapes: ShapeSource | None = None,
    provider_view: ProviderView | None = None,
) -> FastAPI:
    """The explorer as an app of its own, over the deployment at `rpc_url`.

    The lifespan connects the chain client (a wrong chain id is a `ChainError` at startup), builds
    the index and mounts the router, and closes the client on shutdown. `artifacts` are the compiled
    contracts' ABIs (compiled from `contracts/` through the toolchain when None). `shapes` is where
    session graphs' shapes come from (`trust.api.explorer.shapes.JournalShapes` for a provider's own
    explorer); without it sessions are drawn from the chain alone. `provider_view` turns the provider
    view on (`trust.api.explorer.provider_view`): the lifespan opens a client of its IPFS node and the segment
    pages of its provider's sessions show the critiques. Only for an explorer the provider alone
    reaches.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            chain = await stack.enter_async_context(open_chain(rpc_url, artifacts=artifacts))
            protocol = Protocol.bind(chain, deployment)
            options: dict[str, Any] = {"confirmations": confirmations}
            if block_range is not None:
                options["block_range"] = block_range
            index = ChainIndex(protocol, **options)
            reader = None
            if provider_view is not None:
                kubo = await stack.enter_async_context(provider_view.kubo())
                reader = ReportReader(
                    provider_view.account,
                    kubo,
                    chain_id=chain.chain_id,
                    audit_contract=protocol.audit.address,
                    wait_seconds=provider_view.wait_seconds,
                )
                stack.push_async_callback(reader.aclose)  # before the client closes
            app.include_router(explorer_router(index, shapes=shapes, reports=reader))
            app.state.explorer_index = index
            yield

    return FastAPI(title="TRUST explorer", lifespan=lifespan)
