"""Tier 2 (paper 3.1.1): a language model judges one segment through an OpenAI-compatible endpoint.

`LlmAuditor` asks a judge model (any `trust.core.chat.ChatModel`; `trust.adapters.llm.client.LlmClient` is the one
that speaks to an endpoint) about the segment of an `AuditRequest` and turns its structured answers into a `Verdict`.

The prompt. A system prompt per audit layer (paper 2.2.4) states what is judged and how to answer:

- node layer: correctness, completeness and role adherence, with what the node's level is judged on
  (goal: a faithful statement of the problem; strategy: an appropriate approach; tactic: the technique
  applied correctly; step: correct, supported and complete; operation: the exact result; a CIG turn:
  its role's job, a reviewer flagging exactly the real errors);
- edge layer (CIG turns): protocol compliance and information fidelity of each parent's message into
  the turn ("the telephone test": value corruption, semantic drift, injection, loss). One question is
  asked per incoming message (only about the request's `sender` when it names one, the other
  parents being context; a message the turn reuses rather than answers is said to bind no format).

The user prompt holds the audit question (`AuditRequest.audit_question`), the node's level and
domain, the parents as numbered context, and the node, with what running its code printed when
the request carries such observations (an audit of a whole agent log does).

The answer. The judge is asked for one JSON object, constrained by `VERDICT_SCHEMA_NODE` or
`VERDICT_SCHEMA_EDGE` (sent as `response_format`, which the endpoint turns into a decoding
constraint where it can):

    {"critique": str, "error_type": <an ErrorType value allowed for the layer> | null,
     "score": <one of 0, 0.1, ..., 1>, "verdict": "pass" | "fail"}

The critique comes first so that a model writes its reasons before it commits to a number. Two
parts of the schema only steer decoding, and the parse does not require them of an endpoint that
does not enforce schemas: the score is one of eleven steps, because a weak model constrained to "a
number" writes 5.68, and the critique matches a pattern (a letter first, no quote, backslash or
control character, at most `ASKED_CRITIQUE_CHARS`) that a grammar can only complete as a valid,
non-empty, closed JSON string that opens with a word. The schema keeps to what OpenAI's strict mode, vLLM,
Ollama and llama.cpp all accept (every field required, no extra fields, no numeric or length
keywords, some of which strict modes refuse).

The reply is then read strictly with pydantic (`JudgeAnswer`): exactly these fields, exact types (a
score of `true` or `"0.5"` is not a number), a score in [0, 1], a non-blank critique of at most
`MAX_CRITIQUE_CHARS`. The only leniencies are surrounding whitespace, one enclosing Markdown code
fence, and raw control characters inside strings (see `parse_answer`).

The critique is then held to being a judgment of this segment in words (`check_critique`; a weak
model fills the schema's string with a timestamp, stray braces or a copy of what it was shown).
Dates and clock times are taken out first (they are neither words nor evidence); what is left must:

1. hold at least `MIN_CRITIQUE_WORDS` words (a word: two or more letters);
2. not hold the answer's own fields: a quoted field name of the answer followed by a colon, or two
   of its field names each followed by a colon;
3. not copy the instructions: at most `MAX_COPIED_SHARE` of its words may lie in runs of
   `COPY_RUN_WORDS` or more words that also occur in the instructions (the system prompt: the answer
   format's description, the rules; and what the node's level or role is judged on);
4. refer to the segment: share a number, or a content word, with the node's text (and a turn's
   task input) or a parent's text, or name the node or a parent by its id. A content word has three
   or more letters, is not a function word ("the", "which") and is not a word of the instructions
   (a model can take those from its instructions without reading the segment); two words match
   when they agree on their first `MATCH_PREFIX_LETTERS` letters, case aside ("approved" and
   "Approved.", "diabetic" and "diabetes");
5. say something of its own: hold a content word (here, words of the instructions count) that is
   not in the segment, so a copy of the node is not a judgment of it.

A malformed answer (schema or critique) is asked again, up to `max_attempts` times in all: the
question as first sent, with a note saying what was wrong and quoting the node, at
`RETRY_TEMPERATURE`. The refused answer itself is not shown (shown its answer, a small model writes
it again), and the note's words count as instructions for the new critique. Then the audit raises
`LlmError` naming the model, the endpoint, the node, what was wrong with the last answer and an
excerpt of it, and no verdict is made: the worker reports the seat's failure with that reason. A
model that cannot answer must not pass a node silently, nor publish a critique that says nothing.

Bias. Position bias is reduced by asking each question twice: first with the context (parents in
graph order) before the node, then with the node first and the parents reversed. Verbosity bias by
telling the judge that length and style are not evidence, and by capping what is sent: each text
longer than `max_text_chars` keeps its head and its tail around the marker
"[... N characters cut by the auditor ...]" (the judge is told the cut is not the author's), and the
parents share `max_context_chars` between them.

Combining (deterministic, documented in `_combine`): the score of a question is the mean of its two
answers' scores; the segment's score is that mean (node layer) or the lowest mean over the incoming
messages (edge layer: one corrupted message fails the turn). The vote is PASS iff the score is at
least tau (`AuditSettings.tau_node` for the node layer, `tau_edge` for the edge layer), so the vote
always agrees with the score; the judge's own "verdict" fields never override it. The critique is the
stricter answer's (the lower score; the first order on a tie), followed by a note when the two orders
disagreed (different verdicts, or scores `DISAGREEMENT_GAP` or more apart) or when the judge's
verdicts contradict the vote the score gives. A failing verdict names the stricter answer's error
type, else the other answer's, else the layer's default (edge: protocol; a reviewer turn:
negligence; goal, strategy or a planner turn: strategy; otherwise factual).

Not applicable: the node layer of a tool or user turn (it reports or poses, it does not reason; the
turns that use it are judged), and the edge layer of an HDAG node, of a turn without parents or of a
tool turn.

A weak judge proves the wiring, not the verdicts: the embedded SmolLM2-135M
(`trust.adapters.local.llama`) called 17 * 23 = 409 correct. Point `Settings.auditor_llm` at a
stronger endpoint (vLLM, Ollama, a hosted API) for verdicts worth a stake.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from trust.auditors.base import AuditLayer, AuditRequest, Node, Outcome, Verdict, all_or_nothing, node_text
from trust.core.chat import ChatMessage, ChatModel
from trust.core.graphs.cig import CONTEXT_ROLES, AgentTurn, Role
from trust.core.graphs.hdag import HdagNode, Level, Tier
from trust.core.graphs.refinement import ErrorType
from trust.errors import ConfigError, JudgmentError, excerpt
from trust.settings import AuditSettings

__all__ = [
    "ASKED_CRITIQUE_CHARS",
    "COPY_RUN_WORDS",
    "DEFAULT_MAX_ATTEMPTS",
    "DISAGREEMENT_GAP",
    "MATCH_PREFIX_LETTERS",
    "MAX_ANSWER_TOKENS",
    "MAX_COPIED_SHARE",
    "MAX_CRITIQUE_CHARS",
    "MIN_CRITIQUE_WORDS",
    "RETRY_TEMPERATURE",
    "SCORE_STEPS",
    "VERDICT_SCHEMA_EDGE",
    "VERDICT_SCHEMA_NODE",
    "CritiqueContext",
    "JudgeAnswer",
    "LlmAuditor",
    "check_critique",
    "parse_answer",
]

ASKED_CRITIQUE_CHARS: Final = 300
"""The critique length the prompt asks for and the schema's pattern allows, in characters."""
MAX_CRITIQUE_CHARS: Final = 600
"""The longest critique accepted from the judge, in characters: the asked length with a margin, so a
judge that does not enforce the schema and overshoots a little is not asked again."""
MAX_ANSWER_TOKENS: Final = 400
"""`max_tokens` of a judge request: a critique of `ASKED_CRITIQUE_CHARS` at worst one token per
character, the JSON around it (~40 tokens) and a margin. A runaway answer of a judge that does not
enforce the schema is cut here, fails to parse and is asked again, instead of filling the context."""
SCORE_STEPS: Final = 10
"""The score is one of 0, 1/SCORE_STEPS, ..., 1 (tenths)."""
DISAGREEMENT_GAP: Final = 0.3
"""Two orders whose scores are this far apart (or whose verdicts differ) are reported as disagreeing."""
DEFAULT_MAX_ATTEMPTS: Final = 3
"""Asks per question and order before a malformed answer is reported: the first and two retries."""
RETRY_TEMPERATURE: Final = 0.7
"""The temperature of a retry after a malformed answer: a model asked nearly the same question at 0
answers nearly the same. Asked again with the retry's note, SmolLM2-135M wrote a judgment for 3 of 6
refused critiques at 0 and 4 of 6 at 0.7 (clinical demo segments). The first ask stays at 0, so a
well-formed judgment is as repeatable as the endpoint allows."""
MIN_CRITIQUE_WORDS: Final = 3
"""The fewest words (runs of two or more letters, dates and times aside) a critique may have: "17 * 23
is 391, not 409" has two and says it in numbers; "Wrong: 17 * 23 is 391, not 409" is a judgment."""
COPY_RUN_WORDS: Final = 4
"""A run of this many consecutive words that also occurs in the instructions counts as copied."""
MAX_COPIED_SHARE: Final = 0.5
"""The largest share of a critique's words that may be copied from the instructions."""
MATCH_PREFIX_LETTERS: Final = 5
"""Two content words match when they agree on this many first letters (or are equal, when shorter):
a crude stem that needs no dictionary and no language model."""
DEFAULT_MAX_TEXT_CHARS: Final = 4_000
"""The longest node or parent text sent as is, in characters; longer texts keep head and tail."""
DEFAULT_MAX_CONTEXT_CHARS: Final = 12_000
"""All parents' texts together, in characters; with the node and the prompts this stays under 8k
tokens, the context of the embedded SmolLM2 server."""
DEFAULT_CONCURRENCY: Final = 4
"""Judge requests in flight at once (two orders times a few incoming messages)."""
_MIN_PART_CHARS: Final = 200  # a parent's share of the context never falls below this
_CUT_MARKER = "[... {n} characters cut by the auditor ...]"
_FENCE = re.compile(r"\A```[A-Za-z]*\s*\n(?P<body>.*)\n\s*```\Z", re.DOTALL)

