"""The local IPFS node (`ipfs/server.mjs`, managed by `trust.adapters.local.ipfs`) as users and clients see it:
`trust ipfs up` / `down` as real commands, Kubo's RPC subset over real HTTP, a restart that loses
nothing, and Kubo's behaviour on bad requests.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.adapters.storage.blobs import blob
from trust.adapters.local.ipfs import IpfsNode, node_version
from trust.adapters.local.processes import free_port
from trust.adapters.local.toolchain import project_root
from trust.adapters.storage.kubo import KuboClient
from trust.core.cid import unixfs_cid
from trust.errors import IpfsError, ToolchainError, VerificationError

pytestmark = pytest.mark.slow

KB = 1000
ADD = {"cid-version": "1", "raw-leaves": "true", "chunker": "size-262144", "pin": "true"}


def _raw_leaf_cid(data: bytes) -> str:
    """CIDv1 of a one-block blob, from first principles: version 1, codec raw (0x55), sha2-256
    multihash (0x12, 32 bytes), in base32 lower case without padding behind the 'b' multibase prefix."""
    binary = bytes([0x01, 0x55, 0x12, 0x20]) + hashlib.sha256(data).digest()
    return "b" + base64.b32encode(binary).decode().lower().rstrip("=")


UNKNOWN_CID = _raw_leaf_cid(b"no test adds this blob")


def _trust(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trust", *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _post(api_url: str, command: str, **kwargs: object) -> httpx.Response:
    return httpx.post(f"{api_url}/api/v0/{command}", timeout=60, trust_env=False, **kwargs)  # type: ignore[arg-type]


def _add(api_url: str, data: bytes, name: str = "blob", **params: str) -> dict[str, str]:
    response = _post(api_url, "add", params=ADD | params, files={"file": (name, data, "application/octet-stream")})
    assert response.status_code == 200, response.text
    lines = response.text.splitlines()
    assert len(lines) == 1
    answer: dict[str, str] = json.loads(lines[0])
    return answer


# --- trust ipfs up / down --------------------------------------------------------------------------


@pytest.fixture
def ipfs_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = dict(os.environ)
    env.update(TRUST_HOME=str(tmp_path / "home"), TRUST_IPFS__PORT=str(free_port()), COLUMNS="200")
    yield env
    _trust(env, "ipfs", "down")


BLOBS = {"1KB": blob(1 * KB, b"one"), "300KB": blob(300 * KB, b"three"), "5MB": blob(5_000 * KB, b"five")}


def test_up_add_cat_pin_restart_down(ipfs_env: dict[str, str], tmp_path: Path) -> None:
    api_url = f"http://127.0.0.1:{ipfs_env['TRUST_IPFS__PORT']}"
    repo = tmp_path / "home" / "ipfs"
    up = _trust(ipfs_env, "ipfs", "up")
    assert up.returncode == 0, up.stderr
    assert "IPFS node started" in up.stdout and api_url in up.stdout and str(repo) in up.stdout
    assert "trust-ipfs ready" in (repo / "node.log").read_text()

    added = {name: _add(api_url, data, name=name) for name, data in BLOBS.items()}
    for name, data in BLOBS.items():
        answer = added[name]
        assert answer["Name"] == name
        assert answer["Hash"] == unixfs_cid(data), "Kubo's layout: 256 KiB raw leaves, balanced, 174 links"
        assert _post(api_url, "cat", params={"arg": answer["Hash"]}).content == data
    one_kb = added["1KB"]
    assert one_kb["Hash"] == _raw_leaf_cid(BLOBS["1KB"]) and one_kb["Size"] == "1000"
    assert int(added["5MB"]["Size"]) > 5_000 * KB  # the cumulative DAG size: data plus the dag-pb node

    again = _trust(ipfs_env, "ipfs", "up")
    assert again.returncode == 0 and "already running" in again.stdout
    elsewhere = _trust(ipfs_env, "ipfs", "up", "--port", str(free_port()))
    assert elsewhere.returncode == 1 and "trust ipfs down" in elsewhere.stderr

    down = _trust(ipfs_env, "ipfs", "down")
    assert down.returncode == 0 and "IPFS node stopped" in down.stdout
    assert node_version(api_url) is None
    assert not (repo / "repo.lock").exists(), "a clean stop releases the repo"
    assert "trust-ipfs stopped" in (repo / "node.log").read_text()

    restarted = _trust(ipfs_env, "ipfs", "up")
    assert restarted.returncode == 0 and "IPFS node started" in restarted.stdout
    pins = _post(api_url, "pin/ls", params={"type": "recursive"}).json()["Keys"]
    for name, data in BLOBS.items():
        cid = added[name]["Hash"]
        assert pins[cid] == {"Type": "recursive", "Name": ""}
        assert _post(api_url, "cat", params={"arg": cid}).content == data
    stat = _post(api_url, "block/stat", params={"arg": one_kb["Hash"]}).json()
    assert stat == {"Key": one_kb["Hash"], "Size": 1000}
    version = _post(api_url, "version").json()
    assert version["Version"] and version["Implementation"].startswith("trust-ipfs/")


def test_down_without_a_node_says_so(ipfs_env: dict[str, str]) -> None:
    result = _trust(ipfs_env, "ipfs", "down")
    assert result.returncode == 0 and "no IPFS node was running" in result.stdout


def test_up_with_repo_and_port_options(ipfs_env: dict[str, str], tmp_path: Path) -> None:
    port = free_port()
    up = _trust(ipfs_env, "ipfs", "up", "--repo", str(tmp_path / "elsewhere"), "--port", str(port))
    assert up.returncode == 0, up.stderr
    assert f"http://127.0.0.1:{port}" in up.stdout
    assert (tmp_path / "elsewhere" / "blocks").is_dir()
    record = json.loads((tmp_path / "home" / "ipfs-node.json").read_text())
    assert record["port"] == port and record["repo"] == str(tmp_path / "elsewhere")


# --- the process -----------------------------------------------------------------------------------


def test_refuses_a_port_already_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(IpfsError, match=f"already listens on 127.0.0.1:{port}"):
            IpfsNode.start(tmp_path / "repo", port=port)


def test_two_nodes_never_share_a_repo(tmp_path: Path) -> None:
    with IpfsNode.start(tmp_path / "repo") as first:
        with pytest.raises(IpfsError, match=f"in use by process {first.pid}"):
            IpfsNode.start(tmp_path / "repo")
        assert node_version(first.api_url) is not None


def test_sigterm_stops_cleanly(tmp_path: Path) -> None:
    node = IpfsNode.start(tmp_path / "repo")
    cid = _add(node.api_url, b"kept")["Hash"]
    node.stop()
    assert node._process is not None and node._process.returncode == 0
    assert not (tmp_path / "repo" / "repo.lock").exists()
    with IpfsNode.start(tmp_path / "repo") as again:
        assert _post(again.api_url, "cat", params={"arg": cid}).content == b"kept"


def test_missing_npm_packages_are_named(tmp_path: Path) -> None:
    (tmp_path / "ipfs").mkdir()
    shutil.copy(project_root() / "ipfs" / "server.mjs", tmp_path / "ipfs" / "server.mjs")
    with pytest.raises(ToolchainError, match="scripts/setup.sh"):
        IpfsNode.start(tmp_path / "repo", root=tmp_path)


def test_missing_node_binary_is_named(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match="TRUST_IPFS__NODE_BINARY"):
        IpfsNode.start(tmp_path / "repo", node_binary="no-such-node-binary")


# --- Kubo's RPC subset, as Kubo answers it ------------------------------------------------------------


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IpfsNode]:
    with IpfsNode.start(tmp_path_factory.mktemp("ipfs"), max_upload_bytes=2_000 * KB) as started:
        yield started


async def test_the_project_client_round_trips_through_the_node(node: IpfsNode) -> None:
    async with KuboClient(node.api_url) as client:
        for data in BLOBS.values():
            if len(data) > 2_000 * KB:
                continue
            cid = await client.add(data)
            assert await client.cat(cid, expected_digest=hashlib.sha256(data).digest()) == data
            assert await client.pin_ls(cid) == {cid: "recursive"}


def test_pins_and_their_types(node: IpfsNode) -> None:
    data = blob(300 * KB, b"pins")
    root = _add(node.api_url, data, pin="false")["Hash"]
    assert _post(node.api_url, "pin/ls", params={"arg": root}).json() == {
        "Message": f"path '{root}' is not pinned",
        "Code": 0,
        "Type": "error",
    }
    assert _post(node.api_url, "pin/add", params={"arg": root}).json() == {"Pins": [root]}
    assert _post(node.api_url, "pin/add", params={"arg": root}).json() == {"Pins": [root]}, "idempotent"
    first_leaf = _raw_leaf_cid(data[:262_144])
    listed = _post(node.api_url, "pin/ls", params={"arg": first_leaf}).json()
    assert listed == {"Keys": {first_leaf: {"Type": f"indirect through {root}", "Name": ""}}}
    everything = _post(node.api_url, "pin/ls").json()["Keys"]
    assert everything[root]["Type"] == "recursive" and everything[first_leaf]["Type"] == "indirect"
    assert first_leaf not in _post(node.api_url, "pin/ls", params={"type": "recursive"}).json()["Keys"]


def test_cat_with_offset_and_length(node: IpfsNode) -> None:
    data = blob(600 * KB, b"ranges")
    cid = _add(node.api_url, data)["Hash"]
    part = _post(node.api_url, "cat", params={"arg": cid, "offset": "262000", "length": "1000"})
    assert part.content == data[262_000:263_000]


def test_unknown_content_is_kubo_offline_not_found(node: IpfsNode) -> None:
    for command in ("cat", "block/stat", "pin/add"):
        response = _post(node.api_url, command, params={"arg": UNKNOWN_CID})
        assert response.status_code == 500
        assert response.json() == {
            "Message": f"block was not found locally (offline): ipld: could not find {UNKNOWN_CID}",
            "Code": 0,
            "Type": "error",
        }


def test_oversized_upload_is_refused_and_the_node_carries_on(node: IpfsNode) -> None:
    response = _post(node.api_url, "add", params=ADD, files={"file": ("big", blob(2_000 * KB + 1, b"big"))})
    assert response.status_code == 413
    error = response.json()
    assert error["Code"] == 1 and error["Type"] == "error"
    assert '"big" exceeds this node\'s upload limit of 2000000 bytes' in error["Message"]
    assert _add(node.api_url, b"small")["Hash"] == _raw_leaf_cid(b"small")


@pytest.mark.parametrize(
    ("method", "path", "headers", "status", "body"),
    [
        ("GET", "/api/v0/version", {}, 405, "405 - Method Not Allowed\n"),
        ("POST", "/api/v0/id", {}, 404, "404 page not found\n"),
        ("POST", "/api/v0/version", {"Origin": "http://evil.example"}, 403, "403 - Forbidden\n"),
        ("POST", "/api/v0/cat", {}, 400, 'argument "ipfs-path" is required\n'),
        (
            "POST",
            "/api/v0/add?pin=maybe",
            {},
            400,
            'Could not convert value "maybe" to type "bool" (for option "-pin")\n',
        ),
    ],
)
def test_requests_kubo_refuses(
    node: IpfsNode, method: str, path: str, headers: dict[str, str], status: int, body: str
) -> None:
    response = httpx.request(method, f"{node.api_url}{path}", headers=headers, trust_env=False)
    assert (response.status_code, response.text) == (status, body)
    assert response.headers["content-type"].startswith("text/plain")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"chunker": "rabin"}, 'chunker "rabin" is not supported by this node; use size-<bytes>'),
        ({"hash": "blake3"}, 'hash function "blake3" is not supported by this node; use sha2-256'),
        ({"trickle": "true"}, 'option "trickle" is not supported by this node'),
    ],
)
def test_add_options_the_node_cannot_honour(node: IpfsNode, params: dict[str, str], message: str) -> None:
    response = _post(node.api_url, "add", params=ADD | params, files={"file": ("f", b"x")})
    assert response.status_code == 400
    assert response.json() == {"Message": message, "Code": 1, "Type": "error"}


def test_an_aborted_upload_leaves_the_node_working(node: IpfsNode) -> None:
    head = (
        b'--XX\r\nContent-Disposition: form-data; name="file"; filename="cut"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", node.port)) as sock:
        sock.sendall(
            b"POST /api/v0/add?cid-version=1 HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: multipart/form-data; boundary=XX\r\nContent-Length: 9000000\r\n\r\n"
            + head
            + blob(600 * KB, b"cut")
        )
    data = blob(300 * KB, b"after")
    cid = _add(node.api_url, data)["Hash"]
    assert _post(node.api_url, "cat", params={"arg": cid}).content == data


def _block_file(repo: Path, data: bytes) -> Path:
    """Where blockstore-fs keeps the raw block `data`: base32 (upper case) of its multihash, sharded
    by the name's last two characters."""
    name = "B" + base64.b32encode(bytes([0x12, 0x20]) + hashlib.sha256(data).digest()).decode().rstrip("=")
    return repo / "blocks" / name[-2:] / f"{name}.data"


