"""The records the ratings are fitted on, and the readers of their files.

Three kinds of evidence, each a frozen dataclass:

- `Match`: two items met and one won, or they tied; optionally with scores (the margin the Elo
  multiplier reads), the home side, the season, a time, a weight and the judge that decided it.
- `Ranking`: an ordering of some items, best first, optionally above a set of `unranked` items
  known to place below all of them (a top-k list), as Plackett-Luce reads it.
- `Judgment`: one judge's verdict on an ordered pair of answers to one question (the Vicuna80
  format of the PRD peer-rank data: score 1 = first better, 2 = second better, 3 = tie).

Files (`read_matches`, `read_rankings`, `read_judgments`; `read_comparisons` picks by content):

- a generic match file, JSON Lines, one object per line:
  `{"time", "a", "b", "score_a", "score_b", "home": "a"|"b"|null, "season"}`; instead of the
  scores a `"result"` of "a", "b" or "tie" (who won) is enough. Optional: `"weight"` (a positive
  count or reputation weight), `"judge"`. Blank lines are skipped; record numbers are line numbers.
- a win-count table, CSV with the columns `home.team, away.team, home.wins, away.wins` (Agresti's
  baseball data) or `a, b, wins_a, wins_b`: each row is two weighted matches.
- a ranking table, whitespace-separated with the header `DriverID Race Place` (Hunter's NASCAR
  data): the rows of one race, sorted by place, are one ranking; or JSON Lines of
  `{"ranking": [...], "unranked": [...], "weight": w}`.
- a judgment file, JSON Lines of `{"judge", "first", "second", "question_id", "reviewer_id",
  "score"}`.

Every malformed record raises `RecordError` naming the file, the record and the field; unknown
items (not in a given universe), self-comparisons, non-finite or negative scores and weights are
malformed.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from trust.errors import ParameterError, RankingError, RecordError

__all__ = [
    "Judgment",
    "Match",
    "Ranking",
    "check_items",
    "item_universe",
    "items_of",
    "item_name",
    "json_lines",
    "read_text",
    "read_comparisons",
    "read_judgments",
    "read_matches",
    "read_rankings",
]

Side = Literal["a", "b"]
_RESULTS: dict[str, float] = {"a": 1.0, "b": 0.0, "tie": 0.5}


@dataclass(frozen=True, slots=True)
class Match:
    """One meeting of `a` and `b`. `result` is a's score: 1 a won, 0 b won, 0.5 a tie."""

    a: str
    b: str
    result: float
    score_a: float | None = None
    score_b: float | None = None
    home: Side | None = None
    season: str | None = None
    time: Any = None
    weight: float = 1.0
    judge: str | None = None

    def __post_init__(self) -> None:
        if self.a == self.b:
            raise RankingError(f"a match needs two different items, got {self.a!r} twice")
        if self.result not in (0.0, 0.5, 1.0):
            raise RankingError(f"a match result is 1, 0.5 or 0 (a's score), got {self.result!r}")
        if not (math.isfinite(self.weight) and self.weight >= 0):
            raise RankingError(f"a match weight is a finite number >= 0, got {self.weight!r}")

    @property
    def tie(self) -> bool:
        return self.result == 0.5

    @property
    def winner(self) -> str | None:
        return None if self.tie else (self.a if self.result == 1.0 else self.b)

    @property
    def loser(self) -> str | None:
        return None if self.tie else (self.b if self.result == 1.0 else self.a)

    @property
    def margin(self) -> float | None:
        """|score_a - score_b| when both scores are known."""
        if self.score_a is None or self.score_b is None:
            return None
        return abs(self.score_a - self.score_b)


@dataclass(frozen=True, slots=True)
class Ranking:
    """`ranked` best first; every item of `unranked` placed below all of them, in unknown order."""

    ranked: tuple[str, ...]
    unranked: tuple[str, ...] = ()
    weight: float = 1.0
    key: str | None = None

    def __post_init__(self) -> None:
        items = self.ranked + self.unranked
        if len(set(items)) != len(items):
            repeated = sorted(item for item, count in Counter(items).items() if count > 1)
            raise RankingError(f"a ranking names an item twice: {', '.join(repeated)}")
        if len(items) < 2 or not self.ranked:
            raise RankingError(f"a ranking needs at least one ranked item and two items in all, got {list(items)}")
        if not (math.isfinite(self.weight) and self.weight >= 0):
            raise RankingError(f"a ranking weight is a finite number >= 0, got {self.weight!r}")

    @property
    def items(self) -> tuple[str, ...]:
        return self.ranked + self.unranked

    @property
    def stages(self) -> int:
        """Choices the ranking records: one per ranked place, less the last one of a full ranking
        (the last of a full ranking is chosen from a set of one)."""
        return len(self.ranked) if self.unranked else len(self.ranked) - 1


