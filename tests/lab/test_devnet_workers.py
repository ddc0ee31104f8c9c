"""`trust devnet up` runs the workers of the auditors it stakes, `trust submit` gets a verdict with no
other command, `trust devnet down` stops everything, two homes never touch each other, and
`trust wallet fund` is the devnet's faucet.

As a user runs them: the `trust` command in subprocesses, real detached processes (Anvil, the IPFS
node, the embedded model server, the workers), checked through /proc, JSON-RPC and HTTP. One devnet
of three auditors (one per tier) is shared by the module; a second home comes up for the isolation
test.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from trust.adapters.local.anvil import AnvilNode, rpc_ready
from trust.adapters.local.processes import alive, command_line, free_port
from trust.adapters.local.toolchain import Toolchain
from trust.errors import ConfigError

pytestmark = [pytest.mark.chain, pytest.mark.slow]

_UNFUNDED = "0x00000000000000000000000000000000000f00D5"


@dataclass
class Home:
    """One TRUST_HOME with a devnet of its own ports."""

    root: Path
    env: dict[str, str]
    first_up: str = ""
    """What the first `trust devnet up` printed."""

    @property
    def devnet(self) -> Path:
        return self.root / "home" / "devnet"

    @property
    def rpc_url(self) -> str:
        return f"http://127.0.0.1:{self.env['TRUST_DEVNET__PORT']}"

    def trust(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "trust", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def record(self) -> dict:
        return json.loads((self.devnet / "processes.json").read_text())

    def pids(self) -> list[int]:
        """Every process this home's devnet recorded: workers, expert, model server, IPFS node, Anvil."""
        record = self.record()
        pids = [entry["pid"] for entry in record["workers"].values()]
        pids += [p for p in (record.get("model_pid"), record.get("ipfs_pid")) if p]
        if record.get("expert"):
            pids.append(record["expert"]["pid"])
        pids.append(int((self.devnet / "anvil.pid").read_text()))
        return pids


def _home(root: Path) -> Home:
    env = dict(os.environ)
    env.update(
        TRUST_HOME=str(root / "home"),
        TRUST_DEVNET__PORT=str(free_port()),
        TRUST_IPFS__PORT=str(free_port()),
        TRUST_DEPLOYMENTS_DIR=str(root / "deployments"),
        TRUST_DEVNET__KEYSTORE_SCRYPT_N=str(2**10),
        COLUMNS="250",
    )
    return Home(root, env)


def _running(pid: int) -> bool:
    # A zombie (ended, not yet reaped by init) has an empty command line.
    return alive(pid) and bool(command_line(pid))


def _kill_leftovers(home: Home) -> None:
    """The safety net of a failed test: whatever the record names and still runs, SIGKILLed."""
    try:
        pids = home.pids()
    except (OSError, ValueError, KeyError):
        return
    for pid in pids:
        if _running(pid) and str(home.root) in " ".join(command_line(pid) or []):
            os.kill(pid, signal.SIGKILL)


