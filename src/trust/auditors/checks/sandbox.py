"""The tier-1 code sandbox (paper 3.1.1, Tier 1: "execute code snippets in sandboxed environments";
2.2.4: "for code generation, we execute available unit tests").

Two parts:

`run_python` runs one Python program in a separate process and reports how it ended (`RunResult`).
`SandboxCheck` finds the code and the unit tests a segment carries, runs the tests against the code
with `run_python`, and answers PASS, FAIL or NOT_APPLICABLE.

What the sandbox does, in layers (`RunResult.layers` says which applied to a run):

- **Resource limits** (always), set by a small bootstrap in the child before the audited code runs:
  CPU seconds (RLIMIT_CPU, then SIGXCPU), address space (RLIMIT_AS, then MemoryError), the largest
  file (RLIMIT_FSIZE, then EFBIG), open files (RLIMIT_NOFILE) and no core dumps. The parent adds a
  wall-clock limit (the whole process group is killed), caps stdout and stderr at
  `output_bytes` each (an endless print loop is cut and killed; nothing is buffered beyond the cap),
  runs the child in a fresh temporary directory (its cwd, HOME and TMPDIR; deleted afterwards) with an
  empty environment, stdin on /dev/null, in its own session.
- **An audit hook** (always; `sys.addaudithook`, which cannot be removed once added) refuses: sockets
  other than local socket pairs, connect/bind/sendto/name lookups; fork, exec, spawn, system,
  subprocess (including `_posixsubprocess.fork_exec`, which raises no audit event of its own, so the
  bootstrap replaces it); signals to other processes; ctypes and the C test modules; new
  subinterpreters (they would start without the hook); raising the resource limits; and writes
  outside the temporary directory. A refusal raises `PermissionError` (or `ImportError` for a
  refused module) in the child and is reported to the parent even when the code swallows the
  exception (`RunResult.refusals`).
- **A network namespace** (where the host allows one): the child runs under `unshare --user --net`,
  so it has only a loopback interface, down. The user namespace maps no user, so the child holds no
  capability in it (many kernel exploits start from CAP_NET_ADMIN in a user namespace; `--map-root-user`
  would hand it that). Probed once per interpreter and cached.
- **An unprivileged user** (when the worker runs as root and the interpreter is readable by
  `nobody`): the child runs as `nobody`, so it cannot read the worker's keys or write root's files.

What it is not: a security boundary against a determined attacker. The audit hook lives in the
audited process; Python has known ways around audit hooks (crafted bytecode, memory corruption),
and a kernel exploit defeats the rest. For hostile code the answer is a VM or gVisor. This sandbox
is enough to stop audited code from phoning home, forking, filling the disk, reading the worker's
files (where the unprivileged user applies), or looping. Where neither kernel layer applies (root,
unshare refused, an interpreter under a private home), the child keeps root's file permissions and
only the audit hook stands between it and the host: run the worker unprivileged, or point
`sandbox.python` at a world-readable interpreter.

The test verdict comes from inside the process that ran the code: code written to game its tests (an
object whose `__eq__` always answers True, a patched runner) can fake a pass. Tier 1 decides honest
code; gaming is for the reviewing tiers to catch.

How `SandboxCheck` finds code and tests (the convention):

- Code and tests are fenced blocks (``` or ~~~) labelled `python`, `py`, `python3` or `py3`.
  Blocks that start with `>>>` (REPL transcripts) are neither. Unlabelled blocks are not Python.
- A block holds **tests** when its info string names them (```` ```python tests ````, `test`,
  `pytest`, `unittest`, a `test_*.py` file name), when its first line is a `# tests` comment (`# unit
  tests`, `# Test cases`), or when it holds nothing but tests: imports, `assert` statements,
  `test*` functions, `Test*` classes and an `if __name__ == "__main__":` block.
- Every other Python block of the node is **code**: they are joined in order into `solution.py`.
- Tests come from the node itself, from a CIG turn's `input` (the task it was given), and from the
  parents in the segment (a task node that states the tests); the code only from the node.
- The code runs as module `solution` (its `if __name__ == "__main__":` part does not run). Each
  test source runs in a namespace seeded with the solution's names, so tests may call the code's
  functions directly, `from solution import ...`, or import it under the name they expect (a
  missing module imported by the tests is the solution).
- Test units: top-level `assert` statements (each one a unit, run in order with the statements
  around them), `test*` functions, and `test*` methods written in `Test*` classes
  (`unittest.TestCase` or plain), in source order; `async` tests run under asyncio;
  `@pytest.mark.parametrize` cases run one by one (when pytest is importable in the child). Test
  functions that need other arguments (pytest fixtures) cannot run here and are reported as not run. A
  failing `assert a == b` reports both values (a tiny assertion rewrite; no pytest in the child).
  The code's own `test*` functions count too, unless they need arguments (then they are helpers,
  `test_prime(n)`); the code's top-level asserts are part of the program, run when it loads.

Outcomes: PASS when every unit ran and passed ("3 tests passed"); FAIL ("failing unit test", "code
does not run", "timeout", "memory limit", "output limit", "file size limit") with the failing
test's message; NOT_APPLICABLE without code, without tests ("code found, but no unit tests to run;
not decided"), when a test could not run, when the code needs what the sandbox refuses (the network,
a subprocess) or a module the interpreter lacks. The error type of a failure is LOGICAL: the program
is the node's reasoning written as code, and a wrong result from the given inputs is an invalid
inference, not a false fact about the world.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import inspect
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any

from trust.auditors.base import AuditRequest, CheckResult, Outcome, node_text
from trust.core.graphs.cig import AgentTurn
from trust.core.graphs.refinement import ErrorType
from trust.errors import ConfigError
from trust.settings import SandboxSettings

__all__ = [
    "CHECK_NAME",
    "Program",
    "Refusal",
    "RunReason",
    "RunResult",
    "SandboxCheck",
    "SandboxLayer",
    "TestSource",
    "find_program",
    "run_python",
    "sandbox_layers",
]

CHECK_NAME = "sandbox"

OPEN_FILES = 256
"""RLIMIT_NOFILE of the child: enough for imports and a few files, not for a descriptor flood."""
RECORD_BYTES = 4 * 1024 * 1024
"""The most the child may send on its report channel (sandbox events, test results); then it is cut
and killed like an endless print loop."""
READ_CHUNK_BYTES = 64 * 1024
MAX_REFUSALS_REPORTED = 20
"""Refusals reported to the parent per run; the rest are still refused, only not reported."""
MAX_MESSAGE_CHARS = 1_000
"""A failure message, a value's repr or a source line sent back by the child is cut to this length."""
DETAIL_FAILURES = 3
"""Failing tests quoted in a check's detail; the rest are counted."""
STDERR_TAIL_CHARS = 600
"""How much of the child's stderr a "code does not run" detail quotes (its end: the traceback)."""
PROBE_TIMEOUT_SECONDS = 10.0
"""How long the one-time probe of the host (unshare, the unprivileged user) may take per attempt."""
DRAIN_SECONDS = 2.0
"""After the child exits, how long to wait for its pipes to close (they close at once unless a
process escaped the group, which the audit hook refuses)."""
CPU_HARD_MARGIN_SECONDS = 1
"""The hard CPU limit lies this far above the soft one: SIGXCPU first, SIGKILL if it is ignored."""
UNPRIVILEGED_USER = "nobody"
UNPRIVILEGED_ID_FALLBACK = 65534
"""The uid and gid of `nobody` on most Linux systems, used when the password database has no entry."""
AF_UNIX = 1
"""socket.AF_UNIX on Linux (the audit hook compares raw family numbers)."""
EFBIG = 27
"""errno "File too large" on Linux: a write past RLIMIT_FSIZE."""

