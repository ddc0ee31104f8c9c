"""`trust rank fit|peer|elo` and `trust judge replay` as a user runs them: the printed JSON against
published figures (Agresti's baseball fit, the PRD notebook's Peer Rank on Vicuna80), choix, hand
calculations of the judge ranking document's and FiveThirtyEight's Elo, hand-scored judge votes, and
bad input reaching the user as one `error:` line with exit code 1.

The commands run in-process through `trust.cli.main` (the installed entry point, which turns a
`TrustError` into "error: ..." and exit code 1) with `sys.argv` set; one test runs the installed
`trust` script in a subprocess end to end.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import choix
import numpy as np
import pytest

from trust.cli import main
from trust.core.ranking import fit_bradley_terry
from trust.core.ranking.records import Match

DATA = Path("/work/shared/data/pairwise")
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="the pairwise data set is not in /work/shared/data")
BASEBALL = DATA / "baseball_1987_al_east.csv"
NASCAR = DATA / "nascar2002.txt"
VICUNA80 = DATA / "vicuna80_judgments.jsonl"


@dataclass(frozen=True, slots=True)
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        assert self.code == 0, self.stderr
        lines = self.stdout.splitlines()
        assert len(lines) == 1, f"expected one JSON line, got {len(lines)}"
        return json.loads(lines[0])

    def json_lines(self) -> list[Any]:
        assert self.code == 0, self.stderr
        return [json.loads(line) for line in self.stdout.splitlines()]


@pytest.fixture
def trust(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """Runs `trust ARGS...` in-process through the entry point; returns the exit code and output.
    An exception other than SystemExit (a traceback the user would see) fails the test."""
    monkeypatch.setenv("COLUMNS", "200")  # rich and typer wrap at the terminal width

    def run(*args: str | Path) -> Run:
        monkeypatch.setattr(sys, "argv", ["trust", *map(str, args)])
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main()
        captured = capsys.readouterr()
        code = exited.value.code
        return Run(0 if code is None else int(code), captured.out, captured.err)

    return run


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------- rank fit


@needs_data
def test_fit_baseball_reproduces_agresti(trust: Any) -> None:
    """Agresti (2002), Table 10.11, as BradleyTerry2 fits it: Baltimore (first in sorted order) at 0."""
    fit = trust("rank", "fit", BASEBALL, "--model", "bt", "--json")
    out = fit.json()
    assert out["model"] == "bt" and out["reference"] == "Baltimore" and out["converged"] is True
    ratings = out["ratings"]
    assert len(ratings) == 7 and ratings["Baltimore"] == 0.0
    others = sorted(value for team, value in ratings.items() if team != "Baltimore")
    assert [round(value, 2) for value in others] == [0.68, 1.11, 1.25, 1.29, 1.44, 1.58]
    assert list(ratings) == sorted(ratings, key=lambda team: -ratings[team])  # printed best first
    assert out["home_advantage"] is None

    home = trust("rank", "fit", BASEBALL, "--home", "--json").json()
    assert round(home["home_advantage"], 3) == 0.302
    assert home["ratings"]["Baltimore"] == 0.0


@needs_data
def test_fit_table_output_names_every_team(trust: Any) -> None:
    shown = trust("rank", "fit", BASEBALL, "--home")
    assert shown.code == 0, shown.stderr
    for team in ("Milwaukee", "Detroit", "Toronto", "New York", "Boston", "Cleveland", "Baltimore"):
        assert team in shown.stdout
    assert "home advantage: 0.3023" in shown.stdout


GENERIC_MATCHES: list[dict[str, Any]] = [
    {"time": 1, "a": "ajax", "b": "benfica", "score_a": 2, "score_b": 1, "home": "a", "season": "2023"},
    {"time": 2, "a": "benfica", "b": "celtic", "score_a": 3, "score_b": 0, "home": "a", "season": "2023"},
    {"time": 3, "a": "celtic", "b": "ajax", "score_a": 1, "score_b": 0, "home": "a", "season": "2023"},
    {"time": 4, "a": "dynamo", "b": "ajax", "score_a": 2, "score_b": 2, "home": "b", "season": "2023"},
    {"time": 5, "a": "benfica", "b": "dynamo", "score_a": 0, "score_b": 1, "home": None, "season": "2023"},
    {"time": 6, "a": "dynamo", "b": "celtic", "result": "b"},
    {"time": 7, "a": "ajax", "b": "celtic", "result": "a", "home": "b"},
    {"time": 8, "a": "celtic", "b": "dynamo", "result": "tie"},
    {"time": 9, "a": "dynamo", "b": "benfica", "result": "b", "home": "a"},
    {"time": 10, "a": "ajax", "b": "dynamo", "result": "a", "season": "2024"},
    {"time": 11, "a": "benfica", "b": "ajax", "result": "a"},
]


def _hand_matches() -> list[Match]:
    """GENERIC_MATCHES as `Match` values, read by hand (not by the file reader under test)."""
    matches = []
    for record in GENERIC_MATCHES:
        if "score_a" in record:
            diff = record["score_a"] - record["score_b"]
            result = 1.0 if diff > 0 else 0.0 if diff < 0 else 0.5
        else:
            result = {"a": 1.0, "b": 0.0, "tie": 0.5}[record["result"]]
        matches.append(Match(record["a"], record["b"], result, home=record.get("home")))
    return matches


@pytest.mark.parametrize("home", [False, True])
def test_fit_generic_match_file_equals_the_library(trust: Any, tmp_path: Path, home: bool) -> None:
    path = write_lines(tmp_path / "matches.jsonl", GENERIC_MATCHES)
    out = trust("rank", "fit", path, "--json", *(["--home"] if home else [])).json()
    expected = fit_bradley_terry(_hand_matches(), home_advantage=home)
    assert out["reference"] == expected.reference == "ajax"
    assert out["ratings"].keys() == expected.ratings().keys()
    for item, value in expected.ratings().items():
        assert out["ratings"][item] == pytest.approx(value, abs=1e-9)
    assert out["tie_parameter"] == pytest.approx(expected.tie_parameter, abs=1e-9)
    assert out["tie_parameter"] > 0  # two ties in the file: Davidson's nu is fitted
    if home:
        assert out["home_advantage"] == pytest.approx(expected.home_advantage, abs=1e-9)
    else:
        assert out["home_advantage"] is None
    assert out["log_likelihood"] == pytest.approx(expected.log_likelihood, rel=1e-9)


def test_fit_reference_pins_that_item_and_keeps_the_differences(trust: Any, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "matches.jsonl", GENERIC_MATCHES)
    default = trust("rank", "fit", path, "--json").json()["ratings"]
    pinned = trust("rank", "fit", path, "--reference", "celtic", "--json").json()
    assert pinned["reference"] == "celtic" and pinned["ratings"]["celtic"] == 0.0
    for item, value in default.items():
        assert pinned["ratings"][item] == pytest.approx(value - default["celtic"], abs=1e-8)


def test_fit_without_ties_matches_choix(trust: Any, tmp_path: Path) -> None:
    """Won matches only: the Bradley-Terry MLE, centered, against choix's I-LSR."""
    rng = np.random.default_rng(20240607)
    names = [f"team{k}" for k in range(6)]
    strength = rng.normal(0.0, 1.0, len(names))
    records, pairs = [], []
    for _ in range(300):
        i, j = rng.choice(len(names), size=2, replace=False)
        a_won = rng.random() < 1.0 / (1.0 + math.exp(strength[j] - strength[i]))
        records.append({"a": names[i], "b": names[j], "result": "a" if a_won else "b"})
        pairs.append((int(i), int(j)) if a_won else (int(j), int(i)))
    path = write_lines(tmp_path / "wins.jsonl", records)
    out = trust("rank", "fit", path, "--json").json()
    assert out["tie_parameter"] is None
    reference = choix.ilsr_pairwise(len(names), pairs, alpha=0.0, max_iter=10_000, tol=1e-12)
    ours = np.array([out["ratings"][name] for name in names])
    np.testing.assert_allclose(ours - ours.mean(), reference - reference.mean(), atol=1e-6)