@dataclass(frozen=True, slots=True)
class Judgment:
    """One judge's verdict on `first` against `second` for one question (the Vicuna80 format)."""

    judge: str
    first: str
    second: str
    question_id: int | str
    reviewer_id: int | None
    score: int

    def __post_init__(self) -> None:
        if self.score not in (1, 2, 3):
            raise RankingError(f"a judgment score is 1, 2 or 3, got {self.score!r}")
        if self.first == self.second:
            raise RankingError(f"a judgment compares two different answers, got {self.first!r} twice")

    @property
    def result(self) -> float:
        """The first answer's score: 1 it was better, 0 the second was, 0.5 a tie."""
        return {1: 1.0, 2: 0.0, 3: 0.5}[self.score]

    @property
    def sign(self) -> int:
        """-1 first better, +1 second better, 0 tie (the PRD notebook's coding)."""
        return {1: -1, 2: 1, 3: 0}[self.score]

    def as_match(self, weight: float = 1.0) -> Match:
        return Match(self.first, self.second, self.result, weight=weight, judge=self.judge)


def items_of(record: Match | Ranking | Judgment) -> tuple[str, ...]:
    """The items a record names."""
    if isinstance(record, Match):
        return (record.a, record.b)
    if isinstance(record, Ranking):
        return record.items
    return (record.first, record.second)


def check_items(records: Iterable[Match | Ranking | Judgment], universe: Iterable[str]) -> None:
    """Raises `RankingError` naming every item the records mention that `universe` does not hold."""
    known = set(universe)
    unknown = {item for record in records for item in items_of(record) if item not in known}
    if unknown:
        raise RankingError(f"unknown item(s): {', '.join(sorted(unknown))} (known: {len(known)} items)")


def item_universe(records: Sequence[Match | Ranking | Judgment], items: Sequence[str] | None) -> tuple[str, ...]:
    """The items a fit rates, in its order: `items` when given (each once, and naming every item the
    records mention), else every item the records name, sorted."""
    if items is None:
        return tuple(sorted({item for record in records for item in items_of(record)}))
    universe = tuple(items)
    if len(set(universe)) != len(universe):
        repeated = sorted(item for item, count in Counter(universe).items() if count > 1)
        raise ParameterError(f"items names {', '.join(repeated)} more than once")
    check_items(records, universe)
    return universe


# ---------------------------------------------------------------------------------------- readers


def json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; `RecordError` for a line that is not a JSON
    object, `RankingError` for an unreadable file or one without records."""
    source = str(path)
    text = read_text(path)
    found = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordError(source, number, "(line)", f"not JSON: {exc.msg} at column {exc.colno}") from exc
        if not isinstance(record, dict):
            raise RecordError(source, number, "(line)", f"expected a JSON object, got {type(record).__name__}")
        found = True
        yield number, record
    if not found:
        raise RankingError(f"{source} holds no records")


def item_name(source: str, number: int, record: Mapping[str, Any], field: str) -> str:
    """The record's `field` as an item name (a non-empty string; an integer is read as its digits)."""
    if field not in record:
        raise RecordError(source, number, field, "missing")
    value = record[field]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise RecordError(source, number, field, f"an item name is a string, got {value!r}")
    name = str(value).strip()
    if not name:
        raise RecordError(source, number, field, "an item name may not be empty")
    return name


def _number(source: str, number: int, record: Mapping[str, Any], field: str, *, minimum: float | None = None) -> float:
    value = record[field]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RecordError(source, number, field, f"expected a number, got {value!r}")
    if not math.isfinite(value):
        raise RecordError(source, number, field, f"must be finite, got {value!r}")
    if minimum is not None and value < minimum:
        raise RecordError(source, number, field, f"must be >= {minimum:g}, got {value!r}")
    return float(value)


def _optional_label(source: str, number: int, record: Mapping[str, Any], field: str) -> str | None:
    value = record.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise RecordError(source, number, field, f"expected a string or an integer, got {value!r}")
    return str(value)


