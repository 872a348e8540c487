/**
 * The bridge to the binary (`dispatch.ts`, `process.ts`, `captured.ts`, `discovery.ts`,
 * `coalesce.ts`) against the real `agent-dispatch` binary and the fake agent CLI: spawning,
 * protocol parsing, coalesced progress, abort, lifeline, shutdown, and failures the binary cannot
 * report.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test, type TestContext } from "node:test";

import { Coalescer } from "../coalesce.ts";
import { runCaptured } from "../captured.ts";
import { listAgents, listModels } from "../discovery.ts";
import { type Outcome, type Progress, type RunningDispatch, startDispatch } from "../dispatch.ts";
import { ProcessRegistry } from "../process.ts";
import { finalDetails, modelText } from "../details.ts";
import { toPiUsage } from "../protocol.ts";
import {
	alive,
	BIN,
	dispatchEnv,
	FAKE_AGENT,
	groupMembers,
	NODE,
	pollUntil,
	readFakeLog,
	REPO,
	scratch,
} from "./support/env.ts";

/** A scratch dir, a fake-CLI log, an environment, and a registry cleaned up after the test. */
function setup(t: TestContext, name: string) {
	const dir = scratch(name);
	const log = join(dir, "fake-cli.jsonl");
	const reg = new ProcessRegistry();
	t.after(() => reg.shutdown());
	return { dir, log, reg, env: dispatchEnv({}, log) };
}

/** Every process the dispatch started is gone: the fake CLI, its group (the grandchild), the binary. */
async function assertAllGone(log: string, dispatcherPid: number | null): Promise<void> {
	const runs = readFakeLog(log).filter((r) => !r.argv.includes("--version") && r.argv[0] !== "debug");
	assert.ok(runs.length > 0, "the fake CLI ran");
	await pollUntil(
		() =>
			runs.every((r) => !alive(r.pid) && groupMembers(r.pgid).length === 0) &&
			(dispatcherPid === null || !alive(dispatcherPid)),
		5000,
		"every dispatch process to be gone",
	);
}

