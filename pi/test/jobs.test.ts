/**
 * `jobs.ts` against the real binary, its job store and the fake agent CLI, without Pi: a background
 * dispatch reported once with the result a blocking run gives; a refusal starts nothing; a job whose
 * worker is SIGKILLed is reported lost (and its tree is gone); cancel; shutdown cancels what was not
 * kept, waits, reports nothing more and starts nothing new.
 */

import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test, type TestContext } from "node:test";

import type { Outcome } from "../dispatch.ts";
import { JobTracker, type TrackedJob } from "../jobs.ts";
import { ProcessRegistry } from "../process.ts";
import {
	alive,
	BIN,
	dispatchEnv,
	FAKE_AGENT,
	groupMembers,
	jobStateDir,
	pollUntil,
	readFakeLog,
	scratch,
	showJob,
	workerPid,
} from "./support/env.ts";

function setup(t: TestContext, name: string) {
	const dir = scratch(name);
	const log = join(dir, "fake-cli.jsonl");
	const state = jobStateDir(name);
	const reg = new ProcessRegistry();
	const tracker = new JobTracker({ binary: () => BIN, registry: reg, env: dispatchEnv({ AGENT_DISPATCH_STATE_DIR: state }, log) });
	const ended: { job: TrackedJob; outcome: Outcome }[] = [];
	const waiters: ((e: { job: TrackedJob; outcome: Outcome }) => void)[] = [];
	tracker.onEnd((job, outcome) => {
		ended.push({ job, outcome });
		for (const w of waiters.splice(0)) w({ job, outcome });
	});
	const nextEnd = () => new Promise<{ job: TrackedJob; outcome: Outcome }>((r) => waiters.push(r));
	t.after(async () => {
		await tracker.shutdown();
		await reg.shutdown();
	});
	return { dir, log, state, reg, tracker, ended, nextEnd };
}

async function submitted(tracker: JobTracker, task: string, cwd: string, keep = false): Promise<TrackedJob> {
	const s = await tracker.submit({ agent: FAKE_AGENT, task, cwd }, keep);
	assert.equal(s.kind, "job", JSON.stringify(s));
	return (s as { job: TrackedJob }).job;
}

/** The fake CLI's run for `marker` once it and its grandchild are up. */
function cliRun(log: string, marker: string) {
	return pollUntil(() => {
		const r = readFakeLog(log).find((x) => x.argv.join(" ").includes(marker));
		return r && groupMembers(r.pgid).length >= 2 ? r : undefined;
	}, 20_000, `the fake CLI for ${marker}`);
}

async function assertGone(pids: number[], pgids: number[]): Promise<void> {
	await pollUntil(
		() => pids.every((p) => !alive(p)) && pgids.every((g) => groupMembers(g).length === 0),
		5000,
		`processes ${pids.join(",")} and groups ${pgids.join(",")} to be gone`,
	);
}

