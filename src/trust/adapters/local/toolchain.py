"""Where the pinned toolchain lives: anvil, forge, cast and the solc wrapper.

One place finds every tool: an environment variable names it explicitly (`TRUST_ANVIL`,
`TRUST_FORGE`, `TRUST_CAST`, `TRUST_SOLC`), otherwise it is taken from the project's
`node_modules` (installed by `npm ci` from the root package.json) or `tools/`.

A package installed from a wheel runs outside any checkout: `Toolchain.discover()` then has no
root, the compiled contracts come with the package (`trust.adapters.chain.artifacts`), and only
the `TRUST_<TOOL>` variables name tools. The SDK, the worker and the gateway need none of them.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from trust.errors import ToolchainError

__all__ = ["Toolchain", "find_project_root", "project_root"]

_NPM_BINARIES = {
    "anvil": "node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil",
    "forge": "node_modules/@foundry-rs/forge-linux-amd64/bin/forge",
    "cast": "node_modules/@foundry-rs/cast-linux-amd64/bin/cast",
    "solc": "tools/solc",
}


def find_project_root() -> Path | None:
    """The checkout this package runs from, or None when it was installed (from a wheel).

    `TRUST_PROJECT_ROOT` overrides it. Otherwise it is the folder holding `package.json` and
    `contracts/` whose `src/` holds this file (an editable install, as the setup script makes): a
    wheel installed into a virtual environment that happens to sit inside a checkout is not run
    from that checkout, and must not compile (or trust) its sources.
    """
    override = os.environ.get("TRUST_PROJECT_ROOT")
    if override:
        return Path(override).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (
            (parent / "contracts" / "foundry.toml").is_file()
            and (parent / "package.json").is_file()
            and here.is_relative_to(parent / "src")
        ):
            return parent
    return None


def project_root() -> Path:
    """The repository root: the folder holding `package.json` and `contracts/` (see
    `find_project_root`), or a ToolchainError for an installed package."""
    root = find_project_root()
    if root is None:
        raise ToolchainError(
            f"cannot find the TRUST project root above {Path(__file__).resolve()} (an installed package); set "
            "TRUST_PROJECT_ROOT to the folder that holds package.json and contracts/"
        )
    return root


@dataclass(frozen=True, slots=True)
class Toolchain:
    """Resolved paths of the pinned tools."""

    root: Path | None
    """The checkout the tools and the contract sources come from; None for an installed package."""

    @classmethod
    def discover(cls, root: Path | None = None) -> Toolchain:
        return cls(root=root or find_project_root())

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
        if self.root is None:
            raise ToolchainError(
                f"{name} does not come with an installed trust package: set {env_var} to its path, or run "
                "from a checkout of the project (TRUST_PROJECT_ROOT)"
            )
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
        if self.root is None:
            raise ToolchainError("an installed trust package has no contract sources: run from a checkout")
        return self.root / "contracts"
