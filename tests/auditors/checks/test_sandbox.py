"""The tier-1 sandbox against real child processes in real namespaces (bubblewrap): limits, refusals,
escape attempts, clean-up, failing closed, and the unit-test check (pytest in the child).

Escape attempts run twice where it matters: with the audit hook (the default: the attempt is refused
by name) and without it (`audit_hook=False`: the namespaces and the limits alone must stop it)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from trust.auditors.base import AuditRequest, Check, Outcome
from trust.auditors.checks.sandbox import (
    CHECK_NAME,
    MAIN_FILE,
    RunReason,
    SandboxCheck,
    SandboxLayer,
    find_program,
    run_python,
    sandbox_layers,
)
from trust.auditors.checks.sandbox.child.config import MODE_TESTS, ChildConfig, TestFile
from trust.auditors.checks.sandbox.policy import bwrap_arguments, host_facts
from trust.core.graphs.cig import AgentTurn, Role
from trust.core.graphs.hdag import HdagNode, Level
from trust.core.graphs.refinement import ErrorType
from trust.errors import ConfigError, SandboxUnavailable
from trust.settings import SandboxSettings

MIB = 1024 * 1024
FENCE = "```"


@pytest.fixture
def limits() -> SandboxSettings:
    """Small limits, so that the runs that hit them stay short."""
    return SandboxSettings(
        timeout_seconds=10, cpu_seconds=5, memory_bytes=256 * MIB, output_bytes=16 * 1024, file_bytes=1 * MIB
    )


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A real TCP listener on loopback: a connection from the sandbox would wait in its backlog."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield sock


def _node(text: str, node_id: str = "n") -> HdagNode:
    return HdagNode(node_id, Level.OPERATION, text)


def _block(body: str, info: str = "python") -> str:
    return f"{FENCE}{info}\n{body.strip()}\n{FENCE}\n"


ADD = _block("def add(a, b):\n    return a + b")
WRONG_ADD = _block("def add(a, b):\n    return a - b")
ADD_TESTS = _block(
    "assert add(2, 3) == 5\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n\n"
    "def test_negative():\n    assert add(-1, 1) == 0",
    "python tests",
)


# --------------------------------------------------------------------------------- run_python


async def test_a_trivial_program_runs_with_its_files_in_a_temporary_directory_that_is_removed(
    limits: SandboxSettings,
) -> None:
    code = "import os, pathlib\nprint(pathlib.Path('data/in.txt').read_text())\nprint(os.getcwd())"
    result = await run_python(code, limits, files={"data/in.txt": "hello"})
    assert result.reason is RunReason.OK and result.ok
    assert result.exit_code == 0 and result.killed_by_signal is None and not result.timed_out
    text, cwd = result.stdout.splitlines()
    assert text == "hello"
    assert Path(cwd).name.startswith("trust-sandbox-")
    assert not Path(cwd).exists()
    assert {SandboxLayer.RESOURCE_LIMITS, SandboxLayer.NAMESPACES, SandboxLayer.AUDIT_HOOK} <= set(result.layers)
    assert result.layers == await sandbox_layers(limits)


async def test_the_environment_is_empty_but_for_home_and_tmpdir(
    limits: SandboxSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRUST_SECRET_KEY", "do-not-leak")
    code = "import json, os, tempfile\nprint(json.dumps([dict(os.environ), os.getcwd(), tempfile.gettempdir()]))"
    result = await run_python(code, limits)
    environment, cwd, temporary = json.loads(result.stdout)
    assert sorted(environment) == ["HOME", "LANG", "TMPDIR"]
    assert environment["HOME"] == environment["TMPDIR"] == cwd == temporary
    assert "do-not-leak" not in result.stdout


async def test_code_that_raises_is_an_error_with_its_traceback(limits: SandboxSettings) -> None:
    result = await run_python("def f():\n    raise ValueError('broken on purpose')\nf()", limits)
    assert result.reason is RunReason.ERROR
    assert result.exit_code == 1 and result.uncaught == "ValueError"
    assert "ValueError: broken on purpose" in result.stderr


async def test_a_nonzero_exit_status_is_an_error(limits: SandboxSettings) -> None:
    result = await run_python("import sys\nsys.exit(3)", limits)
    assert (result.reason, result.exit_code, result.uncaught) == (RunReason.ERROR, 3, None)


async def test_an_exit_status_above_128_is_not_mistaken_for_a_signal(limits: SandboxSettings) -> None:
    # bubblewrap reports a child killed by signal N as status 128 + N; this one exited on its own.
    result = await run_python("import sys\nsys.exit(137)", limits)
    assert (result.reason, result.exit_code, result.killed_by_signal) == (RunReason.ERROR, 137, None)


async def test_the_program_reports_records_to_the_parent(limits: SandboxSettings) -> None:
    result = await run_python("__sandbox_report__({'answer': 42})\nprint('done')", limits)
    assert result.records == ({"answer": 42},)


NETWORK_PROBE = """
import json, socket
port = {port}
outcomes = {{}}
attempts = {{
    "raw socket to the listener": lambda: socket.socket().connect(("127.0.0.1", port)),
    "create_connection to the listener": lambda: socket.create_connection(("127.0.0.1", port), timeout=2),
    "a public address": lambda: socket.create_connection(("1.1.1.1", 53), timeout=2),
    "a name lookup": lambda: socket.getaddrinfo("example.com", 80),
}}
for name, attempt in attempts.items():
    try:
        attempt()
        outcomes[name] = "connected"
    except OSError as exc:
        outcomes[name] = f"{{type(exc).__name__}}: {{exc}}"
