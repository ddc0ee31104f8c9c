"""`terminate`: a process that ignores SIGTERM is killed, and the call returns only once it is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from trust.adapters.local.processes import alive, terminate

# A process that ignores SIGTERM and says when it does.
_STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(600)"
)

# A keeper that starts a child which ignores SIGTERM and reaps it, as the local model server's keeper
# does: the pid `terminate` gets is not this interpreter's child.
_KEEPER = f"""
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", {_STUBBORN!r}])
print(child.pid, flush=True)
child.wait()
"""


@pytest.fixture
def stubborn(tmp_path: Path) -> Iterator[int]:
    """The pid of a process that ignores SIGTERM, with cwd `tmp_path`, reaped by its keeper."""
    keeper = subprocess.Popen([sys.executable, "-c", _KEEPER], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    assert keeper.stdout is not None
    pid = int(keeper.stdout.readline())
    assert keeper.stdout.readline().strip() == "ready"
    try:
        yield pid
    finally:
        keeper.kill()
        keeper.wait(timeout=10)
        keeper.stdout.close()
        if alive(pid):
            os.kill(pid, 9)


def test_a_process_that_ignores_sigterm_is_gone_when_terminate_returns(stubborn: int) -> None:
    terminate(stubborn, None, 0.3)
    # Straight after a SIGKILL the process still exists for a moment, its cwd and files held: the
    # caller (a command that then removes that folder, a test that looks for it) must not see it.
    with pytest.raises(OSError):
        os.readlink(f"/proc/{stubborn}/cwd")


def test_a_child_of_this_interpreter_is_reaped() -> None:
    with subprocess.Popen([sys.executable, "-c", _STUBBORN], stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        terminate(child.pid, child, 0.3)
    assert child.returncode == -9


def test_a_process_already_gone_is_no_error() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    terminate(child.pid, None, 0.3)
    terminate(child.pid, child, 0.3)
