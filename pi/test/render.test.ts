/**
 * Presentation and result shaping, without a terminal: the call row, the live tail, the collapsed
 * summary with the configured expand key, the expanded view, and what the model receives.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import type { ActivityItem } from "../activity.ts";
import type { Outcome, Progress } from "../dispatch.ts";
import { backgroundDetails, backgroundText, finalDetails, jobEndText, modelText, runningDetails } from "../details.ts";
import { jobOutcome, type TrackedJob } from "../jobs.ts";
import { type DispatchResult, type Identity, type JobView, pendingIdentity, toPiUsage } from "../protocol.ts";
import {
	backgroundLines,
	callLines,
	expandedView,
	jobsText,
	type KeyHint,
	plainTheme,
	runningLines,
	summaryLines,
} from "../render.ts";

const params = { agent: "agent-a", task: "Review the change in src/ for races.", cwd: "/repo" };

function progress(activity: ActivityItem[], identity: Identity = pendingIdentity("agent-a")): Progress {
	return { identity, activity, eventCount: activity.length, sessionId: null, program: "/bin/a", started: true, elapsedMs: 2500 };
}

function outcome(r: Partial<DispatchResult>, activity: ActivityItem[] = []): Outcome {
	const result: DispatchResult = {
		ok: true,
		text: "ANSWER-LINE-1\n\nThe full answer has **markdown** and a second paragraph.",
		usage: { input: 1200, cacheRead: 300, cacheWrite: 40, output: 250, reasoning: 90 },
		identity: {
			agent: "agent-a",
			requested: { model: null, effort: "high" },
			confirmed: { model: { state: "confirmed", value: "model-x-2" }, effort: { state: "not-reported" } },
		},
		sessionId: "sess-1",
		failure: null,
		exit: { code: 0 },
		stderrTail: "",
		durationMs: 4200,
		checkBypassed: false,
		...r,
	};
	return {
		result,
		activity,
		eventCount: activity.length,
		program: "/bin/a",
		synthesized: false,
		cancelRequested: false,
		pid: 42,
		dispatcherStderr: "",
		protocolErrors: [],
	};
}

const hintCalls: string[] = [];
const keyHint: KeyHint = (id, desc) => {
	hintCalls.push(id);
	return `ctrl+o ${desc}`;
};

describe("call row", () => {
	test("nothing requested: CLI default for both, confirmation pending", () => {
		const [head, task] = callLines({ agent: "agent-a", task: params.task }, undefined, plainTheme);
		assert.equal(head, "dispatch agent-a  model CLI default · effort CLI default · confirmation pending");
		assert.equal(task, params.task);
	});

	test("requested values shown as requested until the CLI confirms them", () => {
		const [head] = callLines({ agent: "agent-a", model: "m-1", effort: "low" }, undefined, plainTheme);
		assert.match(head!, /model m-1 · effort low · confirmation pending/);
	});

	test("identity updates as the CLI confirms it; a differing confirmation keeps the request visible", () => {
		const id: Identity = {
			agent: "agent-a",
			requested: { model: "alias", effort: null },
			confirmed: { model: { state: "confirmed", value: "model-x-2" }, effort: { state: "pending" } },
		};
		const [head] = callLines({ agent: "agent-a", model: "alias" }, id, plainTheme);
		assert.match(head!, /model model-x-2 \(requested alias\) · effort CLI default · confirmation pending/);
		id.confirmed.effort = { state: "not-reported" };
		const [done] = callLines({ agent: "agent-a", model: "alias" }, id, plainTheme);
		assert.match(done!, /effort CLI default \(not reported\)$/);
		assert.doesNotMatch(done!, /pending/);
	});
});

describe("running", () => {
	test("the live tail shows the last few activity items, commands with their state", () => {
		const acts: ActivityItem[] = [
			{ kind: "text", text: "old text that scrolled away" },
			{ kind: "command", text: "git log", status: "completed", exitCode: 0 },
			{ kind: "activity", label: "reasoning", text: "thinking about locks" },
			{ kind: "command", text: "rg Mutex src", status: "completed", exitCode: 1 },
			{ kind: "notice", label: "warning", text: "Reconnecting 1/5" },
			{ kind: "text", text: "Looking at the\nscheduler" },
			{ kind: "command", text: "cargo test", status: "started" },
		];
		const lines = runningLines(runningDetails(params, progress(acts)), plainTheme);
		assert.match(lines[0]!, /agent-a running · 7 events · 2\.5s/);
		assert.equal(lines.length, 6, "status + 5 tail lines");
		assert.ok(!lines.join("\n").includes("old text"), "older items scroll away");
		assert.ok(lines.some((l) => l.includes("$ rg Mutex src ✓ exit 1")));
		assert.ok(lines.some((l) => l.includes("· reasoning: thinking about locks")));
		assert.ok(lines.some((l) => l.includes("! Reconnecting 1/5")));
		assert.ok(lines.some((l) => l.includes("› Looking at the scheduler")), "text flattened to one line");
		assert.match(lines.at(-1)!, /\$ cargo test …$/);
	});

	test("the read-only check a first dispatch runs shows as progress in the row", () => {
		const acts: ActivityItem[] = [
			{ kind: "notice", label: "info", text: "First dispatch to Agent A at /bin/a with this configuration: running the offline read-only check…" },
		];
		const lines = runningLines(runningDetails(params, progress(acts)), plainTheme);
		assert.ok(lines.some((l) => l.includes("running the offline read-only check")), lines.join("\n"));
	});

	test("before any event: a waiting line", () => {
		const lines = runningLines(runningDetails(params, progress([])), plainTheme);
		assert.match(lines[1]!, /waiting for the agent/);
	});
});

describe("done", () => {
	test("collapsed success: two lines, stats and the configured expand hint", () => {
		hintCalls.length = 0;
		const o = outcome({});
		const d = finalDetails(params, o);
		const lines = summaryLines(d, modelText(d, o), plainTheme, keyHint);
		assert.equal(lines.length, 2);
		assert.match(lines[0]!, /✓ agent-a answered 4\.2s · ↑1\.2k ↓250 R300 W40$/);
		assert.match(lines[1]!, /ANSWER-LINE-1 The full answer/);
		assert.match(lines[1]!, /\(ctrl\+o to expand\)$/);
		assert.deepEqual(hintCalls, ["app.tools.expand"], "the hint comes from the render context's keyHint");
	});

	test("expanded success: full answer, confirmed vs requested identity, usage, cost not reported", () => {
		const o = outcome({});
		const d = finalDetails(params, o);
		const v = expandedView(d, modelText(d, o), plainTheme);
		assert.equal(v.answer, o.result.text, "the full answer, unabridged");
		const tail = v.tail.join("\n");
		assert.match(tail, /model {3}requested CLI default · confirmed model-x-2/);
		assert.match(tail, /effort {2}requested high · confirmed not reported/);
		assert.match(tail, /input 1200 · cache read 300 · cache write 40 · output 250 \(reasoning 90\) · total 1790/);
		assert.match(tail, /cost cost not reported/);
		assert.match(tail, /session sess-1/);
	});

	test("a reported cost is shown and becomes cost.total", () => {
		const o = outcome({ usage: { input: 10, cacheRead: 0, cacheWrite: 0, output: 5, reasoning: 0, costUsd: 0.0123 } });
		const d = finalDetails(params, o);
		assert.equal(d.usage?.cost.total, 0.0123);
		assert.equal(d.costReported, true);
		assert.match(summaryLines(d, "x", plainTheme, keyHint)[0]!, /\$0\.0123/);
		assert.match(expandedView(d, "x", plainTheme).tail.join("\n"), /cost \$0\.0123/);
	});

	test("failure: kind and message collapsed; expanded adds exit and the stderr tail", () => {
		const o = outcome({
			ok: false,
			text: "partial words",
			failure: { kind: "nonzero-exit", message: "the CLI exited with code 3" },
			exit: { code: 3 },
			stderrTail: "warming up\nfatal: boom\n",
		});
		const d = finalDetails(params, o);
		assert.equal(d.status, "failed");
		const [first, second] = summaryLines(d, "", plainTheme, keyHint);
		assert.match(first!, /✗ agent-a nonzero-exit/);
		assert.match(second!, /the CLI exited with code 3 \(ctrl\+o to expand\)/);
		const v = expandedView(d, "", plainTheme);
		assert.equal(v.answer, "partial words");
		const tail = v.tail.join("\n");
		assert.match(tail, /── failure\n {2}nonzero-exit: the CLI exited with code 3\n {2}exit 3/);
		assert.match(tail, /── diagnostics \(stderr tail\)\n {2}warming up\n {2}fatal: boom/);
	});
});

describe("what the model and the session get", () => {
	test("success: the full answer is the content; usage in Pi's shape", () => {
		const o = outcome({});
		const d = finalDetails(params, o);
		assert.equal(modelText(d, o), o.result.text);
		assert.deepEqual(d.usage, {
			input: 1200,
			output: 250,
			cacheRead: 300,
			cacheWrite: 40,
			reasoning: 90,
			totalTokens: 1790,
			cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
		});
		assert.equal(d.failure, null);
	});

	test("failure: the marker, the diagnosis, partial answer and stderr for the model; usage kept", () => {
		const o = outcome({
			ok: false,
			text: "half an answer",
			failure: { kind: "error-envelope", message: "FAKE_FAILURE: refused" },
			stderrTail: "trace line",
		});
		const d = finalDetails(params, o);
		assert.deepEqual(d.failure, { kind: "error-envelope", message: "FAKE_FAILURE: refused" });
		const text = modelText(d, o);
		assert.match(text, /^dispatch to agent-a failed \(error-envelope\): FAKE_FAILURE: refused/);
		assert.match(text, /Partial answer:\nhalf an answer/);
		assert.match(text, /Diagnostics \(stderr tail\):\ntrace line/);
		assert.equal(d.usage?.totalTokens, 1790);
	});

	test("no usage reported: none invented", () => {
		assert.equal(toPiUsage(null), undefined);
		assert.equal(finalDetails(params, outcome({ usage: null })).usage, null);
	});

	test("details are plain JSON (they are persisted in the session file)", () => {
		const d = finalDetails(params, outcome({}));
		assert.deepEqual(JSON.parse(JSON.stringify(d)), d);
	});
});

describe("background jobs", () => {
	const id = "0123456789abcdef0123456789abcdef";

	test("the tool row and the model's text name the job, what happens next, and whether it is kept", () => {
		const d = backgroundDetails(params, { id, keep: false });
		assert.equal(d.status, "background");
		assert.equal(d.failure, null);
		const [head, more] = backgroundLines(d, plainTheme);
		assert.equal(head, `⏵ agent-a running in the background · job ${id}`);
		assert.match(more!, /its result is posted here when it ends · cancelled if this session ends first · \/dispatch jobs · \/dispatch cancel 0123/);
		const text = backgroundText(d);
		assert.match(text, new RegExp(`^Started agent-a as background job ${id}; this call returns now`));
		assert.match(text, /do not wait or poll/);
		assert.match(text, /cancelled if this session ends first \(the person can keep it with \/dispatch keep 0123/);
		assert.match(backgroundText(backgroundDetails(params, { id, keep: true })), /It is kept: it runs on/);
		assert.match(backgroundLines(backgroundDetails(params, { id, keep: true }), plainTheme)[1]!, /kept if this session ends/);
	});

	test("a finished job's message: which job, then what a blocking dispatch returns", () => {
		const o = outcome({});
		const d = { ...finalDetails(params, o), job: { id, keep: false } };
		assert.equal(jobEndText(d, o), `Background dispatch job ${id} (agent-a) finished.\n\n${modelText(d, o)}`);
		const f = outcome({ ok: false, failure: { kind: "timeout", message: "over 15m" } });
		const fd = { ...finalDetails(params, f), job: { id, keep: false } };
		assert.match(jobEndText(fd, f), new RegExp(`^Background dispatch job ${id} \\(agent-a\\) ended: timeout\\.\n\ndispatch to agent-a failed \\(timeout\\)`));
	});

	test("a job with no result is lost, with what its log showed", () => {
		const started = { type: "started", protocol: 1, identity: pendingIdentity("agent-a"), program: "/bin/a", cwd: "/repo" };
		const ev = { type: "event", protocol: 1, event: { type: "text", text: "half way" } };
		const log = `${JSON.stringify(started)}\n${JSON.stringify(ev)}\nnot json\n`;
		const view: JobView = {
			id, agent: "agent-a", cwd: "/repo", limits: { timeoutMs: null, maxTokens: null },
			createdAt: 0, state: "lost", startedAt: 1, finishedAt: null, result: null,
		};
		const o = jobOutcome(params, view, log, "worker died");
		assert.equal(o.result.ok, false);
		assert.equal(o.result.failure?.kind, "job-lost");
		assert.match(o.result.failure!.message, new RegExp(`background job ${id}: its worker ended without a result`));
		assert.equal(o.result.text, "half way");
		assert.equal(o.program, "/bin/a");
		assert.equal(o.eventCount, 1);
		assert.equal(o.synthesized, true);
		assert.deepEqual(o.result.identity.confirmed, { model: { state: "not-reported" }, effort: { state: "not-reported" } });
	});

	test("/dispatch jobs: every job newest first, this session's marked, its finished ones' results", () => {
		const now = 10_000_000;
		const view = (vid: string, state: JobView["state"], createdAt: number, result: JobView["result"] = null): JobView => ({
			id: vid, agent: "agent-a", cwd: "/repo", limits: { timeoutMs: 1_800_000, maxTokens: null },
			createdAt, state, startedAt: createdAt, finishedAt: null, result,
		});
		const failed = { type: "result" as const, protocol: 1, ...outcome({ ok: false, failure: { kind: "cancelled", message: "stop" } }).result };
		const mine: TrackedJob = {
			id: "aaaa", params, keep: true, submittedAt: now - 5000, state: "succeeded", outcome: outcome({}), cancelledHere: false,
		};
		const text = jobsText([view("bbbb", "cancelled", now - 600_000, failed), view("aaaa", "succeeded", now - 5000)], [mine], now);
		const lines = text.split("\n");
		assert.equal(lines[0], "2 background jobs on this machine");
		assert.equal(lines[1], "aaaa  succeeded  agent-a  5s ago  /repo [this session, kept]");
		assert.equal(lines[2], "bbbb  cancelled (cancelled)  agent-a  10m ago  /repo");
		assert.equal(lines[4], "── aaaa (agent-a) succeeded");
		assert.match(text, /ANSWER-LINE-1/);
		assert.doesNotMatch(text, /\/dispatch cancel ID/, "nothing is running");
		assert.match(jobsText([view("cccc", "running", now)], [], now), /A running job: \/dispatch cancel ID/);
	});
});