print(json.dumps(outcomes))
"""


HOOK = pytest.mark.parametrize("audit_hook", [True, False], ids=["with-hook", "namespaces-only"])


@HOOK
async def test_the_sandbox_refuses_network_access(
    limits: SandboxSettings, listener: socket.socket, audit_hook: bool
) -> None:
    """A connection to a server on the worker's loopback, a public address and a name lookup all
    fail: refused by name with the hook, unreachable in the empty network namespace without it."""
    port = listener.getsockname()[1]
    result = await run_python(NETWORK_PROBE.format(port=port), limits.model_copy(update={"audit_hook": audit_hook}))
    outcomes = json.loads(result.stdout)
    assert len(outcomes) == 4
    for name, outcome in outcomes.items():
        assert outcome != "connected", name
        if audit_hook:
            assert "the sandbox refuses this (network" in outcome, name
        else:  # the namespace's own loopback has no listener; nothing else is reachable
            assert outcome.startswith(
                (
                    "ConnectionRefusedError: [Errno 111]",
                    "OSError: [Errno 101]",
                    "gaierror: [Errno -3]",
                    "gaierror: [Errno -2]",
                )
            ), (name, outcome)
    with pytest.raises(BlockingIOError):  # nothing reached the listener
        listener.accept()
    # The program swallowed every failure and exited cleanly; with the hook, the parent still knows.
    assert result.reason is RunReason.OK
    assert {r.kind for r in result.refusals} == ({"network"} if audit_hook else set())
    assert SandboxLayer.NAMESPACES in result.layers
    assert (SandboxLayer.AUDIT_HOOK in result.layers) is audit_hook


async def test_an_unhandled_network_refusal_ends_the_run_as_network_refused(limits: SandboxSettings) -> None:
    result = await run_python("import urllib.request\nurllib.request.urlopen('http://example.com')", limits)
    assert result.reason is RunReason.NETWORK_REFUSED
    assert result.refusals[0].kind == "network"


async def test_the_network_namespace_has_its_own_loopback_and_nothing_else(limits: SandboxSettings) -> None:
    code = (
        "import socket\n"
        "print([name for _, name in socket.if_nameindex()])\n"
        "server = socket.create_server(('127.0.0.1', 0))\n"
        "print(server.getsockname()[1])\n"
    )
    result = await run_python(code, limits.model_copy(update={"audit_hook": False}))
    interfaces, port = result.stdout.splitlines()
    assert interfaces == "['lo']"
    with pytest.raises(OSError):  # a server inside listens on the sandbox's loopback, not the worker's
        socket.create_connection(("127.0.0.1", int(port)), timeout=1).close()


async def test_an_endless_loop_is_stopped_by_the_cpu_limit(limits: SandboxSettings) -> None:
    result = await run_python("while True:\n    pass", limits.model_copy(update={"cpu_seconds": 1}))
    assert result.reason is RunReason.TIMEOUT and result.timed_out
    assert result.killed_by_signal == signal.SIGXCPU
    assert result.exit_code is None


async def test_a_program_that_sleeps_is_stopped_by_the_wall_clock(limits: SandboxSettings) -> None:
    result = await run_python("import time\ntime.sleep(60)", limits.model_copy(update={"timeout_seconds": 1}))
    assert result.reason is RunReason.TIMEOUT and result.timed_out
    assert result.killed_by_signal == signal.SIGKILL


async def test_an_endless_print_loop_is_cut_at_the_output_limit_and_killed(limits: SandboxSettings) -> None:
    small = limits.model_copy(update={"output_bytes": 2048})
    result = await run_python("while True:\n    print('x' * 100)", small)
    assert result.reason is RunReason.OUTPUT_LIMIT
    assert result.stdout_cut and not result.stderr_cut
    assert len(result.stdout.encode()) == 2048
    assert result.killed_by_signal == signal.SIGKILL


async def test_writing_a_huge_file_hits_the_file_size_limit(limits: SandboxSettings) -> None:
    code = "with open('huge.bin', 'wb') as f:\n    for _ in range(64):\n        f.write(bytes(1024 * 1024))"
    result = await run_python(code, limits)
    assert result.reason is RunReason.FILE_LIMIT
    assert "File too large" in result.stderr


@pytest.mark.parametrize(
    ("snippet", "event"),
    [
        ("import os\nos.fork()", "os.fork"),
        ("import subprocess\nsubprocess.run(['touch', MARKER])", "subprocess.Popen"),
        ("import os\nos.system('touch ' + MARKER)", "os.system"),
        ("import os\nos.posix_spawn('/usr/bin/touch', ['touch', MARKER], {})", "os.posix_spawn"),
        ("import os\nos.execv('/usr/bin/touch', ['touch', MARKER])", "os.exec"),
        (
            # multiprocessing's spawn path calls _posixsubprocess.fork_exec, which raises no audit event
            "import multiprocessing.util as u\nu.spawnv_passfds(b'/usr/bin/touch', [b'touch', MARKER.encode()], [])",
            "_posixsubprocess.fork_exec",
        ),
    ],
    ids=["fork", "subprocess", "system", "posix_spawn", "exec", "posixsubprocess"],
)
async def test_processes_are_refused(limits: SandboxSettings, tmp_path: Path, snippet: str, event: str) -> None:
    marker = tmp_path / "marker"
    result = await run_python(f"MARKER = {str(marker)!r}\n{snippet}", limits)
    assert result.reason is RunReason.PROCESS_REFUSED
    assert [(r.kind, r.event) for r in result.refusals] == [("process", event)]
    assert not marker.exists()


async def test_a_fresh_copy_of_the_process_module_is_refused(limits: SandboxSettings) -> None:
    code = "import importlib.util as u\nu.module_from_spec(u.find_spec('_posixsubprocess')).fork_exec"
    result = await run_python(code, limits)
    assert result.reason is RunReason.OPERATION_REFUSED
    assert result.uncaught == "SandboxImportRefused"


async def test_signals_to_other_processes_are_refused(limits: SandboxSettings) -> None:
    with subprocess.Popen(["sleep", "30"]) as victim:
        try:
            result = await run_python(f"import os, signal\nos.kill({victim.pid}, signal.SIGTERM)", limits)
            assert result.reason is RunReason.PROCESS_REFUSED
            assert victim.poll() is None
        finally:
            victim.kill()


async def test_ctypes_is_refused(limits: SandboxSettings) -> None:
    result = await run_python("import ctypes", limits)
    assert result.reason is RunReason.OPERATION_REFUSED
    assert result.refusals[0].kind == "native"
    assert "SandboxImportRefused" in result.stderr


async def test_the_resource_limits_cannot_be_raised(limits: SandboxSettings) -> None:
    code = "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))"
    result = await run_python(code, limits)
    assert result.reason is RunReason.OPERATION_REFUSED
    assert result.refusals[0].kind == "limits"


@pytest.mark.parametrize(
    "snippet",
    [
        "open(TARGET, 'w').write('x')",
        "import os\nos.close(os.open(TARGET, os.O_WRONLY | os.O_CREAT))",
        "import pathlib\npathlib.Path(TARGET).write_text('x')",
        "import os\nos.symlink(TARGET, 'link')\nopen('link', 'w').write('x')",
        "open('../' * 20 + TARGET.lstrip('/'), 'w').write('x')",
    ],
    ids=["open", "os.open", "pathlib", "symlink", "dot-dot"],
)
async def test_writes_outside_the_sandbox_directory_are_refused(
    limits: SandboxSettings, tmp_path: Path, snippet: str
) -> None:
    target = tmp_path / "escaped.txt"
    result = await run_python(f"TARGET = {str(target)!r}\n{snippet}", limits)
    assert result.reason is RunReason.OPERATION_REFUSED
    assert result.refusals[0].kind == "filesystem"
    assert not target.exists()


async def test_files_inside_the_sandbox_directory_can_be_written_and_removed(limits: SandboxSettings) -> None:
    code = (
        "import pathlib, shutil, tempfile\n"
        "pathlib.Path('a/b').mkdir(parents=True)\n"
        "pathlib.Path('a/b/c.txt').write_text('x')\n"
        "with tempfile.NamedTemporaryFile() as f:\n    f.write(b'y')\n"
        "shutil.rmtree('a')\n"
        "open('/dev/null', 'w').write('z')\n"
        "print('ok')"
    )
    result = await run_python(code, limits)
    assert (result.reason, result.stdout.strip(), result.refusals) == (RunReason.OK, "ok", ())


async def test_asyncio_still_works_inside_the_sandbox(limits: SandboxSettings) -> None:
    code = "import asyncio\nasync def f():\n    await asyncio.sleep(0)\n    return 7\nprint(asyncio.run(f()))"
    result = await run_python(code, limits)
    assert (result.reason, result.stdout.strip()) == (RunReason.OK, "7")


@pytest.mark.parametrize("name", ["../escape.py", "/etc/x.py", MAIN_FILE, ""])
async def test_file_names_must_stay_inside_the_sandbox(limits: SandboxSettings, name: str) -> None:
    with pytest.raises(ValueError, match="sandbox file"):
        await run_python("pass", limits, files={name: "x"})


async def test_a_missing_interpreter_is_a_config_error(limits: SandboxSettings) -> None:
    with pytest.raises(ConfigError, match="/nonexistent/python3"):
        await run_python("pass", limits.model_copy(update={"python": "/nonexistent/python3"}))


# ------------------------------------------------------------------------------- escape attempts

PROJECT = Path(__file__).resolve().parents[2]

ATTEMPTS = """
import json, os
outcomes = {{}}
for name, attempt in ATTEMPTS.items():
    try:
        outcomes[name] = ["succeeded", repr(attempt())]
    except Exception as exc:
        outcomes[name] = [type(exc).__name__, str(exc)]