MAIN_FILE = "__sandbox_main__.py"
SOLUTION_FILE = "solution.py"
_RESERVED_FILES = frozenset({MAIN_FILE})
_NO_FILES: Mapping[str, str] = MappingProxyType({})


class SandboxLayer(StrEnum):
    """One protective layer of a run (see the module docstring)."""

    RESOURCE_LIMITS = "resource_limits"
    AUDIT_HOOK = "audit_hook"
    NETWORK_NAMESPACE = "network_namespace"
    UNPRIVILEGED_USER = "unprivileged_user"


class RunReason(StrEnum):
    """Why a run ended, most specific first: a limit, a refusal that made the program fail, an
    error, or a clean exit."""

    OK = "ok"  # exit status 0
    ERROR = "error"  # a non-zero exit status (an uncaught exception)
    TIMEOUT = "timeout"  # the wall-clock limit (killed by the parent) or the CPU limit (SIGXCPU)
    MEMORY = "memory"  # the address-space limit: an uncaught MemoryError
    OUTPUT_LIMIT = "output_limit"  # more than output_bytes on stdout or stderr: cut and killed
    FILE_LIMIT = "file_limit"  # a file grew past file_bytes: an uncaught EFBIG
    NETWORK_REFUSED = "network_refused"  # failed after the sandbox refused network access
    PROCESS_REFUSED = "process_refused"  # failed after the sandbox refused a process or a signal
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
    main program), `uncaught` the exception type that ended the program, if any.
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


# ------------------------------------------------------------------------------------ child side
#
# The functions below run in the child, not here: their source is sent to the interpreter
# (`inspect.getsource`), so they import what they use and touch no module global. They are real
# functions so that ruff and mypy read them.