def _match(source: str, number: int, record: Mapping[str, Any]) -> Match:
    a, b = item_name(source, number, record, "a"), item_name(source, number, record, "b")
    if a == b:
        raise RecordError(source, number, "b", f"a self-comparison: {a!r} against itself")
    score_a = score_b = None
    if "score_a" in record or "score_b" in record:
        for field in ("score_a", "score_b"):
            if field not in record:
                raise RecordError(source, number, field, "missing (give both scores, or a 'result')")
        score_a = _number(source, number, record, "score_a")
        score_b = _number(source, number, record, "score_b")
        result = 1.0 if score_a > score_b else 0.0 if score_a < score_b else 0.5
        if "result" in record and _RESULTS.get(str(record["result"])) != result:
            raise RecordError(
                source, number, "result", f"{record['result']!r} contradicts the scores {score_a:g}-{score_b:g}"
            )
    elif "result" in record:
        if record["result"] not in _RESULTS:
            raise RecordError(source, number, "result", f"expected 'a', 'b' or 'tie', got {record['result']!r}")
        result = _RESULTS[record["result"]]
    else:
        raise RecordError(
            source, number, "score_a", "missing: give score_a and score_b, or a 'result' of 'a', 'b' or 'tie'"
        )
    home = record.get("home")
    if home not in (None, "a", "b"):
        raise RecordError(source, number, "home", f"expected 'a', 'b' or null, got {home!r}")
    weight = _number(source, number, record, "weight", minimum=0.0) if "weight" in record else 1.0
    return Match(
        a,
        b,
        result,
        score_a,
        score_b,
        home,
        _optional_label(source, number, record, "season"),
        record.get("time"),
        weight,
        _optional_label(source, number, record, "judge"),
    )


def read_matches(path: str | Path) -> list[Match]:
    """The generic match file (JSON Lines), in file order; see the module docstring."""
    path = Path(path)
    return [_match(str(path), number, record) for number, record in json_lines(path)]


def read_judgments(path: str | Path) -> list[Judgment]:
    """A judgment file in the Vicuna80 format, in file order."""
    path = Path(path)
    source = str(path)
    judgments = []
    for number, record in json_lines(path):
        judge = item_name(source, number, record, "judge")
        first, second = item_name(source, number, record, "first"), item_name(source, number, record, "second")
        if first == second:
            raise RecordError(source, number, "second", f"a self-comparison: {first!r} against itself")
        if "question_id" not in record:
            raise RecordError(source, number, "question_id", "missing")
        question = record["question_id"]
        if isinstance(question, bool) or not isinstance(question, (str, int)):
            raise RecordError(source, number, "question_id", f"expected a string or an integer, got {question!r}")
        reviewer = record.get("reviewer_id")
        if reviewer is not None and (isinstance(reviewer, bool) or not isinstance(reviewer, int)):
            raise RecordError(source, number, "reviewer_id", f"expected an integer or null, got {reviewer!r}")
        if "score" not in record:
            raise RecordError(source, number, "score", "missing")
        score = record["score"]
        if isinstance(score, bool) or score not in (1, 2, 3):
            raise RecordError(
                source, number, "score", f"expected 1 (first better), 2 (second) or 3 (tie), got {score!r}"
            )
        judgments.append(Judgment(judge, first, second, question, reviewer, int(score)))
    return judgments


def _names(source: str, number: int, record: Mapping[str, Any], field: str, *, required: bool) -> tuple[str, ...]:
    if field not in record:
        if required:
            raise RecordError(source, number, field, "missing")
        return ()
    value = record[field]
    if not isinstance(value, list):
        raise RecordError(source, number, field, f"expected a list of item names, got {value!r}")
    names = []
    for index, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, (str, int)) or not str(item).strip():
            raise RecordError(source, number, f"{field}[{index}]", f"an item name is a non-empty string, got {item!r}")
        names.append(str(item).strip())
    return tuple(names)


def _ranking_lines(path: Path) -> list[Ranking]:
    source = str(path)
    rankings = []
    for number, record in json_lines(path):
        ranked = _names(source, number, record, "ranking", required=True)
        unranked = _names(source, number, record, "unranked", required=False)
        weight = _number(source, number, record, "weight", minimum=0.0) if "weight" in record else 1.0
        try:
            rankings.append(Ranking(ranked, unranked, weight, _optional_label(source, number, record, "key")))
        except RankingError as exc:
            raise RecordError(source, number, "ranking", str(exc)) from exc
    return rankings