print(json.dumps(outcomes))
"""


def _attempts(setup: str, attempts: dict[str, str]) -> str:
    """A program that makes each attempt (a Python expression), catches what it raises, and prints
    {name: [outcome, detail]} as JSON: the attempt "succeeded" or the name of its exception."""
    table = "ATTEMPTS = {" + ", ".join(f"{name!r}: lambda: {expression}" for name, expression in attempts.items())
    return f"{setup}\n{table}}}\n{ATTEMPTS.format()}"


def _failed(result_stdout: str) -> dict[str, list[str]]:
    outcomes: dict[str, list[str]] = json.loads(result_stdout)
    assert outcomes, "the program made no attempt"
    for name, (outcome, detail) in outcomes.items():
        assert outcome != "succeeded", f"{name} succeeded: {detail}"
    return outcomes


WRITES = {
    "open": "open(TARGET, 'w').write('escaped')",
    # sqlite3 and mkfifo create files from C without an audit event the hook refuses: only the
    # read-only mounts stop them (before bubblewrap, both wrote outside the sandbox directory).
    "sqlite3": "__import__('sqlite3').connect(TARGET).execute('create table escaped (x)')",
    "mkfifo": "os.mkfifo(TARGET)",
}


@pytest.mark.parametrize("where", ["project", "home", "tmp"])
@HOOK
async def test_writes_outside_the_run_directory_fail(
    limits: SandboxSettings, tmp_path: Path, where: str, audit_hook: bool
) -> None:
    """Into the project's checkout, the worker's home, or /tmp outside the run's directory: every
    way fails, by the hook's refusal or by the read-only (or absent) filesystem."""
    directory = {"project": PROJECT, "home": Path.home(), "tmp": tmp_path}[where]
    targets = {name: directory / f"trust-sandbox-escape-{os.getpid()}-{name}" for name in WRITES}
    setup = "import os\nTARGETS = " + repr({name: str(path) for name, path in targets.items()})
    attempts = {name: expression.replace("TARGET", f"TARGETS[{name!r}]") for name, expression in WRITES.items()}
    try:
        result = await run_python(_attempts(setup, attempts), limits.model_copy(update={"audit_hook": audit_hook}))
        outcomes = _failed(result.stdout)
        created = [name for name, path in targets.items() if path.exists()]
    finally:
        for path in targets.values():
            path.unlink(missing_ok=True)
    assert created == []
    for name, (error, detail) in outcomes.items():
        if audit_hook and name == "open":
            assert error == "SandboxRefused", detail
        elif name == "sqlite3":
            assert (error, detail) == ("OperationalError", "unable to open database file")
        else:  # not there (ENOENT) or read-only (EROFS)
            assert "[Errno 2]" in detail or "[Errno 30]" in detail, (name, error, detail)


