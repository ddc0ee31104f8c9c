"""A whole parameter set and its check against Theorem 4.1 (S1, E1, E2), for governance and defaults.

A parameter set is a mapping (what `trust params check FILE` reads from YAML or JSON):

    tau: 0.66                   # segment vote threshold, (0, 1]
    beta: 0.65                  # trace quorum, (0, 1)
    classes:                    # the segments of one typical trace, by auditor type
      C: {k: 3, epsilon: 0.0,  rho: 0.0,  weight: 1, count: 80}
      L: {k: 5, epsilon: 0.05, rho: 0.0,  weight: 1, count: 100}
      H: {k: 5, epsilon: 0.30, rho: 0.10, weight: 1, count: 20}
    economics: {R: 6, P: 8, p_min: 0.35, p_max: 0.5, delta: 0.2}   # epsilon_H: the H class's unless given
    horizon: {lambda: 60, T: 24, epsilon_target: 1.0e-6}

Every key is checked; an unknown or missing one, or a value outside its domain, is a
`ParameterError` naming it. `check` evaluates the three conditions (each with `holds`, its
`margin` = left side minus right side, and both sides), p_t of every class, the trace figures, the
tail bounds, and a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trust.core.theory.consensus import SegmentClass, TraceModel, human_class
from trust.core.theory.economics import Economics
from trust.core.theory.validate import open_unit, positive
from trust.errors import ParameterError

__all__ = [
    "DEFAULT_PARAMETERS",
    "CheckReport",
    "Condition",
    "Parameters",
    "check",
    "default_parameters",
]

DEFAULT_PARAMETERS: dict[str, Any] = {
    "tau": 0.66,
    "beta": 0.65,
    "classes": {
        "C": {"k": 3, "epsilon": 0.0, "rho": 0.0, "weight": 1, "count": 80},
        "L": {"k": 5, "epsilon": 0.05, "rho": 0.0, "weight": 1, "count": 100},
        "H": {"k": 5, "epsilon": 0.30, "rho": 0.10, "weight": 1, "count": 20},
    },
    "economics": {"R": 6, "P": 8, "p_min": 0.35, "p_max": 0.5, "delta": 0.2},
    "horizon": {"lambda": 60, "T": 24, "epsilon_target": 1e-6},
}
"""The network's defaults: tau, beta, p_min, p_max and the committee sizes 3 / 5 / 5 are those of
`trust.settings.ProtocolSettings` (and so of the deployed contracts); the error rates, adversarial
fraction, R, P, delta and lambda are the paper's (4.1, 4.7); the trace and the target are ours. The
trace is long (200 segments: 80 computational, 100 LLM, 20 human) because S1 cannot hold for short
ones: its gap can be at most S (1 - beta) for S equal-weight segments, and it must reach
sqrt(S / 2 ln(lambda T / epsilon_target)), so S >= ln(lambda T / epsilon_target) / (2 (1 - beta)^2),
about 86 segments here, before any error (docs/theory.md)."""

_CLASS_KEYS = {"k", "epsilon", "rho", "weight", "count"}
_ECONOMICS_KEYS = {"R", "P", "p_min", "p_max", "delta", "epsilon_H"}
_HORIZON_KEYS = {"lambda", "T", "epsilon_target"}
_TOP_KEYS = {"tau", "beta", "classes", "economics", "horizon"}


def _section(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    if key not in data:
        raise ParameterError(f"{where}: missing {key!r}")
    value = data[key]
    if not isinstance(value, Mapping):
        raise ParameterError(f"{where}{key}: expected a mapping, got {type(value).__name__}")
    return value


def _keys(data: Mapping[str, Any], allowed: set[str], required: set[str], where: str) -> None:
    unknown = sorted(set(map(str, data)) - allowed)
    if unknown:
        raise ParameterError(f"{where}: unknown keys {unknown}; expected {sorted(allowed)}")
    missing = sorted(required - set(data))
    if missing:
        raise ParameterError(f"{where}: missing keys {missing}")


@dataclass(frozen=True)
class Parameters:
    """A trace model, the economics and the horizon (arrival rate lambda over time T, target epsilon)."""

    trace: TraceModel
    economics: Economics
    lam: float
    horizon: float
    epsilon_target: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "lam", positive("horizon.lambda", self.lam))
        object.__setattr__(self, "horizon", positive("horizon.T", self.horizon))
        object.__setattr__(self, "epsilon_target", open_unit("horizon.epsilon_target", self.epsilon_target))

    @property
    def lam_t(self) -> float:
        """lambda T: the expected number of audits in the horizon (traces for S1, segments per seat
        for the payoff bounds, as the paper uses one rate for both; docs/theory.md)."""
        return self.lam * self.horizon

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Parameters:
        if not isinstance(data, Mapping):
            raise ParameterError(f"a parameter set is a mapping, got {type(data).__name__}")
        _keys(data, _TOP_KEYS, _TOP_KEYS, "parameters")
        classes_data = _section(data, "classes", "")
        if not classes_data:
            raise ParameterError("classes: at least one segment class is needed")
        classes = []
        for name, spec in classes_data.items():
            where = f"classes.{name}"
            if not isinstance(spec, Mapping):
                raise ParameterError(f"{where}: expected a mapping of {sorted(_CLASS_KEYS)}")
            _keys(spec, _CLASS_KEYS, {"k", "epsilon"}, where)
            try:
                classes.append(SegmentClass(str(name), **{key: spec[key] for key in spec}))
            except ParameterError as exc:
                raise ParameterError(str(exc).replace(f"segment class {str(name)!r}: ", f"{where}.")) from None
        trace = TraceModel(tuple(classes), data["tau"], data["beta"])
        econ = _section(data, "economics", "")
        _keys(econ, _ECONOMICS_KEYS, _ECONOMICS_KEYS - {"epsilon_H"}, "economics")
        epsilon_h = econ.get("epsilon_H")
        if epsilon_h is None:
            human = human_class(trace.classes)
            if human is None:
                raise ParameterError("economics.epsilon_H: give it, or name the human segment class 'H'")
            epsilon_h = human.epsilon
        economics = Economics(econ["R"], econ["P"], econ["p_min"], econ["p_max"], epsilon_h, econ["delta"])
        horizon = _section(data, "horizon", "")
        _keys(horizon, _HORIZON_KEYS, _HORIZON_KEYS, "horizon")
        return cls(trace, economics, horizon["lambda"], horizon["T"], horizon["epsilon_target"])

    def to_mapping(self) -> dict[str, Any]:
        """The inverse of `from_mapping` (what `trust params recommend --out` writes)."""
        e = self.economics
        return {
            "tau": self.trace.tau,
            "beta": self.trace.beta,
            "classes": {
                c.name: {"k": c.k, "epsilon": c.epsilon, "rho": c.rho, "weight": c.weight, "count": c.count}
                for c in self.trace.classes
            },
            "economics": {
                "R": e.reward,
                "P": e.penalty,
                "p_min": e.p_min,
                "p_max": e.p_max,
                "delta": e.delta,
                "epsilon_H": e.epsilon_h,
            },
            "horizon": {"lambda": self.lam, "T": self.horizon, "epsilon_target": self.epsilon_target},
        }


def default_parameters() -> Parameters:
    return Parameters.from_mapping(DEFAULT_PARAMETERS)


@dataclass(frozen=True, slots=True)
class Condition:
    """One condition: `value` (left side) against `bound` (right side); margin = value - bound."""

    holds: bool
    value: float
    bound: float

    @property
    def margin(self) -> float:
        return self.value - self.bound

    @property
    def factor(self) -> float:
        """value / bound: the safety factor (the paper's 2x margin asks for 2)."""
        return self.value / self.bound if self.bound > 0 else math.inf

    def to_json(self) -> dict[str, Any]:
        return {
            "holds": self.holds,
            "margin": self.margin,
            "value": self.value,
            "bound": self.bound,
            "factor": _finite(self.factor),
        }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class CheckReport:
    """Everything `check` computes; `to_json` is the `trust params check --json` document."""

    parameters: Parameters
    s1: Condition
    e1: Condition
    e2: Condition
    pass_probabilities: dict[str, float]
    trace: dict[str, float]
    tails: dict[str, float]

    @property
    def verdict(self) -> str:
        return "ok" if self.s1.holds and self.e1.holds and self.e2.holds else "fails"

    def to_json(self) -> dict[str, Any]:
        return {
            "conditions": {"S1": self.s1.to_json(), "E1": self.e1.to_json(), "E2": self.e2.to_json()},
            "p_t": dict(self.pass_probabilities),
            "trace": dict(self.trace),
            "tails_log10": dict(self.tails),
            "verdict": self.verdict,
        }


def check(parameters: Parameters) -> CheckReport:
    """S1, E1 and E2 with their margins, p_t per class, the trace figures and the tail bounds."""
    trace, e, lam_t = parameters.trace, parameters.economics, parameters.lam_t
    required = trace.s1_gap_required(parameters.lam, parameters.horizon, parameters.epsilon_target)
    gap = trace.gap
    s1 = Condition(gap >= required and gap > 0, gap, required)
    e1 = Condition(e.reward > e.e1_bound, e.reward, e.e1_bound)
    e2 = Condition(e.p_min >= e.e2_bound, e.p_min, e.e2_bound)
    failure = trace.failure_probability()
    ln10 = math.log(10)
    figures = {
        "segments": float(trace.segments),
        "mu_vote": trace.mu_vote,
        "W_beta": trace.threshold,
        "variance": trace.variance,
        "sigma_max2": trace.sigma_max2,
        "failure_exact": failure,
        "failure_hoeffding": math.exp(trace.hoeffding_log_bound()),
        "failure_chernoff": trace.chernoff_bound().bound,
        "failure_target_per_trace": parameters.epsilon_target / lam_t,
        "horizon_failure_union": min(1.0, lam_t * failure),
        "mu_min": e.mu_min,
        "sigma_H2": e.sigma_h2,
    }
    tails = {
        "honest_loss_printed": e.honest_loss_log_bound(lam_t) / ln10,
        "honest_loss_chernoff": e.honest_loss_chernoff_log(lam_t) / ln10,
        "honest_loss_exact_worst_reputation": e.honest_loss_exact_log(lam_t) / ln10,
        "malicious_profit_printed": e.malicious_profit_log_bound(lam_t) / ln10,
        "malicious_profit_exact_bound": e.malicious_profit_exact_log(lam_t) / ln10,
    }
    return CheckReport(parameters, s1, e1, e2, dict(trace.pass_probabilities), figures, tails)
