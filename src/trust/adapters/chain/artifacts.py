"""The compiled protocol shipped inside the package: ABIs and bytecode, so that an SDK, a worker or a
gateway installed from a wheel needs neither solc nor a checkout.

`abi/contracts.json` holds every contract of `DEPLOYED_CONTRACTS` (ABI, creation and runtime
bytecode, library placeholders) and the digest of what it was compiled from: every source file, the
compiler settings, the solc version and the versions of the npm packages the sources import, the
same key as the `build/` cache of `trust.adapters.chain.compiler`. `compile_protocol` uses the file
outside a checkout, and inside a checkout whose digest is the file's; a checkout whose sources
changed compiles as before.

The file is built, not committed: `python -m trust.adapters.chain.artifacts --write` compiles the
checkout (or reads the `build/` cache) and writes it, `scripts/setup.sh` runs that, and so does
`scripts/wheel.sh` before it builds the wheel. A committed copy would conflict on every merge that
touches a contract; instead `tests/test_wheel.py` checks that a built wheel carries the file and
that it matches a fresh compile of `contracts/src`. `--check` compares the file (or another one)
with the checkout the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trust.errors import CompileError, TrustError

__all__ = [
    "DEPLOYED_CONTRACTS",
    "FORMAT_VERSION",
    "PACKAGED_PATH",
    "Artifact",
    "CompiledProtocol",
    "differences",
    "main",
    "read_compiled",
    "write_compiled",
]

#: The contracts the Python side deploys or talks to, by name -> source unit.
DEPLOYED_CONTRACTS: dict[str, str] = {
    "TRUSTAudit": "contracts/src/TRUSTAudit.sol",
    "AuditorRegistry": "contracts/src/AuditorRegistry.sol",
    "ProtocolParams": "contracts/src/ProtocolParams.sol",
    "SegmentKeys": "contracts/src/SegmentKeys.sol",
    "BlockhashRandomness": "contracts/src/randomness/BlockhashRandomness.sol",
    "ThresholdBeacon": "contracts/src/randomness/ThresholdBeacon.sol",
    "TrustToken": "contracts/src/token/TrustToken.sol",
    # External libraries of TRUSTAudit: deployed once and linked into its bytecode (`Artifact.link`).
    "SessionLifecycle": "contracts/src/audit/SessionLifecycle.sol",
    "CommitteeSelection": "contracts/src/audit/CommitteeSelection.sol",
    "Tally": "contracts/src/audit/Tally.sol",
    "FeeSplit": "contracts/src/audit/FeeSplit.sol",
    "ProviderEscrow": "contracts/src/billing/ProviderEscrow.sol",
    "ERC1967Proxy": "@openzeppelin/contracts/proxy/ERC1967/ERC1967Proxy.sol",
    "TimelockController": "@openzeppelin/contracts/governance/TimelockController.sol",
}

FORMAT_VERSION = 1
"""Of `abi/contracts.json`; a file of another version is refused (the package and its file are
built together, so a mismatch means a hand-copied file)."""

PACKAGED_PATH = Path(__file__).with_name("abi") / "contracts.json"
"""Where the package carries its compiled protocol (package data, see pyproject.toml)."""


@dataclass(frozen=True, slots=True)
class Artifact:
    """A compiled contract: its ABI and creation bytecode.

    `libraries` names the external libraries the creation bytecode calls, each with the byte
    offsets of its 20-byte placeholders: the bytecode deploys only once `link` filled them in.
    """

    name: str
    abi: list[dict[str, Any]]
    bytecode: str
    deployed_bytecode: str
    libraries: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def link(self, addresses: dict[str, str]) -> str:
        """The creation bytecode with every library placeholder replaced by its address."""
        hexcode = self.bytecode[2:]
        for library, offsets in self.libraries.items():
            if library not in addresses:
                raise CompileError(f"{self.name} needs library {library}, which has no address")
            address = addresses[library].lower().removeprefix("0x")
            for offset in offsets:
                hexcode = hexcode[: 2 * offset] + address + hexcode[2 * offset + 40 :]
        return "0x" + hexcode


@dataclass(frozen=True, slots=True)
class CompiledProtocol:
    """The deployed contracts and what they were compiled from: `digest` keys the sources, the
    compiler settings and the solc version (`solc`, its `--version` line)."""

    digest: str
    solc: str
    artifacts: dict[str, Artifact]

    def to_json(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "digest": self.digest,
            "solc": self.solc,
            "contracts": {
                name: {
                    "abi": artifact.abi,
                    "bytecode": artifact.bytecode,
                    "deployed_bytecode": artifact.deployed_bytecode,
                    "libraries": {library: list(offsets) for library, offsets in artifact.libraries.items()},
                }
                for name, artifact in sorted(self.artifacts.items())
            },
        }


def read_compiled(path: Path = PACKAGED_PATH) -> CompiledProtocol | None:
    """The compiled protocol at `path`, or None when there is no such file (a checkout that never ran
    the build step, or a wheel built without it).

    Raises CompileError naming the file and the field when the file is there but unusable.
    """
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CompileError(f"cannot read the compiled contracts at {path}: {exc.strerror or exc}") from exc
    fix = "rebuild it with `python -m trust.adapters.chain.artifacts --write` in a checkout, or reinstall the package"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CompileError(f"{path} is not valid JSON ({exc}); {fix}") from exc
    if not isinstance(data, dict) or data.get("format_version") != FORMAT_VERSION:
        found = data.get("format_version") if isinstance(data, dict) else type(data).__name__
        raise CompileError(f"{path} has format_version {found!r}, expected {FORMAT_VERSION}; {fix}")
    contracts = data.get("contracts")
    if not isinstance(contracts, dict):
        raise CompileError(f"{path} has no `contracts` object; {fix}")
    missing = sorted(set(DEPLOYED_CONTRACTS) - set(contracts))
    if missing:
        raise CompileError(f"{path} lacks {', '.join(missing)}; {fix}")
    artifacts: dict[str, Artifact] = {}
    for name in DEPLOYED_CONTRACTS:
        entry = contracts[name]
        try:
            artifacts[name] = Artifact(
                name=name,
                abi=list(entry["abi"]),
                bytecode=str(entry["bytecode"]),
                deployed_bytecode=str(entry["deployed_bytecode"]),
                libraries={library: tuple(int(o) for o in offsets) for library, offsets in entry["libraries"].items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CompileError(f"{path}: contracts.{name} is malformed ({exc!r}); {fix}") from exc
    return CompiledProtocol(digest=str(data.get("digest", "")), solc=str(data.get("solc", "")), artifacts=artifacts)


def write_compiled(compiled: CompiledProtocol, path: Path = PACKAGED_PATH) -> None:
    """Writes `compiled` to `path` atomically, as sorted compact JSON: the same protocol always gives
    the same bytes, so a rebuilt wheel differs only where the contracts did."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(compiled.to_json(), sort_keys=True, separators=(",", ":")) + "\n")
    tmp.replace(path)


