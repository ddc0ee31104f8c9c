"""The worker's adversarial modes (stress tests only): the veto mode's vote, its refusal off a local
chain, and its parsing on `trust worker run`."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from trust.auditors.base import Outcome, Verdict
from trust.cli import app
from trust.errors import ConfigError, TrustError
from trust.services.worker.adversary import Adversary, adversarial_verdict, ensure_local_chain


@pytest.mark.parametrize("honest", [Outcome.PASS, Outcome.FAIL])
def test_a_veto_seat_votes_against_its_own_honest_verdict(honest: Outcome) -> None:
    verdict = Verdict(honest, 1.0 if honest is Outcome.PASS else 0.0, "checked: 37 * 41 = 1517")
    vetoed = adversarial_verdict(Adversary.VETO, verdict)
    assert vetoed.vote is not honest and vetoed.vote in (Outcome.PASS, Outcome.FAIL)
    assert vetoed.score == 1.0 - (verdict.score or 0.0)
    assert vetoed.critique.startswith("[adversary: veto]")
    # The same vote as `wrong`: what makes a seat a veto is its stake share, not its vote.
    assert vetoed.vote is adversarial_verdict(Adversary.WRONG, verdict).vote
    assert Adversary.VETO.audits


def test_a_veto_seat_that_cannot_decide_still_votes() -> None:
    vetoed = adversarial_verdict(Adversary.VETO, Verdict(Outcome.NOT_APPLICABLE, None, "nothing to check"))
    assert vetoed.decided


def test_the_veto_mode_is_refused_off_a_local_chain() -> None:
    ensure_local_chain(31337, "http://127.0.0.1:8545")
    with pytest.raises(ConfigError, match="local chain only"):
        ensure_local_chain(11155111, "http://127.0.0.1:8545")
    with pytest.raises(ConfigError, match="local chain only"):
        ensure_local_chain(31337, "https://rpc.example.org")


def test_worker_run_parses_the_veto_mode(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = tmp_path / "no-such-keystore.json"
    password = tmp_path / "password"
    password.write_text("secret\n")
    base = ["worker", "run", "--keystore", str(missing), "--tier", "1", "--password-file", str(password)]
    refused = runner.invoke(app, [*base, "--adversary", "vetoo"])
    assert refused.exit_code == 2
    assert "'vetoo': expected one of wrong, veto, random, copy, silent" in refused.output
    # "veto" parses: the run gets past the option and stops at the missing keystore.
    accepted = runner.invoke(app, [*base, "--adversary", "veto"])
    assert accepted.exit_code != 0 and "expected one of" not in accepted.output
    assert isinstance(accepted.exception, TrustError) and "no-such-keystore" in str(accepted.exception)
