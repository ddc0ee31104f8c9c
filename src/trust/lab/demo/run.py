"""`trust demo`: the paper's clinical example (section 1.3) audited end to end on a local network.

What it runs: `trust.lab.localnet.LocalNetwork` on the devnet's ports (Anvil, the local IPFS node, the
protocol, and nine auditors with their own wallets, each a `trust worker run` process: three
computational, three LLM on the embedded SmolLM2 model, three human with their review pages voted by the
scripted expert of `trust.lab.demo.expert`), then both traces of section 1.3 submitted through the SDK
at once, as plain text that the SDK decomposes (`trust.lab.demo.clinical`). It prints each verdict with
its node statuses and root causes, the contrast with an output-only check, the Table-3 latency
breakdown, the transaction hashes, and one JSON line:

    {"sound": "VALID", "flawed": "INVALID", "flawed_root_causes": [...], "overhead_s": ..., "phases": {...}}

`overhead_s` and `phases` are those of the flawed trace (the two run side by side). The network and
the explorer then stay up (`trust submit` reaches them on the devnet's default ports) until
interrupted. The explorer is the provider's own (local, on 127.0.0.1): it draws the sessions' graphs
from the demo's journal and, in its provider view, shows each seat's critique on the segment pages.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape

from trust.adapters.local.anvil import rpc_ready
from trust.adapters.local.processes import free_port
from trust.adapters.local.toolchain import Toolchain
from trust.core.graphs.status import NodeStatus
from trust.errors import DevnetError
from trust.lab.demo.clinical import FLAWED_TEXT, SOUND_TEXT, flawed_trace, output_only_check, sound_trace
from trust.lab.demo.expert import ExpertDecision, run_scripted_expert
from trust.lab.localnet import LocalNetwork, WorkerSpec
from trust.services.sdk.client import TrustClient
from trust.services.sdk.config import AuditConfig
from trust.services.sdk.display import ProgressBars, render_phases, render_result
from trust.services.sdk.result import AuditResult
from trust.settings import Settings

__all__ = ["DEMO_WORKERS", "DemoOutcome", "run_demo"]

DEMO_WORKERS: tuple[WorkerSpec, ...] = tuple(WorkerSpec(tier) for tier in (1, 1, 1, 2, 2, 2, 3, 3, 3))
"""Three auditors per tier: a committee of three draws (the local network's k) seats one to three of
them, a member drawn twice holding one seat of two votes."""


@dataclass(frozen=True, slots=True)
class DemoOutcome:
    sound: AuditResult
    flawed: AuditResult
    explorer_url: str | None

    def summary(self) -> dict[str, Any]:
        flawed_roots = [c.node_id for c in self.flawed.root_causes if c.status is NodeStatus.INVALID_ROOT]
        return {
            "sound": str(self.sound.verdict),
            "flawed": str(self.flawed.verdict),
            "flawed_root_causes": flawed_roots,
            "overhead_s": round(self.flawed.overhead_s, 4),
            "phases": self.flawed.phases.to_json(),
        }


def _check_ports_free(settings: Settings) -> None:
    url = settings.devnet.rpc_url
    if rpc_ready(url) is not None:
        raise DevnetError(
            f"something already answers at {url} (the devnet?): the demo runs its own network on the devnet's "
            "ports so that `trust submit` finds it. Stop it first (`trust devnet down`), or move the demo with "
            "TRUST_DEVNET__PORT"
        )


async def run_demo(
    settings: Settings,
    console: Console,
    *,
    explorer: bool = True,
    wait: Callable[[], Any] | None = None,
) -> DemoOutcome:
    """Runs the demo (see the module docstring); with `explorer`, serves it and calls `wait` (default:
    until SIGINT/SIGTERM) before stopping everything."""
    _check_ports_free(settings)
    folder = settings.home / "demo"
    shutil.rmtree(folder, ignore_errors=True)
    console.print(f"[bold]TRUST demo[/bold]: a local network under {folder}")
    with console.status("starting Anvil, the IPFS node, the contracts and nine auditor workers"):
        network = LocalNetwork(
            folder,
            DEMO_WORKERS,
            rpc_port=settings.devnet.port,
            ipfs_port=settings.ipfs.port,
            deployments_dir=settings.deployments_path(Toolchain.discover().root),
            randomness=settings.beacon.randomness,
        )
        await network.__aenter__()
    try:
        return await _audits(network, console, explorer=explorer, wait=wait)
    finally:
        await network.stop()


async def _audits(
    network: LocalNetwork, console: Console, *, explorer: bool, wait: Callable[[], Any] | None
) -> DemoOutcome:
    console.print(f"chain {network.rpc_url}, IPFS {network.ipfs_url}, provider {network.provider.address}")
    for auditor in network.auditors:
        console.print(f"  auditor {auditor.address} tier {auditor.tier} (own wallet and worker process)")
    for page in network.review_pages:
        console.print(f"  tier-3 review page {page.url} voted by the [bold]scripted expert (not a person)[/bold]")
    stop = asyncio.Event()

    def on_vote(auditor: str, task: str, decision: ExpertDecision) -> None:
        console.print(f"  [dim]scripted expert for {auditor[:10]}.. voted {decision.vote} on {escape(task)}[/]")

    expert = asyncio.create_task(run_scripted_expert(network.review_pages, stop, on_vote=on_vote))
    try:
        config = AuditConfig(max_latency_ms=600_000)
        with ProgressBars(Console(stderr=True)) as bars:
            client = TrustClient(
                network.rpc_url, network.ipfs_url, account=network.provider, settings=network.settings, progress=bars
            )
            # the traces go in as text: the SDK decomposes them (the HDAG/CIG construction phase)
            sound, flawed = await asyncio.gather(
                client.audit_trace(SOUND_TEXT, config), client.audit_trace(FLAWED_TEXT, config)
            )
    finally:
        stop.set()
        await expert
    render_result(sound, console, title="Sound trace (section 1.3)")
    render_result(flawed, console, title="Flawed trace (section 1.3)")
    console.print(
        "[bold]Output-only check[/bold] (the final score against the answer key, 2): "
        f"sound {'passes' if output_only_check(sound_trace()) else 'fails'}, "
        f"flawed {'passes' if output_only_check(flawed_trace()) else 'fails'}. "
        f"TRUST: sound {sound.verdict}, flawed {flawed.verdict} with root causes "
        f"{', '.join(c.node_id for c in flawed.root_causes)}."
    )
    render_phases({"sound": sound, "flawed": flawed}, console)
    if not explorer:
        outcome = DemoOutcome(sound, flawed, None)
        print(json.dumps(outcome.summary()), flush=True)
        return outcome
    import uvicorn

    from trust.api.explorer.pages import create_explorer_app
    from trust.api.explorer.provider_view import ProviderView
    from trust.api.explorer.shapes import JournalShapes

    port = free_port()
    # The demo is the provider: its own session journal gives the explorer the graphs to draw, and its
    # wallet opens the critiques sealed to it (the explorer listens on 127.0.0.1 only).
    app = create_explorer_app(
        network.rpc_url,
        network.deployment,
        shapes=JournalShapes(network.settings.home / "provider"),
        provider_view=ProviderView(network.provider, network.ipfs_url),
    )
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    url = f"http://127.0.0.1:{port}/explorer/"
    console.print(
        f"[bold]explorer[/bold]: {url}  (the provider's view: segment pages show the critiques; "
        "Ctrl-C stops the demo and its network)"
    )
    outcome = DemoOutcome(sound, flawed, url)
    print(json.dumps(outcome.summary()), flush=True)
    try:
        await (wait() if wait is not None else _until_signal())
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return outcome


async def _until_signal() -> None:
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, done.set)
    await done.wait()
