"""The parent side of the sandbox: starts the child in its namespaces, watches it, reports how it ended.

`run_python` runs one Python program; `run_tests` (used by `SandboxCheck`) runs a segment's tests
with pytest. Both start `python -m trust_sandbox_child` under bubblewrap (`policy`), in a fresh
temporary directory that is deleted afterwards, and watch it from here:

- a wall-clock limit (`timeout_seconds`): then the whole sandbox is killed (bubblewrap's process
  group; the PID namespace takes every process inside with it);
- stdout and stderr capped at `output_bytes` each: an endless print loop is cut and killed, and
  nothing is buffered beyond the cap; the report channel is capped at `RECORD_BYTES`;
- stdin on /dev/null, the child in its own session.

The child sets its own resource limits before anything else runs (`child.limits`): CPU seconds
(RLIMIT_CPU, then SIGXCPU, SIGKILL a second later), address space (RLIMIT_AS, then MemoryError),
the largest file (RLIMIT_FSIZE, then EFBIG), processes (RLIMIT_NPROC, counted in its own user
namespace), open files (RLIMIT_NOFILE) and no core dumps.

Fail closed: when bubblewrap is missing or cannot create the namespaces on this host, a run raises
`SandboxUnavailable` and nothing runs, unless `SandboxSettings.allow_unconfined` is set (development
only: the resource limits and the audit hook remain, and `RunResult.layers` says so).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any

from trust.auditors.checks.sandbox import child
from trust.auditors.checks.sandbox.child.config import MODE_PROGRAM, MODE_TESTS, ChildConfig, TestFile
from trust.auditors.checks.sandbox.policy import (
    CHILD_LIBRARY,
    CHILD_PACKAGE,
    HostFacts,
    bwrap_arguments,
    host_facts,
    python_arguments,
)
from trust.errors import ConfigError, SandboxUnavailable
from trust.settings import SandboxSettings

__all__ = [
    "MAIN_FILE",
    "Refusal",
    "RunReason",
    "RunResult",
    "SandboxLayer",
    "run_python",
    "run_tests",
    "sandbox_layers",
]

RECORD_BYTES = 4 * 1024 * 1024
"""The most the child may send on its report channel; then it is cut and killed like an endless
print loop."""
READ_CHUNK_BYTES = 64 * 1024
MAX_REFUSALS_REPORTED = 20
"""Refusals reported to the parent per run; the rest are still refused, only not reported."""
MAX_MESSAGE_CHARS = 1_000
"""A failure message, a value's repr or a source line sent back by the child is cut to this length."""
STDERR_TAIL_CHARS = 600
"""How much of the child's stderr a message quotes (its end: the traceback, bubblewrap's complaint)."""
PROBE_TIMEOUT_SECONDS = 20.0
"""How long the one-time probe of the host (the interpreter, bubblewrap) may take per attempt."""
DRAIN_SECONDS = 2.0
"""After the child exits, how long to wait for its pipes to close (at once, unless something kept
them open, which the PID namespace does not let outlive the sandbox)."""
CPU_HARD_MARGIN_SECONDS = 1
"""The hard CPU limit lies this far above the soft one: SIGXCPU first, SIGKILL if it is ignored."""
EFBIG = 27
"""errno "File too large" on Linux: a write past RLIMIT_FSIZE."""
SIGNAL_EXIT_BASE = 128
"""bubblewrap's init reports a child killed by signal N as exit status 128 + N."""
UNPRIVILEGED_USER = "nobody"
UNPRIVILEGED_ID_FALLBACK = 65534
"""The uid and gid of `nobody` on most Linux systems, used when the password database has no entry."""

MAIN_FILE = "__sandbox_main__.py"
_RESERVED_FILES = frozenset({MAIN_FILE})
_NO_FILES: Mapping[str, str] = MappingProxyType({})


class SandboxLayer(StrEnum):
    """One protective layer of a run (`RunResult.layers`)."""

    RESOURCE_LIMITS = "resource_limits"  # rlimits, the wall clock and the output caps: always
    NAMESPACES = "namespaces"  # bubblewrap: user, PID, network, IPC, UTS and mount namespaces (`policy`)
    UNPRIVILEGED_USER = "unprivileged_user"  # a root worker runs bubblewrap as `nobody`
    AUDIT_HOOK = "audit_hook"  # the audit hook inside the child (`child.hook`), unless turned off


