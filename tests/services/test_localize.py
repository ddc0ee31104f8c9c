"""Auditing an agent log file end to end, and `trust graph localize` as a user runs it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.graphs.cig_strategies import APPLES_LOG, who_when_dir, who_when_files
from tests.openai_stub import environment_without_models, openai_stub
from trust.auditors.tiers import computational_auditor
from trust.core.graphs.agent_log import AgentLog
from trust.core.graphs.status import NodeStatus
from trust.errors import ConfigError, GraphError
from trust.services.localize import LogAudit, audit_agent_log, read_agent_log
from trust.settings import AuditSettings, SandboxSettings

TIER1 = computational_auditor(SandboxSettings())


def _audit(log: AgentLog) -> LogAudit:
    return asyncio.run(audit_agent_log(log, AuditSettings(), [TIER1]))


def _trust(*args: str) -> subprocess.CompletedProcess[str]:
    env = environment_without_models(COLUMNS="200", TRUST_AUDIT__SIMILARITY="lexical")  # tier 1, no model to load
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

    report = _audit(parse_log(APPLES_LOG))
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
    assert data["turns"]["t2"]["critique"] == [
        "computational: [factual] wrong product: 1 of 1 calculation(s) wrong: 120 * 0.15 = 16, but 120 * 0.15 = 18"
    ]
    assert data["failed_edges"] == [
        {
            "source": "t3",
            "target": "t4",
            "protocol": 1.0,
            "fidelity": 0.0,
            "findings": ["value-fidelity: 1 of 1 restated value(s) changed: 'remaining': t3 sent 104, t4 restated 140"],
        }
    ]
    assert data["auditors"] == ["computational"]
    assert "label" not in data and data["format"] == "trust.agent-log"


def test_every_who_when_log_is_audited() -> None:
    statuses = set()
    for path in who_when_files():
        data = _audit(read_agent_log(path)).to_json()
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


def test_cli_json_on_a_role_only_who_when_file() -> None:
    # The hand-crafted (Magentic-One) shape: no `name`, the speaker and its addressee in `role`.
    path = Path(__file__).parents[1] / "core" / "graphs" / "logs" / "who_when_hand_crafted.json"
    run = _trust("graph", "localize", str(path), "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["format"] == "who-when"
    assert [(node["id"], node["agent"], node["step"]) for node in data["nodes"]] == [
        (f"t{step}", agent, step)
        for step, agent in enumerate(
            ["human", "Orchestrator", "Orchestrator", "Orchestrator", "WebSurfer"]
            + ["Orchestrator", "Orchestrator", "Assistant", "Orchestrator"]
        )
    ]
    assert data["label"] == {"agent": "Assistant", "step": 7}
    assert data["turns"]["t0"]["role"] == "user" and data["turns"]["t1"]["role"] == "planner"


def test_cli_names_the_readable_formats_for_an_unknown_log(tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    path.write_text(json.dumps([{"event": "start"}]))
    run = _trust("graph", "localize", str(path), "--json")
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "unrecognised agent log (an array whose first item is object). Readable formats:" in run.stderr
    assert "OpenAI Agents SDK trace" in run.stderr and "AutoGen/AG2 messages" in run.stderr


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


# ---------------------------------------------------------------------------------------------- tier 2


def test_nothing_to_audit_with_is_a_config_error() -> None:
    from trust.core.graphs.agent_log import parse_log

    with pytest.raises(ConfigError, match="pass at least one auditor"):
        asyncio.run(audit_agent_log(parse_log(APPLES_LOG), AuditSettings(), []))


# Names every turn of the apples log, so that it refers to whichever segment it is given, and says
# something of its own: a critique the tier-2 auditor accepts for every question.
_JUDGE = json.dumps(
    {"critique": "Wrong: the work in t0, t1, t2, t3 and t4 does not hold up", "error_type": None, "score": 0.1}
    | {"verdict": "fail"}
)


def test_cli_adds_the_tier2_auditor_when_an_endpoint_is_configured(tmp_path: Path) -> None:
    path = tmp_path / "apples.json"
    path.write_text(json.dumps(APPLES_LOG))
    with openai_stub() as stub:
        # The user turn is not judged; four turns and four edges, each asked in two orders.
        for _ in range(4 * 2 + 4 * 2):
            stub.reply(_JUDGE)
        env = environment_without_models(
            TRUST_AUDITOR_LLM__BASE_URL=stub.base_url,
            TRUST_AUDITOR_LLM__MAX_RETRIES="0",
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
    assert len(stub.requests) == 16 and data["auditors"] == ["computational", "llm"]
    prompts = [request.body["messages"][1]["content"] for request in stub.requests]
    assert sum("Edge under audit" in prompt for prompt in prompts) == 8
    # The judge fails every message: every turn that received one is a root cause at its boundary.
    assert [n["status"] for n in data["nodes"]] == ["Valid", *["Invalid_Root"] * 4]
    assert {d["reason"] for d in data["root_cause_details"]} == {"edge_failure"}
    assert "llm: Wrong: the work in t0, t1, t2, t3 and t4 does not hold up" in data["turns"]["t1"]["critique"]
