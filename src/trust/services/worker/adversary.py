"""Adversarial behaviours for stress tests only, refused on any chain but a local one.

They exist to show what the protocol does to auditors who cheat (paper 3.2: slashing, forfeits,
reputation), with real workers on a local chain:

- `wrong`: audits honestly, then votes the opposite (an auditor paid to flip verdicts);
- `veto`: the same vote as `wrong` (against its own honest verdict, so against what the honest
  seats vote), run by a member whose stake wins it more than 1 - tau and less than tau of a round's
  votes (units: the committee draws it won) often enough, so that its seat blocks the quorum rather
  than deciding: the persistent veto of issue 16 (M1), which the
  escalation rule makes pay when a later round decides (`trust.core.theory.veto`). It reveals every
  vote: a vetoer that held back its reveal would be a silent seat, which forfeits at once, and a
  vetoer cannot know before revealing whether its vote blocks (the other seats' votes are sealed
  until the reveal phase), so "reveal only when it blocks" is not a strategy it can play;
- `random`: votes a coin flip without reading the segment (a lazy auditor);
- `copy`: waits until the end of the commit window hoping to copy the first revealed vote, which
  commit-reveal never shows in time (no reveal is accepted before the commit window closes), so it
  commits a coin flip at the last moment: the herding that section 3.2.1 prevents;
- `silent`: commits its honest vote and never reveals (strategic abstention; the seat forfeits).
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from enum import StrEnum
from urllib.parse import urlparse

from trust.auditors.base import Outcome, Verdict
from trust.errors import ConfigError

__all__ = ["LOCAL_CHAIN_IDS", "Adversary", "adversarial_verdict", "ensure_local_chain"]

LOCAL_CHAIN_IDS = frozenset({31337, 1337})
"""Chain ids of local development chains (Anvil and Hardhat use 31337; Ganache and geth --dev 1337)."""

_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class Adversary(StrEnum):
    WRONG = "wrong"
    VETO = "veto"
    RANDOM = "random"
    COPY = "copy"
    SILENT = "silent"

    @property
    def audits(self) -> bool:
        """Whether this behaviour reads and audits the segment at all."""
        return self in (Adversary.WRONG, Adversary.VETO, Adversary.SILENT)


def ensure_local_chain(chain_id: int, rpc_url: str) -> None:
    """Refuses adversarial modes anywhere but a local chain on this machine."""
    host = urlparse(rpc_url).hostname or ""
    if chain_id not in LOCAL_CHAIN_IDS or host not in _LOOPBACK_HOSTS:
        raise ConfigError(
            f"adversarial modes are for stress tests on a local chain only; {rpc_url} is chain {chain_id}. "
            f"They run only on chain ids {sorted(LOCAL_CHAIN_IDS)} at a loopback address"
        )


def _coin() -> bool:
    return secrets.randbits(1) == 1


def adversarial_verdict(mode: Adversary, honest: Verdict | None) -> Verdict:
    """The verdict an adversary commits, from the honest one (None when it did not audit)."""
    if mode is Adversary.SILENT and honest is not None:
        return honest
    if mode in (Adversary.WRONG, Adversary.VETO) and honest is not None and honest.decided:
        flipped = Outcome.FAIL if honest.vote is Outcome.PASS else Outcome.PASS
        return replace(
            honest,
            vote=flipped,
            score=1.0 - (honest.score or 0.0),
            critique=f"[adversary: {mode.value}] flipped from {honest.vote.value}",
            error_type=None,
            checks=(),
        )
    vote = Outcome.PASS if _coin() else Outcome.FAIL
    return Verdict(vote, 1.0 if vote is Outcome.PASS else 0.0, f"[adversary: {mode.value}] coin flip")