class RunReason(StrEnum):
    """Why a run ended, most specific first: a limit, a refusal that made the program fail, an
    error, or a clean exit."""

    OK = "ok"  # exit status 0
    ERROR = "error"  # a non-zero exit status (an uncaught exception)
    TIMEOUT = "timeout"  # the wall-clock limit (killed by the parent) or the CPU limit (SIGXCPU)
    MEMORY = "memory"  # the address-space limit: an uncaught MemoryError
    OUTPUT_LIMIT = "output_limit"  # more than output_bytes on stdout or stderr: cut and killed
    FILE_LIMIT = "file_limit"  # a file grew past file_bytes: an uncaught EFBIG
    NETWORK_REFUSED = "network_refused"  # failed after the audit hook refused network access
    PROCESS_REFUSED = "process_refused"  # failed after the audit hook refused a process or a signal
    OPERATION_REFUSED = "operation_refused"  # failed after another refusal (a write outside, ctypes)
    KILLED = "killed"  # ended by a signal the parent did not send


_REFUSAL_REASONS: Mapping[str, RunReason] = {
    "network": RunReason.NETWORK_REFUSED,
    "process": RunReason.PROCESS_REFUSED,
}


@dataclass(frozen=True, slots=True)
class Refusal:
    """An operation the audit hook refused: `kind` is network, process, filesystem, native, limits
    or interpreter; `event` the audit event ("socket.connect"); `detail` what was asked."""

    kind: str
    event: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} ({self.event}{': ' + self.detail if self.detail else ''})"


@dataclass(frozen=True, slots=True)
class RunResult:
    """How one sandboxed run ended.

    `exit_code` is None when a signal ended the process (`killed_by_signal` names it). `timed_out`
    covers both the wall clock and the CPU limit. `stdout` and `stderr` are decoded as UTF-8 and hold
    at most `output_bytes` bytes each; `*_cut` says the program wrote more (and was killed for it).
    `records` holds what the program sent on its report channel (`__sandbox_report__(dict)` in the
    main program; the test runner's records in a test run), `uncaught` the exception type that ended
    the program, if any.
    """

    reason: RunReason
    exit_code: int | None
    killed_by_signal: int | None
    timed_out: bool
    stdout: str
    stderr: str
    stdout_cut: bool
    stderr_cut: bool
    wall_seconds: float
    layers: tuple[SandboxLayer, ...]
    refusals: tuple[Refusal, ...] = ()
    uncaught: str | None = None
    records: tuple[Mapping[str, Any], ...] = ()

    @property
    def ok(self) -> bool:
        return self.reason is RunReason.OK


# ----------------------------------------------------------------------------------- the host


@dataclass(frozen=True, slots=True)
class _Launch:
    """How children start on this host: under bubblewrap (`bwrap` and `facts` set) or, in the
    development mode, unconfined; as which host user (`ids`: (uid, gid) to switch to, None to stay
    who the worker is); and the layers that gives."""

    python: str
    bwrap: str | None
    facts: HostFacts | None
    ids: tuple[int, int] | None
    layers: tuple[SandboxLayer, ...]


def _unprivileged_ids() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        return UNPRIVILEGED_ID_FALLBACK, UNPRIVILEGED_ID_FALLBACK
    return entry.pw_uid, entry.pw_gid


def _as_user(ids: tuple[int, int] | None) -> dict[str, Any]:
    """The subprocess options that start a process as `ids` (none when None)."""
    return {} if ids is None else {"user": ids[0], "group": ids[1], "extra_groups": []}


def _child_directory() -> str:
    return str(Path(child.__file__).resolve().parent)


