"""Where the pinned toolchain lives: anvil, forge, cast and the solc wrapper.

One place finds every tool: an environment variable names it explicitly (`TRUST_ANVIL`,
`TRUST_FORGE`, `TRUST_CAST`, `TRUST_SOLC`), otherwise it is taken from the project's
`node_modules` (installed by `npm ci` from the root package.json) or `tools/`.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from trust.errors import ToolchainError

__all__ = ["Toolchain", "project_root"]

_NPM_BINARIES = {
    "anvil": "node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil",
    "forge": "node_modules/@foundry-rs/forge-linux-amd64/bin/forge",
    "cast": "node_modules/@foundry-rs/cast-linux-amd64/bin/cast",
    "solc": "tools/solc",
}


def project_root() -> Path:
    """The repository root: the folder holding `package.json` and `contracts/`.

    `TRUST_PROJECT_ROOT` overrides it; otherwise it is found from this file's location (an
    editable install, as the setup script makes).
    """
    override = os.environ.get("TRUST_PROJECT_ROOT")
    if override:
        return Path(override).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "contracts" / "foundry.toml").is_file() and (parent / "package.json").is_file():
            return parent
    raise ToolchainError(
        f"cannot find the TRUST project root above {here}; set TRUST_PROJECT_ROOT to the folder "
        "that holds package.json and contracts/"
    )


@dataclass(frozen=True, slots=True)
class Toolchain:
    """Resolved paths of the pinned tools."""

    root: Path

    @classmethod
    def discover(cls, root: Path | None = None) -> Toolchain:
        return cls(root=root or project_root())

    def tool(self, name: str) -> Path:
        """The path of `name` (anvil, forge, cast or solc), or a ToolchainError saying how to get it."""
        if name not in _NPM_BINARIES:
            raise ToolchainError(f"unknown tool {name!r}; known: {', '.join(sorted(_NPM_BINARIES))}")
        env_var = f"TRUST_{name.upper()}"
        override = os.environ.get(env_var)
        if override:
            path = Path(override)
            if not path.is_file() and shutil.which(override):
                path = Path(shutil.which(override) or override)
            if not path.is_file():
                raise ToolchainError(f"{env_var}={override} does not name an executable file")
            return path
        path = self.root / _NPM_BINARIES[name]
        if not path.is_file():
            raise ToolchainError(f"{name} not found at {path}; run `npm ci` in {self.root} (or set {env_var})")
        return path

    @property
    def anvil(self) -> Path:
        return self.tool("anvil")

    @property
    def forge(self) -> Path:
        return self.tool("forge")

    @property
    def cast(self) -> Path:
        return self.tool("cast")

    @property
    def solc(self) -> Path:
        return self.tool("solc")

    @property
    def contracts_dir(self) -> Path:
        return self.root / "contracts"
