"""The beacon's key files under a home: a dealer makes a t-of-n group and writes each signer's
secret share and operator account to a file of its own.

    <home>/beacon/group.json        the public group: t, the group key, each signer's share key and
                                    operator account (what `ThresholdBeacon` is constructed with)
    <home>/beacon/signer-<i>.json   signer i's secret: its Shamir share and its operator's private
                                    key (mode 0600; read by that signer's process only)

The devnet uses a trusted dealer: this process draws the group secret, splits it, writes the shares
and forgets the secret (it is never written). A production beacon runs a distributed key generation
among its operators instead (as drand does, Pedersen/Gennaro et al.), so that no single party ever
holds the secret; the contract and the signers are the same either way, since they only see the
group key, the share keys and the shares.

Dealing is idempotent: an existing group with the asked t and n is kept (its contract may be
deployed already); one with other numbers is an error naming the folder, never silently replaced.
"""

from __future__ import annotations

import json
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eth_account import Account
from eth_account.signers.local import LocalAccount

from trust.adapters.local.private_files import write_private
from trust.core.beacon import bls
from trust.errors import BeaconError

__all__ = ["GROUP_FILE", "SignerKey", "deal_group", "load_group", "load_signer", "signer_file"]

GROUP_FILE = "group.json"


def signer_file(directory: Path, index: int) -> Path:
    """Where signer `index`'s secret file lives."""
    return directory / f"signer-{index}.json"


@dataclass(frozen=True, slots=True)
class SignerKey:
    """One signer's secrets: its share of the group secret and the account it posts shares from."""

    share: bls.SecretShare
    operator: LocalAccount

    @property
    def index(self) -> int:
        return self.share.index

    def __repr__(self) -> str:
        return f"SignerKey(index={self.index}, operator={self.operator.address})"


def _read_json(path: Path, what: str) -> object:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise BeaconError(f"no {what} at {path}: deal the beacon's keys (`trust devnet up` does)") from exc
    except (OSError, ValueError) as exc:
        raise BeaconError(f"{path} is not a readable {what} ({exc}); deal new keys and redeploy the beacon") from exc


def load_group(directory: Path) -> bls.BeaconGroup:
    """The public group dealt into `directory`; `BeaconError` when absent or malformed."""
    path = directory / GROUP_FILE
    return bls.BeaconGroup.from_json(_read_json(path, "beacon group"), str(path))


def load_signer(path: Path, group: bls.BeaconGroup) -> SignerKey:
    """Signer secrets from `path`, checked against `group` (the share must match its share key and
    the account its operator), and refused when others than the owner may read the file."""
    mode = path.stat().st_mode if path.exists() else 0
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise BeaconError(
            f"{path} holds a secret share but is readable by others (mode {mode & 0o777:o}); chmod 600 it"
        )
    data = _read_json(path, "beacon signer key")
    try:
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        index = int(data["index"])
        share = bls.SecretShare(index, int(data["share"], 16))
        operator: LocalAccount = Account.from_key(data["operator_key"])
    except (KeyError, TypeError, ValueError) as exc:
        raise BeaconError(f"{path}: 'index', 'share' (hex) and 'operator_key' are required ({exc!r})") from exc
    if not 1 <= index <= group.count:
        raise BeaconError(f"{path} is signer {index}, but the group has signers 1..{group.count}")
    if bls.public_key(share.secret) != group.share_keys[index - 1]:
        raise BeaconError(f"{path}: the share of signer {index} does not match its share key in the group file")
    if operator.address != group.operators[index - 1]:
        raise BeaconError(
            f"{path}: signer {index}'s account is {operator.address}, the group names {group.operators[index - 1]}"
        )
    return SignerKey(share, operator)


def deal_group(
    directory: Path,
    threshold: int,
    count: int,
    *,
    randbelow: Callable[[int], int] = secrets.randbelow,
    new_account: Callable[[], LocalAccount] = Account.create,
) -> bls.BeaconGroup:
    """The group in `directory`, dealt now (t of n, a fresh secret and operator accounts) unless a
    group with these numbers is there already. The signer files are written before the group file,
    so a dealing cut short leaves no group and is simply dealt again."""
    path = directory / GROUP_FILE
    if path.exists():
        group = load_group(directory)
        if (group.threshold, group.count) != (threshold, count):
            raise BeaconError(
                f"{path} holds a {group.threshold}-of-{group.count} group, not {threshold}-of-{count}: keep "
                f"TRUST_BEACON__THRESHOLD={group.threshold} and TRUST_BEACON__SIGNERS={group.count}, or remove "
                f"{directory} and redeploy on a fresh chain (`trust devnet down`, then delete the devnet folder)"
            )
        return group
    secret = 1 + randbelow(bls.CURVE_ORDER - 1)
    shares = bls.deal(secret, threshold, count, randbelow)
    operators = [new_account() for _ in shares]
    for share, operator in zip(shares, operators, strict=True):
        record = {"index": share.index, "share": hex(share.secret), "operator_key": "0x" + bytes(operator.key).hex()}
        write_private(signer_file(directory, share.index), json.dumps(record, indent=2) + "\n")
    group = bls.BeaconGroup(
        threshold=threshold,
        group_key=bls.public_key(secret),
        share_keys=tuple(bls.public_key(share.secret) for share in shares),
        operators=tuple(operator.address for operator in operators),
    )
    del secret  # the dealer forgets the group secret: only the shares remain
    write_private(path, json.dumps(group.to_json(), indent=2) + "\n")
    return group
