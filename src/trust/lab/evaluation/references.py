"""GSM8K reference solutions as sound ProcessBench items: the tier-1 checks' false-alarm rate on
solutions known to be right (`trust eval references`).

ProcessBench's development split is small, and a check tuned on it could buy recall with false
alarms that its 193 sound solutions do not show. GSM8K's test split (Cobbe et al., 2021) holds
1,319 worked solutions written and checked by people, every one correct: a step the tier-1 checks
fail there is a false alarm. Each line of its JSONL file is {"question", "answer"}; the answer is
one step a line, then "#### N" (the final answer). The steps are the lines before "#### "; the
calculator annotations "<<48/2=24>>" are removed by default, so the checks read the prose as they
read a model's solution (`keep_annotations` leaves them, and the arithmetic check reads them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from trust.core.maths.text import ANNOTATION
from trust.errors import ConfigError, GraphError
from trust.lab.evaluation.processbench import MAX_FILE_BYTES, ProcessBenchItem

__all__ = ["FINAL_ANSWER", "load_references"]

FINAL_ANSWER: Final = "#### "
"""What starts the line of a GSM8K answer that gives the final number; the steps are above it."""


def _steps(answer: str, keep_annotations: bool) -> list[str]:
    steps = []
    for line in answer.split("\n"):
        if line.startswith(FINAL_ANSWER):
            break
        text = line if keep_annotations else ANNOTATION.sub("", line)
        if text.strip():
            steps.append(text.strip())
    return steps


def load_references(
    path: Path, *, keep_annotations: bool = False, max_bytes: int = MAX_FILE_BYTES
) -> list[ProcessBenchItem]:
    """Reads a GSM8K JSONL file as sound ProcessBench items (label -1, id "gsm8k-test-<line>"); an
    error names the file, the line and the field."""
    if not path.is_file():
        raise ConfigError(f"{path}: no such file; pass GSM8K's test.jsonl")
    size = path.stat().st_size
    if size > max_bytes:
        raise GraphError(f"{path}: {size:,} bytes, above the limit of {max_bytes:,}")
    items = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise GraphError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}: line {number}"
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GraphError(f"{where}: invalid JSON at column {exc.colno}: {exc.msg}") from None
        if not isinstance(entry, dict):
            raise GraphError(f"{where}: expected an object with 'question' and 'answer', got {type(entry).__name__}")
        question, answer = entry.get("question"), entry.get("answer")
        if not isinstance(question, str) or not question.strip():
            raise GraphError(f"{where}.question: expected a non-empty string, got {question!r}")
        if not isinstance(answer, str) or FINAL_ANSWER not in answer:
            raise GraphError(f"{where}.answer: expected the solution's lines, then '{FINAL_ANSWER}N'")
        steps = _steps(answer, keep_annotations)
        if not steps:
            raise GraphError(f"{where}.answer: no step above '{FINAL_ANSWER}N'")
        items.append(ProcessBenchItem(f"gsm8k-test-{number}", question, tuple(steps), -1))
    if not items:
        raise GraphError(f"{path}: no solution found; expected one JSON object a line")
    return items
