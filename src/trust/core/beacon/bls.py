"""Threshold BLS on BN254, bit for bit what `contracts/src/libraries/BN254.sol` and
`ThresholdBeacon.sol` check: keys, Shamir t-of-n dealing, partial signatures, Lagrange aggregation,
hash-to-G1 and verification (py_ecc's optimized BN254, for tests and off-chain checks).

Pure: no I/O, no clock; randomness comes in as an argument (`randbelow`, e.g. `secrets.randbelow`).

The scheme (Boneh-Lynn-Shacham with keys in G2, signatures in G1, as drand's "G1 signatures"):

- secret key s in Z_N, public key s * g2; signature sigma = s * H(m), H the hash to G1 below.
- Dealing: a random polynomial f of degree t - 1 over Z_N with f(0) = s; signer i (1..n) gets
  f(i) and the public share key f(i) * g2. Any t shares determine f(0) by Lagrange interpolation;
  t - 1 shares are uniformly distributed whatever s is, so they reveal nothing about it.
- Signer i's partial signature is f(i) * H(m). For any t of them, the sum of lambda_i * partial_i
  (lambda_i the Lagrange coefficients at 0) is s * H(m): the same, unique, group signature
  whichever t signers answered.
- Verification: e(sigma, g2) == e(H(m), public key).

The beacon's message for block b is abi.encode(chain id, beacon address, b) (`beacon_message`),
and its randomness keccak256(abi.encode(sigma.x, sigma.y)) (`randomness_value`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from eth_utils import keccak
from py_ecc import optimized_bn128 as bn

from trust.errors import BeaconError

__all__ = [
    "BeaconGroup",
    "DST",
    "FIELD_MODULUS",
    "G1Point",
    "G2Point",
    "CURVE_ORDER",
    "SecretShare",
    "aggregate",
    "beacon_message",
    "deal",
    "hash_to_g1",
    "lagrange_coefficients",
    "public_key",
    "randomness_value",
    "sign",
    "verify",
]

FIELD_MODULUS: int = bn.field_modulus
"""p, the base field of BN254 (p = 3 mod 4)."""
CURVE_ORDER: int = bn.curve_order
"""N, the order of G1 and G2: keys and shares are integers mod N."""
DST = b"TRUST-BEACON-V1:BN254G1:keccak256:try-and-increment"
"""The domain separation tag of hash-to-G1 (`ThresholdBeacon._DST`)."""

_SQRT_EXPONENT = (FIELD_MODULUS + 1) // 4
_MAX_TRIES = 256


@dataclass(frozen=True, slots=True)
class G1Point:
    """An affine point of G1 as the contracts see it: (x, y), both below p."""

    x: int
    y: int

    def on_curve(self) -> bool:
        """On y^2 = x^3 + 3 with coordinates below p, and not the point at infinity (0, 0)."""
        p = FIELD_MODULUS
        if not (0 <= self.x < p and 0 <= self.y < p) or (self.x, self.y) == (0, 0):
            return False
        return (self.y * self.y - self.x**3 - 3) % p == 0

    def to_chain(self) -> tuple[int, int]:
        return (self.x, self.y)

    def _jacobian(self) -> tuple[bn.FQ, bn.FQ, bn.FQ]:
        if not self.on_curve():
            raise BeaconError(f"({self.x}, {self.y}) is not a point of G1 (y^2 = x^3 + 3 mod p)")
        return (bn.FQ(self.x), bn.FQ(self.y), bn.FQ.one())

    @staticmethod
    def _from_jacobian(point: tuple[bn.FQ, bn.FQ, bn.FQ]) -> G1Point:
        x, y = bn.normalize(point)
        return G1Point(int(x), int(y))


@dataclass(frozen=True, slots=True)
class G2Point:
    """An affine point of G2: each coordinate a*i + b stored as (a, b), imaginary part first,
    which is EIP-197's order and the contract's `BN254.G2Point`."""

    x: tuple[int, int]
    y: tuple[int, int]

    def to_chain(self) -> tuple[list[int], list[int]]:
        return ([self.x[0], self.x[1]], [self.y[0], self.y[1]])

    def to_json(self) -> dict[str, list[str]]:
        return {"x": [hex(v) for v in self.x], "y": [hex(v) for v in self.y]}

    @classmethod
    def from_json(cls, data: object, where: str) -> G2Point:
        """The point written by `to_json`; `BeaconError` naming `where` when it is not one."""
        try:
            if not isinstance(data, dict):
                raise TypeError(f"a {type(data).__name__}, not an object")
            x = tuple(int(v, 16) for v in data["x"])
            y = tuple(int(v, 16) for v in data["y"])
            if len(x) != 2 or len(y) != 2:
                raise ValueError("two coordinates each")
        except (KeyError, TypeError, ValueError) as exc:
            raise BeaconError(f"{where} is not a G2 point ({{'x': [im, re], 'y': [im, re]}} in hex): {exc!r}") from exc
        point = cls((x[0], x[1]), (y[0], y[1]))
        point._jacobian(where)
        return point

    def _jacobian(self, where: str = "the G2 point") -> tuple[bn.FQ2, bn.FQ2, bn.FQ2]:
        # py_ecc's FQ2 takes (real, imaginary).
        point = (bn.FQ2([self.x[1], self.x[0]]), bn.FQ2([self.y[1], self.y[0]]), bn.FQ2.one())
        if not bn.is_on_curve(point, bn.b2) or not bn.is_inf(bn.multiply(point, CURVE_ORDER)):
            raise BeaconError(f"{where} is not a point of G2 (off the twist or outside the subgroup)")
        return point

    @staticmethod
    def _from_jacobian(point: tuple[bn.FQ2, bn.FQ2, bn.FQ2]) -> G2Point:
        x, y = bn.normalize(point)
        return G2Point((int(x.coeffs[1]), int(x.coeffs[0])), (int(y.coeffs[1]), int(y.coeffs[0])))


@dataclass(frozen=True, slots=True)
class SecretShare:
    """Signer `index`'s share f(index) of the group secret (index 1..n, the Shamir x-coordinate)."""

    index: int
    secret: int

    def __repr__(self) -> str:
        # A share is a secret: never in a log line or a traceback.
        return f"SecretShare(index={self.index}, secret=<hidden>)"


