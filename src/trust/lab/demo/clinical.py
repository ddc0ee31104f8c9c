"""The paper's CHA2DS2-VASc example (section 1.3, Figure 1) as two plain-text traces, the sound one and
the flawed one that reaches the same score (2) by coincidence with four errors, and their HDAGs as the
deterministic decomposer builds them from that text (`trust.core.decompose.rules.from_text`).

Text. Every line holds the paper's own words, verbatim but for three things the paper's text
extraction garbled or added: "58 << 75" is written "58 < 75" (the extraction's rendering of "<"),
the LaTeX ``\\geq``, ``\\notin``, ``\\rightarrow`` are the Unicode ≥, ∉, → (the check reads both), and
the paper's annotations are left out: "[ERROR: ...]", "[Rule completely skipped]" and "Reasoning
Quality: ..." are the paper's commentary on the trace, not part of it, and "Correct Answer: ..." is
the answer key, not part of the model's input. The approach line (`STRATEGY`) opens the trace with
the paper's "Running score: 0" and says how the trace proceeds.

A trace is written as a user would: the clinical input (the notes, the task and its eight rules, one
a line) as the first paragraph, then one line per rule application, then the final score and the
recommendation, on one line. The decomposer (not this module) finds the shape: the first paragraph
is the goal (`g0`: it lists a rule table), the approach line a strategy (`st1`), each rule line a
step (`s1`, ...) whose parents are the goal (the notes and the rules: its evidence) and the step
before it (the running score), the final score a step whose parents are the goal and every rule step
(so its auditor can check coverage and the sum). The router sends the rule steps and the final score
to tier 1 (checkable: the grounding check of `trust.auditors.checks.grounding` decides them) and the
goal and the strategy to tier 3 (a medical plan). The flawed trace has no line for the Age 65-74
rule (it skipped it) and one, "Vascular + Sex combined", for two rules.

`trust demo` audits both traces on a local network; tests/auditors/cha2ds2vasc.py writes them (and
segments cut from them) as JSON fixtures.
"""

from __future__ import annotations

from trust.core.decompose.rules import from_text
from trust.core.decompose.scoring import final_score as stated_final_score
from trust.core.graphs.hdag import Hdag

__all__ = [
    "ANSWER_KEY",
    "CLINICAL_NOTE",
    "FLAWED_CORRECT_STEPS",
    "FLAWED_ERRORS",
    "FINAL",
    "FLAWED_IDS",
    "FLAWED_STEPS",
    "FLAWED_TEXT",
    "GOAL",
    "PATIENT_NOTE",
    "RULES",
    "SOUND_IDS",
    "SOUND_STEPS",
    "SOUND_TEXT",
    "STRATEGY",
    "TASK",
    "final_node",
    "final_score",
    "flawed_trace",
    "output_only_check",
    "sound_trace",
]

PATIENT_NOTE = (
    "Patient Note: 58-year-old male admitted with atrial fibrillation. Weight: 85 kg; serum creatinine: "
    "1.4 mg/dL; no active bleeding; no history of stroke."
)
CLINICAL_NOTE = (
    "Clinical Note: Patient has hypertension (on BP medications) and type 2 diabetes (on metformin). "
    "No heart failure, no prior stroke/TIA, no vascular disease."
)
TASK = "Task: Calculate CHA2DS2-VASc score to determine anticoagulation need using the following scoring rules:"
RULES: tuple[str, ...] = (
    "Congestive heart failure: +1 point if present",
    "Hypertension: +1 point if present",
    "Age ≥75 years: +2 points if applicable",
    "Age 65-74 years: +1 point if applicable",
    "Diabetes mellitus: +1 point if present",
    "Prior stroke/TIA: +2 points if present",
    "Vascular disease: +1 point if present",
    "Female sex: +1 point if female",
)
GOAL = "\n".join(("Clinical Input", PATIENT_NOTE, CLINICAL_NOTE, TASK, *RULES))

STRATEGY = (
    "Running score: 0. Approach: evaluate each scoring rule of the task independently, in turn, extracting "
    "its evidence from the notes, and keep a running score."
)

SOUND_STEPS: tuple[tuple[str, str], ...] = (
    ("age_ge_75", "Age ≥75 rule: Extract patient age from note: 58 years. Check: 58 < 75 → Add 0 points. Score: 0"),
    ("age_65_74", "Age 65-74 rule: Patient age is 58 years. Check: 58 ∉ [65, 74] → Add 0 points. Score: 0"),
    ("chf", "CHF rule: Extract from clinical note: “No heart failure” → Add 0 points. Score: 0"),
    (
        "hypertension",
        "Hypertension rule: Extract from clinical note: “Patient has hypertension (on BP medications)” → "
        "Add +1 point. Score: 1",
    ),
    (
        "diabetes",
        "Diabetes rule: Extract from clinical note: “type 2 diabetes (on metformin)” → Add +1 point. Score: 2",
    ),
    ("stroke_tia", "Stroke/TIA rule: Extract from clinical note: “no prior stroke/TIA” → Add 0 points. Score: 2"),
    ("vascular", "Vascular disease rule: Extract from clinical note: “no vascular disease” → Add 0 points. Score: 2"),
    ("sex", "Sex rule: Extract from patient note: “male” → Add 0 points. Score: 2"),
)
"""(name, line) of the sound trace's rule steps, in the trace's order (`SOUND_IDS` gives their node ids)."""