def _child_bootstrap(config: dict[str, Any]) -> None:
    """Runs first in the child (`python -I -c`): limits, the audit hook, then the main program."""
    import _posixsubprocess
    import builtins
    import json
    import os
    import resource
    import sys

    root: str = config["root"]
    report_fd: int = config["report_fd"]
    write = os.write
    dumps = json.dumps
    getcwd = os.getcwd
    getpid = os.getpid
    readlink = os.readlink
    fspath = os.fspath
    refusals_left = [int(config["max_refusals"])]
    max_chars = int(config["max_chars"])

    def send(record: dict[str, Any]) -> None:
        try:
            write(report_fd, (dumps(record, default=repr) + "\n").encode("utf-8", "replace"))
        except (OSError, TypeError, ValueError, RecursionError):
            pass  # the program closed or flooded the channel: it loses its reports, nothing else

    for name, soft, hard in config["rlimits"]:
        which = getattr(resource, name)
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY:
            hard = min(hard, current_hard)
            soft = min(soft, hard)
        resource.setrlimit(which, (soft, hard))

    class SandboxRefused(PermissionError):
        """An operation the sandbox does not allow."""

    class SandboxImportRefused(ImportError):
        """A module the sandbox does not load."""

    for refusal_class in (SandboxRefused, SandboxImportRefused):
        refusal_class.__module__ = "builtins"  # tracebacks name it plainly: "SandboxRefused: ..."
        refusal_class.__qualname__ = refusal_class.__name__

    def show(value: object) -> str:
        try:
            return repr(value)[:max_chars]
        except Exception:  # a hostile __repr__ must not decide what the hook reports
            return "?"

    def refuse(kind: str, event: str, detail: str, error: type[Exception] = SandboxRefused) -> None:
        detail = detail[:max_chars]
        if refusals_left[0] > 0:
            refusals_left[0] -= 1
            send({"sandbox": "refused", "kind": kind, "event": event, "detail": detail})
        raise error(f"the sandbox refuses this ({kind}: {event}{' ' + detail if detail else ''})")

    def refused_fork_exec(*args: object, **kwargs: object) -> None:
        refuse("process", "_posixsubprocess.fork_exec", "")

    # fork_exec raises no audit event: replace it, and refuse loading a fresh copy of the module.
    setattr(_posixsubprocess, "fork_exec", refused_fork_exec)  # noqa: B010 (mypy: a module attribute)

    network_events = frozenset(
        {
            "socket.connect",
            "socket.bind",
            "socket.sendto",
            "socket.sendmsg",
            "socket.getaddrinfo",
            "socket.gethostbyname",
            "socket.gethostbyaddr",
            "socket.getnameinfo",
            "socket.sethostname",
        }
    )
    socket_events = frozenset({"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"})
    process_events = frozenset(
        {
            "os.fork",
            "os.forkpty",
            "os.exec",
            "os.posix_spawn",
            "os.spawn",
            "os.system",
            "os.startfile",
            "os.killpg",
            "subprocess.Popen",
            "pty.spawn",
        }
    )
    introspection_events = frozenset(
        {"gc.get_objects", "gc.get_referrers", "gc.get_referents", "cpython.PyInterpreterState_New"}
    )
    limit_events = frozenset({"resource.setrlimit", "resource.prlimit"})
    refused_modules = frozenset(
        {
            "_ctypes",
            "_posixsubprocess",
            "_xxsubinterpreters",
            "_xxinterpchannels",
            "_testcapi",
            "_testinternalcapi",
            "_testmultiphase",
        }
    )
    # (index of a path argument, index of its dir_fd argument or -1) per event that changes files.
    path_events: dict[str, tuple[tuple[int, int], ...]] = {
        "os.remove": ((0, 1),),
        "os.rmdir": ((0, 1),),
        "os.mkdir": ((0, 2),),
        "os.chmod": ((0, 2),),
        "os.chown": ((0, 3),),
        "os.utime": ((0, 3),),
        "os.truncate": ((0, -1),),
        "os.setxattr": ((0, -1),),
        "os.removexattr": ((0, -1),),
        "os.chflags": ((0, -1),),
        "os.lchflags": ((0, -1),),
        "os.rename": ((0, 2), (1, 3)),
        "os.link": ((0, 2), (1, 3)),
    }
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    writable_devices = ("/dev/null",)
    unix_family = int(config["af_unix"])

    def as_text(path: object) -> str | None:
        try:
            text = fspath(path)  # type: ignore[call-overload]
        except TypeError:
            return None
        if isinstance(text, bytes):
            text = text.decode("utf-8", "surrogateescape")
        return text if isinstance(text, str) else None

    def resolve(path: object, dir_fd: object = -1) -> str | None:
        """The absolute, normalised path (by text only: no lookup the program could influence)."""
        if isinstance(path, int):
            try:
                return readlink(f"/proc/self/fd/{path}")
            except OSError:
                return None
        text = as_text(path)
        if text is None:
            return None
        if not text.startswith("/"):
            base = resolve(dir_fd) if isinstance(dir_fd, int) and dir_fd >= 0 else getcwd()
            if base is None:
                return None
            text = base + "/" + text
        parts: list[str] = []
        for part in text.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if parts:
                    parts.pop()
                continue
            parts.append(part)
        return "/" + "/".join(parts)

    def inside(path: object, dir_fd: object = -1) -> bool:
        where = resolve(path, dir_fd)
        return where is not None and (where == root or where.startswith(root + "/") or where in writable_devices)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            writing = (isinstance(flags, int) and flags & write_flags) or (
                isinstance(mode, str) and any(c in mode for c in "wax+")
            )
            if writing and not isinstance(path, int) and not inside(path):
                refuse("filesystem", event, f"write to {show(path)} outside the sandbox directory")
        elif event == "import":
            if args[0] in refused_modules:
                refuse("native", event, str(args[0]), SandboxImportRefused)
        elif event in network_events:
            refuse("network", event, show(args[1] if event in socket_events else args))
        elif event == "socket.__new__":
            if args[1] != unix_family:
                refuse("network", event, f"socket family {show(args[1])}")
        elif event in process_events:
            refuse("process", event, show(args[:2]))
        elif event == "os.kill":
            if args[0] != getpid():
                refuse("process", event, f"signal {show(args[1])} to process {show(args[0])}")
        elif event in path_events:
            for path_index, fd_index in path_events[event]:
                dir_fd = args[fd_index] if fd_index >= 0 else -1
                if not inside(args[path_index], dir_fd):
                    refuse("filesystem", event, f"{show(args[path_index])} lies outside the sandbox directory")
        elif event == "os.symlink":
            # A link inside may not point outside: later writes through it would look inside.
            source, target, dir_fd = args
            link = resolve(target, dir_fd)
            text = as_text(source)
            pointee = None
            if link is not None and text is not None:
                pointee = resolve(text if text.startswith("/") else link.rsplit("/", 1)[0] + "/" + text)
            if link is None or pointee is None or not inside(link) or not inside(pointee):
                refuse("filesystem", event, f"a link {show(target)} to {show(source)} leaving the sandbox directory")
        elif event.startswith("ctypes."):
            refuse("native", event, "")
        elif event in introspection_events:
            refuse("interpreter", event, "")
        elif event in limit_events:
            refuse("limits", event, show(args))

    sys.dont_write_bytecode = True
    sys.path.insert(0, root)
    sys.addaudithook(hook)
    send({"sandbox": "ready"})

    main = root + "/" + str(config["main"])
    with open(main, "rb") as file:
        code = compile(file.read(), main, "exec")

    def report(record: dict[str, Any]) -> None:
        send({"program": record})

    namespace: dict[str, Any] = {"__name__": "__main__", "__file__": main, "__builtins__": builtins}
    namespace["__sandbox_report__"] = report
    try:
        exec(code, namespace)
    except SystemExit:
        raise
    except BaseException as exc:
        number = getattr(exc, "errno", None)
        send(
            {
                "sandbox": "uncaught",
                "type": type(exc).__name__,
                "errno": number if isinstance(number, int) else None,
            }
        )
        raise


def _test_units(tree: ast.Module, *, in_code: bool = False) -> list[tuple[str, str, int]]:
    """The test units at the top level of a module, in source order, as (kind, name, line): kind
    "assert" (a top-level assert statement), "function" (a `test*` function) or "method" (a `test*`
    method written in a `Test*` class, named "Class.method"). A name defined twice counts once, as
    Python keeps the last definition. `in_code`: the module is the node's code, where top-level
    asserts are part of the program and a `test*` function that needs arguments is a helper (a
    predicate such as `test_prime(n)`), not a test. Runs here (to decide whether there is anything
    to run) and in the child (to run it), so both count alike."""
    import ast

    units: list[tuple[str, str, int]] = []
    seen: set[str] = set()

    def add(kind: str, name: str, line: int) -> None:
        if name not in seen:
            seen.add(name)
            units.append((kind, name, line))

    def is_test(function: ast.stmt, method: bool) -> bool:
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or not function.name.startswith("test"):
            return False
        if not in_code:
            return True
        arguments = function.args
        positional = [*arguments.posonlyargs, *arguments.args][1 if method else 0 :]
        required = len(positional) - len(arguments.defaults)
        return required <= 0 and all(d is not None for d in arguments.kw_defaults)

    for statement in tree.body:
        if isinstance(statement, ast.Assert) and not in_code:
            units.append(("assert", f"assertion at line {statement.lineno}", statement.lineno))
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and is_test(statement, False):
            add("function", statement.name, statement.lineno)
        elif isinstance(statement, ast.ClassDef) and statement.name.startswith("Test"):
            for item in statement.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and is_test(item, True):
                    add("method", f"{statement.name}.{item.name}", item.lineno)
    return units


