"""The home's shared model server: a real server process started detached, a self-test that catches a
server dying on its first request, workers that follow it and never own it, and why it is down.

Servers that misbehave for real (die by a signal on their first request, answer empty, hang on
`/v1/models` while busy) are small Python HTTP servers run through `LocalModelServer.start`'s
`server_command`, so the launcher, the keeper, the lock and the messages are ours, unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import signal
import socket
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from trust.adapters.local.llama import (
    CPUINFO_FLAGS,
    EXIT_FILE,
    FAULT_PRONE_FEATURES,
    LLAMA_CPP_REQUIREMENT,
    STATE_FILE,
    LocalModelServer,
    ModelServerHome,
    build_cpu_features,
    check_cpu,
)
from trust.adapters.local.processes import alive, free_port, parent, terminate
from trust.auditors.base import AuditRequest
from trust.auditors.llm import LlmAuditor
from trust.auditors.tiers import AVAILABILITY_CACHE_SECONDS, audit_once, llm_auditor
from trust.core.chat import ChatMessage
from trust.core.graphs.hdag import HdagNode, Level
from trust.errors import ConfigError, LlmError
from trust.settings import LlmSettings, Settings

needs_llama_cpp = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None,
    reason=f"llama-cpp-python is not installed: pip install '{LLAMA_CPP_REQUIREMENT}'",
)

FAKE_SERVER = textwrap.dedent(
    """
    import json, signal, sys, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    mode, args = sys.argv[1], sys.argv[2:]
    host, port = args[args.index("--host") + 1], int(args[args.index("--port") + 1])
    print(f"fake model server ({mode}) loading", flush=True)
    if mode == "die-loading":
        signal.raise_signal(signal.SIGILL)
    answered = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, document):
            body = json.dumps(document).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/v1/models":
                if mode == "busy" and answered.is_set():
                    threading.Event().wait()  # as llama-cpp-python's, behind a running completion
                self.reply({"object": "list", "data": [{"id": "SmolLM2-135M-Instruct"}]})
            else:
                self.reply({"docs": True})

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            if mode in ("sigill", "sigsegv"):
                print("first request: running the kernels", flush=True)
                # In this thread, as a CPU fault is: kill() could let the thread reply before the process dies.
                signal.raise_signal(signal.SIGILL if mode == "sigill" else signal.SIGSEGV)
            answered.set()
            self.reply({"choices": [{"message": {"role": "assistant", "content": "" if mode == "empty" else "ok"}}]})

    ThreadingHTTPServer((host, port), Handler).serve_forever()
    """
)


@pytest.fixture
def fake_server(tmp_path: Path) -> Iterator[Path]:
    script = tmp_path / "fake_server.py"
    script.write_text(FAKE_SERVER)
    yield script


def _fake(script: Path, mode: str) -> list[str]:
    return [sys.executable, str(script), mode]


def _gone(pid: int) -> bool:
    """Neither running nor a zombie: reaped by whoever is its parent."""
    return not alive(pid) and not Path(f"/proc/{pid}").exists()


def _exited(pid: int) -> bool:
    """Runs no more: gone, or a zombie that init has yet to reap (an orphan's parent is init)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("sigill", "crashed with SIGILL (illegal instruction) on its first request"),
        ("sigsegv", "crashed with SIGSEGV (segmentation fault) on its first request"),
    ],
)
def test_a_server_that_dies_on_its_first_request_fails_its_self_test_clearly(
    tmp_path: Path, fake_server: Path, mode: str, words: str
) -> None:
    directory = tmp_path / "llm"
    with pytest.raises(LlmError) as raised:
        LocalModelServer.start(directory, server_command=_fake(fake_server, mode), startup_timeout_seconds=30)
    message = str(raised.value)
    assert words in message
    assert "rerun scripts/setup.sh" in message and "TRUST_AUDITOR_LLM__BASE_URL" in message
    if mode == "sigill":
        assert "this llama.cpp build uses CPU instructions this host cannot run" in message
    assert "first request: running the kernels" in message  # the log's tail
    assert not (directory / STATE_FILE).exists()  # never recorded
    ended = json.loads((directory / EXIT_FILE).read_text())
    assert ended["returncode"] == -(signal.SIGILL if mode == "sigill" else signal.SIGSEGV)
    assert _gone(ended["pid"])  # reaped by its keeper: no zombie anywhere


def test_a_server_that_dies_while_loading_names_the_signal(tmp_path: Path, fake_server: Path) -> None:
    with pytest.raises(LlmError, match=r"crashed with SIGILL \(illegal instruction\) while starting") as raised:
        LocalModelServer.start(tmp_path, server_command=_fake(fake_server, "die-loading"))
    assert "fake model server (die-loading) loading" in str(raised.value)
    assert not (tmp_path / STATE_FILE).exists()