@HOOK
async def test_the_worker_s_keystore_cannot_be_read(
    limits: SandboxSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, audit_hook: bool
) -> None:
    """A keystore in the worker's home (a temporary one here) is not in the sandbox at all: neither
    by its path, nor through the worker's /proc entry, nor by listing its directory."""
    home = tmp_path / "home"
    keystore = home / ".trust" / "wallets" / "worker.json"
    keystore.parent.mkdir(parents=True)
    keystore.write_text('{"crypto": "secret-key-material"}')
    keystore.chmod(0o600)
    monkeypatch.setenv("HOME", str(home))
    setup = f"import os\nKEY = {str(keystore)!r}\nWORKER = {os.getpid()}"
    attempts = {
        "read it": "open(KEY).read()",
        "read it through the worker's root": "open(f'/proc/{WORKER}/root{KEY}').read()",
        "list its directory": "os.listdir(os.path.dirname(KEY))",
        "list the worker's home": f"os.listdir({str(home)!r})",
    }
    result = await run_python(_attempts(setup, attempts), limits.model_copy(update={"audit_hook": audit_hook}))
    outcomes = _failed(result.stdout)
    assert "secret-key-material" not in result.stdout + result.stderr
    assert {error for error, _ in outcomes.values()} == {"FileNotFoundError"}


@HOOK
async def test_the_worker_s_processes_are_out_of_sight_and_reach(
    limits: SandboxSettings, monkeypatch: pytest.MonkeyPatch, audit_hook: bool
) -> None:
    """In its own PID namespace the child sees only its own processes: not the worker (nor the
    secrets in the worker's environment, through /proc), and it cannot signal another process."""
    monkeypatch.setenv("TRUST_TEST_WORKER_SECRET", "do-not-leak")
    with subprocess.Popen(["sleep", "30"]) as victim:
        try:
            setup = (
                f"import json, os, signal\nWORKER, VICTIM = {os.getpid()}, {victim.pid}\n"
                "print(json.dumps(sorted(int(p) for p in os.listdir('/proc') if p.isdigit())))"
            )
            attempts = {
                "read the worker's environment": "open(f'/proc/{WORKER}/environ', 'rb').read()",
                "kill another process": "os.kill(VICTIM, signal.SIGKILL)",
                "signal the worker": "os.kill(WORKER, 0)",
            }
            result = await run_python(_attempts(setup, attempts), limits.model_copy(update={"audit_hook": audit_hook}))
            assert victim.poll() is None, "the other process was killed"
        finally:
            victim.kill()
    visible, attempts_line = result.stdout.splitlines()
    outcomes = _failed(attempts_line)
    assert "do-not-leak" not in result.stdout + result.stderr
    assert len(json.loads(visible)) <= 2  # bubblewrap's init (pid 1) and the child itself
    assert outcomes["read the worker's environment"][0] == "FileNotFoundError"
    kill_error = "SandboxRefused" if audit_hook else "ProcessLookupError"
    assert outcomes["kill another process"][0] == outcomes["signal the worker"][0] == kill_error


async def test_a_fork_bomb_is_contained_and_leaves_nothing_behind(limits: SandboxSettings) -> None:
    """Without the hook (which refuses the first fork), a fork bomb stops at RLIMIT_NPROC, counted in
    the child's own user namespace, and the wall clock then takes the whole PID namespace down."""
    code = (
        "import os, time\n"
        "print(os.getcwd(), flush=True)\n"
        "children = 0\n"
        "while True:\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            while True:  # every child forks on, forever\n"
        "                try:\n"
        "                    os.fork()\n"
        "                except OSError:\n"
        "                    pass\n"
        "        children += 1\n"
        "    except OSError as exc:\n"
        "        print(children, exc.errno, flush=True)\n"
        "        break\n"
        "time.sleep(60)\n"
    )
    # A root worker's sandbox holds RLIMIT_NPROC only as `nobody` (Linux exempts the host's root),
    # which needs an interpreter open to nobody: the system's, not one under /root.
    python = shutil.which("python3", path="/usr/bin") if os.geteuid() == 0 else None
    bomb = limits.model_copy(update={"python": python, "audit_hook": False, "processes": 16, "timeout_seconds": 1.5})
    result = await run_python(code, bomb)
    assert result.reason is RunReason.TIMEOUT and result.killed_by_signal == signal.SIGKILL
    directory, *stopped = result.stdout.splitlines()
    assert _processes_of(directory) == []  # the PID namespace took every process with it
    if os.geteuid() != 0 or SandboxLayer.UNPRIVILEGED_USER in result.layers:
        children, errno = map(int, stopped[0].split())
        assert errno == 11 and children < 16  # EAGAIN: RLIMIT_NPROC


