"""The edge-layer checks: reply formats (protocol) and restated values (fidelity)."""

from __future__ import annotations

from trust.auditors.base import AuditLayer, AuditRequest, CheckResult, Outcome
from trust.auditors.checks.messages import (
    ContractCheck,
    ValueFidelityCheck,
    json_object,
    json_request,
    labelled_values,
)
from trust.core.graphs.cig import AgentTurn, EdgeOrigin, ReplyContract, Role


def test_json_requests_and_replies() -> None:
    assert json_request('Please respond in JSON with the fields "name" and "age".') == ("name", "age")
    assert json_request("Return only valid JSON.") == ()
    assert json_request("Answer as a JSON object.") == ()
    assert json_request("The data file is JSON; load it.") is None
    assert json_object('{"a": 1}') == {"a": 1}
    assert json_object('Sure!\n```json\n{"a": 1}\n```') == {"a": 1}
    assert json_object('The result is {"a": 1} as asked') == {"a": 1}
    assert json_object("[1, 2]") is None and json_object("prose only") is None


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
    assert prose.outcome is Outcome.FAIL and prose.fault == "format_mismatch"
    assert prose.detail == "t0 asked for JSON; t1 answered in prose"
    missing = await _contract(_edge("What is 2 + 2?", '{"result": 4}', contract=contract))
    assert missing.outcome is Outcome.FAIL and missing.fault == "schema_violation" and "'answer'" in missing.detail
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