_NODE_ERROR_TYPES: Final = (ErrorType.FACTUAL, ErrorType.LOGICAL, ErrorType.STRATEGY, ErrorType.NEGLIGENCE)
_EDGE_ERROR_TYPES: Final = (ErrorType.PROTOCOL,)
_SCORE_VALUES: Final = [round(i / SCORE_STEPS, 2) for i in range(SCORE_STEPS + 1)]
# The critique, as a decoding constraint: it starts with a letter (a weak model otherwise answers "",
# and, allowed a digit first, SmolLM2-135M wrote a bare timestamp for 14 of 52 answers on the clinical
# demo's segments, none once held to a letter), holds no quote, backslash or control character and
# ends within ASKED_CRITIQUE_CHARS, so that a grammar built from the schema can only produce a valid,
# closed JSON string (llama-cpp-python's own string rule lets raw newlines through, and a small model
# that rambles never closes its string). OpenAI's strict mode, vLLM and llama.cpp accept regular expressions in
# `pattern`; the bound lives there because strict modes refuse `maxLength`.
_CRITIQUE_PATTERN: Final = rf'^[A-Za-z][^"\\\x00-\x1f]{{0,{ASKED_CRITIQUE_CHARS - 1}}}$'


def _schema(name: str, error_types: Sequence[ErrorType]) -> dict[str, Any]:
    return {
        "title": name,
        "type": "object",
        "properties": {
            "critique": {"type": "string", "pattern": _CRITIQUE_PATTERN},
            "error_type": {"enum": [*(e.value for e in error_types), None]},
            "score": {"type": "number", "enum": list(_SCORE_VALUES)},
            "verdict": {"type": "string", "enum": ["pass", "fail"]},
        },
        "required": ["critique", "error_type", "score", "verdict"],
        "additionalProperties": False,
    }


