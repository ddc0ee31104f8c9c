"""`trust.core.beacon.bls`: Shamir dealing, aggregation, t - 1 shares, and the hash to G1 the contract uses."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trust.adapters.local.toolchain import project_root
from trust.core.beacon import bls
from trust.errors import BeaconError
from trust.lab.beacon_vectors import solidity_vectors

BEACON = "0x5615dEB798BB3E4dFa0139dFa1b3D433Cc23b72f"


def _group(threshold: int, count: int, seed: int = 7) -> tuple[int, list[bls.SecretShare]]:
    rng = random.Random(seed)
    secret = rng.randrange(1, bls.CURVE_ORDER)
    return secret, bls.deal(secret, threshold, count, rng.randrange)


def _interpolate(shares: list[bls.SecretShare]) -> int:
    coefficients = bls.lagrange_coefficients([s.index for s in shares])
    return sum(coefficients[s.index] * s.secret for s in shares) % bls.CURVE_ORDER


def test_any_t_shares_interpolate_the_secret_and_fewer_do_not() -> None:
    secret, shares = _group(3, 5)
    for subset in ([0, 1, 2], [0, 2, 4], [1, 3, 4], [4, 3, 2]):
        assert _interpolate([shares[i] for i in subset]) == secret
    assert _interpolate(shares[:2]) != secret


def test_every_t_subset_aggregates_to_the_one_group_signature() -> None:
    secret, shares = _group(2, 3)
    message = bls.beacon_message(31337, BEACON, 42)
    partials = {s.index: bls.sign(s.secret, message) for s in shares}
    expected = bls.sign(secret, message)
    for pair in ((1, 2), (1, 3), (2, 3)):
        assert bls.aggregate({i: partials[i] for i in pair}, 2) == expected
    assert bls.verify(bls.public_key(secret), message, expected)


def test_t_minus_one_partials_are_refused_and_do_not_make_a_signature() -> None:
    secret, shares = _group(3, 4)
    message = bls.beacon_message(31337, BEACON, 9)
    partials = {s.index: bls.sign(s.secret, message) for s in shares[:2]}
    with pytest.raises(BeaconError, match="needs t = 3"):
        bls.aggregate(partials, 3)
    # Interpolating the two as if t were 2 gives a point, but not the group's signature.
    forged = bls.aggregate(partials, 2)
    assert forged != bls.sign(secret, message)


def test_a_signature_verifies_for_its_own_block_chain_and_beacon_only() -> None:
    secret, _ = _group(1, 1)
    key = bls.public_key(secret)
    signature = bls.sign(secret, bls.beacon_message(31337, BEACON, 5))
    assert bls.verify(key, bls.beacon_message(31337, BEACON, 5), signature)
    assert not bls.verify(key, bls.beacon_message(31337, BEACON, 6), signature)
    assert not bls.verify(key, bls.beacon_message(1, BEACON, 5), signature)
    assert not bls.verify(bls.public_key(secret + 1), bls.beacon_message(31337, BEACON, 5), signature)


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=200))
def test_hash_to_g1_lands_on_the_curve(message: bytes) -> None:
    assert bls.hash_to_g1(message).on_curve()


def test_bad_input_is_named() -> None:
    with pytest.raises(BeaconError, match="threshold t = 4"):
        bls.deal(5, 4, 3, random.Random(1).randrange)
    with pytest.raises(BeaconError, match="not an address"):
        bls.beacon_message(1, "0x1234", 1)
    with pytest.raises(BeaconError, match="not a point of G1"):
        bls.aggregate({1: bls.G1Point(1, 3)}, 1)
    with pytest.raises(BeaconError, match="the group key"):
        bls.G2Point.from_json({"x": ["0x1", "0x2"], "y": ["0x3", "0x4"]}, "the group key")
    with pytest.raises(BeaconError, match="distinct"):
        bls.lagrange_coefficients([1, 1])


def test_the_forge_vectors_are_what_this_code_computes() -> None:
    """`contracts/test/randomness/BeaconVectors.sol` is this module's output: the contract is tested
    against py_ecc's arithmetic (message point, partials, group signature, value)."""
    checked_in = project_root() / "contracts" / "test" / "randomness" / "BeaconVectors.sol"
    assert Path(checked_in).read_text() == solidity_vectors()


def test_group_json_round_trips() -> None:
    secret, shares = _group(2, 3)
    group = bls.BeaconGroup(
        2,
        bls.public_key(secret),
        tuple(bls.public_key(s.secret) for s in shares),
        ("0x" + "11" * 20, "0x" + "22" * 20, "0x" + "33" * 20),
    )
    assert bls.BeaconGroup.from_json(group.to_json(), "group.json") == group
    with pytest.raises(BeaconError, match="1 <= t <= n"):
        bls.BeaconGroup(4, group.group_key, group.share_keys, group.operators)
