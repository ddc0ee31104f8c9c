import os
import stat
from pathlib import Path

from trust.adapters.local.private_files import write_private


def test_a_private_file_is_owner_only_and_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "share.json"
    write_private(path, "first")
    assert path.read_text() == "first"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # A leftover temporary file from a crash is neither read nor in the way.
    (tmp_path / "deep" / "share.json.tmp").write_text("half")
    write_private(path, "second")
    assert path.read_text() == "second"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path / "deep")) == ["share.json"]
