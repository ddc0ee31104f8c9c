"""The on-disk cache of judge answers, so that an interrupted evaluation resumes where it stopped.

A judging method asks a model many questions (step-by-step asks one per turn of a log); on a slow
endpoint a full split takes hours, and a run stopped halfway must not pay again for the answers it
already has. Every answer is appended, as soon as it arrives, to a JSON-lines file, one object a
line: `{"model", "method", "prompt_sha256", "answer"}`. The key is (model, method, prompt hash):
the hash covers every message and every sampling parameter sent (`prompt_key`), so a changed
prompt, temperature or length limit is a new question, and an answer of one model is never served
for another.

The default file is `<home>/eval/judge-answers.jsonl` (`default_cache_path`). A run killed while
writing leaves at most its last line cut short; that line is dropped on the next load (its question
is simply asked again). A malformed line anywhere else is an error naming the line: the file is
not ours to guess about.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from trust.core.chat import ChatMessage
from trust.errors import ConfigError

__all__ = ["CACHE_FILE", "AnswerCache", "default_cache_path", "prompt_key"]

CACHE_FILE = "judge-answers.jsonl"
_FIELDS = ("model", "method", "prompt_sha256", "answer")


def default_cache_path(home: Path) -> Path:
    """`<home>/eval/judge-answers.jsonl`."""
    return home / "eval" / CACHE_FILE


def prompt_key(messages: Sequence[ChatMessage], *, temperature: float, max_tokens: int | None) -> str:
    """The SHA-256 (hex) of the request's content: the messages in order and the sampling parameters."""
    document = {
        "messages": [[message.role, message.content] for message in messages],
        "temperature": temperature,
        "max_tokens": max_tokens,
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class AnswerCache:
    """Answers by (model, method, prompt hash), loaded from and appended to one JSON-lines file.

    Use it as a context manager (the file stays open for appending while the run lasts). One
    process writes a file at a time: two runs sharing a file could interleave half lines.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._answers: dict[tuple[str, str, str], str] = {}
        self._file: IO[str] | None = None
        self.loaded = 0
        """How many answers the file held when it was opened."""

    def __enter__(self) -> AnswerCache:
        self._load()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{self.path}: cannot open the judge cache for writing ({exc.strerror})") from None
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _load(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{self.path}: cannot read the judge cache ({exc}); delete it to start afresh") from None
        lines = text.split("\n")
        # A run killed mid-write leaves one cut line at the end, with no newline after it: drop it,
        # and cut it from the file too, so that the next answer starts on a line of its own.
        if lines and lines[-1] and not text.endswith("\n"):
            try:
                self._read_line(lines[-1], len(lines))
            except ConfigError:
                self._truncate(len(text.encode("utf-8")) - len(lines[-1].encode("utf-8")))
                lines = lines[:-1]
        for number, line in enumerate(lines, start=1):
            if line.strip():
                self._read_line(line, number)
        self.loaded = len(self._answers)

    def _truncate(self, size: int) -> None:
        try:
            with self.path.open("r+b") as handle:
                handle.truncate(size)
        except OSError as exc:
            raise ConfigError(f"{self.path}: cannot drop its cut last line ({exc.strerror})") from None

    def _read_line(self, line: str, number: int) -> None:
        where = f"{self.path}: line {number}"
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not JSON ({exc.msg}); delete the file to start afresh") from None
        if not isinstance(entry, dict) or not all(isinstance(entry.get(field), str) for field in _FIELDS):
            raise ConfigError(
                f"{where}: expected an object with string fields {', '.join(_FIELDS)}; delete the file to start afresh"
            )
        self._answers[(entry["model"], entry["method"], entry["prompt_sha256"])] = entry["answer"]

    def get(self, model: str, method: str, key: str) -> str | None:
        """The stored answer, or None when this question was never answered."""
        return self._answers.get((model, method, key))

    def put(self, model: str, method: str, key: str, answer: str) -> None:
        """Stores an answer and writes it to disk at once (flushed: a crash right after keeps it)."""
        if self._file is None:
            raise ConfigError(f"{self.path}: the judge cache is not open; use it as a context manager")
        self._answers[(model, method, key)] = answer
        entry = dict(zip(_FIELDS, (model, method, key, answer), strict=True))
        self._file.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._file.flush()

    def __len__(self) -> int:
        return len(self._answers)
