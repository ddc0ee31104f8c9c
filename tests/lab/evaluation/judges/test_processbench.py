"""ProcessBench's critic and `combined` against a real OpenAI-compatible HTTP server, and the
`trust eval` command lines with --method, --limit and the answer cache."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lab.evaluation.judges.conftest import stub_client, who_when_log
from tests.openai_stub import OpenAiStub, environment_without_models
from trust.errors import ConfigError
from trust.lab.evaluation.judges.cache import AnswerCache
from trust.lab.evaluation.judges.chat import JudgeChat
from trust.lab.evaluation.judges.processbench import Critique, critique_prompt, judge_processbench, parse_critique
from trust.lab.evaluation.processbench import ProcessBenchItem, ProcessBenchScore

TAU = 0.8
SOUND = ProcessBenchItem(
    "sound", "Tom has 3 apples and buys 4 more. How many now?", ("He buys 4 more.", "3 + 4 = 7, so he has 7."), -1
)
WRONG_SUM = ProcessBenchItem(
    "wrong-sum", "Ann has 5 pens and buys 6 more. How many now?", ("She buys 6 more.", "5 + 6 = 12 pens."), 1
)
WRONG_IDEA = ProcessBenchItem(
    "wrong-idea", "Bo has 8 cups and breaks 2. How many are left?", ("He adds the broken cups.", "8 + 2 = 10."), 0
)


def _run(
    stub: OpenAiStub, items: list[ProcessBenchItem], method: str, cache: AnswerCache | None = None
) -> tuple[ProcessBenchScore, tuple[Critique, ...]]:
    async def go() -> tuple[ProcessBenchScore, tuple[Critique, ...]]:
        async with stub_client(stub) as client:
            return await judge_processbench(items, method, JudgeChat(client, cache), tau_node=TAU)

    return asyncio.run(go())


def test_the_boxed_index_is_read_as_processbench_reads_it() -> None:
    assert parse_critique("Paragraph 1 is wrong. \\boxed{1}") == 1
    assert parse_critique("All correct: \\boxed{-1}") == -1
    assert parse_critique("first \\boxed{0}, on reflection \\boxed{ 2 }") == 2  # the last box counts
    assert parse_critique("\\boxed{paragraph 2}") is None  # not an integer: no prediction
    assert parse_critique("the earliest error is in paragraph 2") is None  # no box
    assert parse_critique("\\boxed{}") is None


def test_the_critique_prompt_tags_each_paragraph() -> None:
    prompt = critique_prompt(WRONG_SUM)
    assert prompt.startswith("The following is a math problem and a solution (split into paragraphs")
    assert "[Math Problem]\n\nAnn has 5 pens" in prompt
    assert (
        "<paragraph_0>\nShe buys 6 more.\n</paragraph_0>\n\n<paragraph_1>\n5 + 6 = 12 pens.\n</paragraph_1>" in prompt
    )
    assert prompt.endswith("Please put your final answer (i.e., the index) in \\boxed{}.")


def test_critic_sends_one_user_message_per_item_and_scores(stub: OpenAiStub) -> None:
    answers = {"Tom": "\\boxed{-1}", "Ann": "\\boxed{1}", "Bo": "no idea"}
    stub.answer_with(lambda system, user: next(v for k, v in answers.items() if f"\n\n{k} has" in user))
    score, critiques = _run(stub, [SOUND, WRONG_SUM, WRONG_IDEA], "critic")
    assert len(stub.requests) == 3
    assert all(
        r.body["messages"] == [{"role": "user", "content": critique_prompt(i)}]
        for r, i in zip(stub.requests, [SOUND, WRONG_SUM, WRONG_IDEA], strict=True)
    )
    assert [c.label for c in critiques] == [-1, 1, None]
    assert (score.error_acc, score.correct_acc) == (0.5, 1.0)
    assert critiques[2].as_dict() == {"id": "wrong-idea", "label": None, "source": "judge"}


def test_combined_asks_only_where_tier_1_is_silent(stub: OpenAiStub) -> None:
    stub.answer_with(lambda system, user: "\\boxed{0}" if "Bo has" in user else "\\boxed{-1}")
    score, critiques = _run(stub, [SOUND, WRONG_SUM, WRONG_IDEA], "combined")
    asked = [r.body["messages"][0]["content"] for r in stub.requests]
    assert len(asked) == 2 and not any("Ann has" in text for text in asked)  # 5 + 6 = 12 was checked
    assert [(c.label, c.source) for c in critiques] == [(-1, "judge"), (1, "deterministic"), (0, "judge")]
    assert (score.error_acc, score.correct_acc, score.f1) == (1.0, 1.0, 1.0)


def test_combined_keeps_tier_1_when_the_critique_names_no_step(stub: OpenAiStub) -> None:
    # The problem's final answer boxed instead of a paragraph index, and an answer with no box.
    stub.answer_with(lambda system, user: "The answer is \\boxed{7}" if "Tom has" in user else "no idea")
    _, critiques = _run(stub, [SOUND, WRONG_IDEA], "combined")
    assert [(c.label, c.source) for c in critiques] == [(-1, "deterministic"), (-1, "deterministic")]
    _, critiques = _run(stub, [SOUND, WRONG_IDEA], "critic")  # the critic alone reads them as published
    assert [c.label for c in critiques] == [7, None]


def test_a_stopped_run_resumes_and_failures_are_kept(tmp_path: Path, stub: OpenAiStub) -> None:
    path = tmp_path / "answers.jsonl"
    stub.reply("\\boxed{-1}")
    stub.fail(500)  # the endpoint goes down at the second item (no retries here)
    with AnswerCache(path) as cache:
        _, first = _run(stub, [SOUND, WRONG_SUM], "critic", cache)
    assert first[0].label == -1 and first[1].label is None and "HTTP 500" in (first[1].error or "")
    stub.reply("\\boxed{1}")
    stub.reply("\\boxed{0}")
    with AnswerCache(path) as cache:  # the rerun asks only what has no answer yet
        score, again = _run(stub, [SOUND, WRONG_SUM, WRONG_IDEA], "critic", cache)
    assert len(stub.requests) == 4
    assert [c.label for c in again] == [-1, 1, 0] and score.f1 == 1.0


def test_unknown_method_is_refused(stub: OpenAiStub) -> None:
    with pytest.raises(ConfigError, match="method 'vote'"):
        _run(stub, [SOUND], "vote")


def _trust(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trust", *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_cli_runs_the_critic_on_the_configured_endpoint_and_resumes(tmp_path: Path, stub: OpenAiStub) -> None:
    items = [
        {
            "id": f"i{n}",
            "problem": f"Problem {n}: 2 + {n}?",
            "steps": [f"2 + {n} = {2 + n}."],
            "label": -1 if n % 2 else 0,
        }
        for n in range(6)
    ]
    data = tmp_path / "gsm8k.json"
    data.write_text(json.dumps(items))
    stub.answer_with(lambda system, user: "\\boxed{-1}")
    env = environment_without_models(TRUST_LLM__BASE_URL=stub.base_url, TRUST_LLM__MODEL="stub-judge")
    home = tmp_path / "home"
    out = tmp_path / "labels.jsonl"
    args = ["eval", "processbench", str(data), "--method", "critic", "--limit", "4", "--json", "--home", str(home)]
    run = _trust(*args, "--predictions", str(out), env=env)
    assert run.returncode == 0, run.stderr
    metrics = json.loads(run.stdout)
    assert metrics == {"error_acc": 0.0, "correct_acc": 1.0, "f1": 0.0, "n": 4, "method": "critic"}
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["i0", "i1", "i3", "i4"]
    assert len(stub.requests) == 4 and stub.requests[0].body["model"] == "stub-judge"
    assert "TRUST_LLM__BASE_URL" in run.stderr and "4 question(s) asked" in run.stderr
    cache = home / "eval" / "judge-answers.jsonl"
    assert len(cache.read_text().splitlines()) == 4
    again = _trust(*args, env=env)
    assert again.returncode == 0 and json.loads(again.stdout) == metrics
    assert len(stub.requests) == 4 and "0 question(s) asked, 4 answered from the cache" in again.stderr


def test_cli_whowhen_method_and_a_clear_error_for_an_unknown_one(tmp_path: Path, stub: OpenAiStub) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    for n in range(3):
        who_when_log(folder / f"{n}.json", [("Planner", f"plan {n}"), ("Coder", f"code {n}")], agent="Coder", step=1)
    stub.answer_with(lambda system, user: "Agent Name: Coder\nStep Number: 1")
    env = environment_without_models(TRUST_AUDITOR_LLM__BASE_URL=stub.base_url)
    home = str(tmp_path / "home")
    run = _trust(
        "eval", "whowhen", str(folder), "--method", "all-at-once", "--limit", "2", "--json", "--home", home, env=env
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"agent_accuracy": 1.0, "step_accuracy": 1.0, "n": 2, "method": "all-at-once"}
    assert len(stub.requests) == 2 and "TRUST_AUDITOR_LLM__BASE_URL" in run.stderr
    bad = _trust("eval", "whowhen", str(folder), "--method", "majority-vote", "--home", home, env=env)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    said = " ".join(bad.stderr.split())
    assert re.search(r"--method 'majority-vote'.*all-at-once, step-by-step, binary-search", said)
