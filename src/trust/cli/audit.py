"""`trust audit-segment` and `trust submit`: one segment audited locally, one trace on the network."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from trust.cli.app import app
from trust.cli.common import (
    HomeOption,
    RpcOption,
    TierOption,
    console,
    err_console,
    keystore_password,
    settings_for,
)

__all__ = ["audit_segment_cmd", "submit_cmd"]

_DEFAULT_MAX_LATENCY_S = 600.0
"""How long `trust submit` waits for a verdict unless --max-latency says otherwise."""


@app.command("audit-segment")
def audit_segment_cmd(
    path: Annotated[Path, typer.Argument(help="a segment file: the node JSON with its parents (docs/auditors.md)")],
    tier: TierOption,
    as_json: Annotated[bool, typer.Option("--json", help="print {vote, score, critique, ...} as JSON")] = False,
    home: HomeOption = None,
) -> None:
    """Audit one plaintext segment locally with a tier's auditor and print its verdict."""
    from trust.auditors.base import loads_request
    from trust.auditors.tiers import audit_once
    from trust.errors import ConfigError

    settings = settings_for(home)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the segment file {path}: {exc.strerror or exc}") from exc
    request = loads_request(text)
    verdict = asyncio.run(audit_once(request, tier, settings))
    if as_json:
        print(json.dumps(verdict.to_json(), ensure_ascii=False))
        return
    colour = {"pass": "green", "fail": "red"}.get(verdict.vote.value, "yellow")
    score = "-" if verdict.score is None else f"{verdict.score:.2f}"
    console.print(f"[bold {colour}]{verdict.vote.value}[/] (score {score}) {escape(verdict.critique)}")
    for check in verdict.checks:
        console.print(f"  {check.check:<12} {check.outcome.value:<15} {escape(check.detail)}")


@app.command("submit")
def submit_cmd(
    path: Annotated[
        Path | None,
        typer.Argument(help="a trace (text, steps JSON or trust.hdag JSON) or, with --agents, an agent log"),
    ] = None,
    agents: Annotated[
        bool, typer.Option("--agents", help="the file is a multi-agent log (trust.agent-log or Who&When)")
    ] = False,
    steps: Annotated[
        bool, typer.Option("--steps", help="the file is a JSON list of steps or {problem, steps}")
    ] = False,
    tiers: Annotated[
        list[str] | None, typer.Option("--tier", help="tiers to pay for: 1/2/3 or computational/llm/human (repeat)")
    ] = None,
    keystore: Annotated[
        Path | None,
        typer.Option("--keystore", help="the provider's keystore (default on a local chain: Anvil's account 3)"),
    ] = None,
    password_file: Annotated[
        Path | None, typer.Option("--password-file", help="first line: the keystore password")
    ] = None,
    rpc_url: RpcOption = None,
    ipfs_url: Annotated[
        str | None, typer.Option("--ipfs", help="Kubo RPC API URL (default: the local IPFS node)")
    ] = None,
    max_latency_s: Annotated[
        float | None,
        typer.Option(
            "--max-latency", min=1, help="seconds to wait for the verdict [default: 600; --resume: as opened]"
        ),
    ] = None,
    resume: Annotated[
        int | None, typer.Option("--resume", min=1, help="finish session N opened earlier instead")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the AuditResult as JSON (progress goes to stderr)")
    ] = False,
    home: HomeOption = None,
) -> None:
    """Audit one trace or agent log on the running network and print the result."""
    from trust.core.decompose.rules import Trace
    from trust.core.graphs.cig import Cig
    from trust.core.graphs.hdag import Hdag
    from trust.errors import ConfigError, GraphError
    from trust.services.decompose import read_trace
    from trust.services.sdk.client import TrustClient, agents_graph
    from trust.services.sdk.config import AuditConfig
    from trust.services.sdk.display import ProgressBars, render_phases, render_result
    from trust.services.sdk.inputs import read_json
    from trust.services.sdk.provider import provider_account

    settings = settings_for(home)
    if (path is None) == (resume is None):
        raise typer.BadParameter("give a FILE to audit, or --resume SESSION (not both)")
    try:
        config = AuditConfig(
            auditor_tiers=tiers or (1, 2, 3),
            max_latency_ms=int((max_latency_s or _DEFAULT_MAX_LATENCY_S) * 1000),
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if resume is not None and (agents or steps or tiers):
        raise typer.BadParameter(
            "--resume finishes a session already open, with the tiers and options it was opened with: "
            "it takes no --agents, --steps or --tier"
        )
    if agents and steps:
        raise typer.BadParameter("--agents reads an agent log and --steps a list of steps: give one of them")
    # The input is read and parsed before the wallet is unlocked or anything is reached: a file that
    # claims to be JSON and is not stops here, with its position, and nothing is uploaded or paid.
    trace: Trace | Hdag | None = None
    agent_log: Cig | None = None
    if path is not None and agents:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise GraphError(f"agent log {path} is not UTF-8 text (byte {exc.start}): save it as UTF-8") from None
        except OSError as exc:
            raise ConfigError(f"cannot read the agent log {path}: {exc.strerror or exc}") from None
        agent_log = agents_graph(read_json(text, f"agent log {path}"), config, what=f"agent log {path}")
    elif path is not None:
        trace = read_trace(path, steps=steps)
    url = rpc_url or settings.effective_rpc_url
    account = provider_account(settings, url, keystore, keystore_password(password_file) if keystore else None)
    with ProgressBars(err_console) as bars:
        client = TrustClient(url, ipfs_url, account=account, settings=settings, progress=bars)
        if resume is not None:
            wait_ms = None if max_latency_s is None else int(max_latency_s * 1000)
            result = client.resume_sync(resume, max_latency_ms=wait_ms)
        elif agents:
            assert agent_log is not None
            result = client.audit_agents_sync(agent_log, config)
        else:
            assert trace is not None
            result = client.audit_trace_sync(trace, config)
    if as_json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
        return
    render_result(result, console)
    render_phases({"this audit": result}, console)
