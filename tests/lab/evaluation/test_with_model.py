"""Both scorers with the tier-2 auditor, against a local server speaking the chat-completions wire format."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_stub import environment_without_models, openai_stub
from trust.adapters.llm.client import LlmClient
from trust.auditors.llm import LlmAuditor
from trust.auditors.tiers import computational_auditor
from trust.errors import JudgmentError
from trust.lab.evaluation.processbench import ProcessBenchItem, evaluate_processbench
from trust.lab.evaluation.whowhen import evaluate_whowhen, log_files
from trust.settings import AuditSettings, LlmSettings, SandboxSettings

TAU = AuditSettings().tau_node
# Words only, no arithmetic: nothing but the model can judge these steps.
ITEM = ProcessBenchItem("p-1", "Is the sky blue?", ("Look at the sky.", "It is green.", "So the answer is no."), 1)


def _settings(base_url: str) -> LlmSettings:
    return LlmSettings(base_url=base_url, model="judge", max_retries=0)


def _judge(score: float) -> str:
    """A judge that names the turn it was asked about (a critique must refer to its segment)."""

    def answer(system: str, user: str) -> str:
        named = re.search(r"turn (t\d+)", user)
        assert named is not None
        verdict = "pass" if score >= TAU else "fail"
        critique = f"Judged: the claim of {named.group(1)} looks {'sound' if verdict == 'pass' else 'false'}"
        return json.dumps({"critique": critique, "error_type": None, "score": score, "verdict": verdict})

    return answer


async def test_processbench_with_a_judge_that_rejects_every_step() -> None:
    with openai_stub() as stub:
        stub.answer_with(_judge(0.1))
        async with LlmClient(_settings(stub.base_url)) as client:
            report = await evaluate_processbench([ITEM], tau_node=TAU, auditors=[LlmAuditor(client, AuditSettings())])
    assert report.predictions[0][1] == 0  # the earliest step judged wrong
    assert len(stub.requests) == 3 * 2  # every step, in two orders
    contents = [request.body["messages"][1]["content"] for request in stub.requests]
    assert any("It is green." in text and "Look at the sky." in text for text in contents)


async def test_processbench_with_a_judge_that_accepts_every_step() -> None:
    with openai_stub() as stub:
        stub.answer_with(_judge(1.0))
        async with LlmClient(_settings(stub.base_url)) as client:
            report = await evaluate_processbench([ITEM], tau_node=TAU, auditors=[LlmAuditor(client, AuditSettings())])
    assert report.predictions[0][1] == -1 and report.score.error_acc == 0.0


async def test_an_unusable_verdict_is_an_error() -> None:
    with openai_stub() as stub:
        stub.answer_with(lambda system, user: "I think it is fine")
        async with LlmClient(_settings(stub.base_url)) as client:
            with pytest.raises(JudgmentError, match="the answer is not JSON"):
                await evaluate_processbench([ITEM], tau_node=TAU, auditors=[LlmAuditor(client, AuditSettings())])


def _who_when_log(folder: Path) -> None:
    folder.mkdir()
    log = {
        "question": "Which city is larger?",
        "history": [
            {"content": "Paris has 2 million people, so Paris is larger.", "name": "Geography_Expert", "role": "user"},
            {"content": "Agreed, Paris.", "name": "Verification_Expert", "role": "user"},
        ],
        "mistake_agent": "Geography_Expert",
        "mistake_step": "0",
    }
    (folder / "1.json").write_text(json.dumps(log))


async def test_whowhen_with_a_judge(tmp_path: Path) -> None:
    _who_when_log(tmp_path / "logs")
    with openai_stub() as stub:
        stub.answer_with(_judge(0.2))
        async with LlmClient(_settings(stub.base_url)) as client:
            auditors = [computational_auditor(SandboxSettings()), LlmAuditor(client, AuditSettings())]
            report = await evaluate_whowhen(log_files(tmp_path / "logs"), AuditSettings(), auditors)
    assert report.score.metrics() == {"agent_accuracy": 1.0, "step_accuracy": 1.0, "n": 1}
    # Two turns and the one edge, each in two orders.
    assert len(stub.requests) == 3 * 2
    assert sum("telephone test" in request.body["messages"][0]["content"] for request in stub.requests) == 2


def test_cli_uses_the_judge_when_an_endpoint_is_configured(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps([{"id": ITEM.id, "problem": ITEM.problem, "steps": list(ITEM.steps), "label": 1}]))
    with openai_stub() as stub:
        stub.answer_with(_judge(0.1))
        env = environment_without_models(TRUST_AUDITOR_LLM__BASE_URL=stub.base_url, TRUST_AUDITOR_LLM__MAX_RETRIES="0")
        run = subprocess.run(
            [sys.executable, "-m", "trust", "eval", "processbench", str(path), "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"error_acc": 0.0, "correct_acc": 0.0, "f1": 0.0, "n": 1}
    assert len(stub.requests) == 3 * 2
