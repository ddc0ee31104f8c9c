"""`trust worker status`: what a worker's state file says, read-only, while the daemon runs."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from trust.core.amounts import eth_text
from trust.errors import ConfigError
from trust.services.worker.store import AUDIT_SECONDS_KEY, AVAILABILITY_KEY, CAPACITY_KEY, SeatState, WorkerStore
from trust.settings import Settings

__all__ = ["find_states", "render_status", "status_report"]

_RECENT = 20
_FORECAST_FIELDS = (
    "audit_seconds",
    "measured",
    "basis",
    "queued",
    "running",
    "expected_seats",
    "upcoming_seats",
    "backlog_seconds",
    "window_seconds",
    "load",
    "late",
    "expected_units",
    "free_units",
)


def find_states(settings: Settings, address: str | None, data_dir: Path | None) -> list[Path]:
    """The state files of a worker, one per chain: in `data_dir`, else HOME/worker/<address>; with
    neither, every worker's under HOME/worker."""
    base = data_dir or settings.worker.data_dir
    if base is not None:
        found = sorted(base.glob("chain-*.sqlite3"))
    elif address is not None:
        base = settings.home / "worker" / address.lower()
        found = sorted(base.glob("chain-*.sqlite3"))
    else:
        base = settings.home / "worker"
        found = sorted(base.glob("*/chain-*.sqlite3"))
    if not found:
        raise ConfigError(f"no worker state in {base}: has `trust worker run` been started here (same --home)?")
    return found


def _when(unix: float | None) -> str | None:
    return None if unix is None else datetime.fromtimestamp(unix).isoformat(timespec="seconds")


def status_report(path: Path) -> dict[str, Any]:
    """Everything `trust worker status` shows, as JSON-ready data."""
    with WorkerStore.open_existing(path) as store:
        identity = store.identity
        seats = store.seats()
        counts = store.counts()
        recent = store.recent(_RECENT)
        capacity = store.meta_json(CAPACITY_KEY)
        availability = store.meta_json(AVAILABILITY_KEY)
        samples = store.meta_json(AUDIT_SECONDS_KEY)
    rewards = sum(s.reward_wei or 0 for s in seats)
    asked = [s for s in seats if s.reply_key is not None]
    return {
        "state_file": str(path),
        "auditor": identity.get("auditor"),
        "chain_id": int(identity.get("chain_id", 0)),
        "audit_contract": identity.get("audit_contract"),
        "last_block": None if identity.get("last_block") is None else int(identity["last_block"]),
        "seats": {state.value: counts.get(state, 0) for state in SeatState},
        "rewards_wei": rewards,
        "reports": {
            "published": sum(1 for s in asked if s.reported_at is not None),
            "pending": sum(1 for s in asked if s.wants_report and not s.report_given_up),
            "given_up": sum(1 for s in asked if s.report_given_up),
        },
        "open": [
            {
                "seat": str(s.key),
                "state": s.state.value,
                "tier": s.tier,
                "commit_deadline": _when(s.commit_deadline),
                "reveal_deadline": _when(s.reveal_deadline),
                "vote": None if s.vote is None else ("pass" if s.vote else "fail"),
                "attempts": s.attempts,
                "last_error": s.last_error,
            }
            for s in seats
            if s.state.open
        ],
        "problems": [
            {"seat": str(s.key), "state": s.state.value, "reason": s.last_error, "outcome": s.outcome}
            for s in seats
            if s.state in (SeatState.FAILED, SeatState.REJECTED, SeatState.MISSED)
        ],
        "recent": [
            {"at": _when(e.at), "seat": None if e.seat is None else str(e.seat), "event": e.event, "detail": e.detail}
            for e in recent
        ],
        "capacity": _capacity(capacity, samples),
        "draw": _draw(capacity, availability),
        "read_at": _when(time.time()),
    }


def _capacity(capacity: Any, samples: Any) -> dict[str, Any] | None:
    """The worker's last forecast (`trust.services.worker.capacity.Forecast.to_json`) and when it was made;
    None before the worker first ran with capacity tracking."""
    if not isinstance(capacity, dict):
        return None
    shown = {k: capacity.get(k) for k in _FORECAST_FIELDS}
    shown["samples"] = len(samples) if isinstance(samples, list) else 0
    shown["at"] = _when(capacity.get("at"))
    return shown


