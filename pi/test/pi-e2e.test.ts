/**
 * End to end in real Pi 1.6.0: an isolated agent dir whose model is a loopback fake scripted to call
 * `dispatch`, the real binary, the fake agent CLI. Assertions read the persisted session file, the
 * session totals, and /proc — not the extension's own opinion of what happened.
 */

import assert from "node:assert/strict";
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { type FakeOpenAI, startFakeOpenAI, toolResultsIn } from "./support/fake-openai.ts";
import {
	alive,
	cliHome,
	FAKE_AGENT,
	groupMembers,
	makePiHome,
	PiRpc,
	pollUntil,
	readFakeLog,
	readSession,
	REPO,
	runPiJson,
	scratch,
	toolResults,
} from "./support/env.ts";

const DISPATCH_USAGE = { input: 95, output: 40, cacheRead: 20, cacheWrite: 5, totalTokens: 160 };

function dispatchCall(args: Record<string, unknown>) {
	return { name: "dispatch", arguments: { agent: FAKE_AGENT, ...args } };
}

/** The fake CLI's own runs (not `--version` probes), from its log. */
function agentRuns(log: string) {
	return readFakeLog(log).filter((r) => r.argv.includes("--"));
}

/** ppid of a live process, from /proc. */
function parentOf(pid: number): number {
	const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
	return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

async function assertNothingSurvives(pids: number[], pgids: number[]): Promise<void> {
	await pollUntil(
		() => pids.every((p) => !alive(p)) && pgids.every((g) => groupMembers(g).length === 0),
		5000,
		`processes ${pids.join(",")} and groups ${pgids.join(",")} to be gone`,
	);
}

function sumUsage(entries: Record<string, any>[]) {
	const total = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
	for (const e of entries) {
		const u = e.type === "message" ? e.message?.usage : undefined;
		if (!u) continue;
		for (const k of Object.keys(total) as (keyof typeof total)[]) total[k] += u[k] ?? 0;
	}
	return total;
}

describe("pi --mode json", { concurrency: true }, () => {
	test("success: the answer reaches the model; usage and identity are persisted", async () => {
		const srv = await startFakeOpenAI([
			{ toolCalls: [dispatchCall({ task: "SCENARIO:ok Is this diff safe?" })] },
			{ text: "Done: the other agent says it looks fine." },
		]);
		try {
			const sess = scratch("json-ok-sessions");
			const run = await runPiJson({
				home: makePiHome(srv.baseUrl),
				cwd: scratch("json-ok-cwd"),
				args: ["-e", REPO, "--session-dir", sess],
				prompt: "Ask another agent.",
			});
			assert.equal(run.code, 0, run.stderr);
			const [r] = toolResults(readSession(sess));
			assert.ok(r, "a dispatch tool result was persisted");
			assert.equal(r.isError, false);
			assert.equal(r.content[0].text, "FAKE_ANSWER: looks fine.");
			assert.deepEqual(r.usage, { ...DISPATCH_USAGE, reasoning: 8, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } });
			assert.equal(r.details.failure, null);
			assert.equal(r.details.status, "succeeded");
			assert.deepEqual(r.details.identity.confirmed, { model: { state: "not-reported" }, effort: { state: "not-reported" } });
			assert.ok(r.details.sessionId.startsWith("fake-thread-"));
			assert.ok(r.details.activity.some((a: any) => a.kind === "command" && a.status === "completed"));
			// The model saw the tool's typed parameters, `agent` narrowed to the ids the binary lists.
			const schema = srv.requests[0]!.tools?.find((t) => t.function?.name === "dispatch")?.function?.parameters as any;
			assert.deepEqual(schema.required, ["agent", "task"]);
			assert.deepEqual(Object.keys(schema.properties), ["agent", "task", "scope", "model", "effort", "cwd", "timeout", "maxTokens", "background", "keep"]);
			assert.equal(schema.properties.maxTokens.type, "integer");
			assert.equal(schema.properties.background.type, "boolean");
			assert.equal(schema.properties.keep.type, "boolean");
			assert.equal(schema.properties.agent.type, "string");
			assert.ok(schema.properties.agent.enum.includes(FAKE_AGENT), JSON.stringify(schema.properties.agent));
			// The model's next request carried the full answer as the tool result.
			const fed = toolResultsIn(srv.requests[1]!);
			assert.match(JSON.stringify(fed), /FAKE_ANSWER: looks fine\./);
			// Progress streamed as tool_execution_update with running details.
			const updates = run.events.filter((e) => e.type === "tool_execution_update");
			assert.ok(updates.length >= 1);
			assert.equal((updates[0] as any).partialResult.details.status, "running");
		} finally {
			await srv.close();
		}
	});

	test("failures are returned with isError, the diagnosis, and whatever usage was reported", async () => {
		const srv = await startFakeOpenAI([
			{
				toolCalls: [
					dispatchCall({ task: "SCENARIO:error-envelope" }),
					dispatchCall({ task: "SCENARIO:nonzero-exit" }),
				],
			},
			{ text: "Both failed." },
		]);
		try {
			const sess = scratch("json-fail-sessions");
			const run = await runPiJson({
				home: makePiHome(srv.baseUrl),
				cwd: scratch("json-fail-cwd"),
				args: ["-e", REPO, "--session-dir", sess],
				prompt: "Ask twice.",
			});
			assert.equal(run.code, 0, run.stderr);
			const results = toolResults(readSession(sess));
			assert.equal(results.length, 2);
			const envelope = results.find((r) => r.details.failure?.kind === "error-envelope")!;
			const nonzero = results.find((r) => r.details.failure?.kind === "nonzero-exit")!;
			assert.equal(envelope.isError, true);
			assert.match(envelope.content[0].text, /failed \(error-envelope\): FAKE_FAILURE: the model refused/);
			assert.equal(envelope.usage, undefined, "the CLI reported no usage; none is invented");
			assert.equal(nonzero.isError, true);
			assert.match(nonzero.content[0].text, /nonzero-exit/);
			assert.match(nonzero.content[0].text, /fatal: boom/, "stderr diagnostics reach the model");
			assert.deepEqual(
				{ ...nonzero.usage, cost: undefined, reasoning: undefined },
				{ ...DISPATCH_USAGE, cost: undefined, reasoning: undefined },
				"usage reported before the failure survives",
			);
			assert.match(nonzero.details.stderrTail, /fatal: boom/);
		} finally {
			await srv.close();
		}
	});

	test("the tool_result handler alone marks a failure as an error (D11)", async () => {
		const srv = await startFakeOpenAI([{ toolCalls: [dispatchCall({ task: "SCENARIO:error-envelope" })] }, { text: "ok" }]);
		try {
			const sess = scratch("json-handler-sessions");
			const clear = join(REPO, "pi/test/support/clear-error-flag.ts");
			const run = await runPiJson({
				home: makePiHome(srv.baseUrl),
				cwd: scratch("json-handler-cwd"),
				args: ["-e", clear, "-e", REPO, "--session-dir", sess],
				prompt: "Ask.",
			});
			assert.equal(run.code, 0, run.stderr);
			const [r] = toolResults(readSession(sess));
			assert.equal(r.details.failure.kind, "error-envelope");
			assert.equal(r.isError, true, "set again by the package's handler after the test extension cleared it");
		} finally {
			await srv.close();
		}
	});

	test("an event flood reaches Pi as at most ~10 updates per second", async () => {
		const srv = await startFakeOpenAI([{ toolCalls: [dispatchCall({ task: "SCENARIO:stream-mb-24" })] }, { text: "ok" }]);
		try {
			const sess = scratch("json-flood-sessions");
			const run = await runPiJson({
				home: makePiHome(srv.baseUrl),
				cwd: scratch("json-flood-cwd"),
				args: ["-e", REPO, "--session-dir", sess],
				prompt: "Ask.",
			});
			assert.equal(run.code, 0, run.stderr);
			const [r] = toolResults(readSession(sess));
			assert.equal(r.isError, false);
			const updates = run.events.filter((e) => e.type === "tool_execution_update").length;
			const ms = r.durationMs as number;
			assert.ok(r.details.eventCount > 10_000, `${r.details.eventCount} events`);
			assert.ok(updates <= Math.ceil(ms / 100) + 2, `${updates} updates in ${ms}ms`);
			console.log(`# Pi flood: ${r.details.eventCount} events in ${ms}ms → ${updates} tool_execution_update events`);
		} finally {
			await srv.close();
		}
	});

	test("without the binary the tool still loads and says exactly how to install it", async () => {
		// A copy of the package with no build next to it, and no binary on PATH.
		const pkg = scratch("pkg-copy");
		cpSync(join(REPO, "package.json"), join(pkg, "package.json"));
		cpSync(join(REPO, "pi"), join(pkg, "pi"), { recursive: true, filter: (p) => !p.includes("/test") });
		const srv = await startFakeOpenAI([{ toolCalls: [dispatchCall({ task: "anything" })] }, { text: "ok" }]);
		try {
			const sess = scratch("json-missing-sessions");
			const run = await runPiJson({
				home: makePiHome(srv.baseUrl),
				cwd: scratch("json-missing-cwd"),
				args: ["-e", pkg, "--session-dir", sess],
				prompt: "Ask.",
				env: { AGENT_DISPATCH_BIN: "", PATH: "/usr/bin:/bin" },
			});
			assert.equal(run.code, 0, run.stderr);
			const [r] = toolResults(readSession(sess));
			assert.equal(r.isError, true);
			assert.equal(r.details.failure.kind, "dispatcher-not-found");
			assert.match(r.content[0].text, new RegExp(`cargo install --path ${pkg}`));
		} finally {
			await srv.close();
		}
	});
});

