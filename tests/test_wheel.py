"""A provider or an auditor installs the wheel and needs no checkout: `scripts/wheel.sh` builds it with
the compiled protocol inside, it goes into a fresh virtual environment, and from there, in a folder
outside the checkout with no TRUST_* variable and no PYTHONPATH, `trust worker run` audits and votes,
`trust submit` gets a final verdict, and `trust gateway` serves the explorer of that chain, against a
network started from the repository (`LocalNetwork`: Anvil, the local IPFS node, one staked tier-1
auditor with no worker of its own).

The virtual environment is made without pip and without the system's packages; the wheel is installed
with `--no-deps --no-index`, and the dependencies come from this interpreter's site-packages through a
`.pth` line. Such a line adds the folder only: the `.pth` files inside it (among them the editable
install's, which points at `src/`) are not read, so `import trust` can only find the wheel's copy,
which the probe checks.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import httpx
import pytest

from trust.adapters.chain.artifacts import differences, read_compiled
from trust.adapters.chain.compiler import compile_checkout
from trust.adapters.local.processes import free_port
from trust.adapters.local.toolchain import Toolchain
from trust.adapters.local.workers import READY_LINE, StartedProcess, start_process, stop_processes, wait_ready
from trust.lab.localnet import LOCAL_PROTOCOL, LocalNetwork

pytestmark = [pytest.mark.chain, pytest.mark.slow]

CHECKOUT = Path(__file__).resolve().parents[1]
PROTOCOL = LOCAL_PROTOCOL.model_copy(update={"committee_size_tier1": 1})
"""One tier-1 seat per segment: the one auditor whose worker runs from the wheel decides each."""

_PROBE = """
import json, sys
import trust
from trust.adapters.chain.compiler import compile_protocol
from trust.adapters.local.toolchain import Toolchain, find_project_root
artifacts = compile_protocol()
print(json.dumps({
    "trust": trust.__file__,
    "path": sys.path,
    "root": None if find_project_root() is None else str(find_project_root()),
    "toolchain_root": None if Toolchain.discover().root is None else str(Toolchain.discover().root),
    "contracts": sorted(artifacts),
    "audit_bytecode": artifacts["TRUSTAudit"].bytecode,
    "solcx_imported": "solcx" in sys.modules,
}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        ["bash", str(CHECKOUT / "scripts" / "wheel.sh"), str(out)],
        env=os.environ | {"PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (path,) = out.glob("trust_audit-*.whl")
    return path


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-index"]
        + [str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "_trust_test_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(ours)))
    return root


def _environment(venv: Path, home: Path) -> dict[str, str]:
    """The user's environment less anything that could lead back to the checkout."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TRUST_", "PYTHON")) and key != "VIRTUAL_ENV"
    }
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and not Path(p).resolve().is_relative_to(CHECKOUT)]
    return env | {"PATH": os.pathsep.join([str(venv / "bin"), *path]), "TRUST_HOME": str(home), "COLUMNS": "200"}


def test_the_wheel_carries_the_protocol_compiled_from_contracts_src(wheel: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        shipped = tmp_path / "contracts.json"
        shipped.write_bytes(archive.read("trust/adapters/chain/abi/contracts.json"))
    assert {
        "trust/py.typed",
        "trust/adapters/web_templates/layout.html",
        "trust/auditors/templates/review.html",
        "trust/api/explorer/templates/base.html",
    } <= set(names)
    # Nothing of the checkout beyond the package: no sources, no tests, no caches.
    assert all(name.startswith(("trust/", "trust_audit-")) for name in names), names
    assert not any("__pycache__" in name or name.endswith(".sol") for name in names)
    found = read_compiled(shipped)
    assert found is not None
    assert differences(found, compile_checkout(Toolchain.discover())) == []


def test_the_installed_package_runs_without_the_checkout(venv: Path, tmp_path: Path) -> None:
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", _PROBE],
        cwd=tmp_path,
        env=_environment(venv, tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    seen = json.loads(probe.stdout)
    assert Path(seen["trust"]).is_relative_to(venv)
    assert not [p for p in seen["path"] if p and Path(p).resolve().is_relative_to(CHECKOUT / "src")]
    assert seen["root"] is None and seen["toolchain_root"] is None
    assert seen["contracts"] == sorted(compile_checkout(Toolchain.discover()).artifacts)
    assert seen["audit_bytecode"] == compile_checkout(Toolchain.discover()).artifacts["TRUSTAudit"].bytecode
    assert seen["solcx_imported"] is False


def _trace(path: Path) -> Path:
    """Two steps tier 1 decides at once."""

    def node(node_id: str, level: str, content: str, expression: str) -> dict[str, object]:
        return {
            "id": node_id,
            "level": level,
            "content": content,
            "content_hash": hashlib.sha256(content.encode()).hexdigest(),
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
            node("g", "goal", "17 * 23 = 391", "17 * 23 == 391"),
            node("a", "operation", "17 * 20 + 17 * 3 = 391", "17 * 20 + 17 * 3 == 391"),
        ],
        "edges": [{"source": "g", "target": "a", "type": "decomposes_to"}],
    }
    path.write_text(json.dumps(document))
    return path


async def test_worker_submit_and_gateway_from_the_wheel_on_a_network_of_the_repository(
    venv: Path, tmp_path: Path
) -> None:
    trust = str(venv / "bin" / "trust")
    work = tmp_path / "outside"
    work.mkdir()
    async with LocalNetwork(tmp_path / "network", [], protocol_settings=PROTOCOL, idle_auditors=[1]) as network:
        (auditor,) = network.auditors
        env = _environment(venv, tmp_path / "home") | {
            "TRUST_DEPLOYMENTS_DIR": str(network.settings.deployments_path(None)),
            "TRUST_WORKER__POLL_SECONDS": "0.2",
            "TRUST_WORKER__START_BLOCK": "0",
        }
        log_file = tmp_path / "worker.log"
        worker = start_process(
            [trust, "worker", "run", "--keystore", auditor.keystore, "--tier", "1"]
            + ["--password-file", str(network.folder / "keystore-password")]
            + ["--rpc", network.rpc_url, "--ipfs", network.ipfs_url],
            env,
            log_file,
            detached=False,
        )
        started = [StartedProcess(auditor.address, worker.pid, log_file, worker)]
        gateway: subprocess.Popen[bytes] | None = None
        try:
            await wait_ready(started, 120.0, describe={auditor.address: "the worker installed from the wheel"})
            assert READY_LINE in log_file.read_text()

            submitted = subprocess.run(
                [trust, "submit", str(_trace(work / "trace.hdag.json")), "--json", "--max-latency", "300"]
                + ["--rpc-url", network.rpc_url, "--ipfs", network.ipfs_url],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=400,
                check=False,
            )
            assert submitted.returncode == 0, submitted.stderr[-3000:] + log_file.read_text()[-3000:]
            audit = json.loads(submitted.stdout)
            assert audit["verdict"] == "VALID"
            assert {node_id: node["status"] for node_id, node in audit["nodes"].items()} == {"g": "Valid", "a": "Valid"}
            proof = audit["proof"]
            assert proof["valid_on_chain"] is True and proof["finalize_tx"] and proof["finalized_block"]
            assert proof["audit_contract"] == network.deployment.contracts["TRUSTAudit"]
            assert auditor.address.lower() in json.dumps(audit).lower()  # its seat voted

            port = free_port()
            gateway = start_process(
                [trust, "gateway", "--port", str(port), "--no-billing"]
                + ["--rpc-url", network.rpc_url, "--ipfs", network.ipfs_url],
                env,
                tmp_path / "gateway.log",
                detached=False,
            )
            status = await _explorer_status(f"http://127.0.0.1:{port}", gateway, tmp_path / "gateway.log")
            assert status["sessions"] == 1 and status["contracts"] == network.deployment.contracts
        finally:
            if gateway is not None:
                stop_processes([StartedProcess("gateway", gateway.pid, tmp_path / "gateway.log", gateway)], 20.0)
            stop_processes(started, 20.0)


async def _explorer_status(url: str, process: subprocess.Popen[bytes], log_file: Path) -> dict[str, object]:
    """The explorer's /explorer/api/status once the gateway answers and its index holds a session."""
    answer: dict[str, object] = {}
    async with httpx.AsyncClient(timeout=10) as client:
        for _ in range(600):
            assert process.poll() is None, f"the gateway exited: {log_file.read_text()[-3000:]}"
            try:
                response = await client.get(f"{url}/explorer/api/status")
            except httpx.TransportError:
                response = None
            if response is not None and response.status_code == 200:
                answer = dict(response.json())
                if answer.get("sessions"):
                    return answer
            await asyncio.sleep(0.1)
    raise AssertionError(f"the gateway's explorer never showed a session ({answer}): {log_file.read_text()[-3000:]}")