def test_an_empty_self_test_answer_stops_the_server(tmp_path: Path, fake_server: Path) -> None:
    with pytest.raises(LlmError, match=r"failed its self-test, a 4-token chat completion .*: an empty answer"):
        LocalModelServer.start(tmp_path, server_command=_fake(fake_server, "empty"))
    ended = json.loads((tmp_path / EXIT_FILE).read_text())
    assert ended["returncode"] == -signal.SIGTERM and _gone(ended["pid"])
    assert not (tmp_path / STATE_FILE).exists()


def test_a_stale_record_is_removed_when_a_start_fails(tmp_path: Path, fake_server: Path) -> None:
    stale = {"pid": 2**22 + 1, "host": "127.0.0.1", "port": 9, "model_path": "/m.gguf", "model_id": "m"}
    (tmp_path / STATE_FILE).write_text(json.dumps(stale))
    with pytest.raises(LlmError):
        LocalModelServer.ensure(tmp_path, server_command=_fake(fake_server, "sigill"))
    assert not (tmp_path / STATE_FILE).exists()


def test_a_busy_server_is_attached_not_doubled(tmp_path: Path, fake_server: Path) -> None:
    """While a completion runs, llama-cpp-python's `GET /v1/models` waits behind it: a server that
    does not answer it this instant is busy, not gone, and `ensure` must not start a second one."""
    server = LocalModelServer.start(tmp_path, server_command=_fake(fake_server, "busy"))
    try:
        found = LocalModelServer.ensure(tmp_path, server_command=_fake(fake_server, "busy"))
        assert (found.pid, found.port, found.started_here) == (server.pid, server.port, False)
        assert json.loads((tmp_path / STATE_FILE).read_text())["pid"] == server.pid
    finally:
        server.stop(timeout_seconds=2)
    assert _gone(server.pid)


def test_the_server_is_not_a_child_of_the_process_that_started_it(tmp_path: Path, fake_server: Path) -> None:
    server = LocalModelServer.start(tmp_path, server_command=_fake(fake_server, "ok"))
    keeper = parent(server.pid)
    try:
        assert keeper is not None and keeper != os.getpid()
        with pytest.raises(ChildProcessError):
            os.waitpid(server.pid, os.WNOHANG)  # not ours to reap
    finally:
        server.stop(timeout_seconds=2)
    # `stop` returns once the keeper, too, is done: it writes into the directory as the server ends,
    # so a caller that removes the directory next would race it.
    assert _gone(server.pid) and keeper is not None and _exited(keeper)
    assert (tmp_path / EXIT_FILE).is_file()


# ------------------------------------------------------------------------------- the CPU pre-flight


def test_a_build_needing_an_instruction_this_cpu_lacks_is_refused_before_starting() -> None:
    flags = Path("/proc/cpuinfo").read_text().split("flags", 1)[1].split("\n", 1)[0].split()
    lacking = sorted(name for name, flag in CPUINFO_FLAGS.items() if flag not in flags)
    if not lacking:
        pytest.skip("this CPU has every instruction set llama.cpp can be built for")
    with pytest.raises(ConfigError) as raised:
        check_cpu(frozenset({"AVX", lacking[0]}))
    message = str(raised.value)
    assert f"this CPU lacks {lacking[0]} (cpuinfo flag '{CPUINFO_FLAGS[lacking[0]]}')" in message
    assert "LLAMA_CPU_BASELINE=x86-64-v2 scripts/setup.sh" in message and "TRUST_AUDITOR_LLM__BASE_URL" in message


@needs_llama_cpp
def test_the_installed_llama_cpp_is_a_portable_build_this_cpu_runs() -> None:
    """scripts/setup.sh builds x86-64-v3: AVX2, FMA and F16C, and nothing a VM may advertise but fault on."""
    features = build_cpu_features()
    assert {"AVX", "AVX2", "FMA", "F16C"} <= features
    assert not features & FAULT_PRONE_FEATURES, f"a native build: {sorted(features & FAULT_PRONE_FEATURES)}"
    check_cpu(features)


# ----------------------------------------------------------------------------- workers and the home


@pytest.mark.slow
@needs_llama_cpp
async def test_a_workers_client_follows_the_server_to_another_port(tmp_path: Path) -> None:
    home = ModelServerHome(tmp_path / "llm")
    first = await asyncio.to_thread(home.up)
    question = [ChatMessage("user", "Say yes.")]
    try:
        async with home.client(timeout_seconds=60, max_retries=1) as client:
            assert (await client.complete(question, temperature=0.0, max_tokens=3)).strip()
            await asyncio.to_thread(home.down)
            with pytest.raises(LlmError, match=f"no model server runs for {tmp_path / 'llm'} .*was stopped"):
                await client.complete(question, temperature=0.0, max_tokens=3)
            port = free_port()
            second = await asyncio.to_thread(home.up, port=port)
            assert (second.port, second.started_here) == (port, True) and second.pid != first.pid
            assert (await client.complete(question, temperature=0.0, max_tokens=3)).strip()
            assert client.endpoint == f"http://127.0.0.1:{port}/v1/chat/completions"
    finally:
        await asyncio.to_thread(home.down)