describe("pi --mode rpc", { concurrency: true }, () => {
	let srv: FakeOpenAI;
	before(async () => {
		// One server; each session walks the script by its own history. Replies depend on the task.
		srv = await startFakeOpenAI([
			(req) => {
				const user = JSON.stringify(req.messages.filter((m) => m.role === "user").at(-1)?.content ?? "");
				if (user.includes("PARALLEL")) {
					return {
						toolCalls: [
							dispatchCall({ task: "SCENARIO:stream-mb-6", model: "gpt-fake-1" }),
							dispatchCall({ task: "SCENARIO:nonzero-exit", model: "gpt-fake-2", effort: "low" }),
						],
					};
				}
				if (user.includes("SLEEP")) return { toolCalls: [dispatchCall({ task: "SCENARIO:sleep" })] };
				return { text: "Noted." };
			},
			{ text: "Summary after the dispatches." },
		]);
	});
	after(() => srv.close());

	/** Real Pi in RPC mode with a dispatch whose fake agent is visibly working (its command started). */
	async function sleepingDispatch(name: string) {
		const sess = scratch(`${name}-sessions`);
		const log = join(scratch(`${name}-log`), "fake.jsonl");
		const rpc = new PiRpc({ home: makePiHome(srv.baseUrl), cwd: scratch(`${name}-cwd`), args: ["-e", REPO, "--session-dir", sess], log });
		await rpc.command({ type: "prompt", message: "SLEEP: ask and wait." });
		await rpc.waitFor(
			(e) => e.type === "tool_execution_update" && (e as any).partialResult.details.activity.some((a: any) => a.kind === "command"),
			30_000,
			"the dispatch's command to start",
		);
		const [fake] = agentRuns(log);
		assert.ok(fake && alive(fake.pid));
		return { rpc, sess, fake, dispatcher: parentOf(fake.pid) };
	}

	test("abort mid-dispatch: nothing of the dispatch survives; the result is a cancelled failure", async () => {
		const { rpc, sess, fake, dispatcher } = await sleepingDispatch("rpc-abort");
		try {
			assert.match(readFileSync(`/proc/${dispatcher}/cmdline`, "utf8"), /agent-dispatch\0run\0/);
			const t0 = Date.now();
			await rpc.command({ type: "abort" });
			const abortMs = Date.now() - t0;
			await assertNothingSurvives([fake.pid, dispatcher], [fake.pgid]);
			const entries = readSession(sess);
			const [r] = toolResults(entries);
			assert.equal(r.isError, true);
			assert.equal(r.details.failure.kind, "cancelled");
			assert.match(r.content[0].text, /cancelled/);
			const lastAssistant = entries.filter((e) => e.message?.role === "assistant").at(-1);
			assert.equal(lastAssistant?.message.stopReason, "aborted");
			console.log(`# rpc abort → settled in ${abortMs}ms`);
		} finally {
			await rpc.close();
		}
	});

	test("Pi SIGKILLed mid-dispatch: the binary notices (lifeline EOF, parent-death signal) and cleans up", async () => {
		const { rpc, fake, dispatcher } = await sleepingDispatch("rpc-kill");
		try {
			rpc.child.kill("SIGKILL"); // no extension code runs
			await assertNothingSurvives([fake.pid, dispatcher], [fake.pgid]);
		} finally {
			await rpc.close();
		}
	});

	test("two dispatches in one message run in parallel with separate identity, usage and cleanup; totals include them", async () => {
		const sess = scratch("rpc-par-sessions");
		const log = join(scratch("rpc-par-log"), "fake.jsonl");
		const rpc = new PiRpc({ home: makePiHome(srv.baseUrl), cwd: scratch("rpc-par-cwd"), args: ["-e", REPO, "--session-dir", sess], log });
		try {
			await rpc.command({ type: "prompt", message: "PARALLEL please" });
			await rpc.waitFor((e) => e.type === "agent_settled", 60_000, "agent_settled");
			const starts = rpc.events.filter((e) => e.type === "tool_execution_start" && e.toolName === "dispatch");
			const ends = rpc.events.filter((e) => e.type === "tool_execution_end" && e.toolName === "dispatch");
			assert.equal(starts.length, 2);
			assert.equal(ends.length, 2);
			// Overlap: both started before either finished.
			const lastStart = Math.max(...starts.map((e) => e.__t as number));
			const firstEnd = Math.min(...ends.map((e) => e.__t as number));
			assert.ok(lastStart <= firstEnd, `both running at once (last start ${lastStart}, first end ${firstEnd})`);
			const runs = agentRuns(log);
			assert.equal(runs.length, 2);
			assert.notEqual(runs[0]!.pgid, runs[1]!.pgid, "each CLI in its own process group");

			const entries = readSession(sess);
			const results = toolResults(entries);
			const ok = results.find((r) => r.details.status === "succeeded")!;
			const failed = results.find((r) => r.details.status === "failed")!;
			assert.equal(ok.details.identity.requested.model, "gpt-fake-1");
			assert.equal(ok.details.identity.requested.effort, null);
			assert.equal(failed.details.identity.requested.model, "gpt-fake-2");
			assert.equal(failed.details.identity.requested.effort, "low");
			assert.notEqual(ok.details.sessionId, failed.details.sessionId);
			assert.equal(ok.isError, false);
			assert.equal(failed.isError, true);
			assert.equal(ok.usage.totalTokens, DISPATCH_USAGE.totalTokens);
			assert.equal(failed.usage.totalTokens, DISPATCH_USAGE.totalTokens);
			await assertNothingSurvives(runs.map((r) => r.pid), runs.map((r) => r.pgid));

			// Session totals = assistant usage + tool usage, and the dispatches are in there.
			const stats = (await rpc.command({ type: "get_session_stats" })).data as any;
			const sum = sumUsage(entries);
			assert.deepEqual(
				{ input: stats.tokens.input, output: stats.tokens.output, cacheRead: stats.tokens.cacheRead, cacheWrite: stats.tokens.cacheWrite },
				sum,
			);
			const assistantOnly = sumUsage(entries.filter((e) => e.message?.role === "assistant"));
			assert.equal(stats.tokens.input - assistantOnly.input, 2 * DISPATCH_USAGE.input);
			assert.equal(stats.tokens.output - assistantOnly.output, 2 * DISPATCH_USAGE.output);
			console.log(`# parallel: overlap ${firstEnd - lastStart}ms; session tokens ${JSON.stringify(stats.tokens)}`);
		} finally {
			await rpc.close();
		}
	});

	test("/dispatch for a person: the result and the model catalogue land in the session", async () => {
		const sess = scratch("rpc-cmd-sessions");
		const log = join(scratch("rpc-cmd-log"), "fake.jsonl");
		const rpc = new PiRpc({ home: makePiHome(srv.baseUrl), cwd: scratch("rpc-cmd-cwd"), args: ["-e", REPO, "--session-dir", sess], log });
		try {
			await rpc.command({ type: "prompt", message: `/dispatch ${FAKE_AGENT} --model gpt-fake-1 SCENARIO:ok is this right?` });
			await rpc.command({ type: "prompt", message: `/dispatch models ${FAKE_AGENT}` });
			await rpc.command({ type: "prompt", message: "/dispatch no-such-agent hello" });
			// Pi persists custom messages with the next turn; run one so the file is written.
			await rpc.command({ type: "prompt", message: "thanks" });
			await rpc.waitFor((e) => e.type === "agent_settled", 60_000, "agent_settled");
			const custom = readSession(sess).filter((e) => e.type === "custom_message");
			const [ok, models, unknown] = custom;
			assert.equal(ok.customType, "dispatch");
			assert.equal(ok.content, "FAKE_ANSWER: looks fine.");
			assert.equal(ok.details.status, "succeeded");
			assert.equal(ok.details.identity.requested.model, "gpt-fake-1");
			assert.match(agentRuns(log)[0]!.argv.join(" "), /gpt-fake-1/);
			assert.equal(models.customType, "dispatch-models");
			assert.match(models.content, /gpt-fake-1 \(Fake One\) default effort medium; efforts low, medium, high/);
			assert.equal(unknown.details.failure.kind, "unsupported-agent");
			// A widget showed the live state while it ran (RPC gets the plain lines).
			assert.ok(rpc.events.some((e) => e.type === "extension_ui_request" && e.method === "setWidget" && Array.isArray(e.widgetLines)));
		} finally {
			await rpc.close();
		}
	});

	test("/dispatch check proves read-only with the real pinned CLI and posts the report", async () => {
		const sess = scratch("rpc-check-sessions");
		// Outside the temp dir and the clone: Codex's sandbox cannot start its helper from a CODEX_HOME under it.
		const codexHome = cliHome("pi-check-codex-home");
		const realTools = join(REPO, ".tools/node_modules/.bin");
		const rpc = new PiRpc({
			home: makePiHome(srv.baseUrl),
			cwd: scratch("rpc-check-cwd"),
			args: ["-e", REPO, "--session-dir", sess],
			env: {
				PATH: `${realTools}:${process.env.PATH ?? ""}`,
				CODEX_HOME: codexHome,
				AGENT_DISPATCH_CACHE_DIR: scratch("rpc-check-records"),
			},
		});
		try {
			await rpc.command({ type: "prompt", message: `/dispatch check ${FAKE_AGENT}` });
			await rpc.command({ type: "prompt", message: "thanks" });
			await rpc.waitFor((e) => e.type === "agent_settled", 60_000, "agent_settled");
			const check = readSession(sess).find((e) => e.type === "custom_message" && e.customType === "dispatch-check");
			assert.ok(check, "the report was posted");
			const [report] = check.details;
			assert.equal(report.passed, true, check.content);
			assert.deepEqual(
				report.probes.map((p: { verdict: string }) => p.verdict),
				["denied", "denied", "denied", "read-ok"],
			);
			assert.match(check.content, /^PASS /);
			assert.match(check.content, /Read-only file system/);
			assert.match(check.content, /tree: byte-identical/);
		} finally {
			await rpc.close();
		}
	});

	test("session shutdown cancels a running /dispatch and waits for its cleanup", async () => {
		const sess = scratch("rpc-shutdown-sessions");
		const log = join(scratch("rpc-shutdown-log"), "fake.jsonl");
		const rpc = new PiRpc({ home: makePiHome(srv.baseUrl), cwd: scratch("rpc-shutdown-cwd"), args: ["-e", REPO, "--session-dir", sess], log });
		try {
			const promptId = rpc.send({ type: "prompt", message: `/dispatch ${FAKE_AGENT} SCENARIO:sleep` });
			const fake = await pollUntil(() => agentRuns(log)[0], 20_000, "the fake CLI to start");
			await pollUntil(() => alive(fake.pid) && groupMembers(fake.pgid).length >= 2, 5000, "the CLI and its grandchild");
			const dispatcher = parentOf(fake.pid);
			await rpc.command({ type: "new_session" }); // fires session_shutdown
			// session_shutdown waited for the cleanup: by now everything is gone.
			assert.equal(alive(fake.pid), false);
			assert.equal(groupMembers(fake.pgid).length, 0);
			assert.equal(alive(dispatcher), false);
			await rpc.waitFor((e) => e.type === "response" && e.id === promptId, 10_000, "the /dispatch prompt to finish");
		} finally {
			await rpc.close();
		}
	});
});

