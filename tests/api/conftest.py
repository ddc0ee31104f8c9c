"""Fixtures of the explorer tests: one story per test module (a deployment, auditors and a session
driven through its whole life on the module's Anvil and IPFS node), and the explorer served by
uvicorn over it. Module-scoped, so they live in the module's event loop."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.api.story import Story, build_world, run_story, serve
from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.compiler import Artifact
from trust.adapters.local.anvil import AnvilNode
from trust.adapters.storage.kubo import KuboClient
from trust.api.explorer.pages import create_explorer_app
from trust.api.explorer.provider_view import ProviderView
from trust.api.explorer.shapes import JournalShapes
from trust.services.sdk.journal import Journal


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def story(
    anvil: AnvilNode,
    artifacts: dict[str, Artifact],
    mnemonic: str,
    ipfs_api_url: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Story]:
    async with ChainClient(anvil.rpc_url, artifacts) as chain, KuboClient(ipfs_api_url) as kubo:
        world = await build_world(chain, mnemonic, tmp_path_factory.mktemp("keystores"))
        journal = Journal(tmp_path_factory.mktemp("provider"))
        yield await run_story(world, kubo, journal)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(story: Story, anvil: AnvilNode, artifacts: dict[str, Artifact]) -> AsyncIterator[str]:
    """The explorer as `create_explorer_app` runs it (its own chain client, index and lifespan), with
    the provider's journal as the source of graph shapes."""
    app = create_explorer_app(
        anvil.rpc_url, story.world.deployment, artifacts=artifacts, shapes=JournalShapes(story.journal.directory)
    )
    async with serve(app) as url:
        yield url


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def provider_site(
    story: Story, anvil: AnvilNode, artifacts: dict[str, Artifact], ipfs_api_url: str
) -> AsyncIterator[str]:
    """The explorer the story's provider runs for itself: its journal's shapes and the provider view
    (its wallet, the module's IPFS node), so that segment pages show the critiques."""
    app = create_explorer_app(
        anvil.rpc_url,
        story.world.deployment,
        artifacts=artifacts,
        shapes=JournalShapes(story.journal.directory),
        provider_view=ProviderView(story.world.provider, ipfs_api_url),
    )
    async with serve(app) as url:
        yield url