def _ranking_table(path: Path, lines: Sequence[str]) -> list[Ranking]:
    """`DriverID Race Place` rows: one ranking per race, by place."""
    source = str(path)
    header = lines[0].split()
    columns = {name.lower(): index for index, name in enumerate(header)}
    item_column = next((columns[c] for c in ("driverid", "item", "driver") if c in columns), None)
    race_column = next((columns[c] for c in ("race", "ranking", "event") if c in columns), None)
    place_column = next((columns[c] for c in ("place", "position", "rank") if c in columns), None)
    if item_column is None or race_column is None or place_column is None:
        raise RecordError(source, 1, "(header)", f"expected the columns 'DriverID Race Place', got {header}")
    races: dict[str, dict[int, str]] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split()
        if len(cells) != len(header):
            raise RecordError(source, number, "(line)", f"expected {len(header)} columns, got {len(cells)}")
        item, race, place_text = cells[item_column], cells[race_column], cells[place_column]
        try:
            place = int(place_text)
        except ValueError:
            raise RecordError(
                source, number, header[place_column], f"expected a whole place number, got {place_text!r}"
            ) from None
        if place < 1:
            raise RecordError(source, number, header[place_column], f"places start at 1, got {place}")
        places = races.setdefault(race, {})
        if place in places:
            raise RecordError(source, number, header[place_column], f"race {race} has place {place} twice")
        if item in places.values():
            raise RecordError(source, number, header[item_column], f"{item!r} is placed twice in race {race}")
        places[place] = item
    if not races:
        raise RankingError(f"{source} holds no rankings")
    rankings = []
    for race, places in races.items():
        ordered = tuple(places[p] for p in sorted(places))
        if len(ordered) < 2:
            raise RankingError(f"{source}: race {race} places only {len(ordered)} item")
        rankings.append(Ranking(ordered, key=race))
    return rankings


def read_rankings(path: str | Path) -> list[Ranking]:
    """A ranking table (`DriverID Race Place`) or ranking JSON Lines; see the module docstring."""
    path = Path(path)
    lines = read_text(path).splitlines()
    if not any(line.strip() for line in lines):
        raise RankingError(f"{path} holds no records")
    if lines[0].lstrip().startswith("{"):
        return _ranking_lines(path)
    return _ranking_table(path, lines)


def read_text(path: Path) -> str:
    """The file's UTF-8 text; `RankingError` naming the file when it cannot be read or decoded."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RankingError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise RankingError(f"{path} is not UTF-8 text: {exc}") from exc


_WIN_TABLES = (("home.team", "away.team", "home.wins", "away.wins"), ("a", "b", "wins_a", "wins_b"))


def _win_table(path: Path) -> list[Match]:
    """A win-count CSV: each row gives two weighted matches (the first team's wins and the
    second's); with the home/away columns the first team is at home."""
    source = str(path)
    reader = csv.DictReader(read_text(path).splitlines())
    fields = tuple(reader.fieldnames or ())
    layout = next((names for names in _WIN_TABLES if set(names) <= set(fields)), None)
    if layout is None:
        raise RecordError(
            source, 1, "(header)", f"expected the columns {' / '.join(map(str, _WIN_TABLES))}, got {list(fields)}"
        )
    first, second, first_wins, second_wins = layout
    home: Side | None = "a" if first == "home.team" else None
    matches = []
    for number, row in enumerate(reader, start=2):
        record: dict[str, Any] = dict(row)
        a, b = item_name(source, number, record, first), item_name(source, number, record, second)
        if a == b:
            raise RecordError(source, number, second, f"a self-comparison: {a!r} against itself")
        for field in (first_wins, second_wins):
            try:
                record[field] = float(record[field])
            except (TypeError, ValueError):
                raise RecordError(source, number, field, f"expected a count, got {row[field]!r}") from None
        wins_a = _number(source, number, record, first_wins, minimum=0.0)
        wins_b = _number(source, number, record, second_wins, minimum=0.0)
        if wins_a:
            matches.append(Match(a, b, 1.0, home=home, weight=wins_a))
        if wins_b:
            matches.append(Match(a, b, 0.0, home=home, weight=wins_b))
    if not matches:
        raise RankingError(f"{source} holds no wins")
    return matches


def read_comparisons(path: str | Path) -> list[Match] | list[Ranking] | list[Judgment]:
    """Reads any of the four formats, recognized by content: a CSV header, a `DriverID Race Place`
    header, or JSON Lines whose first record has "judge"+"first" (judgments), "ranking"
    (rankings) or "a"+"b" (matches)."""
    path = Path(path)
    lines = [line for line in read_text(path).splitlines() if line.strip()]
    if not lines:
        raise RankingError(f"{path} holds no records")
    head = lines[0].strip()
    if head.startswith("{"):
        try:
            first = json.loads(head)
        except json.JSONDecodeError as exc:
            raise RecordError(str(path), 1, "(line)", f"not JSON: {exc.msg} at column {exc.colno}") from exc
        if isinstance(first, dict) and "judge" in first and "first" in first:
            return read_judgments(path)
        if isinstance(first, dict) and "ranking" in first:
            return read_rankings(path)
        return read_matches(path)
    if "," in head:
        return _win_table(path)
    return read_rankings(path)