@needs_data
def test_fit_plackett_luce_on_nascar_matches_choix(trust: Any) -> None:
    """Hunter's NASCAR 2002 (36 races, 83 drivers), parsed here, against choix.ilsr_rankings."""
    races: dict[str, list[tuple[int, str]]] = defaultdict(list)
    lines = NASCAR.read_text(encoding="utf-8").split("\n")
    assert lines[0].split() == ["DriverID", "Race", "Place"]
    for line in lines[1:]:
        if line.strip():
            driver, race, place = line.split()
            races[race].append((int(place), driver))
    drivers = sorted({driver for rows in races.values() for _, driver in rows})
    index = {driver: k for k, driver in enumerate(drivers)}
    data = [tuple(index[driver] for _, driver in sorted(rows)) for rows in races.values()]
    assert len(data) == 36 and len(drivers) == 83

    out = trust("rank", "fit", NASCAR, "--model", "pl", "--json").json()
    assert out["model"] == "pl" and out["converged"] is True
    assert set(out["ratings"]) == set(drivers) and out["ratings"][out["reference"]] == 0.0
    reference = choix.ilsr_rankings(len(drivers), data, alpha=0.0, max_iter=1_000, tol=1e-12)
    ours = np.array([out["ratings"][driver] for driver in drivers])
    np.testing.assert_allclose(ours - ours.mean(), reference - reference.mean(), atol=1e-5)
    assert out["log_likelihood"] == pytest.approx(choix.log_likelihood_rankings(data, reference), rel=1e-8)


