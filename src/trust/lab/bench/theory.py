"""Speed of the section 4 toolkit, and the Monte Carlo against the exact trace failure (`trust bench theory`).

Three figures (printed, never asserted):

- exact p_t: `consensus.pass_probability` (Lemma 4.1) for every committee size k = 1..101 at the
  human tier's epsilon = 0.30, rho = 0.10, tau = 0.66; milliseconds per call, the mean over `calls`
  calls at each k, then the mean and the max over k (target: under 1 ms at every k).
- Monte Carlo: `montecarlo.simulate_traces` of `traces` traces (10^6 by default) of
  `montecarlo.default_trace_model()` (8 computational, 10 LLM and 2 human segments, beta = 0.65),
  wall seconds (target: under 5 s), and its failure rate and 99% Wilson interval next to the exact
  `TraceModel.failure_probability()` (about 1e-8 for that model, so 10^6 traces mostly see none: the
  interval's upper end is the informative figure).
- payoffs: `montecarlo.simulate_payoffs` of `payoff_paths` honest seats over lambda T = 1440 segments
  (a day at 60 per hour) at the paper's 4.7 calibration (R = 6, P = 8, p_min = 0.35, p_max = 0.5),
  gamma = 0.1 and r0 = 0.5, wall seconds, and the mean payoff next to its exact value
  (`montecarlo.expected_payoff`).

A warm-up call precedes each timing, so imports and first-call set-up are not counted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from rich.console import Console
from rich.table import Table

from trust.core.theory.consensus import pass_probability
from trust.core.theory.economics import Economics
from trust.core.theory.montecarlo import (
    PayoffEstimate,
    TraceEstimate,
    default_trace_model,
    expected_payoff,
    simulate_payoffs,
    simulate_traces,
)
from trust.core.theory.validate import integer_at_least

__all__ = [
    "DEFAULT_KS",
    "PAPER_ECONOMICS",
    "PAYOFF_LAMBDA_T",
    "PassProbabilityTiming",
    "TheoryBench",
    "render",
    "run_theory_benchmark",
]

DEFAULT_KS = tuple(range(1, 102))
PAPER_ECONOMICS = Economics(reward=6, penalty=8, p_min=0.35, p_max=0.5, epsilon_h=0.30, delta=0.2)
"""Paper 4.7's calibration, with p_min raised to 0.35 as the paper does to satisfy E2."""
PAYOFF_LAMBDA_T = 1440.0
_EPSILON, _RHO, _TAU = 0.30, 0.10, 0.66
_PAYOFF_GAMMA, _PAYOFF_R0 = 0.1, 0.5


@dataclass(frozen=True, slots=True)
class PassProbabilityTiming:
    """Milliseconds per `pass_probability` call at committee size k (the mean over the calls)."""

    k: int
    ms: float


@dataclass(frozen=True)
class TheoryBench:
    """The benchmark's figures (module docstring)."""

    pass_probability: tuple[PassProbabilityTiming, ...]
    calls: int
    traces: int
    monte_carlo_s: float
    monte_carlo: TraceEstimate
    exact_failure: float
    exact_failure_ms: float
    payoff_s: float
    payoff: PayoffEstimate
    payoff_expected: float

    @property
    def pass_probability_mean_ms(self) -> float:
        return sum(t.ms for t in self.pass_probability) / len(self.pass_probability)

    @property
    def slowest(self) -> PassProbabilityTiming:
        return max(self.pass_probability, key=lambda t: t.ms)

    def summary(self) -> dict[str, float | int]:
        """The JSON line."""
        failed = self.monte_carlo.failed
        return {
            "pass_probability_mean_ms": round(self.pass_probability_mean_ms, 6),
            "pass_probability_max_ms": round(self.slowest.ms, 6),
            "pass_probability_max_k": self.slowest.k,
            "pass_probability_calls": self.calls,
            "monte_carlo_s": round(self.monte_carlo_s, 6),
            "monte_carlo_traces": self.traces,
            "monte_carlo_failure_rate": failed.rate,
            "monte_carlo_failure_low": failed.low,
            "monte_carlo_failure_high": failed.high,
            "exact_failure_probability": self.exact_failure,
            "exact_failure_ms": round(self.exact_failure_ms, 6),
            "payoff_s": round(self.payoff_s, 6),
            "payoff_paths": self.payoff.n_paths,
            "payoff_lambda_t": self.payoff.lam_t,
            "payoff_mean": round(self.payoff.mean, 6),
            "payoff_stderr": round(self.payoff.stderr, 6),
            "payoff_expected": round(self.payoff_expected, 6),
        }