VERDICT_SCHEMA_NODE: Final[Mapping[str, Any]] = _schema("trust_node_verdict", _NODE_ERROR_TYPES)
"""The JSON schema of a node-layer answer."""
VERDICT_SCHEMA_EDGE: Final[Mapping[str, Any]] = _schema("trust_edge_verdict", _EDGE_ERROR_TYPES)
"""The JSON schema of an edge-layer answer."""


class JudgeAnswer(BaseModel):
    """One answer of the judge, read strictly (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    critique: str = Field(max_length=MAX_CRITIQUE_CHARS)
    error_type: Literal["factual", "logical", "strategy", "protocol", "negligence"] | None
    score: float = Field(ge=0.0, le=1.0)
    verdict: Literal["pass", "fail"]

    @field_validator("critique")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        stripped = value.strip()
        if not stripped:
            raise ValueError("the critique is empty; say what is wrong or why the node is right")
        return stripped


def _unfence(reply: str) -> str:
    text = reply.strip()
    fenced = _FENCE.match(text)
    return fenced.group("body").strip() if fenced else text


def _problem(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "answer"
        got = error.get("input")
        shown = "" if error["type"] == "missing" else f" (got {json.dumps(got)[:80]})"
        parts.append(f"{where}: {error['msg']}{shown}")
    return "; ".join(parts)


# ------------------------------------------------------------------------------------ the critique

_MONTHS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_WEEKDAYS = (
    r"mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:r(?:s(?:day)?)?)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?"
)
_ZONE = r"(?:\s*(?:z\b|utc\b|gmt\b|[+-]\d{2}:?\d{2}))?"
_CLOCK = rf"\d{{1,2}}:\d{{2}}(?::\d{{2}})?(?:[.,]\d+)?(?:\s*[ap]\.?m\b\.?)?{_ZONE}"
# Dates and clock times, in the forms models write them: ISO 8601 (also a model's "2023-04-28T:17:56"),
# RFC 2822 ("Mon, 01 Jan 2024"), "January 5th, 2024", "05/01/2024", "14:57:56.12Z".
_DATETIME = re.compile(
    "|".join(
        (
            rf"\d{{4}}-\d{{1,2}}-\d{{1,2}}(?:[t ]?:?{_CLOCK})?{_ZONE}",
            rf"(?:(?:{_WEEKDAYS})\.?,?\s+)?\d{{1,2}}\s+(?:{_MONTHS})\.?,?\s+\d{{2,4}}(?:,?\s+{_CLOCK})?",
            rf"(?:(?:{_WEEKDAYS})\.?,?\s+)?(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}(?:,?\s+{_CLOCK})?",
            r"\b\d{1,2}/\d{1,2}/\d{2,4}\b",
            _CLOCK,
        )
    ),
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W\d_]{2,}")  # two or more letters, in any script
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_ANSWER_KEY = re.compile(r'"(?:critique|error_type|score|verdict)"\s*:')
_ANSWER_LABEL = re.compile(r"\b(critique|error_type|score|verdict)\s*:", re.IGNORECASE)
_CONTENT_LETTERS: Final = 3
_FUNCTION_WORDS: Final = frozenset(
    """about above after again against all also and any are because been before being below between both but
    can could did does doing done down during each either else even ever every few for from further had has
    have having her here hers herself him himself his how however into its itself just let more most much must
    myself neither nor not now off once only other ought our ours ourselves out over own per rather same shall
    she should some such than that the their theirs them themselves then there these they this those through
    thus too under until upon very was were what when where whether which while who whom whose why will with
    within without would yes yet you your yours yourself yourselves""".split()
)


def _without_datetimes(text: str) -> str:
    return _DATETIME.sub(" ", text)


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _key(word: str) -> str:
    """What two content words are compared by: their first `MATCH_PREFIX_LETTERS` letters."""
    return word[:MATCH_PREFIX_LETTERS]


def _content_keys(words: Sequence[str]) -> set[str]:
    return {_key(w) for w in words if len(w) >= _CONTENT_LETTERS and w not in _FUNCTION_WORDS}


def _number_keys(text: str) -> set[str]:
    """The numbers of `text`, written one way: 3.0 is 3, 007 is 7, 0.50 is 0.5."""
    keys = set()
    for number in _NUMBER.findall(text):
        whole, _, fraction = number.partition(".")
        whole, fraction = whole.lstrip("0") or "0", fraction.rstrip("0")
        keys.add(f"{whole}.{fraction}" if fraction else whole)
    return keys


def _runs(words: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + COPY_RUN_WORDS]) for i in range(len(words) - COPY_RUN_WORDS + 1)}


@dataclass(frozen=True, slots=True)
class CritiqueContext:
    """What a critique is checked against (`check_critique`): the segment's content-word keys, numbers
    and node ids, and the instructions' (the auditor's own text) content-word keys and word runs."""

    segment_words: frozenset[str]
    segment_numbers: frozenset[str]
    ids: frozenset[str]
    instruction_words: frozenset[str]
    instruction_runs: frozenset[tuple[str, ...]]

    @classmethod
    def build(cls, segment_texts: Sequence[str], ids: Sequence[str], instructions: str) -> CritiqueContext:
        """From the texts the judge is shown of the segment, the ids of its nodes and the instructions."""
        text = "\n".join(segment_texts)
        instruction_words = _words(instructions)
        instruction_keys = frozenset(_content_keys(instruction_words))
        # An id that is a word of the instructions ("strategy", "goal") names nothing in particular.
        named = frozenset(i for i in ids if len(i) >= 2 and _key(i.casefold()) not in instruction_keys)
        return cls(
            frozenset(_content_keys(_words(_without_datetimes(text)))),
            frozenset(_number_keys(_without_datetimes(text))),
            named,
            instruction_keys,
            frozenset(_runs(instruction_words)),
        )

    def with_instructions(self, text: str) -> CritiqueContext:
        """This context with `text` (a note sent to the judge) counted as instructions too."""
        words = _words(text)
        return dataclasses.replace(
            self,
            instruction_words=self.instruction_words | _content_keys(words),
            instruction_runs=self.instruction_runs | _runs(words),
        )

    @classmethod
    def of(cls, request: AuditRequest, instructions: str) -> CritiqueContext:
        """The context of `request`: the node's text (and a turn's task input) and the parents' texts."""
        node = request.node
        texts = [node_text(node), *(node_text(p) for p in (*request.parents, *request.observations))]
        if isinstance(node, AgentTurn) and node.input:
            texts.append(node.input)
        return cls.build(texts, [node.id, *(p.id for p in request.parents)], instructions)


