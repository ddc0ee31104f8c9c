"""Reading a contract's view functions without web3's per-call ABI work.

web3's `ContractFunction.call()` looks the function up in the contract's ABI again on every call,
validates the whole ABI, hashes the signature for the selector, walks the arguments and the result
through generic formatters, and builds new named-tuple classes for the result (about 2.7 ms of CPU
a call on a 2-core machine, against 0.4 ms for the JSON-RPC round trip itself). Workers and
providers read segment and seat state many times a second, so that was most of their CPU.

A `ViewPlan` does that work once per function: the selector, the argument and result types, and a
converter that gives the result the shape web3 gives it (addresses checksummed, structs and the
outputs as named tuples whose classes are made once, arrays as lists).
`ChainClient.call` uses it (for contracts made with `decode_tuples`, as `ChainClient.contract` makes
them) for a successful `eth_call` and leaves everything else to web3 (an
argument the codec refuses, a revert, an empty result), so errors read as they always did. The
tests hold the converter to web3's own result functions.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from eth_abi.codec import ABICodec
from eth_abi.grammar import parse
from eth_utils import function_signature_to_4byte_selector, to_checksum_address

__all__ = ["ViewPlan", "abi_type", "converter"]

Convert = Callable[[Any], Any]


def abi_type(param: dict[str, Any]) -> str:
    """The canonical ABI type of a parameter, expanding tuples."""
    typ: str = param["type"]
    if typ.startswith("tuple"):
        inner = ",".join(abi_type(c) for c in param["components"])
        return f"({inner}){typ[len('tuple') :]}"
    return typ


def _same(value: Any) -> Any:
    return value


def _record(names: Sequence[str]) -> Convert:
    """A named-tuple class for a struct or an output list, as web3 names them (`rename=True`:
    an empty or repeated name becomes `_<index>`)."""
    cls = namedtuple("ABIDecodedNamedTuple", list(names), rename=True)  # type: ignore[misc]
    return lambda values: cls(*values)


def converter(param: dict[str, Any], record: Callable[[Sequence[str]], Convert] | None = None) -> Convert:
    """What web3 does to one decoded value of `param`'s type: addresses checksummed, arrays as
    lists, structs built by `record` from their member names (named tuples, as a call with
    `decode_tuples` gives them, by default)."""
    make = record or _record
    if parse(abi_type(param)).is_array:
        item = {**param, "type": param["type"][: param["type"].rindex("[")]}
        convert_item = converter(item, make)
        return lambda values: [convert_item(v) for v in values]
    if param["type"] == "tuple":
        parts = [converter(c, make) for c in param["components"]]
        build = make([c["name"] for c in param["components"]])
        return lambda values: build([f(v) for f, v in zip(parts, values, strict=True)])
    if param["type"] == "address":
        return to_checksum_address
    return _same


@dataclass(frozen=True, slots=True)
class ViewPlan:
    """How to encode a call of one view function and shape its result."""

    selector: bytes
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    convert: Convert

    @staticmethod
    def fits(fn_abi: dict[str, Any]) -> bool:
        """Whether a plan gives what web3 gives: not for several outputs with empty or repeated
        names, which web3 folds into one value (one per distinct name)."""
        names = [p["name"] for p in fn_abi.get("outputs", ())]
        return len(names) < 2 or (all(names) and len(set(names)) == len(names))

    @classmethod
    def of(cls, fn_abi: dict[str, Any]) -> ViewPlan:
        """The plan of a function of a contract made with `decode_tuples=True` (as
        `ChainClient.contract` makes them)."""
        inputs = tuple(abi_type(p) for p in fn_abi.get("inputs", ()))
        outputs_abi = list(fn_abi.get("outputs", ()))
        outputs = tuple(abi_type(p) for p in outputs_abi)
        parts = [converter(p) for p in outputs_abi]
        whole = _record([p["name"] for p in outputs_abi])

        def convert(decoded: Any) -> Any:
            shaped = whole([f(v) for f, v in zip(parts, decoded, strict=True)])
            return shaped[0] if len(shaped) == 1 else shaped

        selector = function_signature_to_4byte_selector(f"{fn_abi['name']}({','.join(inputs)})")
        return cls(selector, inputs, outputs, convert)

    def encode(self, codec: ABICodec, args: Sequence[Any]) -> str:
        """The call's data as hex; raises what the codec raises for an argument it refuses."""
        return "0x" + (self.selector + codec.encode(list(self.inputs), list(args))).hex()

    def decode(self, codec: ABICodec, data: bytes) -> Any:
        return self.convert(codec.decode(list(self.outputs), data))
