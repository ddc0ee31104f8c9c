"""Who&When's three judging methods and `combined`: answers parsed, control flow against a real
OpenAI-compatible HTTP server that answers deterministically, the cache resuming a stopped run."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tests.lab.evaluation.judges.conftest import stub_client, who_when_log
from tests.openai_stub import OpenAiStub
from trust.auditors.tiers import computational_auditor
from trust.errors import GraphError
from trust.lab.evaluation.judges.cache import AnswerCache
from trust.lab.evaluation.judges.chat import JudgeChat
from trust.lab.evaluation.judges.whowhen import (
    BINARY_SEARCH_SYSTEM,
    STEP_SYSTEM,
    JudgedLog,
    judge_whowhen,
    load_case,
    parse_attribution,
    parse_half,
    parse_verdict,
)
from trust.lab.evaluation.whowhen import WhoWhenReport
from trust.settings import AuditSettings, SandboxSettings

TIER1 = [computational_auditor(SandboxSettings())]
AGENTS = ["Planner", "Searcher", "Coder", "Terminal", "Coder", "Reviewer", "Planner", "Reviewer"]
TURNS = [(name, f"turn {i} by {name}: looking at basket number {i}") for i, name in enumerate(AGENTS)]


def _run(
    stub: OpenAiStub, files: list[Path], method: str, cache: AnswerCache | None = None
) -> tuple[WhoWhenReport, tuple[JudgedLog, ...]]:
    async def go() -> tuple[WhoWhenReport, tuple[JudgedLog, ...]]:
        async with stub_client(stub) as client:
            return await judge_whowhen(
                files, method, JudgeChat(client, cache), settings=AuditSettings(), auditors=TIER1
            )

    return asyncio.run(go())


def test_all_at_once_answers_are_read_as_the_published_script_reads_them() -> None:
    assert parse_attribution("Agent Name: Coder\n Step Number: 4\n Reason for Mistake: wrong sum") == ("Coder", 4)
    assert parse_attribution("Agent Name: **Web_Surfer**\nStep Number: **12**") == ("Web_Surfer", 12)
    assert parse_attribution("agent name: coder\nstep: 3") == ("coder", 3)  # the fallback step pattern
    assert parse_attribution("Coder: I think step 3\nStep = 3") == ("Coder", 3)  # the fallback agent pattern
    assert parse_attribution("Agent Name: Coder\nno step given") == (None, None)
    assert parse_attribution("I cannot tell.") == (None, None)


def test_step_verdicts_and_halves_are_read() -> None:
    assert parse_verdict("1. Yes.\n2. Reason: the sum is wrong") is True
    assert parse_verdict("1. No.\n2. Reason: fine") is False
    assert parse_verdict("Yes, this step is wrong") is True and parse_verdict("**No**") is False
    assert parse_verdict("Nothing to say") is None and parse_verdict("Yesterday it was fine") is None
    assert parse_half("The error is in the Upper Half.") == "upper" and parse_half("lower half") == "lower"
    assert parse_half("upper half or lower half") == "upper"  # theirs checks upper first
    assert parse_half("the middle") is None


def test_all_at_once_sends_one_prompt_with_the_whole_log_and_the_answer(tmp_path: Path, stub: OpenAiStub) -> None:
    log = who_when_log(tmp_path / "1.json", TURNS, agent="Coder", step=2)
    stub.reply("Agent Name: Coder\nStep Number: 2\nReason for Mistake: it added wrong")
    report, judged = _run(stub, [log], "all-at-once")
    assert (report.score.agent_accuracy, report.score.step_accuracy) == (1.0, 1.0)
    (request,) = stub.requests
    system, user = request.body["messages"]
    assert system == {"role": "system", "content": "You are a helpful assistant skilled in analyzing conversations."}
    assert "The Answer for the problem is: 7\n" in user["content"]
    assert all(f"{name}: {content}" in user["content"] for name, content in TURNS)
    assert request.body["temperature"] == 0.0 and request.body["max_tokens"] == 1024
    assert judged[0].as_dict() == {"id": "1.json", "agent": "Coder", "step": 2, "source": "judge"}


def test_the_answer_line_is_left_out_when_the_log_has_no_ground_truth(tmp_path: Path, stub: OpenAiStub) -> None:
    log = who_when_log(tmp_path / "1.json", TURNS, agent="Coder", step=2, ground_truth=None)
    assert load_case(log).ground_truth is None
    stub.reply("Agent Name: Planner\nStep Number: 0")
    report, _ = _run(stub, [log], "all-at-once")
    assert "The Answer for the problem is" not in stub.requests[0].body["messages"][1]["content"]
    assert (report.score.agent_accuracy, report.score.step_accuracy) == (0.0, 0.0)


def _step_of(user: str) -> int:
    found = re.search(r"The most recent step \((\d+)\)", user)
    assert found is not None
    return int(found.group(1))


def test_step_by_step_stops_at_the_first_yes(tmp_path: Path, stub: OpenAiStub) -> None:
    log = who_when_log(tmp_path / "1.json", TURNS, agent="Terminal", step=3)
    stub.answer_with(lambda system, user: "1. Yes.\n2. Reason: x" if _step_of(user) == 3 else "1. No.\n2. Reason: ok")
    report, judged = _run(stub, [log], "step-by-step")
    assert [_step_of(r.body["messages"][1]["content"]) for r in stub.requests] == [0, 1, 2, 3]
    assert all(r.body["messages"][0]["content"] == STEP_SYSTEM for r in stub.requests)
    # Each prompt holds the log up to its step and no further, and names the step (not "{idx}").
    last = stub.requests[-1].body["messages"][1]["content"]
    assert "Step 3 - Terminal:" in last and "Step 4 -" not in last and "(Step 3)" in last and "{idx}" not in last
    assert (judged[0].attribution.agent, judged[0].attribution.step, judged[0].attribution.questions) == (
        "Terminal",
        3,
        4,
    )
    assert report.score.step_accuracy == 1.0


def test_step_by_step_without_a_yes_predicts_the_last_turn(tmp_path: Path, stub: OpenAiStub) -> None:
    log = who_when_log(tmp_path / "1.json", TURNS, agent="Reviewer", step=7)
    stub.answer_with(lambda system, user: "I am not sure")  # neither yes nor no: keep going, as theirs does
    report, judged = _run(stub, [log], "step-by-step")
    assert len(stub.requests) == len(TURNS)
    assert (judged[0].item.prediction.agent, judged[0].item.prediction.step) == ("Reviewer", 7)
    assert report.score.agent_accuracy == 1.0


def _segment(user: str) -> tuple[int, int, int]:
    found = re.search(r"upper half \(from step (\d+) to step (\d+)\) or the lower half \(from step (\d+)", user)
    assert found is not None
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


@pytest.mark.parametrize("target", [0, 3, 5, 7])
def test_binary_search_halves_down_to_the_step_the_judge_points_at(
    tmp_path: Path, stub: OpenAiStub, target: int
) -> None:
    log = who_when_log(tmp_path / "1.json", TURNS, agent=AGENTS[target], step=target)

    def answer(system: str, user: str) -> str:
        start, mid, _ = _segment(user)
        return "upper half" if start <= target <= mid else "lower half"

    stub.answer_with(answer)
    report, judged = _run(stub, [log], "binary-search")
    assert judged[0].item.prediction.step == target and judged[0].item.prediction.agent == AGENTS[target]
    assert len(stub.requests) == 3  # 8 turns: 8 -> 4 -> 2 -> 1
    assert all(r.body["messages"][0]["content"] == BINARY_SEARCH_SYSTEM for r in stub.requests)
    first = stub.requests[0].body["messages"][1]["content"]
    assert "from step 0 to step 7" in first and _segment(first) == (0, 3, 4)
    assert report.score.step_accuracy == 1.0


def test_binary_search_picks_a_half_reproducibly_when_the_answer_names_none(tmp_path: Path, stub: OpenAiStub) -> None:
    log = who_when_log(tmp_path / "1.json", TURNS, agent="Coder", step=2)
    stub.answer_with(lambda system, user: "I do not know")
    _, first = _run(stub, [log], "binary-search")
    _, again = _run(stub, [log], "binary-search")
    assert first[0].item.prediction == again[0].item.prediction
    assert first[0].item.prediction.step is not None and 0 <= first[0].item.prediction.step < len(TURNS)


def test_combined_takes_a_checked_root_cause_without_asking(tmp_path: Path, stub: OpenAiStub) -> None:
    turns = [
        ("Planner", "Count the apples in each basket and add them."),
        ("Counter", "Basket one holds 3 apples and basket two holds 4 apples, so the total is 3 + 4 = 8."),
        ("Reviewer", "The answer is 8 apples. TERMINATE"),
    ]
    log = who_when_log(tmp_path / "1.json", turns, agent="Counter", step=1)
    report, judged = _run(stub, [log], "combined")
    assert stub.requests == []  # tier 1 found the sum that does not hold: no question needed
    assert judged[0].as_dict() == {"id": "1.json", "agent": "Counter", "step": 1, "source": "deterministic"}
    assert report.score.step_accuracy == 1.0


def test_combined_takes_the_turn_that_first_stated_the_answer_without_asking(tmp_path: Path, stub: OpenAiStub) -> None:
    turns = [
        ("Planner", "Find how many people live in the town and report the number."),
        ("Searcher", "According to the census page, the town has 12500 residents."),
        ("Reviewer", "The answer is 12500 residents. TERMINATE"),
    ]
    log = who_when_log(tmp_path / "1.json", turns, agent="Searcher", step=1)
    report, judged = _run(stub, [log], "combined")
    assert stub.requests == []  # the answer's origin is a finding; only the first-turn prior asks the judge
    assert judged[0].as_dict() == {"id": "1.json", "agent": "Searcher", "step": 1, "source": "deterministic"}
    assert report.score.step_accuracy == 1.0


def test_combined_asks_the_judge_up_to_the_first_loop(tmp_path: Path, stub: OpenAiStub) -> None:
    stuck = "I will now search the web for the number of apples in each basket and report back."
    turns = [
        ("Planner", "Find how many apples the baskets hold."),
        ("Searcher", stuck),
        ("Terminal", "There is no code to run."),
        ("Searcher", stuck),
        ("Terminal", "There is no code to run."),
        ("Searcher", stuck),
    ]
    log = who_when_log(tmp_path / "1.json", turns, agent="Searcher", step=1)
    stub.reply("Agent Name: Searcher\nStep Number: 1")
    report, judged = _run(stub, [log], "combined")
    (request,) = stub.requests
    user = request.body["messages"][1]["content"]
    # The first repeat is step 3 (Searcher again): the transcript stops there.
    assert user.count(f"Searcher: {stuck}") == 2 and user.count("Terminal: There is no code to run.") == 1
    assert judged[0].attribution.source == "judge" and report.score.step_accuracy == 1.0


def test_an_endpoint_failure_leaves_the_log_unpredicted_and_says_why(tmp_path: Path, stub: OpenAiStub) -> None:
    logs = [who_when_log(tmp_path / f"{i}.json", TURNS, agent="Coder", step=2) for i in (1, 2)]
    stub.fail(400, '{"error": {"message": "Requested tokens exceed context window"}}')
    stub.reply("Agent Name: Coder\nStep Number: 2")
    report, judged = _run(stub, logs, "all-at-once")
    assert judged[0].item.prediction.agent is None and "context window" in (judged[0].attribution.error or "")
    assert judged[1].item.prediction.step == 2 and judged[1].attribution.error is None
    assert (report.score.n, report.score.predicted, report.score.step_accuracy) == (2, 1, 0.5)


def test_a_stopped_run_resumes_from_the_cache(tmp_path: Path, stub: OpenAiStub) -> None:
    # Three different logs (the same log twice would be the same questions, answered from the cache).
    logs = [
        who_when_log(tmp_path / f"{i}.json", [(a, f"{c} (log {i})") for a, c in TURNS], agent="Coder", step=2)
        for i in (1, 2, 3)
    ]
    path = tmp_path / "answers.jsonl"
    target = 2

    def answer(system: str, user: str) -> str:
        start, mid, _ = _segment(user)
        return "upper half" if start <= target <= mid else "lower half"

    stub.answer_with(answer)
    with AnswerCache(path) as cache:  # the first run is stopped after two logs
        _run(stub, logs[:2], "binary-search", cache)
    assert len(stub.requests) == 6
    with AnswerCache(path) as cache:
        report, _ = _run(stub, logs, "binary-search", cache)
    assert len(stub.requests) == 9  # only the third log's three questions were asked again
    assert report.score.step_accuracy == 1.0


def test_unknown_methods_and_unlabelled_logs_are_refused(tmp_path: Path, stub: OpenAiStub) -> None:
    log = who_when_log(tmp_path / "1.json", TURNS, agent="Coder", step=2)
    with pytest.raises(GraphError, match="method 'majority'"):
        _run(stub, [log], "majority")
    (tmp_path / "2.json").write_text('{"question": "q", "history": [{"content": "hi", "name": "A", "role": "user"}]}')
    with pytest.raises(GraphError, match=r"2\.json: missing field 'mistake_agent'"):
        _run(stub, [tmp_path / "2.json"], "all-at-once")
