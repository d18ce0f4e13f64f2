#!/usr/bin/env python3
"""`mindrune mcp` end to end, driven by the official Python MCP SDK (PyPI `mcp`).

The issue's acceptance test, from a second, independent client: start `mindrune mcp` as a
subprocess over stdio, then create -> use -> report -> the fixer revises -> approve -> the record
shows the comparison. The human's side is the real `mindrune inbox` and `mindrune card`; the
skill fixer is `examples/fixer.sh`. (crates/cli/tests/it/mcp.rs is the same flow with rmcp's
client, which declares no elicitation.)

It runs twice, on both ways the shipped default `ask` reaches the human:

- `default`: the SDK's default `mcp.client.Client`, which discovers protocol 2026-07-28; there
  MindRune asks through an input-required result (SEP-2322) and the SDK retries with the answer.
- `2025-06-18`: the SDK's `ClientSession` with the initialize handshake pinned to 2025-06-18;
  there MindRune sends an `elicitation/create` request.

On each, after the flow, the human answers no, nobody answers (`cancel`, what `claude -p`
does), and a client with no elicitation callback (which then declares no elicitation) calls:
each gets nothing drafted, with its own sentence. One `seen:` line per answer says what the
assistant was told, for the table in docs/playbooks.md.

    python3 tests/python/mcp_e2e.py [MINDRUNE_BIN [REPO_ROOT]]

MINDRUNE_BIN defaults to $MINDRUNE_BIN, then REPO_ROOT/target/debug/mindrune; REPO_ROOT to
$MINDRUNE_REPO, then the folder two above this file. Prints one line per step; exits 1 with a
message on the first failure. Needs `pip install -r tests/python/requirements.txt`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import anyio
    from mcp import types
    import mcp.client.session as mcp_session
    from mcp.client import Client
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
except ImportError as err:  # pragma: no cover - the message is the point
    sys.exit(f"FAIL: the Python MCP SDK is not installed ({err}); pip install -r tests/python/requirements.txt")

# How long the fixer, running in the background, gets to file its revision.
FIXER_TIMEOUT = 20.0
# The whole flow, so a hung server fails the run instead of hanging CI.
OVERALL_TIMEOUT = 120.0
SKILL = "weekly-report"
CORRECTION = "Write the report to reports/weekly.md, newest week first"
# The skill the assistant writes down.
WEEKLY = {
    "name": SKILL,
    "trigger": "the human asks for the weekly report",
    "use_when": "a week of notes exists under notes/",
    "not_when": "the human wants a single day's summary",
    "preconditions": ["notes/ holds this week's files"],
    "steps": [
        {"do": "Read this week's notes", "tool": "workspace_read"},
        {"do": "Write the report to reports/weekly.md", "tool": "file_write"},
    ],
    "expected_result": "reports/weekly.md exists with one section per project",
    "failure_modes": ["notes from last week get included"],
    "evidence": ["the weekly report the human accepted"],
    "procedure": "Read the notes, then write the report, one section per project.",
}


class Failure(Exception):
    """A step did not do what the acceptance test expects."""


def step(message: str) -> None:
    print(f"ok: {message}", flush=True)


def check(condition: bool, message: str, detail: str = "") -> None:
    if not condition:
        raise Failure(message + (f"\n--- got:\n{detail}" if detail else ""))


class Workspace:
    """A home tree H with the assistant's workspace H/ws, and the human's commands on it."""

    def __init__(self, binary: Path, repo: Path, home: Path) -> None:
        self.binary = binary
        self.home = home
        self.path = home / "ws"
        self.env = {
            key: value
            for key, value in os.environ.items()
            if key
            not in ("MINDRUNE_WORKSPACE", "MINDRUNE_LOG", "MINDRUNE_LOG_FORMAT", "MINDRUNE_HOME", "MINDRUNE_DATABASE_URL")
        }
        self.env["HOME"] = str(home)
        init = self.mindrune("playbook", "init")
        check("mindrune mcp --workspace" in init, "playbook init did not say how to start the server", init)
        fixer = (repo / "examples" / "fixer.sh").resolve()
        check(fixer.is_file(), f"no fixer at {fixer}")
        # The shipped default permissions stay; the settings name the home and the fixer (a shell
        # command line, so the path is quoted).
        (self.path / "playbooks.toml").write_text(
            f"tools = []\nhome = {json.dumps(str(home))}\nfixer = {json.dumps(shlex_quote(str(fixer)))}\n"
        )

    def mindrune(self, command: str, *args: str) -> str:
        """`mindrune COMMAND --workspace W ARGS…`, which must succeed; its stdout."""
        argv = [str(self.binary), command, "--workspace", str(self.path), *args]
        done = subprocess.run(argv, cwd=self.home, env=self.env, capture_output=True, text=True, timeout=60)
        check(
            done.returncode == 0,
            f"`mindrune {command} {' '.join(args)}` exited {done.returncode}",
            done.stderr + done.stdout,
        )
        return done.stdout

    def waiting_cards(self) -> list[dict]:
        """The cards waiting for the human, as `mindrune inbox --json` lists them."""
        return json.loads(self.mindrune("inbox", "--json"))

    def live(self, relative: str = "SKILL.md") -> Path:
        return self.path / "skills" / SKILL / relative

    def fixer_log(self, report: int) -> str:
        log = self.path / ".mindrune" / "fixer" / f"report-{report}.log"
        return log.read_text() if log.exists() else f"(no fixer log at {log})"


def shlex_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def call_ok(session, tool: str, arguments: dict) -> str:
    result = await session.call_tool(tool, arguments)
    text = text_of(result)
    check(not result.is_error, f"{tool} returned an error", text)
    return text


async def follow(session, ws: Workspace, turns: range) -> None:
    """Reads the skill once per turn, as the assistant following it does."""
    for turn in turns:
        text = await call_ok(
            session,
            "workspace_read",
            {"path": f"skills/{SKILL}/SKILL.md", "turn": str(ws.home / "turns" / f"{turn}.txt")},
        )
        check(f"name: {SKILL}" in text, "workspace_read did not return the skill", text)


# The protocols the SDK is driven on: its default client, and the handshake pinned to 2025-06-18.
PROTOCOLS = ("default", "2025-06-18")


class Human:
    """The person behind the client: what they answer, and what they were asked."""

    def __init__(self, answer: str) -> None:
        # "yes", "no", "decline", "cancel", or "none" (the client has no elicitation callback).
        self.answer = answer
        self.asked: list[str] = []

    async def elicitation(self, context, params: types.ElicitRequestParams) -> types.ElicitResult:
        check(isinstance(params, types.ElicitRequestFormParams), "the server asked with something other than a form")
        schema = params.requested_schema
        check(
            schema.get("properties", {}).get("approve", {}).get("type") == "boolean",
            "the form is not a yes/no approve",
            json.dumps(schema),
        )
        self.asked.append(params.message)
        if self.answer == "yes":
            return types.ElicitResult(action="accept", content={"approve": True})
        if self.answer == "no":
            return types.ElicitResult(action="accept", content={"approve": False})
        if self.answer == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="cancel")

    def callback(self):
        return None if self.answer == "none" else self.elicitation


class Caller:
    """One connected client, whichever SDK class it is: the calls the flow makes."""

    def __init__(self, client, protocol: str) -> None:
        self.client = client
        self.protocol = protocol

    async def call_tool(self, tool: str, arguments: dict) -> types.CallToolResult:
        return await self.client.call_tool(tool, arguments)

    async def list_tools(self):
        return await self.client.list_tools()


async def connected(ws: Workspace, protocol: str, human: Human, body) -> None:
    """Starts `mindrune mcp`, connects the SDK's client on `protocol`, and runs `body(caller)`."""
    server_log_path = ws.home / f"mcp-stderr-{protocol}-{human.answer}.log"
    server = StdioServerParameters(
        command=str(ws.binary),
        args=["mcp", "--workspace", str(ws.path)],
        # The fixer files its revision with this program.
        env={"HOME": str(ws.home), "MINDRUNE_BIN": str(ws.binary)},
        cwd=str(ws.home),
    )
    with server_log_path.open("w") as server_log:
        try:
            if protocol == "default":
                async with Client(stdio_client(server, errlog=server_log), elicitation_callback=human.callback()) as client:
                    await body(Caller(client, client.protocol_version))
            else:
                async with stdio_client(server, errlog=server_log) as (read, write):
                    async with ClientSession(read, write, elicitation_callback=human.callback()) as session:
                        # The SDK offers its newest handshake version; the pin is its module constant.
                        offered = mcp_session.LATEST_HANDSHAKE_VERSION
                        mcp_session.LATEST_HANDSHAKE_VERSION = protocol
                        try:
                            init = await session.initialize()
                        finally:
                            mcp_session.LATEST_HANDSHAKE_VERSION = offered
                        await body(Caller(session, init.protocol_version))
        except Exception as err:
            # The SDK's task groups wrap what the flow raised; a failed check is reported as itself.
            failure = first_failure(err)
            if failure is not None:
                raise failure from None
            server_log.flush()
            raise Failure(
                f"the MCP session failed: {err!r}\n--- the server's stderr:\n{server_log_path.read_text()}"
            ) from err