# ------------------------------------------------------------------------------------ rank peer

# The PRD notebook's figures (data README): Peer Rank win rates, judge weights, agreement.
PEER_WIN_RATES = {"gpt4": 0.80202, "claude": 0.68498, "vicuna-13b": 0.37625, "gpt35": 0.34616, "bard": 0.29058}
PEER_WEIGHTS = {"gpt4": 0.4884, "claude": 0.3767, "vicuna-13b": 0.0818, "gpt35": 0.0531, "bard": 0.0}
PEER_AGREEMENT = {"gpt4": 0.6425, "gpt35": 0.6206, "claude": 0.6069, "weighted_vote": 0.6731}
PRINTED_HALF_UNIT = 0.5e-6
"""The CLI prints Peer Rank figures rounded to 6 decimals: half a unit of the 6th place."""


@pytest.fixture(scope="module")
def peer_output() -> dict[str, Any]:
    """`trust rank peer` on Vicuna80, run once for the module (the installed script, end to end)."""
    if not DATA.is_dir():
        pytest.skip("the pairwise data set is not in /work/shared/data")
    done = _installed("rank", "peer", str(VICUNA80), "--json")
    assert done.returncode == 0, done.stderr
    output: dict[str, Any] = json.loads(done.stdout)
    return output


@needs_data
@pytest.mark.parametrize(
    ("field", "published", "places"),
    [("win_rates", PEER_WIN_RATES, 5), ("judge_weights", PEER_WEIGHTS, 4)]
    + [("agreement_with_human_majority", PEER_AGREEMENT, 4)],
)
def test_peer_reproduces_the_prd_notebook(
    peer_output: dict[str, Any], field: str, published: dict[str, float], places: int
) -> None:
    """Each printed figure lies within the published figure's rounding (half a unit of its last
    place) plus the CLI's own rounding."""
    printed = peer_output[field]
    for name, value in published.items():
        assert abs(printed[name] - value) <= 0.5 * 10.0**-places + PRINTED_HALF_UNIT, (field, name, printed[name])
    if field != "agreement_with_human_majority":
        assert list(printed) == list(published)  # best first, in the notebook's order
    assert peer_output["iterations"] == 5 and peer_output["basis"] == "answers"


@needs_data
def test_peer_agreement_orders_the_judges(peer_output: dict[str, Any]) -> None:
    agreement = peer_output["agreement_with_human_majority"]
    judges = {name: value for name, value in agreement.items() if name != "weighted_vote"}
    assert set(judges) == {"gpt4", "gpt35", "claude", "bard", "vicuna-13b"}
    assert max(judges, key=judges.__getitem__) == "gpt4"
    assert agreement["weighted_vote"] > max(judges.values())  # weighting beats every single judge


@needs_data
@pytest.mark.parametrize(
    ("name", "published"),
    list(PEER_WIN_RATES.items()),
)
def test_peer_printed_win_rates_round_to_the_published_figures(
    peer_output: dict[str, Any], name: str, published: float
) -> None:
    """A reader rounding the printed win rate to the notebook's 5 places gets the notebook's figure."""
    assert round(peer_output["win_rates"][name], 5) == published


# ------------------------------------------------------------------------------------- rank elo


def _p(rating_a: float, rating_b: float, home_shift: float = 0.0) -> float:
    """Elo's expected score of a, the home side's advantage added to a's rating difference."""
    return 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a - home_shift) / 400.0))


def _check_lines(lines: list[dict[str, Any]], records: list[dict[str, Any]], home_advantage: float = 0.0) -> None:
    """One line per match and a final line; every pre-match p_a recomputed from the printed ratings;
    the final ratings and match counts follow from the lines."""
    assert len(lines) == len(records) + 1
    final = lines[-1]
    assert set(final) == {"ratings", "played"}
    after: dict[str, float] = {}
    for t, (line, record) in enumerate(zip(lines, records, strict=False)):
        assert (line["match"], line["a"], line["b"], line["time"]) == (t, record["a"], record["b"], record.get("time"))
        side = {"a": 1.0, "b": -1.0, None: 0.0}[record.get("home")]
        assert line["p_a"] == pytest.approx(_p(line["rating_a"], line["rating_b"], side * home_advantage), abs=1e-12)
        after[line["a"]] = line["rating_a"] + line["shift_a"]
        after[line["b"]] = line["rating_b"] + line["shift_b"]
    assert final["ratings"].keys() == after.keys()
    for item, rating in after.items():
        assert final["ratings"][item] == pytest.approx(rating, abs=1e-9)
    assert list(final["ratings"]) == sorted(final["ratings"], key=lambda item: -final["ratings"][item])
    assert final["played"] == dict(Counter(name for r in records for name in (r["a"], r["b"])))