def _interpreter_prefixes(python: str) -> list[str]:
    """sys.prefix, sys.base_prefix and the exec prefixes of `python` (run once, unconfined: it is
    the worker's own configured interpreter, not audited code). Raises `ConfigError` when it does
    not run or is not Python 3.11 or newer (the child needs -P)."""
    script = (
        "import json, sys; "
        "print(json.dumps([sys.version_info[:2], sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]))"
    )
    try:
        completed = subprocess.run(
            [python, "-I", "-c", script],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            cwd="/",
            env={"LANG": "C.UTF-8"},
            timeout=PROBE_TIMEOUT_SECONDS,
            check=False,
        )
        version, *prefixes = json.loads(completed.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise ConfigError(
            f"sandbox.python {python!r} does not run ({exc}); point it at a Python 3.11 interpreter"
        ) from exc
    if tuple(version) < (3, 11):
        raise ConfigError(f"sandbox.python {python!r} is Python {version[0]}.{version[1]}; the sandbox needs 3.11")
    return [str(p) for p in prefixes]


def _environment(root: str, library: str) -> dict[str, str]:
    """The child's whole environment (the worker's is never passed on)."""
    return {"HOME": root, "TMPDIR": root, "LANG": "C.UTF-8", "PYTHONPATH": library}


def _probe_bwrap(bwrap: str, facts: HostFacts, ids: tuple[int, int] | None) -> str | None:
    """None when bubblewrap, run as `ids`, makes the namespaces here and the child package imports
    inside them; otherwise what went wrong (bubblewrap's own message)."""
    with tempfile.TemporaryDirectory(prefix="trust-sandbox-probe-") as directory:
        root = os.path.realpath(directory)
        if ids is not None:
            os.chown(root, *ids)
        argv = [
            *bwrap_arguments(bwrap, facts, root, _child_directory(), _environment(root, CHILD_LIBRARY)),
            facts.python,
            "-s",
            "-P",
            "-B",
            "-c",
            f"import {CHILD_PACKAGE}.config",
        ]
        try:
            completed = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                cwd="/",
                env={"LANG": "C.UTF-8"},
                timeout=PROBE_TIMEOUT_SECONDS,
                check=False,
                **_as_user(ids),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return str(exc)
    if completed.returncode == 0:
        return None
    return completed.stderr.decode("utf-8", "replace")[-STDERR_TAIL_CHARS:].strip() or (
        f"exit status {completed.returncode}"
    )


@functools.lru_cache(maxsize=16)
def _launch_for(python: str, bwrap: str, allow_unconfined: bool, audit_hook: bool, home: str, euid: int) -> _Launch:
    """Probes the host once per configuration (cached: which tools exist and whether the kernel
    grants namespaces is a fact of the host, and a run should not pay for finding it out again).
    A root worker runs bubblewrap as `nobody` where that works (the interpreter's directories are
    open to it); otherwise as root, where RLIMIT_NPROC does not hold and the audit hook alone
    refuses forks. Raises `SandboxUnavailable` when the namespaces cannot be had and unconfined runs
    are not allowed, `ConfigError` when the interpreter does not run."""
    prefixes = _interpreter_prefixes(python)
    hook = (SandboxLayer.AUDIT_HOOK,) if audit_hook else ()
    executable = shutil.which(bwrap)
    if executable is None:
        problem = (
            f"bubblewrap not found at {bwrap!r}; install the Debian package bubblewrap (scripts/setup.sh does) "
            "or set sandbox.bwrap to its path"
        )
    else:
        facts = host_facts(python, prefixes, Path(home))
        confined = (SandboxLayer.RESOURCE_LIMITS, SandboxLayer.NAMESPACES)
        if euid == 0:
            ids = _unprivileged_ids()
            if _probe_bwrap(executable, facts, ids) is None:
                return _Launch(python, executable, facts, ids, (*confined, SandboxLayer.UNPRIVILEGED_USER, *hook))
        refused = _probe_bwrap(executable, facts, None)
        if refused is None:
            return _Launch(python, executable, facts, None, (*confined, *hook))
        problem = (
            f"bubblewrap ({executable}) cannot create the namespaces here: {refused}; allow unprivileged user "
            "namespaces (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap)"
        )
    if not allow_unconfined:
        raise SandboxUnavailable(
            f"sandbox unavailable: {problem}. The code was not run; for development only, "
            "TRUST_WORKER__SANDBOX__ALLOW_UNCONFINED=true runs it without namespaces"
        )
    return _Launch(python, None, None, None, (SandboxLayer.RESOURCE_LIMITS, *hook))


async def _launch(limits: SandboxSettings) -> _Launch:
    python = limits.python or sys.executable
    resolved = shutil.which(python) or python
    return await asyncio.to_thread(
        _launch_for,
        resolved,
        limits.bwrap,
        limits.allow_unconfined,
        limits.audit_hook,
        str(Path.home()),
        os.geteuid(),
    )


async def sandbox_layers(limits: SandboxSettings) -> tuple[SandboxLayer, ...]:
    """The layers a run gets on this host (for the worker's start-up log); probes on first use.
    Raises `SandboxUnavailable` when it would fail closed, `ConfigError` when the interpreter does
    not run."""
    return (await _launch(limits)).layers


# ----------------------------------------------------------------------------------- one run


def _check_file_names(files: Mapping[str, str]) -> None:
    for name in files:
        parts = Path(name).parts
        if not name or "\0" in name or Path(name).is_absolute() or ".." in parts or not parts:
            raise ValueError(f"sandbox file {name!r}: give a relative path inside the sandbox directory, without '..'")
        if name in _RESERVED_FILES:
            raise ValueError(f"sandbox file {name!r}: the name is reserved for the sandbox's main program")


def _write_files(root: str, files: Mapping[str, str], ids: tuple[int, int] | None) -> None:
    """Writes the run's files; with `ids`, hands the directory and everything in it to that user
    (the child runs as it and may write there, and nowhere else)."""
    if ids is not None:
        os.chown(root, *ids)
    for name, text in files.items():
        path = Path(root, name)
        for parent in reversed(path.relative_to(root).parents[:-1]):
            directory = Path(root, parent)
            if not directory.exists():
                directory.mkdir()
                if ids is not None:
                    os.chown(directory, *ids)
        path.write_text(text, encoding="utf-8")
        path.chmod(0o644)
        if ids is not None:
            os.chown(path, *ids)


@dataclass(slots=True)
class _Capped:
    """What a capped reader kept so far (mutable while it reads; kept when reading stops early)."""

    cap: int
    kept: bytearray = field(default_factory=bytearray)
    cut: bool = False


async def _drain(stream: asyncio.StreamReader, into: _Capped, overflow: asyncio.Event) -> None:
    """Reads `stream` to its end, keeping at most `into.cap` bytes (the rest is read and dropped, so
    the child never blocks on a full pipe); sets `overflow` once more than the cap arrived."""
    while chunk := await stream.read(READ_CHUNK_BYTES):
        room = into.cap - len(into.kept)
        if len(chunk) > room:
            into.kept += chunk[: max(room, 0)]
            if not into.cut:
                into.cut = True
                overflow.set()
        else:
            into.kept += chunk


def _kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGKILL to the sandbox's process group (bubblewrap leads its own session; with it goes the
    PID namespace and every process in it). Also after it exited: its group lives on while any
    member does, and Linux hands out no pid still in use as a group id, so the signal can only reach
    what the run left behind."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _parse_records(data: bytes) -> list[dict[str, Any]]:
    records = []
    for line in data.splitlines():
        try:
            value = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            records.append(value)
    return records


