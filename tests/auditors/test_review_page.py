"""The tier-3 review page, served by a real uvicorn server in the test's event loop: over HTTP
(httpx) for the security rules and the form's validation, and in a real headless Chromium for what
the expert does (sign in, read the queue, open a seat, vote; a missed deadline; JavaScript off)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from playwright.async_api import expect
from pydantic import SecretStr

from tests.auditors.browser import chromium, requires_chromium
from trust.auditors.base import AuditRequest, Outcome, Verdict
from trust.auditors.human import MISSED_DEADLINE, HumanAuditor, ReviewQueue, ReviewTask
from trust.auditors.review import (
    MAX_CRITIQUE_CHARS,
    MAX_FORM_BYTES,
    SESSION_COOKIE,
    SIGN_IN_FAILURES_ALLOWED,
    ReviewServer,
    create_review_app,
    parse_vote,
)
from trust.core.graphs.cig import AgentTurn, Role
from trust.core.graphs.hdag import Difficulty, HdagNode, Level, Tier
from trust.core.graphs.refinement import ErrorType
from trust.errors import ConfigError
from trust.settings import ReviewSettings

PASSWORD = "correct horse battery staple"
ADDRESS = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"

GOAL = HdagNode(
    "g", Level.GOAL, "Should this 72-year-old with atrial fibrillation get anticoagulation?", domain="medical"
)
TACTIC = HdagNode("c", Level.TACTIC, "Sum the CHA2DS2-VASc points: age, sex, hypertension.", domain="medical")
STRATEGY = HdagNode(
    "s",
    Level.STRATEGY,
    "Score stroke risk with CHA2DS2-VASc, then weigh bleeding risk with HAS-BLED.",
    difficulty=Difficulty.HARD,
    domain="medical",
    stakes="high",
    tier=Tier.HUMAN,
)
HOSTILE = HdagNode(
    "x", Level.STEP, 'Age 72 scores <script>document.title="pwned"</script><b>2</b> points.', domain="medical"
)
TURN = AgentTurn("t3", 3, "reviewer-1", Role.REVIEWER, "LGTM: the dose is right.", input="Check the dose.")

FAR_SECONDS = 600.0
"""A deadline no test reaches."""
SHORT_SECONDS = 2.0
"""A deadline the missed-deadline test waits out (long enough to open the review page first)."""


@dataclass
class Site:
    url: str
    queue: ReviewQueue
    auditor: HumanAuditor


@asynccontextmanager
async def serve(queue: ReviewQueue | None = None, **settings: Any) -> AsyncIterator[Site]:
    queue = queue or ReviewQueue()
    review = ReviewSettings(password=SecretStr(PASSWORD), port=0, **settings)
    app = create_review_app(queue, review, auditor_address=ADDRESS)
    async with ReviewServer.from_settings(app, review) as server:
        yield Site(server.url, queue, HumanAuditor(queue))


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    async with serve() as s:
        yield s


def request(
    node: HdagNode | AgentTurn, parents: tuple[HdagNode | AgentTurn, ...], seat: str, in_seconds: float
) -> AuditRequest:
    return AuditRequest(node, parents, deadline=time.time() + in_seconds, seat=seat)


async def seated(site: Site, *requests: AuditRequest) -> tuple[list[asyncio.Task[Verdict]], list[ReviewTask]]:
    """Starts one audit per request (as the worker does) and returns them with the queued tasks."""
    audits = [asyncio.create_task(site.auditor.audit(r)) for r in requests]
    for _ in range(100):
        if len(site.queue.pending()) == len(requests):
            return audits, site.queue.pending()
        await asyncio.sleep(0)
    raise AssertionError("the audits did not queue their tasks")


async def stop(audits: list[asyncio.Task[Verdict]]) -> None:
    for audit in audits:
        audit.cancel()
    await asyncio.gather(*audits, return_exceptions=True)


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', html)
    assert match, "the page has no CSRF field"
    return match.group(1)


async def sign_in(client: httpx.AsyncClient, password: str = PASSWORD) -> httpx.Response:
    form = await client.get("/sign-in")
    return await client.post("/sign-in", data={"csrf": csrf_of(form.text), "password": password})


@asynccontextmanager
async def signed_in(site: Site) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=site.url) as client:
        response = await sign_in(client)
        assert response.status_code == 303 and response.headers["location"] == "/queue"
        yield client


# ------------------------------------------------------------------------------------- the form


def test_parse_vote_takes_a_complete_form() -> None:
    verdict, errors = parse_vote({"vote": "fail", "score": "0.25", "error_type": "logical", "critique": " Wrong. \r\n"})
    assert errors == {}
    assert verdict == Verdict(Outcome.FAIL, 0.25, "Wrong.", ErrorType.LOGICAL)
    assert parse_vote({"vote": "pass", "critique": "Fine."}) == (Verdict(Outcome.PASS, 1.0, "Fine."), {})
    assert parse_vote({"vote": "fail", "error_type": "strategy", "critique": "No."})[0] == Verdict(
        Outcome.FAIL, 0.0, "No.", ErrorType.STRATEGY
    )


@pytest.mark.parametrize(
    ("form", "field", "message"),
    [
        ({"critique": "c"}, "vote", "Choose pass or fail."),
        ({"vote": "maybe", "critique": "c"}, "vote", "Unknown vote 'maybe'"),
        ({"vote": "pass", "score": "1.5", "critique": "c"}, "score", "a number from 0 to 1 (got '1.5')"),
        ({"vote": "pass", "score": "nan", "critique": "c"}, "score", "a number from 0 to 1 (got 'nan')"),
        ({"vote": "fail", "critique": "c"}, "error_type", "A fail vote names its error type"),
        ({"vote": "fail", "error_type": "typo", "critique": "c"}, "error_type", "Unknown error type 'typo'"),
        ({"vote": "pass", "error_type": "factual", "critique": "c"}, "error_type", "A pass vote names no error type"),
        ({"vote": "pass", "critique": "   "}, "critique", "Write a critique"),
        ({"vote": "pass", "critique": "c" * (MAX_CRITIQUE_CHARS + 1)}, "critique", "shorten it to at most 4000"),
    ],
)
def test_parse_vote_names_the_wrong_field(form: dict[str, str], field: str, message: str) -> None:
    verdict, errors = parse_vote(form)
    assert verdict is None
    assert message in errors[field]


# ------------------------------------------------------------------------------------- over HTTP


async def test_healthz_answers_without_sign_in(site: Site) -> None:
    async with httpx.AsyncClient(base_url=site.url) as client:
        response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "auditor": ADDRESS, "pending": 0}


async def test_a_signed_out_visitor_sees_no_segment(site: Site) -> None:
    audits, [task] = await seated(site, request(STRATEGY, (GOAL,), "seat-a", FAR_SECONDS))
    async with httpx.AsyncClient(base_url=site.url) as client:
        for path in ("/", "/queue", "/history", f"/review/{task.id}"):
            response = await client.get(path)
            assert response.status_code == 303 and response.headers["location"] == "/sign-in", path
            assert "CHA2DS2" not in response.text
        response = await client.post(f"/review/{task.id}", data={"vote": "pass", "critique": "ok"})
        assert response.status_code == 303 and response.headers["location"] == "/sign-in"
        form = await client.get("/sign-in")
        assert form.status_code == 200 and "CHA2DS2" not in form.text and "seat-a" not in form.text
    assert site.queue.pending() == [task]
    await stop(audits)


async def test_a_wrong_password_is_refused(site: Site) -> None:
    async with httpx.AsyncClient(base_url=site.url) as client:
        response = await sign_in(client, "wrong")
        assert response.status_code == 401
        assert "Wrong password" in response.text
        assert SESSION_COOKIE not in client.cookies
        assert (await client.get("/queue")).status_code == 303


async def test_sign_in_sets_a_strict_http_only_session_cookie(site: Site) -> None:
    async with httpx.AsyncClient(base_url=site.url) as client:
        response = await sign_in(client)
        assert response.status_code == 303
        cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith(SESSION_COOKIE))
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        assert "Secure" not in cookie, "plain http on loopback: a Secure cookie would never come back"
        page = await client.get("/queue")
        assert page.status_code == 200 and ADDRESS in page.text
        assert "script-src 'nonce-" in page.headers["content-security-policy"]
        assert page.headers["cache-control"] == "no-store" and page.headers["x-frame-options"] == "DENY"


async def test_sign_in_needs_its_csrf_token(site: Site) -> None:
    async with httpx.AsyncClient(base_url=site.url) as client:
        response = await client.post("/sign-in", data={"password": PASSWORD})
        assert response.status_code == 403 and "sign-in form expired" in response.text
        await client.get("/sign-in")  # the cookie alone, without the form's copy, is not enough either
        response = await client.post("/sign-in", data={"csrf": "forged", "password": PASSWORD})
        assert response.status_code == 403
        assert SESSION_COOKIE not in client.cookies


async def test_repeated_wrong_passwords_pause_sign_in(site: Site) -> None:
    async with httpx.AsyncClient(base_url=site.url) as client:
        for _ in range(SIGN_IN_FAILURES_ALLOWED):
            assert (await sign_in(client, "guess")).status_code == 401
        response = await sign_in(client)
        assert response.status_code == 429 and "sign-in is paused" in response.text
        assert SESSION_COOKIE not in client.cookies


async def test_a_vote_needs_the_sessions_csrf_token(site: Site) -> None:
    audits, [task] = await seated(site, request(STRATEGY, (GOAL,), "seat-a", FAR_SECONDS))
    async with signed_in(site) as client:
        vote = {"vote": "pass", "critique": "Sound approach."}
        for data in (vote, {**vote, "csrf": "forged"}):
            response = await client.post(f"/review/{task.id}", data=data)
            assert response.status_code == 403 and "security token is missing or stale" in response.text
        assert site.queue.pending() == [task]
        response = await client.post("/sign-out", data={"csrf": ""})
        assert response.status_code == 403, "signing out is a POST with a CSRF token too"
    await stop(audits)


async def test_the_review_page_shows_the_node_and_parents_as_text(site: Site) -> None:
    audits, [task] = await seated(site, request(HOSTILE, (STRATEGY, TACTIC), "seat-x", FAR_SECONDS))
    async with signed_in(site) as client:
        page = await client.get(f"/review/{task.id}")
    assert page.status_code == 200
    assert "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;&lt;b&gt;2&lt;/b&gt;" in page.text
    assert "<script>document.title" not in page.text and "<b>2</b>" not in page.text
    for text in (STRATEGY.content, TACTIC.content, "Is this step correct, supported by its inputs, and complete?"):
        assert text in page.text
    # Every inline script carries the response's nonce; the policy allows nothing else.
    nonce = re.search(r"'nonce-([^']+)'", page.headers["content-security-policy"])
    assert nonce and page.text.count("<script") == page.text.count(f'<script nonce="{nonce.group(1)}">') == 1
    await stop(audits)


async def test_a_cig_turn_shows_its_agent_role_and_input(site: Site) -> None:
    parent = AgentTurn("t2", 2, "coder-1", Role.CODER, "dose = 5 mg")
    audits, [task] = await seated(site, request(TURN, (parent,), "seat-t", FAR_SECONDS))
    async with signed_in(site) as client:
        page = (await client.get(f"/review/{task.id}")).text
    for text in ("agent turn", "reviewer-1", "reviewer", "Check the dose.", "LGTM: the dose is right.", "coder-1"):
        assert text in page
    assert "Is this review correct" in page
    await stop(audits)


async def test_a_wrong_form_is_answered_with_messages_and_keeps_the_input(site: Site) -> None:
    audits, [task] = await seated(site, request(STRATEGY, (GOAL,), "seat-a", FAR_SECONDS))
    async with signed_in(site) as client:
        csrf = csrf_of((await client.get(f"/review/{task.id}")).text)
        response = await client.post(
            f"/review/{task.id}",
            data={"csrf": csrf, "vote": "fail", "score": "7", "error_type": "", "critique": "Ignores <bleeding> risk."},
        )
    assert response.status_code == 422
    assert "The vote was not recorded" in response.text
    assert "A fail vote names its error type: choose one of factual, logical, strategy, protocol, negligence." in (
        response.text
    )
    assert "The score is a number from 0 to 1 (got &#39;7&#39;)" in response.text
    assert "Ignores &lt;bleeding&gt; risk.</textarea>" in response.text
    assert 'value="fail" checked' in response.text
    assert site.queue.pending() == [task]
    await stop(audits)


async def test_a_valid_vote_is_the_verdict_and_a_second_one_is_refused(site: Site) -> None:
    audits, [task] = await seated(site, request(STRATEGY, (GOAL,), "seat-a", FAR_SECONDS))
    async with signed_in(site) as client:
        csrf = csrf_of((await client.get(f"/review/{task.id}")).text)
        vote = {"csrf": csrf, "vote": "pass", "score": "", "error_type": "", "critique": "The guideline's approach."}
        response = await client.post(f"/review/{task.id}", data=vote)
        assert response.status_code == 303 and response.headers["location"] == f"/history?voted={task.id}"
        assert await audits[0] == Verdict(Outcome.PASS, 1.0, "The guideline's approach.")
        again = await client.post(f"/review/{task.id}", data={**vote, "vote": "fail"})
        assert again.status_code == 409 and "a vote cannot be changed once given" in again.text
        closed = await client.get(f"/review/{task.id}")
        assert closed.status_code == 200 and "You voted pass on seat &#39;seat-a&#39;" in closed.text


async def test_a_vote_after_the_deadline_is_refused_on_the_page() -> None:
    shift = [0.0]
    queue = ReviewQueue(clock=lambda: time.time() + shift[0])
    async with serve(queue) as site:
        audits, [task] = await seated(site, request(STRATEGY, (GOAL,), "seat-a", FAR_SECONDS))
        async with signed_in(site) as client:
            csrf = csrf_of((await client.get(f"/review/{task.id}")).text)
            shift[0] = 2 * FAR_SECONDS
            response = await client.post(
                f"/review/{task.id}", data={"csrf": csrf, "vote": "pass", "critique": "Fine, but late."}
            )
            assert response.status_code == 409
            assert "Vote refused: the deadline of seat &#39;seat-a&#39; passed at" in response.text
            assert "not counted" in response.text
            # An incomplete late form is refused for its lateness, not its fields.
            response = await client.post(f"/review/{task.id}", data={"csrf": csrf, "vote": "fail"})
            assert response.status_code == 409 and "deadline" in response.text
        assert (await audits[0]).vote is Outcome.NOT_APPLICABLE


async def test_an_unknown_task_is_a_clear_404(site: Site) -> None:
    async with signed_in(site) as client:
        page = await client.get("/review/0123456789abcdef")
    assert page.status_code == 404 and "There is no review task &#39;0123456789abcdef&#39;" in page.text


async def test_oversized_and_non_form_bodies_are_refused(site: Site) -> None:
    audits, [task] = await seated(site, request(STRATEGY, (GOAL,), "seat-a", FAR_SECONDS))
    async with signed_in(site) as client:
        response = await client.post(f"/review/{task.id}", data={"critique": "c" * MAX_FORM_BYTES})
        assert response.status_code == 413
        response = await client.post(f"/review/{task.id}", json={"vote": "pass"})
        assert response.status_code == 415 and "Expected a form" in response.text
    assert site.queue.pending() == [task]
    await stop(audits)


async def test_sign_out_ends_the_session(site: Site) -> None:
    async with signed_in(site) as client:
        csrf = csrf_of((await client.get("/queue")).text)
        token = client.cookies[SESSION_COOKIE]
        response = await client.post("/sign-out", data={"csrf": csrf})
        assert response.status_code == 303 and response.headers["location"] == "/sign-in"
        # The token is dead on the server, not only deleted from this browser.
        client.cookies.set(SESSION_COOKIE, token)
        assert (await client.get("/queue")).status_code == 303


async def test_a_session_expires() -> None:
    lifetime_seconds = 0.3
    async with serve(session_hours=lifetime_seconds / 3600) as site, signed_in(site) as client:
        assert (await client.get("/queue")).status_code == 200
        await asyncio.sleep(lifetime_seconds + 0.1)
        assert (await client.get("/queue")).status_code == 303


def test_the_app_needs_a_password() -> None:
    with pytest.raises(ConfigError, match="worker.review.password is unset"):
        create_review_app(ReviewQueue(), ReviewSettings(), auditor_address=ADDRESS)


async def test_a_taken_port_is_a_config_error(site: Site) -> None:
    port = int(site.url.rsplit(":", 1)[1])
    app = create_review_app(ReviewQueue(), ReviewSettings(password=SecretStr(PASSWORD)), auditor_address=ADDRESS)
    with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{port}.*choose another"):
        async with ReviewServer(app, "127.0.0.1", port):
            pass


# ------------------------------------------------------------------------------------- in Chromium


@pytest.mark.slow
@requires_chromium
async def test_the_expert_votes_in_chromium(site: Site) -> None:
    audits, tasks = await seated(
        site,
        request(HOSTILE, (STRATEGY, TACTIC), "round 7 / node x / seat 2", 2 * FAR_SECONDS),
        request(STRATEGY, (GOAL,), "round 7 / node s / seat 0", FAR_SECONDS),
    )
    later, sooner = audits
    async with chromium() as browser:
        page = await browser.new_page()
        await page.goto(f"{site.url}/review/{tasks[0].id}")
        assert page.url == f"{site.url}/sign-in"
        await page.fill("#password", PASSWORD)
        await page.click("button[type=submit]")
        assert page.url == f"{site.url}/queue"

        rows = page.locator("#queue tbody tr")
        assert await rows.count() == 2
        first, second = [await rows.nth(i).inner_text() for i in range(2)]
        assert "round 7 / node s / seat 0" in first and "strategy" in first, "the nearest deadline comes first"
        assert "round 7 / node x / seat 2" in second and "step" in second
        assert "UTC" in first and re.search(r"\d+ min \d\d s", first)

        await page.click("text=round 7 / node x / seat 2")
        assert page.url == f"{site.url}/review/{tasks[1].id}"
        assert await page.title() != "pwned", "the node's script must not run"
        subject = await page.locator("section.subject").inner_text()
        assert HOSTILE.content in subject
        parents = page.locator("section.parent")
        assert [await parents.nth(i).locator("pre").inner_text() for i in range(2)] == [
            STRATEGY.content,
            TACTIC.content,
        ]
        await page.screenshot(path="/tmp/review_page.png", full_page=True)

        critique = "Age 65-74 scores 1 point in CHA2DS2-VASc, not 2."
        await page.check("input[name=vote][value=fail]")
        await page.select_option("#error_type", "factual")
        await page.fill("#score", "0.05")
        await page.fill("#critique", critique)
        await page.click("button:has-text('Submit vote')")

        assert await later == Verdict(Outcome.FAIL, 0.05, critique, ErrorType.FACTUAL)
        assert page.url == f"{site.url}/history?voted={tasks[1].id}"
        assert "Your vote on seat round 7 / node x / seat 2 is recorded (fail)" in await page.inner_text("main")

        site.queue.record(tasks[1].id, "committed", "tx 0x5f3c")
        await page.reload()
        row = await page.locator(f"#past-{tasks[1].id}").inner_text()
        assert "committed" in row and "tx 0x5f3c" in row and critique in row and "factual error" in row

        await page.click("text=Queue (1)")
        await page.wait_for_url(f"{site.url}/queue")  # the click navigates; count on the new page
        assert await page.locator("#queue tbody tr").count() == 1
    await stop([sooner])


@pytest.mark.slow
@requires_chromium
async def test_a_missed_deadline_shows_in_chromium(site: Site) -> None:
    async with chromium() as browser:
        page = await browser.new_page()
        await page.goto(f"{site.url}/sign-in")
        await page.fill("#password", PASSWORD)
        await page.click("button[type=submit]")
        # Seated only now, so the short deadline is spent on the review page, not on starting Chromium.
        audits, [task] = await seated(site, request(STRATEGY, (GOAL,), "seat-late", SHORT_SECONDS))
        await page.goto(f"{site.url}/review/{task.id}")
        await page.check("input[name=vote][value=pass]")
        await page.fill("#critique", "Fine, but too late.")

        verdict = await audits[0]
        assert verdict.vote is Outcome.NOT_APPLICABLE and "did not vote" in verdict.critique
        # The countdown (inline script, allowed by its nonce) reached zero on its own.
        await expect(page.locator("[data-deadline]")).to_have_text("passed")

        await page.click("button:has-text('Submit vote')")
        message = await page.inner_text("main")
        assert "Vote refused: the deadline of seat 'seat-late' passed at" in message and "not counted" in message

        await page.goto(f"{site.url}/history")
        row = await page.locator(f"#past-{task.id}").inner_text()
        assert "missed" in row and MISSED_DEADLINE in row


@pytest.mark.slow
@requires_chromium
async def test_the_page_works_with_javascript_off(site: Site) -> None:
    audits, [task] = await seated(site, request(STRATEGY, (GOAL,), "seat-nojs", FAR_SECONDS))
    async with chromium() as browser:
        context = await browser.new_context(java_script_enabled=False)
        page = await context.new_page()
        await page.goto(f"{site.url}/queue")
        await page.fill("#password", PASSWORD)
        await page.click("button[type=submit]")
        await page.click("text=seat-nojs")
        left = await page.locator("[data-deadline]").inner_text()
        assert re.fullmatch(r"\d+ min \d\d s", left), "the server renders the time left"

        await page.check("input[name=vote][value=fail]")
        await page.fill("#critique", "Skips the bleeding risk.")
        await page.click("button:has-text('Submit vote')")
        assert "A fail vote names its error type" in await page.inner_text("#error-error_type")
        assert await page.input_value("#critique") == "Skips the bleeding risk."

        await page.select_option("#error_type", "strategy")
        await page.click("button:has-text('Submit vote')")
        assert await audits[0] == Verdict(Outcome.FAIL, 0.0, "Skips the bleeding risk.", ErrorType.STRATEGY)

        await page.click("button:has-text('Sign out')")
        assert page.url == f"{site.url}/sign-in"
        await page.goto(f"{site.url}/history")
        assert page.url == f"{site.url}/sign-in"
        await context.close()
