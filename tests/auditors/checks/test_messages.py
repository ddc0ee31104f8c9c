"""The edge-layer checks: reply formats (protocol) and restated values (fidelity).

The reply contract is checked here and only here: a turn that answers a JSON contract in prose
fails with `format_mismatch`, one whose JSON lacks a field with `schema_violation`, as does one that
breaks the ```json-schema block of the message; the node layer's `SchemaCheck` leaves replies alone.
"""

from __future__ import annotations

import pytest

from trust.auditors.base import (
    AuditLayer,
    AuditRequest,
    CheckResult,
    Outcome,
    dumps_request,
    loads_request,
    request_for,
)
from trust.auditors.checks.messages import ContractCheck, ValueFidelityCheck, json_request, labelled_values
from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin, ReplyContract, Role
from trust.core.graphs.refinement import ErrorType

PATIENT = ReplyContract("json", ("name", "age"))


def test_json_requests() -> None:
    assert json_request('Please respond in JSON with the fields "name" and "age".') == ("name", "age")
    assert json_request("Return only valid JSON.") == ()
    assert json_request("Answer as a JSON object.") == ()
    assert json_request("The data file is JSON; load it.") is None


def _edge(
    sent: str,
    reply: str,
    *,
    contract: ReplyContract | None = None,
    role: Role = Role.EXPERT,
    origin: EdgeOrigin = EdgeOrigin.SEQUENCE,
    sender_role: Role = Role.PLANNER,
) -> AuditRequest:
    source = AgentTurn("t0", 0, "P", sender_role, sent, contract=contract)
    target = AgentTurn("t1", 1, "W", role, reply)
    return AuditRequest(target, (source,), layer=AuditLayer.EDGE, sender="t0", origin=origin)


async def _contract(request: AuditRequest) -> CheckResult:
    return await ContractCheck().check(request)


async def test_contract_check() -> None:
    contract = ReplyContract("json", ("answer",))
    prose = await _contract(_edge("What is 2 + 2?", "It is 4.", contract=contract))
    assert (prose.outcome, prose.fault, prose.error_type) == (Outcome.FAIL, "format_mismatch", ErrorType.PROTOCOL)
    assert prose.detail == "t0 asked for JSON; t1 answered in prose"
    assert prose.expected == "JSON, bare or in a ```json block"
    missing = await _contract(_edge("What is 2 + 2?", '{"result": 4}', contract=contract))
    assert (missing.outcome, missing.fault, missing.expected) == (Outcome.FAIL, "schema_violation", "answer")
    assert missing.detail == "t1's JSON reply lacks required field(s) 'answer', asked for by t0 (it has result)"
    assert (await _contract(_edge("What is 2 + 2?", '{"answer": 4}', contract=contract))).outcome is Outcome.PASS
    worded = await _contract(_edge('Reply in JSON with the field "answer".', "4"))
    assert worded.outcome is Outcome.FAIL
    for undecided in (
        _edge("What is 2 + 2?", "4"),
        _edge("x", "4", contract=ReplyContract("text")),
        _edge("Reply in JSON.", "exitcode: 0", role=Role.TOOL),
        _edge("Reply in JSON.", "4", origin=EdgeOrigin.OVERLAP),
    ):
        assert (await _contract(undecided)).outcome is Outcome.NOT_APPLICABLE
    node_layer = AuditRequest(AgentTurn("t1", 1, "W", Role.EXPERT, "4"))
    assert (await _contract(node_layer)).outcome is Outcome.NOT_APPLICABLE


@pytest.mark.parametrize(
    "reply",
    [
        '{"name": "Ann Lee", "age": 71}',
        '  {"name": "Ann Lee", "age": 71, "ward": "B"}\n',
        'Here is the record:\n```json\n{"name": "Ann Lee", "age": 71}\n```\nAnything else?',
        '```\n{"name": "Ann Lee", "age": 71}\n```',
    ],
)
async def test_a_json_reply_with_the_required_fields_passes(reply: str) -> None:
    result = await _contract(_edge("Look up the patient.", reply, contract=PATIENT))
    assert (result.outcome, result.detail) == (Outcome.PASS, "t1 replied in the JSON asked for")


@pytest.mark.parametrize(
    "reply",
    [
        "The patient is Ann Lee, 71 years old.",
        'Here is the record: {"name": "Ann Lee", "age": 71}',  # JSON inside prose is not a JSON reply
        '```python\nprint({"name": "Ann Lee", "age": 71})\n```',
        '{"name": "Ann Lee", "age": 71',
        "[" * 100_000 + "]" * 100_000,  # nested too deep to parse: not JSON (and no crash)
    ],
)
async def test_prose_where_json_was_asked_is_a_format_mismatch(reply: str) -> None:
    result = await _contract(_edge("Look up the patient.", reply, contract=PATIENT))
    assert (result.outcome, result.fault) == (Outcome.FAIL, "format_mismatch")
    assert result.detail == "t0 asked for JSON; t1 answered in prose"


