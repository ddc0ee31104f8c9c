"""Compiling the protocol contracts with py-solc-x, through the project's solc wrapper.

The compiler settings match `contracts/foundry.toml` (optimizer 200 runs, Cancun, no metadata
hash) so that the bytecode deployed from Python is the bytecode the forge suite tested. Outputs
are cached under `build/` keyed by a hash of every source file, the settings and the solc version:
an unchanged tree compiles once.

A package installed from a wheel has no sources to compile: it carries the compiled protocol as
package data (`trust.adapters.chain.artifacts`), which `compile_protocol` returns there. In a
checkout the packaged file is used when its digest is the sources' (the same key as the cache),
so the developer flow is unchanged: edit a contract and the next call compiles it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from trust.adapters.chain.artifacts import (
    DEPLOYED_CONTRACTS,
    PACKAGED_PATH,
    Artifact,
    CompiledProtocol,
    read_compiled,
)
from trust.adapters.local.toolchain import Toolchain
from trust.errors import CompileError

__all__ = ["Artifact", "compile_checkout", "compile_protocol", "DEPLOYED_CONTRACTS"]

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


def _sources(root: Path) -> dict[str, dict[str, str]]:
    sources: dict[str, dict[str, str]] = {}
    for path in sorted((root / "contracts" / "src").rglob("*.sol")):
        sources[path.relative_to(root).as_posix()] = {"content": path.read_text()}
    for unit in DEPLOYED_CONTRACTS.values():
        if unit.startswith("@openzeppelin/"):
            path = root / "node_modules" / unit
            sources[unit] = {"content": path.read_text()}
    return sources


_IMPORTED_PACKAGES = ("@openzeppelin/contracts", "@openzeppelin/contracts-upgradeable")


def _imported_versions(root: Path) -> dict[str, str]:
    """The installed version of each npm package the sources import, part of the digest: the
    sources name only the files they import directly, and an upgrade that changes only a file
    those import must still change the digest (package-lock.json pins the versions)."""
    versions: dict[str, str] = {}
    for package in _IMPORTED_PACKAGES:
        manifest = root / "node_modules" / package / "package.json"
        try:
            versions[package] = str(json.loads(manifest.read_text())["version"])
        except (OSError, ValueError, KeyError) as exc:
            raise CompileError(
                f"cannot read the version of {package} in {manifest}: {exc}; run scripts/setup.sh"
            ) from exc
    return versions


def _solc_version(solc: Path, root: Path, build_dir: Path) -> str:
    """The last line of `solc --version`, part of the digest.

    Asking costs more than a second of CPU (the wrapper loads solcjs in node), and every `trust`
    process of a checkout asks once (each worker of a local network), so the answer is kept under
    `build/`, keyed by what could change it: the binary's path, size and modification time, and the
    npm `solc` package the wrapper loads.
    """
    stat = solc.stat()
    identity: list[object] = [str(solc.resolve()), stat.st_size, stat.st_mtime_ns]
    package = root / "node_modules" / "solc" / "package.json"
    if package.is_file():
        identity.append(package.read_text())
    key = hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]
    remembered = build_dir / f"solc-version-{key}.txt"
    if remembered.is_file():
        return remembered.read_text().strip()
    out = subprocess.run([str(solc), "--version"], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise CompileError(f"{solc} --version failed: {out.stderr.strip()}")
    version = out.stdout.strip().splitlines()[-1]
    build_dir.mkdir(parents=True, exist_ok=True)
    tmp = remembered.with_name(f"{remembered.name}.{os.getpid()}.tmp")
    tmp.write_text(version + "\n")
    tmp.replace(remembered)
    return version


def compile_protocol(
    toolchain: Toolchain | None = None, build_dir: Path | None = None, *, packaged: Path = PACKAGED_PATH
) -> dict[str, Artifact]:
    """The deployed contracts: the package's own compiled protocol (`packaged`) outside a checkout;
    in a checkout, that one when it was compiled from exactly these sources, else a compile (cached
    under `build/`).

    Raises CompileError with the compiler's messages when the sources do not compile, and one that
    says what to install when an installed package carries no compiled protocol.
    """
    toolchain = toolchain or Toolchain.discover()
    shipped = read_compiled(packaged)
    if toolchain.root is None:
        if shipped is None:
            raise CompileError(
                f"this trust package carries no compiled contracts ({packaged} is missing) and runs outside a "
                "checkout, so it cannot compile them: install a wheel built by scripts/wheel.sh, or set "
                "TRUST_PROJECT_ROOT to a checkout of the project"
            )
        return shipped.artifacts
    return compile_checkout(toolchain, build_dir, packaged=shipped).artifacts


def compile_checkout(
    toolchain: Toolchain, build_dir: Path | None = None, *, packaged: CompiledProtocol | None = None
) -> CompiledProtocol:
    """Compiles the checkout's contracts (or reads the `build/` cache); `packaged` is returned instead
    when its digest is the checkout's.

    Raises CompileError with the compiler's messages when the sources do not compile.
    """
    root = toolchain.root
    if root is None:
        raise CompileError("an installed trust package has no contract sources to compile: run from a checkout")
    build_dir = build_dir or root / "build"
    sources = _sources(root)
    solc = toolchain.solc
    solc_version = _solc_version(solc, root, build_dir)
    digest = hashlib.sha256(
        json.dumps(
            {"sources": sources, "settings": _SETTINGS, "solc": solc_version, "imports": _imported_versions(root)},
            sort_keys=True,
        ).encode()
    ).hexdigest()[:16]
    if packaged is not None and packaged.digest == digest:
        return packaged
    cache = build_dir / f"contracts-{digest}.json"
    if cache.is_file():
        output = json.loads(cache.read_text())
    else:
        # Imported here: an installed package never compiles, and needs neither py-solc-x nor solc.
        import solcx
        from solcx.exceptions import SolcError

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
    return CompiledProtocol(digest=digest, solc=solc_version, artifacts=artifacts)
