"""The LLM node oracle against a local server speaking the chat-completions wire format."""

from __future__ import annotations

import json

import pytest

from tests.openai_stub import openai_stub
from trust.errors import LlmError
from trust.evaluation.llm_oracle import LlmNodeOracle
from trust.evaluation.processbench import ProcessBenchItem, predict
from trust.graphs.cig import AgentTurn, Role
from trust.settings import AuditSettings, LlmSettings


def _turn(step: int, output: str) -> AgentTurn:
    return AgentTurn(f"t{step}", step, "solver", Role.EXPERT, output, "What is 2 + 2 * 3?")


def test_verdicts_are_parsed_and_the_prompt_shows_the_turn() -> None:
    with openai_stub() as stub:
        stub.reply(json.dumps({"score": 0.2, "critique": "multiplication goes first", "rejects_input": False}))
        settings = LlmSettings(base_url=stub.base_url, model="judge", max_retries=0)
        with LlmNodeOracle(settings) as oracle:
            verdict = oracle.audit_node(_turn(1, "2 + 2 = 4, then 4 * 3 = 12"), [_turn(0, "Read the problem.")], [])
    assert verdict is not None and verdict.score == 0.2 and verdict.critique == "multiplication goes first"
    (request,) = stub.requests
    assert request.body["temperature"] == 0.0 and request.body["response_format"] == {"type": "json_object"}
    user = request.body["messages"][1]["content"]
    assert "What is 2 + 2 * 3?" in user and "Read the problem." in user and "4 * 3 = 12" in user


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("not json", "no JSON"),
        ("[1]", "not an object"),
        ('{"score": 2}', "not a number in"),
        ('{"score": true}', "not a number in"),
        ('{"score": 0.5, "critique": 3}', "'critique' must be a string"),
    ],
)
def test_unusable_verdicts_are_errors(reply: str, message: str) -> None:
    with openai_stub() as stub:
        stub.reply(reply)
        settings = LlmSettings(base_url=stub.base_url, model="judge", max_retries=0)
        with LlmNodeOracle(settings) as oracle, pytest.raises(LlmError, match=message):
            oracle.audit_node(_turn(0, "x"), [], [])


def test_processbench_uses_the_llm_verdicts() -> None:
    item = ProcessBenchItem("p", "What is 2 + 2 * 3?", ("Read the problem.", "2 + 2 is 4, times 3 is 12."), 1)
    with openai_stub() as stub:
        stub.reply('{"score": 0.95, "critique": ""}')
        stub.reply('{"score": 0.1, "critique": "order of operations"}')
        settings = LlmSettings(base_url=stub.base_url, model="judge", max_retries=0)
        with LlmNodeOracle(settings) as oracle:
            assert predict(item, tau_node=AuditSettings().tau_node, node_oracles=[oracle]) == 1
    assert len(stub.requests) == 2
