"""Private segments through IPFS, timed per phase (`trust bench storage`; paper 3.4.1, 3.4.2).

For each trace size (100 and 1,000 nodes by default) the benchmark runs the provider's and the
auditors' halves of storage against a real node:

- seal: every node's canonical JSON encrypted under its own fresh AES-256-GCM key
  (`trust.core.privacy.segments.seal_graph`, keys and nonces from `os.urandom`);
- upload: every blob sent with `/api/v0/add` (CIDv1, Kubo's layout, pinned), its CID computed
  locally while streaming and checked against the node's answer (`KuboClient.add`);
- fetch: every blob read back with `/api/v0/cat`, verified against its CID and its committed
  sha256 digest before it is returned (`KuboClient.cat`);
- open: every blob decrypted and authenticated under its trace and node id (`open_segment`).

Requests run `concurrency` at a time, as a provider or a worker would issue them. Not timed: building
the trace, checking afterwards that every CID is pinned and that every plaintext came back
byte-identical (either failure aborts the benchmark, so a figure is never printed for a broken run).

The trace is the synthetic HDAG of `trust bench graphs` (every level and edge type), with each
node's text replaced by `node_bytes` bytes of reasoning-like prose: the synthetic arithmetic labels
are a few bytes, far below a real chain-of-thought step (ProcessBench steps are a few hundred bytes,
Who&When turns a few kilobytes), and throughput depends on size. MB/s is blob bytes (ciphertext, 33
bytes above the plaintext per segment) over the phase's seconds, with 1 MB = 10^6 bytes.

By default a fresh local node (`ipfs/`, Helia behind the Kubo RPC subset) is started in a temporary
repo and stopped afterwards; `api_url` points the benchmark at another Kubo-compatible endpoint
instead (its blobs stay pinned there).
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TypeVar

from rich.console import Console
from rich.table import Table

from trust.adapters.storage.kubo import KuboClient
from trust.core.graphs.hdag import Hdag
from trust.core.privacy.segments import new_trace_id, open_segment, seal_graph, segment_plaintexts
from trust.errors import IpfsError, VerificationError
from trust.lab.bench.graphs import synthetic_hdag
from trust.services.delivery import gather_bounded

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_NODE_BYTES",
    "DEFAULT_SIZES",
    "StorageBench",
    "StorageTiming",
    "reasoning_trace",
    "render",
    "run_storage_benchmark",
    "time_trace",
]

DEFAULT_SIZES = (100, 1_000)
DEFAULT_NODE_BYTES = 2_048
"""Text per node: a typical LLM reasoning step or agent turn (a few hundred to a few thousand bytes)."""
DEFAULT_CONCURRENCY = 8
_MB = 1_000_000
_WORDS = (
    "therefore the value follows from the previous step since we multiply both sides and check that "
    "each term is consistent with the constraint so the remaining case reduces to a simpler one where "
    "the assumption holds and the result is verified against the given data before we continue"
).split()
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class StorageTiming:
    """Seconds per phase for one trace; bytes are totals over its segments."""

    nodes: int
    plaintext_bytes: int
    blob_bytes: int
    seal_s: float
    upload_s: float
    fetch_s: float
    open_s: float

    @property
    def seal_upload_s(self) -> float:
        return self.seal_s + self.upload_s

    @property
    def fetch_open_s(self) -> float:
        return self.fetch_s + self.open_s

    def mb_per_s(self, seconds: float) -> float:
        return self.blob_bytes / _MB / seconds if seconds > 0 else float("inf")


@dataclass(frozen=True, slots=True)
class StorageBench:
    """Every size's timing, and what was measured against."""

    api_url: str
    node_version: str
    node_bytes: int
    concurrency: int
    timings: tuple[StorageTiming, ...]

    def summary(self) -> dict[str, float]:
        """The final JSON line: `seal_upload_<n>_s` and `fetch_open_<n>_s` for every size n."""
        figures: dict[str, float] = {}
        for t in self.timings:
            figures[f"seal_upload_{t.nodes}_s"] = round(t.seal_upload_s, 4)
            figures[f"fetch_open_{t.nodes}_s"] = round(t.fetch_open_s, 4)
        return figures


