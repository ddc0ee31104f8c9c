"""The tier-1 evidence-grounding and rule-coverage check (`trust.auditors.checks.grounding`).

The paper's CHA2DS2-VASc traces (section 1.3): every one of the flawed trace's four errors is found
at its node with its fault, its correct steps pass, and every node of the sound trace passes (the
goal and the strategy, which claim nothing checkable, are not applicable). The same holds for the
segment files and for the traces written in plain ASCII or in the paper's flattened text. A second
score written in the same style (CURB-65) shows the check is not tied to one task. Then each fault
on its own, what is not applicable, and the parsers on edge cases.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.auditors import cha2ds2vasc as paper
from trust.auditors.base import AuditRequest, Check, CheckResult, Outcome, loads_request, request_for
from trust.auditors.checks.grounding import CHECK_NAME, GroundingCheck
from trust.core.decompose.scoring import RuleKind, normalize_text, parse_note, parse_rules, parse_step, parse_task
from trust.core.graphs.hdag import Difficulty, EdgeType, Hdag, HdagNode, Level
from trust.core.graphs.refinement import ErrorType
from trust.core.graphs.serialization import dumps, loads

CHECK = GroundingCheck()
S, F = paper.SOUND_IDS, paper.FLAWED_IDS  # the paper's step names -> the decomposer's node ids
RULE_STEPS_SOUND = [S[name] for name, _ in paper.SOUND_STEPS]
RULE_STEPS_FLAWED = [F[name] for name, _ in paper.FLAWED_STEPS]
FAULT_TYPES = {
    "variable confusion": ErrorType.FACTUAL,
    "unsupported finding": ErrorType.LOGICAL,
    "combined rules": ErrorType.LOGICAL,
    "skipped rule": ErrorType.LOGICAL,
}


def results(graph: Hdag) -> dict[str, CheckResult]:
    return {node.id: CHECK.run(request_for(graph, node.id)) for node in graph.nodes()}


def failures(found: dict[str, CheckResult]) -> dict[str, str | None]:
    return {node_id: r.fault for node_id, r in found.items() if r.outcome is Outcome.FAIL}


# ------------------------------------------------------------------------------ the paper's traces


def test_flawed_trace_fails_exactly_the_four_errors_of_the_paper() -> None:
    found = results(paper.flawed_trace())
    assert failures(found) == paper.FLAWED_ERRORS
    for node_id, fault in paper.FLAWED_ERRORS.items():
        assert found[node_id].error_type is FAULT_TYPES[fault], node_id
    for node_id in paper.FLAWED_CORRECT_STEPS:
        assert found[node_id].outcome is Outcome.PASS, (node_id, found[node_id].detail)
    assert found[F["goal"]].outcome is Outcome.NOT_APPLICABLE
    assert found[F["strategy"]].outcome is Outcome.NOT_APPLICABLE


def test_flawed_trace_details_name_what_went_wrong() -> None:
    found = results(paper.flawed_trace())
    confusion = found[F["age_ge_75"]]
    assert "weight" in confusion.detail and "serum creatinine" in confusion.detail and "reads age" in confusion.detail
    assert "85" in confusion.detail and "1.4" in confusion.detail
    assert confusion.expected == "age 58 years"
    inferred = found[F["hypertension"]]
    assert "creatinine: 1.4 mg/dL." in inferred.detail and "does not state hypertension" in inferred.detail
    assert inferred.expected == "“Patient has hypertension (on BP medications)”"
    combined = found[F["vascular_sex"]]
    assert "'Vascular disease'" in combined.detail and "'Female sex'" in combined.detail
    skipped = found[F["final"]]
    assert "7/8 rules evaluated" in skipped.detail and "'Age 65-74 years'" in skipped.detail
    assert "Age ≥75" not in skipped.detail


def test_sound_trace_passes_every_rule_step_and_the_final_score() -> None:
    found = results(paper.sound_trace())
    assert failures(found) == {}
    for node_id in [*RULE_STEPS_SOUND, S["final"]]:
        assert found[node_id].outcome is Outcome.PASS, (node_id, found[node_id].detail)
    undecided = {n for n, r in found.items() if r.outcome is Outcome.NOT_APPLICABLE}
    assert undecided == {S["goal"], S["strategy"]}
    assert "8/8 rules evaluated" in found[S["final"]].detail


async def test_the_async_check_is_the_check_protocol() -> None:
    check: Check = GroundingCheck()
    assert isinstance(check, Check) and check.name == CHECK_NAME == "grounding"
    request = request_for(paper.flawed_trace(), F["hypertension"])
    assert await check.check(request) == CHECK.run(request)


def test_fixture_files_equal_the_builders() -> None:
    for path, build in ((paper.SOUND_FILE, paper.sound_trace), (paper.FLAWED_FILE, paper.flawed_trace)):
        text = path.read_text(encoding="utf-8")
        assert text == dumps(build()) + "\n", f"{path.name} is stale: run python -m tests.auditors.cha2ds2vasc"
        assert dumps(loads(text.strip())) == text.strip()


def test_segment_files_load_and_give_the_same_verdicts() -> None:
    traces = {"sound": paper.sound_trace(), "flawed": paper.flawed_trace()}
    assert sorted(p.name for p in paper.SEGMENTS_DIR.glob("*.json")) == sorted(paper.SEGMENTS)
    for name, (which, node_id) in paper.SEGMENTS.items():
        request = request_for(traces[which], node_id)
        from_file = loads_request((paper.SEGMENTS_DIR / name).read_text(encoding="utf-8"))
        assert from_file == request, name
        assert CHECK.run(from_file) == CHECK.run(request), name
    verdicts = {
        name: CHECK.run(loads_request((paper.SEGMENTS_DIR / name).read_text(encoding="utf-8"))).fault
        for name in paper.SEGMENTS
    }
    assert verdicts == {
        "cha2ds2vasc_flawed_age.json": "variable confusion",
        "cha2ds2vasc_flawed_hypertension.json": "unsupported finding",
        "cha2ds2vasc_flawed_vascular_sex.json": "combined rules",
        "cha2ds2vasc_flawed_final.json": "skipped rule",
        "cha2ds2vasc_sound_hypertension.json": None,
        "cha2ds2vasc_sound_final.json": None,
    }


def _rewritten(graph: Hdag, replacements: dict[str, str], goal: str | None = None) -> Hdag:
    copy = Hdag()
    for node in graph.nodes():
        content = node.content
        for written, plain in replacements.items():
            content = content.replace(written, plain)
        if goal is not None and node.level is Level.GOAL:
            content = goal
        copy.add_node(HdagNode(node.id, node.level, content, node.difficulty, node.domain, node.stakes, node.tier))
    for edge in graph.edges():
        copy.add_edge(edge.source, edge.target, edge.type)
    return copy


ASCII = {"≥": ">=", "→": "->", "∉": "not in", "“": '"', "”": '"', "…": "..."}
LATEX = {"≥": "\\geq", "→": "\\rightarrow", "∉": "\\notin", "<": "<<"}


@pytest.mark.parametrize("spelling", [ASCII, LATEX], ids=["ascii", "latex"])
def test_plain_and_latex_spellings_give_the_same_verdicts(spelling: dict[str, str]) -> None:
    for build in (paper.sound_trace, paper.flawed_trace):
        unicode = {n: (r.outcome, r.fault) for n, r in results(build()).items()}
        plain = {n: (r.outcome, r.fault) for n, r in results(_rewritten(build(), spelling)).items()}
        assert plain == unicode


PAPER_CLINICAL_INPUT = (
    "Clinical Input Patient Note: 58-year-old male admitted with atrial fibrillation. Weight: 85 kg; serum "
    "creatinine: 1.4 mg/dL; no active bleeding; no history of stroke. Clinical Note: Patient has hypertension "
    "(on BP medications) and type 2 diabetes (on metformin). No heart failure, no prior stroke/TIA, no vascular "
    "disease. Task: Calculate CHA2DS2-VASc score to determine anticoagulation need using the following scoring "
    "rules: Congestive heart failure: +1 point if present Hypertension: +1 point if present Age \\geq75 years: "
    "+2 points if applicable Age 65-74 years: +1 point if applicable Diabetes mellitus: +1 point if present Prior "
    "stroke/TIA: +2 points if present Vascular disease: +1 point if present Female sex: +1 point if female "
    "Correct Answer: CHA2DS2-VASc score = 2 (Hypertension +1, Diabetes +1) \\rightarrow Anticoagulation recommended"
)
"""Section 1.3's clinical input exactly as the paper's text extraction gives it: one line, LaTeX symbols."""


def test_the_papers_flattened_input_gives_the_same_verdicts() -> None:
    task = parse_task(PAPER_CLINICAL_INPUT)
    assert task is not None and len(task.rules) == len(paper.RULES)
    for build in (paper.sound_trace, paper.flawed_trace):
        expected = {n: (r.outcome, r.fault) for n, r in results(build()).items()}
        flattened = {n: (r.outcome, r.fault) for n, r in results(_rewritten(build(), {}, PAPER_CLINICAL_INPUT)).items()}
        assert flattened == expected


# ------------------------------------------------------------------------------- a second score

CURB65_GOAL = "\n".join(
    (
        "Clinical Input",
        "Patient Note: 72-year-old woman with community-acquired pneumonia. Respiratory rate: 24/min; heart rate: "
        "112/min; temperature: 38.4 °C; systolic blood pressure: 128 mmHg; diastolic blood pressure: 76 mmHg; "
        "blood urea: 8.1 mmol/L.",
        "Clinical Note: Alert and oriented, no confusion.",
        "Task: Calculate the CURB-65 score to decide the site of care using the following scoring rules:",
        "Confusion: +1 point if present",
        "Urea > 7 mmol/L: +1 point if applicable",
        "Respiratory rate ≥ 30/min: +1 point if applicable",
        "Blood pressure (systolic < 90 mmHg or diastolic ≤ 60 mmHg): +1 point if applicable",
        "Age ≥ 65 years: +1 point if applicable",
    )
)
CURB65_SOUND = (
    ("confusion", "Confusion rule: Extract from clinical note: “no confusion” → Add 0 points. Score: 0"),
    ("urea", "Urea rule: Extract blood urea from patient note: 8.1 mmol/L. Check: 8.1 > 7 → Add +1 point. Score: 1"),
    ("rr", "RR rule: Extract respiratory rate from patient note: 24/min. Check: 24 < 30 → Add 0 points. Score: 1"),
    (
        "bp",
        "BP rule: Systolic blood pressure 128 mmHg, diastolic 76 mmHg. Check: 128 ≥ 90 and 76 > 60 → Add 0 points. "
        "Score: 1",
    ),
    ("age", "Age rule: Patient age is 72 years. Check: 72 ≥ 65 → Add +1 point. Score: 2"),
)
CURB65_CONFUSED = (
    *CURB65_SOUND[:2],
    ("rr", "RR rule: Extract respiratory rate from patient note: 112/min. Check: 112 ≥ 30 → Add +1 point. Score: 2"),
    (
        "bp",
        "BP rule: Systolic blood pressure 128 mmHg, diastolic 76 mmHg. Check: 128 ≥ 90 and 76 > 60 → Add 0 points. "
        "Score: 2",
    ),
    ("age", "Age rule: Patient age is 72 years. Check: 72 ≥ 65 → Add +1 point. Score: 3"),
)


def scoring_trace(goal: str, steps: tuple[tuple[str, str], ...], final: str) -> Hdag:
    """A trace in the shape of `tests.auditors.cha2ds2vasc`: goal, strategy, chained rule steps, final."""
    hdag = Hdag()
    hdag.add_node(HdagNode("goal", Level.GOAL, goal, domain="medical"))
    hdag.add_node(HdagNode("strategy", Level.STRATEGY, "Running score: 0. Evaluate each rule on its own."))
    hdag.add_edge("goal", "strategy", EdgeType.DECOMPOSES_TO)
    previous = "strategy"
    for node_id, content in steps:
        hdag.add_node(HdagNode(node_id, Level.STEP, content, Difficulty.EASY, "medical"))
        hdag.add_edge("goal", node_id, EdgeType.DEPENDS_ON)
        hdag.add_edge(previous, node_id, EdgeType.DEPENDS_ON)
        previous = node_id
    hdag.add_node(HdagNode("final", Level.OPERATION, final, Difficulty.EASY, "medical"))
    hdag.add_edge("goal", "final", EdgeType.DEPENDS_ON)
    for node_id, _ in steps:
        hdag.add_edge(node_id, "final", EdgeType.DEPENDS_ON)
    return hdag


def test_a_second_score_in_the_same_style_passes_when_sound() -> None:
    found = results(scoring_trace(CURB65_GOAL, CURB65_SOUND, "Final Score: CURB-65 = 2\nRecommendation: admit"))
    assert failures(found) == {}
    assert all(found[node_id].outcome is Outcome.PASS for node_id, _ in CURB65_SOUND)
    assert "5/5 rules evaluated" in found["final"].detail


def test_a_second_score_finds_heart_rate_used_for_respiratory_rate() -> None:
    found = results(scoring_trace(CURB65_GOAL, CURB65_CONFUSED, "Final Score: CURB-65 = 3"))
    assert failures(found) == {"rr": "variable confusion"}
    confusion = found["rr"]
    assert confusion.error_type is ErrorType.FACTUAL
    assert "heart rate" in confusion.detail and "respiratory rate" in confusion.detail
    assert confusion.expected == "respiratory rate 24/min"
    assert "adds +1 point; by the note and the rule it adds 0 points" in confusion.detail


# ------------------------------------------------------------------------------ each fault alone


def step_result(content: str, previous: str = "Running score: 0", goal: str = paper.GOAL) -> CheckResult:
    """The check on one step whose parents are the task and a node holding the previous score."""
    node = HdagNode("step", Level.STEP, content)
    parents = (HdagNode("goal", Level.GOAL, goal), HdagNode("previous", Level.STEP, previous))
    return CHECK.run(AuditRequest(node, parents))


@pytest.mark.parametrize(
    ("content", "fault", "error_type"),
    [
        (
            "Age ≥75 rule: Extract patient age from note: 60 years. Check: 60 < 75 → Add 0 points. Score: 0",
            "ungrounded value",
            ErrorType.FACTUAL,
        ),
        (
            "Hypertension rule: Extract from clinical note: “Patient has severe hypertension” → Add +1 point. Score: 1",
            "ungrounded quote",
            ErrorType.FACTUAL,
        ),
        (
            "Hypertension rule: Extract from patient note: “Patient has hypertension (on BP medications)” → Add +1 "
            "point. Score: 1",
            "wrong evidence source",
            ErrorType.FACTUAL,
        ),
        (
            "Hypertension rule: Extract from clinical note: “Patient has hypertension (on BP medications)” → Add 0 "
            "points. Score: 0",
            "wrong points",
            ErrorType.FACTUAL,
        ),
        (
            "CHF rule: Extract from clinical note: “No heart failure” → Add +1 point. Score: 1",
            "wrong points",
            ErrorType.FACTUAL,
        ),
        (
            "Hypertension rule: Extract from clinical note: “Patient has hypertension (on BP medications)” → Add +1 "
            "point. Score: 2",
            "wrong running score",
            ErrorType.FACTUAL,
        ),
        (
            "Hypertension rule: Patient is hypertensive → Add +1 point. Score: 1",
            "unsupported finding",
            ErrorType.LOGICAL,
        ),
        (
            "Age ≥75 rule: The patient is not elderly → Add 0 points. Score: 0",
            "unsupported finding",
            ErrorType.LOGICAL,
        ),
        (
            "Age rule: Patient age is 58 years. Check: 58 < 65 → Add 0 points. Score: 0",
            "combined rules",
            ErrorType.LOGICAL,
        ),
        (
            "Sex rule: Extract from clinical note: “male” → Add 0 points. Score: 0",
            "wrong evidence source",
            ErrorType.FACTUAL,
        ),
    ],
    ids=[
        "age-not-in-note",
        "misquote",
        "quote-from-the-other-note",
        "present-but-no-points",
        "absent-but-points",
        "sum",
        "no-citation",
        "no-value",
        "one-header-two-age-rules",
        "sex-from-clinical-note",
    ],
)
def test_each_fault_on_its_own(content: str, fault: str, error_type: ErrorType) -> None:
    result = step_result(content)
    assert (result.outcome, result.fault, result.error_type) == (Outcome.FAIL, fault, error_type), result.detail


def test_wrong_running_score_names_the_right_one() -> None:
    result = step_result(
        "Diabetes rule: Extract from clinical note: “type 2 diabetes (on metformin)” → Add +1 point. Score: 3",
        previous="Hypertension rule: ... → Add +1 point. Score: 1",
    )
    assert result.fault == "wrong running score" and result.expected == "Score: 2"


def test_a_final_score_that_is_not_the_sum_fails() -> None:
    graph = paper.sound_trace()
    graph.replace_node(HdagNode(S["final"], Level.STEP, "Final Score: CHA2DS2-VASc = 3", domain="medical"))
    result = CHECK.run(request_for(graph, S["final"]))
    assert (result.fault, result.error_type, result.expected) == ("wrong total", ErrorType.FACTUAL, "2")


# ---------------------------------------------------------------------------------- not applicable


def test_not_applicable_outside_a_scoring_task() -> None:
    node = HdagNode("op", Level.OPERATION, "3 * 4 = 12")
    parents = (HdagNode("goal", Level.GOAL, "Compute 3 times 4"),)
    result = CHECK.run(AuditRequest(node, parents))
    assert result.outcome is Outcome.NOT_APPLICABLE and "no scoring rules in reach" in result.detail


def test_not_applicable_when_the_note_is_silent_and_the_step_cites_nothing() -> None:
    goal = "Patient Note: 58-year-old male.\nTask: score it with these rules:\nDiabetes mellitus: +1 point if present"
    result = step_result("Diabetes rule: not documented → Add 0 points. Score: 0", goal=goal)
    assert result.outcome is Outcome.NOT_APPLICABLE and "says nothing of diabetes" in result.detail


def test_a_silent_note_does_not_support_adding_points() -> None:
    goal = "Patient Note: 58-year-old male.\nTask: score it with these rules:\nDiabetes mellitus: +1 point if present"
    result = step_result("Diabetes rule: probably diabetic → Add +1 point. Score: 1", goal=goal)
    assert result.fault == "unsupported finding"


def test_final_score_without_the_whole_chain_is_not_applicable() -> None:
    graph = paper.sound_trace()
    request = request_for(graph, S["final"])
    goal = next(parent for parent in request.parents if parent.id == S["goal"])
    only_last = AuditRequest(request.node, (goal, request.parents[-1]))
    result = CHECK.run(only_last)
    assert result.outcome is Outcome.NOT_APPLICABLE and "not the whole chain" in result.detail


def test_steps_of_other_shapes_are_not_applicable() -> None:
    assert step_result("Let us now look at the notes carefully.").outcome is Outcome.NOT_APPLICABLE
    assert step_result("Smoking rule: never smoked → Add 0 points").outcome is Outcome.NOT_APPLICABLE


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('Age≥75 rule:“”"CHF+-→0123456789. kg/noScore')), max_size=120))
def test_arbitrary_step_text_never_raises(content: str) -> None:
    result = step_result(content)
    assert result.check == CHECK_NAME


# --------------------------------------------------------------------------------------- parsers


def test_parse_rules_one_a_line_and_run_on() -> None:
    per_line = parse_rules("\n".join(paper.RULES))
    run_on = parse_rules(PAPER_CLINICAL_INPUT)
    assert [r.name for r in per_line] == [r.name for r in run_on] == [line.split(":")[0] for line in paper.RULES]
    assert [(r.points, r.kind) for r in per_line] == [(r.points, r.kind) for r in run_on]
    age, middle, sex = per_line[2], per_line[3], per_line[7]
    assert age.kind is RuleKind.THRESHOLD and age.comparisons[0].describe() == "Age ≥ 75"
    assert middle.comparisons[0].op == "range" and middle.comparisons[0].holds(Decimal(70))
    assert not middle.comparisons[0].holds(Decimal(58))
    assert (sex.kind, sex.value, sex.topic_text) == (RuleKind.CATEGORY, "female", "sex")


def test_parse_rules_bullets_signs_and_prose() -> None:
    rules = parse_rules(
        "Scoring:\n- Bleeding history: +1 point if present\n2. Age > 65 years: -1 point if applicable\n"
        "Points are summed; no rule here."
    )
    assert [(r.name, r.points) for r in rules] == [("Bleeding history", 1), ("Age > 65 years", -1)]


def test_parse_rules_comparisons_with_or_and_units() -> None:
    (rule,) = parse_rules("Blood pressure (systolic < 90 mmHg or diastolic ≤ 60 mmHg): +1 point if applicable")
    assert [(c.label, c.op, c.low, c.unit) for c in rule.comparisons] == [
        ("systolic", "<", Decimal(90), "mmHg"),
        ("diastolic", "≤", Decimal(60), "mmHg"),
    ]


def test_parse_note_values_and_units() -> None:
    note = parse_note(
        "Patient Note: 58-year-old male. Weight: 85 kg; serum creatinine: 1.4 mg/dL. Respiratory rate 24/min, "
        "BP 120/80 mmHg, temperature of 38.4 °C. Patient has hypertension and type 2 diabetes."
    )
    values = {(v.label, v.value, v.unit) for v in note.values}
    assert values == {
        ("age", Decimal(58), "years"),
        ("weight", Decimal(85), "kg"),
        ("serum creatinine", Decimal("1.4"), "mg/dL"),
        ("respiratory rate", Decimal(24), "/min"),
        ("bp", Decimal(120), "mmHg"),
        ("bp", Decimal(80), "mmHg"),
        ("temperature", Decimal("38.4"), "°C"),
    }


@pytest.mark.parametrize("written", ["58-year-old", "58 year old", "58 years old", "58 y/o", "58yo", "aged 58"])
def test_parse_note_reads_the_ways_age_is_written(written: str) -> None:
    note = parse_note(f"Patient Note: {written} man with chest pain.")
    assert [(v.label, v.value) for v in note.values] == [("age", Decimal(58))]


def test_parse_note_negations() -> None:
    note = parse_note(
        "Clinical Note: No heart failure, no prior stroke/TIA, no vascular disease. "
        "No fever, cough or dyspnea. Patient has hypertension and type 2 diabetes. "
        "Denies chest pain. Smoking: absent. Never smoked but drinks alcohol."
    )
    polarity = {s.text: s.negated for s in note.statements}
    assert polarity == {
        "No heart failure": True,
        "no prior stroke/TIA": True,
        "no vascular disease": True,
        "No fever": True,
        "cough": True,
        "dyspnea": True,
        "Patient has hypertension": False,
        "type 2 diabetes": False,
        "Denies chest pain": True,
        "Smoking: absent": True,
        "Never smoked": True,
        "drinks alcohol": False,
    }


def test_parse_note_sections_stop_at_the_task() -> None:
    task = parse_task(paper.GOAL)
    assert task is not None
    assert [s.name for s in task.note.sections] == ["patient note", "clinical note"]
    assert all("point if" not in s.text and "Task" not in s.text for s in task.note.sections)


def test_parse_step_claims() -> None:
    rules = parse_rules("\n".join(paper.RULES))
    note = parse_note(paper.GOAL)
    claim = parse_step(paper.FLAWED_STEPS[0][1], rules, note)
    assert claim is not None
    assert [r.name for r in claim.rules] == ["Age ≥75 years"]
    assert (claim.points, claim.score) == (0, 0)
    assert claim.values == tuple(Decimal(v) for v in ("58", "85", "85", "75", "1.4", "1.4", "75"))
    combined = parse_step(paper.FLAWED_STEPS[-1][1], rules, note)
    assert combined is not None
    assert [r.name for r in combined.rules] == ["Vascular disease", "Female sex"]
    assert [(q.text, q.source) for q in combined.quotes] == [("no vascular disease", "clinical note"), ("male.", None)]


@pytest.mark.parametrize(
    ("header", "named"),
    [
        ("CHF rule", ["Congestive heart failure"]),
        ("Stroke/TIA rule", ["Prior stroke/TIA"]),
        ("Sex rule", ["Female sex"]),
        ("Age ≥75 rule", ["Age ≥75 years"]),
        ("Age >= 75 rule", ["Age ≥75 years"]),
        ("Age 65-74 rule", ["Age 65-74 years"]),
        ("Age rule", ["Age ≥75 years", "Age 65-74 years"]),
        ("Diabetes rule", ["Diabetes mellitus"]),
        ("Transient ischemic attack rule", ["Prior stroke/TIA"]),
        ("Vascular + Sex combined", ["Vascular disease", "Female sex"]),
        ("Kidney rule", []),
    ],
)
def test_headers_name_rules_by_words_and_acronyms(header: str, named: list[str]) -> None:
    rules = parse_rules("\n".join(paper.RULES))
    claim = parse_step(f"{header}: → Add 0 points", rules)
    assert ([] if claim is None else [r.name for r in claim.rules]) == named


def test_generic_head_words_do_not_mention_a_rule() -> None:
    goal = paper.GOAL.replace("no vascular disease", "no kidney disease")
    result = step_result(
        "Vascular disease rule: Extract from clinical note: “no kidney disease” → Add 0 points.", goal=goal
    )
    assert result.fault == "unsupported finding"
    stroke = step_result("Stroke/TIA rule: Extract from patient note: “no history of stroke” → Add 0 points. Score: 0")
    assert stroke.outcome is Outcome.PASS, stroke.detail


def test_normalize_text_spellings() -> None:
    assert normalize_text("Age \\geq75 -> 58 << 75, 65–74 >= 1") == "Age ≥75 → 58 < 75, 65-74 ≥ 1"


def test_a_step_that_restates_its_rule_is_still_checked() -> None:
    result = step_result(
        "Age ≥75 rule: the rule reads Age ≥75 years: +2 points if applicable. Patient age is 58 years, 58 < 75 → "
        "Add 0 points. Score: 0"
    )
    assert result.outcome is Outcome.PASS, result.detail


def test_negative_points_are_read_and_described() -> None:
    goal = "Patient Note: no recent bleeding.\nTask: score with these rules:\nRecent bleeding: -1 point if present"
    (rule,) = parse_rules(goal)
    assert rule.describe() == "'Recent bleeding' (-1 if present)"
    result = step_result("Bleeding rule: Extract from patient note: “no recent bleeding” → Add 0 points.", goal=goal)
    assert result.outcome is Outcome.PASS, result.detail


_FRAGMENTS = [
    *paper.RULES,
    paper.PATIENT_NOTE,
    paper.CLINICAL_NOTE,
    paper.TASK,
    *(content for _, content in paper.FLAWED_STEPS),
    "Final Score: 7",
    "Score: 2",
    "“",
    ":",
    "\n",
    "Add +3 points",
    "BP 120/80 mmHg",
]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=8), st.lists(st.sampled_from(_FRAGMENTS), max_size=12))
def test_arbitrary_mixes_of_task_and_step_text_never_raise(step: list[str], goal: list[str]) -> None:
    result = step_result(" ".join(step), goal=" ".join(goal))
    assert result.check == CHECK_NAME
