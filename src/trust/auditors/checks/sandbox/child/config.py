"""What the parent tells the child, and the channel the child reports on.

The parent passes one JSON object as the child's only argument (`ChildConfig.to_json`); the child
reads it back with `ChildConfig.from_json`. Both sides use this one class, so the two cannot drift.
The child reports on a pipe whose write end it inherits (`report_fd`): one JSON object per line,
read by the parent up to a cap. The audited code can find that descriptor and write to it too: what
arrives is evidence of what happened, never proof (see the check's docstring on gaming).

Plain classes, not dataclasses: this module is imported at every start of the child, and
`dataclasses` (with `inspect` and `typing` behind it) would add tens of milliseconds to each run.
"""

from __future__ import annotations

import json
import os

__all__ = ["ChildConfig", "Channel", "MODE_PROGRAM", "MODE_TESTS", "TestFile"]

MODE_PROGRAM = "program"
"""Run one Python program (`run_python`): the main file, with `__sandbox_report__` in its globals."""
MODE_TESTS = "tests"
"""Run a segment's unit tests against its code with pytest (`SandboxCheck`)."""


class TestFile:
    """One file of tests: `label` says where the tests came from ("this node", "parent 'task'")."""

    __test__ = False  # not a pytest test class, despite its name
    __slots__ = ("file", "label")

    def __init__(self, label: str, file: str) -> None:
        self.label = label
        self.file = file

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TestFile) and (self.label, self.file) == (other.label, other.file)

    def __hash__(self) -> int:
        return hash((self.label, self.file))

    def __repr__(self) -> str:
        return f"TestFile({self.label!r}, {self.file!r})"


class ChildConfig:
    """Everything the child needs, as plain data.

    `root` is the run's directory (the child's cwd, HOME and TMPDIR, the only place it may write);
    `rlimits` holds (RLIMIT_* name, soft, hard) triples; `max_refusals` caps the refusals the audit
    hook reports (the rest are still refused); `max_chars` cuts every message, repr and source line
    the child sends. In MODE_PROGRAM `main` is the program's file; in MODE_TESTS `solution` is the
    code's file and `tests` the test files, run by pytest with `test_timeout_seconds` per test.
    """

    __slots__ = (
        "audit_hook",
        "main",
        "max_chars",
        "max_refusals",
        "mode",
        "report_fd",
        "rlimits",
        "root",
        "solution",
        "test_timeout_seconds",
        "tests",
    )

    def __init__(
        self,
        *,
        mode: str,
        root: str,
        report_fd: int,
        audit_hook: bool,
        rlimits: tuple[tuple[str, int, int], ...],
        max_refusals: int,
        max_chars: int,
        main: str = "",
        solution: str = "",
        tests: tuple[TestFile, ...] = (),
        test_timeout_seconds: float = 0.0,
    ) -> None:
        self.mode = mode
        self.root = root
        self.report_fd = report_fd
        self.audit_hook = audit_hook
        self.rlimits = rlimits
        self.max_refusals = max_refusals
        self.max_chars = max_chars
        self.main = main
        self.solution = solution
        self.tests = tests
        self.test_timeout_seconds = test_timeout_seconds

    def to_json(self) -> str:
        data = {name: getattr(self, name) for name in self.__slots__}
        data["tests"] = [{"label": t.label, "file": t.file} for t in self.tests]
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> ChildConfig:
        data = json.loads(text)
        return cls(
            mode=str(data["mode"]),
            root=str(data["root"]),
            report_fd=int(data["report_fd"]),
            audit_hook=bool(data["audit_hook"]),
            rlimits=tuple((str(n), int(s), int(h)) for n, s, h in data["rlimits"]),
            max_refusals=int(data["max_refusals"]),
            max_chars=int(data["max_chars"]),
            main=str(data["main"]),
            solution=str(data["solution"]),
            tests=tuple(TestFile(str(t["label"]), str(t["file"])) for t in data["tests"]),
            test_timeout_seconds=float(data["test_timeout_seconds"]),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChildConfig) and all(
            getattr(self, name) == getattr(other, name) for name in self.__slots__
        )

    # Equal configurations compare equal; none is ever a dict key, so no hash.
    __hash__ = None  # type: ignore[assignment]


class Channel:
    """The child's side of the report pipe: `send` writes one record as a JSON line and never
    raises (a program that closed or flooded the pipe loses its reports, nothing else)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._write = os.write  # bound now: the audited code may replace os.write later
        self._dumps = json.dumps

    def send(self, record: dict[str, object]) -> None:
        try:
            self._write(self._fd, (self._dumps(record, default=repr) + "\n").encode("utf-8", "replace"))
        except (OSError, TypeError, ValueError, RecursionError):
            pass
