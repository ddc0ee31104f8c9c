"""The paper's CHA2DS2-VASc example (section 1.3, Figure 1) as two HDAGs: the sound trace and the flawed
one that reaches the same score (2) by coincidence, with four errors.

Text. Every node holds the paper's own words, verbatim but for three things the paper's text
extraction garbled or added: "58 << 75" is written "58 < 75" (the extraction's rendering of "<"),
the LaTeX ``\\geq``, ``\\notin``, ``\\rightarrow`` are the Unicode ≥, ∉, → (the check reads both), and
the paper's annotations are left out: "[ERROR: ...]", "[Rule completely skipped]" and "Reasoning
Quality: ..." are the paper's commentary on the trace, not part of it, and "Correct Answer: ..." is
the answer key, not part of the model's input.

Shape (the auditor of a node sees that node and its direct parents only, so each node's evidence
is among its parents):

- `goal` (goal): the clinical input, the patient note and the clinical note, and the task with its
  eight scoring rules, one a line.
- `strategy` (strategy): "Running score: 0" (the paper's first line) and the approach both traces
  follow: each rule on its own, in turn, keeping a running score.
- one step node per rule application as the trace wrote it, in order. Parents: the goal (the note
  and the rules: the evidence) and the previous step (the running score); the first step's previous
  node is the strategy. The flawed trace has no node for the Age 65-74 rule (it skipped it) and one
  node, `vascular_sex`, for the vascular disease and sex rules it evaluated together.
- `final` (operation): "Final Score: CHA2DS2-VASc = 2" and the recommendation. Parents: the goal and
  every rule step, so its auditor sees every rule step and can check coverage and the sum.

Edges: goal -> strategy and strategy -> first step are `decomposes_to`; goal -> step, previous step ->
step and step -> final are `depends_on`. Domain "medical", stakes "high". Tiers: goal and strategy as
`trust.core.graphs.routing.route_tier` gives them (tier 3: a medical plan); the rule steps and the final
node at tier 1, set by hand, as the paper's own worked example (2.1.4) sets its checkable steps: each
is a rule application the tier-1 grounding check decides (`trust.auditors.checks.grounding`).

`trust demo` audits both traces on a local network; tests/auditors/cha2ds2vasc.py writes them (and
segments cut from them) as JSON fixtures.
"""

from __future__ import annotations

import re

from trust.core.graphs.hdag import Difficulty, EdgeType, Hdag, HdagNode, Level, Tier
from trust.core.graphs.routing import route_tier, stakes_for_domain
from trust.core.graphs.validation import validate

__all__ = [
    "ANSWER_KEY",
    "CLINICAL_NOTE",
    "FLAWED_CORRECT_STEPS",
    "FLAWED_ERRORS",
    "FINAL",
    "FLAWED_STEPS",
    "GOAL",
    "PATIENT_NOTE",
    "RULES",
    "SOUND_STEPS",
    "STRATEGY",
    "TASK",
    "final_score",
    "flawed_trace",
    "output_only_check",
    "sound_trace",
]

DOMAIN = "medical"

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
    "Running score: 0. Evaluate each scoring rule of the task independently, in turn, extracting its "
    "evidence from the notes, and keep a running score."
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
"""(node id, content) of the sound trace's rule steps, in the trace's order."""

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
"""(node id, content) of the flawed trace's rule steps; the Age 65-74 rule has none (skipped)."""

FINAL = "Final Score: CHA2DS2-VASc = 2\nRecommendation: Anticoagulation indicated"

FLAWED_ERRORS: dict[str, str] = {
    "age_ge_75": "variable confusion",
    "final": "skipped rule",
    "hypertension": "unsupported finding",
    "vascular_sex": "combined rules",
}
"""The paper's four errors: the node that makes each and the fault the grounding check names:
(1) age confused with weight and creatinine, (2) the Age 65-74 rule skipped (seen where coverage is
checked: the final score), (3) hypertension inferred from creatinine, (4) vascular disease and sex
evaluated in one step."""

FLAWED_CORRECT_STEPS: tuple[str, ...] = ("chf", "diabetes", "stroke_tia")
"""The flawed trace's rule steps that are right."""


def _node(node_id: str, level: Level, content: str, difficulty: Difficulty, tier: Tier | None = None) -> HdagNode:
    stakes = stakes_for_domain(DOMAIN)
    routed = route_tier(level, difficulty, DOMAIN, stakes) if tier is None else tier
    return HdagNode(node_id, level, content, difficulty, DOMAIN, stakes, routed)


def _trace(steps: tuple[tuple[str, str], ...]) -> Hdag:
    hdag = Hdag()
    hdag.add_node(_node("goal", Level.GOAL, GOAL, Difficulty.MEDIUM))
    hdag.add_node(_node("strategy", Level.STRATEGY, STRATEGY, Difficulty.EASY))
    hdag.add_edge("goal", "strategy", EdgeType.DECOMPOSES_TO)
    previous = "strategy"
    for node_id, content in steps:
        hdag.add_node(_node(node_id, Level.STEP, content, Difficulty.EASY, Tier.COMPUTATIONAL))
        hdag.add_edge("goal", node_id, EdgeType.DEPENDS_ON)
        kind = EdgeType.DECOMPOSES_TO if previous == "strategy" else EdgeType.DEPENDS_ON
        hdag.add_edge(previous, node_id, kind)
        previous = node_id
    hdag.add_node(_node("final", Level.OPERATION, FINAL, Difficulty.EASY, Tier.COMPUTATIONAL))
    hdag.add_edge("goal", "final", EdgeType.DEPENDS_ON)
    for node_id, _ in steps:
        hdag.add_edge(node_id, "final", EdgeType.DEPENDS_ON)
    validate(hdag)
    return hdag


def sound_trace() -> Hdag:
    """The sound trace: all eight rules, each on its own, evidence from the notes."""
    return _trace(SOUND_STEPS)


def flawed_trace() -> Hdag:
    """The flawed trace: the same score by coincidence, with the four errors of `FLAWED_ERRORS`."""
    return _trace(FLAWED_STEPS)


ANSWER_KEY = 2
"""The paper's answer key for this patient ("Correct Answer: CHA2DS2-VASc = 2"): hypertension and
diabetes, one point each."""

_FINAL_SCORE = re.compile(r"CHA2DS2-VASc\s*=\s*(\d+)")


def final_score(trace: Hdag) -> int | None:
    """The score the trace's final node states, or None when it states none."""
    match = _FINAL_SCORE.search(trace.node("final").content)
    return int(match.group(1)) if match else None


def output_only_check(trace: Hdag) -> bool:
    """What an output-only evaluation sees: the final answer against the answer key, nothing else.

    Both traces state a score of 2 and recommend anticoagulation, so this check passes both; the
    flawed trace reaches the right number through four errors that only an audit of its steps finds.
    """
    return final_score(trace) == ANSWER_KEY
