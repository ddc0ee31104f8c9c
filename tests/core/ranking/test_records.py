"""The readers of match, ranking, win-count and judgment files: the real data files, and every kind of
bad record named by file, record and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core.ranking.pairwise_data import DATA, needs_data
from trust.core.ranking.records import (
    Judgment,
    Match,
    Ranking,
    check_items,
    read_comparisons,
    read_judgments,
    read_matches,
    read_rankings,
)
from trust.errors import RankingError, RecordError


def _lines(path: Path, *records: object) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


@needs_data
def test_the_three_data_files_are_read_by_content() -> None:
    baseball = read_comparisons(DATA / "baseball_1987_al_east.csv")
    assert all(isinstance(m, Match) and m.home == "a" for m in baseball)
    assert sum(m.weight for m in baseball if isinstance(m, Match)) == 7 * 6 * 13 // 2  # 13 games a pair
    nascar = read_comparisons(DATA / "nascar2002.txt")
    assert len(nascar) == 36 and all(isinstance(r, Ranking) for r in nascar)
    assert sum(len(r.ranked) for r in nascar if isinstance(r, Ranking)) == 1543  # three races placed 42
    assert len({d for r in nascar if isinstance(r, Ranking) for d in r.ranked}) == 83
    judgments = read_comparisons(DATA / "vicuna80_judgments.jsonl")
    assert len(judgments) == 15_040 and all(isinstance(j, Judgment) for j in judgments)


def test_a_match_file_with_scores_results_homes_and_seasons(tmp_path: Path) -> None:
    path = _lines(
        tmp_path / "m.jsonl",
        {"time": 1, "a": "x", "b": "y", "score_a": 27, "score_b": 10, "home": "a", "season": 2002},
        "",
        {"time": 2, "a": "y", "b": "x", "result": "tie", "home": None, "season": "2003", "weight": 2.5},
        {"a": "x", "b": "z", "score_a": 1.5, "score_b": 3, "judge": "gpt4"},
    )
    first, second, third = read_matches(path)
    assert (first.result, first.margin, first.home, first.season, first.winner) == (1.0, 17.0, "a", "2002", "x")
    assert (second.tie, second.weight, second.winner, second.margin) == (True, 2.5, None, None)
    assert (third.loser, third.judge) == ("x", "gpt4")
    assert read_comparisons(path) == [first, second, third]


@pytest.mark.parametrize(
    ("record", "line", "field", "problem"),
    [
        ({"a": "x", "b": "x", "result": "a"}, 2, "b", "self-comparison"),
        ({"b": "y", "result": "a"}, 2, "a", "missing"),
        ({"a": "x", "b": "y"}, 2, "score_a", "missing"),
        ({"a": "x", "b": "y", "score_a": 1}, 2, "score_b", "missing"),
        ({"a": "x", "b": "y", "score_a": "NaN", "score_b": 1}, 2, "score_a", "expected a number"),
        ({"a": "x", "b": "y", "score_a": 1e309, "score_b": 1}, 2, "score_a", "finite"),
        ({"a": "x", "b": "y", "result": "won"}, 2, "result", "'a', 'b' or 'tie'"),
        ({"a": "x", "b": "y", "score_a": 3, "score_b": 1, "result": "b"}, 2, "result", "contradicts"),
        ({"a": "x", "b": "y", "result": "a", "home": "x"}, 2, "home", "'a', 'b' or null"),
        ({"a": "x", "b": "y", "result": "a", "weight": -1}, 2, "weight", ">= 0"),
        ({"a": ["x"], "b": "y", "result": "a"}, 2, "a", "string"),
        ({"a": " ", "b": "y", "result": "a"}, 2, "a", "empty"),
        ({"a": "x", "b": "y", "result": "a", "season": [1]}, 2, "season", "string or an integer"),
    ],
)
def test_a_malformed_match_names_its_file_line_and_field(
    tmp_path: Path, record: dict[str, object], line: int, field: str, problem: str
) -> None:
    path = _lines(tmp_path / "m.jsonl", {"a": "x", "b": "y", "result": "a"}, record)
    with pytest.raises(RecordError, match=problem) as raised:
        read_matches(path)
    assert (raised.value.source, raised.value.record, raised.value.field) == (str(path), line, field)
    assert f"record {line}, field {field!r}" in str(raised.value)


def test_lines_that_are_not_objects_and_empty_or_missing_files(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="not JSON") as raised:
        read_matches(_lines(tmp_path / "a.jsonl", {"a": "x", "b": "y", "result": "a"}, "{oops"))
    assert raised.value.record == 2
    with pytest.raises(RecordError, match="JSON object"):
        read_matches(_lines(tmp_path / "b.jsonl", "[1, 2]"))
    (tmp_path / "empty.jsonl").write_text("\n\n", encoding="utf-8")
    for read in (read_matches, read_judgments, read_rankings, read_comparisons):
        with pytest.raises(RankingError, match="no records"):
            read(tmp_path / "empty.jsonl")
    with pytest.raises(RankingError, match="cannot read"):
        read_matches(tmp_path / "absent.jsonl")
    (tmp_path / "binary.jsonl").write_bytes(b"\xff\xfe")
    with pytest.raises(RankingError, match="UTF-8"):
        read_matches(tmp_path / "binary.jsonl")


def test_judgments_and_their_bad_fields(tmp_path: Path) -> None:
    good = {"judge": "gpt4", "first": "p", "second": "q", "question_id": 3, "reviewer_id": 1, "score": 3}
    (judgment,) = read_judgments(_lines(tmp_path / "j.jsonl", good))
    assert (judgment.result, judgment.sign, judgment.as_match().tie) == (0.5, 0, True)
    for field, value, problem in (
        ("score", 4, "1 \\(first better\\)"),
        ("score", True, "1 \\(first better\\)"),
        ("second", "p", "self-comparison"),
        ("reviewer_id", "one", "integer or null"),
        ("question_id", None, "string or an integer"),
    ):
        with pytest.raises(RecordError, match=problem) as raised:
            read_judgments(_lines(tmp_path / "j.jsonl", good, good | {field: value}))
        assert (raised.value.record, raised.value.field) == (2, field)


def test_rankings_from_a_place_table_and_from_json_lines(tmp_path: Path) -> None:
    table = tmp_path / "r.txt"
    table.write_text("DriverID Race Place\n7 1 2\n9 1 1\n4 1 3\n9 2 2\n4 2 1\n", encoding="utf-8")
    first, second = read_rankings(table)
    assert (first.ranked, first.key, first.stages) == (("9", "7", "4"), "1", 2)
    assert second.ranked == ("4", "9")
    lines = _lines(tmp_path / "r.jsonl", {"ranking": ["a", "b"], "unranked": ["c", "d"], "weight": 2})
    (top,) = read_comparisons(lines)
    assert isinstance(top, Ranking) and (top.stages, top.items, top.weight) == (2, ("a", "b", "c", "d"), 2.0)
    for text, problem in (
        ("DriverID Race Place\n7 1 1\n8 1 1\n", "place 1 twice"),
        ("DriverID Race Place\n7 1 1\n7 1 2\n", "placed twice"),
        ("DriverID Race Place\n7 1 first\n", "whole place"),
        ("DriverID Race Place\n7 1 0\n", "start at 1"),
        ("DriverID Race Place\n7 1\n", "3 columns"),
        ("Who When\n7 1\n", "DriverID Race Place"),
    ):
        table.write_text(text, encoding="utf-8")
        with pytest.raises(RecordError, match=problem):
            read_rankings(table)
    with pytest.raises(RecordError, match="twice"):
        read_rankings(_lines(tmp_path / "bad.jsonl", {"ranking": ["a", "b", "a"]}))


def test_win_count_tables(tmp_path: Path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("a,b,wins_a,wins_b\nx,y,3,0\n", encoding="utf-8")
    (match,) = read_comparisons(path)
    assert isinstance(match, Match) and (match.winner, match.weight, match.home) == ("x", 3.0, None)
    path.write_text("a,b,wins_a,wins_b\nx,y,three,0\n", encoding="utf-8")
    with pytest.raises(RecordError, match="count") as raised:
        read_comparisons(path)
    assert (raised.value.record, raised.value.field) == (2, "wins_a")
    path.write_text("p,q\nx,y\n", encoding="utf-8")
    with pytest.raises(RecordError, match="columns"):
        read_comparisons(path)


def test_unknown_items_are_named() -> None:
    records = [Match("x", "y", 1.0), Ranking(("x", "z")), Judgment("j", "x", "w", 1, None, 1)]
    check_items(records, ["x", "y", "z", "w"])
    with pytest.raises(RankingError, match="unknown item\\(s\\): w, z"):
        check_items(records, ["x", "y"])
