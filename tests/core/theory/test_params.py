"""Parameter sets: reading, checking against S1, E1 and E2, and recommending."""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from typing import Any

import pytest

from trust.core.theory.consensus import SegmentClass, TraceModel
from trust.core.theory.params import DEFAULT_PARAMETERS, Parameters, check, default_parameters
from trust.core.theory.recommend import recommend, recommend_committees, recommend_economics
from trust.errors import ParameterError
from trust.settings import ProtocolSettings


def _with(path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(DEFAULT_PARAMETERS)
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return data


def test_the_defaults_are_the_protocols_and_pass() -> None:
    protocol = ProtocolSettings()
    parameters = default_parameters()
    assert parameters.trace.tau == float(protocol.tau) and parameters.trace.beta == float(protocol.beta)
    assert (parameters.economics.p_min, parameters.economics.p_max) == (float(protocol.p_min), float(protocol.p_max))
    assert [c.k for c in parameters.trace.classes] == [protocol.committee_size(t) for t in (1, 2, 3)]
    report = check(parameters)
    assert report.verdict == "ok"
    document = report.to_json()
    assert set(document["conditions"]) == {"S1", "E1", "E2"}
    for condition in document["conditions"].values():
        assert isinstance(condition["holds"], bool) and isinstance(condition["margin"], float)
    assert document["p_t"]["H"] == pytest.approx(0.3906734328)
    assert document["verdict"] == "ok"
    assert Parameters.from_mapping(parameters.to_mapping()).to_mapping() == parameters.to_mapping()


def test_the_papers_first_p_min_fails_e2_by_its_margin() -> None:
    report = check(Parameters.from_mapping(_with("economics.p_min", 0.2)))
    assert not report.e2.holds and report.e2.margin == pytest.approx(0.2 - 1 / 3)
    assert report.verdict == "fails" and report.s1.holds and report.e1.holds


def test_s1_is_checked_with_its_own_numbers() -> None:
    short = _with("classes", {"H": {"k": 5, "epsilon": 0.3, "rho": 0.1, "count": 20}})
    report = check(Parameters.from_mapping(short))
    trace = report.parameters.trace
    assert report.s1.value == pytest.approx(20 * 0.3906734328 - 0.65 * 20)  # negative: beta above p_H
    assert report.s1.bound == pytest.approx(math.sqrt(20 / 2 * math.log(60 * 24 / 1e-6)))
    assert not report.s1.holds and report.verdict == "fails"
    assert report.trace["failure_exact"] == pytest.approx(trace.failure_probability())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_with("tau", 1.5), "tau"),
        (_with("beta", 1.0), "beta"),
        (_with("beta", ...), "missing keys \\['beta'\\]"),
        (_with("gamma", 0.1), "unknown keys \\['gamma'\\]"),
        (_with("classes.H.k", 0), "classes.H.k"),
        (_with("classes.H.epsilon", -0.1), "classes.H.epsilon"),
        (_with("classes.H.rho", float("nan")), "classes.H.rho"),
        (_with("classes.H.colour", "red"), "classes.H: unknown keys"),
        (_with("classes.H", 5), "classes.H: expected a mapping"),
        (_with("classes", {}), "at least one segment class"),
        (_with("economics.R", -6), "R"),
        (_with("economics.P", "eight"), "P = 'eight'"),
        (_with("economics.p_max", ...), "economics: missing keys \\['p_max'\\]"),
        (_with("horizon.lambda", 0), "horizon.lambda"),
        (_with("horizon.epsilon_target", 0), "horizon.epsilon_target"),
        (_with("economics.delta", 1.2), "delta"),
    ],
)
def test_bad_parameter_files_name_the_parameter(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        Parameters.from_mapping(data)


def test_epsilon_h_comes_from_the_human_class_unless_given() -> None:
    assert default_parameters().economics.epsilon_h == 0.30
    given = Parameters.from_mapping(_with("economics.epsilon_H", 0.25))
    assert given.economics.epsilon_h == 0.25
    no_human = _with("classes", {"L": {"k": 5, "epsilon": 0.05, "count": 300}})
    with pytest.raises(ParameterError, match="epsilon_H"):
        Parameters.from_mapping(no_human)


CLASSES = [
    SegmentClass("C", 3, 0.0, 0.0, 1, 160),
    SegmentClass("L", 3, 0.05, 0.0, 1, 200),
    SegmentClass("H", 3, 0.30, 0.10, 1, 40),
]


def test_the_recommendation_satisfies_every_condition_with_the_factor() -> None:
    result = recommend(CLASSES, 0.66, lam=60, horizon=24, epsilon_target=1e-4)
    report = result.report
    assert report.verdict == "ok"
    for condition in (report.s1, report.e1, report.e2):
        assert condition.factor >= 2.0
    assert all(c.k >= 3 for c in result.parameters.trace.classes)
    assert result.seats_per_trace == sum(c.k * c.count for c in result.parameters.trace.classes)
    # The committees are minimal in the greedy's sense: one seat fewer anywhere breaks S1 at beta_min.
    trace = recommend_committees(CLASSES, 0.66, lam=60, horizon=24, epsilon_target=1e-4)
    assert 0.55 <= trace.beta <= 0.95
    assert trace.gap >= 2 * trace.s1_gap_required(60, 24, 1e-4)


def test_committees_grow_until_s1_holds() -> None:
    classes = [
        SegmentClass("C", 3, 0.0, 0.0, 1, 800),
        SegmentClass("L", 3, 0.05, 0.0, 1, 1000),
        SegmentClass("H", 3, 0.30, 0.0, 1, 200),
    ]
    low = recommend_committees(classes, 0.66, lam=60, horizon=24, epsilon_target=1e-6, beta_min=0.55)
    assert [c.k for c in low.classes] == [3, 3, 3]  # already enough at a low trace quorum
    strict = recommend_committees(classes, 0.66, lam=60, horizon=24, epsilon_target=1e-6, beta_min=0.83)
    assert strict.gap >= 2 * strict.s1_gap_required(60, 24, 1e-6)
    sizes = {c.name: c.k for c in strict.classes}
    assert sizes["C"] == 3  # deterministic checkers gain nothing from more seats
    grown = [c for c in strict.classes if c.k > 3]
    assert grown
    # Back at 3 seats, the grown class leaves S1 unmet at beta_min.
    back = tuple(replace(c, k=3) for c in strict.classes)
    assert TraceModel(back, 0.66, 0.83).gap < 2 * strict.s1_gap_required(60, 24, 1e-6)
    with pytest.raises(ParameterError, match="more seats no longer help"):
        recommend_committees(classes, 0.66, lam=60, horizon=24, epsilon_target=1e-6, beta_min=0.85)


def test_impossible_targets_say_what_would_be_needed() -> None:
    short = [SegmentClass("L", 3, 0.05, 0.0, 1, 20)]
    with pytest.raises(ParameterError, match="segments of weight 1 would be needed"):
        recommend_committees(short, 0.66, lam=60, horizon=24, epsilon_target=1e-6)
    hopeless = [SegmentClass("H", 3, 0.3, 0.6, 1, 2000)]  # adversaries alone block a 2/3 quorum
    with pytest.raises(ParameterError, match="more seats no longer help"):
        recommend_committees(hopeless, 0.66, lam=60, horizon=24, epsilon_target=1e-6, k_max=15)


def test_economics_recommendation_is_the_cheapest_reward_on_the_grid() -> None:
    econ = recommend_economics(0.30, 0.2, 8.0)
    assert econ.reward > 2 * econ.e1_bound - 1e-9 and econ.p_min >= 2 * econ.e2_bound - 1e-9
    assert econ.p_min < econ.p_max
    for p_max in (0.6, 0.7, 0.8, 1.0):  # no other p_max on the grid allows a smaller R
        room = p_max - 0.05 - 0.4
        assert max(2 * 0.3 / 0.7 * 8 * p_max, 0.4 * 8 * p_max / room) >= econ.reward - 0.01
    with pytest.raises(ParameterError, match="p_max must exceed"):
        recommend_economics(0.30, 0.49, 8.0)