def _decode(data: bytes | bytearray) -> str:
    return data.decode("utf-8", "replace")


def _rlimits(limits: SandboxSettings) -> tuple[tuple[str, int, int], ...]:
    return (
        ("RLIMIT_CPU", limits.cpu_seconds, limits.cpu_seconds + CPU_HARD_MARGIN_SECONDS),
        ("RLIMIT_AS", limits.memory_bytes, limits.memory_bytes),
        ("RLIMIT_FSIZE", limits.file_bytes, limits.file_bytes),
        ("RLIMIT_NPROC", limits.processes, limits.processes),
        ("RLIMIT_NOFILE", limits.open_files, limits.open_files),
        ("RLIMIT_CORE", 0, 0),
    )


async def run_python(code: str, limits: SandboxSettings, *, files: Mapping[str, str] = _NO_FILES) -> RunResult:
    """Runs `code` as the main program of a fresh sandboxed interpreter (see the module docstring)
    and reports how it ended. `files` are written into its directory first (relative path -> text).

    Raises `SandboxUnavailable` when the sandbox cannot confine the run (and would not run it),
    `ConfigError` when it cannot start at all (the interpreter is missing or broken); the program's
    own failures are a `RunResult`, never an exception.
    """
    _check_file_names(files)
    launch = await _launch(limits)
    return await _run(launch, limits, MODE_PROGRAM, {**files, MAIN_FILE: code}, main=MAIN_FILE)


