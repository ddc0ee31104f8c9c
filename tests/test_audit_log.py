"""Auditing an agent log file end to end, and `trust graph localize` as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.graphs.cig_strategies import APPLES_LOG, who_when_dir, who_when_files
from trust.audit_log import audit_agent_log, audit_log_file, read_agent_log
from trust.errors import GraphError
from trust.graphs.status import NodeStatus
from trust.settings import AuditSettings


def _trust(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
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
    from trust.graphs.agent_log import parse_log

    report = audit_agent_log(parse_log(APPLES_LOG), AuditSettings())
    assert [s.value for s in report.localization.statuses.values()] == [
        "Valid",
        "Valid",
        "Invalid_Root",
        "Negligent",
        "Invalid_Root",
    ]
    data = report.to_json()
    assert [(c["agent"], c["step"], c["reason"]) for c in data["root_causes"]] == [
        ("Coder", 2, "node_failure"),
        ("Reviewer", 3, "approved_invalid"),
        ("Aggregator", 4, "edge_failure"),
    ]
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
    assert [set(node) >= {"id", "agent", "step", "status"} for node in data["nodes"]] == [True] * 10
    assert data["nodes"][5]["status"] == "Invalid_Root"
    assert [{k: c[k] for k in ("agent", "step")} for c in data["root_causes"]] == [
        {"agent": "Validation_Expert", "step": 5}
    ]
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