def _per_call_ms(calls: int, run: Callable[[], object]) -> float:
    run()  # warm-up
    start = time.perf_counter()
    for _ in range(calls):
        run()
    return (time.perf_counter() - start) / calls * 1e3


def run_theory_benchmark(
    rng: np.random.Generator,
    *,
    traces: int = 10**6,
    calls: int = 20,
    payoff_paths: int = 10**4,
    progress: Callable[[str], None] | None = None,
) -> TheoryBench:
    """Times the exact p_t, the trace Monte Carlo and the payoff simulation (module docstring)."""
    traces = integer_at_least("traces", traces, 1)
    calls = integer_at_least("calls", calls, 1)
    payoff_paths = integer_at_least("payoff_paths", payoff_paths, 2)

    def say(message: str) -> None:
        if progress is not None:
            progress(message)

    say(f"exact p_t for k = {DEFAULT_KS[0]}..{DEFAULT_KS[-1]}")
    timings = tuple(
        PassProbabilityTiming(k, _per_call_ms(calls, partial(pass_probability, k, _EPSILON, _RHO, _TAU)))
        for k in DEFAULT_KS
    )

    model = default_trace_model()
    exact_failure_ms = _per_call_ms(1, lambda: default_trace_model().failure_probability())
    exact = model.failure_probability()
    say(f"Monte Carlo of {traces:,} traces")
    simulate_traces(model, min(traces, 1_000), rng)  # warm-up
    start = time.perf_counter()
    estimate = simulate_traces(model, traces, rng)
    monte_carlo_s = time.perf_counter() - start

    say(f"payoffs of {payoff_paths:,} honest seats over lambda T = {PAYOFF_LAMBDA_T:g}")
    simulate_payoffs(PAPER_ECONOMICS, PAYOFF_LAMBDA_T, 2, rng)  # warm-up
    start = time.perf_counter()
    payoff = simulate_payoffs(PAPER_ECONOMICS, PAYOFF_LAMBDA_T, payoff_paths, rng, gamma=_PAYOFF_GAMMA, r0=_PAYOFF_R0)
    payoff_s = time.perf_counter() - start
    expected = expected_payoff(PAPER_ECONOMICS, PAYOFF_LAMBDA_T, gamma=_PAYOFF_GAMMA, r0=_PAYOFF_R0)
    return TheoryBench(
        pass_probability=timings,
        calls=calls,
        traces=traces,
        monte_carlo_s=monte_carlo_s,
        monte_carlo=estimate,
        exact_failure=exact,
        exact_failure_ms=exact_failure_ms,
        payoff_s=payoff_s,
        payoff=payoff,
        payoff_expected=expected,
    )


def render(bench: TheoryBench, console: Console) -> None:
    failed = bench.monte_carlo.failed
    slowest = bench.slowest
    table = Table(title="section 4 toolkit: exact values and Monte Carlo")
    for column in ("figure", "value", "target"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    table.add_row(
        f"exact p_t, mean ms per call (k = 1..{bench.pass_probability[-1].k})",
        f"{bench.pass_probability_mean_ms:.4f}",
        "< 1",
    )
    table.add_row(f"exact p_t, max ms per call (at k = {slowest.k})", f"{slowest.ms:.4f}", "< 1")
    table.add_row("exact trace failure, ms per call", f"{bench.exact_failure_ms:.3f}", "")
    table.add_row(f"Monte Carlo of {bench.traces:,} traces, s", f"{bench.monte_carlo_s:.3f}", "< 5")
    table.add_row(
        f"simulated failure rate ({failed.level:.0%} Wilson interval)",
        f"{failed.rate:.3g} [{failed.low:.3g}, {failed.high:.3g}]",
        "",
    )
    table.add_row("exact failure probability", f"{bench.exact_failure:.3g}", "")
    table.add_row(
        f"payoffs of {bench.payoff.n_paths:,} honest seats, lambda T = {bench.payoff.lam_t:g}, s",
        f"{bench.payoff_s:.3f}",
        "",
    )
    table.add_row(
        "mean honest payoff (exact E[U])",
        f"{bench.payoff.mean:,.1f} +- {bench.payoff.stderr:.1f} ({bench.payoff_expected:,.1f})",
        "",
    )
    console.print(table)
    console.print(json.dumps(bench.summary()), soft_wrap=True, markup=False, highlight=False)
