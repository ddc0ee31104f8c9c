"""The provenance check (`trust.auditors.checks.provenance`): an operand must come from somewhere.

The solutions are written here: a sound one passes at every step, and a flawed one fails at the
step that computes with a number it was never given.
"""

from __future__ import annotations

import asyncio

from trust.auditors.base import AuditRequest, CheckResult, Outcome
from trust.auditors.checks.provenance import AssumptionCheck, ProvenanceCheck, equation_numbers
from trust.core.graphs.cig import AgentTurn, Role

CHECK = ProvenanceCheck()
PROBLEM = (
    "A baker sells 45 muffins a day at $3 each. Her rent is 40% of what she earns in a week. "
    "How much does she keep each week?"
)
SOUND = (
    "She earns 45 × $3 = $135 a day.",
    "In a week she earns 135 × 7 = $945.",
    "Her rent is 40% of that: 0.4 × 945 = $378.",
    "She keeps 945 - 378 = $567. The answer is 567.",
)


def results(steps: tuple[str, ...], problem: str = PROBLEM) -> list[CheckResult]:
    turns = [AgentTurn(f"t{i}", i, "solver", Role.EXPERT, text, problem) for i, text in enumerate(steps)]
    return [asyncio.run(CHECK.check(AuditRequest(turn, tuple(turns[:i])))) for i, turn in enumerate(turns)]


def test_a_sound_solution_passes_every_step() -> None:
    assert [r.outcome for r in results(SOUND)] == [Outcome.PASS] * 4


def test_a_misread_value_fails_at_its_step() -> None:
    flawed = (SOUND[0], "In a week she earns 135 × 6 = $810.", "Her rent is 0.4 × 810 = $324.")
    # 6 days is not in the problem, and not a constant of the calendar
    outcomes = [r.outcome for r in results(flawed)]
    assert outcomes == [Outcome.PASS, Outcome.FAIL, Outcome.PASS]
    failed = results(flawed)[1]
    assert failed.fault == "number from nowhere" and "6 in '135 × 6'" in failed.detail


def test_a_wrong_intermediate_carried_on_fails() -> None:
    # 7 * 70 is 490: the 470 of the second operation was never computed
    problem = "A bakery has 40 less than seven times the 70 loaves Sam had. How many loaves?"
    (result,) = results(("The bakery has 7 * 70 - 40 = 470 - 40 = 430 loaves.",), problem)
    assert result.outcome is Outcome.FAIL and "470" in result.detail


def test_computed_words_and_constants_are_given() -> None:
    problem = "Tom walks half an hour a day, twice as long on Sunday. How many minutes a week?"
    steps = ("Half an hour is 60 / 2 = 30 minutes.", "Sunday is 30 × 2 = 60 minutes, the other days 30 × 6 = 180.")
    # 6 = 7 - 1 is not written: the step computes with a number it was not given
    assert [r.outcome for r in results(steps, problem)] == [Outcome.PASS, Outcome.FAIL]
    fixed = (steps[0], "Sunday is 30 × 2 = 60 minutes; the other 7 - 1 = 6 days, 30 × 6 = 180.")
    assert [r.outcome for r in results(fixed, problem)] == [Outcome.PASS, Outcome.PASS]


def test_prose_and_tool_output_are_not_judged() -> None:
    assert results(("The answer is 567 dollars.",))[0].outcome is Outcome.NOT_APPLICABLE
    tool = AgentTurn("t0", 0, "python", Role.TOOL, "13 * 17 = 221", "")
    assert asyncio.run(CHECK.check(AuditRequest(tool))).outcome is Outcome.NOT_APPLICABLE


def test_the_numbers_of_an_equation_are_given_to_the_operation_that_solves_it() -> None:
    problem = "A bus carries 96 people; there are five times as many adults as children. How many children?"
    steps = (
        "Let c be the children: c + 5c = 96.",
        "Combining like terms, \\[ 6c = 96 \\] \\[ c = \\frac{96}{6} = 16 \\]",
    )
    # 6 is the coefficient the step's own algebra wrote (whether it follows is the equation check's to say)
    assert [r.outcome for r in results(steps, problem)] == [Outcome.NOT_APPLICABLE, Outcome.PASS]
    # an assignment gives nothing: the operation it writes is the one judged
    assert equation_numbers("c = 96/13 = 7.38") == set()
    assert results(("So c = 96 / 13 = 7.38.",), problem)[0].outcome is Outcome.FAIL


def test_a_fraction_restating_a_computed_value_is_given() -> None:
    problem = "A snail crawls 3 metres in 51 minutes. How far does it crawl in a minute?"
    # 1/17 writes anew the value 3/51 just computed; 17 itself was never given
    assert results(("It crawls 3/51 = 1/17 metres per minute.",), problem)[0].outcome is Outcome.PASS
    # a fraction whose value is only a constant's (6/2 = 3) is still traced: 6 comes from nowhere
    assert results(("It crawls 6/2 = 3 metres in 51 * 2 minutes.",), problem)[0].outcome is Outcome.FAIL


def test_a_constant_is_not_read_in_another_scale() -> None:
    problem = "A kite flies 1000 feet high on a 300 foot line. How high with a longer line?"
    # 200 is no given 2 (a constant, "pairs") read as a percentage: it comes from nowhere
    assert results(("It flies 1000 + 200 = 1200 feet.",), problem)[0].outcome is Outcome.FAIL
    # a given percentage is still read in both scales
    assert results(("The tax is 0.15 * 300 = 45.",), "A 300 dollar kite with 15% tax.")[0].outcome is Outcome.PASS
    # coins in cents and the weekdays are constants of their own
    assert results(("She has 3 * 25 + 2 * 5 = 85 cents.",), "She has 3 quarters and 2 nickels.")[0].outcome is (
        Outcome.PASS
    )


def assumption_results(steps: tuple[str, ...], problem: str) -> list[CheckResult]:
    turns = [AgentTurn(f"t{i}", i, "solver", Role.EXPERT, text, problem) for i, text in enumerate(steps)]
    check = AssumptionCheck()
    return [asyncio.run(check.check(AuditRequest(turn, tuple(turns[:i])))) for i, turn in enumerate(turns)]


def test_a_number_brought_in_by_an_assumption_fails_at_its_step() -> None:
    problem = "Nia earns $40 a day at the bakery and spends $90 a week. How much does she save in a week?"
    flawed = ("Nia earns $40 a day.", "Assuming she works 6 days a week, she earns 6 × 40 = $240.")
    outcomes = [r.outcome for r in assumption_results(flawed, problem)]
    assert outcomes == [Outcome.NOT_APPLICABLE, Outcome.FAIL]
    failed = assumption_results(flawed, problem)[1]
    assert failed.fault == "assumed data" and "writes 6, 6" in failed.detail
    # a usual value is still the solution's own data when it is assumed: 7 days is a constant elsewhere
    usual = assumption_results(("Assuming a week of 7 days, she earns 7 × 40 = $280.",), problem)
    assert usual[0].outcome is Outcome.FAIL


def test_an_assumption_with_given_numbers_only_passes() -> None:
    problem = "Nia works 5 days a week and earns $40 a day. How much does she earn in 7 days?"
    sound = ("Assuming she keeps the same 5-day schedule, in a week she earns 5 × 40 = $200.",)
    assert assumption_results(sound, problem)[0].outcome is Outcome.PASS
    # a step that assumes nothing is the provenance check's to judge
    assert assumption_results(("She earns 6 × 40 = $240.",), problem)[0].outcome is Outcome.NOT_APPLICABLE
