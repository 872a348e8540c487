/**
 * The terminal UI as a person sees it: interactive Pi under tmux (its own server socket), the
 * screen read with `tmux capture-pane -p` while a dispatch runs, after it ends, and after the
 * expand key; then the `/dispatch` command with its live widget, and Esc cancelling it.
 * Every wait is a bounded poll on screen content.
 */

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { type FakeOpenAI, startFakeOpenAI } from "./support/fake-openai.ts";
import {
	alive,
	FAKE_AGENT,
	groupMembers,
	jobStateDir,
	makePiHome,
	NODE,
	PI_CLI,
	piEnv,
	pollUntil,
	readFakeLog,
	REPO,
	scratch,
} from "./support/env.ts";

const hasTmux = spawnSync("tmux", ["-V"]).status === 0;
const SOCKET = `pi-dispatch-test-${process.pid}`;
const tmux = (...args: string[]) => execFileSync("tmux", ["-L", SOCKET, ...args], { encoding: "utf8" });
const screen = (target = "pi") => tmux("capture-pane", "-p", "-J", "-t", target, "-S", "-200");

/** With SHOW_SCREENS=1 the captured screens are printed as TAP comments. */
const dump = (s: string) => s.split("\n").map((l) => `# ${l}`).join("\n");
function shellQuote(v: string): string {
	return `'${v.replace(/'/g, `'\\''`)}'`;
}

/** Poll the screen (of tmux session `target`) until `pred` holds; returns that screen. */
async function waitScreen(pred: (s: string) => boolean, what: string, timeoutMs = 30_000, target = "pi"): Promise<string> {
	let last = "";
	try {
		return await pollUntil(
			() => {
				last = screen(target);
				return pred(last) ? last : undefined;
			},
			timeoutMs,
			what,
			100,
		);
	} catch (e) {
		throw new Error(`${(e as Error).message}\n--- screen ---\n${last}`);
	}
}

/** A script that starts interactive Pi in `cwd` with `env` and the first prompt `prompt`. */
function piScript(env: NodeJS.ProcessEnv, prompt: string): string {
	const script = join(scratch("tui"), "run-pi.sh");
	const exports = Object.entries(env)
		.filter(([k]) => /^(PATH|HOME|LANG|LC_ALL|PI_|AGENT_DISPATCH_)/.test(k))
		.map(([k, v]) => `export ${k}=${shellQuote(v ?? "")}`);
	writeFileSync(
		script,
		`#!/bin/sh\n${exports.join("\n")}\nexport TERM=xterm-256color\ncd ${shellQuote(scratch("tui-cwd"))}\nexec ${shellQuote(NODE)} ${shellQuote(PI_CLI)} -e ${shellQuote(REPO)} --model fake/fake-model ${shellQuote(prompt)}\n`,
	);
	return script;
}

