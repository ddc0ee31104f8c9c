"""Agent logs: the project's format, the Who&When importer, bad input, and the edge inference rule."""

from __future__ import annotations

import copy
import json
from typing import Any

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.graphs.cig_strategies import APPLES_LOG, who_when_dir, who_when_files
from trust.core.graphs.agent_log import (
    FORMAT_NAME,
    WHO_WHEN,
    AgentLog,
    AgentSpec,
    LogLimits,
    LogTurn,
    OverlapRule,
    build_cig,
    detect_format,
    distinctive_tokens,
    infer_role,
    log_to_json,
    parse_agent_log,
    parse_log,
    parse_who_when,
)
from trust.core.graphs.cig import EdgeOrigin, ReplyContract, Role
from trust.errors import GraphError

# ---------------------------------------------------------------------------------------------- Who&When


def test_every_who_when_log_imports_into_an_acyclic_cig() -> None:
    files = who_when_files()
    assert len(files) == 126
    for path in files:
        raw = json.loads(path.read_text())
        log = parse_log(raw)
        assert log.source == WHO_WHEN
        assert [turn.agent for turn in log.turns] == [entry["name"] for entry in raw["history"]]
        assert [turn.content for turn in log.turns] == [entry["content"] for entry in raw["history"]]
        assert log.task == raw["question"] and log.turns[0].input == raw["question"]
        assert log.label is not None and log.label.step == int(raw["mistake_step"])
        assert log.label.agent == raw["mistake_agent"] and log.is_correct is raw["is_correct"]
        assert set(raw["system_prompt"]) <= {spec.name for spec in log.agents}
        cig = build_cig(log)
        assert len(cig) == len(raw["history"])
        assert nx.is_directed_acyclic_graph(cig.graph)
        for step in range(1, len(cig)):
            assert cig.edge_origin(f"t{step - 1}", f"t{step}") is EdgeOrigin.SEQUENCE
        for turn in cig.turns():
            if turn.agent == "Computer_terminal":
                assert turn.role is Role.TOOL


def test_who_when_10_links_reused_numbers_and_infers_roles() -> None:
    log = parse_log(json.loads((who_when_dir() / "10.json").read_text()))
    assert log.label is not None and (log.label.agent, log.label.step) == ("Validation_Expert", 5)
    assert log.role_of("Validation_Expert") is Role.REVIEWER
    assert log.role_of("Computer_terminal") is Role.TOOL
    assert log.role_of("Geography_Expert") is Role.EXPERT
    cig = build_cig(log)
    # Step 7 re-sends the populations 737015 and 4965 that step 5 produced (step 6 only echoes an error).
    assert cig.edge_origin("t5", "t7") is EdgeOrigin.OVERLAP
    assert cig.parents("t7") == ["t5", "t6"]


def _who_when(**changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "is_correct": False,
        "question": "What is 6 * 7?",
        "history": [
            {"content": "Let me compute 6 * 7.", "role": "assistant", "name": "Math_Expert"},
            {
                "content": "exitcode: 0 (execution succeeded)\nCode output: 42",
                "role": "user",
                "name": "Computer_terminal",
            },
            {"content": "Verified: 42. TERMINATE", "role": "user", "name": "Verification_Expert"},
        ],
        "mistake_agent": "Math_Expert",
        "mistake_step": "0",
        "mistake_reason": "none really",
        "system_prompt": {"Math_Expert": "## Your role\nMath", "Verification_Expert": "## Your role\nChecks"},
    }
    raw.update(changes)
    return raw


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda raw: raw["history"][1].update(content=4), r"history\[1\]\.content: expected a string, got integer"),
        (lambda raw: raw["history"][2].pop("name"), r"history\[2\]: missing field 'name'"),
        (lambda raw: raw["history"][0].update(name=""), r"history\[0\]\.name: must not be empty"),
        (lambda raw: raw["history"].append("hello"), r"history\[3\]: expected an object, got string"),
        (lambda raw: raw.update(history={}), "history: expected an array, got object"),
        (lambda raw: raw.update(history=[]), "history: the log has no turns"),
        (lambda raw: raw.pop("question"), "missing field 'question'"),
        (lambda raw: raw.update(mistake_step="two"), "mistake_step: expected a 0-based index"),
        (lambda raw: raw.update(mistake_step="3"), r"mistake_step: 3 is outside history \(0..2\)"),
        (lambda raw: raw.update(is_correct="no"), "is_correct: expected a boolean, got string"),
        (lambda raw: raw.update(system_prompt=[]), "system_prompt: expected an object, got array"),
        (lambda raw: raw["system_prompt"].update(X=1), "system_prompt.X: expected a string, got integer"),
    ],
)
def test_bad_who_when_input_names_the_field(mutate: Any, message: str) -> None:
    raw = _who_when()
    mutate(raw)
    with pytest.raises(GraphError, match=message):
        parse_log(raw)