describe("bridge against the real binary", { concurrency: true }, () => {
	test("success: answer, usage, identity, command activity updated in place", async (t) => {
		const { dir, env, reg } = setup(t, "ok");
		const progress: Progress[] = [];
		const run = startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:ok review", cwd: dir }, {
			env,
			registry: reg,
			onProgress: (p) => progress.push(p),
		});
		const o = await run.done;
		assert.equal(o.result.ok, true, JSON.stringify(o.result));
		assert.equal(o.result.failure, null);
		assert.match(o.result.text, /FAKE_ANSWER: looks fine\./);
		assert.equal(o.synthesized, false);
		assert.ok(o.result.sessionId?.startsWith("fake-thread-"));
		assert.equal(o.result.identity.agent, FAKE_AGENT);
		assert.deepEqual(o.result.identity.requested, { model: null, effort: null });
		const usage = toPiUsage(o.result.usage)!;
		assert.ok(usage.input > 0 && usage.output === 40 && usage.cacheRead === 20 && usage.cacheWrite === 5);
		assert.equal(usage.totalTokens, usage.input + usage.output + usage.cacheRead + usage.cacheWrite);
		assert.equal(usage.cost.total, 0, "no cost reported → 0, never estimated");
		const commands = o.activity.filter((a) => a.kind === "command");
		assert.equal(commands.length, 1, "started+completed of one command is one item");
		assert.equal(commands[0]!.status, "completed");
		assert.ok(o.activity.some((a) => a.kind === "text" && a.text.includes("FAKE_ANSWER")));
		assert.ok(progress.length >= 1, "progress was reported");
		assert.ok(o.program?.endsWith("/codex"));
	});

	test("the task arrives unchanged: quotes, newlines, unicode, a leading dash", async (t) => {
		const { dir, env, reg } = setup(t, "echo");
		const task = `-n "quoted" 'single' $HOME \`tick\`\nline two ✓ 日本語 🎉 SCENARIO:echo-prompt`;
		const o = await startDispatch(BIN, { agent: FAKE_AGENT, task, cwd: dir }, { env, registry: reg }).done;
		assert.equal(o.result.ok, true, JSON.stringify(o.result.failure));
		assert.ok(o.result.text.includes(task), o.result.text);
	});

	test("a task too long for argv goes through --task-file and arrives whole", async (t) => {
		const { dir, env, log, reg } = setup(t, "long-task");
		const task = `SCENARIO:echo-prompt ${"x".repeat(200 * 1024)} END-OF-TASK`;
		const o = await startDispatch(BIN, { agent: FAKE_AGENT, task, scope: "src/", cwd: dir }, { env, registry: reg }).done;
		assert.equal(o.result.ok, true, JSON.stringify(o.result.failure));
		assert.ok(o.result.text.includes(task), "whole task echoed");
		assert.ok(o.result.text.includes("src/"), "scope hint passed");
		assert.ok(readFakeLog(log).length > 0);
	});

	test("error envelope: a returned failure with its kind, the CLI's message, no invented usage", async (t) => {
		const { dir, env, reg } = setup(t, "err");
		const o = await startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:error-envelope", cwd: dir }, { env, registry: reg }).done;
		assert.equal(o.result.ok, false);
		assert.equal(o.result.failure?.kind, "error-envelope");
		assert.match(o.result.failure!.message, /FAKE_FAILURE/);
		assert.equal(o.synthesized, false);
		assert.ok(o.activity.some((a) => a.kind === "error"));
		assert.ok(o.activity.some((a) => a.kind === "notice" && a.label === "warning"));
		assert.equal(toPiUsage(o.result.usage), undefined, "the fake reports no usage before turn.failed");
	});

	test("non-zero exit: failure keeps the usage reported so far and the stderr tail", async (t) => {
		const { dir, env, reg } = setup(t, "nonzero");
		const o = await startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:nonzero-exit", cwd: dir }, { env, registry: reg }).done;
		assert.equal(o.result.ok, false);
		assert.equal(o.result.failure?.kind, "nonzero-exit");
		assert.ok(o.result.usage && o.result.usage.output === 40, JSON.stringify(o.result.usage));
		assert.match(o.result.stderrTail, /fatal: boom/);
	});

	test("pending at the end means not reported (never a guessed value), also for a refusal before start", async (t) => {
		const { dir, env, reg } = setup(t, "settled");
		const params = { agent: "no-such-agent", task: "t", model: "m", cwd: dir };
		const o = await startDispatch(BIN, params, { env, registry: reg }).done;
		assert.equal(o.synthesized, false, "the binary's own result line");
		assert.equal(o.result.failure?.kind, "unsupported-agent");
		const notReported = { model: { state: "not-reported" }, effort: { state: "not-reported" } };
		assert.deepEqual(o.result.identity.confirmed, notReported);
		assert.equal(o.result.identity.requested.model, "m");
		const d = finalDetails(params, o);
		assert.deepEqual(d.identity.confirmed, notReported);
		assert.equal(d.identity.requested.model, "m");
	});

	test("abort mid-run: SIGTERM to the binary, its own cancelled result line, nothing survives", async (t) => {
		const { dir, env, log, reg } = setup(t, "abort");
		const ac = new AbortController();
		let t0 = 0;
		const run = startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:sleep", cwd: dir }, {
			env,
			signal: ac.signal,
			registry: reg,
			onProgress: (p) => {
				// Abort once the agent is visibly working (its command started).
				if (!t0 && p.activity.some((a) => a.kind === "command")) {
					t0 = Date.now();
					ac.abort();
				}
			},
		});
		const o = await run.done;
		const cancelMs = Date.now() - t0;
		assert.ok(t0 > 0, "saw the running command before aborting");
		assert.equal(o.result.failure?.kind, "cancelled", JSON.stringify(o.result));
		assert.equal(o.synthesized, false, "the binary wrote its own result line");
		assert.equal(o.cancelRequested, true);
		await assertAllGone(log, o.pid);
		assert.ok(cancelMs < 4000, `cancel took ${cancelMs}ms`);
		console.log(`# abort → result in ${cancelMs}ms`);
	});

	test("limits from the call: a time limit and a token budget end the run with their kind, usage kept, nothing left", async (t) => {
		const { dir, env, log, reg } = setup(t, "limits");
		const [timedOut, overBudget] = await Promise.all([
			startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:sleep limited", cwd: dir, timeout: "1s" }, { env, registry: reg }).done,
			// This agent reports usage once, with its answer: the budget is enforced on that report.
			startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:ok budget", cwd: dir, maxTokens: 100 }, { env, registry: reg }).done,
		]);
		assert.equal(timedOut.result.failure?.kind, "timeout", JSON.stringify(timedOut.result.failure));
		assert.equal(timedOut.synthesized, false, "the binary's own result");
		assert.equal(overBudget.result.failure?.kind, "budget-exceeded", JSON.stringify(overBudget.result.failure));
		const u = overBudget.result.usage!;
		assert.ok(u.input + u.cacheRead + u.cacheWrite + u.output > 100, "the usage that tripped the budget is kept");
		assert.match(modelText(finalDetails({ agent: FAKE_AGENT, task: "x", cwd: dir }, overBudget), overBudget), /failed \(budget-exceeded\)/);
		await assertAllGone(log, null);
		const bad = await startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:ok", cwd: dir, timeout: "soon" }, { env, registry: reg }).done;
		assert.equal(bad.result.failure?.kind, "invalid-request", "a bad limit starts nothing");
	});

	test("abort before start: nothing is spawned", async (t) => {
		const { dir, env, log, reg } = setup(t, "pre-abort");
		const ac = new AbortController();
		ac.abort();
		const o = await startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:ok", cwd: dir }, { env, signal: ac.signal, registry: reg }).done;
		assert.equal(o.pid, null);
		assert.equal(o.result.failure?.kind, "cancelled");
		assert.equal(existsSync(log), false, "the fake CLI never ran");
	});

	test("cancel during startup (right after spawn, and at the started line) leaves nothing behind", async (t) => {
		const { dir, env, log, reg } = setup(t, "startup-cancel");
		const outcomes: Outcome[] = [];
		for (let i = 0; i < 4; i++) {
			// Immediately: the binary may not have its signal handlers yet.
			const early = startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:sleep", cwd: dir }, { env, registry: reg });
			outcomes.push(await early.cancel());
			// At the started line: validation done, the CLI about to be spawned.
			let run: RunningDispatch | undefined = undefined;
			run = startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:sleep", cwd: dir }, {
				env,
				registry: reg,
				onProgress: (p) => {
					if (p.started) void run?.cancel();
				},
			});
			outcomes.push(await run.done);
		}
		for (const o of outcomes) {
			assert.equal(o.result.ok, false);
			assert.equal(o.result.failure?.kind, "cancelled", JSON.stringify(o.result));
		}
		const runs = readFakeLog(log).filter((r) => r.argv.includes("--"));
		await pollUntil(
			() =>
				runs.every((r) => !alive(r.pid) && groupMembers(r.pgid).length === 0) &&
				outcomes.every((o) => o.pid === null || !alive(o.pid)),
			5000,
			"every process of the cancelled dispatches to be gone",
		);
		assert.equal(reg.size, 0);
		console.log(`# startup cancel: ${outcomes.length} dispatches, ${runs.length} reached the CLI, ${outcomes.filter((o) => o.synthesized).length} without a result line`);
	});

	test("a CLI that ignores SIGTERM is still cleaned up (the binary escalates)", async (t) => {
		const { dir, env, log, reg } = setup(t, "ignore-term");
		const run = startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:ignore-term", cwd: dir }, { env, registry: reg });
		await pollUntil(() => readFakeLog(log).some((r) => r.argv.includes("--")), 10_000, "the fake CLI to start");
		const t0 = Date.now();
		const o = await run.cancel();
		const ms = Date.now() - t0;
		assert.equal(o.result.failure?.kind, "cancelled");
		await assertAllGone(log, o.pid);
		assert.equal(reg.size, 0);
		console.log(`# SIGTERM-ignoring CLI cleaned up in ${ms}ms`);
	});

	test("the process holding the dispatch is SIGKILLed: the binary notices (lifeline EOF, parent-death signal) and cleans up", async (t) => {
		const { dir, env, log } = setup(t, "lifeline");
		const holder = spawn(
			NODE,
			["--experimental-strip-types", "--no-warnings", join(REPO, "pi/test/support/lifeline-holder.ts"), BIN, FAKE_AGENT, "SCENARIO:sleep"],
			{ cwd: dir, env, stdio: ["ignore", "pipe", "inherit"] },
		);
		const pid = await new Promise<number>((resolve, reject) => {
			let buf = "";
			holder.stdout.on("data", (c: Buffer) => {
				buf += c.toString();
				const m = /"dispatcherPid":(\d+)/.exec(buf);
				if (m) resolve(Number(m[1]));
			});
			holder.on("close", () => reject(new Error(`holder exited early: ${buf}`)));
		});
		assert.ok(alive(pid));
		holder.kill("SIGKILL"); // no cleanup code runs in the holder
		await assertAllGone(log, pid);
	});

	test("shutdown cancels every live dispatch, waits, refuses new ones, and is idempotent", async (t) => {
		const { dir, env, log, reg } = setup(t, "shutdown");
		const runs = [1, 2].map(() =>
			startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:sleep", cwd: dir }, { env, registry: reg }),
		);
		await pollUntil(() => readFakeLog(log).filter((r) => r.argv.includes("--")).length === 2, 10_000, "two fake CLIs");
		assert.equal(reg.size, 2);
		await Promise.all([reg.shutdown(), reg.shutdown()]);
		assert.equal(reg.size, 0, "entries leave the registry only after cleanup");
		const outcomes = await Promise.all(runs.map((r) => r.done));
		for (const o of outcomes) assert.equal(o.result.failure?.kind, "cancelled");
		await assertAllGone(log, null);
		for (const o of outcomes) assert.equal(alive(o.pid!), false);
		const refused = await startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:ok", cwd: dir }, { env, registry: reg }).done;
		assert.equal(refused.pid, null);
		assert.equal(refused.result.failure?.kind, "cancelled");
		await reg.shutdown(); // again, with nothing live
		reg.reopen();
		const again = await startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:ok", cwd: dir }, { env, registry: reg }).done;
		assert.equal(again.result.ok, true);
	});

	test("two dispatches at once keep separate identity, usage and cleanup", async (t) => {
		const { dir, env, reg } = setup(t, "parallel");
		const [a, b] = await Promise.all([
			startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:ok", model: "gpt-fake-1", cwd: dir }, { env, registry: reg }).done,
			startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:nonzero-exit", model: "gpt-fake-2", effort: "low", cwd: dir }, { env, registry: reg }).done,
		]);
		assert.equal(a.result.ok, true);
		assert.equal(b.result.failure?.kind, "nonzero-exit");
		assert.equal(a.result.identity.requested.model, "gpt-fake-1");
		assert.equal(b.result.identity.requested.model, "gpt-fake-2");
		assert.equal(b.result.identity.requested.effort, "low");
		assert.notEqual(a.result.sessionId, b.result.sessionId);
		assert.notEqual(a.pid, b.pid);
		assert.equal(reg.size, 0);
	});

	test("an event flood is coalesced to at most ~10 progress callbacks per second", async (t) => {
		const { dir, env, reg } = setup(t, "flood");
		const stamps: number[] = [];
		let lastCount = 0;
		const t0 = Date.now();
		const o: Outcome = await startDispatch(BIN, { agent: FAKE_AGENT, task: "SCENARIO:stream-mb-24", cwd: dir }, {
			env,
			registry: reg,
			onProgress: (p) => {
				stamps.push(Date.now());
				lastCount = p.eventCount;
			},
		}).done;
		const elapsed = Date.now() - t0;
		assert.equal(o.result.ok, true, JSON.stringify(o.result.failure));
		assert.ok(o.eventCount > 10_000, `flood of ${o.eventCount} events`);
		const gaps = stamps.slice(1).map((t, i) => t - stamps[i]!);
		const minGap = Math.min(...gaps);
		// The bound is on the rate. Single gaps can look shorter than 100ms when building one
		// snapshot was delayed (GC under the flood) and the next was not.
		assert.ok(stamps.length <= Math.ceil(elapsed / 100) + 1, `${stamps.length} updates in ${elapsed}ms`);
		assert.ok(minGap >= 50, `updates ${minGap}ms apart at the closest`);
		assert.ok(lastCount > 0);
		console.log(`# flood: ${o.eventCount} events in ${elapsed}ms → ${stamps.length} progress updates (closest gap ${minGap}ms)`);
	});
});