async def flow(ws: Workspace, protocol: str) -> None:
    human = Human("yes")

    async def body(caller: Caller) -> None:
        expected = "2026-07-28" if protocol == "default" else protocol
        check(caller.protocol == expected, f"negotiated {caller.protocol}, not {expected}")
        step(f"[{protocol}] connected on protocol {caller.protocol}")
        await run_session(caller, ws, human.asked, protocol)

    await connected(ws, protocol, human, body)


async def nobody_says_yes(ws: Workspace, protocol: str) -> None:
    """A no, a cancel and a client that cannot ask: nothing drafted, each told apart."""
    expected = {
        "no": "your human said no; nothing was drafted",
        "decline": "your human said no; nothing was drafted",
        "cancel": "Nobody answered: the client cancelled the question",
        "none": "This client declared no way to ask your human (no elicitation)",
    }
    for answer, sentence in expected.items():
        human = Human(answer)

        async def body(caller: Caller, human: Human = human, sentence: str = sentence) -> None:
            proposal = dict(WEEKLY, name=f"answer-{human.answer}", steps=[{"do": "Send the report", "tool": "file_copy"}])
            result = await caller.call_tool("skill_create", proposal)
            text = text_of(result)
            check(result.is_error, f"[{protocol}] {human.answer}: skill_create went through", text)
            check(text.startswith(sentence), f"[{protocol}] {human.answer}: not the expected answer", text)
            if human.answer == "none":
                check(not human.asked, "a client without the callback was asked")
            else:
                check(len(human.asked) == 1, f"[{protocol}] {human.answer}: asked {len(human.asked)} times")
            if human.answer in ("cancel", "none"):
                for way in ("`Elicitation` hook", "`create: card`", "mindrune playbook init --unattended"):
                    check(way in text, f"[{protocol}] {human.answer}: the answer does not name {way}", text)
            check(
                not (ws.path / "skills" / "pending" / f"answer-{human.answer}").exists(),
                f"[{protocol}] {human.answer}: a draft was left",
            )
            print(f"seen: [{caller.protocol}] {human.answer}: {text.split('. ')[0]}", flush=True)

        await connected(ws, protocol, human, body)
    step(f"[{protocol}] no, decline, cancel and no elicitation: nothing drafted, each said apart")