async def test_a_damaged_repo_never_yields_unverified_bytes(tmp_path: Path) -> None:
    data = blob(600 * KB, b"damaged")
    chunk = 262_144
    with IpfsNode.start(tmp_path / "repo") as local:
        cid = _add(local.api_url, data)["Hash"]
        second, third = data[chunk : 2 * chunk], data[2 * chunk :]
        # A block rewritten on disk: the node serves it as it is, the client's CID check refuses it.
        _block_file(local.repo, third).write_bytes(third[:-1] + bytes([third[-1] ^ 1]))
        async with KuboClient(local.api_url, max_retries=0) as client:
            with pytest.raises(VerificationError, match="does not match its CID"):
                await client.cat(cid)
        # A block gone from disk: the stream breaks off after the first chunk instead of ending short.
        _block_file(local.repo, second).unlink()
        with httpx.stream("POST", f"{local.api_url}/api/v0/cat", params={"arg": cid}, trust_env=False) as response:
            assert response.status_code == 200
            received = bytearray()
            with pytest.raises(httpx.RemoteProtocolError):
                for piece in response.iter_bytes():
                    received += piece
        assert len(received) < len(data)
        async with KuboClient(local.api_url, max_retries=0) as client:
            with pytest.raises(IpfsError, match="failed after"):
                await client.cat(cid)
