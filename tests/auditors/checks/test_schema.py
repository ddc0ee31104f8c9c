"""The schema check (`trust.auditors.checks.schema`): reply contracts and JSON Schemas.

A turn that answers a JSON contract in prose fails with "format mismatch", one that lacks a field
with "missing required field(s)"; a JSON Schema in the question or in a parent's ```json-schema
block is applied with jsonschema (the declared draft, else 2020-12), each violation named by its
JSON path; nothing asked, nothing checked.
"""

from __future__ import annotations

import json

import pytest

from trust.auditors.base import AuditRequest, Check, CheckResult, Outcome, loads_request
from trust.auditors.checks import SchemaCheck
from trust.auditors.checks.schema import json_output, schema_in_question, schema_in_text
from trust.core.graphs.cig import AgentTurn, Cig, ReplyContract, Role
from trust.core.graphs.hdag import HdagNode, Level
from trust.core.graphs.refinement import ErrorType

CHECK = SchemaCheck()
PLANNER = AgentTurn(
    "t0",
    0,
    "Planner",
    Role.PLANNER,
    "Look up the patient and reply in JSON with the fields name and age.",
    contract=ReplyContract("json", ("name", "age")),
)
ORDER_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"price": {"type": "number", "minimum": 0}, "date": {"type": "string", "format": "date"}},
                "required": ["price"],
            },
        }
    },
    "required": ["items"],
}


async def reply(output: str, *, role: Role = Role.EXPERT, parent: AgentTurn = PLANNER) -> CheckResult:
    return await CHECK.check(AuditRequest(AgentTurn("t1", 1, "Clerk", role, output), (parent,)))


async def answer(output: str, question: str = "", *parents: HdagNode) -> CheckResult:
    return await CHECK.check(AuditRequest(HdagNode("n", Level.OPERATION, output), parents, question))


def test_it_is_a_check() -> None:
    assert isinstance(CHECK, Check) and CHECK.name == "schema"


# ------------------------------------------------------------------------------ reply contracts


@pytest.mark.parametrize(
    ("output", "how"),
    [
        ('{"name": "Ann Lee", "age": 71}', "bare"),
        ('  {"name": "Ann Lee", "age": 71, "ward": "B"}\n', "bare"),
        ('Here is the record:\n```json\n{"name": "Ann Lee", "age": 71}\n```\nAnything else?', "fenced"),
        ('```\n{"name": "Ann Lee", "age": 71}\n```', "fenced"),
    ],
)
async def test_a_json_reply_with_the_required_fields_passes(output: str, how: str) -> None:
    result = await reply(output)
    assert result.outcome is Outcome.PASS
    assert result.detail == f"the output is JSON ({how}) and meets t0's contract (fields name, age)"


@pytest.mark.parametrize(
    "output",
    [
        "The patient is Ann Lee, 71 years old.",
        'Here is the record: {"name": "Ann Lee", "age": 71}',  # JSON inside prose is not a JSON reply
        '```python\nprint({"name": "Ann Lee", "age": 71})\n```',
        '{"name": "Ann Lee", "age": 71',
    ],
)
async def test_prose_where_json_was_asked_is_a_format_mismatch(output: str) -> None:
    result = await reply(output)
    assert (result.outcome, result.fault, result.error_type) == (Outcome.FAIL, "format mismatch", ErrorType.PROTOCOL)
    assert result.detail.startswith("t0's reply contract asks for JSON; the output is prose: ")
    assert result.expected == "JSON, bare or in a ```json block"


async def test_a_missing_field_is_named_by_its_path() -> None:
    result = await reply('{"name": "Ann Lee", "ward": "B"}')
    assert (result.outcome, result.fault) == (Outcome.FAIL, "missing required field(s)")
    assert result.detail == "the JSON reply lacks $.age, required by t0's reply contract (it has name, ward)"
    assert result.expected == "name, age"


async def test_json_of_the_wrong_kind_is_a_format_mismatch() -> None:
    result = await reply('[{"name": "Ann Lee", "age": 71}]')
    assert (result.outcome, result.fault) == (Outcome.FAIL, "format mismatch")
    assert "the output is an array" in result.detail


async def test_contracts_without_fields_and_text_contracts() -> None:
    any_json = AgentTurn("t0", 0, "Planner", Role.PLANNER, "Reply in JSON.", contract=ReplyContract("json"))
    assert (await reply('{"ok": true}', parent=any_json)).outcome is Outcome.PASS
    text = AgentTurn("t0", 0, "Planner", Role.PLANNER, "Reply as you like.", contract=ReplyContract("text"))
    assert (await reply("Fine.", parent=text)).outcome is Outcome.NOT_APPLICABLE


