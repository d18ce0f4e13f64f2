// The hello-world cli-tool: print the supplied message as the JSON claim Runx reads from
// stdout, so the runner's `named_emits.message` can expose it as a packet.
// Runx delivers inputs through RUNX_INPUTS_JSON (or RUNX_INPUTS_PATH when large) and a
// RUNX_INPUT_<NAME> variable per small input; the whole object is read first because it keeps
// the value's JSON type.
import { readFileSync } from "node:fs";

function readInputs() {
  if (process.env.RUNX_INPUTS_PATH) {
    return JSON.parse(readFileSync(process.env.RUNX_INPUTS_PATH, "utf8"));
  }
  if (process.env.RUNX_INPUTS_JSON) {
    return JSON.parse(process.env.RUNX_INPUTS_JSON);
  }
  return { message: process.env.RUNX_INPUT_MESSAGE };
}

const { message } = readInputs();
if (typeof message !== "string" || message.length === 0) {
  process.stderr.write("message is required\n");
  process.exit(1);
}
process.stdout.write(`${JSON.stringify({ message })}\n`);