FLAWED_STEPS: tuple[tuple[str, str], ...] = (
    (
        "age_ge_75",
        "Age ≥75 rule: Extract age: 58 years. Compare with weight 85 kg: Is 85 ≥ 75? Yes, but wait… check "
        "creatinine 1.4 instead: 1.4 < 75 → Add 0 points. Score: 0",
    ),
    ("chf", "CHF rule: Extract from clinical note: “No heart failure” → Add 0 points. Score: 0"),
    (
        "hypertension",
        "Hypertension rule: Extract from patient note: “creatinine: 1.4 mg/dL.” Reasoning: Elevated creatinine "
        "indicates kidney disease, which is associated with hypertension. Therefore, hypertension is likely "
        "present → Add +1 point. Score: 1",
    ),
    (
        "diabetes",
        "Diabetes rule: Extract from clinical note: “type 2 diabetes (on metformin)” → Add +1 point. Score: 2",
    ),
    ("stroke_tia", "Stroke/TIA rule: Extract from clinical note: “no prior stroke/TIA” → Add 0 points. Score: 2"),
    (
        "vascular_sex",
        "Vascular + Sex combined: Perform combined evaluation: Clinical note shows “no vascular disease” and "
        "patient is “male.” Both criteria contribute 0 points → Add 0 points. Score: 2",
    ),
)
"""(name, line) of the flawed trace's rule steps; the Age 65-74 rule has none (skipped)."""

FINAL = "Final Score: CHA2DS2-VASc = 2; Recommendation: Anticoagulation indicated"
"""The paper's two closing lines on one line, so that the recommendation travels with the score it
follows from (one node, as in the paper's Figure 1)."""


def _text(steps: tuple[tuple[str, str], ...]) -> str:
    return GOAL + "\n\n" + "\n".join((STRATEGY, *(line for _, line in steps), FINAL)) + "\n"


SOUND_TEXT = _text(SOUND_STEPS)
"""The sound trace as plain text: the clinical input, a blank line, then one line per step."""

FLAWED_TEXT = _text(FLAWED_STEPS)
"""The flawed trace as plain text."""


def _ids(steps: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """Name -> node id as the decomposer numbers them (`trust.core.decompose.rules`: the goal `g0`,
    the strategy `st1`, steps `s1`, `s2`, ... in trace order); a test checks them against its graph."""
    names = [name for name, _ in steps] + ["final"]
    return {"goal": "g0", "strategy": "st1", **{name: f"s{i}" for i, name in enumerate(names, start=1)}}


SOUND_IDS = _ids(SOUND_STEPS)
FLAWED_IDS = _ids(FLAWED_STEPS)

FLAWED_ERRORS: dict[str, str] = {
    FLAWED_IDS["age_ge_75"]: "variable confusion",
    FLAWED_IDS["final"]: "skipped rule",
    FLAWED_IDS["hypertension"]: "unsupported finding",
    FLAWED_IDS["vascular_sex"]: "combined rules",
}
"""The paper's four errors: the node id that makes each and the fault the grounding check names:
(1) age confused with weight and creatinine, (2) the Age 65-74 rule skipped (seen where coverage is
checked: the final score), (3) hypertension inferred from creatinine, (4) vascular disease and sex
evaluated in one step."""

FLAWED_CORRECT_STEPS: tuple[str, ...] = tuple(FLAWED_IDS[name] for name in ("chf", "diabetes", "stroke_tia"))
"""The node ids of the flawed trace's rule steps that are right."""


def sound_trace() -> Hdag:
    """The sound trace's HDAG, decomposed from `SOUND_TEXT`: all eight rules, each on its own."""
    return from_text(SOUND_TEXT)


def flawed_trace() -> Hdag:
    """The flawed trace's HDAG, decomposed from `FLAWED_TEXT`: the same score by coincidence, with the
    four errors of `FLAWED_ERRORS`."""
    return from_text(FLAWED_TEXT)


def final_node(trace: Hdag) -> str:
    """The id of the node that states the final score (the last one, when several do)."""
    stating = [node.id for node in trace.nodes() if stated_final_score(node.content) is not None]
    if not stating:
        raise ValueError("the trace states no final score")
    return stating[-1]


ANSWER_KEY = 2
"""The paper's answer key for this patient ("Correct Answer: CHA2DS2-VASc = 2"): hypertension and
diabetes, one point each."""


def final_score(trace: Hdag) -> int | None:
    """The score the trace's final node states, or None when it states none."""
    scores = [stated_final_score(node.content) for node in trace.nodes()]
    stated = [score for score in scores if score is not None]
    return stated[-1] if stated else None


def output_only_check(trace: Hdag) -> bool:
    """What an output-only evaluation sees: the final answer against the answer key, nothing else.

    Both traces state a score of 2 and recommend anticoagulation, so this check passes both; the
    flawed trace reaches the right number through four errors that only an audit of its steps finds.
    """
    return final_score(trace) == ANSWER_KEY
