#!/usr/bin/env node
// `mindrune mcp` driven by the official TypeScript MCP SDK (npm `@modelcontextprotocol/sdk`,
// pinned in package.json and package-lock.json beside this file), a third independent client.
//
//     node mcp_e2e.mjs MINDRUNE_BIN REPO_ROOT
//
// .ci/run installs the SDK under target/typescript-e2e/ (npm ci) and runs this file from there.
// The SDK's client negotiates 2025-11-25 and answers `elicitation/create` through a request
// handler, so the shipped default's ask is an elicitation. The flow: create (the human says yes)
// -> `mindrune card approve` -> read -> report (yes) -> the fixer's revision waits on its card,
// saying nobody was asked; then a no, a cancel and a client that declares no elicitation each get
// nothing drafted, with their own sentence. One `seen:` line per answer says what the assistant
// was told. Exits 1 with a message on the first failure.

import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, existsSync, realpathSync, rmSync, openSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

const FIXER_TIMEOUT_MS = 20_000;
const SKILL = "weekly-report";
const WEEKLY = {
  name: SKILL,
  trigger: "the human asks for the weekly report",
  use_when: "a week of notes exists under notes/",
  not_when: "the human wants a single day's summary",
  preconditions: ["notes/ holds this week's files"],
  steps: [
    { do: "Read this week's notes", tool: "workspace_read" },
    { do: "Write the report to reports/weekly.md", tool: "file_write" },
  ],
  expected_result: "reports/weekly.md exists with one section per project",
  failure_modes: ["notes from last week get included"],
  evidence: ["the weekly report the human accepted"],
  procedure: "Read the notes, then write the report, one section per project.",
};

class Failure extends Error {}

function check(condition, message, detail = "") {
  if (!condition) {
    throw new Failure(message + (detail ? `\n--- got:\n${detail}` : ""));
  }
}

function step(message) {
  console.log(`ok: ${message}`);
}

const [binaryArg, repoArg] = process.argv.slice(2);
const repo = resolve(repoArg ?? ".");
const binary = resolve(binaryArg ?? join(repo, "target", "debug", "mindrune"));
const home = realpathSync(mkdtempSync(join(tmpdir(), "mindrune-mcp-e2e-ts-")));
const workspace = join(home, "ws");
const env = Object.fromEntries(
  Object.entries(process.env).filter(
    ([key]) =>
      !["MINDRUNE_WORKSPACE", "MINDRUNE_LOG", "MINDRUNE_LOG_FORMAT", "MINDRUNE_HOME", "MINDRUNE_DATABASE_URL"].includes(key),
  ),
);
env.HOME = home;

/** `mindrune COMMAND --workspace W ARGS…`, which must succeed; its stdout. */
function mindrune(command, ...args) {
  try {
    return execFileSync(binary, [command, "--workspace", workspace, ...args], {
      cwd: home,
      env,
      encoding: "utf8",
      timeout: 60_000,
    });
  } catch (err) {
    throw new Failure(`\`mindrune ${command} ${args.join(" ")}\` failed`, { cause: err });
  }
}

function textOf(result) {
  return result.content.filter((block) => block.type === "text").map((block) => block.text).join("\n");
}

/** A client whose human answers `answer` ("yes", "no", "cancel"), or declares no elicitation ("none"). */
async function connect(answer, asked) {
  const capabilities = answer === "none" ? {} : { elicitation: {} };
  const client = new Client({ name: "mindrune-ts-e2e", version: "0.0.0" }, { capabilities });
  if (answer !== "none") {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      const schema = request.params.requestedSchema ?? {};
      check(schema.properties?.approve?.type === "boolean", "the form is not a yes/no approve", JSON.stringify(schema));
      asked.push(request.params.message);
      if (answer === "yes") return { action: "accept", content: { approve: true } };
      if (answer === "no") return { action: "accept", content: { approve: false } };
      return { action: "cancel" };
    });
  }
  const transport = new StdioClientTransport({
    command: binary,
    args: ["mcp", "--workspace", workspace],
    env: { HOME: home, MINDRUNE_BIN: binary, PATH: process.env.PATH ?? "/usr/bin:/bin" },
    cwd: home,
    stderr: openSync(join(home, `mcp-stderr-${answer}.log`), "w"),
  });
  await client.connect(transport);
  return client;
}

async function callOk(client, tool, args) {
  const result = await client.callTool({ name: tool, arguments: args });
  const text = textOf(result);
  check(!result.isError, `${tool} returned an error`, text);
  return text;
}