describe("failures only the bridge can report", () => {
	const STARTED = JSON.stringify({
		type: "started",
		protocol: 1,
		identity: { agent: "x", requested: { model: null, effort: null }, confirmed: { model: { state: "pending" }, effort: { state: "pending" } } },
		program: "/x",
		cwd: "/",
	});
	function fakeBinary(name: string, script: string): string {
		const p = join(scratch(name), "agent-dispatch");
		writeFileSync(p, `#!/bin/sh\n${script}\n`);
		chmodSync(p, 0o755);
		return p;
	}

	test("a binary that does not exist", async (t) => {
		const o = await startDispatch("/nonexistent/agent-dispatch", { agent: "x", task: "t", cwd: "/" }, { registry: new ProcessRegistry() }).done;
		assert.equal(o.synthesized, true);
		assert.equal(o.result.failure?.kind, "dispatcher-failed");
		assert.match(o.result.failure!.message, /ENOENT/);
	});

	test("lines split at every byte (multi-byte UTF-8 too) and a last line without a newline still parse", async () => {
		const text = "héllo ✓ 日本語 🎉";
		const result = {
			type: "result",
			protocol: 1,
			ok: true,
			text,
			usage: null,
			identity: JSON.parse(STARTED).identity,
			sessionId: null,
			failure: null,
			exit: { code: 0 },
			stderrTail: "",
			durationMs: 1,
			checkBypassed: false,
		};
		const payload = `${STARTED}\n${JSON.stringify({ type: "event", protocol: 1, event: { type: "text", text } })}\n${JSON.stringify(result)}`;
		const dir = scratch("byte-split");
		writeFileSync(join(dir, "payload"), payload);
		const bin = fakeBinary(
			"byte-split",
			`exec python3 -c 'import sys,time\nfor b in open(sys.argv[1],"rb").read():\n  sys.stdout.buffer.write(bytes([b])); sys.stdout.buffer.flush()' ${join(dir, "payload")}`,
		);
		const o = await startDispatch(bin, { agent: "x", task: "t", cwd: "/" }, { registry: new ProcessRegistry() }).done;
		assert.deepEqual(o.protocolErrors, []);
		assert.equal(o.synthesized, false);
		assert.equal(o.result.text, text);
		assert.equal(o.activity[0]?.text, text);
	});

	test("a binary that dies without a result line", async (t) => {
		const bin = fakeBinary(
			"crash",
			`echo '${STARTED}'\necho 'panicked at src/x.rs' >&2\nexit 101`,
		);
		const o = await startDispatch(bin, { agent: "x", task: "t", cwd: "/" }, { registry: new ProcessRegistry() }).done;
		assert.equal(o.synthesized, true);
		assert.equal(o.result.failure?.kind, "dispatcher-failed");
		assert.match(o.result.failure!.message, /exited with code 101 without writing a result line/);
		assert.match(o.dispatcherStderr, /panicked/);
		assert.equal(o.result.identity.confirmed.model.state, "not-reported");
	});

	test("a binary speaking another protocol version is refused", async (t) => {
		const bin = fakeBinary("proto", `echo '{"type":"started","protocol":2}'\nexec sleep 30`);
		const o = await startDispatch(bin, { agent: "x", task: "t", cwd: "/" }, { registry: new ProcessRegistry(), killGraceMs: 500 }).done;
		assert.equal(o.result.ok, false);
		assert.match(o.result.failure!.message + o.protocolErrors.join(" "), /protocol 2/);
	});

	test("a binary that ignores SIGTERM is killed after the grace period", async (t) => {
		const bin = fakeBinary("stubborn", `trap '' TERM\necho '${STARTED}'\nwhile :; do sleep 1; done`);
		let ready!: () => void;
		const trapped = new Promise<void>((r) => (ready = r));
		const run = startDispatch(bin, { agent: "x", task: "t", cwd: "/" }, {
			registry: new ProcessRegistry(),
			killGraceMs: 300,
			onProgress: (p) => p.started && ready(),
		});
		await trapped; // the trap is set
		const t0 = Date.now();
		const o = await run.cancel();
		assert.ok(Date.now() - t0 >= 290, "SIGTERM alone did not end it");
		assert.equal(o.result.failure?.kind, "cancelled");
		assert.equal(o.synthesized, true);
		await pollUntil(() => !alive(o.pid!) && groupMembers(o.pid!).length === 0, 5000, "the stub and its group to die");
	});
});