def _child_run_tests(config: dict[str, Any], report: Callable[[dict[str, Any]], None]) -> None:
    """The unit-test runner, the main program of a `SandboxCheck` run. Loads solution.py as module
    `solution`, then runs each test file's units (see the module docstring), reporting
    {"start": name}, then {"unit": name, "outcome": passed | failed | skipped, ...} per unit, and
    {"done": true} at the end; {"load_error": ...} when the solution itself fails."""
    import ast
    import functools
    import importlib.util
    import inspect
    import operator
    import sys
    import types

    max_chars = int(config["max_chars"])
    sources: dict[str, list[str]] = {}

    def clip(text: str) -> str:
        return text if len(text) <= max_chars else text[:max_chars] + "..."

    def safe_repr(value: object) -> str:
        try:
            return clip(repr(value))
        except BaseException as exc:  # a hostile or broken __repr__ must not break the report
            return f"<repr failed: {type(exc).__name__}>"

    def safe_str(value: object) -> str:
        try:
            return clip(str(value))
        except BaseException as exc:
            return f"<str failed: {type(exc).__name__}>"

    def describe(exc: BaseException) -> dict[str, Any]:
        record: dict[str, Any] = {"error": type(exc).__name__, "message": safe_str(exc)}
        number = getattr(exc, "errno", None)
        if isinstance(number, int):
            record["errno"] = number
        expected = getattr(exc, "trust_expected", None)
        if isinstance(expected, str):
            record["expected"] = clip(expected)
        where = None
        trace = exc.__traceback__
        while trace is not None:
            filename = trace.tb_frame.f_code.co_filename
            if filename in sources:
                where = (filename, trace.tb_lineno)
            trace = trace.tb_next
        if where is not None:
            filename, line = where
            lines = sources[filename]
            record["file"] = filename.rsplit("/", 1)[-1]
            record["line"] = line
            if 0 < line <= len(lines):
                record["source"] = clip(lines[line - 1].strip())
        return record

    comparisons: dict[str, tuple[Callable[[Any, Any], Any], str]] = {
        "Eq": (operator.eq, "=="),
        "NotEq": (operator.ne, "!="),
        "Lt": (operator.lt, "<"),
        "LtE": (operator.le, "<="),
        "Gt": (operator.gt, ">"),
        "GtE": (operator.ge, ">="),
        "In": (lambda a, b: a in b, "in"),
        "NotIn": (lambda a, b: a not in b, "not in"),
        "Is": (operator.is_, "is"),
        "IsNot": (operator.is_not, "is not"),
    }

    class ComparisonFailed(AssertionError):
        """A rewritten `assert left <op> right` that failed; carries both values."""

        trust_expected: str | None = None

    def compare(left: Any, right: Any, op: str, left_source: str, right_source: str, literal: str) -> None:
        function, symbol = comparisons[op]
        if function(left, right):
            return
        failure = ComparisonFailed(
            f"assert {left_source} {symbol} {right_source}: left is {safe_repr(left)}, right is {safe_repr(right)}"
        )
        if op == "Eq" and literal == "right":
            failure.trust_expected = f"{left_source} == {right_source}"
        elif op == "Eq" and literal == "left":
            failure.trust_expected = f"{right_source} == {left_source}"
        raise failure

    def is_literal(node: ast.expr) -> bool:
        try:
            ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
        return True

    class Rewriter(ast.NodeTransformer):
        """`assert a <op> b` (no message, one operator) becomes a call that reports both values."""

        def __init__(self, source: str) -> None:
            self.source = source

        def visit_Assert(self, node: ast.Assert) -> ast.AST:
            test = node.test
            if node.msg is not None or not isinstance(test, ast.Compare) or len(test.ops) != 1:
                return node
            op = type(test.ops[0]).__name__
            if op not in comparisons:
                return node
            left, right = test.left, test.comparators[0]
            literal = ""
            if is_literal(right) and not is_literal(left):
                literal = "right"
            elif is_literal(left) and not is_literal(right):
                literal = "left"
            arguments: list[ast.expr] = [
                left,
                right,
                ast.Constant(op),
                ast.Constant(clip(ast.get_source_segment(self.source, left) or "?")),
                ast.Constant(clip(ast.get_source_segment(self.source, right) or "?")),
                ast.Constant(literal),
            ]
            call = ast.Call(ast.Name("__trust_compare__", ast.Load()), arguments, [])
            return ast.copy_location(ast.Expr(call), node)

    def run_unit(label: str, name: str, action: Callable[[], object]) -> None:
        report({"start": name, "label": label})
        try:
            action()
        except BaseException as exc:
            if type(exc).__name__ in ("SkipTest", "Skipped"):  # unittest, pytest
                report({"unit": name, "label": label, "outcome": "skipped", "reason": safe_str(exc)})
            else:
                report({"unit": name, "label": label, "outcome": "failed", **describe(exc)})
        else:
            report({"unit": name, "label": label, "outcome": "passed"})

    def call_test(function: Callable[[], object]) -> object:
        result = function()
        if inspect.iscoroutine(result):
            import asyncio

            return asyncio.run(result)
        return result

    def required_parameters(function: Callable[..., object]) -> list[str]:
        try:
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):
            return []
        return [
            p.name
            for p in parameters
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]

    def parametrized_cases(function: object) -> list[dict[str, Any]] | None:
        """The argument sets of `@pytest.mark.parametrize` marks (stacked marks multiply), or None."""
        marks = getattr(function, "pytestmark", None)
        if not isinstance(marks, list):
            return None
        cases: list[dict[str, Any]] = [{}]
        found = False
        for mark in marks:
            if getattr(mark, "name", None) != "parametrize" or len(getattr(mark, "args", ())) < 2:
                continue
            found = True
            names, values = mark.args[0], mark.args[1]
            names = [n.strip() for n in names.split(",") if n.strip()] if isinstance(names, str) else list(names)
            rows = []
            for value in values:
                if type(value).__name__ == "ParameterSet":  # pytest.param(...)
                    row = tuple(value.values)
                else:
                    row = tuple(value) if len(names) > 1 else (value,)
                if len(row) != len(names):
                    return None
                rows.append(dict(zip(names, row, strict=True)))
            cases = [{**case, **row} for case in cases for row in rows]
        return cases if found else None

    def run_callable(label: str, name: str, function: object) -> None:
        if not callable(function):
            report({"unit": name, "label": label, "outcome": "skipped", "reason": "not a function"})
            return
        needed = required_parameters(function)
        if not needed:
            run_unit(label, name, lambda: call_test(function))
            return
        cases = parametrized_cases(function)
        if cases is None or not cases or any(set(needed) - set(case) for case in cases):
            reason = f"needs arguments {needed} (pytest fixtures), which this runner does not supply"
            report({"unit": name, "label": label, "outcome": "skipped", "reason": reason})
            return
        for index, case in enumerate(cases):
            run_unit(label, f"{name}[{index}]", functools.partial(call_test, functools.partial(function, **case)))

    def run_method(label: str, name: str, namespace: dict[str, Any]) -> None:
        class_name, method_name = name.split(".", 1)
        cls = namespace.get(class_name)
        if not isinstance(cls, type):
            report({"unit": name, "label": label, "outcome": "skipped", "reason": f"{class_name} is not a class"})
            return
        test_case = next((b for b in cls.__mro__ if b.__module__ == "unittest.case" and b.__name__ == "TestCase"), None)
        if test_case is not None:
            run_unit(label, name, lambda: cls(method_name).debug())
            return
        try:
            instance = cls()
        except BaseException as exc:
            report({"unit": name, "label": label, "outcome": "failed", **describe(exc)})
            return
        run_callable(label, name, getattr(instance, method_name, None))

    def alias_solution(tree: ast.Module, solution: types.ModuleType) -> None:
        """Tests may import the code under the name they expect (`from main import add`)."""
        for statement in tree.body:
            if isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
                names = [a.name for a in statement.names]
                wanted = "." not in statement.module and all(n == "*" or hasattr(solution, n) for n in names)
                candidates = [statement.module] if wanted else []
            elif isinstance(statement, ast.Import):
                candidates = [a.name for a in statement.names if "." not in a.name]
            else:
                continue
            for module_name in candidates:
                if module_name in sys.modules:
                    continue
                try:
                    missing = importlib.util.find_spec(module_name) is None
                except (ImportError, ValueError):
                    missing = True
                if missing:
                    sys.modules[module_name] = solution

    # -- the solution
    solution_path = str(config["solution"])
    solution = types.ModuleType("solution")
    solution.__file__ = solution_path
    sys.modules["solution"] = solution
    try:
        with open(solution_path, encoding="utf-8") as file:
            source = file.read()
        sources[solution_path] = source.splitlines()
        exec(compile(source, solution_path, "exec"), solution.__dict__)
    except BaseException as exc:
        report({"load_error": describe(exc)})
        report({"done": True})
        return
    for kind, name, _ in _test_units(ast.parse(source), in_code=True):
        if kind == "function":
            run_callable("the code", name, solution.__dict__.get(name))
        elif kind == "method":
            run_method("the code", name, solution.__dict__)

    # -- each test file, in its own namespace seeded with the solution's names
    for index, (label, test_path) in enumerate(config["tests"]):
        with open(test_path, encoding="utf-8") as file:
            source = file.read()
        sources[test_path] = source.splitlines()
        tree = ast.parse(source, test_path)
        units = _test_units(tree)
        alias_solution(tree, solution)
        namespace = dict(solution.__dict__)
        namespace.update({"__name__": f"tests_{index}", "__file__": test_path, "__trust_compare__": compare})
        is_assert = [isinstance(statement, ast.Assert) for statement in tree.body]
        tree = ast.fix_missing_locations(Rewriter(source).visit(tree))
        setup_failed = False
        asserts_run = 0
        for statement, unit in zip(tree.body, is_assert, strict=True):
            code = compile(ast.Module([statement], type_ignores=[]), test_path, "exec")
            if unit:
                asserts_run += 1
                name = f"assertion at line {statement.lineno}"
                run_unit(label, name, functools.partial(exec, code, namespace))
                continue
            try:
                exec(code, namespace)
            except BaseException as exc:
                report({"setup_error": describe(exc), "label": label, "not_run": len(units) - asserts_run})
                setup_failed = True
                break
        if setup_failed:
            continue
        for kind, name, _ in units:
            if kind == "function":
                run_callable(label, name, namespace.get(name))
            elif kind == "method":
                run_method(label, name, namespace)
    report({"done": True})


