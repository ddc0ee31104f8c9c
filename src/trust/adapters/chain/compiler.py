"""Compiling the protocol contracts with py-solc-x, through the project's solc wrapper.

The compiler settings match `contracts/foundry.toml` (optimizer 200 runs, Cancun, no metadata
hash) so that the bytecode deployed from Python is the bytecode the forge suite tested. Outputs
are cached under `build/` keyed by a hash of every source file and the settings: an unchanged tree
compiles once.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import solcx
from solcx.exceptions import SolcError

from trust.adapters.local.toolchain import Toolchain
from trust.errors import CompileError

__all__ = ["Artifact", "compile_protocol", "DEPLOYED_CONTRACTS"]

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

_SETTINGS: dict[str, Any] = {
    "optimizer": {"enabled": True, "runs": 200},
    "evmVersion": "cancun",
    "metadata": {"bytecodeHash": "none"},
    "remappings": [
        "@openzeppelin/contracts/=node_modules/@openzeppelin/contracts/",
        "@openzeppelin/contracts-upgradeable/=node_modules/@openzeppelin/contracts-upgradeable/",
    ],
    "outputSelection": {
        "*": {"*": ["abi", "evm.bytecode.object", "evm.bytecode.linkReferences", "evm.deployedBytecode.object"]}
    },
}


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


def _sources(root: Path) -> dict[str, dict[str, str]]:
    sources: dict[str, dict[str, str]] = {}
    for path in sorted((root / "contracts" / "src").rglob("*.sol")):
        sources[path.relative_to(root).as_posix()] = {"content": path.read_text()}
    for unit in DEPLOYED_CONTRACTS.values():
        if unit.startswith("@openzeppelin/"):
            path = root / "node_modules" / unit
            sources[unit] = {"content": path.read_text()}
    return sources


def _solc_version(solc: Path) -> str:
    out = subprocess.run([str(solc), "--version"], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise CompileError(f"{solc} --version failed: {out.stderr.strip()}")
    return out.stdout.strip().splitlines()[-1]


def compile_protocol(toolchain: Toolchain, build_dir: Path | None = None) -> dict[str, Artifact]:
    """Compiles the protocol (or reads the cached output) and returns the deployed contracts.

    Raises CompileError with the compiler's messages when the sources do not compile.
    """
    root = toolchain.root
    build_dir = build_dir or root / "build"
    sources = _sources(root)
    solc = toolchain.solc
    digest = hashlib.sha256(
        json.dumps({"sources": sources, "settings": _SETTINGS, "solc": _solc_version(solc)}, sort_keys=True).encode()
    ).hexdigest()[:16]
    cache = build_dir / f"contracts-{digest}.json"
    if cache.is_file():
        output = json.loads(cache.read_text())
    else:
        try:
            output = solcx.compile_standard(
                {"language": "Solidity", "sources": sources, "settings": _SETTINGS},
                base_path=str(root),
                allow_paths=[str(root)],
                solc_binary=solc,
            )
        except SolcError as exc:
            raise CompileError(f"the contracts did not compile:\n{exc.stderr_data or exc}") from exc
        errors = [e for e in output.get("errors", []) if e.get("severity") == "error"]
        if errors:
            raise CompileError("the contracts did not compile:\n" + "\n".join(e["formattedMessage"] for e in errors))
        build_dir.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        tmp.write_text(json.dumps(output))
        tmp.replace(cache)
    artifacts: dict[str, Artifact] = {}
    for name, unit in DEPLOYED_CONTRACTS.items():
        try:
            entry = output["contracts"][unit][name]
        except KeyError as exc:
            raise CompileError(f"compiler output has no {name} in {unit}") from exc
        libraries: dict[str, tuple[int, ...]] = {}
        for per_file in entry["evm"]["bytecode"].get("linkReferences", {}).values():
            for library, places in per_file.items():
                libraries[library] = tuple(place["start"] for place in places)
        artifacts[name] = Artifact(
            name=name,
            abi=entry["abi"],
            bytecode="0x" + entry["evm"]["bytecode"]["object"],
            deployed_bytecode="0x" + entry["evm"]["deployedBytecode"]["object"],
            libraries=libraries,
        )
    return artifacts
