"""The swarm document's pairwise ranking prompt (section 4.3, RANKING_TEMPLATE) and the parser of a
model's answer to it.

A node shows a judge model a problem and two solutions; the judge writes up to three short notes on
the mistakes of each ("Solution 2 lacks ...") and ends with the index of the better solution, 1 or 2,
alone on the last line, or "Uncertain?" when neither is better. `render` fills the template;
`parse_ranking_answer` reads the answer back as a `RankingAnswer` (choice 1, 2 or None for uncertain,
and the note lines).

Where the document is loose, and what we chose:

- The template is printed inside an indented Python string; we keep its words and line breaks and
  drop the typesetting's indentation. Its quotes around 'Uncertain?' are typographic (U+2019) in the
  document; we keep them, as printed.
- The placeholders {R}, {A}, {B} are filled once with `str.format`, so braces inside a problem or a
  solution are copied as they are.
- The last non-empty line must be the decision: "1", "2" or "Uncertain?". We tolerate what models
  add around a bare answer: surrounding whitespace, a trailing period, markdown bold or italics
  (`**2**`, `*1*`), backticks (`` `1` ``), quotes ('Uncertain?', since the template itself quotes
  it), a missing "?" or any letter case in "uncertain", and the template's own "######Decision######:"
  marker repeated before the answer. Anything else ("Solution 1", "1 or 2", "I pick 2", a cut-off
  answer) is not a decision: `RankingError` quotes the line, so the caller can re-ask or drop the
  comparison instead of guessing.
- Notes: the non-empty lines before the decision, stripped of whitespace and of list markers ("-",
  "*", "•", "1.", "2)"). The template asks for at most 3 per solution; more are kept (they do not make
  the decision unreadable) and `RankingAnswer.notes` holds them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from trust.errors import RankingError, excerpt

__all__ = [
    "RANKING_TEMPLATE",
    "RankingAnswer",
    "parse_ranking_answer",
    "render",
]

RANKING_TEMPLATE = """\
Select the best one of two following solutions. WRITE up to 3 the most important
and UNIQUE mistakes/contradictions for a particular response (Like: Solution N
lacks ...) with EXTREMELY concise and exact notes, THEN end output with best
solution overall index (1 or 2) on the new line (Only number, nothing else).
If there are no obvious winner solution (or they are the same) respond with
\u2019Uncertain?\u2019. Make sure that solution is finished and does not abruptly cut off.
Carefully check solution\u2019s consistency with the requirements and comments
with the problem definition.

######Problem######: {R}
######1######. {A}
######2######. {B}
######Decision######:
"""
"""The swarm document's section 4.3 template, as printed (without the typesetting's indentation)."""

_DECISION_MARKER = re.compile(r"^#+\s*decision\s*#+\s*:?\s*", re.IGNORECASE)
_WRAPPERS = "*_`'\"\u2018\u2019\u201c\u201d"
_UNCERTAIN = re.compile(r"uncertain\??", re.IGNORECASE)
_LIST_MARKER = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s+")


@dataclass(frozen=True, slots=True)
class RankingAnswer:
    """A judge's verdict: `choice` 1 or 2 (the better solution), None when uncertain; `notes` are its
    mistake lines, in order."""

    choice: Literal[1, 2] | None
    notes: tuple[str, ...]

    @property
    def result(self) -> float:
        """Solution 1's score as a `Match` result reads it: 1 (1 better), 0 (2 better), 0.5 (uncertain)."""
        return {1: 1.0, 2: 0.0, None: 0.5}[self.choice]


def render(problem: str, a: str, b: str) -> str:
    """The template with the problem and the two solutions (shown as 1 and 2) filled in."""
    return RANKING_TEMPLATE.format(R=problem, A=a, B=b)


def _decision(line: str) -> tuple[bool, Literal[1, 2] | None]:
    """(True, the choice) when the line is a decision, (False, None) when it is not."""
    text = _DECISION_MARKER.sub("", line.strip())
    previous = None
    while text != previous:  # peel wrappers in any nesting: **`1`**., '*Uncertain?*'
        previous = text
        text = text.strip().removesuffix(".").strip(_WRAPPERS).strip()
    if text == "1":
        return True, 1
    if text == "2":
        return True, 2
    return bool(_UNCERTAIN.fullmatch(text)), None


def parse_ranking_answer(text: str) -> RankingAnswer:
    """Read a judge model's answer to `RANKING_TEMPLATE`; `RankingError` when its last non-empty line
    is not a decision (the message quotes the line)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise RankingError("the ranking answer is empty: expected notes and a last line of 1, 2 or 'Uncertain?'")
    valid, choice = _decision(lines[-1])
    if not valid:
        raise RankingError(
            f"the ranking answer's last line {excerpt(lines[-1], 120)!r} is not a decision: expected "
            f"'1', '2' or 'Uncertain?' alone on the line (answer: {excerpt(text, 200)!r}); re-ask the judge"
        )
    notes = tuple(_LIST_MARKER.sub("", line) for line in lines[:-1])
    return RankingAnswer(choice=choice, notes=tuple(note for note in notes if note))