def test_who_when_without_labels_is_still_a_log() -> None:
    raw = _who_when()
    for key in ("mistake_agent", "mistake_step", "mistake_reason", "is_correct"):
        raw.pop(key)
    log = parse_who_when(raw)
    assert log.label is None and log.is_correct is None and len(log.turns) == 3


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("Computer_terminal", Role.TOOL),
        ("Verification_Expert", Role.REVIEWER),
        ("DataVerification_Expert", Role.REVIEWER),
        ("VerificationExpert", Role.REVIEWER),
        ("Validation_Expert", Role.REVIEWER),
        ("CodeReviewer", Role.REVIEWER),
        ("Critic", Role.REVIEWER),
        ("QualityChecker", Role.REVIEWER),
        ("PythonDebugging_Expert", Role.CODER),
        ("Task_Planner", Role.PLANNER),
        ("Summarizer", Role.AGGREGATOR),
        ("Geography_Expert", Role.EXPERT),
        ("ISBNCheckDigit_Expert", Role.EXPERT),
        ("Reviews_Expert", Role.EXPERT),
    ],
)
def test_roles_are_inferred_from_names(name: str, role: Role) -> None:
    assert infer_role(name) is role


# ---------------------------------------------------------------------------------------------- our format


def test_the_project_format_parses_builds_and_round_trips() -> None:
    log = parse_log(APPLES_LOG)
    assert log.source == FORMAT_NAME and log.label is None
    assert [spec.role for spec in log.agents] == [Role.USER, Role.PLANNER, Role.CODER, Role.REVIEWER, Role.AGGREGATOR]
    assert log.turns[1].contract == ReplyContract("json", ("spoiled", "remaining"))
    assert log.turns[1].timestamp == "2025-01-31T12:00:00+00:00"
    assert log.turns[0].references == () and log.turns[4].references is None
    cig = build_cig(log)
    assert [(e.source, e.target, e.origin) for e in cig.edges()] == [
        ("t0", "t1", EdgeOrigin.REFERENCE),
        ("t1", "t2", EdgeOrigin.REFERENCE),
        ("t2", "t3", EdgeOrigin.REFERENCE),
        ("t3", "t4", EdgeOrigin.SEQUENCE),
    ]
    assert cig.turn("t0").input == APPLES_LOG["task"]  # a turn without parents starts from the task
    assert parse_log(json.loads(json.dumps(log_to_json(log)))) == log


def test_references_replace_inference_turn_by_turn() -> None:
    log = AgentLog(
        task="",
        agents=(AgentSpec("A", Role.EXPERT), AgentSpec("B", Role.EXPERT)),
        turns=(
            LogTurn("A", "value_one 1234 5678"),
            LogTurn("B", "unrelated"),
            LogTurn("A", "restates value_one 1234 5678", references=()),
            LogTurn("B", "again value_one 1234 5678"),
        ),
    )
    cig = build_cig(log)
    assert cig.parents("t2") == []  # explicit: answers nobody, despite the overlap
    assert cig.parents("t3") == ["t2"]  # the tokens were last produced by t2, the previous turn


