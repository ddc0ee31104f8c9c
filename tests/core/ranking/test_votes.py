"""Vote files (generic JSON Lines and the Vicuna80 judgments) and their replay through the
credibility book; the real Vicuna80 file is replayed and checked against a recount from the raw
JSON."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.core.ranking.pairwise_data import DATA, needs_data
from trust.core.ranking.credibility import FLOOR, START, JudgedMatch, MatchKind, Vote, schedule
from trust.core.ranking.votes import read_votes, replay
from trust.errors import RankingError, RecordError

VICUNA80 = DATA / "vicuna80_judgments.jsonl"


def _write(tmp_path: Path, records: list[dict[str, Any]], name: str = "votes.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def _vote(match: str, judge: str, vote: str, **extra: Any) -> dict[str, Any]:
    return {"match": match, "a": "x", "b": "y", "judge": judge, "vote": vote, **extra}


# ---------------------------------------------------------------------------------- generic format


def test_a_generic_file_replayed_by_hand(tmp_path: Path) -> None:
    records = [
        _vote("m1", "j1", "a"),
        _vote("m1", "j2", "a", shown="ba"),
        _vote("m2", "j1", "b", audit="b"),  # m2's records are interleaved with m1's
        _vote("m1", "j3", "b"),
        _vote("m2", "j2", "a", audit="b"),
        _vote("m2", "j3", "a", audit="b"),
        _vote("h1", "j1", "a", honeypot="a"),
        _vote("h1", "j2", "b", honeypot="a"),
        _vote("p1", "j1", "a", response_a="Hello, world!", response_b="WORLD hello"),
        _vote("p1", "j2", "b"),
        _vote("n1", "j1", "a"),
        _vote("n1", "j2", "b"),
        _vote("n1", "j3", "tie"),
    ]
    votes = read_votes(_write(tmp_path, records))
    assert votes.format == "generic" and [m.match_id for m in votes.matches] == ["m1", "m2", "h1", "p1", "n1"]
    assert votes.matches[0].votes[1] == Vote("j2", "a", "ba")
    assert votes.matches[3].response_b == "WORLD hello"
    result = replay(votes, seed="unused")
    # m1: consensus a: j1 +1, j2 +1, j3 -1. m2: consensus a overturned by the audit b: j1 (upheld
    # dissent) +1, j2 and j3 -10. h1: j1 voted for the robotic response, -20. p1: plagiarized,
    # skipped. n1: no consensus.
    credibility = {name: report.credibility for name, report in result.judges.items()}
    assert credibility == {"j1": START + 1 + 1 - 20, "j2": START + 1 - 10, "j3": START - 1 - 10}
    assert result.to_json() | {"judges": None} == {
        "judges": None,
        "matches": 5,
        "skipped": 1,
        "audited": 1,
        "honeypots": 1,
        "no_consensus": 1,
        "overturned": 1,
    }
    j1 = result.judges["j1"]
    assert (j1.votes, j1.agreement, j1.audits, j1.audit_agreement) == (3, 0.5, 1, 1.0)
    assert (j1.honeypots, j1.honeypot_failures, j1.lowest) == (1, 1, 82)
    assert result.to_json()["judges"]["j2"] == {
        "credibility": 91,
        "active": True,
        "votes": 3,
        "agreement": 1.0,
        "audits": 1,
        "audit_agreement": 0.0,
        "honeypots": 1,
        "honeypot_failures": 0,
        "lowest": 91,
        "anomalies": {"collusion": [], "position_bias": None, "audit_agreement": None},
    }


def test_replay_of_matches_given_directly() -> None:
    matches = [JudgedMatch("m", "x", "y", (Vote("j1", "a"), Vote("j2", "a"), Vote("j3", "b")))]
    assert replay(matches, 0).judges["j3"].credibility == START - 1
    with pytest.raises(RankingError, match="no matches"):
        replay([], 0)


@pytest.mark.parametrize(
    ("records", "record", "field", "problem"),
    [
        ([{"match": "m", "a": "x", "b": "y", "judge": "j"}], 1, "vote", "missing"),
        ([_vote("m", "j", "A")], 1, "vote", "expected one of"),
        ([_vote("m", "j", "a", shown="xy")], 1, "shown", "expected one of"),
        ([_vote("m", "j", "a", audit="maybe")], 1, "audit", "expected one of"),
        ([_vote("m", "j", "a", honeypot="tie")], 1, "honeypot", "expected one of"),
        ([_vote("m", "j", "a", audit="a", honeypot="b")], 1, "honeypot", "not both"),
        ([_vote("m", "j", "a", response_a=3)], 1, "response_a", "string"),
        ([{**_vote("m", "j", "a"), "b": "x"}], 1, "b", "self-comparison"),
        ([_vote("m", "j", "a"), {"match": "m"}], 2, "a", "missing"),
        ([_vote("m", "j1", "a"), {**_vote("m", "j2", "a"), "b": "z"}], 2, "b", "at record 1"),
        ([_vote("m", "j1", "a", audit="a"), _vote("m", "j2", "a", audit="b")], 2, "audit", "must agree"),
        ([_vote("m", "j1", "a"), _vote("m", "j2", "a", honeypot="a")], 2, "honeypot", "must agree"),
        ([_vote("m", "j1", "a", response_a="p"), _vote("m", "j2", "a", response_a="q")], 2, "response_a", "agree"),
        ([_vote("m", "j1", "a"), _vote("m", "j1", "b")], 2, "judge", "already voted"),
    ],
)
def test_malformed_generic_records_name_the_record_and_field(
    tmp_path: Path, records: list[dict[str, Any]], record: int, field: str, problem: str
) -> None:
    with pytest.raises(RecordError, match=problem) as raised:
        read_votes(_write(tmp_path, records))
    assert (raised.value.record, raised.value.field) == (record, field)


def test_a_response_may_come_from_a_later_record(tmp_path: Path) -> None:
    records = [_vote("m", "j1", "a"), _vote("m", "j2", "a", response_a="same words", response_b="words same")]
    match = read_votes(_write(tmp_path, records)).matches[0]
    assert (match.response_a, match.response_b) == ("same words", "words same")
    assert replay([match], 0).skipped == 1


def test_empty_and_unreadable_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(RankingError, match="no records"):
        read_votes(empty)
    with pytest.raises(RankingError, match="cannot read"):
        read_votes(tmp_path / "missing.jsonl")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('\n{"match": \n', encoding="utf-8")
    with pytest.raises(RecordError, match="not JSON") as raised:
        read_votes(broken)
    assert raised.value.record == 2


# --------------------------------------------------------------------------------- Vicuna80 format


def _judgment(judge: str, first: str, second: str, question: int, score: int) -> dict[str, Any]:
    return {"judge": judge, "first": first, "second": second, "question_id": question, "reviewer_id": 1, "score": score}


def _audited_seed(match_id: str, *, audited: bool) -> int:
    return next(seed for seed in range(10_000) if schedule(seed, match_id).audited == audited)


def test_vicuna80_matches_votes_and_the_human_majority(tmp_path: Path) -> None:
    records = [
        _judgment("gpt4", "p", "q", 1, 1),
        _judgment("bard", "p", "q", 1, 2),
        _judgment("claude", "p", "q", 1, 1),
        _judgment("human", "p", "q", 1, 2),  # human signs +1, +1, -1: mean > 0, "b"
        _judgment("human", "p", "q", 1, 2),
        _judgment("human", "p", "q", 1, 1),
        _judgment("human", "q", "p", 1, 1),  # no LLM judged (q, p): not a match
        _judgment("human", "r", "s", 2, 3),  # nor (r, s)
        _judgment("gpt4", "q", "p", 2, 3),
        _judgment("gpt4", "p", "q", 2, 3),
        _judgment("human", "p", "q", 2, 1),  # +(-1) +1 = 0: a tie
        _judgment("human", "p", "q", 2, 2),
    ]
    votes = read_votes(_write(tmp_path, records))
    ids = ['[1,"p","q"]', '[2,"q","p"]', '[2,"p","q"]']
    assert votes.format == "vicuna80" and [m.match_id for m in votes.matches] == ids
    first = votes.matches[0]
    assert (first.a, first.b, first.audit) == ("p", "q", None)
    assert first.votes == (Vote("gpt4", "a"), Vote("bard", "b"), Vote("claude", "a"))
    assert dict(votes.audit_verdicts) == {ids[0]: "b", ids[2]: "tie"}

    audited = replay(votes, _audited_seed(ids[0], audited=True))
    assert audited.outcomes[0].kind is MatchKind.AUDITED and audited.outcomes[0].overturned
    # Question 2's two matches have one vote each, a majority of one: +1 each (the tie audit agrees).
    assert audited.judges["gpt4"].credibility == START - 10 + 2
    assert audited.judges["bard"].credibility == START + 1
    plain = replay(votes, _audited_seed(ids[0], audited=False))
    assert plain.outcomes[0].kind is MatchKind.ORDINARY
    assert (plain.judges["gpt4"].credibility, plain.judges["bard"].credibility) == (START + 1 + 2, START - 1)


def test_vicuna80_duplicate_vote_names_its_line(tmp_path: Path) -> None:
    records = [_judgment("gpt4", "p", "q", 1, 1), _judgment("bard", "p", "q", 1, 1), _judgment("gpt4", "p", "q", 1, 2)]
    path = tmp_path / "dup.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records[:2]) + "\n\n" + json.dumps(records[2]) + "\n")
    with pytest.raises(RecordError, match="already judged") as raised:
        read_votes(path)
    assert (raised.value.record, raised.value.field) == (4, "judge")  # the blank line counts as a line


def test_vicuna80_malformed_and_human_only_files(tmp_path: Path) -> None:
    with pytest.raises(RecordError) as raised:
        read_votes(_write(tmp_path, [_judgment("gpt4", "p", "q", 1, 1), _judgment("gpt4", "p", "q", 2, 4)]))
    assert (raised.value.record, raised.value.field) == (2, "score")
    with pytest.raises(RankingError, match="no votes of a judge other than 'human'"):
        read_votes(_write(tmp_path, [_judgment("human", "p", "q", 1, 1)]))


# ------------------------------------------------------------------------------ the real Vicuna80


def _recount(seed: int) -> dict[str, Any]:
    """The replay's figures recounted from the raw JSON, without the reader or the book."""
    llm: dict[tuple[Any, str, str], dict[str, str]] = defaultdict(dict)
    human: dict[tuple[Any, str, str], list[int]] = defaultdict(list)
    for line in VICUNA80.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        key = (r["question_id"], r["first"], r["second"])
        if r["judge"] == "human":
            human[key].append({1: -1, 2: 1, 3: 0}[r["score"]])
        else:
            llm[key][r["judge"]] = {1: "a", 2: "b", 3: "tie"}[r["score"]]
    credibility: Counter[str] = Counter()
    counts = Counter()
    for key, cast in llm.items():
        top, n = Counter(cast.values()).most_common(1)[0]
        agreed = top if 2 * n > len(cast) else None
        audit = None
        match_id = json.dumps(list(key), separators=(",", ":"))
        if human.get(key) and schedule(seed, match_id).audited:
            total = sum(human[key])
            audit = "a" if total < 0 else "b" if total > 0 else "tie"
            counts["audited"] += 1
        if agreed is None:
            counts["no_consensus"] += 1
            continue
        overturned = audit is not None and audit != agreed
        counts["overturned"] += overturned
        for judge, vote in cast.items():
            if vote == agreed:
                credibility[judge] += -10 if overturned else 1
            else:
                credibility[judge] += 1 if overturned and vote == audit else -1
    return {"matches": len(llm), "with_human": sum(1 for k in llm if human.get(k)), **counts, "delta": credibility}


