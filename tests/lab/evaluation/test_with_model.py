"""Both scorers with the LLM node oracle, against a local server speaking the chat-completions wire format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_stub import openai_stub
from trust.adapters.llm.client import LlmClient
from trust.errors import LlmError
from trust.lab.evaluation.processbench import ProcessBenchItem, evaluate_processbench_with_model, steps_cig
from trust.lab.evaluation.whowhen import evaluate_whowhen_with_model, log_files
from trust.settings import AuditSettings, LlmSettings

TAU = AuditSettings().tau_node
# Words only, no arithmetic: nothing but the model can judge these steps.
ITEM = ProcessBenchItem("p-1", "Is the sky blue?", ("Look at the sky.", "It is green.", "So the answer is no."), 1)


def _settings(base_url: str) -> LlmSettings:
    return LlmSettings(base_url=base_url, model="judge", max_retries=0)


def test_steps_cig_links_every_earlier_step() -> None:
    cig = steps_cig(ITEM)
    assert cig.parents("t2") == ["t0", "t1"] and cig.turn("t1").input == "Is the sky blue?"


async def test_processbench_with_a_model_that_rejects_every_step() -> None:
    with openai_stub() as stub:
        for _ in ITEM.steps:  # the oracle asks about every step up front, concurrently
            stub.reply('{"score": 0.1, "critique": "wrong"}')
        async with LlmClient(_settings(stub.base_url)) as client:
            report = await evaluate_processbench_with_model([ITEM], client, tau_node=TAU)
    assert report.predictions[0][1] == 0  # the earliest step judged wrong
    assert len(stub.requests) == 3
    contents = sorted(request.body["messages"][1]["content"] for request in stub.requests)
    assert any("It is green." in text and "Look at the sky." in text for text in contents)


async def test_processbench_with_a_model_that_accepts_every_step() -> None:
    with openai_stub() as stub:
        for _ in ITEM.steps:
            stub.reply('{"score": 0.95, "critique": ""}')
        async with LlmClient(_settings(stub.base_url)) as client:
            report = await evaluate_processbench_with_model([ITEM], client, tau_node=TAU)
    assert report.predictions[0][1] == -1 and report.score.error_acc == 0.0


async def test_an_unusable_verdict_is_an_error() -> None:
    with openai_stub() as stub:
        for _ in ITEM.steps:
            stub.reply("I think it is fine")
        async with LlmClient(_settings(stub.base_url)) as client:
            with pytest.raises(LlmError, match="holds no JSON object"):
                await evaluate_processbench_with_model([ITEM], client, tau_node=TAU)


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


async def test_whowhen_with_a_model(tmp_path: Path) -> None:
    _who_when_log(tmp_path / "logs")
    with openai_stub() as stub:
        stub.reply('{"score": 0.2, "critique": "population is wrong"}')
        stub.reply('{"score": 0.2, "critique": "approved a wrong claim"}')
        stub.reply('{"protocol": 1.0, "fidelity": 1.0, "failures": []}')  # then the one edge
        async with LlmClient(_settings(stub.base_url)) as client:
            report = await evaluate_whowhen_with_model(log_files(tmp_path / "logs"), AuditSettings(), client)
    assert report.score.metrics() == {"agent_accuracy": 1.0, "step_accuracy": 1.0, "n": 1}
    assert len(stub.requests) == 3
    assert "telephone test" in stub.requests[2].body["messages"][0]["content"]


def test_cli_uses_the_model_when_an_endpoint_is_configured(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps([{"id": ITEM.id, "problem": ITEM.problem, "steps": list(ITEM.steps), "label": 1}]))
    with openai_stub() as stub:
        for _ in ITEM.steps:
            stub.reply('{"score": 0.1, "critique": "wrong"}')
        env = dict(os.environ, TRUST_LLM__BASE_URL=stub.base_url, TRUST_LLM__MAX_RETRIES="0")
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
    assert len(stub.requests) == 3