describe("installing the package", () => {
	test("`pi install <repo>` registers it; the tool then works without -e", async () => {
		const srv = await startFakeOpenAI([{ toolCalls: [dispatchCall({ task: "SCENARIO:ok" })] }, { text: "done" }]);
		try {
			const home = makePiHome(srv.baseUrl);
			const { spawnSync } = await import("node:child_process");
			const { NODE, PI_CLI, piEnv } = await import("./support/env.ts");
			const inst = spawnSync(NODE, [PI_CLI, "install", REPO], { env: piEnv(home), encoding: "utf8", timeout: 60_000 });
			assert.equal(inst.status, 0, `${inst.stdout}\n${inst.stderr}`);
			const settings = JSON.parse(readFileSync(join(home, "settings.json"), "utf8"));
			assert.ok(JSON.stringify(settings.packages).length > 2, JSON.stringify(settings));
			const list = spawnSync(NODE, [PI_CLI, "list"], { env: piEnv(home), encoding: "utf8", timeout: 60_000 });
			assert.ok((list.stdout + list.stderr).includes(REPO), `pi list names the repo:\n${list.stdout}${list.stderr}`);
			const sess = scratch("install-sessions");
			const run = await runPiJson({ home, cwd: scratch("install-cwd"), args: ["--session-dir", sess], prompt: "Ask." });
			assert.equal(run.code, 0, run.stderr);
			const [r] = toolResults(readSession(sess));
			assert.equal(r.isError, false);
			assert.equal(r.content[0].text, "FAKE_ANSWER: looks fine.");
		} finally {
			await srv.close();
		}
	});
});