@pytest.mark.parametrize(("winner", "p_a", "shift_a"), [("a", 0.76, 7.69), ("b", 0.76, -24.31)])
def test_elo_judge_document_example(trust: Any, tmp_path: Path, winner: str, p_a: float, shift_a: float) -> None:
    """Judge ranking document, section 1: 1200 against 1000 expects 0.76; K 32 moves the favourite
    +7.69 on a win (the document rounds to +8) and -24.31 on the upset (-24)."""
    initial = tmp_path / "initial.json"
    initial.write_text(json.dumps({"fav": 1200, "dog": 1000}))
    records = [{"time": 1, "a": "fav", "b": "dog", "result": winner}]
    path = write_lines(tmp_path / "one.jsonl", records)
    lines = trust("rank", "elo", path, "--k", "32", "--initial", initial, "--json").json_lines()
    _check_lines(lines, records)
    line = lines[0]
    assert (line["rating_a"], line["rating_b"]) == (1200.0, 1000.0)
    assert round(line["p_a"], 2) == p_a and round(line["shift_a"], 2) == shift_a
    assert line["shift_b"] == -line["shift_a"]  # one K for both: zero-sum
    assert lines[-1]["ratings"] == {"fav": 1200 + line["shift_a"], "dog": 1000 - line["shift_a"]}


def test_elo_sequence_of_plain_matches(trust: Any, tmp_path: Path) -> None:
    """K 32 from 1000: every line's ratings are the previous lines' results (nothing reverts)."""
    records = [
        {"time": 1, "a": "x", "b": "y", "result": "a"},
        {"time": 2, "a": "y", "b": "z", "result": "tie"},
        {"time": 3, "a": "z", "b": "x", "result": "a"},
        {"time": 4, "a": "x", "b": "y", "result": "b"},
    ]
    path = write_lines(tmp_path / "plain.jsonl", records)
    lines = trust("rank", "elo", path, "--k", "32", "--json").json_lines()
    _check_lines(lines, records)
    assert (lines[0]["rating_a"], lines[0]["p_a"], lines[0]["shift_a"]) == (1000.0, 0.5, 16.0)
    y = 1000.0 - 16.0
    p = _p(y, 1000.0)
    assert lines[1]["rating_a"] == y and lines[1]["shift_a"] == pytest.approx(32 * (0.5 - p), abs=1e-12)
    rating = {"x": 1016.0, "y": y + 32 * (0.5 - p), "z": 1000.0 - 32 * (0.5 - p)}
    for line in lines[2:4]:
        assert (line["rating_a"], line["rating_b"]) == pytest.approx((rating[line["a"]], rating[line["b"]]), abs=1e-9)
        result = {"a": 1.0, "b": 0.0, "tie": 0.5}[records[line["match"]]["result"]]
        assert line["result"] == result
        shift = 32 * (result - _p(rating[line["a"]], rating[line["b"]]))
        assert line["shift_a"] == pytest.approx(shift, abs=1e-9)
        rating[line["a"]] += shift
        rating[line["b"]] -= shift