# ----------------------------------------------------------------------------------- parent side


def _source_of(*functions: Callable[..., object]) -> str:
    try:
        parts = [textwrap.dedent(inspect.getsource(function)) for function in functions]
    except (OSError, TypeError) as exc:
        raise ConfigError(
            f"the sandbox cannot read the source of its child code ({exc}); install trust with its .py files"
        ) from exc
    return "from __future__ import annotations\n\n" + "\n\n".join(parts)


@functools.cache
def _bootstrap_source() -> str:
    return _source_of(_child_bootstrap)


@functools.cache
def _runner_source() -> str:
    return _source_of(_test_units, _child_run_tests)


@dataclass(frozen=True, slots=True)
class _Launch:
    """How children start on this host: a command prefix (unshare), the user to run as, the layers."""

    prefix: tuple[str, ...]
    ids: tuple[int, int] | None  # (uid, gid) to drop to, None to keep ours
    layers: tuple[SandboxLayer, ...]


def _unprivileged_ids() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        return UNPRIVILEGED_ID_FALLBACK, UNPRIVILEGED_ID_FALLBACK
    return entry.pw_uid, entry.pw_gid


def _runs(argv: list[str], ids: tuple[int, int] | None) -> bool:
    """Whether `argv` exits 0 in the child's conditions (empty environment, cwd /, as `ids`)."""
    options: dict[str, Any] = {}
    if ids is not None:
        options = {"user": ids[0], "group": ids[1], "extra_groups": []}
    try:
        completed = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env={"LANG": "C.UTF-8"},
            timeout=PROBE_TIMEOUT_SECONDS,
            check=False,
            **options,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return completed.returncode == 0


_NAMESPACE_PROBE = "import socket, sys; sys.exit(0 if [n for _, n in socket.if_nameindex()] == ['lo'] else 3)"


@functools.lru_cache(maxsize=16)
def _launch_for(python: str, euid: int, network_namespace: bool) -> _Launch:
    """Probes the host once per interpreter (cached: which tools and users exist is a fact of the
    host, and a run should not pay for finding it out again): does the interpreter run, can it run
    as `nobody` (when we are root), does `unshare --user --net` work here."""
    if not _runs([python, "-I", "-c", "pass"], None):
        raise ConfigError(
            f"sandbox.python {python!r} does not run (python -I -c pass failed); point it at a Python 3.11 interpreter"
        )
    layers = [SandboxLayer.RESOURCE_LIMITS, SandboxLayer.AUDIT_HOOK]
    ids = None
    if euid == 0:
        candidate = _unprivileged_ids()
        if _runs([python, "-I", "-c", "pass"], candidate):
            ids = candidate
            layers.append(SandboxLayer.UNPRIVILEGED_USER)
    prefix: tuple[str, ...] = ()
    unshare = shutil.which("unshare") if network_namespace else None
    if unshare is not None:
        candidate_prefix = (unshare, "--user", "--net", "--")
        if _runs([*candidate_prefix, python, "-I", "-c", _NAMESPACE_PROBE], ids):
            prefix = candidate_prefix
            layers.append(SandboxLayer.NETWORK_NAMESPACE)
    return _Launch(prefix, ids, tuple(layers))


async def sandbox_layers(limits: SandboxSettings, *, network_namespace: bool = True) -> tuple[SandboxLayer, ...]:
    """The layers a run gets on this host (for the worker's start-up log); probes on first use.
    Raises `ConfigError` when the interpreter does not run."""
    python = limits.python or sys.executable
    launch = await asyncio.to_thread(_launch_for, python, os.geteuid(), network_namespace)
    return launch.layers