def _ours(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(APPLES_LOG)
    raw.update(changes)
    return raw


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda raw: raw.update(version=2), "version: 2 is not supported; this build reads version 1"),
        (lambda raw: raw.update(version=True), "version: True is not supported"),
        (lambda raw: raw.pop("version"), "missing field 'version'"),
        (lambda raw: raw.update(extra=1), r"log: unknown field\(s\) 'extra'"),
        (lambda raw: raw.update(task=5), "task: expected a string, got integer"),
        (lambda raw: raw.update(agents="x"), "agents: expected an array, got string"),
        (lambda raw: raw["agents"][1].update(role="wizard"), r"agents\[1\]\.role: unknown role 'wizard'"),
        (lambda raw: raw["agents"][1].pop("role"), r"agents\[1\]: missing field 'role'"),
        (lambda raw: raw["agents"].append({"name": "Coder", "role": "coder"}), "declared twice"),
        (lambda raw: raw["agents"][0].update(colour="red"), r"agents\[0\]: unknown field\(s\) 'colour'"),
        (lambda raw: raw.update(turns=[]), "turns: the log has no turns"),
        (lambda raw: raw["turns"][2].update(agent="Mallory"), r"turns\[2\]\.agent: 'Mallory' is not declared"),
        (lambda raw: raw["turns"][2].update(content=None), r"turns\[2\]\.content: expected a string, got null"),
        (lambda raw: raw["turns"][2].pop("content"), r"turns\[2\]: missing field 'content'"),
        (lambda raw: raw["turns"][2].update(refs=[1]), r"turns\[2\]: unknown field\(s\) 'refs'"),
        (lambda raw: raw["turns"][2].update(references=[2]), r"turns\[2\]\.references\[0\]: 2 is not an earlier"),
        (lambda raw: raw["turns"][2].update(references=[-1]), r"references\[0\]: -1 is not an earlier turn"),
        (lambda raw: raw["turns"][2].update(references=[1, 1]), r"references\[1\]: turn 1 is referenced twice"),
        (lambda raw: raw["turns"][2].update(references=[True]), r"references\[0\]: expected a turn index"),
        (lambda raw: raw["turns"][2].update(references="1"), r"turns\[2\]\.references: expected an array"),
        (lambda raw: raw["turns"][2].update(timestamp="noon"), r"turns\[2\]\.timestamp: 'noon' is not an ISO 8601"),
        (
            lambda raw: raw["turns"][2].update(timestamp="2025-01-31T11:00:00+00:00"),
            "is earlier than the turn before it",
        ),
        (lambda raw: raw["turns"][2].update(timestamp="2025-01-31T13:00:00"), "mixes timestamps"),
        (lambda raw: raw["turns"][1].update(expects={"format": "xml"}), r"expects\.format: 'xml' is not a reply"),
        (
            lambda raw: raw["turns"][1].update(expects={"format": "text", "required": ["a"]}),
            r"expects\.required: required fields need format 'json'",
        ),
        (lambda raw: raw["turns"][1].update(expects={"format": "json", "schema": {}}), "unknown field"),
    ],
)
def test_bad_project_logs_name_the_field(mutate: Any, message: str) -> None:
    raw = _ours()
    mutate(raw)
    with pytest.raises(GraphError, match=message):
        parse_agent_log(raw)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], r"unrecognised agent log \(an empty array\)"),
        ({"format": "other"}, "'other' is not an agent-log format"),
        ({"turns": []}, "unrecognised agent log"),
    ],
)
def test_unknown_formats_are_refused(data: object, message: str) -> None:
    with pytest.raises(GraphError, match=message):
        detect_format(data)


def test_size_limits_are_enforced() -> None:
    with pytest.raises(GraphError, match="turns: 5 turns, above the limit of 4"):
        parse_log(APPLES_LOG, LogLimits(max_turns=4))
    with pytest.raises(GraphError, match=r"turns\[1\]\.content: 9\d characters, above the limit of 60"):
        parse_log(APPLES_LOG, LogLimits(max_turn_chars=60, max_total_chars=10_000))
    with pytest.raises(GraphError, match="passes 200 characters in all"):
        parse_log(APPLES_LOG, LogLimits(max_total_chars=200))
    with pytest.raises(GraphError, match="agents: 5 agents, above the limit of 2"):
        parse_log(APPLES_LOG, LogLimits(max_agents=2))
    with pytest.raises(GraphError, match=r"references: 2 references, above the limit of 1"):
        parse_log(
            _ours(turns=[*APPLES_LOG["turns"][:2], {**APPLES_LOG["turns"][2], "references": [0, 1]}]),
            LogLimits(max_references=1),
        )
    with pytest.raises(GraphError, match="history: 3 turns, above the limit of 2"):
        parse_log(_who_when(), LogLimits(max_turns=2))