def test_elo_home_advantage_and_margin_of_victory_by_hand(trust: Any, tmp_path: Path) -> None:
    """FiveThirtyEight's update with K 20 and a home advantage of 65, worked out match by match:
    multiplier ln(max(|margin|, 1) + 1) x 2.2 / (winner_elo_diff x 0.001 + 2.2), a tie dividing by 1."""
    records = [
        {"time": 1, "a": "lions", "b": "bears", "score_a": 24, "score_b": 17, "home": "a", "season": "2020"},
        {"time": 2, "a": "bears", "b": "packers", "score_a": 10, "score_b": 31, "home": "b", "season": "2020"},
        {"time": 3, "a": "packers", "b": "lions", "score_a": 20, "score_b": 20, "home": None, "season": "2020"},
        {"time": 4, "a": "lions", "b": "packers", "score_a": 3, "score_b": 27, "home": "a", "season": "2020"},
    ]
    path = write_lines(tmp_path / "nfl.jsonl", records)
    run = trust("rank", "elo", path, "--k", "20", "--home-advantage", "65", "--mov", "--json")
    lines = run.json_lines()
    _check_lines(lines, records, home_advantage=65.0)
    k, h = 20.0, 65.0

    # 1. lions (home) 24-17 bears, both at 1000: elo_diff 65 from the winner's side.
    p1 = 1 / (10 ** (-h / 400) + 1)
    mult1 = math.log(7 + 1) * 2.2 / (h * 0.001 + 2.2)
    assert round(mult1, 4) == 2.0198  # ln 8 = 2.0794, x 2.2 / 2.265
    s1 = k * mult1 * (1 - p1)
    assert lines[0]["p_a"] == pytest.approx(p1, abs=1e-12) and round(p1, 4) == 0.5925
    assert lines[0]["shift_a"] == pytest.approx(s1, abs=1e-9) and round(s1, 2) == 16.46
    lions, bears, packers = 1000 + s1, 1000 - s1, 1000.0

    # 2. bears 10-31 packers (home): the home side won, its elo_diff is packers - bears + 65.
    diff2 = bears - packers - h
    p2 = 1 / (10 ** (-diff2 / 400) + 1)
    mult2 = math.log(21 + 1) * 2.2 / (-diff2 * 0.001 + 2.2)
    s2 = k * mult2 * (0 - p2)
    assert (lines[1]["rating_a"], lines[1]["rating_b"]) == pytest.approx((bears, packers), abs=1e-9)
    assert lines[1]["p_a"] == pytest.approx(p2, abs=1e-12)
    assert lines[1]["shift_a"] == pytest.approx(s2, abs=1e-9)
    bears, packers = bears + s2, packers - s2

    # 3. packers 20-20 lions on neutral ground: margin 0 counts as 1, the tie divides by 1.
    p3 = 1 / (10 ** (-(packers - lions) / 400) + 1)
    s3 = k * (math.log(1 + 1) * 2.2) * (0.5 - p3)
    assert lines[2]["p_a"] == pytest.approx(p3, abs=1e-12)
    assert lines[2]["shift_a"] == pytest.approx(s3, abs=1e-9)
    packers, lions = packers + s3, lions - s3

    # 4. lions (home) 3-27 packers: an away win, the winner's elo_diff is packers - lions - 65.
    diff4 = lions - packers + h
    p4 = 1 / (10 ** (-diff4 / 400) + 1)
    mult4 = math.log(24 + 1) * 2.2 / (-diff4 * 0.001 + 2.2)
    s4 = k * mult4 * (0 - p4)
    assert lines[3]["p_a"] == pytest.approx(p4, abs=1e-12)
    assert lines[3]["shift_a"] == pytest.approx(s4, abs=1e-9)
    lions, packers = lions + s4, packers - s4
    assert lines[-1]["ratings"] == pytest.approx({"lions": lions, "bears": bears, "packers": packers}, abs=1e-9)
    assert math.fsum(lines[-1]["ratings"].values()) == pytest.approx(3000.0, abs=1e-9)  # zero-sum


SEASONS: list[dict[str, Any]] = [
    {"time": 1, "a": "x", "b": "y", "result": "a", "season": "2020"},
    {"time": 2, "a": "y", "b": "z", "result": "a", "season": "2020"},
    {"time": 3, "a": "x", "b": "y", "result": "b", "season": "2021"},
    {"time": 4, "a": "z", "b": "w", "result": "tie", "season": "2021"},
    {"time": 5, "a": "x", "b": "z", "result": "a", "season": "2021"},
]


def _revert(rating: float) -> float:
    """A quarter of the way back to 1500."""
    return rating * (1 - 0.25) + 1500 * 0.25


def test_elo_season_reversion_at_each_teams_first_match_of_a_season(trust: Any, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "seasons.jsonl", SEASONS)
    lines = trust(
        "rank", "elo", path, "--k", "32", "--season-revert", "0.25", "--revert-to", "1500", "--json"
    ).json_lines()
    _check_lines(lines, SEASONS)
    after = [(line["rating_a"] + line["shift_a"], line["rating_b"] + line["shift_b"]) for line in lines[:-1]]
    # 2021 opens: x (last 2020 rating after match 0) and y (after match 1) both revert.
    assert lines[2]["rating_a"] == pytest.approx(_revert(after[0][0]), abs=1e-9)
    assert lines[2]["rating_b"] == pytest.approx(_revert(after[1][0]), abs=1e-9)
    # z reverts at its first 2021 match; w's first match ever is in 2021: it starts at 1000.
    assert lines[3]["rating_a"] == pytest.approx(_revert(after[1][1]), abs=1e-9)
    assert lines[3]["rating_b"] == 1000.0
    # Within 2021 nobody reverts again.
    assert lines[4]["rating_a"] == pytest.approx(after[2][0], abs=1e-9)
    assert lines[4]["rating_b"] == pytest.approx(after[3][0], abs=1e-9)
    assert lines[0]["rating_a"] == lines[0]["rating_b"] == 1000.0


def test_elo_resets_override_the_reversion(trust: Any, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "seasons.jsonl", SEASONS)
    resets = tmp_path / "resets.json"
    resets.write_text(
        json.dumps([{"team": "x", "season": "2021", "rating": 1600}, {"team": "w", "season": 2021, "rating": 1234.5}])
    )
    args = ("--k", "32", "--season-revert", "0.25", "--revert-to", "1500", "--resets", resets, "--json")
    lines = trust("rank", "elo", path, *args).json_lines()
    _check_lines(lines, SEASONS)
    after_y = lines[1]["rating_a"] + lines[1]["shift_a"]
    assert lines[2]["rating_a"] == 1600.0  # x: the reset, not its reverted rating
    assert lines[2]["rating_b"] == pytest.approx(_revert(after_y), abs=1e-9)  # y still reverts
    assert lines[3]["rating_b"] == 1234.5  # w: a reset applies even at a team's first match