def _check_file_names(files: Mapping[str, str]) -> None:
    for name in files:
        parts = Path(name).parts
        if not name or "\0" in name or Path(name).is_absolute() or ".." in parts or not parts:
            raise ValueError(f"sandbox file {name!r}: give a relative path inside the sandbox directory, without '..'")
        if name in _RESERVED_FILES:
            raise ValueError(f"sandbox file {name!r}: the name is reserved for the sandbox's main program")


def _write_files(root: str, files: Mapping[str, str], ids: tuple[int, int] | None) -> None:
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
    """SIGKILL to the child's whole process group (it leads its own session). Also after the child
    exited: its group lives on while any member does, and Linux hands out no pid still in use as a
    group id, so the signal can only reach what the child left behind."""
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


async def run_python(
    code: str,
    limits: SandboxSettings,
    *,
    files: Mapping[str, str] = _NO_FILES,
    network_namespace: bool = True,
) -> RunResult:
    """Runs `code` as the main program of a fresh sandboxed interpreter (see the module docstring)
    and reports how it ended. `files` are written into its directory first (relative path -> text).

    `network_namespace=False` leaves the network to the audit hook alone, as on hosts where unshare
    is refused (for tests of that layer and for measurements). Raises `ConfigError` when the sandbox
    cannot start at all (the interpreter is missing or broken); the program's own failures are a
    `RunResult`, never an exception.
    """
    _check_file_names(files)
    python = limits.python or sys.executable
    launch = await asyncio.to_thread(_launch_for, python, os.geteuid(), network_namespace)
    with tempfile.TemporaryDirectory(prefix="trust-sandbox-") as directory:
        root = os.path.realpath(directory)
        _write_files(root, {**files, MAIN_FILE: code}, launch.ids)
        return await _run(python, root, launch, limits)


async def _run(python: str, root: str, launch: _Launch, limits: SandboxSettings) -> RunResult:
    read_fd, write_fd = os.pipe()
    config = {
        "root": root,
        "report_fd": write_fd,
        "main": MAIN_FILE,
        "max_refusals": MAX_REFUSALS_REPORTED,
        "max_chars": MAX_MESSAGE_CHARS,
        "af_unix": AF_UNIX,
        "rlimits": [
            ("RLIMIT_CPU", limits.cpu_seconds, limits.cpu_seconds + CPU_HARD_MARGIN_SECONDS),
            ("RLIMIT_AS", limits.memory_bytes, limits.memory_bytes),
            ("RLIMIT_FSIZE", limits.file_bytes, limits.file_bytes),
            ("RLIMIT_NOFILE", OPEN_FILES, OPEN_FILES),
            ("RLIMIT_CORE", 0, 0),
        ],
    }
    argv = [*launch.prefix, python, "-I", "-c", f"{_bootstrap_source()}\n\n_child_bootstrap({config!r})\n"]
    options: dict[str, Any] = {}
    if launch.ids is not None:
        options = {"user": launch.ids[0], "group": launch.ids[1], "extra_groups": []}
    started = time.monotonic()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=root,
            env={"HOME": root, "TMPDIR": root, "LANG": "C.UTF-8"},
            start_new_session=True,
            pass_fds=(write_fd,),
            **options,
        )
    except OSError as exc:
        os.close(read_fd)
        raise ConfigError(f"the sandbox could not start {argv[0]!r}: {exc}; check sandbox.python ({python!r})") from exc
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
        _kill_group(process)  # anything left in the group (nothing, unless the hook was bypassed)
        with contextlib.suppress(TimeoutError):
            # Only a process that left the group could hold the pipes open longer: then keep what
            # arrived and stop reading (the finally block cancels the readers).
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

    return _result(returncode, killed_for, wall_seconds, out, err, bytes(data.kept), launch, limits, python)


def _result(
    returncode: int,
    killed_for: RunReason | None,
    wall_seconds: float,
    out: _Capped,
    err: _Capped,
    data: bytes,
    launch: _Launch,
    limits: SandboxSettings,
    python: str,
) -> RunResult:
    records = _parse_records(data)
    sandbox = [r for r in records if "sandbox" in r]
    if not any(r.get("sandbox") == "ready" for r in sandbox):
        why = (
            f"did not get ready within {limits.timeout_seconds:g} s"
            if killed_for is RunReason.TIMEOUT
            else f"exited with status {returncode} before running the program"
        )
        message = _decode(err.kept)[-STDERR_TAIL_CHARS:].strip() or "no message"
        raise ConfigError(
            f"the sandbox interpreter {python!r} {why}: {message}; "
            f"check sandbox.python and raise sandbox.memory_bytes ({limits.memory_bytes}) if it is too small to start"
        )
    refusals = tuple(
        Refusal(str(r.get("kind", "")), str(r.get("event", "")), str(r.get("detail", "")))
        for r in sandbox
        if r.get("sandbox") == "refused"
    )
    uncaught_record = next((r for r in sandbox if r.get("sandbox") == "uncaught"), None)
    uncaught = str(uncaught_record.get("type")) if uncaught_record else None
    signal_number = -returncode if returncode < 0 else None
    cpu_exceeded = signal_number == signal.SIGXCPU
    if killed_for is not None:
        reason = killed_for
    elif cpu_exceeded:
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


# ------------------------------------------------------------------------------- code and tests

_PYTHON_LANGUAGES = frozenset({"python", "py", "python3", "py3"})
_TESTS_WORD = re.compile(r"(tests?|unit-?tests?|pytest|test_\w*\.py|\w*_test\.py)", re.IGNORECASE)
_TESTS_HEADER = re.compile(r"#\s*(unit[\s-]*)?tests?\b", re.IGNORECASE)
_OPENING_FENCE = re.compile(r"(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)")
_CLOSING_FENCE = re.compile(r" {0,3}(?P<fence>`{3,}|~{3,})\s*")


@dataclass(frozen=True, slots=True)
class TestSource:
    """Unit tests from one place: `label` says where ("this node", "parent 'task'", "the turn's input")."""

    __test__ = False  # not a pytest test class, despite its name

    label: str
    source: str


@dataclass(frozen=True, slots=True)
class Program:
    """What a segment gives the sandbox: the node's code (its Python blocks, joined; "" when none)
    and the tests that apply to it."""

    code: str
    code_blocks: int
    tests: tuple[TestSource, ...]