def first_failure(err: BaseException) -> Failure | None:
    """The first failed check inside (nested) exception groups, if any."""
    if isinstance(err, Failure):
        return err
    for inner in getattr(err, "exceptions", ()):
        found = first_failure(inner)
        if found is not None:
            return found
    return None


async def run_session(session: Caller, ws: Workspace, asked: list[str], protocol: str) -> None:
    tools = sorted(tool.name for tool in (await session.list_tools()).tools)
    expected = sorted(
        [
            "workspace_read",
            "file_write",
            "file_copy",
            "file_move",
            "skill_create",
            "skill_refine",
            "playbook_search",
            "playbook_record",
        ]
    )
    check(tools == expected, "tools/list is not the eight tools", repr(tools))
    step("tools/list: the eight tools")

    # Create: the human is asked through elicitation, says yes, and the draft waits on card #1.
    created = await call_ok(session, "skill_create", WEEKLY)
    check(len(asked) == 1, f"skill_create asked the human {len(asked)} times, not once", "\n".join(asked))
    check(SKILL in asked[0], "the question does not name the skill", asked[0])
    check(f"Drafted {SKILL} and filed card #1" in created, "skill_create did not file card #1", created)
    check((ws.path / "skills" / "pending" / SKILL / "SKILL.md").is_file(), "no draft in skills/pending/")
    step(f"skill_create: asked the human ({asked[0]!r}), drafted, card #1 filed")

    approved = ws.mindrune("card", "approve", "1")
    check("card #1 approved" in approved, "card #1 was not approved", approved)
    live = ws.live().read_text()
    check("version: 1" in live and "status: active" in live, "the approved skill is not live v1", live)
    step("mindrune card approve 1: weekly-report is live as v1")

    await follow(session, ws, range(1, 7))
    step("workspace_read x6: six uses of v1")

    turn = ws.home / "turns" / "1.txt"
    turn.parent.mkdir(parents=True, exist_ok=True)
    turn.write_text(f"followed: 1 2\ncorrect step 2: {CORRECTION}\n")
    reported = await call_ok(
        session,
        "skill_refine",
        {"action": "report", "skill": SKILL, "revision": 1, "step": 2, "turn": str(turn)},
    )
    check(len(asked) == 2, f"the report asked the human {len(asked) - 1} times, not once", "\n".join(asked))
    check(SKILL in asked[1] and "step 2" in asked[1], "the question does not name the skill and step", asked[1])
    check(f"Reported step 2 of {SKILL} v1" in reported, "the report was not recorded", reported)
    check("skill fixer started in the background" in reported, "the fixer did not start", reported)
    match = re.search(r"\(report #(\d+)\)", reported)
    check(match is not None, "the answer names no report number", reported)
    report = int(match.group(1))
    step(f"skill_refine report: asked the human ({asked[1]!r}), report #{report}, the fixer started")

    deadline = time.monotonic() + FIXER_TIMEOUT
    card = None
    while card is None:
        card = next(
            (
                c
                for c in ws.waiting_cards()
                if c["kind"] == "revise" and c["state"] == "waiting" and c["report"] == report
            ),
            None,
        )
        if card is None:
            check(
                time.monotonic() < deadline,
                f"the fixer filed no revision within {FIXER_TIMEOUT:.0f} s; its log",
                ws.fixer_log(report),
            )
            await anyio.sleep(0.1)
    check(card["skill"] == SKILL and card["filed_by"] == "fixer", "the revise card is not the fixer's", json.dumps(card))
    card_id = card["id"]
    step(f"the fixer filed card #{card_id}, a revision waiting for the human")

    shown = ws.mindrune("card", "show", str(card_id))
    check(f'+  - do: {CORRECTION}' in shown, "the card's diff does not show the corrected step", shown)
    check("-  - do: Write the report to reports/weekly.md\n" in shown, "the diff does not show the step replaced", shown)
    check("which asks nobody before filing" in shown, "the card does not say nobody was asked before it was filed", shown)
    step(f"mindrune card show {card_id}: the diff has \"newest week first\"")

    approved = ws.mindrune("card", "approve", str(card_id))
    check(f"card #{card_id} approved" in approved, f"card #{card_id} was not approved", approved)
    live = ws.live().read_text()
    check("version: 2" in live and "newest week first" in live, "the live file is not the revision as v2", live)
    kept = ws.live("history/1/SKILL.md")
    check(kept.is_file(), "v1 was not kept in history/1/")
    check("version: 1" in kept.read_text(), "history/1/SKILL.md is not v1", kept.read_text())
    step(f"mindrune card approve {card_id}: live is v2, v1 kept in history/1/")

    await follow(session, ws, range(7, 13))
    step("workspace_read x6: six uses of v2")

    record = await call_ok(session, "playbook_record", {"skill": SKILL})
    check(f"{SKILL} (v2, active)" in record, "the record does not show v2 live", record)
    check("v2: 6 reads, 0 corrections" in record, "the record does not count v2's reads", record)
    check("v1: 6 reads, 1 corrections" in record, "the record does not count v1's reads and correction", record)
    check("Fisher's exact test" in record, "the record names no test", record)
    verdict = next((line.strip() for line in record.splitlines() if "Fisher's exact test" in line), "")
    check("v2" in verdict and "v1" in verdict, "the verdict does not compare v2 with v1", record)
    step(f"playbook_record: {verdict}")