def _copied_share(words: Sequence[str], runs: frozenset[tuple[str, ...]]) -> float:
    """The share of `words` inside a run of `COPY_RUN_WORDS` words found in `runs`."""
    copied = [False] * len(words)
    for i in range(len(words) - COPY_RUN_WORDS + 1):
        if tuple(words[i : i + COPY_RUN_WORDS]) in runs:
            copied[i : i + COPY_RUN_WORDS] = [True] * COPY_RUN_WORDS
    return sum(copied) / len(words) if words else 0.0


def _names(critique: str, node_id: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(node_id)}(?![\w-])", critique) is not None


def check_critique(critique: str, context: CritiqueContext) -> None:
    """Nothing when `critique` is a judgment of the segment in words (the rules of the module docstring),
    else `ValueError` saying which rule it breaks and what to write instead (for the retry prompt)."""
    # One label is prose ("Score: 2 is wrong" of a clinical score); two are the answer's form.
    if _ANSWER_KEY.search(critique) or len({m.casefold() for m in _ANSWER_LABEL.findall(critique)}) >= 2:
        raise ValueError("critique: it holds the answer's own fields; the critique is plain sentences of your own")
    text = _without_datetimes(critique)
    words = _words(text)
    if len(words) < MIN_CRITIQUE_WORDS:
        raise ValueError(
            f"critique: it has {len(words)} word(s), at least {MIN_CRITIQUE_WORDS} are needed: write one "
            "or two sentences on what is right or wrong in this node (dates, times, numbers and symbols alone "
            "are no judgment)"
        )
    share = _copied_share(words, context.instruction_runs)
    if share > MAX_COPIED_SHARE:
        raise ValueError(
            f"critique: it copies the instructions ({share:.0%} of its words); say in your own words "
            "what is right or wrong in this node"
        )
    keys = _content_keys(words)
    refers = (
        bool((keys - context.instruction_words) & context.segment_words)
        or bool(_number_keys(text) & context.segment_numbers)
        or any(_names(critique, i) for i in context.ids)
    )
    if not refers:
        raise ValueError(
            "critique: it does not refer to the segment: it shares no word or number with the node or its "
            "context and names neither; say what in this node is right or wrong, quoting its values or claims"
        )
    if not keys - context.segment_words:
        raise ValueError(
            "critique: it only repeats the segment; say whether the node is right and why, in your own words"
        )


