"""Reading a contract's event logs without web3's per-call filter building and formatters.

web3's `ContractEvent.get_logs` builds the filter (the event's topic hashed again, each argument
filter encoded through generic normalizers) and formats the request and every log through its
formatter chains on every call. A worker reads its events several times a second, most often to
find nothing, so that was a large part of an idle worker's CPU.

An `EventPlan` does the ABI work once per event: its topic, the types of its indexed and data
arguments, and a decoder that gives a log the shape `get_logs` gives it (an `AttributeDict` with
`args`, `event`, `logIndex`, `transactionIndex`, `transactionHash`, `address`, `blockHash`,
`blockNumber`; addresses checksummed, structs as nested `AttributeDict`s). One request can read
several events of one contract (`ChainClient.get_logs` with more than one event: the topic is a list).
The tests hold the decoder to web3's own on every event of a real session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eth_abi.codec import ABICodec
from eth_abi.grammar import parse
from eth_utils import event_abi_to_log_topic, to_checksum_address
from hexbytes import HexBytes
from web3.datastructures import AttributeDict

from trust.adapters.chain.views import abi_type, converter

__all__ = ["EventPlan"]

Convert = Callable[[Any], Any]


def _same(value: Any) -> Any:
    return value


def _attributes(names: Sequence[str]) -> Convert:
    """A struct in an event's arguments, as web3 gives it: an `AttributeDict` of its members."""
    return lambda values: AttributeDict(dict(zip(names, values, strict=True)))


def _dynamic(param: dict[str, Any]) -> bool:
    """Whether an indexed argument of this type is in its topic as a hash (a reference type)."""
    typ = parse(abi_type(param))
    return bool(typ.is_dynamic or typ.is_array) or param["type"].startswith("tuple")


def _int(value: Any) -> int:
    return int(value, 16) if isinstance(value, str) else int(value)


@dataclass(frozen=True, slots=True)
class EventPlan:
    """How to filter and decode one event's logs."""

    name: str
    topic: bytes
    indexed: tuple[tuple[str, str, bool], ...]
    """(name, type, hashed) per indexed argument, in topic order: a dynamic one is in its topic as
    its hash (web3 gives the 32 bytes)."""
    data_names: tuple[str, ...]
    data_types: tuple[str, ...]
    data_convert: tuple[Convert, ...]
    topic_convert: tuple[Convert, ...]

    @classmethod
    def of(cls, event_abi: dict[str, Any]) -> EventPlan:
        inputs = list(event_abi.get("inputs", ()))
        indexed = [p for p in inputs if p.get("indexed")]
        data = [p for p in inputs if not p.get("indexed")]
        return cls(
            name=event_abi["name"],
            topic=bytes(event_abi_to_log_topic(event_abi)),  # type: ignore[arg-type]
            indexed=tuple((p["name"], abi_type(p), _dynamic(p)) for p in indexed),
            data_names=tuple(p["name"] for p in data),
            data_types=tuple(abi_type(p) for p in data),
            data_convert=tuple(converter(p, _attributes) for p in data),
            topic_convert=tuple(_same if _dynamic(p) else converter(p, _attributes) for p in indexed),
        )

    @staticmethod
    def fits(event_abi: dict[str, Any]) -> bool:
        """Whether a plan decodes this event as web3 does: not an anonymous event (no topic to
        find it by), and no argument name given twice or left empty."""
        names = [p["name"] for p in event_abi.get("inputs", ())]
        return not event_abi.get("anonymous") and all(names) and len(set(names)) == len(names)

    def topics(self, codec: ABICodec, filters: Mapping[str, Any] | None) -> list[Any] | None:
        """The `topics` of an `eth_getLogs` filter on this event and `filters` (indexed arguments
        by name, one value each), or None when a filter is not one this plan encodes (a list of
        values, a dynamic or non-indexed argument): web3 then builds the filter."""
        topics: list[Any] = ["0x" + self.topic.hex()]
        wanted = dict(filters or {})
        for name, typ, hashed in self.indexed:
            if name not in wanted:
                topics.append(None)
                continue
            value = wanted.pop(name)
            if hashed or isinstance(value, list | tuple):
                return None
            topics.append("0x" + codec.encode([typ], [value]).hex())
        if wanted:
            return None
        while topics[-1] is None:
            topics.pop()
        return topics

    def decode(self, codec: ABICodec, log: Mapping[str, Any]) -> AttributeDict[str, Any]:
        """One raw JSON-RPC log of this event as `get_logs` returns it."""
        topics = [HexBytes(t) for t in log["topics"][1:]]
        if len(topics) != len(self.indexed):
            raise ValueError(f"{self.name}: expected {len(self.indexed)} indexed topics, got {len(topics)}")
        args: dict[str, Any] = {}
        for (name, typ, hashed), convert, topic in zip(self.indexed, self.topic_convert, topics, strict=True):
            args[name] = bytes(topic) if hashed else convert(codec.decode([typ], bytes(topic))[0])
        decoded = codec.decode(list(self.data_types), bytes(HexBytes(log["data"])))
        for name, convert, value in zip(self.data_names, self.data_convert, decoded, strict=True):
            args[name] = convert(value)
        return AttributeDict(
            {
                "args": AttributeDict(args),
                "event": self.name,
                "logIndex": _int(log["logIndex"]),
                "transactionIndex": _int(log["transactionIndex"]),
                "transactionHash": HexBytes(log["transactionHash"]),
                "address": to_checksum_address(log["address"]),
                "blockHash": HexBytes(log["blockHash"]),
                "blockNumber": _int(log["blockNumber"]),
            }
        )
