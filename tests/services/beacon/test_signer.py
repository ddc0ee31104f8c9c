"""The beacon's signers against a real Anvil and a deployed `ThresholdBeacon`: requests answered
only once mined, t shares published as the group signature, bad shares ignored, restarts that
post nothing twice, strangers' requests ignored, and the dealer's files."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from eth_account import Account
from eth_account.signers.local import LocalAccount

from trust.adapters.chain.beacon import BeaconContract, RandomnessStatus, deploy_beacon, identify_randomness_source
from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.wallets import dev_account
from trust.adapters.local.beacon.keys import deal_group, load_group, load_signer, signer_file
from trust.core.beacon import bls
from trust.errors import BeaconError, ContractReverted
from trust.services.beacon.signer import BeaconSigner

pytestmark = [pytest.mark.chain]

ETH = 10**18


def _deal(directory: Path, threshold: int = 2, count: int = 3) -> bls.BeaconGroup:
    rng = random.Random(11)
    return deal_group(directory, threshold, count, randbelow=rng.randrange)


async def _beacon(chain: ChainClient, mnemonic: str, directory: Path) -> tuple[BeaconContract, bls.BeaconGroup]:
    group = _deal(directory)
    deployer = dev_account(mnemonic, 0)
    for operator in group.operators:
        await chain.send_value(deployer, operator, ETH)
    return BeaconContract(chain, await deploy_beacon(chain, deployer, group)), group


def _signer(
    beacon: BeaconContract, group: bls.BeaconGroup, directory: Path, index: int, requester: str
) -> BeaconSigner:
    key = load_signer(signer_file(directory, index), group)
    return BeaconSigner(beacon, key, group, [requester], backup_delay_blocks=2)


async def _mine(chain: ChainClient, blocks: int) -> None:
    for _ in range(blocks):
        await chain.rpc("evm_mine", [])


async def test_t_signers_publish_the_group_signature_once_the_block_is_mined(
    chain: ChainClient, mnemonic: str, tmp_path: Path
) -> None:
    beacon, group = await _beacon(chain, mnemonic, tmp_path)
    requester = dev_account(mnemonic, 4)
    block = await chain.block_number() + 3
    await beacon.request(requester, block)
    signers = [_signer(beacon, group, tmp_path, i, requester.address) for i in (1, 2)]
    # Not mined yet: nobody signs.
    for signer in signers:
        report = await signer.step()
        assert report.requested == [block] and report.shared == []
    assert await beacon.shares(block, await chain.block_number()) == []
    await _mine(chain, 3)
    assert (await beacon.randomness_at(block))[0] is RandomnessStatus.PENDING
    # The designated publisher of `block` is signer (block mod 3) + 1; the backup delay lets the
    # others publish two blocks later. Step both until one of them publishes.
    for _ in range(4):
        for signer in signers:
            await signer.step()
        await _mine(chain, 1)
    status, value = await beacon.randomness_at(block)
    assert status is RandomnessStatus.READY
    message = bls.beacon_message(chain.chain_id, beacon.address, block)
    partials = {i: bls.sign(load_signer(signer_file(tmp_path, i), group).share.secret, message) for i in (1, 2)}
    signature = bls.aggregate(partials, 2)
    assert value == bls.randomness_value(signature)
    assert bls.verify(group.group_key, message, signature)
    # The contract hashed the message to the point py_ecc computes.
    assert await beacon.message_point(block) == bls.hash_to_g1(message)
    assert all(block not in signer.pending for signer in signers)


async def test_the_share_that_completes_the_threshold_is_published_at_once(
    chain: ChainClient, mnemonic: str, tmp_path: Path
) -> None:
    """The signer whose share brings a block to t valid shares publishes in the same pass, though
    another signer is the block's designated publisher: one pass of each of t signers is enough,
    where waiting for the designated one cost another of its passes (and the designated one, seeing
    the randomness there, publishes nothing)."""
    beacon, group = await _beacon(chain, mnemonic, tmp_path)
    requester = dev_account(mnemonic, 4)
    block = await chain.block_number() + 1
    await beacon.request(requester, block)
    await _mine(chain, 1)
    designated = block % 3 + 1
    first, second = (_signer(beacon, group, tmp_path, i, requester.address) for i in (1, 2, 3) if i != designated)
    assert (await first.step()).published == []  # t - 1 shares: nothing to publish yet
    report = await second.step()
    assert report.shared == [block] and report.published == [block]
    assert (await beacon.randomness_at(block))[0] is RandomnessStatus.READY
    late = await _signer(beacon, group, tmp_path, designated, requester.address).step()
    assert late.shared == [] and late.published == [] and late.finished == [block]


async def test_a_bad_share_is_ignored_and_t_minus_one_never_publish(
    chain: ChainClient, mnemonic: str, tmp_path: Path
) -> None:
    beacon, group = await _beacon(chain, mnemonic, tmp_path)
    requester = dev_account(mnemonic, 4)
    block = await chain.block_number() + 1
    await beacon.request(requester, block)
    await _mine(chain, 1)
    # Signer 3 posts a point on the curve that is not its partial (its partial of another block).
    key3 = load_signer(signer_file(tmp_path, 3), group)
    wrong = bls.sign(key3.share.secret, bls.beacon_message(chain.chain_id, beacon.address, block + 1))
    await beacon.submit_share(key3.operator, block, 3, wrong)
    first = _signer(beacon, group, tmp_path, 1, requester.address)
    for _ in range(4):
        await first.step()
        await _mine(chain, 1)
    # One valid share (t - 1) and one bad one: nothing is published.
    assert (await beacon.randomness_at(block))[0] is RandomnessStatus.PENDING
    assert not await beacon.verify_share(block, 3, wrong)
    second = _signer(beacon, group, tmp_path, 2, requester.address)
    await second.step()
    await first.step()
    assert (await beacon.randomness_at(block))[0] is RandomnessStatus.READY


async def test_a_restarted_signer_posts_nothing_twice_and_strangers_are_ignored(
    chain: ChainClient, mnemonic: str, tmp_path: Path
) -> None:
    beacon, group = await _beacon(chain, mnemonic, tmp_path)
    requester, stranger = dev_account(mnemonic, 4), dev_account(mnemonic, 5)
    served = await chain.block_number() + 2
    await beacon.request(requester, served)
    await beacon.request(stranger, served + 1)
    await _mine(chain, 3)
    signer = _signer(beacon, group, tmp_path, 1, requester.address)
    report = await signer.step()
    assert report.requested == [served] and report.shared == [served]
    # A new process for the same signer (a crash and a restart) reads the chain again.
    restarted = _signer(beacon, group, tmp_path, 1, requester.address)
    report = await restarted.step()
    assert report.requested == [served] and report.shared == []
    shares = await beacon.shares(served, await chain.block_number())
    assert [s.index for s in shares] == [1]
    assert await beacon.shares(served + 1, await chain.block_number()) == []


async def test_the_contract_refuses_shares_from_others_and_early_requests(
    chain: ChainClient, mnemonic: str, tmp_path: Path
) -> None:
    beacon, group = await _beacon(chain, mnemonic, tmp_path)
    head = await chain.block_number()
    with pytest.raises(ContractReverted) as early:
        await beacon.request(dev_account(mnemonic, 4), head)
    assert early.value.error_name == "BeaconBlockAlreadyMined"
    key1 = load_signer(signer_file(tmp_path, 1), group)
    partial = bls.sign(key1.share.secret, bls.beacon_message(chain.chain_id, beacon.address, head))
    with pytest.raises(ContractReverted) as other:
        await beacon.submit_share(dev_account(mnemonic, 4), head, 1, partial)
    assert other.value.error_name == "BeaconNotOperator"
    info = await identify_randomness_source(chain, beacon.address)
    assert (info.kind, info.threshold, info.signers) == ("ThresholdBeacon", 2, 3)
    assert await beacon.group_key() == group.group_key


def test_dealing_is_idempotent_and_private(tmp_path: Path) -> None:
    group = _deal(tmp_path)
    assert load_group(tmp_path) == group
    assert _deal(tmp_path) == group  # kept, not dealt again
    for index in (1, 2, 3):
        assert os.stat(signer_file(tmp_path, index)).st_mode & 0o777 == 0o600
    with pytest.raises(BeaconError, match="holds a 2-of-3 group, not 3-of-3"):
        deal_group(tmp_path, 3, 3)
    os.chmod(signer_file(tmp_path, 2), 0o644)
    with pytest.raises(BeaconError, match="readable by others"):
        load_signer(signer_file(tmp_path, 2), group)
    os.chmod(signer_file(tmp_path, 2), 0o600)
    other: LocalAccount = Account.create()
    mixed = bls.BeaconGroup(group.threshold, group.group_key, group.share_keys, (other.address, *group.operators[1:]))
    with pytest.raises(BeaconError, match="signer 1's account"):
        load_signer(signer_file(tmp_path, 1), mixed)
    with pytest.raises(BeaconError, match="no beacon group"):
        load_group(tmp_path / "missing")
