"""The compiler's digest follows the solc it runs: the remembered `solc --version` answer is asked again
whenever the binary changes (a pinned wrapper upgraded, TRUST_SOLC pointed elsewhere)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trust.adapters.chain.compiler import _imported_versions, _solc_version
from trust.errors import CompileError


def _fake_solc(path: Path, version: str) -> Path:
    path.write_text(f"#!/bin/sh\necho 'solc, the solidity compiler commandline interface'\necho 'Version: {version}'\n")
    path.chmod(0o755)
    return path


def test_the_solc_version_is_remembered_per_binary(tmp_path: Path) -> None:
    build = tmp_path / "build"
    solc = _fake_solc(tmp_path / "solc", "0.8.30+commit.aaaaaaaa")
    assert _solc_version(solc, tmp_path, build) == "Version: 0.8.30+commit.aaaaaaaa"
    assert len(list(build.glob("solc-version-*.txt"))) == 1
    # Another binary (here: a different size) is asked again, never answered from the first one's entry.
    _fake_solc(solc, "0.8.31+commit.bbbbbbbbbbbb")
    assert _solc_version(solc, tmp_path, build) == "Version: 0.8.31+commit.bbbbbbbbbbbb"
    assert len(list(build.glob("solc-version-*.txt"))) == 2
    # The same binary again: answered from build/ (the script is not run: it would print something else).
    (remembered,) = (p for p in build.glob("solc-version-*.txt") if "0.8.31" in p.read_text())
    remembered.write_text("Version: remembered\n")
    assert _solc_version(solc, tmp_path, build) == "Version: remembered"


def test_the_imported_packages_versions_are_part_of_the_digest(tmp_path: Path) -> None:
    """An OpenZeppelin upgrade that changes only a file the compiled sources import still changes
    what the digest reads: the installed versions of the imported packages."""
    for package, version in (("contracts", "5.0.2"), ("contracts-upgradeable", "5.0.1")):
        folder = tmp_path / "node_modules" / "@openzeppelin" / package
        folder.mkdir(parents=True)
        (folder / "package.json").write_text(json.dumps({"name": f"@openzeppelin/{package}", "version": version}))
    assert _imported_versions(tmp_path) == {
        "@openzeppelin/contracts": "5.0.2",
        "@openzeppelin/contracts-upgradeable": "5.0.1",
    }
    (tmp_path / "node_modules" / "@openzeppelin" / "contracts-upgradeable" / "package.json").unlink()
    with pytest.raises(CompileError, match=r"contracts-upgradeable.*package\.json.*run scripts/setup\.sh"):
        _imported_versions(tmp_path)