@dataclass(frozen=True, slots=True)
class _Block:
    body: str
    is_tests: bool


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """The fenced code blocks of a Markdown text, as (info string, body): CommonMark fences of three
    or more backticks or tildes, indented at most three spaces; an unclosed fence runs to the end."""
    lines = text.splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        opening = _OPENING_FENCE.fullmatch(lines[index])
        index += 1
        if opening is None or (opening["fence"][0] == "`" and "`" in opening["info"]):
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        body = []
        while index < len(lines):
            closing = _CLOSING_FENCE.fullmatch(lines[index])
            if closing and closing["fence"][0] == fence[0] and len(closing["fence"]) >= len(fence):
                index += 1
                break
            line = lines[index]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
            index += 1
        blocks.append((opening["info"].strip(), "\n".join(body)))
    return blocks


def _only_tests(body: str) -> bool:
    """A block that holds nothing but tests: imports, asserts, test* functions, Test* classes, calls
    of tests or print, docstrings, and an `if __name__ == "__main__":` block; at least one unit."""
    try:
        tree = ast.parse(body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for statement in tree.body:
        if isinstance(statement, ast.Import | ast.ImportFrom | ast.Assert):
            continue
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and statement.name.startswith("test"):
            continue
        if isinstance(statement, ast.ClassDef) and statement.name.startswith("Test"):
            continue
        if isinstance(statement, ast.Expr):
            value = statement.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                continue
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and (value.func.id.startswith("test") or value.func.id == "print")
            ):
                continue
        if (
            isinstance(statement, ast.If)
            and isinstance(statement.test, ast.Compare)
            and isinstance(statement.test.left, ast.Name)
            and statement.test.left.id == "__name__"
        ):
            continue
        return False
    return bool(_test_units(tree))


def _python_blocks(text: str) -> list[_Block]:
    blocks = []
    for info, body in _fenced_blocks(text):
        words = info.strip("{} ").split()  # "python tests", "{.python}"
        if words:
            words[0] = words[0].lstrip(".")
        if not words or words[0].lower() not in _PYTHON_LANGUAGES or not body.strip():
            continue
        first_line = next(line.strip() for line in body.splitlines() if line.strip())
        if first_line.startswith(">>>"):
            continue  # a REPL transcript, not a program
        is_tests = (
            any(_TESTS_WORD.fullmatch(word.rsplit("=", 1)[-1].strip("\"',;:")) for word in words[1:])
            or _TESTS_HEADER.match(first_line) is not None
            or _only_tests(body)
        )
        blocks.append(_Block(body, is_tests))
    return blocks


def find_program(request: AuditRequest) -> Program:
    """The node's code and the unit tests that apply to it (the convention is in the module docstring)."""
    own = _python_blocks(request.text)
    code = [block.body for block in own if not block.is_tests]
    tests = []
    for parent in request.parents:
        parent_tests = [block.body for block in _python_blocks(node_text(parent)) if block.is_tests]
        if parent_tests:
            tests.append(TestSource(f"parent {parent.id!r}", "\n\n".join(parent_tests)))
    if isinstance(request.node, AgentTurn) and request.node.input:
        input_tests = [block.body for block in _python_blocks(request.node.input) if block.is_tests]
        if input_tests:
            tests.append(TestSource("the turn's input", "\n\n".join(input_tests)))
    own_tests = [block.body for block in own if block.is_tests]
    if own_tests:
        tests.append(TestSource("this node", "\n\n".join(own_tests)))
    return Program("\n\n".join(code), len(code), tuple(tests))


# ------------------------------------------------------------------------------------ the check

_MEMORY_ERRORS = frozenset({"MemoryError"})
_REFUSAL_ERRORS = frozenset({"SandboxRefused", "SandboxImportRefused"})
_REFUSAL_TEXT = "the sandbox refuses this"


def _fail(fault: str, detail: str, expected: str | None = None) -> CheckResult:
    return CheckResult(CHECK_NAME, Outcome.FAIL, detail, fault, ErrorType.LOGICAL, expected)


def _undecided(detail: str) -> CheckResult:
    return CheckResult(CHECK_NAME, Outcome.NOT_APPLICABLE, detail)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _error_kind(record: Mapping[str, Any]) -> str:
    """What a reported exception means for the verdict: refused, missing_module, memory, file_limit
    or failure (a genuine failure of the code)."""
    error = str(record.get("error", ""))
    if error in _REFUSAL_ERRORS or _REFUSAL_TEXT in str(record.get("message", "")):
        return "refused"
    if error == "ModuleNotFoundError":
        return "missing_module"
    if error in _MEMORY_ERRORS:
        return "memory"
    if record.get("errno") == EFBIG:
        return "file_limit"
    return "failure"


_FAULTS = {"memory": "memory limit", "file_limit": "file size limit", "failure": "failing unit test"}


def _describe_error(record: Mapping[str, Any]) -> str:
    error = str(record.get("error", "error"))
    if error == "ComparisonFailed":
        error = "AssertionError"
    message = str(record.get("message", ""))
    text = f"{error}: {message}" if message else error
    source = record.get("source")
    if source and str(source) not in message:
        where = "the code" if record.get("file") == SOLUTION_FILE else "the tests"
        text += f" (line {record.get('line', '?')} of {where}: {source})"
    return text


def _quote(failures: list[tuple[str, Mapping[str, Any]]]) -> str:
    """The first few distinct failures, each with the tests that failed that way."""
    grouped: dict[str, list[str]] = {}
    for name, record in failures:
        grouped.setdefault(_describe_error(record), []).append(name)
    quoted = []
    for description, names in list(grouped.items())[:DETAIL_FAILURES]:
        shown = ", ".join(names[:DETAIL_FAILURES])
        if len(names) > DETAIL_FAILURES:
            shown += f" and {len(names) - DETAIL_FAILURES} more"
        quoted.append(f"{shown}: {description}")
    if len(grouped) > DETAIL_FAILURES:
        quoted.append(f"and {len(grouped) - DETAIL_FAILURES} other failures")
    return "; ".join(quoted)


