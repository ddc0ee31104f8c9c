"""ProcessBench scoring: the metric, the earliest-wrong-step prediction, loading errors, the real file, the CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_stub import environment_without_models
from trust.auditors.checks.arithmetic import ArithmeticCheck
from trust.auditors.computational import ComputationalAuditor
from trust.errors import ConfigError, GraphError
from trust.lab.evaluation.processbench import (
    ProcessBenchItem,
    evaluate_processbench,
    judge_steps,
    load_processbench,
    predict,
    score_processbench,
    step_verdicts,
    tier1_auditor,
)
from trust.settings import AuditSettings

DATA = Path("/work/shared/data/processbench/gsm8k.json")
needs_data = pytest.mark.skipif(not DATA.is_file(), reason="the ProcessBench development file is not on this machine")
TAU = AuditSettings().tau_node


def test_scorer_math_on_a_hand_made_set() -> None:
    # (predicted, gold): two erroneous items (one exact hit, one off by one), three correct ones (two -1).
    pairs = [(2, 2), (1, 2), (-1, -1), (-1, -1), (0, -1)]
    score = score_processbench(pairs)
    assert score.error_acc == 0.5 and score.correct_acc == pytest.approx(2 / 3)
    assert score.f1 == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert (score.n, score.n_error, score.n_correct) == (5, 2, 3)
    assert score.metrics() == {"error_acc": 0.5, "correct_acc": pytest.approx(2 / 3), "f1": score.f1, "n": 5}


def test_index_must_be_exact_and_f1_is_zero_when_one_side_is() -> None:
    assert score_processbench([(1, 10), (10, 1)]).error_acc == 0.0
    assert score_processbench([(-1, 3), (-1, -1)]).f1 == 0.0  # saying "no error" everywhere scores nothing
    assert score_processbench([(3, 3), (2, -1)]).f1 == 0.0
    assert score_processbench([]).n == 0


def test_earliest_step_with_a_wrong_calculation() -> None:
    item = ProcessBenchItem(
        "t-1",
        "Ann has 12 apples and buys 3 bags of 4. How many apples?",
        (
            "She buys 3 * 4 = 12 apples.",
            "Now she has 12 + 12 = 25 apples.",  # wrong
            "Half of them is 25 / 2 = 12.5 apples.",
        ),
        1,
    )
    assert predict(item, tau_node=TAU) == 1
    (first, second) = judge_steps(item, tau_node=TAU)
    assert not first.wrong and second.wrong_operations == ("12 + 12 = 25",)
    assert [j.wrong for j in judge_steps(item, tau_node=TAU, stop_at_first=False)] == [False, True, False]
    correct = ProcessBenchItem("t-2", "2 + 2?", ("We add: 2 + 2 = 4.", "The answer is 4."), -1)
    assert predict(correct, tau_node=TAU) == -1


def test_auditors_judge_steps_too() -> None:
    # "10 x 3 = 31" is arithmetic the tier-1 check reads; with the operation check off, it alone decides.
    item = ProcessBenchItem("t-3", "q", ("First 10 x 3 = 31.", "Then done."), 0)
    auditors = [ComputationalAuditor([ArithmeticCheck()])]
    verdicts = asyncio.run(step_verdicts(item, auditors))
    assert predict(item, tau_node=TAU, verdicts=verdicts, check_operations=False) == 0
    report = asyncio.run(evaluate_processbench([item], tau_node=TAU, auditors=auditors, check_operations=False))
    assert report.predictions[0][1] == 0
    with pytest.raises(ConfigError, match="nothing judges the steps"):
        asyncio.run(evaluate_processbench([item], tau_node=TAU, check_operations=False))


def test_tier1_finds_a_number_from_nowhere_and_a_wrong_rewrite() -> None:
    # Every calculation holds: only the tier-1 checks of the steps find the first wrong step.
    invented = ProcessBenchItem(
        "t-4",
        "Mia reads 12 pages a day for a week, then 5 more pages. How many pages?",
        ("In a week she reads 12 * 7 = 84 pages.", "With the rest: 84 + 9 = 93 pages.", "The answer is 93."),
        1,
    )
    rewritten = ProcessBenchItem(
        "t-5",
        "Twice a number plus 10 is 100. What is the number?",
        ("We write 2n + 10 = 100.", "Then 2n = 110.", "So n = 110 / 2 = 55."),
        1,
    )
    sound = ProcessBenchItem(
        "t-6",
        "Mia reads 12 pages a day for a week, then 5 more pages. How many pages?",
        ("In a week she reads 12 * 7 = 84 pages.", "With the rest: 84 + 5 = 89 pages.", "The answer is 89."),
        -1,
    )
    items = [invented, rewritten, sound]
    assert [predict(item, tau_node=TAU) for item in items] == [-1, -1, -1]  # the operation check alone
    report = asyncio.run(evaluate_processbench(items, tau_node=TAU, auditors=[tier1_auditor()]))
    assert [label for _, label in report.predictions] == [1, 1, -1]
    assert report.score.f1 == 1.0


def test_cli_refuses_an_unknown_method(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps([{"id": "a", "problem": "p", "steps": ["1 + 1 = 2"], "label": -1}]))
    run = subprocess.run(
        [sys.executable, "-m", "trust", "eval", "processbench", str(path), "--method", "oracle"],
        capture_output=True,
        text=True,
        env=environment_without_models(),
        timeout=120,
        check=False,
    )
    message = " ".join(run.stderr.replace("│", " ").split())
    said = "--method 'oracle': `trust eval processbench` takes one of tiers, tier1, critic, combined"
    assert run.returncode != 0 and said in message


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{}", "expected a JSON list"),
        ("[1]", r"item \[0\]: expected an object"),
        ('[{"id": "a", "problem": "p", "steps": ["x"]}]', r"item \[0\]: missing field 'label'"),
        ('[{"id": "a", "problem": "p", "steps": ["x"], "label": 1}]', r"item 'a'\.label: expected -1 or a step"),
        ('[{"id": "a", "problem": "p", "steps": ["x"], "label": "0"}]', r"item 'a'\.label"),
        ('[{"id": "a", "problem": "p", "steps": [" "], "label": 0}]', r"item 'a'\.steps\[0\]"),
        ('[{"id": "a", "problem": 3, "steps": ["x"], "label": 0}]', r"item 'a'\.problem"),
        (
            '[{"id": "a", "problem": "p", "steps": ["x"], "label": 0}, {"id": "a", "problem": "p", "steps": ["x"], '
            '"label": 0}]',
            "appears twice",
        ),
        ("[{", "invalid JSON at line 1"),
    ],
)
def test_malformed_files_name_the_item_and_field(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bench.json"
    path.write_text(content)
    with pytest.raises(GraphError, match=message) as caught:
        load_processbench(path)
    assert str(path) in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_processbench(tmp_path / "nope.json")
    with pytest.raises(ConfigError, match="is a folder"):
        load_processbench(tmp_path)


@needs_data
def test_the_real_file_is_scored() -> None:
    items = load_processbench(DATA)
    report = asyncio.run(evaluate_processbench(items, tau_node=TAU))
    score = report.score
    assert score.n == 400 and score.n_error + score.n_correct == 400
    for value in (score.error_acc, score.correct_acc, score.f1):
        assert 0.0 <= value <= 1.0
    assert all(-1 <= label < len(item.steps) for item, label in report.predictions)


@needs_data
@pytest.mark.slow
def test_cli_prints_one_json_line_and_writes_predictions(tmp_path: Path) -> None:
    out = tmp_path / "labels.jsonl"
    env = environment_without_models()  # tier 1 only: tier 2 is TRUST_AUDITOR_LLM__*, not TRUST_LLM__*
    run = subprocess.run(
        [sys.executable, "-m", "trust", "eval", "processbench", str(DATA), "--json", "--predictions", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    (line,) = run.stdout.strip().splitlines()
    metrics = json.loads(line)
    assert set(metrics) == {"error_acc", "correct_acc", "f1", "n"} and metrics["n"] == 400
    rows = [json.loads(row) for row in out.read_text().splitlines()]
    assert len(rows) == 400 and all(set(row) == {"id", "label"} for row in rows)
    gold = {entry["id"]: entry["label"] for entry in json.loads(DATA.read_text())}
    rescored = score_processbench((row["label"], gold[row["id"]]) for row in rows)
    assert rescored.metrics() == pytest.approx(metrics)