def test_elo_warns_of_a_reset_that_never_applies(trust: Any, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "seasons.jsonl", SEASONS)
    resets = tmp_path / "resets.json"
    resets.write_text(
        json.dumps([{"team": "x", "season": "2021", "rating": 1600}, {"team": "xx", "season": 2021, "rating": 1}])
    )
    run = trust("rank", "elo", path, "--k", "32", "--resets", resets, "--json")
    assert run.code == 0 and len(run.json_lines()) == len(SEASONS) + 1
    warning = " ".join(run.stderr.split())  # rich wraps long lines
    assert "reset of 'xx' in season '2021' was never applied" in warning and "'x' in" not in warning


# ---------------------------------------------------------------------------------- judge replay

VOTES: list[dict[str, Any]] = [
    # m1: 2 of 3 for a -> j1 +1, j2 +1, j3 -1.
    {"match": "m1", "a": "p", "b": "q", "judge": "j1", "vote": "a"},
    {"match": "m1", "a": "p", "b": "q", "judge": "j2", "vote": "a", "shown": "ba"},
    {"match": "m1", "a": "p", "b": "q", "judge": "j3", "vote": "b"},
    # m2: audited; consensus a, the auditor says b -> j1 -10, j2 -10, j3 (upheld dissent) +1.
    {"match": "m2", "a": "p", "b": "r", "judge": "j1", "vote": "a", "audit": "b"},
    {"match": "m2", "a": "p", "b": "r", "judge": "j2", "vote": "a", "audit": "b"},
    {"match": "m2", "a": "p", "b": "r", "judge": "j3", "vote": "b", "audit": "b"},
    # m3: a honeypot, b robotic -> j1 voted for it: -20; j2 and a tie pass unchanged.
    {"match": "m3", "a": "q", "b": "bot", "judge": "j1", "vote": "b", "honeypot": "b"},
    {"match": "m3", "a": "q", "b": "bot", "judge": "j2", "vote": "a", "honeypot": "b"},
    {"match": "m3", "a": "q", "b": "bot", "judge": "j3", "vote": "tie", "honeypot": "b"},
    # m4: a, b and tie -> no consensus, nobody moves.
    {"match": "m4", "a": "q", "b": "r", "judge": "j1", "vote": "a"},
    {"match": "m4", "a": "q", "b": "r", "judge": "j2", "vote": "b"},
    {"match": "m4", "a": "q", "b": "r", "judge": "j3", "vote": "tie"},
    # m5: the consensus is a tie -> j1 +1, j2 +1, j3 -1.
    {"match": "m5", "a": "r", "b": "p", "judge": "j3", "vote": "a"},
    {"match": "m5", "a": "r", "b": "p", "judge": "j1", "vote": "tie"},
    {"match": "m5", "a": "r", "b": "p", "judge": "j2", "vote": "tie"},
]


def test_judge_replay_scores_votes_by_the_judge_documents_rules(trust: Any, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "votes.jsonl", VOTES)
    out = trust("judge", "replay", path, "--json").json()
    assert (out["matches"], out["skipped"], out["audited"], out["overturned"]) == (5, 0, 1, 1)
    assert (out["honeypots"], out["no_consensus"]) == (1, 1)
    judges = out["judges"]
    assert set(judges) == {"j1", "j2", "j3"}
    # credibility: start 100, then m1, m2, m3, m4, m5
    assert judges["j1"]["credibility"] == 100 + 1 - 10 - 20 + 0 + 1 == 72
    assert judges["j2"]["credibility"] == 100 + 1 - 10 + 0 + 0 + 1 == 92
    assert judges["j3"]["credibility"] == 100 - 1 + 1 + 0 + 0 - 1 == 99
    assert [judges[j]["lowest"] for j in ("j1", "j2", "j3")] == [71, 91, 99]
    for name, judge in judges.items():
        assert judge["active"] is True  # all >= 50
        assert judge["votes"] == 4  # the honeypot is a test, not a vote
        assert judge["audits"] == 1 and judge["honeypots"] == 1
        assert judge["anomalies"] == {"collusion": [], "position_bias": None, "audit_agreement": None}, name
    # agreement: votes matching the consensus in m1, m2 and m5 (m2's consensus counts, overturned or not)
    assert (judges["j1"]["agreement"], judges["j2"]["agreement"], judges["j3"]["agreement"]) == (1.0, 1.0, 0.0)
    assert (judges["j1"]["audit_agreement"], judges["j3"]["audit_agreement"]) == (0.0, 1.0)
    assert [judges[j]["honeypot_failures"] for j in ("j1", "j2", "j3")] == [1, 0, 0]