def parse_answer(reply: str, layer: AuditLayer, context: CritiqueContext | None = None) -> JudgeAnswer:
    """The judge's answer, or `ValueError` saying exactly what is wrong with it (for the retry prompt).

    With `context`, the critique must also be a judgment of that segment in words (`check_critique`);
    without, only the schema is checked.

    JSON syntax is read with one leniency besides the fence: a raw control character (a newline)
    inside a string is taken as that character. llama-cpp-python 0.3.36 turns a schema's strings into
    a grammar rule that lets them through, and a model that writes one does so again on every retry.
    """
    try:
        data = json.loads(_unfence(reply), strict=False)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError(f"the answer is a JSON {type(data).__name__}, not an object")
    try:
        answer = JudgeAnswer.model_validate(data)
    except ValidationError as exc:
        raise ValueError(_problem(exc)) from None
    allowed = _EDGE_ERROR_TYPES if layer is AuditLayer.EDGE else _NODE_ERROR_TYPES
    if answer.error_type is not None and ErrorType(answer.error_type) not in allowed:
        names = ", ".join(e.value for e in allowed)
        raise ValueError(f"error_type: {answer.error_type!r} is not one of {names} or null for the {layer} layer")
    if context is not None:
        check_critique(answer.critique, context)
    return answer


def _clip(text: str, limit: int) -> str:
    """`text`, or its head and tail around a marker when it is longer than `limit` characters."""
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return f"{text[:head]}\n{_CUT_MARKER.format(n=len(text) - limit)}\n{text[-tail:]}"


# ------------------------------------------------------------------------------------------ prompts

_LEVEL_CRITERIA: Mapping[Level, str] = {
    Level.GOAL: "a faithful statement of the problem: nothing added, dropped or changed from the task",
    Level.STRATEGY: "an appropriate overall approach: it can reach a correct answer to the goal it serves",
    Level.TACTIC: "the technique is the right one and applied correctly, in service of the strategy above it",
    Level.STEP: "correct, supported by its inputs, and complete",
    Level.OPERATION: "the exact result: recompute it yourself; any wrong digit fails",
}

_ROLE_CRITERIA: Mapping[Role, str] = {
    Role.PLANNER: "a planner: a sound plan or decomposition of its task, not a solution in disguise",
    Role.CODER: "a coder: code that does what it was asked, correctly",
    Role.REVIEWER: (
        "a reviewer: it flags exactly the real errors of what it reviews; approving flawed work is negligence"
    ),
    Role.AGGREGATOR: "an aggregator: it combines its inputs faithfully into a correct whole",
    Role.EXPERT: "an expert: it solves its part of the task correctly",
}

# The fields are described in prose, not as a template: a small model copies a template's
# placeholders into its answer.
_ANSWER_FORMAT = """Answer with one JSON object and nothing else. Its fields, in this order:
- "critique": your reasons in one or two sentences of your own (at most {chars} characters): the \
specific error you found, or why it is right;
- "error_type": {error_types};
- "score": one of 0, 0.1, 0.2, ..., 0.9, 1, where 1 means fully right and 0 plainly wrong;
- "verdict": "pass" if the score is at least {tau}, otherwise "fail"."""

_RULES = """Rules:
- Judge substance only. Length, style, confidence and politeness are not evidence: a short correct \
answer passes, a long fluent wrong one fails.
- Text marked "[... N characters cut by the auditor ...]" was shortened by the auditor, not by the \
author: do not count the cut against it.
- The order in which things are shown means nothing."""

_NODE_SYSTEM = """You are a strict auditor in TRUST, a network that checks AI reasoning one piece at a \
time. You see ONE node of a reasoning trace, the context it was built from (numbered), and an audit \
question. Judge only this node, given its context: correctness (recompute every number and check \
every claim; repeating a wrong input is still wrong), completeness (it does all it was asked) and \
adherence to its level or role.

{rules}

{answer}
error_type when it fails: "factual" (a wrong value or claim), "logical" (an invalid inference from \
correct inputs), "strategy" (an inappropriate approach), "negligence" (a reviewer approved flawed \
work); null when it passes."""

_EDGE_SYSTEM = """You are a strict auditor in TRUST running "the telephone test" on ONE message passed \
from a sender agent to a receiver agent of a multi-agent system. You see the message, the receiver's \
other inputs and the receiver's output. Judge the transmission only, not whether the sender was right: \
a receiver that faithfully passes on a wrong value is faithful.
- protocol compliance: the receiver's output has the form the message asked for (a JSON reply when \
JSON was asked, the fields required, the constraints respected);
- information fidelity: what the receiver took from the message arrived intact: no value corruption \
(a number, name or identifier altered), no semantic drift (the meaning changed), no information \
injection (data found neither in the message nor in the other inputs), no information loss (critical \
content dropped).

{rules}

{answer}
error_type: "protocol" when it fails, null when it passes."""


