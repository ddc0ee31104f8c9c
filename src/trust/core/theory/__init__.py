"""The Safety-Profitability toolkit (paper section 4), the pure core: numpy and scipy, no I/O.

- `consensus`: Lemma 4.1's exact segment pass probability, trace moments, Prop. 4.1's Hoeffding and
  Chernoff bounds, the exact trace failure probability, Prop. 4.2;
- `economics`: payoffs, sigma_H^2, E1 and E2, the tail bounds of Theorem 4.1 as printed and values
  that hold;
- `params`: a whole parameter set, checked against S1, E1 and E2 with margins and a verdict;
- `recommend`: the smallest committees and the economics that satisfy them with a safety margin;
- `montecarlo`: a vectorized simulator of seats, segments, traces and payoffs;
- `paper`: every figure the paper prints next to what its formulas give;
- `veto`: the veto adversary (issue 16, M1), exact over stake-weighted draws, under the escalation
  rule and the old free veto.

Formulas, choices and the paper's errors: docs/theory.md.
"""

from trust.core.theory.consensus import (
    SegmentClass,
    TraceModel,
    VerdictProbabilities,
    pass_probability,
    quorum,
    trace_pass_probability,
    verdict_probabilities,
    verdict_probabilities_drawn,
)
from trust.core.theory.economics import Economics
from trust.core.theory.params import DEFAULT_PARAMETERS, CheckReport, Parameters, check, default_parameters
from trust.core.theory.recommend import Recommendation, recommend

__all__ = [
    "DEFAULT_PARAMETERS",
    "CheckReport",
    "Economics",
    "Parameters",
    "Recommendation",
    "SegmentClass",
    "TraceModel",
    "VerdictProbabilities",
    "check",
    "default_parameters",
    "pass_probability",
    "quorum",
    "recommend",
    "trace_pass_probability",
    "verdict_probabilities",
    "verdict_probabilities_drawn",
]
