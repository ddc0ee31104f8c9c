import subprocess
from pathlib import Path

import pytest

from trust.adapters.local.toolchain import Toolchain, find_project_root
from trust.errors import ToolchainError


def test_tools_are_found_in_the_project() -> None:
    tools = Toolchain.discover()
    for name in ("anvil", "forge", "cast", "solc"):
        assert tools.tool(name).is_file()


def test_solc_wrapper_answers_like_solc() -> None:
    out = subprocess.run([str(Toolchain.discover().solc), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1].startswith("Version: 0.8.30+commit.")


def test_solc_wrapper_refuses_unknown_flags() -> None:
    out = subprocess.run([str(Toolchain.discover().solc), "--bin", "x.sol"], capture_output=True, text=True)
    assert out.returncode == 2
    assert "unsupported argument" in out.stderr


def test_environment_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "anvil"
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setenv("TRUST_ANVIL", str(fake))
    assert Toolchain.discover().anvil == fake
    monkeypatch.setenv("TRUST_ANVIL", str(tmp_path / "missing"))
    with pytest.raises(ToolchainError, match="does not name an executable"):
        _ = Toolchain.discover().anvil


def test_missing_npm_tool_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match="npm ci"):
        Toolchain(root=tmp_path).tool("forge")


def test_the_checkout_is_found_from_the_editable_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TRUST_PROJECT_ROOT", raising=False)
    checkout = Path(__file__).resolve().parents[3]
    assert find_project_root() == checkout == Toolchain.discover().root
    monkeypatch.setenv("TRUST_PROJECT_ROOT", str(tmp_path))
    assert find_project_root() == tmp_path


def test_an_installed_package_has_no_tools_but_those_the_environment_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    installed = Toolchain(root=None)
    monkeypatch.delenv("TRUST_ANVIL", raising=False)
    with pytest.raises(ToolchainError, match="anvil does not come with an installed trust package: set TRUST_ANVIL"):
        _ = installed.anvil
    fake = tmp_path / "anvil"
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setenv("TRUST_ANVIL", str(fake))
    assert installed.anvil == fake