def _processes_of(directory: str) -> list[str]:
    """The processes left on this host whose environment names `directory` as HOME."""
    found = []
    marker = f"HOME={directory}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.append(pid)
    return found


@HOOK
async def test_a_memory_bomb_hits_the_memory_limit_with_or_without_the_hook(
    limits: SandboxSettings, audit_hook: bool
) -> None:
    code = "hoard = []\nwhile True:\n    hoard.append(bytearray(8 * 1024 * 1024))"
    small = limits.model_copy(update={"memory_bytes": 128 * MIB, "audit_hook": audit_hook})
    result = await run_python(code, small)
    assert (result.reason, result.uncaught) == (RunReason.MEMORY, "MemoryError")


# ------------------------------------------------------------------------------- failing closed


async def test_without_bubblewrap_nothing_runs(limits: SandboxSettings, tmp_path: Path) -> None:
    missing = limits.model_copy(update={"bwrap": str(tmp_path / "no-such-bwrap")})
    marker = tmp_path / "ran"
    with pytest.raises(SandboxUnavailable, match=r"^sandbox unavailable: bubblewrap not found at '.*no-such-bwrap'"):
        await run_python(f"open({str(marker)!r}, 'w').write('x')", missing)
    assert not marker.exists()
    with pytest.raises(SandboxUnavailable):
        await sandbox_layers(missing)
    outcome, detail, _, _ = await _check(missing, AuditRequest(_node(ADD + ADD_TESTS)))
    assert outcome is Outcome.NOT_APPLICABLE
    assert detail.startswith("sandbox unavailable: bubblewrap not found at") and detail.endswith("; not decided")


async def test_a_bubblewrap_that_cannot_create_namespaces_fails_closed(limits: SandboxSettings) -> None:
    refusing = limits.model_copy(update={"bwrap": "/bin/false"})  # starts, and exits 1 at once
    with pytest.raises(SandboxUnavailable, match="^sandbox unavailable: bubblewrap .* cannot create the namespaces"):
        await run_python("print('ran')", refusing)


async def test_the_development_mode_runs_without_namespaces_only_when_allowed(
    limits: SandboxSettings, tmp_path: Path
) -> None:
    unconfined = limits.model_copy(update={"bwrap": str(tmp_path / "no-such-bwrap"), "allow_unconfined": True})
    result = await run_python("import os\nprint(sorted(os.environ))", unconfined)
    assert (result.reason, result.stdout.strip()) == (RunReason.OK, "['HOME', 'LANG', 'TMPDIR']")
    assert result.layers == (SandboxLayer.RESOURCE_LIMITS, SandboxLayer.AUDIT_HOOK)
    outcome, detail, _, _ = await _check(unconfined, AuditRequest(_node(ADD + ADD_TESTS)))
    assert (outcome, detail) == (Outcome.PASS, "3 tests passed")


# ---------------------------------------------------------------------------------- SandboxCheck


async def _check(limits: SandboxSettings, request: AuditRequest) -> tuple[Outcome, str, str | None, str | None]:
    result = await SandboxCheck(limits).check(request)
    assert result.check == CHECK_NAME
    if result.outcome is Outcome.FAIL:
        assert result.error_type is ErrorType.LOGICAL
    return result.outcome, result.detail, result.fault, result.expected


def test_the_sandbox_check_is_a_check(limits: SandboxSettings) -> None:
    assert isinstance(SandboxCheck(limits), Check)
    assert SandboxCheck(limits).name == CHECK_NAME


async def test_passing_unit_tests_pass(limits: SandboxSettings) -> None:
    outcome, detail, _, _ = await _check(limits, AuditRequest(_node("The sum:\n" + ADD + ADD_TESTS)))
    assert (outcome, detail) == (Outcome.PASS, "3 tests passed")


async def test_failing_unit_tests_fail_with_the_values_compared(limits: SandboxSettings) -> None:
    outcome, detail, fault, expected = await _check(limits, AuditRequest(_node(WRONG_ADD + ADD_TESTS)))
    assert (outcome, fault) == (Outcome.FAIL, "failing unit test")
    assert detail.startswith("2 of 3 tests failed: assertion at line 1 [this node]: AssertionError")
    assert "assert add(2, 3) == 5: left is -1, right is 5" in detail
    assert "test_negative [this node]" in detail and "test_zero" not in detail
    assert expected == "add(2, 3) == 5"


async def test_tests_may_come_from_a_parent_task_node(limits: SandboxSettings) -> None:
    task = _node("Write add(a, b). It must pass:\n" + ADD_TESTS, "task")
    outcome, detail, _, _ = await _check(limits, AuditRequest(_node(ADD), (task,)))
    assert (outcome, detail) == (Outcome.PASS, "3 tests passed")
    outcome, detail, _, _ = await _check(limits, AuditRequest(_node(WRONG_ADD), (task,)))
    assert outcome is Outcome.FAIL and "[parent 'task']" in detail


async def test_a_cig_turn_is_checked_from_its_output_with_tests_from_its_input(limits: SandboxSettings) -> None:
    turn = AgentTurn("t1", 1, "coder", Role.CODER, WRONG_ADD, input="Implement add.\n" + ADD_TESTS)
    outcome, detail, fault, _ = await _check(limits, AuditRequest(turn))
    assert (outcome, fault) == (Outcome.FAIL, "failing unit test")
    assert "[the turn's input]" in detail


