"""Auditing an agent log file end to end, and `trust graph localize` as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.graphs.cig_strategies import APPLES_LOG, who_when_dir, who_when_files
from tests.openai_stub import OpenAiStub, openai_stub
from trust.adapters.llm.client import LlmClient
from trust.core.graphs.cig import Role
from trust.core.graphs.oracles import LlmNodeOracle, NodeVerdict
from trust.core.graphs.status import NodeStatus
from trust.errors import GraphError, LlmError
from trust.services.localize import audit_agent_log, audit_log_file, read_agent_log
from trust.settings import AuditSettings, LlmSettings


def _trust(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200", TRUST_AUDIT__SIMILARITY="lexical")  # no model to load
    for key in list(env):
        if key.startswith("TRUST_LLM"):
            del env[key]  # the deterministic oracles only
    return subprocess.run(
        [sys.executable, "-m", "trust", *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_reading_bad_files_names_the_file_and_the_problem(tmp_path: Path) -> None:
    with pytest.raises(GraphError, match="no such file"):
        read_agent_log(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "trust.agent-log",\n "version": 1,,}')
    with pytest.raises(GraphError, match=r"broken.json: invalid JSON at line 2, column 15"):
        read_agent_log(broken)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe{}")
    with pytest.raises(GraphError, match="not UTF-8"):
        read_agent_log(binary)
    big = tmp_path / "big.json"
    big.write_text(json.dumps(APPLES_LOG))
    with pytest.raises(GraphError, match="above the limit of 100"):
        read_agent_log(big, max_bytes=100)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**APPLES_LOG, "version": 3}))
    with pytest.raises(GraphError, match=r"bad.json: version: 3 is not supported"):
        read_agent_log(bad)


def test_the_sample_log_localizes_each_fault() -> None:
    from trust.core.graphs.agent_log import parse_log

    report = audit_agent_log(parse_log(APPLES_LOG), AuditSettings())
    assert [s.value for s in report.localization.statuses.values()] == [
        "Valid",
        "Valid",
        "Invalid_Root",
        "Negligent",
        "Invalid_Root",
    ]
    data = report.to_json()
    assert data["root_causes"] == [
        {"agent": "Coder", "step": 2},
        {"agent": "Reviewer", "step": 3},
        {"agent": "Aggregator", "step": 4},
    ]
    assert [d["reason"] for d in data["root_cause_details"]] == ["node_failure", "approved_invalid", "edge_failure"]
    assert data["turns"]["t2"]["critique"] == ["arithmetic: wrong calculation: 120 * 0.15 = 16 (it is 18)"]
    assert data["failed_edges"][0]["findings"] == ["value-fidelity: 'remaining': t3 sent 104, t4 restated 140"]
    assert "label" not in data and data["format"] == "trust.agent-log"


def test_every_who_when_log_is_audited() -> None:
    statuses = set()
    for path in who_when_files():
        data = audit_log_file(path, AuditSettings()).to_json()
        assert [node["step"] for node in data["nodes"]] == list(range(len(data["nodes"])))
        statuses |= {node["status"] for node in data["nodes"]}
        assert data["label"]["step"] < len(data["nodes"])
    assert statuses <= {status.value for status in NodeStatus}
    assert {"Valid", "Invalid_Root"} <= statuses


def test_cli_json_on_a_who_when_file() -> None:
    run = _trust("graph", "localize", str(who_when_dir() / "10.json"), "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert [set(node) for node in data["nodes"]] == [{"id", "agent", "step", "status"}] * 10
    assert data["nodes"][5]["status"] == "Invalid_Root"
    assert data["root_causes"] == [{"agent": "Validation_Expert", "step": 5}]
    assert data["label"] == {"agent": "Validation_Expert", "step": 5}


def test_cli_json_and_table_on_the_project_format(tmp_path: Path) -> None:
    path = tmp_path / "apples.json"
    path.write_text(json.dumps(APPLES_LOG))
    run = _trust("graph", "localize", str(path), "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert [(n["id"], n["agent"], n["step"], n["status"]) for n in data["nodes"]] == [
        ("t0", "Alice", 0, "Valid"),
        ("t1", "Planner", 1, "Valid"),
        ("t2", "Coder", 2, "Invalid_Root"),
        ("t3", "Reviewer", 3, "Negligent"),
        ("t4", "Aggregator", 4, "Invalid_Root"),
    ]
    assert [(c["agent"], c["step"]) for c in data["root_causes"]] == [("Coder", 2), ("Reviewer", 3), ("Aggregator", 4)]
    table = _trust("graph", "localize", str(path))
    assert table.returncode == 0, table.stderr
    assert "root cause: step 2 (Coder), Invalid_Root, node_failure" in table.stdout
    assert "Negligent" in table.stdout and "120 * 0.15 = 16" in table.stdout


def test_cli_reports_bad_input_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"history": [{"content": 4, "name": "A", "role": "user"}], "question": "q"}))
    run = _trust("graph", "localize", str(path), "--json")
    assert run.returncode == 1
    assert "history[0].content: expected a string, got integer" in run.stderr
    assert "Traceback" not in run.stderr


# ---------------------------------------------------------------------------------------------- LLM oracle


def _client(stub: OpenAiStub) -> LlmClient:
    settings = LlmSettings.model_validate({"base_url": stub.base_url, "model": "auditor", "max_retries": 0})
    return LlmClient(settings, backoff_seconds=0.01)


async def test_the_llm_oracle_asks_about_each_reasoning_turn_over_http() -> None:
    from trust.core.graphs.agent_log import build_cig, parse_log

    cig = build_cig(parse_log(json.loads((who_when_dir() / "1.json").read_text())))
    reasoning = [turn for turn in cig.turns() if turn.role is not Role.TOOL]
    with openai_stub() as stub:
        for index, _ in enumerate(reasoning):
            verdict = {"score": 0.2 if index == 0 else 1.0, "critique": f"turn {index}", "rejects_input": False}
            stub.reply(f"```json\n{json.dumps(verdict)}\n```")
        async with _client(stub) as client:
            oracle = LlmNodeOracle(client, concurrency=1)
            await oracle.prepare(cig)
    assert len(stub.requests) == len(reasoning) == 4
    first = stub.requests[0].body
    assert first["model"] == "auditor" and first["temperature"] == 0.0
    assert first["response_format"] == {"type": "json_object"}
    prompt = first["messages"][1]["content"]
    assert "Role: expert" in prompt and "sunset awning" in prompt  # the task reaches the first turn
    assert "Computer_terminal ran this turn's code (step 1)" in prompt
    second = stub.requests[1].body["messages"][1]["content"]
    assert "Message received from Computer_terminal (step 1)" in second
    first_turn = cig.turn("t0")
    assert oracle.audit_node(first_turn, [], []) == NodeVerdict(0.2, "turn 0")
    assert oracle.audit_node(cig.turn("t1"), [], []) is None  # the terminal was not asked
    report = audit_agent_log(parse_log(APPLES_LOG), AuditSettings(), node_oracles=[oracle])
    assert "llm" in report.to_json()["oracles"]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("I think it is fine.", "the reply holds no JSON object"),
        ('{"score": 7}', "score 7 is not a number in"),
        ('{"score": "high"}', "score 'high' is not a number in"),
    ],
)
async def test_unusable_llm_verdicts_name_the_turn(reply: str, message: str) -> None:
    from trust.core.graphs.agent_log import build_cig, parse_log

    cig = build_cig(parse_log(APPLES_LOG))
    with openai_stub() as stub:
        for _ in range(len(cig)):
            stub.reply(reply)
        async with _client(stub) as client:
            with pytest.raises(LlmError, match=f"LLM audit of turn 't\\d': {message}"):
                await LlmNodeOracle(client, concurrency=1).prepare(cig)


def test_cli_adds_the_llm_oracle_when_an_endpoint_is_configured(tmp_path: Path) -> None:
    path = tmp_path / "apples.json"
    path.write_text(json.dumps(APPLES_LOG))
    with openai_stub() as stub:
        for _ in range(5):  # every turn is asked about first, then every edge
            stub.reply('{"score": 0.1, "critique": "the model disagrees", "rejects_input": false}')
        for _ in range(4):
            stub.reply('{"protocol": 1.0, "fidelity": 1.0, "failures": []}')
        env = dict(
            os.environ,
            TRUST_LLM__BASE_URL=stub.base_url,
            TRUST_LLM__MAX_RETRIES="0",
            TRUST_AUDIT__SIMILARITY="lexical",
        )
        run = subprocess.run(
            [sys.executable, "-m", "trust", "graph", "localize", str(path), "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert len(stub.requests) == 5 + 4 and {"llm", "llm-edge"} <= set(data["oracles"])
    # The model fails every turn: t0 is the root, the rest cascade, except t4 whose edge failed.
    assert [n["status"] for n in data["nodes"]] == [
        "Invalid_Root",
        "Invalid_Cascade",
        "Invalid_Cascade",
        "Invalid_Cascade",
        "Invalid_Root",
    ]
    assert "llm: the model disagrees" in data["turns"]["t1"]["critique"]
