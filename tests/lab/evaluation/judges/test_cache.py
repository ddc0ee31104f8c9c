"""The answer cache: what it stores, what it keys on, and how it survives an interrupted run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trust.core.chat import ChatMessage
from trust.errors import ConfigError
from trust.lab.evaluation.judges.cache import AnswerCache, default_cache_path, prompt_key
from trust.lab.evaluation.sample import evenly_spaced

MESSAGES = [ChatMessage("system", "judge"), ChatMessage("user", "is step 3 wrong?")]


def test_answers_persist_across_runs(tmp_path: Path) -> None:
    path = default_cache_path(tmp_path)
    assert path == tmp_path / "eval" / "judge-answers.jsonl"
    key = prompt_key(MESSAGES, temperature=0.0, max_tokens=1024)
    with AnswerCache(path) as cache:
        assert cache.get("m", "critic", key) is None
        cache.put("m", "critic", key, "\\boxed{2}")
    with AnswerCache(path) as cache:
        assert cache.loaded == 1
        assert cache.get("m", "critic", key) == "\\boxed{2}"
        # Another model or another method never gets this answer.
        assert cache.get("other", "critic", key) is None and cache.get("m", "all-at-once", key) is None


def test_the_key_covers_messages_and_sampling() -> None:
    base = prompt_key(MESSAGES, temperature=0.0, max_tokens=1024)
    assert base == prompt_key(list(MESSAGES), temperature=0.0, max_tokens=1024)
    assert base != prompt_key(MESSAGES, temperature=0.7, max_tokens=1024)
    assert base != prompt_key(MESSAGES, temperature=0.0, max_tokens=64)
    assert base != prompt_key([ChatMessage("user", "judge"), MESSAGES[1]], temperature=0.0, max_tokens=1024)
    assert base != prompt_key(MESSAGES[1:], temperature=0.0, max_tokens=1024)


def test_a_line_cut_by_a_crash_is_dropped_and_the_file_repaired(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    with AnswerCache(path) as cache:
        cache.put("m", "critic", "k1", "first")
    with path.open("a", encoding="utf-8") as handle:  # what a kill in the middle of a write leaves
        handle.write('{"model": "m", "method": "critic", "prompt_sha256": "k2", "ans')
    with AnswerCache(path) as cache:
        assert cache.loaded == 1 and cache.get("m", "critic", "k2") is None
        cache.put("m", "critic", "k2", "second")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["answer"] for line in lines] == ["first", "second"]


def test_a_broken_line_inside_the_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text('{"model": "m", "method": "x", "prompt_sha256": "k", "answer": "a"}\nnot json\n{}\n')
    with pytest.raises(ConfigError, match=r"answers\.jsonl: line 2: not JSON"):
        AnswerCache(path).__enter__()
    path.write_text('{"model": "m", "method": "x", "prompt_sha256": "k"}\n')
    with pytest.raises(ConfigError, match=r"line 1: expected an object with string fields"):
        AnswerCache(path).__enter__()


def test_put_outside_the_context_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not open"):
        AnswerCache(tmp_path / "a.jsonl").put("m", "x", "k", "a")


def test_limit_spreads_the_subset_over_the_whole_order() -> None:
    items = list(range(10))
    assert (
        evenly_spaced(items, None) == items and evenly_spaced(items, 10) == items and evenly_spaced(items, 99) == items
    )
    assert evenly_spaced(items, 1) == [0]
    assert evenly_spaced(items, 2) == [0, 5]
    assert evenly_spaced(items, 4) == [0, 2, 5, 7]
    # A file sorted by label (erroneous items first, as ProcessBench's) still gives both kinds.
    labels = [1] * 6 + [-1] * 4
    assert set(evenly_spaced(labels, 4)) == {1, -1}
    with pytest.raises(ConfigError, match="--limit 0"):
        evenly_spaced(items, 0)