async def test_code_that_raises_when_loaded_does_not_run(limits: SandboxSettings) -> None:
    code = _block("import math\nLIMIT = math.sqrt(-1)\ndef add(a, b):\n    return a + b")
    outcome, detail, fault, _ = await _check(limits, AuditRequest(_node(code + ADD_TESTS)))
    assert (outcome, fault) == (Outcome.FAIL, "code does not run")
    assert detail == "ValueError: math domain error (line 2 of the code: LIMIT = math.sqrt(-1))"


async def test_code_that_does_not_parse_does_not_run(limits: SandboxSettings) -> None:
    code = _block("def add(a, b)\n    return a + b")
    outcome, detail, fault, _ = await _check(limits, AuditRequest(_node(code + ADD_TESTS)))
    assert (outcome, fault) == (Outcome.FAIL, "code does not run")
    assert detail == "the code does not parse: SyntaxError: expected ':' at line 1 of the code"


async def test_code_without_tests_is_not_decided(limits: SandboxSettings) -> None:
    outcome, detail, _, _ = await _check(limits, AuditRequest(_node(ADD)))
    assert (outcome, detail) == (Outcome.NOT_APPLICABLE, "code found, but no unit tests to run; not decided")


async def test_a_node_without_code_is_not_applicable(limits: SandboxSettings) -> None:
    request = AuditRequest(_node("The product of 3 and 4 is 12."), (_node(ADD_TESTS, "task"),))
    outcome, detail, _, _ = await _check(limits, request)
    assert (outcome, detail) == (Outcome.NOT_APPLICABLE, "no Python code block in this node; nothing to run")


async def test_a_test_that_loops_forever_fails_with_a_timeout_naming_it(limits: SandboxSettings) -> None:
    code = _block("def add(a, b):\n    while a:\n        pass\n    return b")
    outcome, detail, fault, _ = await _check(
        limits.model_copy(update={"cpu_seconds": 1}), AuditRequest(_node(code + ADD_TESTS))
    )
    assert (outcome, fault) == (Outcome.FAIL, "timeout")
    assert detail == ("the CPU limit of 1 s was reached in assertion at line 1 [this node]; 0 tests of 3 passed before")


async def test_a_test_that_exhausts_memory_fails_on_the_memory_limit(limits: SandboxSettings) -> None:
    code = _block("def add(a, b):\n    hoard = [bytearray(8 * 1024 * 1024) for _ in range(1000)]\n    return a + b")
    outcome, detail, fault, _ = await _check(
        limits.model_copy(update={"memory_bytes": 128 * MIB}), AuditRequest(_node(code + ADD_TESTS))
    )
    assert (outcome, fault) == (Outcome.FAIL, "memory limit")
    assert "MemoryError" in detail


async def test_a_test_that_prints_without_end_fails_on_the_output_limit(limits: SandboxSettings) -> None:
    code = _block("def add(a, b):\n    while True:\n        print(a, b)")
    outcome, detail, fault, _ = await _check(limits, AuditRequest(_node(code + ADD_TESTS)))
    assert (outcome, fault) == (Outcome.FAIL, "output limit")
    assert "more than 16384 bytes" in detail and "assertion at line 1" in detail


async def test_code_that_exits_during_the_tests_does_not_run(limits: SandboxSettings) -> None:
    code = _block("import os\ndef add(a, b):\n    os._exit(0)")
    outcome, detail, fault, _ = await _check(limits, AuditRequest(_node(code + ADD_TESTS)))
    assert (outcome, fault) == (Outcome.FAIL, "code does not run")
    assert detail.startswith("the process ended with exit status 0 in assertion at line 1 [this node]")


async def test_code_that_needs_the_network_is_not_decided(limits: SandboxSettings) -> None:
    code = _block(
        "import urllib.request\ndef add(a, b):\n    return int(urllib.request.urlopen('http://x.test').read())"
    )
    outcome, detail, _, _ = await _check(limits, AuditRequest(_node(code + ADD_TESTS)))
    assert outcome is Outcome.NOT_APPLICABLE
    assert detail.startswith("0 tests passed, 3 could not run here: the code needs what the sandbox refuses (network")


async def test_unittest_test_cases_run_without_pytest(limits: SandboxSettings) -> None:
    tests = _block(
        "import unittest\nfrom solution import add\n\n"
        "class TestAdd(unittest.TestCase):\n"
        "    def test_small(self):\n        self.assertEqual(add(2, 3), 5)\n"
        "    def test_skipped(self):\n        self.skipTest('not today')\n",
        "python tests",
    )
    outcome, detail, fault, _ = await _check(limits, AuditRequest(_node(WRONG_ADD + tests)))
    assert (outcome, fault) == (Outcome.FAIL, "failing unit test")
    assert detail == (
        "1 of 2 tests failed: TestAdd.test_small [this node]: AssertionError: -1 != 5 "
        "(line 6 of the tests: self.assertEqual(add(2, 3), 5))"
    )


async def test_tests_may_import_the_code_under_the_name_they_expect(limits: SandboxSettings) -> None:
    tests = _block("from main import add\n\ndef test_add():\n    assert add(2, 2) == 4")
    outcome, detail, _, _ = await _check(limits, AuditRequest(_node(ADD + tests)))
    assert (outcome, detail) == (Outcome.PASS, "1 test passed")


