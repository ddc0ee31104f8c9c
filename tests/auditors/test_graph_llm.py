"""The tier-2 auditor over a whole agent log: one question per message, and `trust graph localize`
with a judge endpoint (a real HTTP server speaking the chat-completions wire)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.openai_stub import environment_without_models, openai_stub
from trust.adapters.llm.client import LlmClient
from trust.auditors.graph import audit_cig
from trust.auditors.llm import LlmAuditor
from trust.core.graphs.agent_log import build_cig, parse_log
from trust.core.graphs.audit import EdgeScore
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


def _named(user: str) -> str:
    """The first turn id the question names: a critique must refer to its segment to be accepted."""
    found = re.search(r"\bt\d+\b", user)
    assert found is not None
    return found.group()


def _answer(score: float, critique: str, error_type: str | None = None) -> str:
    verdict = "pass" if score >= 0.8 else "fail"
    return json.dumps({"critique": critique, "error_type": error_type, "score": score, "verdict": verdict})


async def test_each_message_is_asked_about_once_per_order_with_the_other_inputs_as_context() -> None:
    cig = build_cig(parse_log(CENSUS_LOG))

    def judge(system: str, user: str) -> str:
        if "telephone test" not in system:
            return _answer(1.0, f"Sound: {_named(user)} does what its input asked")
        if "message of turn t1" in user:
            return _answer(0.1, "Corrupted: 737015 became 737,105 in t2", "protocol")
        return _answer(1.0, f"Intact: the values reach {_named(user)} unchanged")

    with openai_stub() as stub:
        stub.answer_with(judge)
        settings = LlmSettings.model_validate({"base_url": stub.base_url, "model": "auditor", "max_retries": 0})
        async with LlmClient(settings, backoff_seconds=0.01) as client:
            audit = await audit_cig(cig, [LlmAuditor(client, AuditSettings())])
    edge_prompts = [r.body["messages"][1]["content"] for r in stub.requests if "Edge under audit" in str(r.body)]
    # Three messages reach a reasoning turn (the terminal is not asked), each in two orders.
    assert len(edge_prompts) == 3 * 2
    writer = [p for p in edge_prompts if "message of turn t1" in p]
    assert len(writer) == 2 and all("Editor: one sentence, please." in p for p in writer)
    assert audit.edges[("t1", "t2")].score == EdgeScore(0.1, 0.1)
    assert audit.edges[("t0", "t1")].score == EdgeScore() and audit.edges[("t3", "t4")].auditors == ()
    coder = [r.body["messages"][1]["content"] for r in stub.requests if "THE NODE UNDER AUDIT (turn t3" in str(r.body)]
    assert coder and all("What running its code printed" in p and "737.015" in p for p in coder)


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
    env = environment_without_models(
        TRUST_AUDITOR_LLM__BASE_URL=base_url,
        TRUST_AUDITOR_LLM__MAX_RETRIES="0",
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


def test_cli_localizes_a_fidelity_failure_the_judge_reports(tmp_path: Path) -> None:
    path = tmp_path / "sort.json"
    path.write_text(json.dumps(SORT_LOG))

    def judge(system: str, user: str) -> str:
        if "telephone test" not in system:
            return _answer(1.0, f"Sound: {_named(user)} does what its input asked")  # every turn is sound on its own
        if "message of turn t0" in user:
            return _answer(0.3, "Drift: ascending order became descending order in t1", "protocol")
        return _answer(1.0, f"Intact: the list reaches {_named(user)} unchanged")

    with openai_stub() as stub:
        stub.answer_with(judge)
        run = _localize(path, stub.base_url)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert [(n["agent"], n["status"]) for n in data["nodes"]] == [
        ("Planner", "Valid"),
        ("Coder", "Invalid_Root"),
        ("Aggregator", "Valid"),
    ]
    assert data["root_causes"] == [{"agent": "Coder", "step": 1}]
    assert data["root_cause_details"][0]["reason"] == "edge_failure"
    (failed,) = data["failed_edges"]
    assert (failed["source"], failed["target"], failed["protocol"], failed["fidelity"]) == ("t0", "t1", 0.3, 0.3)
    assert failed["findings"][0].startswith("llm: Drift: ascending order became descending order in t1")
    assert data["auditors"] == ["computational", "llm"] and data["similarity"] == "lexical"


def test_cli_fails_clearly_when_the_judge_cannot_answer(tmp_path: Path) -> None:
    path = tmp_path / "sort.json"
    path.write_text(json.dumps(SORT_LOG))
    with openai_stub() as stub:
        stub.answer_with(lambda system, user: "Looks fine to me.")
        run = _localize(path, stub.base_url)
    assert run.returncode == 1
    assert "gave no valid answer" in run.stderr and "the answer is not JSON" in run.stderr
    assert "Traceback" not in run.stderr
