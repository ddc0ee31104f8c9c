"""`trust bench attacks`: a fast subset of the attacks replayed on fresh chains (the full run is a benchmark)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from trust.lab.bench.attacks import DEFENDED, OPEN_FINDINGS, VULNERABLE, Checks, run_attacks
from trust.settings import Settings

pytestmark = [pytest.mark.chain, pytest.mark.slow]


async def test_whale_split_stake_front_run_and_withheld_or_corrupt_envelopes_are_defended() -> None:
    report = await run_attacks(Settings(), only=["L4", "L2", "H2", "M3"], measure_gas=False)
    assert report.to_json() == {
        # in the order, whatever was asked
        "attacks": {"H2": DEFENDED, "M3": DEFENDED, "L2": DEFENDED, "L4": DEFENDED},
        "gas_per_seat": None,
    }
    assert report.all_defended and not OPEN_FINDINGS  # every finding of the review is built
    h2, m3, l2, l4 = report.outcomes
    # What was measured on chain, not assumed: the whale that unbonded after the snapshot was passed
    # over and charged P, and every seat weighs units each backed by P locked ...
    assert h2.steps[2].startswith(
        "the draw passed the whale over (stake that may leave backs no vote) and charged it P"
    )
    assert (
        h2.steps[3].startswith("each seat weighs the draws it won (")
        and "3 in all), each backed by P locked" in h2.steps[3]
    )
    assert any(
        step.startswith("a seated auditor unbonding while its seat is open: refused (RegistryHasOpenSeats")
        for step in h2.steps
    )
    assert h2.steps[-1] == "the honest seats decided the segment: Passed"
    # ... the same stake in one account and in twelve won its share of the registry's draws each ...
    assert l2.steps[1].startswith("1000 committees of 3 drawn by the registry's drawCommittee")
    assert l2.steps[2].startswith("one account drawn more than once holds one seat of several units")
    assert l2.steps[4].startswith("splitting gains nothing: ")
    assert l2.steps[-1].startswith("every seat was paid R per unit (")
    # ... the seats of a withheld segment claimed their release, and nobody lost stake ...
    assert "each claim released its seat's stake at once" in m3.steps
    assert "the round, undelivered, ended Undetermined instead of escalating: nobody else was drawn in" in m3.steps
    # R = 0.0006 ETH per vote; which seat won how many of the draws varies with the randomness.
    (credit,) = [step for step in m3.steps if step.startswith("no stake forfeited")]
    credited = re.fullmatch(
        r"no stake forfeited, no reputation moved; each seat was credited R per vote \(([\d, ]+) wei\) .*", credit
    )
    assert credited is not None, credit
    assert all(int(v) > 0 and int(v) % 600_000_000_000_000 == 0 for v in credited.group(1).split(", "))
    # ... and the seats of a segment whose envelopes open for nobody voted it failed, losing nothing.
    refusal = "so 'no envelope' is refused (AuditEnvelopesDelivered(sessionId=2, segmentId=0, round=0))"
    assert m3.steps[-2].endswith(refusal), m3.steps[-2]
    assert m3.steps[-1].startswith(
        "every seat, unable to read its segment, voted fail with its reason: the segment failed in round 0, "
        "nobody forfeited, each seat claimed its reward ("
    )
    # ... and both batches went through after a front-run.
    assert [s.split(";")[1].strip() for s in l4.steps] == [
        "the keeper's draw of [0, 1, 2] went through (all 3 voting)",
        "the keeper's finalization of [0, 1, 2] went through (all passed)",
    ]


async def test_grinding_and_slash_dodging_are_defended() -> None:
    """H1 drives createSession, registerSegments and cancelSession; L3 a slash through the timelock."""
    report = await run_attacks(Settings(), only=["H1", "L3"], measure_gas=False)
    assert report.to_json()["attacks"] == {"H1": DEFENDED, "L3": DEFENDED}
    h1, l3 = report.outcomes
    assert "one of two segments registered: no randomness block is fixed yet (randomnessBlock = 0)" in h1.steps
    assert any(
        s.startswith("cancelling once the seed is public, to re-roll: refused (AuditSessionNotOpen") for s in h1.steps
    )
    assert l3.steps[-2:] == (
        "the slash of 500 tokens executed: it took 500 of 1,000 within reach",
        "the slash of 500 tokens executed: it took 300 of 300 within reach",
    )


async def test_a_persistent_veto_is_escalated_and_settled_against_the_vetoer() -> None:
    """M1 on committees of five (three cannot be vetoed at tau 0.66): the vetoer blocks where it won 2
    or 3 of the 5 votes, its seats stay locked through the escalation and are settled misaligned."""
    report = await run_attacks(Settings(), only=["M1"], measure_gas=False)
    assert report.to_json()["attacks"] == {"M1": DEFENDED}
    (m1,) = report.outcomes
    assert m1.steps[0].startswith("tier 1 (committees of 5 draws): a vetoer with 1,500 tokens")
    assert m1.steps[1].startswith("round 1 gave the vetoer [") and "it can block segments [" in m1.steps[1]
    assert "undecided and escalated to tier 2; the vetoer's seats there stay locked" in m1.steps[2]
    assert "passed every vetoed segment; the vetoer was settled misaligned on each" in m1.steps[3]


async def test_just_in_time_staking_is_defended() -> None:
    """L1 stakes in front of a real `distributeRewards`, leaves a block later, and waits out the stream."""
    report = await run_attacks(Settings(), only=["L1"], measure_gas=False)
    assert report.to_json()["attacks"] == {"L1": DEFENDED}
    assert "L1" not in OPEN_FINDINGS
    (l1,) = report.outcomes
    assert l1.steps[1].startswith("an attacker staked 9,500 tokens (95% of the stake) just before the distribution")
    assert l1.steps[2].startswith("the attacker earned ") and l1.steps[2].endswith("under 0.01% of the stakers' share")
    assert l1.steps[3].startswith("once the stream ended, the auditors staked throughout held ")


async def test_unknown_findings_are_refused_before_any_chain_starts() -> None:
    with pytest.raises(ValueError, match=r"unknown finding\(s\) H9: pick from H1, H2, H3, M1"):
        await run_attacks(Settings(), only=["H2", "H9"], measure_gas=False)


def test_a_defence_that_does_not_hold_is_vulnerable_with_its_reason() -> None:
    checks = Checks()
    checks.expect(True, "refused", "went through")
    checks.expect(False, "weight capped", "the seat weighs 1,000,000 tokens against 100 bonded")
    checks.expect(False, "passed", "the whale decided the segment")
    outcome = checks.outcome("H2", "voting weight not backed by stake", "held")
    assert outcome.verdict == VULNERABLE
    assert outcome.reason == "the seat weighs 1,000,000 tokens against 100 bonded"  # the first failure
    assert outcome.steps[1:] == (
        "VULNERABLE: the seat weighs 1,000,000 tokens against 100 bonded",
        "VULNERABLE: the whale decided the segment",
    )


def test_cli_ends_with_the_json_line_and_succeeds_when_every_attack_is_defended() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "trust", "bench", "attacks", "--only", "m5", "--only", "L2", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stderr
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert line["attacks"] == {"M5": DEFENDED, "L2": DEFENDED}
    assert isinstance(line["gas_per_seat"], int) and line["gas_per_seat"] > 0