class SandboxCheck:
    """Runs the unit tests a segment carries against the code it carries (the module docstring has
    the convention and the outcomes). One sandboxed process per check."""

    def __init__(self, limits: SandboxSettings, *, network_namespace: bool = True) -> None:
        self.limits = limits
        self.network_namespace = network_namespace

    @property
    def name(self) -> str:
        return CHECK_NAME

    async def check(self, request: AuditRequest) -> CheckResult:
        program = find_program(request)
        if not program.code:
            return _undecided("no Python code block in this node; nothing to run")
        no_tests = _undecided("code found, but no unit tests to run; not decided")
        try:
            code_units = _test_units(ast.parse(program.code, SOLUTION_FILE), in_code=True)
        except SyntaxError as exc:
            if not program.tests:  # maybe a fragment shown in prose; only tests make it a program
                return no_tests
            where = f" at line {exc.lineno} of the code" if exc.lineno else ""
            return _fail("code does not run", f"the code does not parse: {type(exc).__name__}: {exc.msg}{where}")
        except ValueError as exc:  # null bytes in the source
            return _fail("code does not run", f"the code does not parse: {exc}") if program.tests else no_tests
        except (RecursionError, MemoryError):
            return _undecided("the code is too deeply nested to parse here; not decided")
        if not program.tests and not code_units:
            return no_tests
        expected_units = len(code_units)
        files = {SOLUTION_FILE: program.code}
        test_files = []
        for index, tests in enumerate(program.tests):
            try:
                expected_units += len(_test_units(ast.parse(tests.source)))
            except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
                return _undecided(f"the unit tests of {tests.label} do not parse ({exc}); not decided")
            name = f"tests_{index}.py"
            files[name] = tests.source
            test_files.append((tests.label, name))
        if expected_units == 0:
            return _undecided("code found, but no unit tests to run; not decided")
        config = {"solution": SOLUTION_FILE, "tests": test_files, "max_chars": MAX_MESSAGE_CHARS}
        main = f"{_runner_source()}\n\n_child_run_tests({config!r}, __sandbox_report__)\n"
        result = await run_python(main, self.limits, files=files, network_namespace=self.network_namespace)
        return _verdict(result, expected_units, self.limits)


def _verdict(result: RunResult, expected_units: int, limits: SandboxSettings) -> CheckResult:
    """The check's answer from what the runner reported (see the module docstring)."""
    records = result.records
    load_error = next((r["load_error"] for r in records if isinstance(r.get("load_error"), dict)), None)
    if load_error is not None:
        kind = _error_kind(load_error)
        text = _describe_error(load_error)
        if kind == "refused":
            return _undecided(f"the code needs what the sandbox refuses: {text}; not decided")
        if kind == "missing_module":
            return _undecided(f"the code needs a module this interpreter lacks: {text}; not decided")
        return _fail("code does not run" if kind == "failure" else _FAULTS[kind], text)

    units = [r for r in records if "unit" in r and "outcome" in r]
    setup_errors = [r for r in records if isinstance(r.get("setup_error"), dict)]
    done = any(r.get("done") is True for r in records)
    passed = [u for u in units if u["outcome"] == "passed"]
    skipped = [u for u in units if u["outcome"] == "skipped"]
    failures = [(f"{u['unit']} [{u.get('label', '?')}]", u) for u in units if u["outcome"] == "failed"]
    failures += [(f"the setup of the tests [{r.get('label', '?')}]", r["setup_error"]) for r in setup_errors]
    not_run = sum(int(r.get("not_run", 0)) for r in setup_errors)
    total = max(expected_units, len(units) + not_run)

    genuine = [(name, record) for name, record in failures if _error_kind(record) not in ("refused", "missing_module")]
    if genuine:
        detail = f"{len(genuine)} of {_plural(total, 'test')} failed: {_quote(genuine)}"
        if not done:
            detail += f"; then the run ended ({_ending(result, limits, records)})"
        first = genuine[0][1]
        expected = first.get("expected")
        return _fail(_FAULTS[_error_kind(first)], detail, str(expected) if expected else None)

    if not done:
        ending = _ending(result, limits, records)
        progress = f"{_plural(len(passed), 'test')} of {total} passed before"
        if result.reason is RunReason.TIMEOUT:
            return _fail("timeout", f"{ending}; {progress}")
        if result.reason is RunReason.MEMORY:
            return _fail("memory limit", f"{ending}; {progress}")
        if result.reason is RunReason.OUTPUT_LIMIT:
            return _fail("output limit", f"{ending}; {progress}")
        if result.reason is RunReason.FILE_LIMIT:
            return _fail("file size limit", f"{ending}; {progress}")
        if result.reason in (RunReason.NETWORK_REFUSED, RunReason.PROCESS_REFUSED, RunReason.OPERATION_REFUSED):
            return _undecided(f"{ending}; not decided")
        return _fail("code does not run", f"{ending}; {progress}")

    if failures:  # every failure came from a refusal or a missing module
        cause = (
            f"the code needs what the sandbox refuses ({result.refusals[0]})"
            if result.refusals and _error_kind(failures[0][1]) == "refused"
            else _quote(failures)
        )
        return _undecided(
            f"{_plural(len(passed), 'test')} passed, {len(failures)} could not run here: {cause}; not decided"
        )
    if skipped:
        reasons = "; ".join(f"{u['unit']}: {u.get('reason', '')}" for u in skipped[:DETAIL_FAILURES])
        return _undecided(
            f"{_plural(len(passed), 'test')} passed, {len(skipped)} could not run ({reasons}); not decided"
        )
    if not passed:
        return _undecided("no unit test ran; not decided")
    detail = f"{_plural(len(passed), 'test')} passed"
    contacts = [r for r in result.refusals if r.kind in _REFUSAL_REASONS]
    if contacts:
        detail += f" (the code tried, and was refused: {contacts[0]})"
    return CheckResult(CHECK_NAME, Outcome.PASS, detail)


def _ending(result: RunResult, limits: SandboxSettings, records: tuple[Mapping[str, Any], ...]) -> str:
    """How a run that did not finish its tests ended, naming the test that was running."""
    finished = {(r.get("unit"), r.get("label")) for r in records if "unit" in r}
    running = [r for r in records if "start" in r and (r.get("start"), r.get("label")) not in finished]
    where = f" in {running[-1]['start']} [{running[-1].get('label', '?')}]" if running else ""
    if result.reason is RunReason.TIMEOUT:
        if result.killed_by_signal == signal.SIGXCPU:
            return f"the CPU limit of {limits.cpu_seconds} s was reached{where}"
        return f"the time limit of {limits.timeout_seconds:g} s was reached{where}"
    if result.reason is RunReason.MEMORY:
        return f"the memory limit of {limits.memory_bytes} bytes was reached{where}"
    if result.reason is RunReason.OUTPUT_LIMIT:
        return f"the program wrote more than {limits.output_bytes} bytes to stdout or stderr{where}"
    if result.reason is RunReason.FILE_LIMIT:
        return f"a file grew past the limit of {limits.file_bytes} bytes{where}"
    if result.refusals and result.reason is not RunReason.OK:
        return f"the code needs what the sandbox refuses: {result.refusals[0]}{where}"
    status = (
        f"signal {signal.Signals(result.killed_by_signal).name}"
        if result.killed_by_signal is not None
        else f"exit status {result.exit_code}"
    )
    tail = result.stderr[-STDERR_TAIL_CHARS:].strip()
    return f"the process ended with {status}{where}" + (f": {tail}" if tail else "")