# ---------------------------------------------------------------------------------------------- inference


def test_distinctive_tokens() -> None:
    text = (
        "The population of Seattle is 737,015 and Colville has 4,965. Run population_seattle at "
        "https://data.census.gov/x with 'Street Address' and ../data/file.csv: 3.50, 7, camelCase, Step 2."
    )
    assert distinctive_tokens(text) == [
        "seattle",
        "737015",
        "colville",
        "4965",
        "population_seattle",
        "https://data.census.gov/x",
        "street address",
        "../data/file.csv",
        "3.5",
        "camelCase",
        "step",  # after a comma, so taken for a name: the rule is lexical
    ]
    assert distinctive_tokens(text, limit=2) == ["seattle", "737015"]


def _log(*contents: str, task: str = "") -> AgentLog:
    agents = (AgentSpec("A", Role.EXPERT), AgentSpec("B", Role.REVIEWER))
    return AgentLog(task, agents, tuple(LogTurn("AB"[i % 2], text) for i, text in enumerate(contents)))


def test_overlap_needs_min_shared_tokens_from_the_last_producer() -> None:
    two = build_cig(_log("x = 1234 and 5678", "noise", "noise again", "we use 1234 and 5678"))
    assert two.parents("t3") == ["t0", "t2"] and two.edge_origin("t0", "t3") is EdgeOrigin.OVERLAP
    one = build_cig(_log("x = 1234 and 5678", "noise", "noise again", "we use 1234 only"))
    assert one.parents("t3") == ["t2"]
    # t2 restates the numbers, so t3 read them from t2 (its previous turn), not from t0.
    relay = build_cig(_log("x = 1234 and 5678", "noise", "so 1234 and 5678", "we use 1234 and 5678", "a", "b", "c"))
    assert relay.parents("t3") == ["t2"] and relay.parents("t2") == ["t0", "t1"]


def test_overlap_ignores_task_tokens_common_tokens_and_old_turns() -> None:
    task = build_cig(_log("1234 5678", "a", "b", "1234 5678", task="numbers 1234 and 5678"))
    assert task.parents("t3") == ["t2"]
    turns = ["shared_name 9999 value", *[f"filler {i}" for i in range(40)], "shared_name 9999"]
    far = build_cig(_log(*turns), OverlapRule(window=32))
    assert far.parents(f"t{len(turns) - 1}") == [f"t{len(turns) - 2}"]
    near = build_cig(_log(*turns), OverlapRule(window=64))
    assert near.parents(f"t{len(turns) - 1}") == ["t0", f"t{len(turns) - 2}"]
    common = build_cig(_log("aa_1 bb_2", "aa_1 bb_2 x", "aa_1 bb_2 y", "z", "aa_1 bb_2"))
    assert common.parents("t4") == ["t3"]  # in 4 of 5 turns: not distinctive


def test_overlap_rule_is_validated() -> None:
    with pytest.raises(GraphError, match="must be >= 1"):
        OverlapRule(window=0)
    with pytest.raises(GraphError, match="common_share"):
        OverlapRule(common_share=0)


_WORDS = st.sampled_from(["alpha_1", "beta_2", "1234", "5678", "Paris", "the", "and", "9999", "x_y_z"])


@given(st.lists(st.lists(_WORDS, max_size=8).map(" ".join), min_size=1, max_size=25), st.integers(0, 3))
def test_inferred_edges_follow_the_rule(contents: list[str], max_parents: int) -> None:
    rule = OverlapRule(window=8, max_parents=max_parents)
    cig = build_cig(_log(*contents), rule)
    for index in range(1, len(contents)):
        parents = [int(p[1:]) for p in cig.parents(f"t{index}")]
        assert index - 1 in parents
        overlap = [p for p in parents if p != index - 1]
        assert len(overlap) <= max_parents
        assert all(index - rule.window <= p < index - 1 for p in overlap)
        assert all(cig.edge_origin(f"t{p}", f"t{index}") is EdgeOrigin.OVERLAP for p in overlap)
    assert nx.is_directed_acyclic_graph(cig.graph)