def main() -> int:
    repo = Path(sys.argv[2] if len(sys.argv) > 2 else os.environ.get("MINDRUNE_REPO", Path(__file__).resolve().parents[2]))
    binary = Path(
        sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MINDRUNE_BIN", repo / "target" / "debug" / "mindrune")
    ).resolve()
    if not os.access(binary, os.X_OK):
        print(f"FAIL: no mindrune binary at {binary} (build it with `cargo build -p mindrune`)", file=sys.stderr)
        return 1
    started = time.monotonic()
    homes: list[Path] = []
    try:
        for protocol in PROTOCOLS:
            home = Path(tempfile.mkdtemp(prefix=f"mindrune-mcp-e2e-{protocol}-")).resolve()
            homes.append(home)
            ws = Workspace(binary, repo, home)
            step(f"[{protocol}] workspace {ws.path}: shipped default permissions, fixer examples/fixer.sh")
            anyio.run(run_with_timeout, ws, protocol)
    except Failure as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        print(f"(the workspace is kept at {homes[-1]})", file=sys.stderr)
        return 1
    except TimeoutError:
        print(f"FAIL: the flow did not finish within {OVERALL_TIMEOUT:.0f} s", file=sys.stderr)
        print(f"(the workspace is kept at {homes[-1]})", file=sys.stderr)
        return 1
    # Passed: nothing to look at, so nothing is left behind.
    for home in homes:
        shutil.rmtree(home, ignore_errors=True)
    print(f"mcp_e2e: passed in {time.monotonic() - started:.1f} s (mcp {package_version()})", flush=True)
    return 0


async def run_with_timeout(ws: Workspace, protocol: str) -> None:
    with anyio.fail_after(OVERALL_TIMEOUT):
        await flow(ws, protocol)
        await nobody_says_yes(ws, protocol)


def package_version() -> str:
    from importlib.metadata import version

    return version("mcp")


if __name__ == "__main__":
    sys.exit(main())
