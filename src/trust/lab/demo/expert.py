"""A SCRIPTED stand-in for the human expert of tier 3, for the demo: it signs in to each tier-3 worker's
review page over HTTP, reads the queue, opens each seat's page, decides with a fixed clinical
checklist, and submits the page's own vote form. It is not a person and says so in every critique.

The checklist is the CHA2DS2-VASc score as guidelines define it: eight criteria and their points.
A node that states the scoring rules passes when every criterion is there with its points, and fails
naming what is missing or mis-scored; a node that states how the score will be computed passes when
it evaluates each criterion and keeps a running total. Any other node is outside the checklist: the
script votes pass and says that it did not judge it, which a real expert would never do (the demo's
traces send only those two kinds of nodes to tier 3).

Two ways to run it: inside the demo (`run_scripted_expert`, on the local network's pages), or as a
process of its own against pages recorded in a file (`python -m trust.lab.demo.expert --pages FILE`,
which `trust devnet up --scripted-expert` starts on the devnet's `review-pages.json`): it re-reads the
file every round, so pages of workers added or restarted later are voted too, and a page that does
not answer (its worker restarting) is tried again next round.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import logging
import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from trust.adapters.local.workers import ReviewPage

__all__ = [
    "CHECKLIST",
    "LABEL",
    "READY_LINE",
    "ExpertDecision",
    "decide",
    "follow_review_pages",
    "load_review_pages",
    "main",
    "run_scripted_expert",
]

log = logging.getLogger("trust.lab.demo.expert")

LABEL = "[scripted expert, not a person]"
READY_LINE = "following the review pages in "
"""What the process logs once it runs (`main`), for whoever started it to wait on."""
_HTTP_TIMEOUT_SECONDS = 10.0

CHECKLIST: tuple[tuple[str, str, int], ...] = (
    ("congestive heart failure", r"(congestive )?heart failure", 1),
    ("hypertension", r"hypertension", 1),
    ("age 75 or over", r"age\s*(≥|>=|\\geq)\s*75", 2),
    ("age 65 to 74", r"age\s*65\s*[-–]\s*74", 1),
    ("diabetes mellitus", r"diabetes", 1),
    ("prior stroke or TIA", r"stroke\s*/\s*tia", 2),
    ("vascular disease", r"vascular disease", 1),
    ("female sex", r"female", 1),
)
"""(criterion, how a rule line names it, its points): CHA2DS2-VASc as the guidelines score it."""

_POINTS = re.compile(r"\+\s*(\d+)\s*points?", re.IGNORECASE)
_SUBJECT = re.compile(r'<section class="card subject">.*?<pre class="node-text">(.*?)</pre>', re.DOTALL)
_CSRF = re.compile(r'name="csrf" value="([^"]*)"')
_TASKS = re.compile(r'href="/review/([^"]+)"')


@dataclass(frozen=True, slots=True)
class ExpertDecision:
    vote: str
    critique: str
    error_type: str = ""


def _rule_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if _POINTS.search(line)]


def decide(node_text: str) -> ExpertDecision:
    """The checklist's vote on one node (see the module docstring)."""
    lines = _rule_lines(node_text)
    if len(lines) >= 4:
        problems = []
        for name, pattern, points in CHECKLIST:
            line = next((line for line in lines if re.search(pattern, line, re.IGNORECASE)), None)
            if line is None:
                problems.append(f"the {name} criterion is missing")
                continue
            match = _POINTS.search(line)
            if match is not None and int(match.group(1)) != points:
                problems.append(f"{name} scores {points}, not {match.group(1)}")
        if problems:
            return ExpertDecision("fail", f"{LABEL} The scoring rules are wrong: {'; '.join(problems)}.", "factual")
        return ExpertDecision("pass", f"{LABEL} All eight CHA2DS2-VASc criteria are listed with their points.")
    lowered = node_text.lower()
    if "running score" in lowered or "each scoring rule" in lowered or "each rule" in lowered:
        if "each" in lowered and "running" in lowered:
            return ExpertDecision(
                "pass", f"{LABEL} The approach scores every criterion on its own and keeps a running total."
            )
        return ExpertDecision(
            "fail", f"{LABEL} The approach does not evaluate every criterion with a running total.", "strategy"
        )
    return ExpertDecision("pass", f"{LABEL} This node is outside the scripted checklist; it was not judged.")


async def _sign_in(client: httpx.AsyncClient, page: ReviewPage) -> None:
    form = await client.get("/sign-in")
    token = _CSRF.search(form.text)
    if token is None:
        raise RuntimeError(f"no sign-in form at {page.url}")
    answer = await client.post(
        "/sign-in", data={"csrf": token.group(1), "username": "expert", "password": page.password}
    )
    if "/sign-in" in str(answer.url):
        raise RuntimeError(f"the review page at {page.url} refused the expert's password")


