"""Every trace input is read as what it claims to be (`trust.services.sdk.inputs`), through the SDK, the files of
`trust submit` and the command itself: JSON that does not parse is an error naming its position, raised
before anything is reached (the chain and IPFS here are addresses where nothing answers, so an input
that got past parsing would fail on the connection instead), and JSON that is no trace says what it is.
No network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.graphs.cig_strategies import APPLES_LOG
from trust.adapters.chain.wallets import dev_account
from trust.adapters.local.processes import free_port
from trust.core.decompose.rules import Trace
from trust.core.graphs.hdag import Hdag
from trust.core.graphs.serialization import dumps
from trust.errors import GraphError
from trust.lab.demo.clinical import sound_trace
from trust.services.decompose import load_trace, read_trace
from trust.services.sdk import AuditConfig, TrustClient
from trust.services.sdk.client import agents_graph, trace_graph
from trust.settings import DevnetSettings, Settings

TRUNCATED_HDAG = '{"format": "trust.hdag", "version": 1, "nodes": ['
"""The file of the report: a trust.hdag document cut short after its first bracket."""
POSITION = "line 1, column 50 (character 49)"
STEPS = ["3 * 4 = 12 dollars for the notebooks.", "20 - 12 = 8, so Ana gets 8 dollars back."]


def _offline_client(tmp_path: Path) -> TrustClient:
    dead = f"http://127.0.0.1:{free_port()}"
    return TrustClient(
        dead, dead, account=dev_account(DevnetSettings().mnemonic, 3), settings=Settings(), journal_dir=tmp_path
    )


async def test_a_truncated_hdag_is_refused_with_its_position_before_anything_is_reached(tmp_path: Path) -> None:
    client = _offline_client(tmp_path)
    with pytest.raises(GraphError, match="not valid JSON") as raised:
        await client.audit_trace(TRUNCATED_HDAG)
    message = str(raised.value)
    assert "Expecting value" in message and POSITION in message and "cut short" in message
    assert not list(tmp_path.rglob("*.json")), "no session record: nothing was submitted"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[1, 2", "Expecting ',' delimiter at line 1, column 6 (character 5)"),
        ('{"steps": ["a",\n  "b" "c"]}', "Expecting ',' delimiter at line 2, column 7 (character 22)"),
        ('  {"format": "trust.hdag", }', "Expecting property name enclosed in double quotes at line 1, column 28"),
    ],
)
def test_json_that_does_not_parse_names_line_column_and_character(text: str, expected: str) -> None:
    with pytest.raises(GraphError, match="not valid JSON") as raised:
        trace_graph(text, AuditConfig())
    assert expected in str(raised.value)


def test_json_that_is_no_trace_says_what_it_is_and_what_is_accepted() -> None:
    config = AuditConfig()
    with pytest.raises(GraphError, match=r"no \"steps\" field.*fields \['answer', 'text'\].*trust.hdag document"):
        trace_graph('{"text": "2 + 2 = 4", "answer": 4}', config)
    with pytest.raises(GraphError, match="multi-agent log.*--agents"):
        trace_graph(json.dumps(APPLES_LOG), config)
    with pytest.raises(GraphError, match="format 'trust.proof'"):
        trace_graph('{"format": "trust.proof", "steps": []}', config)
    with pytest.raises(GraphError, match=r"steps\[1\] must be a string, got number"):
        trace_graph('["2 + 2 = 4", 4]', config)
    with pytest.raises(GraphError, match="steps is an empty array"):
        trace_graph("[]", config)
    with pytest.raises(GraphError, match="trust.hdag document, not an agent log"):
        agents_graph(dumps(sound_trace()), config)


def test_documents_are_read_as_what_they_claim() -> None:
    config = AuditConfig()
    graph = trace_graph("\n  " + dumps(sound_trace()), config)
    assert set(graph.graph.nodes) == set(sound_trace().graph.nodes)
    # A steps document is audited as its steps, never as the text of its JSON.
    as_steps = trace_graph(json.dumps({"problem": "Change from 20?", "steps": STEPS}), config)
    contents = " ".join(node.content for node in as_steps.nodes())
    assert "12 dollars" in contents and '"steps"' not in contents
    assert len(trace_graph(json.dumps(STEPS), config)) == len(as_steps)
    prose = trace_graph("Step 1: 3 * 4 = 12.\nStep 2: 20 - 12 = 8.", config)
    assert isinstance(prose, Hdag)


def test_agent_logs_that_do_not_parse_name_the_position() -> None:
    with pytest.raises(GraphError, match=r"the agent log is not valid JSON: .* line 1, column 12 \(character 11\)"):
        agents_graph('{"turns": [', AuditConfig())


def test_trace_files_are_read_as_what_they_claim(tmp_path: Path) -> None:
    truncated = tmp_path / "trace.hdag.json"
    truncated.write_text(TRUNCATED_HDAG)
    with pytest.raises(GraphError, match=f"{truncated} is not valid JSON") as raised:
        read_trace(truncated, steps=False)
    assert POSITION in str(raised.value)
    # Named *.json: it claims JSON even when its first character does not.
    named = tmp_path / "notes.json"
    named.write_text("Step 1: 2 + 2 = 4.")
    with pytest.raises(GraphError, match="not valid JSON: Expecting value at line 1, column 1"):
        read_trace(named, steps=False)
    steps = tmp_path / "steps.txt"
    steps.write_text(json.dumps({"problem": "Change?", "steps": STEPS}))
    assert read_trace(steps, steps=False) == Trace(steps=tuple(STEPS), problem="Change?")
    document = tmp_path / "graph.txt"
    document.write_text(dumps(sound_trace()))
    assert isinstance(read_trace(document, steps=False), Hdag)
    with pytest.raises(GraphError, match="decomposed already"):
        load_trace(document, steps=False)
    with pytest.raises(GraphError, match="--steps needs JSON.*line 1, column 1"):
        read_trace(named, steps=True)


def _submit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    dead = f"http://127.0.0.1:{free_port()}"
    env = {key: value for key, value in os.environ.items() if not key.startswith("TRUST_")}
    env |= {"TRUST_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "trust", "submit", *args, "--rpc-url", dead, "--ipfs", dead],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_trust_submit_refuses_a_truncated_file_in_one_line(tmp_path: Path) -> None:
    truncated = tmp_path / "trace.json"
    truncated.write_text(TRUNCATED_HDAG)
    done = _submit(tmp_path, str(truncated))
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "not valid JSON" in lines[0] and POSITION in lines[0]
    # The same for an agent log, and the input is refused before the chain is looked for.
    log = tmp_path / "log.json"
    log.write_text('{"format": "trust.agent-log", "turns": [')
    refused = _submit(tmp_path, str(log), "--agents")
    assert refused.returncode == 1 and "line 1, column 41 (character 40)" in refused.stderr, refused.stderr
    assert "Traceback" not in done.stderr + refused.stderr
