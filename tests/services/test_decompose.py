"""Decomposing trace files: the deterministic path, the LLM path over a real local chat server, the fallback,
and `trust graph hdag` as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.openai_stub import OpenAiStub, openai_stub
from trust.core.decompose.rules import Trace
from trust.core.graphs.hdag import Level, Tier
from trust.core.graphs.serialization import loads
from trust.errors import ConfigError, GraphError
from trust.services.decompose import decompose_file, decompose_trace, load_trace
from trust.settings import LlmSettings, Settings

STEPS = [
    "Sam buys 12 pens at $3 each: 12 * 3 = 36 dollars.",
    "He pays $50, so the change is 50 - 36 = 14 dollars.",
    "Let me verify: 36 + 14 = 50.",
]
RAW = """Problem: Sam buys 12 pens at $3 each and pays with $50. What is his change?

We'll use a simple plan: find the cost, then subtract.

The pens cost 12 * 3 = 36 dollars.

So the change is 50 - 36 = 14 dollars.
"""
LLM_REPLY = {
    "domain": "math",
    "nodes": [
        {"id": "v0", "level": "goal", "content": "Sam's change", "difficulty": "easy", "expression": None},
        {"id": "v1", "level": "step", "content": "12 * 3 = 36", "difficulty": "easy", "expression": None},
        {"id": "v2", "level": "operation", "content": "12 * 3", "difficulty": "easy", "expression": "12 * 3 == 36"},
    ],
    "edges": [
        {"source": "v0", "target": "v1", "type": "decomposes_to"},
        {"source": "v1", "target": "v2", "type": "decomposes_to"},
    ],
}


@pytest.fixture
def stub() -> Iterator[OpenAiStub]:
    with openai_stub() as running:
        yield running


def _offline() -> Settings:
    return Settings(llm=LlmSettings())


def _online(stub: OpenAiStub) -> Settings:
    return Settings(llm=LlmSettings(base_url=stub.base_url, model="decomposer", max_retries=1))


# ---------------------------------------------------------------------------- loading


def test_load_trace_forms(tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text(json.dumps(STEPS))
    (tmp_path / "object.json").write_text(json.dumps({"problem": "Change?", "steps": STEPS, "label": -1}))
    (tmp_path / "raw.txt").write_text(RAW)
    assert load_trace(tmp_path / "list.json", steps=True) == Trace(steps=tuple(STEPS))
    assert load_trace(tmp_path / "object.json", steps=True) == Trace(steps=tuple(STEPS), problem="Change?")
    assert load_trace(tmp_path / "raw.txt", steps=False) == Trace(text=RAW)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "--steps needs JSON"),
        ('{"problem": "p"}', 'no "steps" field'),
        ('{"steps": "one"}', "steps must be a JSON array of strings, got string"),
        ('["a", 3]', r"steps\[1\] must be a string, got number"),
        ('{"problem": 5, "steps": ["a"]}', "problem must be a string, got number"),
    ],
)
def test_bad_step_files_are_named(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "steps.json"
    path.write_text(content)
    with pytest.raises(GraphError, match=message):
        load_trace(path, steps=True)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_trace(tmp_path / "missing.txt", steps=False)
    with pytest.raises(ConfigError, match="is a directory"):
        load_trace(tmp_path, steps=False)
    (tmp_path / "latin1.txt").write_bytes("café 1 + 1 = 2".encode("latin-1"))
    with pytest.raises(GraphError, match="not UTF-8"):
        load_trace(tmp_path / "latin1.txt", steps=False)


# ---------------------------------------------------------------------------- decomposing


async def test_offline_settings_use_the_deterministic_decomposer(tmp_path: Path) -> None:
    (tmp_path / "raw.txt").write_text(RAW)
    result = await decompose_file(tmp_path / "raw.txt", _offline(), steps=False)
    assert result.method == "deterministic"
    assert "TRUST_LLM__BASE_URL is unset" in result.warnings[0]
    assert result.hdag.node("st1").level is Level.STRATEGY


async def test_configured_endpoint_decomposes_with_the_model(stub: OpenAiStub) -> None:
    stub.reply("```json\n" + json.dumps(LLM_REPLY) + "\n```")
    result = await decompose_trace(Trace(steps=tuple(STEPS), problem="Change?"), _online(stub))
    assert result.method == "llm"
    assert [n.id for n in result.hdag.nodes()] == ["v0", "v1", "v2"]
    assert result.hdag.node("v2").tier is Tier.COMPUTATIONAL
    assert result.warnings == ("stripped a code fence around the JSON reply",)
    (request,) = stub.requests
    assert request.body["model"] == "decomposer"
    assert request.body["temperature"] == Settings().llm.decomposition_temperature == 0.0
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.body["messages"][-1]["content"].endswith("Step 3: Let me verify: 36 + 14 = 50.")


async def test_unusable_reply_falls_back(stub: OpenAiStub) -> None:
    stub.reply("I'd rather not produce JSON today.")
    result = await decompose_trace(Trace(steps=tuple(STEPS)), _online(stub))
    assert result.method == "deterministic"
    assert "holds no JSON object" in result.warnings[0]
    assert result.hdag.node("s1.op1").expression == "12 * 3 == 36"


async def test_failing_endpoint_falls_back(stub: OpenAiStub) -> None:
    stub.fail(500)
    stub.fail(502, "bad gateway")
    result = await decompose_trace(Trace(steps=tuple(STEPS)), _online(stub))
    assert result.method == "deterministic"
    assert "HTTP 502 after 2 attempt(s): bad gateway" in result.warnings[0]
    assert len(stub.requests) == 2


async def test_invalid_graph_falls_back_naming_the_violation(stub: OpenAiStub) -> None:
    stub.reply(json.dumps({"nodes": [{"id": "g", "level": "goal", "content": "only a goal"}]}))
    result = await decompose_trace(Trace(text=RAW), _online(stub))
    assert result.method == "deterministic" and "no reasoning node besides the goal" in result.warnings[0]


# ---------------------------------------------------------------------------- the command


def _trust(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trust", "graph", "hdag", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def env() -> dict[str, str]:
    values = {k: v for k, v in os.environ.items() if not k.startswith("TRUST_LLM")}
    return values | {"COLUMNS": "200"}


def test_cli_steps_file_as_json(tmp_path: Path, env: dict[str, str]) -> None:
    path = tmp_path / "steps.json"
    path.write_text(json.dumps({"problem": "What is Sam's change?", "steps": STEPS}))
    done = _trust(env, str(path), "--steps", "--json")
    assert done.returncode == 0, done.stderr
    hdag = loads(done.stdout)
    assert [n.id for n in hdag.nodes() if n.level is Level.STEP] == ["s1", "s2", "s3"]
    assert hdag.node("g0").content == "What is Sam's change?"
    assert hdag.node("s2.op1").expression == "50 - 36 == 14"
    assert json.loads(done.stdout)["edges"][0] == {"source": "g0", "target": "s1", "type": "decomposes_to"}
    assert "deterministic decomposer" in done.stderr


def test_cli_raw_text_as_a_tree(tmp_path: Path, env: dict[str, str]) -> None:
    path = tmp_path / "trace.txt"
    path.write_text(RAW)
    done = _trust(env, str(path))
    assert done.returncode == 0, done.stderr
    assert "HDAG by the deterministic decomposer" in done.stdout
    assert "st1 strategy · tier 2" in done.stdout
    assert "s2.op1 operation · tier 1 · easy: 50 - 36 = 14  ⟨50 - 36 == 14⟩" in done.stdout
    assert "(depends_on s1)" in done.stdout


def test_cli_uses_the_configured_endpoint(tmp_path: Path, env: dict[str, str], stub: OpenAiStub) -> None:
    stub.reply(json.dumps(LLM_REPLY))
    path = tmp_path / "trace.txt"
    path.write_text(RAW)
    done = _trust(env | {"TRUST_LLM__BASE_URL": stub.base_url}, str(path), "--json")
    assert done.returncode == 0, done.stderr
    assert [n.id for n in loads(done.stdout).nodes()] == ["v0", "v1", "v2"]
    assert len(stub.requests) == 1


def test_cli_errors_are_one_line(tmp_path: Path, env: dict[str, str]) -> None:
    done = _trust(env, str(tmp_path / "missing.txt"))
    assert done.returncode == 1 and "error: trace file" in done.stderr and "Traceback" not in done.stderr
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    done = _trust(env, str(empty))
    assert done.returncode == 1 and "trace is empty" in done.stderr