async def run_tests(
    solution: str, tests: Sequence[tuple[str, str, str]], limits: SandboxSettings, *, solution_file: str
) -> RunResult:
    """Runs the tests with pytest against the code (`child.runner`): `solution` is the code's text,
    written to `solution_file`; `tests` holds (label, file name, text). The runner's records are in
    `RunResult.records`. Raises as `run_python` does."""
    files = {solution_file: solution, **{name: text for _, name, text in tests}}
    _check_file_names(files)
    launch = await _launch(limits)
    return await _run(
        launch,
        limits,
        MODE_TESTS,
        files,
        solution=solution_file,
        tests=tuple(TestFile(label, name) for label, name, _ in tests),
    )


async def _run(
    launch: _Launch,
    limits: SandboxSettings,
    mode: str,
    files: Mapping[str, str],
    *,
    main: str = "",
    solution: str = "",
    tests: tuple[TestFile, ...] = (),
) -> RunResult:
    with contextlib.ExitStack() as stack:
        root = os.path.realpath(stack.enter_context(tempfile.TemporaryDirectory(prefix="trust-sandbox-")))
        _write_files(root, files, launch.ids)
        if launch.facts is not None:
            library = CHILD_LIBRARY
        else:  # unconfined: a directory that holds the child package under its in-sandbox name
            library = os.path.realpath(stack.enter_context(tempfile.TemporaryDirectory(prefix="trust-sandbox-lib-")))
            os.symlink(_child_directory(), os.path.join(library, CHILD_PACKAGE))
        environment = _environment(root, library)
        read_fd, write_fd = os.pipe()
        config = ChildConfig(
            mode=mode,
            root=root,
            report_fd=write_fd,
            audit_hook=limits.audit_hook,
            rlimits=_rlimits(limits),
            max_refusals=MAX_REFUSALS_REPORTED,
            max_chars=MAX_MESSAGE_CHARS,
            main=main,
            solution=solution,
            tests=tests,
            test_timeout_seconds=limits.test_timeout_seconds,
        )
        argv = python_arguments(launch.python, config.to_json())
        if launch.bwrap is not None and launch.facts is not None:
            argv = [*bwrap_arguments(launch.bwrap, launch.facts, root, _child_directory(), environment), *argv]
        return await _watch(argv, root, environment, read_fd, write_fd, launch, limits)
    raise AssertionError("unreachable")  # pragma: no cover (mypy: ExitStack may swallow exceptions)