@dataclass(frozen=True, slots=True)
class BeaconGroup:
    """What is public about a beacon's signers, and what its contract is constructed with: t, the
    group key, and signer i's share key and operator account at position i - 1."""

    threshold: int
    group_key: G2Point
    share_keys: tuple[G2Point, ...]
    operators: tuple[str, ...]

    def __post_init__(self) -> None:
        count = len(self.share_keys)
        if count != len(self.operators) or not 1 <= self.threshold <= count:
            raise BeaconError(
                f"a beacon group needs one share key and one operator per signer and 1 <= t <= n: "
                f"t = {self.threshold}, {count} share keys, {len(self.operators)} operators"
            )

    @property
    def count(self) -> int:
        """n, the number of signers."""
        return len(self.share_keys)

    def constructor_args(self) -> tuple[object, ...]:
        """`ThresholdBeacon`'s constructor arguments."""
        return (
            self.group_key.to_chain(),
            [key.to_chain() for key in self.share_keys],
            list(self.operators),
            self.threshold,
        )

    def to_json(self) -> dict[str, object]:
        return {
            "threshold": self.threshold,
            "group_key": self.group_key.to_json(),
            "signers": [
                {"index": i, "share_key": key.to_json(), "operator": operator}
                for i, (key, operator) in enumerate(zip(self.share_keys, self.operators, strict=True), start=1)
            ],
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> BeaconGroup:
        """The group written by `to_json`; `BeaconError` naming `where` and the field otherwise."""
        if not isinstance(data, dict):
            raise BeaconError(f"{where} is not a beacon group (a JSON object)")
        signers = data.get("signers")
        threshold = data.get("threshold")
        if not isinstance(signers, list) or not isinstance(threshold, int):
            raise BeaconError(f"{where}: 'threshold' (an integer) and 'signers' (a list) are required")
        keys, operators = [], []
        for position, entry in enumerate(signers, start=1):
            if (
                not isinstance(entry, dict)
                or entry.get("index") != position
                or not isinstance(entry.get("operator"), str)
            ):
                raise BeaconError(f"{where}: signer {position} needs 'index': {position}, 'share_key' and 'operator'")
            keys.append(G2Point.from_json(entry.get("share_key"), f"{where}: the share key of signer {position}"))
            operators.append(entry["operator"])
        group_key = G2Point.from_json(data.get("group_key"), f"{where}: the group key")
        return cls(threshold, group_key, tuple(keys), tuple(operators))


def _word(value: int) -> bytes:
    return value.to_bytes(32, "big")


def beacon_message(chain_id: int, beacon_address: str, block_number: int) -> bytes:
    """abi.encode(chain id, beacon address, block number): what the beacon's signers sign for a block,
    bound to one chain and one beacon so a signature can never be replayed elsewhere."""
    address = bytes.fromhex(beacon_address.removeprefix("0x"))
    if len(address) != 20:
        raise BeaconError(f"{beacon_address!r} is not an address (20 bytes in hex)")
    return _word(chain_id) + address.rjust(32, b"\0") + _word(block_number)


def hash_to_g1(message: bytes, dst: bytes = DST) -> G1Point:
    """`BN254.hashToG1`: try-and-increment over a 512-bit hash reduced mod p (see the contract)."""
    p = FIELD_MODULUS
    seed = keccak(dst + message)
    for counter in range(_MAX_TRIES):
        high = int.from_bytes(keccak(seed + bytes([counter, 0])), "big")
        low = int.from_bytes(keccak(seed + bytes([counter, 1])), "big")
        x = (high * 2**256 + low) % p
        rhs = (pow(x, 3, p) + 3) % p
        y = pow(rhs, _SQRT_EXPONENT, p)
        if y * y % p != rhs:
            continue
        if (y & 1) != (high >> 255):
            y = p - y
        return G1Point(x, y)
    raise BeaconError(f"no point of G1 for seed {seed.hex()} within {_MAX_TRIES} tries")  # probability 2^-256


def _scalar(value: int, what: str) -> int:
    if not 0 < value < CURVE_ORDER:
        raise BeaconError(f"{what} must be in 1..N-1 (N the order of BN254's groups), not {value}")
    return value


def public_key(secret: int) -> G2Point:
    """secret * g2."""
    return G2Point._from_jacobian(bn.multiply(bn.G2, _scalar(secret, "a secret key")))


def _evaluate(coefficients: Sequence[int], x: int) -> int:
    value = 0
    for coefficient in reversed(coefficients):
        value = (value * x + coefficient) % CURVE_ORDER
    return value


def deal(secret: int, threshold: int, count: int, randbelow: Callable[[int], int]) -> list[SecretShare]:
    """Shamir t-of-n shares of `secret` over Z_N: f(1), ..., f(n) for a random f of degree t - 1 with
    f(0) = secret. `randbelow(k)` returns a uniform integer in [0, k) (`secrets.randbelow`)."""
    _scalar(secret, "the group secret")
    if not 1 <= threshold <= count:
        raise BeaconError(f"threshold t = {threshold} must be between 1 and the number of signers n = {count}")
    if count > 255:
        raise BeaconError(f"at most 255 signers (the beacon contract's limit), not {count}")
    coefficients = [secret] + [randbelow(CURVE_ORDER) for _ in range(threshold - 1)]
    shares = [SecretShare(i, _evaluate(coefficients, i)) for i in range(1, count + 1)]
    for share in shares:
        # f(i) = 0 has probability (t-1)/N; a zero share has no public key, so deal again.
        if share.secret == 0:
            return deal(secret, threshold, count, randbelow)
    return shares


def lagrange_coefficients(indices: Sequence[int]) -> dict[int, int]:
    """lambda_i for each i of `indices`, at x = 0, mod N: f(0) = sum lambda_i f(i) for f of degree
    below len(indices)."""
    if len(set(indices)) != len(indices) or any(not 0 < i < CURVE_ORDER for i in indices):
        raise BeaconError(f"signer indices must be distinct and positive, not {list(indices)}")
    coefficients = {}
    for i in indices:
        numerator, denominator = 1, 1
        for j in indices:
            if j != i:
                numerator = numerator * j % CURVE_ORDER
                denominator = denominator * (j - i) % CURVE_ORDER
        coefficients[i] = numerator * pow(denominator, -1, CURVE_ORDER) % CURVE_ORDER
    return coefficients


def sign(secret: int, message: bytes) -> G1Point:
    """secret * H(message): a full signature for the group secret, a partial one for a share."""
    return G1Point._from_jacobian(bn.multiply(hash_to_g1(message)._jacobian(), _scalar(secret, "a secret key")))


def aggregate(partials: Mapping[int, G1Point], threshold: int) -> G1Point:
    """The group signature from `threshold` partial signatures (signer index -> partial); the first
    `threshold` indices in order are used. `BeaconError` with fewer: t - 1 partials interpolate a
    point that is not the group's signature."""
    if len(partials) < threshold:
        raise BeaconError(f"{len(partials)} partial signatures; the group signature needs t = {threshold}")
    chosen = sorted(partials)[:threshold]
    total = None
    for index, coefficient in lagrange_coefficients(chosen).items():
        term = bn.multiply(partials[index]._jacobian(), coefficient)
        total = term if total is None else bn.add(total, term)
    assert total is not None
    return G1Point._from_jacobian(total)


def verify(key: G2Point, message: bytes, signature: G1Point) -> bool:
    """e(signature, g2) == e(H(message), key), as the contract checks it (two pairings: ~0.6 s)."""
    if not signature.on_curve():
        return False
    return bn.pairing(bn.G2, signature._jacobian()) == bn.pairing(key._jacobian(), hash_to_g1(message)._jacobian())


def randomness_value(signature: G1Point) -> bytes:
    """keccak256(abi.encode(x, y)): the 32 bytes `ThresholdBeacon.randomnessAt` answers."""
    return keccak(_word(signature.x) + _word(signature.y))