async def _review_once(client: httpx.AsyncClient, page: ReviewPage, on_vote: object) -> int:
    queue = await client.get("/queue")
    if "/sign-in" in str(queue.url):
        await _sign_in(client, page)
        queue = await client.get("/queue")
    voted = 0
    for task_id in dict.fromkeys(_TASKS.findall(queue.text)):
        form = await client.get(f"/review/{task_id}")
        subject, token = _SUBJECT.search(form.text), _CSRF.search(form.text)
        if subject is None or token is None:
            continue  # decided meanwhile, or no longer open
        decision = decide(html.unescape(subject.group(1)))
        data = {"csrf": token.group(1), "vote": decision.vote, "critique": decision.critique}
        if decision.error_type:
            data["error_type"] = decision.error_type
        answer = await client.post(f"/review/{task_id}", data=data)
        if answer.status_code == 200 and "/history" in str(answer.url):
            voted += 1
            if callable(on_vote):
                on_vote(page.auditor, task_id, decision)
    return voted


async def run_scripted_expert(
    pages: Sequence[ReviewPage], stop: asyncio.Event, *, poll_seconds: float = 0.3, on_vote: object = None
) -> int:
    """Reviews every seat that shows up on `pages` until `stop` is set; returns the votes cast."""
    clients = [httpx.AsyncClient(base_url=page.url, follow_redirects=True, timeout=10.0) for page in pages]
    votes = 0
    try:
        for client, page in zip(clients, pages, strict=True):
            await _sign_in(client, page)
        while not stop.is_set():
            for client, page in zip(clients, pages, strict=True):
                try:
                    votes += await _review_once(client, page, on_vote)
                except httpx.HTTPError as exc:
                    log.warning("review page %s: %s", page.url, exc)
            try:
                await asyncio.wait_for(stop.wait(), poll_seconds)
            except TimeoutError:
                pass
    finally:
        for client in clients:
            await client.aclose()
    return votes


def load_review_pages(path: Path) -> list[ReviewPage]:
    """The pages recorded in `path`: a JSON list of {"auditor", "url", "password"} (what `trust
    devnet up` writes to its `review-pages.json`). `ValueError` naming the file when it is not."""
    try:
        entries = json.loads(path.read_text())
        return [ReviewPage(str(e["auditor"]), str(e["url"]), str(e["password"])) for e in entries]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a list of review pages ({exc})") from None


async def follow_review_pages(
    pages_file: Path, stop: asyncio.Event, *, poll_seconds: float = 1.0, on_vote: object = None
) -> int:
    """Reviews every seat on the pages recorded in `pages_file` until `stop` is set; returns the
    votes cast. Unlike `run_scripted_expert`, pages may come and go: the file is read again every
    round, and a page that fails is logged and tried again next round."""
    clients: dict[tuple[str, str], httpx.AsyncClient] = {}
    votes = 0
    try:
        while not stop.is_set():
            try:
                pages = load_review_pages(pages_file)
            except ValueError as exc:
                log.warning("%s; trying again", exc)
                pages = []
            for page in pages:
                key = (page.url, page.password)
                if key not in clients:
                    clients[key] = httpx.AsyncClient(
                        base_url=page.url, follow_redirects=True, timeout=_HTTP_TIMEOUT_SECONDS, trust_env=False
                    )
                try:
                    votes += await _review_once(clients[key], page, on_vote)
                except (httpx.HTTPError, RuntimeError) as exc:
                    log.info("review page %s (%s): %s", page.url, page.auditor, exc)
            try:
                await asyncio.wait_for(stop.wait(), poll_seconds)
            except TimeoutError:
                pass
    finally:
        for client in clients.values():
            await client.aclose()
    return votes


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m trust.lab.demo.expert --pages FILE`: votes on the recorded pages until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(
        prog="python -m trust.lab.demo.expert", description=f"The demo's scripted tier-3 expert {LABEL}."
    )
    parser.add_argument("--pages", type=Path, required=True, help="JSON list of {auditor, url, password}")
    parser.add_argument("--poll-seconds", type=float, default=1.0, help="pause between rounds over the pages")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(message)s", force=True)
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    def on_vote(auditor: str, task: str, decision: ExpertDecision) -> None:
        log.info("%s voted %s on %s for %s: %s", LABEL, decision.vote, task, auditor, decision.critique)

    async def run() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        log.info("%s %s%s", LABEL, READY_LINE, args.pages)
        return await follow_review_pages(args.pages, stop, poll_seconds=args.poll_seconds, on_vote=on_vote)

    votes = asyncio.run(run())
    log.info("%s stopped after %d votes", LABEL, votes)


if __name__ == "__main__":
    main()