def _draw(capacity: Any, availability: Any) -> dict[str, Any] | None:
    """Whether the auditor is in the committee draw (as the worker last read it), and, when it is
    out, why and who took it out."""
    if not isinstance(capacity, dict):
        return None
    record = availability if isinstance(availability, dict) else {}
    in_draw = capacity.get("in_draw")
    if in_draw is None:
        by = None
    elif in_draw:
        by = None
    elif record.get("by_worker"):
        by = "worker"
    else:
        by = "operator"
    reason = record.get("reason") if by == "worker" else None
    if by == "operator":
        reason = "set unavailable on chain, not by the worker: it stays out until it is set available again"
    return {
        "in_draw": in_draw,
        "out_by": by,
        "reason": reason,
        "since": _when(record.get("since")) if by == "worker" else None,
        "auditor_unavailable": capacity.get("auditor_unavailable"),
        "backpressure": capacity.get("backpressure"),
        "times_out": int(record.get("outs", 0)),
        "times_in": int(record.get("ins", 0)),
    }


def render_status(report: dict[str, Any], console: Console) -> None:
    console.print(
        f"[bold]worker {report['auditor']}[/bold] on chain {report['chain_id']} "
        f"(audit contract {report['audit_contract']}), events read through block {report['last_block']}"
    )
    counts = ", ".join(f"{n} {state}" for state, n in report["seats"].items() if n) or "no seats yet"
    console.print(f"seats: {counts}; rewards claimed: {eth_text(report['rewards_wei'])}")
    _render_capacity(report.get("capacity"), report.get("draw"), console)
    reports = report["reports"]
    if any(reports.values()):
        console.print(
            f"reports to providers: {reports['published']} published, {reports['pending']} pending, "
            f"{reports['given_up']} given up"
        )
    if report["open"]:
        table = Table(title="open seats")
        for column in ("seat", "state", "tier", "commit by", "reveal by", "vote", "tries", "last error"):
            table.add_column(column)
        for seat in report["open"]:
            table.add_row(
                seat["seat"],
                seat["state"],
                str(seat["tier"]),
                seat["commit_deadline"],
                seat["reveal_deadline"],
                seat["vote"] or "-",
                str(seat["attempts"]),
                escape(seat["last_error"] or ""),
            )
        console.print(table)
    for problem in report["problems"]:
        console.print(f"[red]{problem['state']}[/red] {problem['seat']}: {escape(problem['reason'] or '')}")
    if report["recent"]:
        console.print("[bold]recent[/bold]")
        for entry in report["recent"]:
            seat = f"{entry['seat']} " if entry["seat"] else ""
            console.print(f"  {entry['at']} {seat}{entry['event']}: {escape(entry['detail'])}", soft_wrap=True)


def _units_text(capacity: dict[str, Any]) -> str:
    """The stake side of the forecast: each committee draw won locks P (a seat weighs its draws), and
    a worker whose unlocked stake backs no further unit is passed over by the draws."""
    free = capacity.get("free_units")
    if free is None:
        return ""
    expected = float(capacity.get("expected_units") or 0.0)
    return f"; expected to lock {expected:.1f} units of P, the unlocked stake backs {free} more"


def _render_capacity(capacity: dict[str, Any] | None, draw: dict[str, Any] | None, console: Console) -> None:
    if capacity is None or draw is None:
        return
    basis = capacity.get("basis") or ("measured" if capacity.get("measured") else "default")
    source = {
        "measured": f"the {capacity['samples']} last audits",
        "running": "as long as the running audit has taken so far",
    }.get(str(basis), "the tier's default, none measured")
    load = capacity["load"]
    console.print(
        f"capacity: {capacity['audit_seconds']:.1f} s per audit ({source}); {capacity['queued']} queued, "
        f"{capacity['running']} running, {capacity['expected_seats'] + capacity['upcoming_seats']:.1f} expected "
        f"from draws in progress; a seat drawn now would be ready in {capacity['backlog_seconds']:.0f} s of "
        f"{capacity['window_seconds']:.0f} s"
        + (f" (load {load:.2f})" if load is not None else "")
        + (f"; [red]{capacity['late']} seats predicted late[/red]" if capacity["late"] else "")
        + _units_text(capacity)
        + f" (as of {capacity['at']})"
    )
    if draw["in_draw"] is None:
        console.print("draw: not read from the chain yet")
    elif draw["in_draw"]:
        console.print("draw: [green]in[/green]" + ("" if draw["backpressure"] else " (backpressure off)"))
    else:
        since = f" since {draw['since']}" if draw["since"] else ""
        console.print(f"draw: [yellow]out[/yellow] (by the {draw['out_by']}{since}): {escape(draw['reason'] or '')}")
    if draw["auditor_unavailable"]:
        console.print(f"auditor: [red]cannot take seats[/red]: {escape(draw['auditor_unavailable'])}")
    if draw["times_out"] or draw["times_in"]:
        console.print(f"left the draw {draw['times_out']} times, came back {draw['times_in']} times")
