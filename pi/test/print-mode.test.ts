/**
 * `/dispatch` in Pi's print mode (`pi -p "/dispatch …"`): real Pi 1.6.0 runs the command there but
 * shows none of its messages, so the command says where it works, on stderr, and runs nothing.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { PRINT_MODE_NOTE, refuseInPrintMode } from "../print-mode.ts";
import { startFakeOpenAI } from "./support/fake-openai.ts";
import { FAKE_AGENT, makePiHome, NODE, PI_CLI, piEnv, readFakeLog, REPO, scratch } from "./support/env.ts";

test("refuseInPrintMode refuses only print mode", () => {
	const said: string[] = [];
	for (const mode of ["tui", "rpc", "json", undefined]) assert.equal(refuseInPrintMode({ mode }, (t) => said.push(t)), false);
	assert.equal(refuseInPrintMode({ mode: "print" }, (t) => said.push(t)), true);
	assert.deepEqual(said, [`${PRINT_MODE_NOTE}\n`]);
});

test("pi -p \"/dispatch …\" says it needs interactive or RPC mode and dispatches nothing", async () => {
	const srv = await startFakeOpenAI([{ text: "the model was asked" }]);
	try {
		const home = makePiHome(srv.baseUrl);
		const log = join(scratch("print-mode-log"), "fake.jsonl");
		const run = spawnSync(NODE, [PI_CLI, "-e", REPO, "--no-session", "-p", `/dispatch ${FAKE_AGENT} SCENARIO:ok`], {
			cwd: scratch("print-mode-cwd"),
			env: piEnv(home, {}, log),
			encoding: "utf8",
			timeout: 60_000,
		});
		assert.match(run.stderr, /interactive mode .* or over RPC/, `${run.stdout}\n${run.stderr}`);
		assert.match(run.stderr, /agent-dispatch run --agent/);
		const runs = existsSync(log) ? readFakeLog(log).filter((r) => r.argv.includes("--")) : [];
		assert.deepEqual(runs, [], "no dispatch ran");
	} finally {
		await srv.close();
	}
});