async function flow() {
  const init = mindrune("playbook", "init");
  check(init.includes("mindrune mcp --workspace"), "playbook init did not say how to start the server", init);
  const fixer = resolve(repo, "examples", "fixer.sh");
  check(existsSync(fixer), `no fixer at ${fixer}`);
  writeFileSync(
    join(workspace, "playbooks.toml"),
    `tools = []\nhome = ${JSON.stringify(home)}\nfixer = ${JSON.stringify(`'${fixer.replaceAll("'", "'\\''")}'`)}\n`,
  );

  const asked = [];
  const client = await connect("yes", asked);
  // The SDK keeps the negotiated version private; it offers its LATEST_PROTOCOL_VERSION.
  const protocol = LATEST_PROTOCOL_VERSION;
  const server = client.getServerVersion();
  check(server?.name === "mindrune", "the server is not mindrune", JSON.stringify(server));
  step(`connected to ${server.name} ${server.version} (the SDK offers protocol ${protocol})`);
  const tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
  check(tools.length === 8 && tools.includes("skill_create"), "tools/list is not the eight tools", tools.join(", "));

  const created = await callOk(client, "skill_create", WEEKLY);
  check(asked.length === 1 && asked[0].includes(SKILL), "skill_create did not ask the human once", asked.join("\n"));
  check(created.includes(`Drafted ${SKILL} and filed card #1`), "skill_create did not file card #1", created);
  step(`skill_create: asked the human by elicitation, drafted, card #1 filed`);
  check(mindrune("card", "approve", "1").includes("card #1 approved"), "card #1 was not approved");
  const turn = join(home, "turns", "1.txt");
  mkdirSync(join(home, "turns"), { recursive: true });
  writeFileSync(turn, "followed: 1 2\ncorrect step 2: Write the report to reports/weekly.md, newest week first\n");
  const read = await callOk(client, "workspace_read", { path: `skills/${SKILL}/SKILL.md`, turn });
  check(read.includes(`name: ${SKILL}`), "workspace_read did not return the skill", read);
  const reported = await callOk(client, "skill_refine", { action: "report", skill: SKILL, revision: 1, step: 2, turn });
  check(asked.length === 2 && asked[1].includes("step 2"), "the report did not ask the human", asked.join("\n"));
  const report = Number(/\(report #(\d+)\)/.exec(reported)?.[1]);
  check(Number.isInteger(report), "the answer names no report number", reported);
  step(`skill_refine report: asked the human, report #${report}, the fixer started`);

  const deadline = Date.now() + FIXER_TIMEOUT_MS;
  let card;
  while (!card) {
    card = JSON.parse(mindrune("inbox", "--json")).find((c) => c.kind === "revise" && c.report === report);
    if (!card) {
      check(Date.now() < deadline, `the fixer filed no revision within ${FIXER_TIMEOUT_MS} ms`);
      await new Promise((done) => setTimeout(done, 100));
    }
  }
  const shown = mindrune("card", "show", String(card.id));
  check(shown.includes("which asks nobody before filing"), "the fixer's card does not say nobody was asked", shown);
  step(`the fixer filed card #${card.id}; it waits, and says nobody was asked before filing`);
  await client.close();

  const expected = {
    no: "your human said no; nothing was drafted",
    cancel: "Nobody answered: the client cancelled the question",
    none: "This client declared no way to ask your human (no elicitation)",
  };
  for (const [answer, sentence] of Object.entries(expected)) {
    const asked = [];
    const client = await connect(answer, asked);
    const result = await client.callTool({
      name: "skill_create",
      arguments: { ...WEEKLY, name: `answer-${answer}`, steps: [{ do: "Send the report", tool: "file_copy" }] },
    });
    const text = textOf(result);
    check(result.isError === true, `${answer}: skill_create went through`, text);
    check(text.startsWith(sentence), `${answer}: not the expected answer`, text);
    check(asked.length === (answer === "none" ? 0 : 1), `${answer}: asked ${asked.length} times`);
    check(!existsSync(join(workspace, "skills", "pending", `answer-${answer}`)), `${answer}: a draft was left`);
    console.log(`seen: [typescript] ${answer}: ${text.split(". ")[0]}`);
    await client.close();
  }
  step("no, cancel and no elicitation: nothing drafted, each said apart");
}

const started = Date.now();
try {
  await flow();
  rmSync(home, { recursive: true, force: true });
  console.log(`mcp_e2e (typescript): passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} catch (err) {
  console.error(`FAIL: ${err.message}${err.cause ? `\n${err.cause.stderr ?? err.cause}` : ""}`);
  console.error(`(the workspace is kept at ${home})`);
  process.exit(1);
}