async def _watch(
    argv: list[str],
    root: str,
    environment: Mapping[str, str],
    read_fd: int,
    write_fd: int,
    launch: _Launch,
    limits: SandboxSettings,
) -> RunResult:
    started = time.monotonic()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=root,
            env=dict(environment),
            start_new_session=True,
            pass_fds=(write_fd,),
            **_as_user(launch.ids),
        )
    except OSError as exc:
        os.close(read_fd)
        raise ConfigError(
            f"the sandbox could not start {argv[0]!r}: {exc}; check sandbox.python and sandbox.bwrap"
        ) from exc
    finally:
        os.close(write_fd)

    loop = asyncio.get_running_loop()
    records_stream = asyncio.StreamReader()
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    transport: asyncio.BaseTransport | None = None
    overflow = asyncio.Event()
    readers: asyncio.Future[Any] | None = None
    out, err, data = _Capped(limits.output_bytes), _Capped(limits.output_bytes), _Capped(RECORD_BYTES)
    try:
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(records_stream), pipe)
        assert process.stdout is not None and process.stderr is not None  # both are PIPE
        readers = asyncio.gather(
            _drain(process.stdout, out, overflow),
            _drain(process.stderr, err, overflow),
            _drain(records_stream, data, overflow),
        )
        exited = asyncio.ensure_future(process.wait())
        flooded = asyncio.ensure_future(overflow.wait())
        try:
            await asyncio.wait({exited, flooded}, timeout=limits.timeout_seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            flooded.cancel()
        killed_for = None
        if not exited.done():
            killed_for = RunReason.OUTPUT_LIMIT if overflow.is_set() else RunReason.TIMEOUT
            _kill_group(process)
        returncode = await exited
        wall_seconds = time.monotonic() - started
        _kill_group(process)  # anything left in the group
        with contextlib.suppress(TimeoutError):
            # Only a process that outlived the sandbox could hold the pipes open longer: then keep
            # what arrived and stop reading (the finally block cancels the readers).
            await asyncio.wait_for(asyncio.shield(readers), DRAIN_SECONDS)
    finally:
        if process.returncode is None:
            _kill_group(process)
            await process.wait()
        if readers is not None and not readers.done():
            readers.cancel()
        if transport is not None:
            transport.close()
        else:
            pipe.close()

    return _result(returncode, killed_for, wall_seconds, out, err, bytes(data.kept), launch, limits)


def _result(
    returncode: int,
    killed_for: RunReason | None,
    wall_seconds: float,
    out: _Capped,
    err: _Capped,
    data: bytes,
    launch: _Launch,
    limits: SandboxSettings,
) -> RunResult:
    records = _parse_records(data)
    sandbox = [r for r in records if "sandbox" in r]
    if not any(r.get("sandbox") == "ready" for r in sandbox):
        _not_ready(returncode, killed_for, err, sandbox, launch, limits)
    refusals = tuple(
        Refusal(str(r.get("kind", "")), str(r.get("event", "")), str(r.get("detail", "")))
        for r in sandbox
        if r.get("sandbox") == "refused"
    )
    uncaught_record = next((r for r in sandbox if r.get("sandbox") == "uncaught"), None)
    uncaught = str(uncaught_record.get("type")) if uncaught_record else None
    signal_number = -returncode if returncode < 0 else None
    exited = any(r.get("sandbox") == "exited" for r in sandbox)
    if launch.bwrap is not None and returncode > SIGNAL_EXIT_BASE and not exited:
        # bubblewrap's init turned the child's death by signal N into exit status 128 + N. A child
        # that exits through Python says so first ("exited"), so a program's own sys.exit(152) stays
        # an exit status; only an os._exit(129...) could pass for a signal, and harm nobody but itself.
        signal_number = returncode - SIGNAL_EXIT_BASE
    if killed_for is not None:
        reason = killed_for
    elif signal_number == signal.SIGXCPU:
        reason = RunReason.TIMEOUT
    elif out.cut or err.cut:
        reason = RunReason.OUTPUT_LIMIT
    elif uncaught == "MemoryError":
        reason = RunReason.MEMORY
    elif uncaught_record is not None and uncaught_record.get("errno") == EFBIG:
        reason = RunReason.FILE_LIMIT
    elif returncode != 0 and refusals:
        reason = _REFUSAL_REASONS.get(refusals[0].kind, RunReason.OPERATION_REFUSED)
    elif signal_number is not None:
        reason = RunReason.KILLED
    elif returncode != 0:
        reason = RunReason.ERROR
    else:
        reason = RunReason.OK
    return RunResult(
        reason=reason,
        exit_code=None if signal_number is not None else returncode,
        killed_by_signal=signal_number,
        timed_out=reason is RunReason.TIMEOUT,
        stdout=_decode(out.kept),
        stderr=_decode(err.kept),
        stdout_cut=out.cut,
        stderr_cut=err.cut,
        wall_seconds=wall_seconds,
        layers=launch.layers,
        refusals=refusals,
        uncaught=uncaught,
        records=tuple(r["program"] for r in records if isinstance(r.get("program"), dict)),
    )


def _not_ready(
    returncode: int,
    killed_for: RunReason | None,
    err: _Capped,
    sandbox: list[dict[str, Any]],
    launch: _Launch,
    limits: SandboxSettings,
) -> None:
    """Raises the error of a sandbox that never got as far as running the code."""
    message = _decode(err.kept)[-STDERR_TAIL_CHARS:].strip() or "no message"
    missing = next((r for r in sandbox if r.get("sandbox") == "missing"), None)
    if missing is not None:
        raise ConfigError(
            f"the sandbox interpreter {launch.python!r} lacks {missing.get('module')!r}, which the test runner needs; "
            "install pytest and pytest-timeout into it (they are dependencies of trust)"
        )
    if launch.bwrap is not None and message.startswith("bwrap:"):
        raise SandboxUnavailable(f"sandbox unavailable: bubblewrap ({launch.bwrap}) failed: {message}")
    why = (
        f"did not get ready within {limits.timeout_seconds:g} s"
        if killed_for is RunReason.TIMEOUT
        else f"exited with status {returncode} before running the program"
    )
    raise ConfigError(
        f"the sandbox interpreter {launch.python!r} {why}: {message}; "
        f"check sandbox.python and raise sandbox.memory_bytes ({limits.memory_bytes}) if it is too small to start"
    )
