"""Runs a segment's unit tests against its code with pytest, inside the sandbox.

pytest collects and runs the tests: `test*` functions, `Test*` classes, `unittest.TestCase`, marks
(parametrize, skip, xfail), fixtures (`tmp_path`, `capsys`, `monkeypatch`, ...), and pytest-timeout
stops a test that runs past `test_timeout_seconds`. This module is the plugin that adds the
project's convention (the check's docstring states it):

- the code (`solution.py`) is loaded first, as module `solution`; a failure there is a load error
  and no test runs. Its own `test*` functions count as tests unless they need arguments (helpers).
- each test file runs in a module seeded with the code's names; a module it imports that does not
  exist is the code (`from main import add`).
- a test file's top-level assert statements are units too, each run in order with the statements
  around them while the module loads (as Python would), each under the same per-test time limit.
- `assert a <op> b` (no message, one comparison) reports both values and, for `==` against a
  literal, the statement that would hold (the check's "expected").
- `async def` tests run under asyncio.

It reports to the parent, one record per event: {"start": name, "label": ...} when a unit starts;
{"unit": name, "label": ..., "outcome": passed | failed | skipped, ...} when it ends;
{"setup_error": ..., "label": ..., "not_run": n} when a test file fails to load; {"load_error": ...}
when the code fails to load; {"runner_error": exit code} when pytest itself fails; {"done": true}
at the end.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import inspect
import operator
import os
import signal
import sys
import types
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from .config import ChildConfig
from .units import assertion_name, test_units

__all__ = ["ComparisonFailed", "UnitTimeout", "pytest_arguments", "run_tests"]

Report = Callable[[dict[str, Any]], None]

SOLUTION_MODULE = "solution"
CODE_LABEL = "the code"
TIMEOUT_MARK = "from pytest-timeout"
"""pytest-timeout's failure message ends so ("Timeout (>2.0s) from pytest-timeout.")."""
UNUSED_PLUGINS = (
    "cacheprovider",
    "doctest",
    "faulthandler",
    "junitxml",
    "legacypath",
    "pastebin",
    "setuponly",
    "setupplan",
    "stepwise",
    "threadexception",
    "unraisableexception",
)
"""pytest's own plugins that a sandboxed run has no use for, blocked because each costs start-up time
(the last two collect garbage at every end of session: tens of milliseconds)."""
_STASH = pytest.StashKey["ConventionPlugin"]()


class ComparisonFailed(AssertionError):
    """A rewritten `assert left <op> right` that failed; carries both values and, for `==` against
    a literal, the statement that would hold (`trust_expected`)."""

    def __init__(self, message: str, expected: str | None) -> None:
        super().__init__(message)
        self.trust_expected = expected


class UnitTimeout(Exception):
    """A top-level assertion ran past the per-test time limit (pytest-timeout covers the rest)."""