def _prose(size: int, rng: random.Random) -> str:
    words: list[str] = []
    length = -1
    while length < size:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def reasoning_trace(nodes: int, node_bytes: int, rng: random.Random) -> Hdag:
    """The synthetic HDAG of `nodes` nodes with `node_bytes` bytes of prose as every node's text."""
    if node_bytes < 1:
        raise ValueError(f"node_bytes must be at least 1, got {node_bytes}")
    shape = synthetic_hdag(nodes, rng)
    trace = Hdag()
    for node in shape.nodes():
        trace.add_node(replace(node, content=_prose(node_bytes, rng)))
    for edge in shape.edges():
        trace.add_edge(edge.source, edge.target, edge.type)
    return trace


async def time_trace(client: KuboClient, trace: Hdag, *, concurrency: int = DEFAULT_CONCURRENCY) -> StorageTiming:
    """Seal, upload and pin, then fetch, verify and open every segment of `trace` (see the module doc)."""
    plaintexts = segment_plaintexts(trace)
    trace_id = new_trace_id(os.urandom)

    start = time.perf_counter()
    sealed = seal_graph(trace, trace_id, os.urandom)
    sealed_at = time.perf_counter()
    cids = await gather_bounded(concurrency, [partial(client.add, s.blob, pin=True) for s in sealed])
    uploaded_at = time.perf_counter()

    pinned = await gather_bounded(concurrency, [partial(client.pin_ls, c) for c in cids])
    unpinned = [cid for cid, pins in zip(cids, pinned, strict=True) if not pins]
    if unpinned:
        raise IpfsError(f"{len(unpinned)} of {len(cids)} uploaded segments are not pinned on {client.api_url}")

    fetch_start = time.perf_counter()
    blobs = await gather_bounded(
        concurrency,
        [partial(client.cat, c, expected_digest=s.ciphertext_digest) for c, s in zip(cids, sealed, strict=True)],
    )
    fetched_at = time.perf_counter()
    opened = [
        open_segment(blob, s.key, trace_id, s.node_id, ciphertext_digest=s.ciphertext_digest)
        for blob, s in zip(blobs, sealed, strict=True)
    ]
    opened_at = time.perf_counter()

    for s, plaintext in zip(sealed, opened, strict=True):
        if plaintext != plaintexts[s.node_id]:
            raise VerificationError(f"segment {s.node_id!r} did not round-trip through {client.api_url}")
    return StorageTiming(
        nodes=len(sealed),
        plaintext_bytes=sum(len(p) for p in opened),
        blob_bytes=sum(len(s.blob) for s in sealed),
        seal_s=sealed_at - start,
        upload_s=uploaded_at - sealed_at,
        fetch_s=fetched_at - fetch_start,
        open_s=opened_at - fetched_at,
    )


async def run_storage_benchmark(
    client: KuboClient,
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    node_bytes: int = DEFAULT_NODE_BYTES,
    concurrency: int = DEFAULT_CONCURRENCY,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> StorageBench:
    """Times every size against the node behind `client` (which the caller opens and closes)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    version = await client.version()
    traces = [reasoning_trace(n, node_bytes, random.Random(seed + n)) for n in sizes]
    timings = []
    for trace in traces:
        if progress is not None:
            progress(f"{len(trace):,}-node trace: seal, upload, fetch, open")
        timings.append(await time_trace(client, trace, concurrency=concurrency))
    return StorageBench(client.api_url, version.version, node_bytes, concurrency, tuple(timings))


def render(bench: StorageBench, console: Console) -> None:
    table = Table(
        title=(
            f"segments through IPFS at {bench.api_url} (node {bench.node_version}; "
            f"{bench.node_bytes:,} text bytes per node, {bench.concurrency} requests at a time)"
        )
    )
    for column in ("nodes", "blob MB", "phase", "seconds", "MB/s", "segments/s"):
        table.add_column(column, justify="left" if column == "phase" else "right")
    for t in bench.timings:
        phases = (
            ("seal (AES-256-GCM)", t.seal_s),
            ("upload + pin", t.upload_s),
            ("seal + upload + pin", t.seal_upload_s),
            ("fetch + verify", t.fetch_s),
            ("open (decrypt)", t.open_s),
            ("fetch + verify + open", t.fetch_open_s),
        )
        for position, (phase, seconds) in enumerate(phases):
            first = position == 0
            table.add_row(
                f"{t.nodes:,}" if first else "",
                f"{t.blob_bytes / _MB:.2f}" if first else "",
                phase,
                f"{seconds:.3f}",
                f"{t.mb_per_s(seconds):,.1f}",
                f"{t.nodes / seconds:,.0f}" if seconds > 0 else "inf",
                end_section=position == len(phases) - 1,
            )
    console.print(table)
    console.print(json.dumps(bench.summary()), soft_wrap=True, markup=False, highlight=False)
