"""The Byzantine benchmark's pure parts: its traces are decided exactly by the tier-1 checks (so an
honest seat is never wrong), its protocol, and its refusal of pools that do not fit the rhos. The run
on a local network is tests/sdk/test_byzantine.py."""

from __future__ import annotations

import random

import pytest

from trust.auditors.base import Outcome, request_for
from trust.auditors.tiers import computational_auditor
from trust.bench.byzantine import (
    COMMITTEE_SIZE,
    SEGMENTS_PER_TRACE,
    byzantine_protocol,
    byzantine_trace,
    run_byzantine_benchmark,
)
from trust.errors import ConfigError
from trust.graphs.analysis import critical_path
from trust.graphs.hdag import Tier
from trust.graphs.validation import validate
from trust.settings import SandboxSettings
from trust.theory.consensus import quorum


async def test_every_claim_is_decided_by_the_tier_1_checks_as_its_truth_says() -> None:
    auditor = computational_auditor(SandboxSettings())
    rng = random.Random(7)
    seen = {True: 0, False: 0}
    for index in range(6):
        trace = byzantine_trace(index, rng)
        validate(trace.graph)
        assert len(trace.graph) == SEGMENTS_PER_TRACE
        assert trace.sound == (index % 2 == 0)
        # The answer is the last claim: on the critical path, and false in every flawed trace.
        answer = critical_path(trace.graph)[-1]
        assert answer == f"op{SEGMENTS_PER_TRACE - 1}" and trace.truth[answer] == trace.sound
        for node in trace.graph.nodes():
            assert node.tier is Tier.COMPUTATIONAL
            verdict = await auditor.audit(request_for(trace.graph, node.id))
            expected = Outcome.PASS if trace.truth[node.id] else Outcome.FAIL
            assert verdict.vote is expected, (node.content, verdict.critique)
            seen[trace.truth[node.id]] += 1
    assert seen[True] > 0 and seen[False] > 0


def test_the_same_seed_gives_the_same_traces() -> None:
    first = byzantine_trace(3, random.Random(1))
    again = byzantine_trace(3, random.Random(1))
    assert [n.content for n in first.graph.nodes()] == [n.content for n in again.graph.nodes()]
    assert first.truth == again.truth


def test_the_protocol_leaves_a_two_two_split_undetermined_in_one_round() -> None:
    protocol = byzantine_protocol()
    assert protocol.committee_size_tier1 == COMMITTEE_SIZE and protocol.max_rounds == 1
    q = quorum(COMMITTEE_SIZE, float(protocol.tau))
    assert q == 3 and COMMITTEE_SIZE - 2 < q  # two wrong votes leave neither side a quorum


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pool": 15}, r"rho = 0.1 of a pool of 15 is 1.5 auditors"),
        ({"pool": 3}, "pool = 3: a committee of 4"),
        ({"rhos": ()}, "rhos is empty"),
        ({"segments_per_rho": 0}, "segments_per_rho = 0"),
        ({"family_level": 1.0}, "family_level = 1.0"),
    ],
)
async def test_bad_settings_are_refused_before_any_network_starts(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        await run_byzantine_benchmark(**kwargs)  # type: ignore[arg-type]


def test_a_trace_needs_a_claim() -> None:
    with pytest.raises(ConfigError, match="segments_per_trace = 1"):
        byzantine_trace(0, random.Random(0), segments=1)