def test_judge_replay_floor_threshold_and_position_bias(trust: Any, tmp_path: Path) -> None:
    """j2 fails five honeypots (100 -> 80 -> 60 -> 40 -> 30 -> 30: the floor), then agrees 12 times
    (42: still below the threshold of 50, inactive). j3 always votes for the response shown as A
    (with the order swapped in the even matches, that is a then b): it agrees every time and is
    flagged for position bias (12 of 12 > 80%, at least 10 votes); j1 and j2 alternate labels."""
    records: list[dict[str, Any]] = []
    for h in range(5):
        records += [
            {"match": f"h{h}", "a": f"real{h}", "b": "bot", "judge": j, "vote": v, "honeypot": "b"}
            for j, v in (("j1", "a"), ("j2", "b"), ("j3", "a"))
        ]
    for m in range(12):
        side = "a" if m % 2 == 0 else "b"  # the better response alternates sides
        base = {"match": f"m{m}", "a": f"left{m}", "b": f"right{m}"}
        records += [
            base | {"judge": "j1", "vote": side},
            base | {"judge": "j2", "vote": side},
            base | {"judge": "j3", "vote": side, "shown": "ab" if side == "a" else "ba"},
        ]
    path = write_lines(tmp_path / "votes.jsonl", records)
    out = trust("judge", "replay", path, "--json").json()
    j1, j2, j3 = (out["judges"][name] for name in ("j1", "j2", "j3"))
    assert (j2["credibility"], j2["lowest"], j2["active"]) == (42, 30, False)
    assert (j2["honeypots"], j2["honeypot_failures"]) == (5, 5)
    assert (j1["credibility"], j1["active"], j3["credibility"]) == (112, True, 112)
    assert j3["anomalies"]["position_bias"] == {"side": "A", "share": 1.0, "votes": 12}
    assert j1["anomalies"]["position_bias"] is None and j2["anomalies"]["position_bias"] is None
    assert all(judge["anomalies"]["collusion"] == [] for judge in (j1, j2, j3))


@needs_data
def test_judge_replay_on_vicuna80(trust: Any) -> None:
    """1600 matches (5 answer models, 20 ordered pairs, 80 questions), five LLM judges each. The
    consensus agreement is recounted here from the raw JSON (it does not depend on the audit draw)."""
    out = trust("judge", "replay", VICUNA80, "--json").json()
    judges = out["judges"]
    assert set(judges) == {"gpt4", "gpt35", "claude", "bard", "vicuna-13b"}
    assert out["matches"] == 1600 and out["honeypots"] == 0 and out["skipped"] == 0

    votes: dict[tuple[Any, str, str], dict[str, str]] = defaultdict(dict)
    for line in VICUNA80.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["judge"] != "human":
            votes[row["question_id"], row["first"], row["second"]][row["judge"]] = {1: "a", 2: "b", 3: "tie"}[
                row["score"]
            ]
    assert len(votes) == 1600
    agreed: Counter[str] = Counter()
    counted: Counter[str] = Counter()
    no_consensus = 0
    for cast in votes.values():
        top, count = Counter(cast.values()).most_common(1)[0]
        if 2 * count <= len(cast):
            no_consensus += 1
            continue
        for judge, choice in cast.items():
            counted[judge] += 1
            agreed[judge] += choice == top
    assert out["no_consensus"] == no_consensus
    for name, judge in judges.items():
        assert judge["votes"] == 1600
        assert judge["agreement"] == pytest.approx(agreed[name] / counted[name], abs=1e-12)
        assert judge["credibility"] >= 30 and judge["lowest"] >= 30
        assert 0 < judge["audits"] == out["audited"]  # every judge votes on every match
    agreement = {name: judge["agreement"] for name, judge in judges.items()}
    assert max(agreement, key=agreement.__getitem__) == "gpt4"
    assert out["audited"] > 0 and 0 <= out["overturned"] <= out["audited"]


# ------------------------------------------------------------------------------------ bad input


