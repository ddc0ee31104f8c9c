"""`ViewPlan` gives a view's result exactly the shape web3's `ContractFunction.call()` gives it.

The expected values come from web3's own result pipeline (`map_abi_data` with its return
normalizers, `named_tree`, `recursive_dict_to_namedtuple`), so a change in web3 shows up here; the
chain-backed comparison over every view of the protocol is in `test_session_e2e.py`.
"""

from __future__ import annotations

from typing import Any

import pytest
from eth_utils import function_abi_to_4byte_selector
from web3 import Web3
from web3._utils.abi import map_abi_data, named_tree, recursive_dict_to_namedtuple
from web3._utils.normalizers import BASE_RETURN_NORMALIZERS
from web3.datastructures import AttributeDict

from tests.adapters.chain.shapes import shape
from trust.adapters.chain.logs import EventPlan
from trust.adapters.chain.views import ViewPlan, abi_type

A1 = "0x" + "ab" * 20
A2 = "0x" + "0c" * 20

STRUCT = {
    "name": "v",
    "type": "tuple",
    "components": [
        {"name": "who", "type": "address"},
        {"name": "tier", "type": "uint8"},
        {"name": "digest", "type": "bytes32"},
        {"name": "members", "type": "address[]"},
        {
            "name": "seats",
            "type": "tuple[]",
            "components": [{"name": "auditor", "type": "address"}, {"name": "revealed", "type": "bool"}],
        },
        {"name": "label", "type": "string"},
    ],
}

FUNCTIONS: list[tuple[dict[str, Any], list[Any]]] = [
    (
        {"name": "segment", "type": "function", "inputs": [{"name": "s", "type": "uint256"}], "outputs": [STRUCT]},
        [(A1, 3, b"\x07" * 32, [A1, A2], [(A2, True), (A1, False)], "step")],
    ),
    (
        {
            "name": "params",
            "type": "function",
            "inputs": [{"name": "who", "type": "address"}, {"name": "ids", "type": "uint8[]"}],
            "outputs": [{"name": "fee", "type": "uint256"}, {"name": "owner", "type": "address"}],
        },
        [10**20, A2],
    ),
    (
        {
            "name": "pair",
            "type": "function",
            "inputs": [],
            "outputs": [{"name": "count", "type": "uint64"}, {"name": "blob", "type": "bytes"}],
        },
        [5, b"\x01\x02"],
    ),
    (
        {"name": "committee", "type": "function", "inputs": [], "outputs": [{"name": "", "type": "address[]"}]},
        [[A1, A2, A1]],
    ),
    (
        {"name": "rows", "type": "function", "inputs": [], "outputs": [{**STRUCT, "type": "tuple[2]"}]},
        [[(A1, 1, b"\x00" * 32, [], [], ""), (A2, 2, b"\x01" * 32, [A2], [(A1, True)], "x")]],
    ),
]


def _web3_result(fn_abi: dict[str, Any], data: bytes) -> Any:
    """What `async_call_contract_function` returns for `decode_tuples=True`."""
    types = [abi_type(p) for p in fn_abi["outputs"]]
    normalized = map_abi_data(BASE_RETURN_NORMALIZERS, types, Web3().codec.decode(types, data))
    shaped = recursive_dict_to_namedtuple(named_tree(fn_abi["outputs"], normalized))
    return shaped[0] if len(shaped) == 1 else shaped


@pytest.mark.parametrize(("fn_abi", "values"), FUNCTIONS, ids=[f["name"] for f, _ in FUNCTIONS])
def test_a_view_plan_decodes_as_web3_does(fn_abi: dict[str, Any], values: list[Any]) -> None:
    codec = Web3().codec
    data = codec.encode([abi_type(p) for p in fn_abi["outputs"]], values)
    plan = ViewPlan.of(fn_abi)
    ours = plan.decode(codec, data)
    assert shape(ours) == shape(_web3_result(fn_abi, data))
    assert plan.selector == function_abi_to_4byte_selector(fn_abi)