async def test_json_of_the_wrong_kind_is_a_format_mismatch() -> None:
    result = await _contract(_edge("Look up the patient.", '[{"name": "Ann Lee", "age": 71}]', contract=PATIENT))
    assert (result.outcome, result.fault, result.expected) == (Outcome.FAIL, "format_mismatch", "a JSON object")
    assert result.detail == "t0 asked for a JSON object; t1 answered with an array"
    any_json = ReplyContract("json")
    assert (await _contract(_edge("Reply in JSON.", '{"ok": true}', contract=any_json))).outcome is Outcome.PASS


async def test_a_json_schema_block_of_the_message_binds_the_reply() -> None:
    sent = (
        "Call the API and pass its reply on:\n```json-schema\n"
        '{"type": "object", "properties": {"status": {"enum": ["ok", "error"]}}, "required": ["status"]}\n```'
    )
    assert (await _contract(_edge(sent, '{"status": "ok"}'))).outcome is Outcome.PASS
    broken = await _contract(_edge(sent, '{"status": "done"}'))
    assert (broken.outcome, broken.fault) == (Outcome.FAIL, "schema_violation")
    assert broken.detail == (
        "t1's JSON reply: 1 violation(s) of the JSON Schema of t0: $.status: 'done' is not one of ['ok', 'error']"
    )
    assert (await _contract(_edge(sent, "It said done."))).fault == "format_mismatch"
    invalid = await _contract(_edge('```json-schema\n{"type": "objekt"}\n```', '{"a": 1}'))
    assert invalid.outcome is Outcome.NOT_APPLICABLE
    assert invalid.detail.startswith("the JSON Schema of t0 is not a valid JSON Schema ($.type: ")


async def test_an_edge_segment_read_from_json_carries_the_contract() -> None:
    cig = Cig()
    cig.add_turn(AgentTurn("t0", 0, "Planner", Role.PLANNER, "Look up the patient.", contract=PATIENT))
    cig.add_turn(AgentTurn("t1", 1, "Clerk", Role.EXPERT, "Ann Lee, 71"))
    cig.add_edge("t0", "t1")
    request = loads_request(dumps_request(request_for(cig, "t1", layer=AuditLayer.EDGE)))
    assert (await _contract(request)).fault == "format_mismatch"


def test_labelled_values() -> None:
    text = (
        "- Seattle, Washington (2020 Census): 737,015\n- Colville: 4,965\n**Author**: Jane Doe\n"
        "Code output: 5\nbest city is Paris because it rains\nSpoiled: 120 * 0.15 = 16\n"
        "Looks fine. Remaining: 104\nx: 1\nx: 2\n```python\nlimit = 10\n```"
    )
    assert labelled_values(text) == {
        "seattle washington 2020 census": ("number", "737015"),
        "colville": ("number", "4965"),
        "author": ("name", "jane doe"),
        "remaining": ("number", "104"),
    }


async def _fidelity(sent: str, received: str, role: Role = Role.EXPERT) -> CheckResult:
    return await ValueFidelityCheck().check(_edge(sent, received, role=role))


async def test_value_corruption_across_an_edge() -> None:
    corrupted = await _fidelity("Seattle: 737,015\nColville: 4,965", "Seattle: 737,015\nColville: 4,956")
    assert corrupted.outcome is Outcome.FAIL and corrupted.fault == "value_corruption"
    assert corrupted.detail == "1 of 2 restated value(s) changed: 'colville': t0 sent 4965, t1 restated 4956"
    assert (await _fidelity("Pi: 3.14159", "Pi: 3.14")).outcome is Outcome.PASS  # rounding is fine
    assert (await _fidelity("Pi: 3.14", "Pi: 3.15")).outcome is Outcome.FAIL
    assert (await _fidelity("Author: Jane Doe", "Author: John Doe")).outcome is Outcome.FAIL
    assert (await _fidelity("Author: Jane Doe", "Author: Jane  Doe")).outcome is Outcome.PASS
    assert (await _fidelity("Seattle: 737,015", "Colville: 4,965")).outcome is Outcome.NOT_APPLICABLE
    assert (await _fidelity("Seattle: 737,015", "Seattle: 1", role=Role.TOOL)).outcome is Outcome.NOT_APPLICABLE