_CLAIM_CHARS: Final = 200  # what a retry quotes of the node, so the judge has its words at hand
_RETRY_NOTE = (
    "An earlier answer to this was refused: {problem}. In the critique, say in your own words whether what "
    "the node under audit says ({claim}) is right, and why. Answer with exactly one JSON object with the "
    'fields "critique", "error_type", "score" and "verdict" as described, and nothing else.'
)


@dataclass(frozen=True, slots=True)
class _Question:
    """One thing to ask the judge, in its two orders: `label` names it in critiques ("edge t1 -> t3")."""

    label: str
    layer: AuditLayer
    forward: tuple[ChatMessage, ...]
    reordered: tuple[ChatMessage, ...]
    critique_context: CritiqueContext


@dataclass(frozen=True, slots=True)
class _Judged:
    """The two answers of one question, in the orders asked."""

    label: str
    first: JudgeAnswer
    second: JudgeAnswer

    @property
    def score(self) -> float:
        return (self.first.score + self.second.score) / 2

    @property
    def stricter(self) -> JudgeAnswer:
        return self.second if self.second.score < self.first.score else self.first

    @property
    def milder(self) -> JudgeAnswer:
        return self.first if self.stricter is self.second else self.second

    @property
    def disagreed(self) -> bool:
        gap = round(abs(self.first.score - self.second.score), 6)  # tenths: 0.7 - 0.4 is 0.29999...
        return self.first.verdict != self.second.verdict or gap >= DISAGREEMENT_GAP


def _describe(node: Node) -> str:
    if isinstance(node, HdagNode):
        return f"{node.level.label} node {node.id} (domain {node.domain})"
    return f"turn {node.id}: agent {node.agent}, role {node.role.value}, step {node.step}"


def _criteria(node: Node) -> str:
    if isinstance(node, HdagNode):
        return _LEVEL_CRITERIA[node.level]
    return _ROLE_CRITERIA.get(node.role, "its role's job, done correctly and completely")


