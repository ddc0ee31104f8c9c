"""Shared fixtures: the compiled contracts, a fresh Anvil per test module, a local IPFS node per module."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.compiler import Artifact, compile_protocol
from trust.adapters.local.anvil import AnvilNode
from trust.adapters.local.ipfs import IpfsNode
from trust.adapters.local.toolchain import Toolchain
from trust.adapters.storage.kubo import KuboClient
from trust.settings import DevnetSettings


@pytest.fixture(scope="session", autouse=True)
def blockhash_randomness_by_default() -> Iterator[None]:
    """Devnets and demos started by tests (in this process or as `trust` subprocesses, which inherit
    the environment) deploy the block-hash source unless a test asks for the beacon: its signer
    processes would cost every such test time. `tests/lab/test_beacon_devnet.py` runs the beacon for real."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRUST_BEACON__RANDOMNESS", os.environ.get("TRUST_BEACON__RANDOMNESS", "blockhash"))
        yield


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return Toolchain.discover()


@pytest.fixture(scope="session")
def artifacts(toolchain: Toolchain) -> dict[str, Artifact]:
    return compile_protocol(toolchain)


@pytest.fixture(scope="session")
def mnemonic() -> str:
    return DevnetSettings().mnemonic


@pytest.fixture(scope="module")
def anvil(toolchain: Toolchain, mnemonic: str) -> Iterator[AnvilNode]:
    """A fresh chain for each test module, on a free port, stopped afterwards."""
    with AnvilNode.start(toolchain, mnemonic=mnemonic) as node:
        yield node


@pytest_asyncio.fixture
async def chain(anvil: AnvilNode, artifacts: dict[str, Artifact]) -> AsyncIterator[ChainClient]:
    async with ChainClient(anvil.rpc_url, artifacts) as client:
        yield client


@pytest.fixture
def keystore_dir(tmp_path: Path) -> Path:
    return tmp_path / "keystores"


@pytest.fixture(scope="module")
def ipfs_api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The local IPFS node (`ipfs/`), started for the test module in a fresh repo and stopped after;
    TRUST_TEST_IPFS_API_URL points the same tests at another Kubo-compatible endpoint (a real Kubo
    daemon, a pinning service)."""
    url = os.environ.get("TRUST_TEST_IPFS_API_URL")
    if url is not None:
        yield url
        return
    with IpfsNode.start(tmp_path_factory.mktemp("ipfs")) as node:
        yield node.api_url


@pytest.fixture
async def kubo(ipfs_api_url: str) -> AsyncIterator[KuboClient]:
    """A client of the test module's IPFS node that gives up quickly on missing content."""
    async with KuboClient(ipfs_api_url, content_timeout_seconds=2, backoff_seconds=0.01) as client:
        yield client
