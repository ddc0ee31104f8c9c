"""The schema check (`trust.auditors.checks.schema`): JSON Schemas, on the node layer.

A JSON Schema in the question or in a parent's ```json-schema block is applied with jsonschema (the
declared draft, else 2020-12), each violation named by its JSON path; prose where JSON was asked is
a "format mismatch"; nothing asked, nothing checked. What a CIG turn's parents ask of its reply (a
reply contract, a schema block) is the edge layer's (`tests/auditors/checks/test_messages.py`), so
the node layer leaves it alone: one broken reply is one fault.
"""

from __future__ import annotations

import json

import pytest

from trust.auditors.base import AuditRequest, Check, CheckResult, Outcome
from trust.auditors.checks import SchemaCheck
from trust.auditors.checks.schema import json_output, schema_in_question, schema_in_text
from trust.core.graphs.cig import AgentTurn, ReplyContract, Role
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


# ------------------------------------------------------------------------------ replies


@pytest.mark.parametrize(
    "output",
    ["The patient is Ann Lee, 71 years old.", '{"name": "Ann Lee", "ward": "B"}', '[{"name": "Ann Lee"}]'],
)
async def test_a_reply_contract_is_not_the_node_layers(output: str) -> None:
    result = await reply(output)
    assert result.outcome is Outcome.NOT_APPLICABLE
    assert result.detail == (
        "no JSON Schema was given: neither the question nor a parent holds one (what a parent's message "
        "asks of this reply is judged on the edge layer)"
    )


async def test_a_parents_schema_binds_a_tool_turn_but_not_a_reply() -> None:
    caller = AgentTurn(
        "t0", 0, "Planner", Role.PLANNER, f"Call the API; it answers:\n```json-schema\n{json.dumps(ORDER_SCHEMA)}\n```"
    )
    assert (await reply('{"items": [{"price": -1}]}', parent=caller)).outcome is Outcome.NOT_APPLICABLE
    tool = await reply('{"items": [{"price": -1}]}', role=Role.TOOL, parent=caller)
    assert (tool.outcome, tool.fault) == (Outcome.FAIL, "schema violation")
    assert tool.detail == "1 violation(s) of the JSON Schema of t0: $.items[0].price: -1 is less than the minimum of 0"
    question = f"Does the reply match {json.dumps(ORDER_SCHEMA)}?"
    asked = await CHECK.check(AuditRequest(AgentTurn("t1", 1, "Clerk", Role.EXPERT, "prose"), (caller,), question))
    assert (asked.outcome, asked.fault) == (Outcome.FAIL, "format mismatch")  # the auditor's own question binds


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
        assert result.detail.startswith("no JSON Schema was given")


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