class LlmAuditor:
    """A tier-2 auditor over a `ChatModel` (see the module docstring).

    `settings` gives the thresholds (tau_node, tau_edge). `max_attempts` asks per question and order
    (the first and the retries of a malformed answer). `max_text_chars` and `max_context_chars` cap
    what is sent (characters). `concurrency` bounds the requests in flight. Temperature is 0 (a retry
    of a malformed answer: `RETRY_TEMPERATURE`): the judgement is as repeatable as the endpoint allows.
    `availability` answers `unavailable`.
    """

    def __init__(
        self,
        model: ChatModel,
        settings: AuditSettings,
        *,
        name: str = "llm",
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
        max_context_chars: int = DEFAULT_MAX_CONTEXT_CHARS,
        concurrency: int = DEFAULT_CONCURRENCY,
        availability: Callable[[], Awaitable[str | None]] | None = None,
    ) -> None:
        for field_name, value, least in (
            ("max_attempts", max_attempts, 1),
            ("max_text_chars", max_text_chars, _MIN_PART_CHARS),
            ("max_context_chars", max_context_chars, _MIN_PART_CHARS),
            ("concurrency", concurrency, 1),
        ):
            if value < least:
                raise ConfigError(f"LlmAuditor: {field_name} must be at least {least}, got {value}")
        self._model = model
        self._settings = settings
        self._name = name
        self._max_attempts = max_attempts
        self._max_text = max_text_chars
        self._max_context = max_context_chars
        self._concurrency = concurrency
        self._availability = availability

    @property
    def tier(self) -> Tier:
        return Tier.LLM

    @property
    def name(self) -> str:
        return self._name

    def tau(self, layer: AuditLayer) -> float:
        """The threshold a score must reach to pass, for `layer`."""
        return self._settings.tau_edge if layer is AuditLayer.EDGE else self._settings.tau_node

    async def unavailable(self) -> str | None:
        """Why the model cannot judge now (its server is down or not answering, in words), or None.

        Asks `availability` (a cheap probe of the endpoint, cached by whoever builds it: see
        `trust.auditors.tiers.llm_auditor`); without one the auditor is taken as always available.
        """
        return None if self._availability is None else await self._availability()

    async def audit(self, request: AuditRequest) -> Verdict:
        """The verdict on `request`; `LlmError` when the endpoint fails or keeps answering malformed JSON."""
        skipped = self._not_applicable(request)
        if skipped is not None:
            return Verdict(Outcome.NOT_APPLICABLE, None, skipped)
        # One gate per audit: a semaphore binds to the event loop it first waits on.
        gate = asyncio.Semaphore(self._concurrency)
        judged = await all_or_nothing([self._judge(request, q, gate) for q in self._questions(request)])
        return self._combine(request, judged)

    # ---------------------------------------------------------------------------------- the prompts

    def _questions(self, request: AuditRequest) -> list[_Question]:
        """What the judge is asked about an applicable `request`: one question on the node layer, one per
        incoming message on the edge layer (of a CIG turn), each in its two orders."""
        node = request.node
        if request.layer is AuditLayer.EDGE and isinstance(node, AgentTurn):
            senders = {p.id for p in request.senders}
            return [self._edge_question(request, node, i) for i, p in enumerate(request.parents) if p.id in senders]
        return [self._node_question(request)]

    def _system(self, layer: AuditLayer) -> str:
        if layer is AuditLayer.EDGE:
            error_types = '"protocol" or null'
            template = _EDGE_SYSTEM
        else:
            error_types = '"factual", "logical", "strategy", "negligence" or null'
            template = _NODE_SYSTEM
        answer = _ANSWER_FORMAT.format(chars=ASKED_CRITIQUE_CHARS, error_types=error_types, tau=self.tau(layer))
        return template.format(rules=_RULES, answer=answer)

    def _part_limit(self, count: int) -> int:
        if count == 0:
            return self._max_text
        return min(self._max_text, max(self._max_context // count, _MIN_PART_CHARS))

    def _node_question(self, request: AuditRequest) -> _Question:
        node = request.node
        limit = self._part_limit(len(request.parents))
        header = [
            f"Audit question: {request.audit_question}",
            f"Under audit: {_describe(node)}.",
            f"What it is judged on: {_criteria(node)}.",
        ]
        if isinstance(node, AgentTurn) and node.input:
            header.append(f"Task input the turn received from outside the swarm:\n{_clip(node.input, self._max_text)}")
        own = f"THE NODE UNDER AUDIT ({_describe(node)}):\n{_clip(node_text(node), self._max_text)}"
        # What a tool printed when it ran the node's code (an audit of a whole log has it): evidence
        # the judge would otherwise have to imagine.
        own += "".join(
            f"\n\nWhat running its code printed ({_describe(run)}):\n{_clip(node_text(run), limit)}"
            for run in request.observations
        )

        def context(parents: Sequence[Node]) -> str:
            if not parents:
                return "Context: none (this node has no parents)."
            items = [f"[{i}] {_describe(p)}:\n{_clip(node_text(p), limit)}" for i, p in enumerate(parents, start=1)]
            return f"Context ({len(parents)} parent(s)):\n\n" + "\n\n".join(items)

        forward = "\n\n".join([*header, context(request.parents), own])
        reordered = "\n\n".join([*header, own, context(tuple(reversed(request.parents)))])
        system = ChatMessage("system", self._system(AuditLayer.NODE))
        return _Question(
            f"node {node.id}",
            AuditLayer.NODE,
            (system, ChatMessage("user", forward)),
            (system, ChatMessage("user", reordered)),
            # What the node is judged on is the auditor's text too ("the exact result: recompute it yourself").
            CritiqueContext.of(request, f"{system.content}\n{_criteria(node)}"),
        )

    def _edge_question(self, request: AuditRequest, node: AgentTurn, index: int) -> _Question:
        sender = request.parents[index]
        others = [p for i, p in enumerate(request.parents) if i != index]
        limit = self._part_limit(len(request.parents))
        header = [
            f"Audit question: {request.audit_question}",
            f"Edge under audit: the message of {_describe(sender)} into {_describe(node)}.",
        ]
        if isinstance(sender, AgentTurn) and sender.contract is not None:
            interface = "a JSON object" if sender.contract.format == "json" else "text"
            if sender.contract.required:
                interface += " with the fields " + ", ".join(sender.contract.required)
            header.append(f"Interface the sender declared for replies: {interface}.")
        if not request.replies:
            header.append(
                "The receiver does not reply to this message; it reuses content from it: no reply format binds it, "
                "judge what it took from the message."
            )
        message = f"THE MESSAGE SENT by {sender.id}:\n{_clip(node_text(sender), limit)}"
        output = f"THE RECEIVER'S OUTPUT ({node.id}):\n{_clip(node.output, self._max_text)}"

        def other_inputs(items: Sequence[Node]) -> str:
            parts = []
            if node.input:
                parts.append(f"[task input from outside the swarm]:\n{_clip(node.input, limit)}")
            parts += [f"[{_describe(p)}]:\n{_clip(node_text(p), limit)}" for p in items]
            if not parts:
                return "The receiver's other inputs: none."
            return "The receiver's other inputs:\n\n" + "\n\n".join(parts)

        forward = "\n\n".join([*header, message, other_inputs(others), output])
        reordered = "\n\n".join([*header, output, other_inputs(tuple(reversed(others))), message])
        system = ChatMessage("system", self._system(AuditLayer.EDGE))
        return _Question(
            f"edge {sender.id} -> {node.id}",
            AuditLayer.EDGE,
            (system, ChatMessage("user", forward)),
            (system, ChatMessage("user", reordered)),
            CritiqueContext.of(request, system.content),
        )

    # ----------------------------------------------------------------------------------- the asking

    async def _judge(self, request: AuditRequest, question: _Question, gate: asyncio.Semaphore) -> _Judged:
        first, second = await all_or_nothing(
            [
                self._ask(request, question, question.forward, "context first", gate),
                self._ask(request, question, question.reordered, "node first, context reversed", gate),
            ]
        )
        return _Judged(question.label, first, second)

    async def _ask(
        self,
        request: AuditRequest,
        question: _Question,
        messages: Sequence[ChatMessage],
        order: str,
        gate: asyncio.Semaphore,
    ) -> JudgeAnswer:
        schema = VERDICT_SCHEMA_EDGE if question.layer is AuditLayer.EDGE else VERDICT_SCHEMA_NODE
        conversation = list(messages)
        context = question.critique_context
        claim = excerpt(node_text(request.node), _CLAIM_CHARS)
        reply = ""
        problem = ""
        for attempt in range(self._max_attempts):
            temperature = 0.0 if attempt == 0 else RETRY_TEMPERATURE
            async with gate:
                reply = await self._model.complete(
                    conversation, temperature=temperature, schema=schema, max_tokens=MAX_ANSWER_TOKENS
                )
            try:
                return parse_answer(reply, question.layer, context)
            except ValueError as exc:
                problem = str(exc)
            # The question again, with why the last answer was refused; not the answer itself: shown
            # its own answer, a small model writes it again (SmolLM2-135M did for 6 of 6 refused
            # critiques, at temperature 0 and 0.7; asked afresh with the note, 4 of 6 were judgments).
            note = _RETRY_NOTE.format(problem=problem, claim=claim)
            conversation = [messages[0], ChatMessage("user", f"{messages[1].content}\n\n{note}")]
            # Words of the note (less the node's own) are instructions too: an echo of them judges nothing.
            context = question.critique_context.with_instructions(_RETRY_NOTE.format(problem=problem, claim=""))
        raise JudgmentError(
            f"tier-2 judge {self._model.model!r} at {self._model.endpoint} gave no valid answer on "
            f"{question.label} ({order}) of segment {request.node_id!r} in {self._max_attempts} attempt(s): "
            f"{problem}; it last answered {excerpt(reply)!r}. Check that the endpoint honours response_format "
            "(TRUST_AUDITOR_LLM__*), or point the auditor at a stronger model"
        )

    # -------------------------------------------------------------------------------- the verdict

    def _not_applicable(self, request: AuditRequest) -> str | None:
        node = request.node
        if request.layer is AuditLayer.EDGE:
            if isinstance(node, HdagNode):
                return "not applicable: the edge layer audits the messages into a CIG turn, and this is an HDAG node"
            if not request.parents:
                return f"not applicable: turn {node.id} received no message from another turn"
            if node.role is Role.TOOL:
                return f"not applicable: turn {node.id} is a tool; it executes what it is sent, its output is judged"
            return None
        if isinstance(node, AgentTurn) and node.role in CONTEXT_ROLES:
            return (
                f"not applicable: turn {node.id} is a {node.role.value} turn; it reports or poses, it does not "
                "reason, and the turns that use it are judged"
            )
        return None

    def _default_error_type(self, request: AuditRequest) -> ErrorType:
        node = request.node
        if request.layer is AuditLayer.EDGE:
            return ErrorType.PROTOCOL
        if request.layer is AuditLayer.CONTRADICTION:
            return ErrorType.LOGICAL  # two claims that cannot both hold
        if isinstance(node, HdagNode):
            return ErrorType.STRATEGY if node.level in (Level.GOAL, Level.STRATEGY) else ErrorType.FACTUAL
        if node.role is Role.REVIEWER:
            return ErrorType.NEGLIGENCE
        return ErrorType.STRATEGY if node.role is Role.PLANNER else ErrorType.FACTUAL

    def _combine(self, request: AuditRequest, judged: Sequence[_Judged]) -> Verdict:
        """The rule: score = mean of the two orders (lowest over the edges); vote = score >= tau;
        critique from the stricter answer of the decisive question, with notes on disagreement."""
        tau = self.tau(request.layer)
        decisive = min(judged, key=lambda j: j.score)  # the first on a tie: graph order
        score = round(decisive.score, 6)
        vote = Outcome.PASS if score >= tau else Outcome.FAIL
        parts = []
        if len(judged) > 1:
            failing = [j for j in judged if j.score < tau]
            shown = failing if vote is Outcome.FAIL else [decisive]
            parts += [f"{j.label}: {j.stricter.critique}" for j in shown]
        else:
            parts.append(decisive.stricter.critique)
        notes = []
        for j in judged:
            if j.disagreed:
                notes.append(
                    f"the two orders disagreed on {j.label} (scores {j.first.score:g} and {j.second.score:g}, "
                    f"verdicts {j.first.verdict} and {j.second.verdict}); their mean decides"
                )
        own = {decisive.first.verdict, decisive.second.verdict}
        if vote.value not in own:
            notes.append(
                f"the judge said {' and '.join(sorted(own))} but its score {score:g} is "
                f"{'at least' if vote is Outcome.PASS else 'below'} tau {tau:g}; the score decides"
            )
        critique = " ".join(parts)
        if notes:
            critique += " (" + "; ".join(notes) + ")"
        error_type = None
        if vote is Outcome.FAIL:
            named = decisive.stricter.error_type or decisive.milder.error_type
            error_type = ErrorType(named) if named is not None else self._default_error_type(request)
        return Verdict(vote, score, critique, error_type)
