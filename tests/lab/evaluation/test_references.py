"""GSM8K reference solutions read as sound ProcessBench items (`trust eval references`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_stub import environment_without_models
from trust.errors import ConfigError, GraphError
from trust.lab.evaluation.references import load_references

SOUND = {
    "question": "Ann has 3 boxes of 12 pens and gives away 5 pens. How many pens are left?",
    "answer": "She has 3 * 12 = <<3*12=36>>36 pens.\nShe has 36 - 5 = <<36-5=31>>31 left.\n#### 31",
}
WRONG = {
    "question": "Bo buys 4 books at $7 each. How much does he pay?",
    "answer": "He pays 4 * 7 = <<4*7=28>>29 dollars.\n#### 29",
}


def write(tmp_path: Path, *entries: object) -> Path:
    path = tmp_path / "test.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    return path


def test_steps_are_the_lines_above_the_final_answer(tmp_path: Path) -> None:
    (item,) = load_references(write(tmp_path, SOUND))
    assert item.label == -1 and item.id == "gsm8k-test-1" and item.problem == SOUND["question"]
    assert item.steps == ("She has 3 * 12 = 36 pens.", "She has 36 - 5 = 31 left.")
    (kept,) = load_references(write(tmp_path, SOUND), keep_annotations=True)
    assert kept.steps[0] == "She has 3 * 12 = <<3*12=36>>36 pens."


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]\n", r"line 1: expected an object"),
        ('{"question": "q"}\n', r"line 1\.answer: expected the solution's lines"),
        ('{"question": "", "answer": "#### 1"}\n', r"line 1\.question: expected a non-empty string"),
        ('{"question": "q", "answer": "#### 1"}\n', r"line 1\.answer: no step above"),
        ("{oops\n", r"line 1: invalid JSON"),
        ("\n", r"no solution found"),
    ],
)
def test_bad_files_are_refused_with_the_line_and_field(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "test.jsonl"
    path.write_text(content)
    with pytest.raises(GraphError, match=message):
        load_references(path)


def test_a_missing_file_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="pass GSM8K's test.jsonl"):
        load_references(tmp_path / "nope.jsonl")


def test_cli_counts_the_solutions_tier_one_flags(tmp_path: Path) -> None:
    out = tmp_path / "labels.jsonl"
    path = write(tmp_path, SOUND, WRONG)
    run = subprocess.run(
        [sys.executable, "-m", "trust", "eval", "references", str(path), "--json", "--predictions", str(out)],
        capture_output=True,
        text=True,
        env=environment_without_models(),
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    # the second "reference" states 4 * 7 = 29: tier 1 flags its first step
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"false_alarm_rate": 0.5, "flagged": 1, "n": 2}
    rows = [json.loads(row) for row in out.read_text().splitlines()]
    assert rows == [{"id": "gsm8k-test-1", "label": -1}, {"id": "gsm8k-test-2", "label": 0}]
