"""The compiled protocol the package ships (`abi/contracts.json`): used outside a checkout, used in a
checkout only while it matches the sources, refused with the field named when malformed, and written
and checked by `python -m trust.adapters.chain.artifacts`. The wheel itself: tests/test_wheel.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from trust.adapters.chain.artifacts import CompiledProtocol, main, read_compiled, write_compiled
from trust.adapters.chain.compiler import compile_checkout, compile_protocol
from trust.adapters.local.toolchain import Toolchain
from trust.errors import CompileError

pytestmark = pytest.mark.chain


@pytest.fixture(scope="module")
def fresh() -> CompiledProtocol:
    """A compile of this checkout (the build/ cache once the session compiled)."""
    return compile_checkout(Toolchain.discover())


def _tampered(compiled: CompiledProtocol, *, digest: str) -> CompiledProtocol:
    """`compiled` under `digest`, with the proxy's creation bytecode replaced: a file whose content
    shows whether it, rather than a compile, was read."""
    proxy = dataclasses.replace(compiled.artifacts["ERC1967Proxy"], bytecode="0x00")
    return CompiledProtocol(digest, compiled.solc, compiled.artifacts | {"ERC1967Proxy": proxy})


def test_a_checkout_reads_the_shipped_file_while_its_digest_is_the_sources(
    fresh: CompiledProtocol, tmp_path: Path
) -> None:
    path = tmp_path / "contracts.json"
    write_compiled(_tampered(fresh, digest=fresh.digest), path)
    assert compile_protocol(Toolchain.discover(), packaged=path)["ERC1967Proxy"].bytecode == "0x00"


def test_a_checkout_whose_sources_changed_compiles_instead(fresh: CompiledProtocol, tmp_path: Path) -> None:
    path = tmp_path / "contracts.json"
    write_compiled(_tampered(fresh, digest="0123456789abcdef"), path)
    assert compile_protocol(Toolchain.discover(), packaged=path) == fresh.artifacts


def test_outside_a_checkout_the_shipped_file_is_the_protocol(fresh: CompiledProtocol, tmp_path: Path) -> None:
    path = tmp_path / "contracts.json"
    write_compiled(_tampered(fresh, digest="0123456789abcdef"), path)
    installed = Toolchain(root=None)
    assert compile_protocol(installed, packaged=path)["ERC1967Proxy"].bytecode == "0x00"
    # Nothing shipped and nothing to compile: an error that says what to install.
    with pytest.raises(CompileError, match=r"carries no compiled contracts .*missing.* scripts/wheel\.sh"):
        compile_protocol(installed, packaged=tmp_path / "absent.json")


def test_a_malformed_file_is_refused_naming_what_is_wrong(fresh: CompiledProtocol, tmp_path: Path) -> None:
    path = tmp_path / "contracts.json"
    assert read_compiled(path) is None
    path.write_text("{not json")
    with pytest.raises(CompileError, match="is not valid JSON"):
        read_compiled(path)
    good = fresh.to_json()
    for change, words in (
        ({"format_version": 2}, "format_version 2, expected 1"),
        ({"contracts": []}, "no `contracts` object"),
        ({"contracts": {k: v for k, v in good["contracts"].items() if k != "Tally"}}, "lacks Tally"),
        ({"contracts": good["contracts"] | {"Tally": {"abi": []}}}, r"contracts\.Tally is malformed"),
    ):
        path.write_text(json.dumps(good | change))
        with pytest.raises(CompileError, match=words) as caught:
            read_compiled(path)
        assert "--write" in str(caught.value)


def test_write_then_check(fresh: CompiledProtocol, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "abi" / "contracts.json"
    assert main(["--check", "--file", str(path)]) == 1
    assert "does not exist; write it with --write" in capsys.readouterr().err
    assert main(["--write", "--file", str(path)]) == 0
    written = path.read_bytes()
    assert f"written ({fresh.digest}, 14 contracts)" in capsys.readouterr().out
    assert main(["--write", "--file", str(path)]) == 0
    assert "up to date" in capsys.readouterr().out and path.read_bytes() == written
    assert main(["--check", "--file", str(path)]) == 0
    assert "matches contracts/src" in capsys.readouterr().out

    write_compiled(_tampered(fresh, digest="0123456789abcdef"), path)
    assert main(["--check", "--file", str(path)]) == 1
    err = capsys.readouterr().err
    assert "is stale; rewrite it with --write" in err
    assert "digest 0123456789abcdef" in err and "ERC1967Proxy differs" in err and "Tally" not in err
