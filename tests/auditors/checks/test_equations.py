"""The equation check (`trust.auditors.checks.equations`): each equation follows from the one before.

Solutions written here: a sound chain passes, a wrong rewrite fails at the step that writes it,
and values tried one after another, identities and new unknowns are never failed.
"""

from __future__ import annotations

import asyncio

from trust.auditors.base import AuditRequest, CheckResult, Outcome
from trust.auditors.checks.equations import EquationCheck, solved_equations
from trust.core.graphs.cig import AgentTurn, Role

CHECK = EquationCheck()


def results(*steps: str) -> list[CheckResult]:
    turns = [AgentTurn(f"t{i}", i, "solver", Role.EXPERT, text, "q") for i, text in enumerate(steps)]
    return [asyncio.run(CHECK.check(AuditRequest(turn, tuple(turns[:i])))) for i, turn in enumerate(turns)]


def test_a_sound_chain_passes() -> None:
    found = results("Let x be the brother's pay: 5000 = x / 2.", "Multiplying both sides by 2: 10000 = x.")
    assert [r.outcome for r in found] == [Outcome.NOT_APPLICABLE, Outcome.PASS]
    (solved,) = solved_equations("3y + 6 = 27")
    assert solved[1] == "y" and {str(v) for v in solved[2]} == {"7"}


def test_a_wrong_rewrite_fails_where_it_is_written() -> None:
    found = results("We get 2J + 10 = 100.", "Adding 3J to the left, this simplifies to 5J + 20 = 100.", "So J = 16.")
    assert [r.outcome for r in found][:2] == [Outcome.NOT_APPLICABLE, Outcome.FAIL]
    assert found[1].fault == "equation does not follow" and found[1].expected == "45"
    within = results("Then 150 + x = 500, so x = 350 - 150 = 200.")
    assert within[0].outcome is Outcome.FAIL


def test_values_tried_identities_and_new_unknowns_are_not_failed() -> None:
    tried = results("For n = 1: 2^1 = 2, not above 5.", "For n = 2: 2^2 = 4, not above 5.")
    assert Outcome.FAIL not in [r.outcome for r in tried]
    assert results("So x - 14 - 7 = x - 21.")[0].outcome is Outcome.NOT_APPLICABLE
    renamed = results("We solve 2x = 10.", "Let x be the number of pens now: 3x = 12.")
    assert renamed[1].outcome is Outcome.NOT_APPLICABLE


def test_display_blocks_on_one_line_are_separate_equations() -> None:
    # three display blocks on one line: each holds its own statement, none runs into the next
    sound = results("Let x be the weight: \\[ x = \\frac{2}{3} \\times 27 \\] \\[ x = 2 \\times 9 \\] \\[ x = 18 \\]")
    assert sound[0].outcome is not Outcome.FAIL
    found = [written for written, *_ in solved_equations("\\[ 4y = 36 \\] \\[ y = 9 \\]")]
    assert found == ["4 * y = 36", "y = 9"]
    wrong = results("We have \\[ 4y = 36 \\]", "Dividing: \\[ 2y = 36 \\] \\[ y = 18 \\]")
    assert wrong[1].outcome is Outcome.FAIL


def test_a_spaced_dash_is_a_minus_and_a_unit_is_no_unknown() -> None:
    found = results("We have 3x + 4 = 28.", "Subtracting 4 from each side, 3x + 4 - 4 = 28 – 4.")
    assert found[1].outcome is Outcome.PASS
    # "62 mm" is a length, not m * m: no equation in m is read, so none can fail
    assert solved_equations("The first is 50 - 5 = 45 mm thick.") == []
    units = results("The first is 50 - 5 = 45 mm thick.", "The second is 31 x 2 = 62 mm thick.")
    assert Outcome.FAIL not in [r.outcome for r in units]
