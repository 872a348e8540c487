/**
 * Background dispatch in real Pi 1.6.0 (rpc mode, persisted session file), the real binary and its
 * job store, the fake agent CLI. The model's view is read from the fake model endpoint's request
 * log; processes from /proc; job states from the binary's own `jobs show`.
 *
 * Each test has its own job store under $HOME/.cache/agent-dispatch-tests (`jobStateDir`).
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";

import { type ChatRequest, startFakeOpenAI } from "./support/fake-openai.ts";
import {
	alive,
	BIN,
	cancelLiveJobs,
	dispatchEnv,
	FAKE_AGENT,
	FAKE_CLI_DIR,
	fakeCliDir,
	groupMembers,
	jobStateDir,
	makePiHome,
	showJob,
	workerPid,
	NODE,
	PiRpc,
	pollUntil,
	readFakeLog,
	readSession,
	REPO,
	scratch,
} from "./support/env.ts";

const stateDir = jobStateDir;

/**
 * PATH for Pi whose fake CLI logs every run and, for a task containing `GATED`, first blocks reading
 * `fifo` — the job then stays running until the test writes a line to it (an event, not a sleep).
 */
function gatedPath(log: string, fifo: string): string {
	const logged = fakeCliDir(log);
	const dir = scratch("gate");
	const wrapper = join(dir, FAKE_AGENT);
	writeFileSync(wrapper, `#!/bin/sh\ncase "$*" in *GATED*) read _ < '${fifo}' ;; esac\nexec '${join(logged, FAKE_AGENT)}' "$@"\n`);
	chmodSync(wrapper, 0o755);
	return `${dir}:${logged}:${FAKE_CLI_DIR}:${dirname(NODE)}:${process.env.PATH ?? ""}`;
}

function mkfifo(path: string): void {
	const r = spawnSync("mkfifo", [path]);
	assert.equal(r.status, 0, String(r.stderr));
}

/** The text of every user-role message in a model request. */
function userTexts(req: ChatRequest): string[] {
	return req.messages
		.filter((m) => m.role === "user")
		.map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
}

function settledCount(rpc: PiRpc): number {
	return rpc.events.filter((e) => e.type === "agent_settled").length;
}

function waitSettled(rpc: PiRpc, n: number, timeoutMs = 60_000) {
	return rpc.waitFor((e) => e.type === "agent_settled" && settledCount(rpc) >= n, timeoutMs, `agent_settled #${n}`);
}

function dispatchEnds(rpc: PiRpc): Record<string, any>[] {
	return rpc.events.filter((e) => e.type === "tool_execution_end" && e.toolName === "dispatch") as Record<string, any>[];
}

function agentRuns(log: string) {
	return readFakeLog(log).filter((r) => r.argv.includes("--"));
}

async function assertGone(pids: number[], pgids: number[]): Promise<void> {
	await pollUntil(
		() => pids.every((p) => !alive(p)) && pgids.every((g) => groupMembers(g).length === 0),
		5000,
		`processes ${pids.join(",")} and groups ${pgids.join(",")} to be gone`,
	);
}

