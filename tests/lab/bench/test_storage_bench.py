"""`trust bench storage` against the real local IPFS node: the trace, the figures' shape and the
CLI's final JSON line (no timing asserts)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest

from trust.adapters.storage.kubo import KuboClient
from trust.core.graphs.validation import violations
from trust.core.privacy.segments import segment_plaintexts
from trust.errors import VerificationError
from trust.lab.bench.storage import (
    DEFAULT_SIZES,
    StorageBench,
    StorageTiming,
    reasoning_trace,
    run_storage_benchmark,
    time_trace,
)

pytestmark = pytest.mark.slow


@pytest.fixture
async def client(ipfs_api_url: str) -> AsyncIterator[KuboClient]:
    async with KuboClient(ipfs_api_url, content_timeout_seconds=2, backoff_seconds=0.01) as kubo:
        yield kubo


def test_the_trace_is_a_valid_hdag_with_node_sized_text() -> None:
    trace = reasoning_trace(120, 700, random.Random(1))
    assert len(trace) == 120 and violations(trace) == []
    assert {len(node.content) for node in trace.nodes()} == {700}
    assert len({node.content for node in trace.nodes()}) == 120
    with pytest.raises(ValueError, match="node_bytes"):
        reasoning_trace(100, 0, random.Random(1))


async def test_figures_for_two_sizes(client: KuboClient) -> None:
    seen: list[str] = []
    bench = await run_storage_benchmark(client, (80, 150), node_bytes=500, concurrency=4, progress=seen.append)
    assert [t.nodes for t in bench.timings] == [80, 150] and len(seen) == 2
    assert bench.api_url == client.api_url and bench.node_version
    for t in bench.timings:
        # Every segment is 500 bytes of text plus its JSON fields, and 33 bytes of header and tag.
        assert t.plaintext_bytes > 500 * t.nodes
        assert t.blob_bytes == t.plaintext_bytes + 33 * t.nodes
        assert min(t.seal_s, t.upload_s, t.fetch_s, t.open_s) > 0
        assert t.seal_upload_s == t.seal_s + t.upload_s and t.fetch_open_s == t.fetch_s + t.open_s
    assert set(bench.summary()) == {"seal_upload_80_s", "fetch_open_80_s", "seal_upload_150_s", "fetch_open_150_s"}
    with pytest.raises(ValueError, match="concurrency"):
        await run_storage_benchmark(client, (80,), concurrency=0)


async def test_a_segment_that_does_not_round_trip_aborts_the_run(
    client: KuboClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plaintexts are compared after timing: a run that lost or altered a segment prints no figure."""
    trace = reasoning_trace(80, 100, random.Random(2))
    honest = segment_plaintexts(trace)
    first = next(iter(honest))
    altered = honest | {first: honest[first] + b" "}
    monkeypatch.setattr("trust.lab.bench.storage.segment_plaintexts", lambda graph: altered)
    with pytest.raises(VerificationError, match=f"segment {first!r} did not round-trip"):
        await time_trace(client, trace)


def test_cli_ends_with_the_json_line() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "trust", "bench", "storage", "--size", "100", "--size", "200", "--node-bytes", "256"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    figures = json.loads(lines[-1])
    assert set(figures) == {"seal_upload_100_s", "fetch_open_100_s", "seal_upload_200_s", "fetch_open_200_s"}
    assert all(isinstance(value, float) and value > 0 for value in figures.values())
    assert any("upload + pin" in line for line in lines)


def test_default_sizes_give_the_issues_json_keys() -> None:
    timings = tuple(StorageTiming(n, 1, 2, 0.1, 0.2, 0.3, 0.4) for n in DEFAULT_SIZES)
    summary = StorageBench("http://127.0.0.1:5101", "7.1.15", 2048, 8, timings).summary()
    assert list(summary) == ["seal_upload_100_s", "fetch_open_100_s", "seal_upload_1000_s", "fetch_open_1000_s"]
    assert summary["seal_upload_100_s"] == pytest.approx(0.3) and summary["fetch_open_1000_s"] == pytest.approx(0.7)
