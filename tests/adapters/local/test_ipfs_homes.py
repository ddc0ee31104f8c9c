"""Two homes on one machine, each with its local IPFS node (`trust ipfs up` / `down` as real commands
and real node processes): a home's commands act on its own node only.

Each home records its node in `HOME/ipfs-node.json`. A record does not make a process a home's node:
a home copied from another brings the other's record (and repo lock) along, and a record left by a
node that died names a pid the system may have given to another home's node since. Neither may lead
one home's `down` to stop another home's node, or its `up` to attach to it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from trust.adapters.local.ipfs import node_version
from trust.adapters.local.processes import alive, free_port, terminate

pytestmark = pytest.mark.slow


@dataclass
class Home:
    """One `TRUST_HOME` with the environment its user runs `trust` in."""

    path: Path
    port: int
    started: list[int] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "TRUST_HOME": str(self.path), "TRUST_IPFS__PORT": str(self.port), "COLUMNS": "250"}

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def trust(self, *args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "trust", *args], env=self.env, capture_output=True, text=True, timeout=120
        )
        record = self.record()
        if record is not None:
            self.started.append(int(record["pid"]))
        return result

    def record(self) -> dict[str, object] | None:
        path = self.path / "ipfs-node.json"
        return json.loads(path.read_text()) if path.is_file() else None


@pytest.fixture
def homes(tmp_path: Path) -> Iterator[tuple[Home, Home]]:
    """Homes A and B; B's node is configured on the port A's node uses (the default for both, as
    for two users who changed nothing), unless a test gives B another."""
    port = free_port()
    a, b = Home(tmp_path / "a", port), Home(tmp_path / "b", port)
    yield a, b
    for home in (b, a):
        home.trust("ipfs", "down")
        for pid in home.started:  # whatever a failed assertion left running
            if alive(pid):
                terminate(pid, None, 15)


def test_down_in_one_home_leaves_the_other_running(homes: tuple[Home, Home]) -> None:
    a, b = homes
    assert a.trust("ipfs", "up").returncode == 0
    b.port = free_port()
    up = b.trust("ipfs", "up")
    assert up.returncode == 0, up.stderr
    down = b.trust("ipfs", "down")
    assert down.returncode == 0 and "IPFS node stopped" in down.stdout
    assert node_version(b.api_url) is None
    assert node_version(a.api_url) is not None
    assert "IPFS node stopped" in a.trust("ipfs", "down").stdout
    assert node_version(a.api_url) is None


def test_up_on_a_port_another_home_holds_fails_and_names_it(homes: tuple[Home, Home]) -> None:
    a, b = homes
    assert a.trust("ipfs", "up").returncode == 0
    pid = int(a.record()["pid"])  # type: ignore[index, call-overload]
    up = b.trust("ipfs", "up")
    assert up.returncode == 1
    message = " ".join(up.stderr.split())
    assert f"port {a.port}" in message
    assert f"pid {pid}" in message and str(a.path / "ipfs") in message
    assert "TRUST_IPFS__PORT" in message and "--port" in message
    assert "Traceback" not in up.stderr
    assert b.record() is None
    assert node_version(a.api_url) is not None
    # B's `down` has nothing of its own to stop.
    down = b.trust("ipfs", "down")
    assert down.returncode == 0 and "no IPFS node" in down.stdout
    assert node_version(a.api_url) is not None


def test_up_on_another_port_than_configured_says_how_the_home_reaches_it(homes: tuple[Home, Home]) -> None:
    a, _ = homes
    port = free_port()
    up = a.trust("ipfs", "up", "--port", str(port))
    assert up.returncode == 0, up.stderr
    assert f"TRUST_IPFS__PORT={port}" in up.stdout


def test_a_copied_home_leaves_the_original_node_alone(homes: tuple[Home, Home]) -> None:
    """B starts as a copy of A taken while A's node runs: A's record and A's repo lock come along."""
    a, b = homes
    assert a.trust("ipfs", "up").returncode == 0
    pid = int(a.record()["pid"])  # type: ignore[index, call-overload]
    shutil.copytree(a.path, b.path)
    assert (b.path / "ipfs" / "repo.lock").is_file()
    b.port = free_port()

    down = b.trust("ipfs", "down")
    assert down.returncode == 0 and "no IPFS node" in down.stdout, down.stdout
    assert str(a.path) in down.stdout  # whose record it was
    assert alive(pid) and node_version(a.api_url) is not None

    up = b.trust("ipfs", "up")
    assert up.returncode == 0, up.stderr
    assert "started" in up.stdout and node_version(b.api_url) is not None
    assert b.record()["repo"] == str(b.path / "ipfs")  # type: ignore[index]
    assert b.trust("ipfs", "down").returncode == 0
    assert node_version(b.api_url) is None
    assert alive(pid) and node_version(a.api_url) is not None


def test_a_stale_record_naming_another_homes_node_stops_nothing(homes: tuple[Home, Home]) -> None:
    """B's node died without `down` (a reboot) and its pid now belongs to A's node."""
    a, b = homes
    assert a.trust("ipfs", "up").returncode == 0
    pid = int(a.record()["pid"])  # type: ignore[index, call-overload]
    b.port = free_port()
    b.path.mkdir()
    stale = {"pid": pid, "host": "127.0.0.1", "port": b.port, "repo": str(b.path / "ipfs"), "home": str(b.path)}
    (b.path / "ipfs-node.json").write_text(json.dumps(stale))

    down = b.trust("ipfs", "down")
    assert down.returncode == 0 and "no IPFS node" in down.stdout
    assert alive(pid) and node_version(a.api_url) is not None

    (b.path / "ipfs-node.json").write_text(json.dumps(stale))
    up = b.trust("ipfs", "up")
    assert up.returncode == 0, up.stderr
    assert "started" in up.stdout and int(b.record()["pid"]) != pid  # type: ignore[index, call-overload]
    assert node_version(b.api_url) is not None
    assert b.trust("ipfs", "down").returncode == 0
    assert alive(pid) and node_version(a.api_url) is not None
