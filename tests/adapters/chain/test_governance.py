"""Governance on a real Anvil: parameters change only through the timelock, and only for sessions
created afterwards."""

from __future__ import annotations

import pytest

from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.deployment import deploy_protocol, hand_to_timelock
from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import SegmentSpec
from trust.adapters.chain.wallets import dev_account
from trust.errors import ContractReverted
from trust.settings import GovernanceSettings, ProtocolSettings

pytestmark = [pytest.mark.chain]


async def test_parameter_change_goes_through_the_timelock_and_spares_open_sessions(
    chain: ChainClient, mnemonic: str
) -> None:
    governor, provider = dev_account(mnemonic, 0), dev_account(mnemonic, 3)
    deployment = await deploy_protocol(
        chain, governor, ProtocolSettings(), GovernanceSettings(timelock_min_delay_seconds=3600)
    )
    deployment = await hand_to_timelock(chain, governor, deployment)
    protocol = Protocol.bind(chain, deployment)
    spec = SegmentSpec(tier=2, weight=1, content_digest=b"\x07" * 32)
    open_session, _ = await protocol.audit.create_session(provider, b"\x02" * 32, [spec])

    current = await protocol.params.params()
    proposed = dict(current, tauBps=7_500, committeeSizeTier2=7)
    calldata = protocol.params.set_params_calldata(proposed)

    # The former owner can no longer change anything directly.
    with pytest.raises(ContractReverted) as direct:
        await chain.transact(protocol.params.contract.functions.setParams(tuple(proposed.values())), governor)
    assert direct.value.error_name == "OwnableUnauthorizedAccount"

    salt = b"\x09" * 32
    await protocol.timelock.schedule(governor, protocol.params.address, calldata, salt)
    with pytest.raises(ContractReverted) as early:
        await protocol.timelock.execute(governor, protocol.params.address, calldata, salt)
    assert early.value.error_name == "TimelockUnexpectedOperationState"
    await chain.rpc("evm_increaseTime", [3601])
    await chain.rpc("evm_mine", [])
    await protocol.timelock.execute(governor, protocol.params.address, calldata, salt)

    assert await protocol.params.version() == 2
    assert (await protocol.params.params())["tauBps"] == 7_500
    # The open session keeps its snapshot; a new one takes the new values.
    assert (await protocol.audit.session_params(open_session))["tauBps"] == 6_600
    assert (await protocol.audit.segment(open_session, 0)).committee_size == 5
    new_session, _ = await protocol.audit.create_session(provider, b"\x03" * 32, [spec])
    assert (await protocol.audit.session_params(new_session))["tauBps"] == 7_500
    assert (await protocol.audit.segment(new_session, 0)).committee_size == 7

    # Out-of-range values are refused even through governance.
    bad = protocol.params.set_params_calldata(dict(current, tauBps=5_000))
    await protocol.timelock.schedule(governor, protocol.params.address, bad, salt)
    await chain.rpc("evm_increaseTime", [3601])
    await chain.rpc("evm_mine", [])
    with pytest.raises(ContractReverted) as refused:
        await protocol.timelock.execute(governor, protocol.params.address, bad, salt)
    assert refused.value.error_name == "ParamsOutOfRange"
    assert refused.value.error_args == {"name": "tauBps", "value": 5_000}