def _up(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    result = home.trust("devnet", "up", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def home_a(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    home = _home(tmp_path_factory.mktemp("home-a"))
    home.first_up = _up(home, "--auditors", "3").stdout
    yield home
    home.trust("devnet", "down")
    _kill_leftovers(home)


def _worker_args(pid: int) -> list[str]:
    args = command_line(pid)
    assert args is not None, f"worker {pid} is not running"
    return args


def test_up_starts_a_worker_per_auditor_and_they_are_alive(home_a: Home) -> None:
    out = home_a.first_up
    auditors = json.loads((home_a.devnet / "devnet.json").read_text())["auditors"]
    record = home_a.record()
    assert sorted(record["workers"]) == sorted(a["address"] for a in auditors)
    for auditor in auditors:
        entry = record["workers"][auditor["address"]]
        args = _worker_args(entry["pid"])
        assert args[args.index("--keystore") + 1] == str(home_a.devnet / "keystores" / Path(auditor["keystore"]).name)
        assert args[args.index("--tier") + 1] == str(auditor["tier"])
        log = home_a.devnet / "workers" / f"{auditor['address'].lower()}.log"
        assert ") following " in log.read_text()
        assert auditor["address"] in out and f"workers/{auditor['address'].lower()}.log" in out
    # Passwords are in files only their owner reads.
    for name in ("processes.json", "review-pages.json"):
        assert stat.S_IMODE((home_a.devnet / name).stat().st_mode) == 0o600
    (page,) = json.loads((home_a.devnet / "review-pages.json").read_text())
    assert page["auditor"] == next(a["address"] for a in auditors if a["tier"] == 3)
    assert httpx.get(f"{page['url']}/healthz", timeout=5).status_code == 200
    assert page["url"] in out and str(home_a.devnet / "review-pages.json") in out
    assert page["password"] not in out
    assert "voted by a person" in out and "scripted expert" not in out
    # The IPFS node and the model server the workers use run too, and were recorded as started by `up`.
    assert record["ipfs_pid"] and _running(record["ipfs_pid"])
    assert record["model_pid"] and _running(record["model_pid"])
    status = home_a.trust("devnet", "status")
    assert status.returncode == 0, status.stderr
    assert "devnet running" in status.stdout and status.stdout.count("│ running (pid") == 3


def test_a_second_up_keeps_running_workers_and_restarts_a_dead_one(home_a: Home) -> None:
    before = {address: entry["pid"] for address, entry in home_a.record()["workers"].items()}
    tier1 = next(a for a, e in home_a.record()["workers"].items() if e["tier"] == 1)
    os.kill(before[tier1], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while _running(before[tier1]) and time.monotonic() < deadline:
        time.sleep(0.1)
    status = home_a.trust("devnet", "status")
    assert "dead" in status.stdout and "1 workers are not running" in status.stdout

    again = _up(home_a)
    after = {address: entry["pid"] for address, entry in home_a.record()["workers"].items()}
    assert "already running" in again.stdout
    assert {a: p for a, p in after.items() if a != tier1} == {a: p for a, p in before.items() if a != tier1}
    assert after[tier1] != before[tier1] and _running(after[tier1])
    assert again.stdout.count("│ started (pid") == 1 and again.stdout.count("│ running (pid") == 2


def _tier1_trace(path: Path) -> Path:
    """A trace every node of which tier 1 decides at once: a goal and two operations, all checkable."""

    def node(node_id: str, level: str, content: str, expression: str) -> dict:
        digest = hashlib.sha256(content.encode()).hexdigest()
        return {
            "id": node_id,
            "level": level,
            "content": content,
            "content_hash": digest,
            "difficulty": "easy",
            "domain": "math",
            "stakes": "low",
            "tier": 1,
            "expression": expression,
        }

    document = {
        "format": "trust.hdag",
        "version": 1,
        "nodes": [
            node("g", "goal", "17 * 23 + 5 = 396", "17 * 23 + 5 == 396"),
            node("a", "operation", "17 * 23 = 391", "17 * 23 == 391"),
            node("b", "operation", "391 + 5 = 396", "391 + 5 == 396"),
        ],
        "edges": [
            {"source": "g", "target": "a", "type": "decomposes_to"},
            {"source": "g", "target": "b", "type": "decomposes_to"},
            {"source": "a", "target": "b", "type": "depends_on"},
        ],
    }
    path.write_text(json.dumps(document))
    return path


def test_submit_on_the_devnet_returns_a_verdict_with_nothing_else_started(home_a: Home, tmp_path: Path) -> None:
    trace = _tier1_trace(tmp_path / "arithmetic.hdag.json")
    result = home_a.trust("submit", str(trace), "--json", "--max-latency", "300")
    assert result.returncode == 0, result.stderr[-3000:]
    audit = json.loads(result.stdout)
    assert audit["verdict"] == "VALID"
    assert {node_id: node["status"] for node_id, node in audit["nodes"].items()} == {
        "g": "Valid",
        "a": "Valid",
        "b": "Valid",
    }


def _token_balance(rpc_url: str, token: str, address: str) -> int:
    data = "0x70a08231" + address.lower().removeprefix("0x").rjust(64, "0")  # balanceOf(address)
    answer = httpx.post(
        rpc_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": [{"to": token, "data": data}, "latest"]},
        timeout=10,
    ).json()
    return int(answer["result"], 16)


def _eth_balance(rpc_url: str, address: str) -> int:
    answer = httpx.post(
        rpc_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "eth_getBalance", "params": [address, "latest"]},
        timeout=10,
    ).json()
    return int(answer["result"], 16)


def test_wallet_fund_credits_eth_and_tokens(home_a: Home) -> None:
    from trust.lab.devnet import parse_units

    token = json.loads((home_a.root / "deployments" / "31337.json").read_text())["contracts"]["TrustToken"]
    assert _eth_balance(home_a.rpc_url, _UNFUNDED) == 0
    result = home_a.trust("wallet", "fund", _UNFUNDED, "--eth", "2.5", "--tokens", "1500")
    assert result.returncode == 0, result.stderr
    assert _eth_balance(home_a.rpc_url, _UNFUNDED) == 2_500_000_000_000_000_000
    assert _token_balance(home_a.rpc_url, token, _UNFUNDED) == 1500 * 10**18
    assert "balance: 2.5 ETH, 1500 tokens" in result.stdout

    again = home_a.trust("wallet", "fund", _UNFUNDED, "--eth", "0", "--tokens", "0.25")
    assert again.returncode == 0, again.stderr
    assert _eth_balance(home_a.rpc_url, _UNFUNDED) == 2_500_000_000_000_000_000
    assert _token_balance(home_a.rpc_url, token, _UNFUNDED) == 1500 * 10**18 + 25 * 10**16

    refused = home_a.trust("wallet", "fund", "0xf00d")
    assert refused.returncode == 1 and "'0xf00d' is not an Ethereum address" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    for text, words in (("ten", "--eth: 'ten' is not an amount"), ("-1", "--eth must be zero or a positive amount")):
        with pytest.raises(ConfigError, match=re.escape(words)):
            parse_units(text, "--eth")
    assert parse_units("0.000000000000000001", "--eth") == 1


def test_wallet_fund_is_refused_on_a_chain_that_is_not_the_devnet(home_a: Home) -> None:
    with AnvilNode.start(Toolchain.discover(), chain_id=11155111) as other:
        refused = home_a.trust("wallet", "fund", _UNFUNDED, "--rpc-url", other.rpc_url)
        balance = _eth_balance(other.rpc_url, _UNFUNDED)
    assert refused.returncode == 1
    assert "is chain 11155111, not the devnet" in refused.stderr and "Traceback" not in refused.stderr
    assert balance == 0


def test_two_homes_never_touch_each_other(home_a: Home, tmp_path_factory: pytest.TempPathFactory) -> None:
    home_b = _home(tmp_path_factory.mktemp("home-b"))
    try:
        _up(home_b, "--auditors", "3")
        b_pids = home_b.pids()
        assert all(_running(pid) for pid in b_pids)

        # A third home on B's node port, then on B's IPFS port: refused in seconds, naming the setting.
        home_c = _home(tmp_path_factory.mktemp("home-c"))
        home_c.env["TRUST_DEVNET__PORT"] = home_b.env["TRUST_DEVNET__PORT"]
        taken = home_c.trust("devnet", "up", "--auditors", "3")
        assert taken.returncode == 1 and "Traceback" not in taken.stderr
        assert f"port {home_b.env['TRUST_DEVNET__PORT']} is taken" in taken.stderr
        assert "TRUST_DEVNET__PORT" in taken.stderr
        home_c.env["TRUST_DEVNET__PORT"] = str(free_port())
        home_c.env["TRUST_IPFS__PORT"] = home_b.env["TRUST_IPFS__PORT"]
        taken = home_c.trust("devnet", "up", "--auditors", "3")
        assert taken.returncode == 1 and "Traceback" not in taken.stderr
        assert "TRUST_IPFS__PORT" in taken.stderr
        assert rpc_ready(f"http://127.0.0.1:{home_c.env['TRUST_DEVNET__PORT']}") is None

        # `down` in A stops every process of A and leaves none behind; B runs on.
        a_pids = home_a.pids()
        down = home_a.trust("devnet", "down")
        assert down.returncode == 0, down.stderr
        assert "3 workers stopped" in down.stdout and "devnet stopped" in down.stdout
        assert [pid for pid in a_pids if _running(pid)] == []
        assert not (home_a.devnet / "processes.json").exists()
        assert all(_running(pid) for pid in b_pids)
        assert rpc_ready(home_b.rpc_url) == 31337

        # A record copied from B into A names B's processes: A's `down` leaves them alone.
        shutil.copy(home_b.devnet / "processes.json", home_a.devnet / "processes.json")
        shutil.copy(home_b.devnet / "anvil.pid", home_a.devnet / "anvil.pid")
        copied = home_a.trust("devnet", "down")
        assert copied.returncode == 0 and "no devnet was running" in copied.stdout, copied.stdout + copied.stderr
        assert all(_running(pid) for pid in b_pids)

        down_b = home_b.trust("devnet", "down")
        assert down_b.returncode == 0, down_b.stderr
        assert [pid for pid in b_pids if _running(pid)] == []
    finally:
        home_b.trust("devnet", "down")
        _kill_leftovers(home_b)