async def test_pytest_fixtures_work_and_a_missing_fixture_is_not_decided(limits: SandboxSettings) -> None:
    tests = _block(
        "# tests\nimport pytest\n\n@pytest.fixture\ndef two():\n    return 2\n\n"
        "def test_add(tmp_path, two, capsys):\n    print(add(two, two))\n"
        "    assert capsys.readouterr().out == '4\\n'\n    (tmp_path / 'x').write_text('y')\n"
    )
    outcome, detail, _, _ = await _check(limits, AuditRequest(_node(ADD + tests)))
    assert (outcome, detail) == (Outcome.PASS, "1 test passed")
    missing = _block("# tests\ndef test_add(database):\n    assert add(2, 2) == 4")
    outcome, detail, _, _ = await _check(limits, AuditRequest(_node(ADD + missing)))
    assert outcome is Outcome.NOT_APPLICABLE
    assert "test_add: needs the fixture 'database'" in detail and detail.endswith("not decided")


async def test_async_tests_run_under_asyncio(limits: SandboxSettings) -> None:
    tests = _block("async def test_add():\n    assert add(1, 1) == 2", "python tests")
    outcome, detail, _, _ = await _check(limits, AuditRequest(_node(ADD + tests)))
    assert (outcome, detail) == (Outcome.PASS, "1 test passed")


# ------------------------------------------------------------------------------- the convention


def test_code_blocks_and_test_blocks_are_told_apart() -> None:
    text = "\n".join(
        [
            "Some prose, then a shell block that is not Python:",
            _block("pip install nothing", "bash"),
            _block(">>> add(1, 2)\n3"),  # a REPL transcript: neither
            _block("def add(a, b):\n    return a + b"),
            "~~~py\nHELPER = 1\n~~~",
            _block("# Tests\ncheck = add(1, 2)\nassert check == 3"),  # by its header
            _block("from solution import add\n\ndef test_one():\n    assert add(0, 1) == 1"),  # by its content
            _block("assert add(1, 1) == 2", "python3 title=test_add.py"),  # by its info string
            _block("x = 1", ""),  # unlabelled: not Python
        ]
    )
    program = find_program(AuditRequest(_node(text)))
    assert program.code == "def add(a, b):\n    return a + b\n\nHELPER = 1"
    assert program.code_blocks == 2
    assert [t.label for t in program.tests] == ["this node"]
    assert program.tests[0].source.count("add(") == 3


def test_only_a_parent_s_test_blocks_count_and_a_turn_s_input_counts_too() -> None:
    task = _node("Signature:\n" + _block("def add(a, b): ...") + ADD_TESTS, "task")
    turn = AgentTurn("t1", 1, "coder", Role.CODER, ADD, input=ADD_TESTS)
    program = find_program(AuditRequest(turn, (task,)))
    assert program.code == "def add(a, b):\n    return a + b"
    assert [t.label for t in program.tests] == ["parent 'task'", "the turn's input"]
    assert "def add(a, b): ..." not in program.tests[0].source


async def test_the_code_s_own_test_functions_count_but_its_helpers_and_asserts_do_not(
    limits: SandboxSettings,
) -> None:
    code = _block(
        "def is_even(n):\n    return n % 2 == 0\n\n"
        "def test_prime(n):  # a predicate that happens to start with test\n    return n > 1\n\n"
        "assert is_even(2)  # the author's own check, run when the code loads\n\n"
        "def test_even():\n    assert is_even(4)\n"
    )
    outcome, detail, _, _ = await _check(limits, AuditRequest(_node(code)))
    assert (outcome, detail) == (Outcome.PASS, "1 test passed")
    helpers_only = _block(
        "def is_odd(n):\n    return n % 2 == 1\n\ndef test_prime(n):\n    return n > 1\n\nassert test_prime(3)"
    )
    outcome, detail, _, _ = await _check(limits, AuditRequest(_node(helpers_only)))
    assert (outcome, detail) == (Outcome.NOT_APPLICABLE, "code found, but no unit tests to run; not decided")


def test_an_info_string_names_a_test_block_even_when_it_holds_helpers() -> None:
    tests = _block("def helper():\n    return add(1, 1)\n\nassert helper() == 2", 'python title="test_add.py"')
    program = find_program(AuditRequest(_node(ADD + tests)))
    assert program.code == "def add(a, b):\n    return a + b"
    assert [t.source for t in program.tests] == ["def helper():\n    return add(1, 1)\n\nassert helper() == 2"]


