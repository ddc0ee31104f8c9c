"""What a provider asks of one audit (`AuditConfig`, the shape of the paper's Listing 3).

Choices where Listing 3 is vague:

- `auditor_tiers` names the tiers the provider is willing to pay for, by number (1, 2, 3) or by name
  ("computational", "llm", "human"). A node routed (`trust.core.graphs.routing`) to a tier outside the set
  goes to the nearest allowed tier, the higher one on a tie: a node meant for a human goes to the LLM
  tier when humans are not wanted, and a computational node to the LLM tier when tier 1 is not wanted.
  Escalation is the protocol's business: an undecided segment still escalates to the next tier on
  chain whatever this set says (the contracts do not know it).
- `consensus_threshold` cannot lower the chain's segment threshold tau (a protocol parameter that only
  governance changes). When set, it is a stricter reading on the provider's side: a segment the chain
  passed with a smaller share of its committee's votes (seat units) for pass does not count as passed in the
  SDK's verdict, and `failure_reasons` says so. The on-chain verdict stays in `AuditResult.proof`.
  Unset (the default), the SDK's verdict is the chain's.
- `max_latency_ms` bounds the wait for the verdict: past it the audit raises `AuditTimeout`, which
  carries the session id; the session goes on on chain and `TrustClient.resume` picks it up.
- `privacy_level` "segmented" is the only level the protocol implements (each node sealed under its
  own key, each seat given its node's key and its parents', paper 3.4); other values are refused
  rather than silently ignored.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from trust.core.graphs.hdag import Tier

__all__ = ["TIER_NAMES", "AuditConfig", "parse_tier"]

TIER_NAMES: dict[str, Tier] = {"computational": Tier.COMPUTATIONAL, "llm": Tier.LLM, "human": Tier.HUMAN}
"""The tier names of Listing 3 (`auditor_tiers=["computational", "llm"]`)."""


def parse_tier(value: object) -> Tier:
    """A tier from its number (1, 2, 3, as int or string) or its name (`TIER_NAMES`)."""
    if isinstance(value, Tier):
        return value
    if isinstance(value, str):
        name = value.strip().lower()
        if name in TIER_NAMES:
            return TIER_NAMES[name]
        if name.isdigit():
            value = int(name)
    if isinstance(value, int) and not isinstance(value, bool) and value in (1, 2, 3):
        return Tier(value)
    names = ", ".join(TIER_NAMES)
    raise ValueError(f"unknown auditor tier {value!r}: use 1, 2, 3 or one of {names}")


def _tiers(value: object) -> tuple[Tier, ...]:
    if isinstance(value, str | int):
        value = [value]
    if not isinstance(value, list | tuple | set | frozenset):
        raise ValueError(f"auditor_tiers must be a list of tiers, not {type(value).__name__}")
    tiers = sorted({parse_tier(item) for item in value})
    if not tiers:
        raise ValueError("auditor_tiers is empty: name at least one tier")
    return tuple(tiers)


class AuditConfig(BaseModel):
    """How one trace is audited. Every field has a default; see the module docstring for the choices."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    auditor_tiers: Annotated[tuple[Tier, ...], BeforeValidator(_tiers)] = Field(
        (Tier.COMPUTATIONAL, Tier.LLM, Tier.HUMAN),
        description="tiers the provider pays for (numbers or computational/llm/human); others re-route",
    )
    consensus_threshold: float | None = Field(
        None, gt=0.5, le=1, description="stricter provider-side share of stake a passed segment needs"
    )
    max_latency_ms: int | None = Field(
        600_000, gt=0, description="wait at most this long for the verdict (None: no limit)"
    )
    privacy_level: Literal["segmented"] = Field("segmented", description="per-node keys, need-to-know delivery")
    fee_wei: int | None = Field(None, ge=0, description="session fee; the contract's minimum when unset")
    finalize: bool = Field(True, description="finalize segments and the trace as soon as the chain allows it")
    distribute: bool = Field(True, description="split the fee once the trace is final (distributeRewards)")
    report_grace_ms: int = Field(
        3_000, ge=0, description="after the verdict, wait this long for critiques of failed seats still on their way"
    )
    max_trace_chars: int = Field(1_000_000, gt=0, description="largest trace text accepted")
    max_nodes: int = Field(1024, gt=0, description="largest graph accepted (also capped by the chain per session)")

    @field_validator("consensus_threshold")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and value != value:  # NaN
            raise ValueError("consensus_threshold is NaN")
        return value

    def tier_for(self, routed: Tier) -> Tier:
        """The tier a node routed to `routed` is audited at under `auditor_tiers` (nearest allowed,
        the higher one on a tie)."""
        if routed in self.auditor_tiers:
            return routed
        return min(self.auditor_tiers, key=lambda tier: (abs(int(tier) - int(routed)), -int(tier)))