def differences(found: CompiledProtocol, fresh: CompiledProtocol) -> list[str]:
    """What `found` (a file) has that a fresh compile does not, one line each; empty when they match.

    Compared as the file's JSON: under `python -m` this module is loaded twice (as `__main__` too),
    and dataclasses of two copies of one class never compare equal."""
    lines = []
    if found.digest != fresh.digest:
        lines.append(f"digest {found.digest} (compiled from other sources than contracts/src's {fresh.digest})")
    if found.solc != fresh.solc:
        lines.append(f"compiled by {found.solc!r}, not {fresh.solc!r}")
    ours, theirs = found.to_json()["contracts"], fresh.to_json()["contracts"]
    for name in sorted(set(ours) | set(theirs)):
        if ours.get(name) != theirs.get(name):
            lines.append(f"{name} differs from a fresh compile")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m trust.adapters.chain.artifacts --write | --check [--file PATH]`, in a checkout."""
    parser = argparse.ArgumentParser(
        prog="python -m trust.adapters.chain.artifacts",
        description="Write or check the compiled contracts the trust package ships (ABIs and bytecode).",
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="compile contracts/src (or read build/) and write FILE")
    action.add_argument("--check", action="store_true", help="fail when FILE is missing or differs from a compile")
    parser.add_argument("--file", type=Path, default=PACKAGED_PATH, help=f"default: {PACKAGED_PATH}")
    args = parser.parse_args(argv)
    # The compiler imports this module: imported here, when a command asks for a compile.
    from trust.adapters.chain.compiler import compile_checkout
    from trust.adapters.local.toolchain import Toolchain

    try:
        toolchain = Toolchain.discover()
        if toolchain.root is None:
            raise CompileError("the compiled contracts are built from a checkout: set TRUST_PROJECT_ROOT to one")
        fresh = compile_checkout(toolchain)
        found = read_compiled(args.file)
    except TrustError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.write:
        if found is not None and not differences(found, fresh):
            print(f"{args.file}: up to date ({fresh.digest})")
        else:
            write_compiled(fresh, args.file)
            print(f"{args.file}: written ({fresh.digest}, {len(fresh.artifacts)} contracts)")
        return 0
    if found is None:
        print(f"error: {args.file} does not exist; write it with --write", file=sys.stderr)
        return 1
    stale = differences(found, fresh)
    if stale:
        print(f"error: {args.file} is stale; rewrite it with --write:", file=sys.stderr)
        for line in stale:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"{args.file}: matches contracts/src ({fresh.digest})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
