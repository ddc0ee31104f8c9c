"""The sandbox check (paper 3.1.1, Tier 1: "execute code snippets in sandboxed environments"; 2.2.4:
"for code generation, we execute available unit tests").

`SandboxCheck` finds the code and the unit tests a segment carries, runs the tests against the code
with pytest inside the sandbox (`parent.run_tests`, `child.runner`), and answers PASS, FAIL or
NOT_APPLICABLE.

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
  test source runs in a module seeded with the solution's names, so tests may call the code's
  functions directly, `from solution import ...`, or import it under the name they expect (a
  missing module imported by the tests is the solution).
- Test units: top-level `assert` statements (each one a unit, run in order with the statements
  around them), and whatever pytest collects from the test source: `test*` functions, `test*`
  methods of `Test*` classes and `unittest.TestCase` subclasses, each `@pytest.mark.parametrize`
  case, `async` tests (run under asyncio). pytest's fixtures work (`tmp_path`, `capsys`,
  `monkeypatch`, fixtures the tests define); a test that asks for one that does not exist cannot
  run. A failing `assert a == b` reports both values. Each unit runs under `test_timeout_seconds`
  (pytest-timeout). The code's own `test*` functions count too, unless they need arguments (then
  they are helpers, `test_prime(n)`); the code's top-level asserts are part of the program, run
  when it loads.

Outcomes: PASS when every unit ran and passed ("3 tests passed"); FAIL ("failing unit test", "code
does not run", "timeout", "memory limit", "output limit", "file size limit") with the failing
test's message; NOT_APPLICABLE without code, without tests ("code found, but no unit tests to run;
not decided"), when a test could not run (skipped, a missing fixture), when the code needs what the
sandbox refuses (the network, a subprocess) or a module the interpreter lacks, and when the sandbox
is unavailable ("sandbox unavailable: ...": it fails closed, see `parent`). The error type of a
failure is LOGICAL: the program is the node's reasoning written as code, and a wrong result from
the given inputs is an invalid inference, not a false fact about the world.
"""

from __future__ import annotations

import ast
import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trust.auditors.base import AuditRequest, CheckResult, Outcome, node_text
from trust.auditors.checks.sandbox.child.hook import REFUSAL_TEXT
from trust.auditors.checks.sandbox.child.units import test_units
from trust.auditors.checks.sandbox.parent import EFBIG, RunReason, RunResult, run_tests
from trust.core.graphs.cig import AgentTurn
from trust.core.graphs.refinement import ErrorType
from trust.errors import SandboxUnavailable
from trust.settings import SandboxSettings

__all__ = ["CHECK_NAME", "SOLUTION_FILE", "Program", "SandboxCheck", "TestSource", "find_program"]

CHECK_NAME = "sandbox"
SOLUTION_FILE = "solution.py"
DETAIL_FAILURES = 3
"""Failing tests quoted in a check's detail; the rest are counted."""
STDERR_TAIL_CHARS = 600
"""How much of the child's stderr a "code does not run" detail quotes (its end: the traceback)."""

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
    return bool(test_units(tree))


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


def _fail(fault: str, detail: str, expected: str | None = None) -> CheckResult:
    return CheckResult(CHECK_NAME, Outcome.FAIL, detail, fault, ErrorType.LOGICAL, expected)


def _undecided(detail: str) -> CheckResult:
    return CheckResult(CHECK_NAME, Outcome.NOT_APPLICABLE, detail)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _error_kind(record: Mapping[str, Any]) -> str:
    """What a reported exception means for the verdict: refused, missing_module, timeout, memory,
    file_limit or failure (a genuine failure of the code)."""
    error = str(record.get("error", ""))
    if error in _REFUSAL_ERRORS or REFUSAL_TEXT in str(record.get("message", "")):
        return "refused"
    if error == "ModuleNotFoundError":
        return "missing_module"
    if record.get("timeout") is True:
        return "timeout"
    if error in _MEMORY_ERRORS:
        return "memory"
    if record.get("errno") == EFBIG:
        return "file_limit"
    return "failure"


_FAULTS = {
    "timeout": "timeout",
    "memory": "memory limit",
    "file_limit": "file size limit",
    "failure": "failing unit test",
}


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

    def __init__(self, limits: SandboxSettings) -> None:
        self.limits = limits

    @property
    def name(self) -> str:
        return CHECK_NAME

    async def check(self, request: AuditRequest) -> CheckResult:
        program = find_program(request)
        if not program.code:
            return _undecided("no Python code block in this node; nothing to run")
        no_tests = _undecided("code found, but no unit tests to run; not decided")
        try:
            code_units = test_units(ast.parse(program.code, SOLUTION_FILE), in_code=True)
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
        test_files = []
        for index, tests in enumerate(program.tests):
            try:
                expected_units += len(test_units(ast.parse(tests.source)))
            except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
                return _undecided(f"the unit tests of {tests.label} do not parse ({exc}); not decided")
            test_files.append((tests.label, f"tests_{index}.py", tests.source))
        if expected_units == 0:
            return no_tests
        try:
            result = await run_tests(program.code, test_files, self.limits, solution_file=SOLUTION_FILE)
        except SandboxUnavailable as exc:  # fail closed: the code did not run, so nothing is decided
            return _undecided(f"{exc}; not decided")
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
    runner_error = next((r["runner_error"] for r in records if "runner_error" in r), None)
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

    if runner_error is not None:
        return _undecided(f"the test runner failed (pytest exit status {runner_error}); not decided")

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
    contacts = [r for r in result.refusals if r.kind in ("network", "process")]
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