describe("discovery", () => {
	test("agents --json lists the fake agent as installed", async (t) => {
		const agents = await listAgents(BIN, { env: dispatchEnv() });
		const a = agents.find((x) => x.id === FAKE_AGENT);
		assert.ok(a, JSON.stringify(agents));
		assert.equal(a.installed, true);
	});

	test("models AGENT --json lists the catalogue; an agent without one gives the binary's message", async (t) => {
		const cat = await listModels(BIN, FAKE_AGENT, { env: dispatchEnv() });
		assert.ok(cat.models.some((m) => m.slug === "gpt-fake-1"));
		await assert.rejects(listModels(BIN, "no-such-agent", { env: dispatchEnv() }), /unknown agent/);
	});
});

describe("captured runs", () => {
	test("shutdown stops a captured run with SIGINT (what `check` cancels on) and waits for it", async () => {
		const dir = scratch("captured-stop");
		const ready = join(dir, "ready");
		const bin = join(dir, "agent-dispatch");
		writeFileSync(bin, `#!/bin/sh\ntrap 'echo stopped-by-int; exit 130' INT\ntouch '${ready}'\nwhile :; do sleep 0.1; done\n`);
		chmodSync(bin, 0o755);
		const reg = new ProcessRegistry();
		const run = runCaptured(bin, ["check", "--json"], { registry: reg });
		await pollUntil(() => existsSync(ready), 5000, "the stand-in to set its trap");
		assert.equal(reg.size, 1);
		await reg.shutdown();
		assert.equal(reg.size, 0, "shutdown waited for it");
		const r = await run;
		assert.equal(r.code, 130);
		assert.match(r.stdout, /stopped-by-int/);
		await assert.rejects(runCaptured(bin, ["agents"], { registry: reg }), /shutting down/);
	});
});

describe("Coalescer", () => {
	test("10 000 pokes in ~1s give at most ~11 emits, the last one after the final poke", async (t) => {
		let emits = 0;
		let lastEmitAt = 0;
		const c = new Coalescer(() => {
			emits++;
			lastEmitAt = Date.now();
		}, 100);
		const t0 = Date.now();
		let lastPokeAt = 0;
		for (let i = 0; i < 10_000; i++) {
			c.poke();
			lastPokeAt = Date.now();
			if (i % 100 === 0) await new Promise((r) => setTimeout(r, 10));
		}
		await new Promise((r) => setTimeout(r, 150));
		c.stop();
		const elapsed = lastPokeAt - t0;
		assert.ok(emits <= Math.ceil(elapsed / 100) + 2, `${emits} emits in ${elapsed}ms`);
		assert.ok(lastEmitAt >= lastPokeAt, "a trailing emit carried the last state");
	});

	test("stop cancels a pending trailing emit", async (t) => {
		let emits = 0;
		const c = new Coalescer(() => emits++, 50);
		c.poke();
		c.poke();
		c.stop();
		await new Promise((r) => setTimeout(r, 80));
		assert.equal(emits, 1);
	});
});