describe("background jobs against the real binary", { concurrency: true }, () => {
	test("a job is reported once, with the result, usage and activity a blocking run gives; a huge task goes by file", async (t) => {
		const { dir, tracker, ended, nextEnd, state } = setup(t, "job-ok");
		const before = readdirSync(tmpdir()).filter((n) => n.startsWith("agent-dispatch-task-")).length;
		const end = nextEnd();
		const t0 = Date.now();
		const job = await submitted(tracker, "SCENARIO:ok review", dir);
		const submitMs = Date.now() - t0;
		const { job: same, outcome } = await end;
		assert.equal(same, job);
		assert.equal(outcome.result.ok, true, JSON.stringify(outcome.result));
		assert.equal(outcome.result.text, "FAKE_ANSWER: looks fine.");
		assert.equal(outcome.result.usage?.output, 40);
		assert.deepEqual(outcome.result.identity.confirmed, { model: { state: "not-reported" }, effort: { state: "not-reported" } });
		assert.ok(outcome.activity.some((a) => a.kind === "command" && a.status === "completed"));
		assert.ok(outcome.eventCount > 0);
		assert.match(outcome.program ?? "", /codex$/);
		assert.equal(job.state, "succeeded");
		assert.equal(showJob(state, job.id).state, "succeeded");

		// Over 64 KiB: through --task-file, whose temporary directory is gone once the job exists.
		const big = `SCENARIO:echo-prompt ${"x".repeat(200 * 1024)} END-OF-TASK`;
		const bigEnd = nextEnd();
		const bigJob = await submitted(tracker, big, dir);
		assert.equal(readdirSync(tmpdir()).filter((n) => n.startsWith("agent-dispatch-task-")).length, before);
		const { outcome: digest } = await bigEnd;
		assert.equal(digest.result.ok, true);
		assert.ok(digest.result.text.includes(big), "the whole task arrived");
		assert.equal(ended.length, 2, "each job reported exactly once");
		assert.notEqual(bigJob.id, job.id);
		console.log(`# submit → job line in ${submitMs}ms`);
	});

	test("a refusal comes back as the binary's result and starts no job", async (t) => {
		const { dir, tracker, state } = setup(t, "job-refused");
		const s = await tracker.submit({ agent: "no-such-agent", task: "hello", cwd: dir }, false);
		assert.equal(s.kind, "refused");
		const o = (s as { outcome: Outcome }).outcome;
		assert.equal(o.result.failure?.kind, "unsupported-agent");
		assert.equal(o.synthesized, false);
		assert.deepEqual(tracker.all(), []);
		assert.deepEqual(existsSync(join(state, "jobs")) ? readdirSync(join(state, "jobs")).filter((n) => !n.startsWith(".")) : [], []);
	});

	test("a job whose worker is SIGKILLed is reported lost, and its tree is gone", async (t) => {
		const { dir, log, tracker, state, nextEnd } = setup(t, "job-lost");
		const job = await submitted(tracker, "SCENARIO:sleep lost-me", dir);
		const cli = await cliRun(log, "lost-me");
		const end = nextEnd();
		process.kill(workerPid(state, job.id), "SIGKILL");
		const { outcome } = await end;
		assert.equal(outcome.result.failure?.kind, "job-lost");
		assert.match(outcome.result.failure?.message ?? "", /lost/);
		assert.equal(outcome.synthesized, true);
		assert.equal(job.state, "lost");
		await assertGone([cli.pid], [cli.pgid]);
	});

	test("cancel stops that job only, waits for its tree, and its end is reported as cancelled here", async (t) => {
		const { dir, log, tracker, state, nextEnd } = setup(t, "job-cancel");
		const a = await submitted(tracker, "SCENARIO:sleep cancel-me", dir);
		const b = await submitted(tracker, "SCENARIO:sleep leave-me", dir);
		const cliA = await cliRun(log, "cancel-me");
		const cliB = await cliRun(log, "leave-me");
		const end = nextEnd();
		const view = await tracker.cancel(a.id);
		assert.equal(view.state, "cancelled");
		assert.equal(alive(cliA.pid), false);
		assert.equal(groupMembers(cliA.pgid).length, 0);
		const { job, outcome } = await end;
		assert.equal(job.id, a.id);
		assert.equal(outcome.result.failure?.kind, "cancelled");
		assert.equal(outcome.cancelRequested, true);
		assert.equal(showJob(state, b.id).state, "running");
		assert.ok(alive(cliB.pid), "the other job runs on");
		await tracker.cancel(b.id);
		await assertGone([cliB.pid], [cliB.pgid]);
	});

	test("shutdown cancels every job not kept and waits; the kept one runs on; nothing is reported or started after", async (t) => {
		const { dir, log, tracker, state, ended, reg } = setup(t, "job-shutdown");
		const doomed = await submitted(tracker, "SCENARIO:sleep doomed", dir);
		const kept = await submitted(tracker, "SCENARIO:sleep kept", dir);
		assert.equal(tracker.keep(kept.id), true);
		assert.equal(tracker.keep("0123456789abcdef0123456789abcdef"), false, "only this session's jobs");
		const cliDoomed = await cliRun(log, "doomed");
		const cliKept = await cliRun(log, "kept");
		const worker = workerPid(state, doomed.id);
		await tracker.shutdown();
		await reg.shutdown();
		// shutdown waited: the doomed job's tree and worker are gone by now.
		assert.equal(showJob(state, doomed.id).state, "cancelled");
		assert.equal(alive(cliDoomed.pid), false);
		assert.equal(groupMembers(cliDoomed.pgid).length, 0);
		assert.equal(alive(worker), false);
		assert.equal(showJob(state, kept.id).state, "running");
		assert.ok(alive(cliKept.pid));
		assert.equal(ended.length, 0, "nothing is reported after shutdown");
		const late = await tracker.submit({ agent: FAKE_AGENT, task: "SCENARIO:ok", cwd: dir }, false);
		assert.equal(late.kind, "refused");
		// Clean up the kept job through the binary, as a later session would.
		const { spawnSync } = await import("node:child_process");
		spawnSync(BIN, ["jobs", "cancel", kept.id], { env: dispatchEnv({ AGENT_DISPATCH_STATE_DIR: state }) });
		await assertGone([cliKept.pid], [cliKept.pgid]);
	});
});