def test_several_unnamed_outputs_are_left_to_web3() -> None:
    """web3 folds outputs of one (empty) name into one value; a plan would not, so none is made."""
    unnamed = [{"name": "", "type": "uint64"}, {"name": "", "type": "bytes"}]
    assert not ViewPlan.fits({"name": "pair", "type": "function", "inputs": [], "outputs": unnamed})
    assert ViewPlan.fits({"name": "one", "type": "function", "inputs": [], "outputs": unnamed[:1]})
    assert all(ViewPlan.fits(fn_abi) for fn_abi, _ in FUNCTIONS)


def test_a_view_plan_encodes_as_web3_does() -> None:
    fn_abi = FUNCTIONS[1][0]
    contract = Web3().eth.contract(abi=[fn_abi])
    args = [Web3.to_checksum_address(A1), [1, 2, 3]]
    assert ViewPlan.of(fn_abi).encode(Web3().codec, args) == contract.encode_abi("params", args)


def test_a_view_plan_refuses_what_the_codec_refuses() -> None:
    """A value the strict codec will not encode raises (the client then asks web3, which
    normalizes it or says what is wrong)."""
    with pytest.raises(Exception, match="cannot be encoded"):
        ViewPlan.of(FUNCTIONS[0][0]).encode(Web3().codec, ["not a number"])


# ------------------------------------------------------------------------------------- event logs

EVENT = {
    "name": "Drawn",
    "type": "event",
    "anonymous": False,
    "inputs": [
        {"name": "sessionId", "type": "uint256", "indexed": True},
        {"name": "auditor", "type": "address", "indexed": True},
        {"name": "label", "type": "string", "indexed": True},
        {"name": "members", "type": "address[]", "indexed": False},
        {"name": "seat", "type": "tuple", "indexed": False, "components": STRUCT["components"][:2]},
        {"name": "cid", "type": "bytes", "indexed": False},
    ],
}


def _raw_log(codec: Any, topics: list[bytes], data: bytes) -> dict[str, Any]:
    return {
        "address": "0x" + "5a" * 20,
        "topics": ["0x" + t.hex() for t in topics],
        "data": "0x" + data.hex(),
        "blockNumber": "0x1c",
        "blockHash": "0x" + "11" * 32,
        "transactionHash": "0x" + "22" * 32,
        "transactionIndex": "0x0",
        "logIndex": "0x3",
        "removed": False,
    }


def test_an_event_plan_decodes_a_log_as_web3_does() -> None:
    from web3._utils.events import get_event_data
    from web3._utils.method_formatters import log_entry_formatter

    codec = Web3().codec
    plan = EventPlan.of(EVENT)
    topics = [plan.topic, codec.encode(["uint256"], [7]), codec.encode(["address"], [A1]), b"\x09" * 32]
    data = codec.encode(["address[]", "(address,uint8)", "bytes"], [[A1, A2], (A2, 4), b"cid"])
    raw = _raw_log(codec, topics, data)
    # as web3 reads it: formatted, then made an AttributeDict by its attrdict middleware
    expected = get_event_data(codec, EVENT, AttributeDict.recursive(log_entry_formatter(raw)))
    assert shape(plan.decode(codec, raw)) == shape(expected)


def test_an_event_plan_builds_the_filter_web3_builds() -> None:
    codec = Web3().codec
    plan = EventPlan.of(EVENT)
    topic0 = "0x" + plan.topic.hex()
    assert plan.topics(codec, None) == [topic0]
    assert plan.topics(codec, {"auditor": Web3.to_checksum_address(A1)}) == [
        topic0,
        None,
        "0x" + codec.encode(["address"], [A1]).hex(),
    ]
    assert plan.topics(codec, {"sessionId": 7}) == [topic0, "0x" + (7).to_bytes(32, "big").hex()]
    # what a plan does not encode goes to web3: a hashed topic, several values, a data argument
    assert plan.topics(codec, {"label": "x"}) is None
    assert plan.topics(codec, {"sessionId": [1, 2]}) is None
    assert plan.topics(codec, {"cid": b"x"}) is None
    assert not EventPlan.fits({**EVENT, "anonymous": True})