@needs_data
def test_replay_of_the_vicuna80_judgments() -> None:
    votes = read_votes(VICUNA80)
    result = replay(votes, seed=2023)
    expected = _recount(2023)
    # 5 answer models make 20 ordered pairs; 80 questions.
    assert result.matches == expected["matches"] == 20 * 80
    assert (result.skipped, result.honeypots) == (0, 0)
    assert result.audited == expected["audited"] and result.overturned == expected["overturned"]
    assert result.no_consensus == expected["no_consensus"]
    # About 10% of the 800 matches with human votes are audited (binomial, 5 sigma).
    assert expected["with_human"] == 800
    assert abs(result.audited - 80) <= 5 * math.sqrt(800 * 0.1 * 0.9)
    assert set(result.judges) == {"bard", "claude", "gpt35", "gpt4", "vicuna-13b"}
    for name, report in result.judges.items():
        assert report.votes == 1600 and report.honeypots == 0
        assert report.credibility >= FLOOR and report.lowest >= FLOOR
        assert report.audits == result.audited
        # The floor never bound on this data, so the credibility is the plain sum of the changes.
        assert report.lowest > FLOOR and report.credibility == START + expected["delta"][name]
    agreement = {name: report.agreement or 0.0 for name, report in result.judges.items()}
    assert agreement["gpt4"] > agreement["bard"] and agreement["gpt4"] > agreement["vicuna-13b"]
    # Reproducible from the seed.
    assert replay(read_votes(VICUNA80), seed=2023).to_json() == result.to_json()