async def test_cancelling_a_run_kills_the_child_and_removes_its_directory(
    limits: SandboxSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = tempfile.mkdtemp(prefix="trust-sandbox-test-")
    os.chmod(parent, 0o755)  # the child may run as nobody
    monkeypatch.setattr(tempfile, "tempdir", parent)
    try:
        task = asyncio.create_task(run_python("import time\ntime.sleep(60)", limits))
        while not os.listdir(parent) and not task.done():
            await asyncio.sleep(0.01)
        assert not task.done(), "the run should still be sleeping"
        directory = os.path.join(parent, os.listdir(parent)[0])
        await asyncio.sleep(0.3)  # let the child start
        running = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cwd(pid) == directory]
        assert running, "the child should be running in its directory"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert os.listdir(parent) == []
        assert not any(os.path.exists(f"/proc/{pid}") and _cwd(pid) == directory for pid in running)
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def _cwd(pid: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


async def test_parametrized_pytest_cases_run_one_by_one(limits: SandboxSettings) -> None:
    tests = _block(
        "import pytest\n\n"
        "@pytest.mark.parametrize(('a', 'b', 'total'), [(1, 1, 2), pytest.param(2, 2, 4), (0, 5, 5)])\n"
        "def test_add(a, b, total):\n    assert add(a, b) == total\n\n"
        "def test_raises():\n    with pytest.raises(TypeError):\n        add(1, None)",
        "python tests",
    )
    outcome, detail, _, _ = await _check(limits, AuditRequest(_node(ADD + tests)))
    assert (outcome, detail) == (Outcome.PASS, "4 tests passed")
    outcome, detail, fault, _ = await _check(limits, AuditRequest(_node(WRONG_ADD + tests)))
    assert (outcome, fault) == (Outcome.FAIL, "failing unit test")
    assert detail.startswith(
        "3 of 4 tests failed: test_add[1-1-2] [this node]: AssertionError: "
        "assert add(a, b) == total: left is 0, right is 2;"
    )
    assert "test_add[0-5-5] [this node]: AssertionError: assert add(a, b) == total: left is -5, right is 5" in detail


async def test_a_test_past_the_per_test_limit_fails_on_time_and_the_others_still_run(limits: SandboxSettings) -> None:
    tests = _block(
        "import time\n\nassert add(1, 1) == 2\n\n"
        "def test_slow():\n    time.sleep(30)\n\n"
        "def test_quick():\n    assert add(2, 2) == 4",
        "python tests",
    )
    quick = limits.model_copy(update={"test_timeout_seconds": 0.5})
    outcome, detail, fault, _ = await _check(quick, AuditRequest(_node(ADD + tests)))
    assert (outcome, fault) == (Outcome.FAIL, "timeout")
    assert detail == (
        "1 of 3 tests failed: test_slow [this node]: Timeout: the test ran past the limit of 0.5 s per test "
        "(line 6 of the tests: time.sleep(30))"
    )
    spinning = _block("def add(a, b):\n    while a:\n        pass\n    return b")
    tests = _block("assert add(1, 1) == 2\n\ndef test_zero():\n    assert add(0, 0) == 0", "python tests")
    outcome, detail, fault, _ = await _check(quick, AuditRequest(_node(spinning + tests)))
    assert (outcome, fault) == (Outcome.FAIL, "timeout")
    assert detail == (
        "1 of 2 tests failed: assertion at line 1 [this node]: Timeout: the test ran past the limit of 0.5 s "
        "per test (line 2 of the code: while a:)"
    )


async def test_a_test_file_that_breaks_while_loading_stops_its_own_tests_only(limits: SandboxSettings) -> None:
    broken = _block(
        "assert add(1, 1) == 2\nimport no_such_module_here.sub\n\ndef test_never():\n    pass", "python tests"
    )
    task = _node("It must pass:\n" + ADD_TESTS, "task")
    outcome, detail, fault, _ = await _check(limits, AuditRequest(_node(ADD + broken), (task,)))
    assert outcome is Outcome.NOT_APPLICABLE
    assert detail.startswith("4 tests passed, 1 could not run here: ")
    assert "ModuleNotFoundError: No module named 'no_such_module_here'" in detail


# --------------------------------------------------------------------- the child's own interpreter


async def test_the_child_runs_in_an_interpreter_that_has_no_trust_installed(limits: SandboxSettings) -> None:
    """The child's code travels into the sandbox itself (mounted as trust_sandbox_child), so any
    Python 3.11 runs a program, as from an installed wheel; a check also needs pytest there."""
    system_python = shutil.which("python3", path="/usr/bin")
    if system_python is None:
        pytest.skip("needs a system python3 in /usr/bin")
    bare = limits.model_copy(update={"python": system_python})
    result = await run_python("import importlib.util\nprint(importlib.util.find_spec('trust'))", bare)
    assert (result.reason, result.stdout.strip()) == (RunReason.OK, "None")
    if _imports(system_python, "pytest"):
        pytest.skip(f"{system_python} has pytest")
    with pytest.raises(ConfigError, match="lacks 'pytest'.*install pytest and pytest-timeout"):
        await SandboxCheck(bare).check(AuditRequest(_node(ADD + ADD_TESTS)))


def _imports(python: str, module: str) -> bool:
    return subprocess.run([python, "-I", "-c", f"import {module}"], capture_output=True, check=False).returncode == 0


# -------------------------------------------------------------------------- the policy, in process


def test_the_configuration_reaches_the_child_unchanged() -> None:
    config = ChildConfig(
        mode=MODE_TESTS,
        root="/tmp/run",
        report_fd=7,
        audit_hook=False,
        rlimits=(("RLIMIT_CPU", 1, 2),),
        max_refusals=3,
        max_chars=40,
        solution="solution.py",
        tests=(TestFile("this node", "tests_0.py"),),
        test_timeout_seconds=0.5,
    )
    assert ChildConfig.from_json(config.to_json()) == config


def test_the_mounts_are_read_only_and_never_hold_the_worker_s_home(tmp_path: Path) -> None:
    facts = host_facts(sys.executable, [sys.prefix, sys.base_prefix], tmp_path / "home")
    arguments = bwrap_arguments("bwrap", facts, "/tmp/run", "/src/child", {"HOME": "/tmp/run"})
    assert {"--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-net", "--clearenv"} <= set(arguments)
    assert {"--die-with-parent", "--new-session"} <= set(arguments)
    writable = [arguments[i + 1 : i + 3] for i, a in enumerate(arguments) if a == "--bind"]
    assert writable == [["/tmp/run", "/tmp/run"]]  # the run's directory, and nothing else
    assert arguments[-3:] == ["--remount-ro", "/", "--"]
    mounted = [m.source for m in facts.mounts if m.kind.startswith("ro-bind")]
    assert "/usr" in mounted and str(Path(sys.base_prefix)) in " ".join(mounted)
    with pytest.raises(ConfigError, match="holds the worker's home"):
        host_facts(sys.executable, [str(tmp_path)], tmp_path / "home")
