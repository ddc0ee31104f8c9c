"""The LLM edge oracle (Layer 2, "the telephone test"), over HTTP against the OpenAI-compatible stub,
and through `trust graph localize` with TRUST_LLM__BASE_URL pointing at the stub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.openai_stub import Answer, OpenAiStub, Request, completion, openai_stub
from trust.adapters.llm.client import LlmClient
from trust.core.graphs.agent_log import build_cig, parse_log
from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin, Role
from trust.core.graphs.oracles import FIDELITY_FAILURES, PROTOCOL_FAILURES, EdgeScore, EdgeVerdict, LlmEdgeOracle
from trust.errors import GraphError, LlmError
from trust.services.localize import audit_agent_log
from trust.settings import AuditSettings, LlmSettings

# A census figure passes Planner -> Researcher -> Writer (who also gets an editor's note from outside
# the swarm) -> Coder -> Terminal. The terminal receives code and is never asked about.
CENSUS_LOG: dict[str, Any] = {
    "format": "trust.agent-log",
    "version": 1,
    "task": "What was the population of Seattle in the 2020 census?",
    "agents": [
        {"name": "Planner", "role": "planner"},
        {"name": "Researcher", "role": "expert"},
        {"name": "Writer", "role": "expert"},
        {"name": "Coder", "role": "coder"},
        {"name": "Terminal", "role": "tool"},
    ],
    "turns": [
        {
            "agent": "Planner",
            "content": "Look up Seattle's 2020 census population. Reply in JSON: 'city' and 'population'.",
            "references": [],
            "expects": {"format": "json", "required": ["city", "population"]},
        },
        {"agent": "Researcher", "content": '{"city": "Seattle", "population": 737015}', "references": [0]},
        {
            "agent": "Writer",
            "content": "Seattle had 737,105 residents in 2020.",
            "references": [1],
            "input": "Editor: one sentence, please.",
        },
        {"agent": "Coder", "content": "```python\nprint(737015 / 1000)\n```", "references": [2]},
        {"agent": "Terminal", "content": "exitcode: 0 (execution succeeded)\nCode output: 737.015", "references": [3]},
    ],
}

INTACT = '{"protocol": 1.0, "fidelity": 1.0, "failures": []}'


def _client(stub: OpenAiStub, **settings: Any) -> LlmClient:
    values = {"base_url": stub.base_url, "model": "auditor", "max_retries": 0} | settings
    return LlmClient(LlmSettings.model_validate(values), backoff_seconds=0.01)


def answer_by_prompt(stub: OpenAiStub, answer: Callable[[str, str], str]) -> None:
    """Makes the stub reply with `answer(system, user)` of each request, in whatever order requests
    arrive (the CLI asks several at once), instead of from its script of answers."""

    def respond(request: Request) -> Answer:
        stub.requests.append(request)
        messages = request.body["messages"]
        content = answer(messages[0]["content"], messages[1]["content"])
        return Answer(200, completion(content), {"Content-Type": "application/json"})

    stub._next = respond  # type: ignore[method-assign]


async def test_the_edge_oracle_asks_about_each_message_over_http() -> None:
    cig = build_cig(parse_log(CENSUS_LOG))
    asked = [edge for edge in cig.edges() if cig.turn(edge.target).role is not Role.TOOL]
    assert [(e.source, e.target) for e in asked] == [("t0", "t1"), ("t1", "t2"), ("t2", "t3")]
    corrupted = {
        "protocol": 1,
        "fidelity": 0.1,
        "failures": [{"mode": "value_corruption", "detail": "737015 became 737,105"}],
    }
    with openai_stub() as stub:
        stub.reply(INTACT)
        stub.reply(json.dumps(corrupted))
        stub.reply('```json\n{"protocol": 0.9, "fidelity": 1.0, "failures": []}\n```')
        async with _client(stub) as client:
            oracle = LlmEdgeOracle(client, concurrency=1)
            await oracle.prepare(cig)
    assert len(stub.requests) == 3  # the Coder -> Terminal edge is not asked about
    first = stub.requests[0].body
    assert first["model"] == "auditor" and first["temperature"] == 0.0
    assert first["response_format"] == {"type": "json_object"}
    assert "telephone test" in first["messages"][0]["content"]
    assert all(mode in first["messages"][0]["content"] for mode in PROTOCOL_FAILURES + FIDELITY_FAILURES)
    prompt = first["messages"][1]["content"]
    assert "Edge t0 -> t1 (reference: the receiver replies to this message)" in prompt
    assert "Sender: Planner (role planner, step 0)" in prompt and "Receiver: Researcher (role expert, step 1)" in prompt
    assert "Interface the sender declared for replies: a JSON object with the fields city, population" in prompt
    assert "Look up Seattle's 2020 census population" in prompt and '"population": 737015' in prompt
    assert "Other input of the receiver, from outside the swarm:\nWhat was the population" not in prompt
    second = stub.requests[1].body["messages"][1]["content"]
    assert "Edge t1 -> t2" in second and "Other input of the receiver, from outside the swarm:\nEditor:" in second
    assert "Output of the receiver Writer (step 2):\nSeattle had 737,105 residents" in second
    assert "Interface the sender declared" not in second  # the Researcher declared none

    turns = {turn.id: turn for turn in cig.turns()}
    edges = {(edge.source, edge.target): edge for edge in cig.edges()}

    def verdict(source: str, target: str) -> EdgeVerdict | None:
        return oracle.audit_edge(edges[(source, target)], turns[source], turns[target])

    assert verdict("t0", "t1") == EdgeVerdict(EdgeScore(1.0, 1.0), ())
    assert verdict("t1", "t2") == EdgeVerdict(EdgeScore(1.0, 0.1), ("value_corruption: 737015 became 737,105",))
    assert verdict("t2", "t3") == EdgeVerdict(EdgeScore(0.9, 1.0), ())
    assert verdict("t3", "t4") is None

    report = audit_agent_log(parse_log(CENSUS_LOG), AuditSettings(), edge_oracles=[oracle]).to_json()
    assert "llm-edge" in report["oracles"]
    assert [n["status"] for n in report["nodes"]] == ["Valid", "Valid", "Invalid_Root", "Valid", "Valid"]
    assert report["root_cause_details"][0] == {
        "id": "t2",
        "status": "Invalid_Root",
        "reason": "edge_failure",
        "parents": ["t1"],
    }
    assert report["failed_edges"] == [
        {
            "source": "t1",
            "target": "t2",
            "protocol": 1.0,
            "fidelity": 0.1,
            "findings": ["llm-edge: value_corruption: 737015 became 737,105"],
        }
    ]


async def test_a_receiver_that_only_reuses_content_is_held_to_fidelity_not_to_the_protocol() -> None:
    cig = Cig()
    cig.add_turn(AgentTurn("t0", 0, "Planner", Role.PLANNER, "Budget: 1200 EUR. Answer in JSON."))
    cig.add_turn(AgentTurn("t1", 1, "Buyer", Role.EXPERT, "Noted."))
    cig.add_turn(AgentTurn("t2", 2, "Writer", Role.EXPERT, "The budget is 2100 EUR."))
    cig.add_edge("t0", "t1", EdgeOrigin.SEQUENCE)
    cig.add_edge("t1", "t2", EdgeOrigin.SEQUENCE)
    cig.add_edge("t0", "t2", EdgeOrigin.OVERLAP)
    both = {
        "protocol": 0.0,
        "fidelity": 0.0,
        "failures": [
            {"mode": "Format mismatch", "detail": "prose instead of JSON"},
            {"mode": "value-corruption", "detail": "1200 became 2100"},
            "information_loss",
        ],
    }
    with openai_stub() as stub:
        for _ in range(3):
            stub.reply(json.dumps(both))
        async with _client(stub) as client:
            oracle = LlmEdgeOracle(client, concurrency=1)
            await oracle.prepare(cig)
    overlap_prompt = stub.requests[2].body["messages"][1]["content"]  # t2's parents in the order added
    assert "Edge t0 -> t2 (overlap: the receiver does not reply to this message; it reuses content from it)" in (
        overlap_prompt
    )
    assert "Other input of the receiver, from Buyer (step 1):\nNoted." in overlap_prompt
    edges = {(edge.source, edge.target): edge for edge in cig.edges()}
    reply = oracle.audit_edge(edges[("t0", "t1")], cig.turn("t0"), cig.turn("t1"))
    assert reply == EdgeVerdict(
        EdgeScore(0.0, 0.0),
        ("format_mismatch: prose instead of JSON", "value_corruption: 1200 became 2100", "information_loss"),
    )
    reuse = oracle.audit_edge(edges[("t0", "t2")], cig.turn("t0"), cig.turn("t2"))
    assert reuse == EdgeVerdict(EdgeScore(1.0, 0.0), ("value_corruption: 1200 became 2100", "information_loss"))


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("The message arrived intact.", "the reply holds no JSON object"),
        ('{"protocol": 1.0}', "fidelity None is not a number in"),
        ('{"protocol": 1.5, "fidelity": 1.0}', "protocol 1.5 is not a number in"),
        ('{"protocol": true, "fidelity": 1.0}', "protocol True is not a number in"),
        ('{"protocol": 1.0, "fidelity": "high"}', "fidelity 'high' is not a number in"),
        ('{"protocol": 1.0, "fidelity": 0.2, "failures": "value corruption"}', "failures 'value corruption' is not"),
        (
            '{"protocol": 1.0, "fidelity": 0.2, "failures": [{"mode": "hallucination"}]}',
            "failure mode 'hallucination' is not one of format_mismatch, ",
        ),
        ('{"protocol": 1.0, "fidelity": 0.2, "failures": [{"detail": "x"}]}', "failure mode None is not one of"),
    ],
)
async def test_unusable_edge_verdicts_name_the_edge(reply: str, message: str) -> None:
    cig = build_cig(parse_log(CENSUS_LOG))
    with openai_stub() as stub:
        for _ in range(3):
            stub.reply(reply)
        async with _client(stub) as client:
            oracle = LlmEdgeOracle(client, concurrency=1)
            with pytest.raises(LlmError, match=f"LLM audit of edge 't0' -> 't1': {message}"):
                await oracle.prepare(cig)


async def test_an_endpoint_failure_is_an_llm_error_and_leaves_no_verdict() -> None:
    cig = build_cig(parse_log(CENSUS_LOG))
    with openai_stub() as stub:
        stub.reply(INTACT)
        stub.fail(503)
        async with _client(stub) as client:
            oracle = LlmEdgeOracle(client, concurrency=1)
            with pytest.raises(LlmError):
                await oracle.prepare(cig)
    edge = next(cig.edges())
    assert oracle.audit_edge(edge, cig.turn(edge.source), cig.turn(edge.target)) is None


def test_the_edge_oracle_refuses_nonsense_limits() -> None:
    with openai_stub() as stub, pytest.raises(GraphError, match="concurrency \\(0\\)"):
        LlmEdgeOracle(_client(stub), concurrency=0)


# ---------------------------------------------------------------------------------------------- the CLI

SORT_LOG: dict[str, Any] = {
    "format": "trust.agent-log",
    "version": 1,
    "task": "Sort [3, 1, 2] in ascending order.",
    "agents": [
        {"name": "Planner", "role": "planner"},
        {"name": "Coder", "role": "coder"},
        {"name": "Aggregator", "role": "aggregator"},
    ],
    "turns": [
        {"agent": "Planner", "content": "Sort the list [3, 1, 2] in ascending order.", "references": []},
        {"agent": "Coder", "content": "Sorted in descending order: [3, 2, 1].", "references": [0]},
        {"agent": "Aggregator", "content": "Final answer: [3, 2, 1].", "references": [1]},
    ],
}


def _localize(path: Path, base_url: str) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ,
        TRUST_LLM__BASE_URL=base_url,
        TRUST_LLM__MAX_RETRIES="0",
        TRUST_AUDIT__SIMILARITY="lexical",
        COLUMNS="200",
    )
    return subprocess.run(
        [sys.executable, "-m", "trust", "graph", "localize", str(path), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_localizes_a_fidelity_failure_the_model_reports(tmp_path: Path) -> None:
    path = tmp_path / "sort.json"
    path.write_text(json.dumps(SORT_LOG))

    def judge(system: str, user: str) -> str:
        if "telephone test" not in system:
            return '{"score": 1.0, "critique": "", "rejects_input": false}'  # every turn is sound on its own
        if user.startswith("Edge t0 -> t1 "):
            failure = {"mode": "semantic_drift", "detail": "ascending order became descending order"}
            return json.dumps({"protocol": 1.0, "fidelity": 0.3, "failures": [failure]})
        return INTACT

    with openai_stub() as stub:
        answer_by_prompt(stub, judge)
        run = _localize(path, stub.base_url)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert len(stub.requests) == 3 + 2  # three turns, then two edges
    assert [(n["agent"], n["status"]) for n in data["nodes"]] == [
        ("Planner", "Valid"),
        ("Coder", "Invalid_Root"),
        ("Aggregator", "Valid"),
    ]
    assert data["root_causes"] == [{"agent": "Coder", "step": 1}]
    assert data["root_cause_details"][0]["reason"] == "edge_failure"
    assert data["failed_edges"] == [
        {
            "source": "t0",
            "target": "t1",
            "protocol": 1.0,
            "fidelity": 0.3,
            "findings": ["llm-edge: semantic_drift: ascending order became descending order"],
        }
    ]
    assert data["oracles"] == [
        "execution",
        "arithmetic",
        "review-verdict",
        "llm",
        "contract",
        "value-fidelity",
        "llm-edge",
    ]
    assert data["similarity"] == "lexical"


def test_cli_fails_clearly_when_the_model_cannot_judge_an_edge(tmp_path: Path) -> None:
    path = tmp_path / "sort.json"
    path.write_text(json.dumps(SORT_LOG))

    def judge(system: str, user: str) -> str:
        if "telephone test" not in system:
            return '{"score": 1.0, "critique": ""}'
        return "Looks fine to me."

    with openai_stub() as stub:
        answer_by_prompt(stub, judge)
        run = _localize(path, stub.base_url)
    assert run.returncode == 1
    assert "LLM audit of edge 't" in run.stderr and "the reply holds no JSON object" in run.stderr
    assert "Traceback" not in run.stderr
