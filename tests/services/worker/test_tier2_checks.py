"""`WorkerSettings.tier2_checks`: a tier-2 worker that audits with the tier-1 checks (the veto
benchmark's tier 2, which must decide its claims exactly), and the local network's stake multiples."""

from __future__ import annotations

import logging
import random
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from trust.auditors.base import Outcome, request_for
from trust.auditors.computational import ComputationalAuditor
from trust.core.graphs.hdag import Tier
from trust.errors import ConfigError
from trust.lab.bench.byzantine import byzantine_trace
from trust.lab.localnet import WorkerSpec
from trust.services.worker.runner import _tier_auditor
from trust.settings import Settings


async def test_a_tier_2_worker_with_tier2_checks_decides_claims_as_the_checks_do(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, worker={"tier2_checks": True})
    async with AsyncExitStack() as stack:
        auditor, hook = await _tier_auditor(Tier.LLM, settings, stack, "0x" + "00" * 20, logging.getLogger("test"))
    assert isinstance(auditor, ComputationalAuditor) and hook is None
    trace = byzantine_trace(1, random.Random(3))
    for node in trace.graph.nodes():
        verdict = await auditor.audit(request_for(trace.graph, node.id))
        assert verdict.vote is (Outcome.PASS if trace.truth[node.id] else Outcome.FAIL)


def test_tier2_checks_is_off_unless_asked() -> None:
    assert Settings().worker.tier2_checks is False


def test_a_worker_stakes_at_least_one_floor() -> None:
    assert WorkerSpec(1, stake_multiple=3).stake_multiple == 3
    with pytest.raises(ConfigError, match="stake_multiple = 0"):
        WorkerSpec(1, stake_multiple=0)