_COMPARISONS: dict[str, tuple[Callable[[Any, Any], Any], str]] = {
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


class _Text:
    """Cuts what is sent to the parent, and survives hostile `__repr__` and `__str__`."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars

    def clip(self, text: str) -> str:
        return text if len(text) <= self.max_chars else text[: self.max_chars] + "..."

    def repr(self, value: object) -> str:
        try:
            return self.clip(repr(value))
        except BaseException as exc:  # a broken __repr__ must not break the report
            return f"<repr failed: {type(exc).__name__}>"

    def str(self, value: object) -> str:
        try:
            return self.clip(str(value))
        except BaseException as exc:
            return f"<str failed: {type(exc).__name__}>"


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


class _CompareRewriter(ast.NodeTransformer):
    """`assert a <op> b` (no message, one operator) becomes `__trust_compare__(a, b, ...)`, which
    raises `ComparisonFailed` with both values when the comparison does not hold."""

    def __init__(self, source: str, text: _Text) -> None:
        self.source = source
        self.text = text

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        test = node.test
        if node.msg is not None or not isinstance(test, ast.Compare) or len(test.ops) != 1:
            return node
        op = type(test.ops[0]).__name__
        if op not in _COMPARISONS:
            return node
        left, right = test.left, test.comparators[0]
        literal = ""
        if _is_literal(right) and not _is_literal(left):
            literal = "right"
        elif _is_literal(left) and not _is_literal(right):
            literal = "left"
        arguments: list[ast.expr] = [
            left,
            right,
            ast.Constant(op),
            ast.Constant(self.text.clip(ast.get_source_segment(self.source, left) or "?")),
            ast.Constant(self.text.clip(ast.get_source_segment(self.source, right) or "?")),
            ast.Constant(literal),
        ]
        call = ast.Call(ast.Name("__trust_compare__", ast.Load()), arguments, [])
        return ast.copy_location(ast.Expr(call), node)


def _top_level_asserts_as_units(tree: ast.Module) -> ast.Module:
    """Each top-level `assert` becomes, at the same lines,

        __trust_start__(line)
        try:
            assert ...
        except BaseException as __trust_error__:
            __trust_failed__(line, __trust_error__)
        else:
            __trust_passed__(line)

    so that it runs where it stands, with module-level semantics, and a failure is reported as
    that unit's instead of ending the module's import."""
    body: list[ast.stmt] = []
    for statement in tree.body:
        if not isinstance(statement, ast.Assert):
            body.append(statement)
            continue
        line = ast.Constant(statement.lineno)

        def call(name: str, *arguments: ast.expr) -> ast.stmt:
            return ast.Expr(ast.Call(ast.Name(name, ast.Load()), list(arguments), []))

        handler = ast.ExceptHandler(
            ast.Name("BaseException", ast.Load()),
            "__trust_error__",
            [call("__trust_failed__", line, ast.Name("__trust_error__", ast.Load()))],
        )
        wrapped = ast.Try([statement], [handler], [call("__trust_passed__", line)], [])
        for node in (call("__trust_start__", line), wrapped):
            body.append(ast.copy_location(node, statement))
    tree.body = body
    return ast.fix_missing_locations(tree)


class ConventionPlugin:
    """The pytest plugin (one per run). Holds what the run learned: the sources of the code and the
    tests (to quote failing lines), the label of each file, and each unit's outcome so far."""

    def __init__(self, config: ChildConfig, solution: types.ModuleType, code_units: set[str], report: Report) -> None:
        self.root = config.root
        self.report = report
        self.text = _Text(config.max_chars)
        self.test_timeout_seconds = config.test_timeout_seconds
        self.solution = solution
        self.solution_file = str(Path(config.root, config.solution))
        self.code_units = code_units
        self.labels = {str(Path(config.root, t.file)): t.label for t in config.tests}
        self.labels[self.solution_file] = CODE_LABEL
        self.sources: dict[str, list[str]] = {}
        self._item_records: dict[str, dict[str, Any]] = {}

    # -- describing failures

    def describe(self, exc: BaseException) -> dict[str, Any]:
        """What the parent needs of an exception: its type and message, errno (EFBIG), the expected
        statement of a failed comparison, and the innermost line of the code or the tests it
        passed through, with that line's source."""
        record: dict[str, Any] = {"error": type(exc).__name__, "message": self.text.str(exc)}
        number = getattr(exc, "errno", None)
        if isinstance(number, int):
            record["errno"] = number
        expected = getattr(exc, "trust_expected", None)
        if isinstance(expected, str):
            record["expected"] = self.text.clip(expected)
        where = None
        trace = exc.__traceback__
        while trace is not None:
            filename = trace.tb_frame.f_code.co_filename
            if filename in self.sources:
                where = (filename, trace.tb_lineno)
            trace = trace.tb_next
        if where is not None:
            filename, line = where
            lines = self.sources[filename]
            record["file"] = Path(filename).name
            record["line"] = line
            if 0 < line <= len(lines):
                record["source"] = self.text.clip(lines[line - 1].strip())
        return record

    def compare(self, left: Any, right: Any, op: str, left_source: str, right_source: str, literal: str) -> None:
        function, symbol = _COMPARISONS[op]
        if function(left, right):
            return
        expected = None
        if op == "Eq" and literal == "right":
            expected = f"{left_source} == {right_source}"
        elif op == "Eq" and literal == "left":
            expected = f"{right_source} == {left_source}"
        raise ComparisonFailed(
            f"assert {left_source} {symbol} {right_source}: "
            f"left is {self.text.repr(left)}, right is {self.text.repr(right)}",
            expected,
        )

    # -- loading the code and the test files

    def load_solution_source(self, source: str) -> None:
        """Runs the code as module `solution` (already in sys.modules, so tests may import it)."""
        self.sources[self.solution_file] = source.splitlines()
        exec(compile(source, self.solution_file, "exec"), self.solution.__dict__)

    def _alias_solution(self, tree: ast.Module) -> None:
        """Tests may import the code under the name they expect (`from main import add`)."""
        for statement in tree.body:
            if isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
                names = [a.name for a in statement.names]
                wanted = "." not in statement.module and all(n == "*" or hasattr(self.solution, n) for n in names)
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
                    sys.modules[module_name] = self.solution

    def load_tests(self, path: Path) -> types.ModuleType:
        """Loads one test file by the convention (the module docstring); a statement that fails
        outside a unit is reported as the file's setup error and re-raised (pytest then records a
        collection error, and the file's remaining tests do not run)."""
        filename = str(path)
        label = self.labels.get(filename, path.name)
        source = path.read_text(encoding="utf-8")
        self.sources[filename] = source.splitlines()
        tree = ast.parse(source, filename)
        units = test_units(tree)
        self._alias_solution(tree)
        tree = ast.fix_missing_locations(_CompareRewriter(source, self.text).visit(_top_level_asserts_as_units(tree)))
        module = types.ModuleType(path.stem)
        module.__file__ = filename
        namespace = module.__dict__
        namespace.update({k: v for k, v in self.solution.__dict__.items() if not k.startswith("__")})
        asserts_run = [0]
        previous_handler: list[Any] = [None]

        def on_alarm(signum: int, frame: object) -> None:
            raise UnitTimeout(f"the test ran past the limit of {self.test_timeout_seconds:g} s per test")

        def start(line: int) -> None:
            asserts_run[0] += 1
            self.report({"start": assertion_name(line), "label": label})
            if self.test_timeout_seconds > 0:
                previous_handler[0] = signal.signal(signal.SIGALRM, on_alarm)
                signal.setitimer(signal.ITIMER_REAL, self.test_timeout_seconds)

        def stop() -> None:
            if self.test_timeout_seconds > 0:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous_handler[0] or signal.SIG_DFL)

        def passed(line: int) -> None:
            stop()
            self.report({"unit": assertion_name(line), "label": label, "outcome": "passed"})

        def failed(line: int, exc: BaseException) -> None:
            stop()
            if isinstance(exc, KeyboardInterrupt):
                raise exc
            record = self.describe(exc)
            if isinstance(exc, UnitTimeout):
                record.update(error="Timeout", timeout=True)
            self.report({"unit": assertion_name(line), "label": label, "outcome": "failed", **record})

        namespace.update(
            {
                "__trust_compare__": self.compare,
                "__trust_start__": start,
                "__trust_passed__": passed,
                "__trust_failed__": failed,
            }
        )
        sys.modules[module.__name__] = module
        try:
            exec(compile(tree, filename, "exec"), namespace)
        except BaseException as exc:
            stop()
            not_run = len(units) - asserts_run[0]
            self.report({"setup_error": self.describe(exc), "label": label, "not_run": not_run})
            raise
        return module

    # -- pytest hooks

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path: Path, parent: pytest.Collector) -> pytest.Module:
        return _ConventionModule.from_parent(parent, path=module_path)

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Keeps the tests written in each file (a test file's namespace also holds the code's
        names) and, of the code's, only its tests (not its `test*` helpers that need arguments)."""
        kept: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            filename = str(item.path)
            if filename == self.solution_file:
                keep = self._unit_name(item).split("[", 1)[0] in self.code_units
            else:
                function = getattr(item, "obj", None)
                code = getattr(inspect.unwrap(function), "__code__", None) if callable(function) else None
                keep = code is None or code.co_filename == filename
            (kept if keep else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """Runs an `async def` test under asyncio (pytest alone refuses them)."""
        function = pyfuncitem.obj
        if not inspect.iscoroutinefunction(function):
            return None
        names = inspect.signature(function).parameters
        arguments = {name: value for name, value in pyfuncitem.funcargs.items() if name in names}
        asyncio.run(function(**arguments))
        return True

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        filename = str(Path(self.root, nodeid.split("::", 1)[0]))
        self.report({"start": self._name_of(nodeid), "label": self.labels.get(filename, filename)})

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Keeps the first phase (setup, call, teardown) that did not pass as the unit's outcome."""
        report = yield
        if item.nodeid in self._item_records:
            return report
        outcome = self._outcome(report, call)
        if outcome is not None:
            self._item_records[item.nodeid] = outcome
        return report

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        filename = str(Path(self.root, nodeid.split("::", 1)[0]))
        record = self._item_records.get(nodeid, {"outcome": "passed"})
        self.report({"unit": self._name_of(nodeid), "label": self.labels.get(filename, filename), **record})

    # -- helpers

    def _outcome(self, report: pytest.TestReport, call: pytest.CallInfo[None]) -> dict[str, Any] | None:
        if report.passed:
            return None
        if report.skipped:
            if hasattr(report, "wasxfail"):
                return {"outcome": "skipped", "reason": f"expected to fail (xfail) {report.wasxfail}".strip()}
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            return {"outcome": "skipped", "reason": self.text.clip(str(reason))}
        excinfo = call.excinfo
        if excinfo is None:
            return {"outcome": "failed", "error": "Error", "message": self.text.clip(str(report.longrepr))}
        exc = excinfo.value
        if type(exc).__name__ == "FixtureLookupError":
            argname = getattr(exc, "argname", None)
            reason = f"needs the fixture {argname!r}, which pytest does not have here"
            return {"outcome": "skipped", "reason": reason}
        record = self.describe(exc)
        if TIMEOUT_MARK in record["message"]:
            record.update(
                error="Timeout",
                message=f"the test ran past the limit of {self.test_timeout_seconds:g} s per test",
                timeout=True,
            )
        return {"outcome": "failed", **record}

    @staticmethod
    def _name_of(nodeid: str) -> str:
        """ "tests_0.py::TestAdd::test_small[1-2]" -> "TestAdd.test_small[1-2]"."""
        return ".".join(nodeid.split("::")[1:]) or nodeid

    def _unit_name(self, item: pytest.Item) -> str:
        return self._name_of(item.nodeid)


class _ConventionModule(pytest.Module):
    """A test module loaded by the convention instead of imported (`ConventionPlugin.load_tests`);
    the code's module is the `solution` already loaded. `_getobj` is the one method pytest's own
    collectors call to get the module object; overriding it keeps everything else (functions,
    classes, fixtures, marks) pytest's. pytest is pinned, and the sandbox tests exercise this."""

    def _getobj(self) -> types.ModuleType:
        plugin = self.config.stash[_STASH]
        if str(self.path) == plugin.solution_file:
            return plugin.solution
        return plugin.load_tests(self.path)


def pytest_arguments(config: ChildConfig) -> list[str]:
    """pytest's command line: quiet (results travel as records, not as text), no capture (what the
    tests print goes to the capped stdout, where an endless print is cut), no plugins but
    pytest-timeout (a worker's environment may hold others), no configuration or conftest.py from
    anywhere, temporary directories inside the run's directory."""
    root = config.root
    return [
        "-q",
        "--capture=no",
        "--tb=no",
        "--no-header",
        "-rN",
        "--disable-plugin-autoload",
        "-p",
        "pytest_timeout",
        *(f"-pno:{name}" for name in UNUSED_PLUGINS),
        f"--timeout={config.test_timeout_seconds:g}",
        "--timeout-method=signal",
        "--noconftest",
        "--continue-on-collection-errors",
        f"--rootdir={root}",
        f"--config-file={os.devnull}",
        f"--basetemp={Path(root, '.pytest-tmp')}",
        str(Path(root, config.solution)),
        *(str(Path(root, t.file)) for t in config.tests),
    ]


def run_tests(config: ChildConfig, report: Report) -> None:
    """Loads the code, runs the tests with pytest, reports (the module docstring)."""
    solution_path = Path(config.root, config.solution)
    source = solution_path.read_text(encoding="utf-8")
    code_units = {unit.name for unit in test_units(ast.parse(source), in_code=True)}
    solution = types.ModuleType(SOLUTION_MODULE)
    solution.__file__ = str(solution_path)
    sys.modules[SOLUTION_MODULE] = solution
    plugin = ConventionPlugin(config, solution, code_units, report)
    try:
        plugin.load_solution_source(source)
    except BaseException as exc:
        report({"load_error": plugin.describe(exc)})
        report({"done": True})
        return
    status = pytest.main(pytest_arguments(config), plugins=[_Stasher(plugin), plugin])
    if status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        report({"runner_error": int(status)})
    report({"done": True})


class _Stasher:
    """Puts the plugin where the module collector finds it (pytest's stash, its public store)."""

    def __init__(self, plugin: ConventionPlugin) -> None:
        self.plugin = plugin

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[_STASH] = self.plugin