def _bad_inputs(tmp: Path) -> dict[str, tuple[list[str], list[str]]]:
    """name -> (arguments, substrings the error line must hold)."""

    def lines(name: str, *texts: str) -> str:
        path = tmp / name
        path.write_text("".join(text + "\n" for text in texts), encoding="utf-8")
        return str(path)

    good = lines("good.jsonl", '{"a": "x", "b": "y", "result": "a"}', '{"a": "y", "b": "x", "result": "a"}')
    not_object = tmp / "initial.json"
    not_object.write_text("[1200, 1000]")
    resets = tmp / "resets.json"
    resets.write_text(json.dumps([{"team": "x", "season": "2021"}]))
    rankings = lines("rankings.jsonl", '{"ranking": ["x", "y", "z"]}', '{"ranking": ["z", "x"]}')
    return {
        "empty file": (["rank", "fit", lines("empty.jsonl"), "--json"], ["empty.jsonl", "holds no records"]),
        "malformed JSON line": (
            ["rank", "fit", lines("broken.jsonl", '{"a": "x", "b": "y", "result": "a"}', '{"a": "y", "b": '), "--json"],
            ["broken.jsonl", "record 2", "field '(line)'", "not JSON"],
        ),
        "self-comparison": (
            ["rank", "fit", lines("self.jsonl", '{"a": "x", "b": "x", "result": "a"}'), "--json"],
            ["self.jsonl", "record 1", "field 'b'", "self-comparison"],
        ),
        "non-finite score": (
            ["rank", "elo", lines("inf.jsonl", '{"a": "x", "b": "y", "score_a": 1e999, "score_b": 3}'), "--k", "32"],
            ["inf.jsonl", "record 1", "field 'score_a'", "finite"],
        ),
        "unknown reference": (["rank", "fit", good, "--reference", "nobody", "--json"], ["'nobody'", "reference"]),
        "mov without scores": (["rank", "elo", good, "--k", "20", "--mov", "--json"], ["match 0", "no scores"]),
        "initial not an object": (
            ["rank", "elo", good, "--k", "32", "--initial", str(not_object), "--json"],
            ["initial.json", "JSON object"],
        ),
        "reset without rating": (
            ["rank", "elo", good, "--k", "32", "--resets", str(resets), "--json"],
            ["resets.json", "record 1", "field 'rating'", "missing"],
        ),
        "season revert above 1": (
            ["rank", "elo", good, "--k", "32", "--season-revert", "1.5", "--revert-to", "1500", "--json"],
            ["season_revert", "1.5"],
        ),
        "rankings fitted with bt": (
            ["rank", "fit", rankings, "--model", "bt", "--json"],
            ["rankings.jsonl", "--model pl"],
        ),
        "judgment without score": (
            ["rank", "peer", lines("judged.jsonl", '{"judge": "j", "first": "x", "second": "y", "question_id": 1}')],
            ["judged.jsonl", "record 1", "field 'score'", "missing"],
        ),
        "vote twice": (
            [
                "judge",
                "replay",
                lines(
                    "votes.jsonl",
                    '{"match": "m", "a": "x", "b": "y", "judge": "j", "vote": "a"}',
                    '{"match": "m", "a": "x", "b": "y", "judge": "j", "vote": "b"}',
                ),
            ],
            ["votes.jsonl", "record 2", "field 'judge'", "already voted"],
        ),
        "missing file": (["rank", "fit", str(tmp / "absent.jsonl")], ["absent.jsonl", "cannot read"]),
    }


BAD_INPUTS = (
    "empty file",
    "malformed JSON line",
    "self-comparison",
    "non-finite score",
    "unknown reference",
    "mov without scores",
    "initial not an object",
    "reset without rating",
    "season revert above 1",
    "rankings fitted with bt",
    "judgment without score",
    "vote twice",
    "missing file",
)


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_one_error_line_and_exit_code_1(trust: Any, tmp_path: Path, case: str) -> None:
    cases = _bad_inputs(tmp_path)
    assert set(cases) == set(BAD_INPUTS)
    args, expected = cases[case]
    run = trust(*args)
    assert run.code == 1, (run.stdout, run.stderr)
    assert run.stdout == ""
    assert run.stderr.startswith("error: ") and run.stderr.count("\n") == 1, run.stderr
    for text in expected:
        assert text in run.stderr, (text, run.stderr)
    assert "Traceback" not in run.stderr


def test_unknown_model_is_a_usage_error(trust: Any, tmp_path: Path) -> None:
    """--model xyz is refused by the option parser: Click's usage error, exit code 2 (not 1, which
    the CLI keeps for input it could not rate), naming the option and the value."""
    path = write_lines(tmp_path / "m.jsonl", [{"a": "x", "b": "y", "result": "a"}])
    run = trust("rank", "fit", path, "--model", "xyz", "--json")
    assert run.code == 2 and run.stdout == ""
    assert "--model" in run.stderr and "'xyz'" in run.stderr and "'bt' or 'pl'" in run.stderr
    assert "Traceback" not in run.stderr


# ---------------------------------------------------------------------------------- end to end


def _installed(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("trust")
    if not script.is_file():
        pytest.skip(f"the trust script is not installed next to {sys.executable}")
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=120, check=False)


def test_installed_script_end_to_end(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "matches.jsonl", GENERIC_MATCHES)
    done = _installed("rank", "fit", str(path), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ratings"]["ajax"] == 0.0
    (tmp_path / "bad.jsonl").write_text('{"a": "x", "b": "x", "result": "a"}\n')
    failed = _installed("rank", "elo", str(tmp_path / "bad.jsonl"), "--k", "32", "--json")
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.startswith("error: ") and "record 1, field 'b'" in failed.stderr
    assert "Traceback" not in failed.stderr
