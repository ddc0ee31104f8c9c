"""`trust llm up|down|status` as real commands on real llama.cpp servers, in two homes on one machine.

The server must outlive the command that started it (it is detached), a second `up` must find it,
and one home's `down` must never stop another home's server.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from trust.adapters.local.llama import LLAMA_CPP_REQUIREMENT, STATE_FILE
from trust.adapters.local.processes import alive, free_port, terminate

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None,
        reason=f"llama-cpp-python is not installed: pip install '{LLAMA_CPP_REQUIREMENT}'",
    ),
]


@dataclass
class Home:
    """One `TRUST_HOME`, with the `trust` command run in it."""

    path: Path
    started: set[int] = field(default_factory=set)

    def trust(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith("TRUST_")}
        env |= {"TRUST_HOME": str(self.path), "COLUMNS": "250"}
        result = subprocess.run(
            [sys.executable, "-m", "trust", *args], env=env, capture_output=True, text=True, timeout=300
        )
        record = self.record()
        if record is not None:
            self.started.add(int(record["pid"]))
        return result

    def record(self) -> dict[str, object] | None:
        path = self.path / "llm" / STATE_FILE
        return json.loads(path.read_text()) if path.is_file() else None


@pytest.fixture
def homes(tmp_path: Path) -> Iterator[tuple[Home, Home]]:
    a, b = Home(tmp_path / "a"), Home(tmp_path / "b")
    yield a, b
    for home in (a, b):
        home.trust("llm", "down")
        for pid in home.started:  # whatever a failed assertion left running
            if alive(pid):
                terminate(pid, None, 10)


def test_up_twice_gives_one_server_that_outlives_the_command(homes: tuple[Home, Home]) -> None:
    a, _ = homes
    port = free_port()
    first = a.trust("llm", "up", "--port", str(port), "--threads", "1")
    assert first.returncode == 0, first.stderr
    record = a.record()
    assert record is not None and record["port"] == port and record["threads"] == 1
    pid = int(str(record["pid"]))
    assert f"model server started (pid {pid})" in first.stdout
    assert f"URL:     http://127.0.0.1:{port}/v1" in first.stdout and "log:     " in first.stdout
    assert alive(pid)  # the command has exited; the server runs on

    second = a.trust("llm", "up")
    assert second.returncode == 0, second.stderr
    assert f"model server already running (pid {pid})" in second.stdout
    assert a.record() == record

    other_port = a.trust("llm", "up", "--port", str(free_port()))
    assert other_port.returncode == 1
    assert f"already runs at http://127.0.0.1:{port}/v1 (pid {pid}" in other_port.stderr
    assert "trust llm down" in other_port.stderr

    status = a.trust("llm", "status", "--json")
    assert status.returncode == 0, status.stderr
    document = json.loads(status.stdout)
    assert (document["running"], document["answering"], document["pid"]) == (True, True, pid)
    assert document["url"] == f"http://127.0.0.1:{port}/v1" and document["model"] == "SmolLM2-135M-Instruct"
    assert document["uptime_seconds"] >= 0 and document["problem"] is None
    text = a.trust("llm", "status")
    assert f"model server: running, answering (pid {pid})" in text.stdout and "uptime:" in text.stdout


def test_down_in_one_home_leaves_the_others_server_running(homes: tuple[Home, Home]) -> None:
    a, b = homes
    assert a.trust("llm", "up").returncode == 0
    assert b.trust("llm", "up").returncode == 0
    a_pid, b_pid = (int(str(home.record()["pid"])) for home in (a, b))  # type: ignore[index]
    assert a_pid != b_pid

    down = a.trust("llm", "down")
    assert down.returncode == 0 and f"model server stopped (pid {a_pid}" in down.stdout
    assert not alive(a_pid) and a.record() is None
    assert alive(b_pid) and b.record() is not None

    again = a.trust("llm", "down")  # finds nothing of A's, and touches nothing of B's
    assert again.returncode == 0 and "no model server was running" in again.stdout
    assert alive(b_pid)

    status = a.trust("llm", "status")
    assert "model server: not running" in status.stdout
    assert f"no model server runs for {a.path / 'llm'}" in status.stdout and "was stopped (SIGTERM)" in status.stdout


def test_a_record_copied_from_another_home_is_not_that_homes_server(homes: tuple[Home, Home]) -> None:
    a, b = homes
    assert a.trust("llm", "up").returncode == 0
    record = a.record()
    assert record is not None
    (b.path / "llm").mkdir(parents=True)
    (b.path / "llm" / STATE_FILE).write_text(json.dumps(record))  # a home copied from A

    status = b.trust("llm", "status", "--json")
    assert json.loads(status.stdout)["running"] is False
    down = b.trust("llm", "down")
    assert "no model server was running" in down.stdout
    assert alive(int(str(record["pid"])))  # A's server runs on
