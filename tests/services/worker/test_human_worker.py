"""Tier 3 end to end: three expert workers on Anvil, each serving its review page; the experts vote
in headless Chromium, and their workers commit and reveal for them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from pydantic import SecretStr

from tests.auditors.browser import chromium, requires_chromium
from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.deployment import deploy_protocol
from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import SegmentStatus
from trust.adapters.chain.wallets import dev_account, load_keystore
from trust.adapters.storage.kubo import KuboClient
from trust.auditors.tiers import human_auditor
from trust.core.decompose.rules import from_steps
from trust.lab.devnet import provision_auditors
from trust.services.delivery import SegmentProfile, deliver_keys, store_trace
from trust.services.worker.daemon import Worker
from trust.services.worker.identity import AuditorIdentity
from trust.services.worker.keys import load_encryption_key
from trust.services.worker.store import SeatState, WorkerStore
from trust.settings import GovernanceSettings, ProtocolSettings, ReviewSettings, WorkerSettings

from .conftest import PASSWORD, Network, open_session, seats_of

pytestmark = [pytest.mark.chain, pytest.mark.slow, requires_chromium]

EXPERT_PASSWORD = "expert-test-only"
PROTOCOL = ProtocolSettings(
    committee_size_tier1=1,
    committee_size_tier2=1,
    committee_size_tier3=3,
    commit_window_seconds=40,
    reveal_window_seconds=15,
)


@pytest.fixture
async def experts(chain: ChainClient, mnemonic: str, keystore_dir: Path) -> AsyncIterator[Network]:
    deployer, provider = dev_account(mnemonic, 0), dev_account(mnemonic, 3)
    await chain.rpc("evm_setAutomine", [True])
    deployment = await deploy_protocol(chain, deployer, PROTOCOL, GovernanceSettings())
    protocol = Protocol.bind(chain, deployment)
    auditors = await provision_auditors(protocol, deployer, [3, 3, 3], keystore_dir, PASSWORD, scrypt_n=2**10)
    await chain.rpc("evm_setIntervalMining", [1])
    yield Network(protocol, deployment, deployer, provider, auditors, keystore_dir)
    await chain.rpc("evm_setIntervalMining", [0])


async def test_experts_vote_on_their_review_pages_and_their_workers_commit_and_reveal(
    experts: Network, kubo: KuboClient, tmp_path: Path
) -> None:
    network = experts
    graph = from_steps("Is 2 + 2 = 4?", ["2 + 2 = 4"])  # g0, s1, s1.op1
    segments = len(list(graph.nodes()))
    async with AsyncExitStack() as stack:
        workers, urls = [], []
        for index, auditor in enumerate(network.auditors):
            account = load_keystore(Path(auditor.keystore), PASSWORD)
            key = load_encryption_key(Path(auditor.encryption_key_file), PASSWORD)
            review = ReviewSettings(port=0, password=SecretStr(EXPERT_PASSWORD))
            human, hook, url = await human_auditor(review, stack, account.address)
            store = stack.enter_context(
                WorkerStore(
                    tmp_path / f"{index}.sqlite3",
                    chain_id=network.protocol.chain.chain_id,
                    audit_contract=network.protocol.audit.address,
                    auditor=account.address,
                )
            )
            settings = WorkerSettings(poll_seconds=0.3, commit_margin_seconds=3)
            worker = Worker(
                network.protocol,
                kubo,
                AuditorIdentity(account, key, "test"),
                human,
                store,
                settings,
                logger=logging.getLogger(f"trust.services.worker.expert{index}"),
                on_event=hook,
            )
            workers.append(worker)
            urls.append(url)
        stop = asyncio.Event()
        running = [asyncio.create_task(w.run(stop)) for w in workers]
        try:
            stored = await store_trace(kubo, graph, profiles={n.id: SegmentProfile(3) for n in graph.nodes()})
            session_id, committees = await open_session(network, stored)
            await deliver_keys(network.protocol, kubo, network.provider, session_id, graph, stored, committees)
            # Three draws per segment among the three experts: each reviews the seats it was given.
            held = [len(seats_of(committees, a.address)) for a in network.auditors]

            async with chromium() as browser:
                for url, count in zip(urls, held, strict=True):
                    if not count:
                        continue
                    page = await browser.new_page()
                    await page.goto(f"{url}/sign-in")
                    await page.fill("#password", EXPERT_PASSWORD)
                    await page.click("button[type=submit]")
                    await page.wait_for_url(f"{url}/queue")
                    for _ in range(count):
                        await page.goto(f"{url}/queue")
                        link = page.locator("a[href^='/review/']").first
                        await link.wait_for(timeout=20_000)
                        await link.click()
                        await page.check("input[name=vote][value=pass]")
                        await page.fill("#critique", "Checked by hand: 2 + 2 is 4.")
                        await page.click("button:has-text('Submit vote')")
                        await page.wait_for_url(f"{url}/history**")
                    await page.close()

                async def revealed() -> bool:
                    return all(
                        [s.state for s in w.store.seats()] == [SeatState.FINALIZED] * n
                        for w, n in zip(workers, held, strict=True)
                    )

                async with asyncio.timeout(90):
                    while not await revealed():
                        await asyncio.sleep(0.5)

                busiest = max(range(len(held)), key=lambda i: held[i])
                page = await browser.new_page()
                await page.goto(f"{urls[busiest]}/sign-in")
                await page.fill("#password", EXPERT_PASSWORD)
                await page.click("button[type=submit]")
                await page.wait_for_url(f"{urls[busiest]}/queue")
                await page.goto(f"{urls[busiest]}/history")
                history = await page.content()
                assert history.count("revealed") >= held[busiest] > 0 and "finalized" in history
        finally:
            stop.set()
            await asyncio.gather(*running)
        for worker in workers:
            assert all(s.vote is True and s.critique == "Checked by hand: 2 + 2 is 4." for s in worker.store.seats())
    for segment in range(segments):
        assert (await network.protocol.audit.segment(session_id, segment)).status is SegmentStatus.PASSED