async def test_a_tool_turn_is_not_held_to_the_contract_of_the_message_it_runs() -> None:
    assert (await reply("exitcode: 0", role=Role.TOOL)).outcome is Outcome.NOT_APPLICABLE


async def test_a_segment_read_from_json_carries_the_contract() -> None:
    cig = Cig()
    cig.add_turn(PLANNER)
    cig.add_turn(AgentTurn("t1", 1, "Clerk", Role.EXPERT, "Ann Lee, 71"))
    cig.add_edge("t0", "t1")
    from trust.auditors.base import dumps_request, request_for

    request = loads_request(dumps_request(request_for(cig, "t1")))
    result = await CHECK.check(request)
    assert (result.outcome, result.fault) == (Outcome.FAIL, "format mismatch")


# ------------------------------------------------------------------------------ JSON Schema


async def test_a_schema_in_the_question_is_applied() -> None:
    question = f"Does this API response match the schema {json.dumps(ORDER_SCHEMA)}?"
    good = await answer('{"items": [{"price": 3.5, "date": "2024-05-01"}, {"price": 0}]}', question)
    assert good.outcome is Outcome.PASS
    assert good.detail == "the output is JSON (bare) and meets the JSON Schema of the question"
    bad = await answer('{"items": [{"price": -1, "date": "2024-13-45"}, {}]}', question)
    assert (bad.outcome, bad.fault, bad.error_type) == (Outcome.FAIL, "schema violation", ErrorType.PROTOCOL)
    assert bad.detail == (
        "3 violation(s) of the JSON Schema of the question: $.items[0].date: '2024-13-45' is not a 'date'; "
        "$.items[0].price: -1 is less than the minimum of 0; $.items[1]: 'price' is a required property"
    )
    missing = await answer('{"orders": []}', question)
    assert missing.detail.endswith("$: 'items' is a required property")
    prose = await answer("The order costs 3.50.", question)
    assert (prose.outcome, prose.fault) == (Outcome.FAIL, "format mismatch")


async def test_a_schema_in_a_parents_json_schema_block_is_applied() -> None:
    parent = HdagNode(
        "p",
        Level.STEP,
        'Call the API; its reply must match:\n```json-schema\n{"type": "object", "properties": '
        '{"status": {"enum": ["ok", "error"]}}, "required": ["status"]}\n```',
    )
    assert (await answer('{"status": "ok"}', "", parent)).outcome is Outcome.PASS
    result = await answer('{"status": "done"}', "", parent)
    assert result.outcome is Outcome.FAIL
    assert result.detail == "1 violation(s) of the JSON Schema of p: $.status: 'done' is not one of ['ok', 'error']"


async def test_the_declared_draft_is_used() -> None:
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": [{"type": "string"}]}
    # draft-07 reads "items": [...] as a tuple of item schemas; 2020-12 would reject the schema itself
    assert (await answer('["a", 1]', json.dumps(draft7))).outcome is Outcome.PASS
    assert (await answer("[1]", json.dumps(draft7))).outcome is Outcome.FAIL


async def test_an_invalid_schema_is_not_the_nodes_fault() -> None:
    result = await answer('{"a": 1}', '{"type": "objekt", "properties": {}}')
    assert result.outcome is Outcome.NOT_APPLICABLE
    assert result.detail.startswith("the JSON Schema of the question is not a valid JSON Schema ($.type: ")


async def test_nothing_asked_is_not_applicable() -> None:
    for question in ("", "Is this step correct?", 'The config is {"a": 1}.'):
        result = await answer('{"a": 1}', question)
        assert result.outcome is Outcome.NOT_APPLICABLE
        assert result.detail.startswith("no format was asked for")


# ------------------------------------------------------------------------------ the readers


def test_readers() -> None:
    assert json_output('{"a": 1}') == ({"a": 1}, "bare")
    assert json_output("42") == (42, "bare")
    assert json_output("text\n```json\nnot json\n```\n```json\n[1]\n```") == ([1], "fenced")
    assert json_output("no json here") is None
    assert json_output("[" * 100_000 + "]" * 100_000) is None  # nested too deep to parse: not JSON
    assert schema_in_question('Use {"a": 1} and {"type": "object", "properties": {}}') == {
        "type": "object",
        "properties": {},
    }
    assert schema_in_question('{"$schema": "x"}') == {"$schema": "x"}
    assert schema_in_question("{not json} {}") is None
    assert schema_in_text('```json-schema\n{"type": "string"}\n```') == {"type": "string"}
    assert schema_in_text('```json\n{"type": "string"}\n```') is None
