// Runs a peer's turn reducer over Stockade's benchmark inputs and prints the timings as JSON.
//
// usage: node driver.mjs ENTRY INPUTS.json ROUNDS
//   ENTRY exports reduceTurn, createIdleTurnState and createAiToolRegistry (and optionally
//   DEFAULT_TURN_LIMITS) from the peer's own source, loaded at run time (see ../peer.py).
//   INPUTS.json is {"sequences": {name: [input, ...]}} in the peer's input vocabulary;
//   inputs of type "skip" are Stockade-only bookkeeping and are left out.
// Prints {name: {"inputs": n, "seconds": [per round], "phase": final phase, "outcome": ...}}.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [entry, inputsPath, roundsText] = process.argv.slice(2);
const peer = await import(pathToFileURL(entry).href);
const { sequences } = JSON.parse(readFileSync(inputsPath, "utf8"));
const rounds = Number(roundsText);

function prepared(raw) {
  const toolSet = peer.createAiToolRegistry();
  const defaults = peer.DEFAULT_TURN_LIMITS ?? {};
  return raw
    .filter((input) => input.type !== "skip")
    .map((input) =>
      input.type === "submit"
        ? { ...input, baseMessages: [], toolSet, limits: { ...defaults, ...input.limits } }
        : input,
    );
}

const out = {};
for (const [name, raw] of Object.entries(sequences)) {
  const inputs = prepared(raw);
  const seconds = [];
  let state = null;
  for (let round = 0; round <= rounds; round += 1) {
    state = peer.createIdleTurnState();
    const started = process.hrtime.bigint();
    for (const input of inputs) state = peer.reduceTurn(state, input);
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
    if (round > 0) seconds.push(elapsed); // round 0 warms the JIT up
  }
  out[name] = { inputs: inputs.length, seconds, phase: state.phase, outcome: state.outcome ?? null };
}
process.stdout.write(JSON.stringify(out) + "\n");