describe("interactive TUI under tmux", { skip: !hasTmux && "tmux is not installed" }, () => {
	let srv: FakeOpenAI;
	let log: string;

	before(async () => {
		srv = await startFakeOpenAI([
			{ toolCalls: [{ name: "dispatch", arguments: { agent: FAKE_AGENT, task: "SCENARIO:stream-mb-40 review the diff" } }] },
			{ text: "Summary: the other agent is done." },
		]);
		log = join(scratch("tui-log"), "fake.jsonl");
		const script = piScript(piEnv(makePiHome(srv.baseUrl), {}, log), "please dispatch");
		tmux("new-session", "-d", "-s", "pi", "-x", "150", "-y", "50", `sh ${shellQuote(script)}`);
	});

	after(async () => {
		try {
			tmux("kill-server");
		} catch {
			// already gone
		}
		await srv?.close();
	});

	test("live tail while running, summary with the expand hint, then the expanded view", async () => {
		const running = await waitScreen(
			(s) => /codex running/.test(s) && /reasoning: r+/.test(s),
			"the live tail of a running dispatch",
		);
		assert.match(running, /dispatch codex {2}model CLI default · effort CLI default · confirmation pending/);
		assert.match(running, /⏳ codex running · \d+ events/);
		assert.match(running, /SCENARIO:stream-mb-40 review the diff/);

		const done = await waitScreen(
			(s) => /✓ codex answered/.test(s) && /Summary: the other agent is done\./.test(s),
			"the finished dispatch and the model's reply",
		);
		assert.match(done, /✓ codex answered [\d.]+s · ↑95 ↓40 R20 W5/);
		assert.match(done, /done \(ctrl\+o to expand\)/, "summary ends with the configured expand key");
		assert.match(done, /model CLI default \(not reported\) · effort CLI default \(not reported\)/, "row shows what the CLI confirmed");
		assert.doesNotMatch(done, /── identity/, "collapsed by default");

		tmux("send-keys", "-t", "pi", "C-o");
		const expanded = await waitScreen((s) => /── identity/.test(s) && /── usage/.test(s), "the expanded view");
		assert.match(expanded, /model {3}requested CLI default · confirmed not reported/);
		assert.match(expanded, /input 95 · cache read 20 · cache write 5 · output 40 \(reasoning 8\) · total 160/);
		assert.match(expanded, /cost cost not reported/);
		assert.match(expanded, /session fake-thread-\d+/);
	});

	test("/dispatch shows a live widget, lands as a message, and Esc cancels a running one", async () => {
		tmux("send-keys", "-t", "pi", "-l", `/dispatch ${FAKE_AGENT} --effort high SCENARIO:stream-mb-40 second opinion`);
		tmux("send-keys", "-t", "pi", "Enter");
		const live = await waitScreen((s) => /Esc cancels/.test(s) && /codex running/.test(s), "the /dispatch widget");
		assert.match(live, /\/dispatch codex {2}model CLI default · effort high · confirmation pending/);
		const landed = await waitScreen(
			(s) => /\/dispatch codex {2}model CLI default \(not reported\) · effort high \(not reported\)/.test(s) && !/Esc cancels/.test(s),
			"the /dispatch result message",
		);
		assert.match(landed, /effort {2}requested high · confirmed not reported/, "tools are expanded, so is the message");

		const before = readFakeLog(log).filter((r) => r.argv.includes("--")).length;
		tmux("send-keys", "-t", "pi", "-l", `/dispatch ${FAKE_AGENT} SCENARIO:sleep wait for me`);
		tmux("send-keys", "-t", "pi", "Enter");
		await waitScreen((s) => /Esc cancels/.test(s) && /sleep 300/.test(s), "the sleeping dispatch's command in the widget");
		const fake = readFakeLog(log).filter((r) => r.argv.includes("--"))[before]!;
		assert.ok(fake && alive(fake.pid));
		tmux("send-keys", "-t", "pi", "Escape");
		const cancelled = await waitScreen((s) => /✗ codex failed: cancelled/.test(s), "the cancelled /dispatch message");
		if (process.env.SHOW_SCREENS) console.log(dump(cancelled));
		assert.doesNotMatch(cancelled, /Esc cancels/, "the widget is gone");
		await pollUntil(() => !alive(fake.pid) && groupMembers(fake.pgid).length === 0, 5000, "the cancelled CLI and its group to be gone");
	});
});

describe("a background dispatch in the TUI", { skip: !hasTmux && "tmux is not installed" }, () => {
	let srv: FakeOpenAI;
	const target = "pi-bg";

	before(async () => {
		srv = await startFakeOpenAI([
			{ toolCalls: [{ name: "dispatch", arguments: { agent: FAKE_AGENT, background: true, task: "SCENARIO:ok review in the background" } }] },
			{ text: "Started it; carrying on." },
			{ text: "The background review is back and it looks fine." },
		]);
		const env = piEnv(makePiHome(srv.baseUrl), { AGENT_DISPATCH_STATE_DIR: jobStateDir("tui-bg") });
		tmux("new-session", "-d", "-s", target, "-x", "150", "-y", "50", `sh ${shellQuote(piScript(env, "review in the background"))}`);
	});

	after(async () => {
		try {
			tmux("kill-session", "-t", target);
		} catch {
			// already gone
		}
		await srv?.close();
	});

	test("the tool row names the job; its result lands as a job message and the model answers it", async () => {
		const done = await waitScreen(
			(s) => /The background review is back/.test(s),
			"the job's result and the model's turn on it",
			60_000,
			target,
		);
		if (process.env.SHOW_SCREENS) console.log(dump(done));
		const id = /⏵ codex running in the background · job ([0-9a-f]{32})/.exec(done)?.[1];
		assert.ok(id, "the tool row names the job");
		assert.match(done, /its result is posted here when it ends · cancelled if this session ends first/);
		assert.match(done, /Started it; carrying on\./);
		assert.match(done, new RegExp(`job ${id} codex {2}model CLI default \\(not reported\\)`), "the job message's row");
		assert.match(done, /✓ codex answered/);
		assert.match(done, /FAKE_ANSWER: looks fine\./);
	});
});
