"""Who&When scoring: exact agent and step matches, the prediction rule, the real split, the CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_stub import environment_without_models
from trust.auditors.tiers import computational_auditor
from trust.core.graphs.attribution import Basis
from trust.core.graphs.audit import EdgeScore
from trust.core.graphs.cig import AgentTurn, Cig, Role
from trust.core.graphs.localize import Localization, localize
from trust.errors import ConfigError, GraphError
from trust.lab.evaluation.whowhen import (
    WhoWhenItem,
    WhoWhenPrediction,
    agent_matches,
    evaluate_whowhen,
    log_files,
    predict,
    score_whowhen,
    step_matches,
)
from trust.settings import AuditSettings, SandboxSettings

TIER1 = [computational_auditor(SandboxSettings())]
ROOT = Basis.ROOT_CAUSE

DATA = Path("/work/shared/data/who_when/algorithm_generated")
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="the Who&When development split is not on this machine")


def _item(gold_agent: str, gold_step: int, agent: str | None, step: int | None) -> WhoWhenItem:
    return WhoWhenItem("x.json", gold_agent, gold_step, WhoWhenPrediction("x.json", agent, step))


def test_step_is_an_exact_index_never_a_substring() -> None:
    assert not step_matches(1, "10") and not step_matches("1", "10") and not step_matches(10, "1")
    assert step_matches(10, "10") and step_matches("10", 10) and step_matches(" 3 ", "3")
    assert not step_matches(None, "0") and not step_matches("three", "3") and not step_matches(True, 1)


def test_agent_is_exact_but_case_insensitive() -> None:
    assert agent_matches("excel_expert", "Excel_Expert") and agent_matches(" Excel_Expert ", "excel_expert")
    assert not agent_matches("Excel", "Excel_Expert") and not agent_matches("Excel_Expert_2", "Excel_Expert")
    assert not agent_matches(None, "Excel_Expert")


def test_scorer_math_on_a_hand_made_set() -> None:
    items = [
        _item("Coder", 10, "coder", 10),  # both right
        _item("Coder", 10, "Coder", 1),  # agent right, step "1" vs "10" wrong
        _item("Planner", 3, "Coder", 3),  # step right, agent wrong
        _item("Planner", 0, None, None),  # no prediction: wrong twice
    ]
    score = score_whowhen(items)
    assert (score.agent_accuracy, score.step_accuracy, score.n, score.predicted) == (0.5, 0.5, 4, 3)
    assert score.metrics() == {"agent_accuracy": 0.5, "step_accuracy": 0.5, "n": 4}
    assert score_whowhen([]).n == 0


def test_prediction_is_the_earliest_invalid_root() -> None:
    cig = Cig()
    for step, (agent, role) in enumerate(
        [("User", Role.USER), ("Coder", Role.CODER), ("Reviewer", Role.REVIEWER), ("Tester", Role.CODER)]
    ):
        cig.add_turn(AgentTurn(f"t{step}", step, agent, role, f"turn {step}"))
    for step in range(1, 4):
        cig.add_edge(f"t{step - 1}", f"t{step}")
    edges = {key: EdgeScore() for key in [("t0", "t1"), ("t1", "t2"), ("t2", "t3")]}
    audit = AuditSettings()

    def located(scores: list[float], broken: tuple[str, str] | None = None) -> Localization:
        edge_scores = dict(edges)
        if broken is not None:
            edge_scores[broken] = EdgeScore(protocol=0.0)
        return localize(
            cig,
            dict(zip(["t0", "t1", "t2", "t3"], scores, strict=True)),
            edge_scores,
            tau_node=audit.tau_node,
            tau_edge=audit.tau_edge,
        )

    # t1 fails on its own, the reviewer t2 passes it (Negligent), t3 fails too (a cascade).
    assert predict("a.json", located([1.0, 0.1, 0.9, 0.2])) == WhoWhenPrediction("a.json", "Coder", 1, ROOT)
    # An edge failure into t3 makes t3 a root too; the earliest root still wins.
    assert predict("b.json", located([1.0, 0.1, 0.9, 1.0], ("t2", "t3"))).step == 1
    assert predict("c.json", located([1.0, 1.0, 1.0, 1.0], ("t2", "t3"))) == WhoWhenPrediction(
        "c.json", "Tester", 3, ROOT
    )
    assert predict("d.json", located([1.0, 1.0, 1.0, 1.0])) == WhoWhenPrediction("d.json", None, None)
    # With the CIG, a log where no auditor found a fault still names its first reasoning turn.
    assert predict("e.json", located([1.0, 1.0, 1.0, 1.0]), cig, "a task") == WhoWhenPrediction(
        "e.json", "Coder", 1, Basis.FIRST_REASONING
    )
    assert predict("f.json", located([1.0, 0.1, 0.9, 0.2]), cig, "a task").basis is ROOT


def _write_log(folder: Path, name: str, history: list[tuple[str, str]], mistake: tuple[str, int]) -> None:
    log = {
        "question": "Which year did the Harbour Line open? Give the year.",
        "history": [{"name": agent, "role": "assistant", "content": content} for agent, content in history],
        "mistake_agent": mistake[0],
        "mistake_step": str(mistake[1]),
    }
    (folder / name).write_text(json.dumps(log))


def test_the_turn_that_first_stated_the_wrong_answer_is_predicted(tmp_path: Path) -> None:
    opening = "# Task\nWhich year did the Harbour Line open? Give the year.\n## Plan\n1. Search. 2. Check."
    # 1.json: nothing fails a check; the answer 1931 was first stated (from memory) at step 2.
    _write_log(
        tmp_path,
        "1.json",
        [
            ("Planner", opening),
            ("Search_Expert", "We should look this up in the line's history."),
            ("History_Expert", "I recall that the Harbour Line opened in **1931**."),
            ("Checker", "Confirmed: 1931."),
            ("Planner", "Final answer: **1931**. TERMINATE"),
        ],
        ("History_Expert", 2),
    )
    # 2.json: code fails when the terminal runs it at step 2, before any answer is stated.
    _write_log(
        tmp_path,
        "2.json",
        [
            ("Planner", opening),
            ("Coder", "```python\nimport requests\nprint(requests.get(url).text)\n```"),
            ("Computer_terminal", "exitcode: 1 (execution failed)\nNameError: name 'url' is not defined"),
            ("History_Expert", "Without the page, I believe it opened in **1931**."),
            ("Planner", "Final answer: **1931**. TERMINATE"),
        ],
        ("Coder", 1),
    )
    report = asyncio.run(evaluate_whowhen(log_files(tmp_path), AuditSettings(), TIER1))
    found = {item.id: item.prediction for item in report.items}
    assert found["1.json"] == WhoWhenPrediction("1.json", "History_Expert", 2, Basis.ANSWER_ORIGIN)
    assert found["2.json"] == WhoWhenPrediction("2.json", "Coder", 1, ROOT)
    assert (report.score.agent_accuracy, report.score.step_accuracy, report.score.predicted) == (1.0, 1.0, 2)
    assert found["1.json"].as_dict() == {"id": "1.json", "agent": "History_Expert", "step": 2}  # file format kept


def test_bad_input_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such folder"):
        log_files(tmp_path / "missing")
    with pytest.raises(ConfigError, match="holds no"):
        log_files(tmp_path)
    (tmp_path / "2.json").write_text('{"question": "q", "history": [{"content": 5, "name": "A", "role": "user"}]}')
    with pytest.raises(GraphError, match=r"2\.json: history\[0\]\.content"):
        asyncio.run(evaluate_whowhen(log_files(tmp_path), AuditSettings(), TIER1))
    (tmp_path / "2.json").write_text('{"question": "q", "history": [{"content": "hi", "name": "A", "role": "user"}]}')
    with pytest.raises(GraphError, match=r"2\.json: missing field 'mistake_agent'"):
        asyncio.run(evaluate_whowhen(log_files(tmp_path), AuditSettings(), TIER1))
    (tmp_path / "10.json").write_text("{not json")
    assert [p.name for p in log_files(tmp_path)] == ["2.json", "10.json"]  # numeric order


@needs_data
def test_the_real_split_is_scored() -> None:
    progress: list[str] = []
    report = asyncio.run(evaluate_whowhen(log_files(DATA), AuditSettings(), TIER1, progress=progress.append))
    score = report.score
    assert score.n == 126 == len(progress) == len(report.items)
    assert 0.0 <= score.agent_accuracy <= 1.0 and 0.0 <= score.step_accuracy <= 1.0
    assert 0 < score.predicted <= 126
    for item in report.items:  # a prediction names a real turn
        if item.prediction.step is not None:
            assert item.prediction.agent


@needs_data
@pytest.mark.slow
def test_cli_prints_one_json_line_and_writes_predictions(tmp_path: Path) -> None:
    out = tmp_path / "predictions.jsonl"
    env = environment_without_models()  # tier 1 only: tier 2 is TRUST_AUDITOR_LLM__*, not TRUST_LLM__*
    run = subprocess.run(
        [sys.executable, "-m", "trust", "eval", "whowhen", str(DATA), "--json", "--predictions", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 1
    metrics = json.loads(lines[0])
    assert set(metrics) == {"agent_accuracy", "step_accuracy", "n"} and metrics["n"] == 126
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 126 and all(set(row) == {"id", "agent", "step"} for row in rows)
    assert rows[0]["id"] == "1.json"
    gold = {p.name: json.loads(p.read_text()) for p in DATA.glob("*.json")}
    hits = sum(row["step"] is not None and str(row["step"]) == gold[row["id"]]["mistake_step"] for row in rows)
    assert hits / 126 == pytest.approx(metrics["step_accuracy"])


def test_cli_names_a_missing_folder(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "trust", "eval", "whowhen", str(tmp_path / "nope"), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 1 and run.stdout == ""
    assert "nope: no such folder" in " ".join(run.stderr.split())