describe("background dispatch in real Pi (rpc)", { concurrency: true }, () => {
	test("returns at once, the session carries on, and the job's result reaches the model's next request", async () => {
		const srv = await startFakeOpenAI([
			{ toolCalls: [{ name: "dispatch", arguments: { agent: FAKE_AGENT, background: true, task: "SCENARIO:ok GATED review the diff" } }] },
			{ text: "Started the review in the background; carrying on." },
			{ text: "The background review came back: it looks fine." },
		]);
		const state = stateDir("roundtrip");
		const log = join(scratch("bg-log"), "fake.jsonl");
		const fifo = join(scratch("bg-gate"), "gate");
		mkfifo(fifo);
		const sess = scratch("bg-sessions");
		const rpc = new PiRpc({
			home: makePiHome(srv.baseUrl),
			cwd: scratch("bg-cwd"),
			args: ["-e", REPO, "--session-dir", sess],
			env: { AGENT_DISPATCH_STATE_DIR: state, PATH: gatedPath(log, fifo) },
		});
		try {
			await rpc.command({ type: "prompt", message: "Review this in the background." });
			await waitSettled(rpc, 1);
			// The tool came back with a job id while the job is still waiting at the gate.
			const [end] = dispatchEnds(rpc);
			assert.ok(end, "the dispatch tool ended");
			const start = rpc.events.find((e) => e.type === "tool_execution_start" && e.toolName === "dispatch")!;
			const toolMs = (end.__t as number) - (start.__t as number);
			const details = end.result.details;
			assert.equal(details.status, "background");
			const id: string = details.job.id;
			assert.match(id, /^[0-9a-f]{16,}$/);
			assert.equal(details.job.keep, false);
			assert.equal(end.isError, false);
			assert.match(end.result.content[0].text, new RegExp(`background job ${id}`));
			assert.match(end.result.content[0].text, /\/dispatch cancel/);
			assert.equal(srv.requests.length, 2, "the turn went on and ended");
			assert.doesNotMatch(JSON.stringify(srv.requests[1]), /FAKE_ANSWER/);
			const running = showJob(state, id);
			assert.ok(["queued", "running"].includes(running.state), running.state);
			assert.equal(agentRuns(log).length, 0, "the agent has not run yet: it waits at the gate");

			// Let the job run; its result arrives as a message and starts a turn.
			// (Opening the FIFO completes once the gated CLI opens it to read.)
			const gate = await open(fifo, "w");
			await gate.write("go\n");
			await gate.close();
			await waitSettled(rpc, 2);
			assert.equal(srv.requests.length, 3);
			const next = srv.requests[2]!;
			const fed = userTexts(next).find((t) => t.includes(`Background dispatch job ${id}`));
			assert.ok(fed, `the model's next request carries the job's result:\n${JSON.stringify(next.messages, null, 1)}`);
			assert.match(fed, /FAKE_ANSWER: looks fine\./);
			assert.equal(showJob(state, id).state, "succeeded");
			const notes = rpc.events.filter((e) => e.type === "extension_ui_request" && e.method === "notify").map((e) => String(e.message));
			assert.ok(notes.includes(`dispatch job ${id} (${FAKE_AGENT}) finished`), `the person is told: ${notes.join(" | ")}`);

			// `/dispatch jobs`: this machine's jobs, and this session's finished one with its result.
			await rpc.command({ type: "prompt", message: "/dispatch jobs" });
			await rpc.command({ type: "prompt", message: "thanks" });
			await waitSettled(rpc, 3);
			const entries = readSession(sess);
			const job = entries.find((e) => e.type === "custom_message" && e.customType === "dispatch-job");
			assert.ok(job, "the job's result was persisted as a message");
			assert.equal(job.details.job.id, id);
			assert.equal(job.details.status, "succeeded");
			assert.equal(job.details.usage.totalTokens, 160, "the job's usage is kept");
			assert.ok(job.details.activity.some((a: any) => a.kind === "command"), "activity replayed from the job's log");
			const list = entries.find((e) => e.type === "custom_message" && e.customType === "dispatch-jobs");
			assert.ok(list, "/dispatch jobs posted the list");
			assert.match(list.content, new RegExp(`${id}  succeeded  ${FAKE_AGENT} .*\\[this session\\]`));
			assert.match(list.content, /FAKE_ANSWER: looks fine\./);
			console.log(`# background tool call returned in ${toolMs}ms`);
		} finally {
			await rpc.close();
			await srv.close();
		}
	});

	test("a job that ends while the agent is busy is delivered as a follow-up: after the run, in the next request", async () => {
		const srv = await startFakeOpenAI([
			{
				toolCalls: [
					{ name: "dispatch", arguments: { agent: FAKE_AGENT, background: true, task: "SCENARIO:ok quick background" } },
					{ name: "dispatch", arguments: { agent: FAKE_AGENT, task: "SCENARIO:ok GATED slow blocking" } },
				],
			},
			{ text: "The blocking one is done." },
			{ text: "And now the background one." },
		]);
		const log = join(scratch("busy-log"), "fake.jsonl");
		const fifo = join(scratch("busy-gate"), "gate");
		mkfifo(fifo);
		const state = stateDir("busy");
		const rpc = new PiRpc({
			home: makePiHome(srv.baseUrl),
			cwd: scratch("busy-cwd"),
			args: ["-e", REPO, "--session-dir", scratch("busy-sessions")],
			env: { AGENT_DISPATCH_STATE_DIR: state, PATH: gatedPath(log, fifo) },
		});
		try {
			await rpc.command({ type: "prompt", message: "One in the background, one blocking." });
			const bg = await rpc.waitFor((e) => e.type === "tool_execution_end" && (e as any).result?.details?.status === "background", 30_000, "the background call");
			const id: string = (bg as any).result.details.job.id;
			// The job ends while the blocking dispatch still waits at its gate: Pi queues the result.
			const told = await rpc.waitFor(
				(e) => e.type === "extension_ui_request" && e.method === "notify" && String(e.message).includes(id),
				30_000,
				"the person to be told that the job ended",
			);
			assert.match(String(told.message), new RegExp(`dispatch job ${id} \\(${FAKE_AGENT}\\) finished`));
			assert.equal(settledCount(rpc), 0, "the agent is still busy");
			assert.equal(srv.requests.length, 1, "the blocking dispatch still holds the turn");
			const gate = await open(fifo, "w");
			await gate.write("go\n");
			await gate.close();
			await waitSettled(rpc, 1);
			assert.equal(srv.requests.length, 3, "one more request for the follow-up");
			assert.doesNotMatch(JSON.stringify(srv.requests[1]), /Background dispatch job/, "not injected into the running turn");
			assert.ok(userTexts(srv.requests[2]!).some((t) => t.includes(`Background dispatch job ${id}`)));
		} finally {
			await rpc.close();
			await srv.close();
		}
	});

	test("shutdown cancels the session's jobs (nothing survives) but not a kept one; a later session lists, cancels and reads it", async () => {
		const srv = await startFakeOpenAI([
			{
				toolCalls: [
					{ name: "dispatch", arguments: { agent: FAKE_AGENT, background: true, task: "SCENARIO:sleep doomed" } },
					{ name: "dispatch", arguments: { agent: FAKE_AGENT, background: true, keep: true, task: "SCENARIO:sleep kept" } },
				],
			},
			{ text: "Both are running." },
		]);
		const state = stateDir("shutdown");
		const log = join(scratch("sd-log"), "fake.jsonl");
		const home = makePiHome(srv.baseUrl);
		const env = { AGENT_DISPATCH_STATE_DIR: state };
		let keptId = "";
		const rpc = new PiRpc({ home, cwd: scratch("sd-cwd"), args: ["-e", REPO, "--session-dir", scratch("sd-sessions")], env, log });
		try {
			await rpc.command({ type: "prompt", message: "Start two reviews." });
			await waitSettled(rpc, 1);
			const ends = dispatchEnds(rpc);
			assert.equal(ends.length, 2);
			const doomedId: string = ends.find((e) => !e.result.details.job.keep)!.result.details.job.id;
			keptId = ends.find((e) => e.result.details.job.keep)!.result.details.job.id;
			const runs = await pollUntil(() => {
				const r = agentRuns(log);
				return r.length === 2 && r.every((x) => groupMembers(x.pgid).length >= 2) ? r : undefined;
			}, 20_000, "both fake CLIs and their grandchildren");
			const doomed = runs.find((r) => r.argv.join(" ").includes("doomed"))!;
			const kept = runs.find((r) => r.argv.join(" ").includes("kept"))!;
			const doomedWorker = workerPid(state, doomedId);
			const keptWorker = workerPid(state, keptId);
			assert.ok(alive(doomedWorker) && alive(keptWorker));

			const t0 = Date.now();
			await rpc.close(); // stdin closes: Pi quits, session_shutdown runs
			const quitMs = Date.now() - t0;
			assert.equal(showJob(state, doomedId).state, "cancelled");
			await assertGone([doomed.pid, doomedWorker], [doomed.pgid]);
			// The kept job runs on.
			assert.equal(showJob(state, keptId).state, "running");
			assert.ok(alive(kept.pid) && alive(keptWorker));
			console.log(`# Pi quit with one job cancelled in ${quitMs}ms`);

			// A later session: list it, cancel it, and read its result.
			srv.setReplies([{ text: "Noted." }]); // the new session's model starts nothing
			const sess2 = scratch("sd-sessions-2");
			const rpc2 = new PiRpc({ home, cwd: scratch("sd-cwd-2"), args: ["-e", REPO, "--session-dir", sess2], env, log });
			try {
				await rpc2.command({ type: "prompt", message: "/dispatch jobs" });
				await rpc2.command({ type: "prompt", message: `/dispatch cancel ${keptId}` });
				await assertGone([kept.pid, keptWorker], [kept.pgid]);
				assert.equal(showJob(state, keptId).state, "cancelled");
				await rpc2.command({ type: "prompt", message: `/dispatch jobs ${keptId}` });
				await rpc2.command({ type: "prompt", message: "thanks" });
				await waitSettled(rpc2, 1);
				const notes = rpc2.events.filter((e) => e.type === "extension_ui_request" && e.method === "notify").map((e) => String(e.message));
				assert.ok(notes.includes(`job ${keptId}: cancelled`), notes.join("\n"));
				const entries = readSession(sess2);
				const list = entries.find((e) => e.type === "custom_message" && e.customType === "dispatch-jobs");
				assert.ok(list, "/dispatch jobs posted the list");
				assert.match(list.content, new RegExp(`${keptId}  running  ${FAKE_AGENT}`));
				assert.match(list.content, new RegExp(`${doomedId}  cancelled \\(cancelled\\)  ${FAKE_AGENT}`));
				assert.doesNotMatch(list.content, /this session/, "the new session started none of them");
				const result = entries.find((e) => e.type === "custom_message" && e.customType === "dispatch-job");
				assert.ok(result, "/dispatch jobs ID posted the kept job's result");
				assert.equal(result.details.job.id, keptId);
				assert.equal(result.details.failure.kind, "cancelled");
				// Nothing of this test runs on.
				const all = spawnSync(BIN, ["jobs", "--json"], { env: dispatchEnv(env), encoding: "utf8" });
				assert.deepEqual((JSON.parse(all.stdout) as { state: string }[]).map((j) => j.state).sort(), ["cancelled", "cancelled"]);
			} finally {
				await rpc2.close();
			}
		} finally {
			await rpc.close();
			cancelLiveJobs(state);
			await srv.close();
		}
	});
});