@pytest.mark.slow
@needs_llama_cpp
async def test_a_tier_2_worker_shares_the_homes_server_and_says_why_it_is_down(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    home = ModelServerHome.from_settings(settings)
    try:
        async with AsyncExitStack() as stack:
            auditor = await llm_auditor(settings, stack)
            assert isinstance(auditor, LlmAuditor)
            server = home.running()
            assert server is not None and not server.started_here
            assert await auditor.unavailable() is None
            async with AsyncExitStack() as other_stack:  # a second worker attaches to the same server
                await llm_auditor(settings, other_stack)
                assert home.running() == server

            os.kill(server.pid, signal.SIGSEGV)  # the crash the issue saw, for real
            await asyncio.sleep(AVAILABILITY_CACHE_SECONDS)
            reason = await auditor.unavailable()
            assert reason is not None
            assert f"the model server at {server.base_url} is not answering: it exited with SIGSEGV" in reason
            assert str(server.log_file) in reason and f"trust llm up --home {tmp_path}" in reason

            # What a seat's last_error then says: the cause, not a bare ConnectError.
            with pytest.raises(LlmError, match="exited with SIGSEGV"):
                await auditor.audit(AuditRequest(HdagNode("s1", Level.STEP, "17 * 23 = 391.", domain="math"), ()))

            restarted = await asyncio.to_thread(home.up)
            await asyncio.sleep(AVAILABILITY_CACHE_SECONDS)
            assert await auditor.unavailable() is None
        # The worker's stack is closed: the home's server outlives it.
        assert home.running() == restarted and alive(restarted.pid)
    finally:
        await asyncio.to_thread(home.down)


@pytest.mark.slow
@needs_llama_cpp
def test_ensure_from_two_processes_at_once_starts_one_server(tmp_path: Path) -> None:
    script = "import sys; from pathlib import Path; from trust.adapters.local.llama import LocalModelServer as S\n"
    script += "s = S.ensure(Path(sys.argv[1])); print(s.pid, s.started_here)"
    import subprocess

    runs = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    answers = [run.communicate(timeout=300)[0].split() for run in runs]
    pids = {int(pid) for pid, _ in answers}
    try:
        assert len(pids) == 1 and sorted(started for _, started in answers) == ["False", "True"]
        assert alive(next(iter(pids)))  # both starters have exited; the server runs on
    finally:
        for pid in pids:
            terminate(pid, None, 10)


async def test_a_configured_endpoint_is_unavailable_while_its_host_refuses_connections(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        settings = Settings(
            home=tmp_path, auditor_llm=LlmSettings(base_url=f"http://127.0.0.1:{port}/v1", model="judge")
        )
        async with AsyncExitStack() as stack:
            auditor = await llm_auditor(settings, stack)
            assert await auditor.unavailable() is None
            listener.close()
            await asyncio.sleep(AVAILABILITY_CACHE_SECONDS)
            reason = await auditor.unavailable()
    assert reason is not None
    assert f"the model endpoint http://127.0.0.1:{port}/v1 cannot be reached (127.0.0.1:{port}:" in reason
    assert not (tmp_path / "llm").exists()  # no embedded server for a configured endpoint


def _private_servers(under: Path) -> set[int]:
    """Pids of model servers running in a private temporary folder (`audit_once`'s) under `under`
    (so that a server another test process runs at the same time is not counted)."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            cwd = os.readlink(entry / "cwd")
            command = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if b"llama_cpp.server" in command and Path(cwd).name.startswith("trust-llm-") and Path(cwd).parent == under:
            found.add(int(entry.name))
    return found


@pytest.mark.slow
@needs_llama_cpp
async def test_a_one_off_audit_leaves_no_server_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`trust audit-segment --tier 2` (`audit_once`) uses the home's server when one runs; otherwise
    its own, stopped when it is done, never a server left running in the home."""
    settings = Settings(home=tmp_path / "home")
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))  # audit_once's private folder lands here
    before = _private_servers(private)
    request = AuditRequest(HdagNode("s1", Level.STEP, "17 * 23 = 391.", domain="math"), ())
    with contextlib.suppress(LlmError):  # the weak judge's answer may not pass validation; not the point
        await audit_once(request, 2, settings)
    assert ModelServerHome.from_settings(settings).running() is None
    assert not (tmp_path / "home" / "llm" / STATE_FILE).exists()
    assert not before and _private_servers(private) == set()
    assert not any(private.iterdir()), "the private folder was not removed"
