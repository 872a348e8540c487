/**
 * Shared test plumbing: where things are, isolated Pi homes, running Pi headless, reading sessions
 * and /proc. Tests run under Node 22 (scripts/test-pi.sh), the same Node that runs Pi.
 */

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { fileURLToPath } from "node:url";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const NODE = process.execPath;
export const PI_PKG = join(REPO, ".tools/node_modules/@earendil-works/pi-coding-agent");
export const PI_CLI = join(PI_PKG, "dist/bundle/cli.js");
export const BIN = process.env.AGENT_DISPATCH_TEST_BIN ?? join(REPO, "target/debug/agent-dispatch");
export const FAKE_CLI_DIR = join(REPO, "tests/fake-cli");
export const SKIP_CHECK = { AGENT_DISPATCH_SKIP_CHECK: "yes-skip-the-read-only-check" };

/** The agent id the fake CLI stands in for (kept out of pi/*.ts by design; tests may name it). */
export const FAKE_AGENT = "codex";

const scratchRoot = mkdtempSync(join(tmpdir(), "pi-dispatch-test-"));
process.on("exit", () => {
	if (!process.env.KEEP_TEST_DIRS) rmSync(scratchRoot, { recursive: true, force: true });
});

/**
 * CLI homes (CODEX_HOME, HOME for a real CLI…) live outside the temp dir and outside the clone:
 * Codex cannot start its sandbox helper from a home under the temp dir, and the clone may be
 * there too. Root: $AGENT_DISPATCH_TEST_HOMES, else ~/.cache/agent-dispatch-tests; removed at exit.
 */
const homesRoot = process.env.AGENT_DISPATCH_TEST_HOMES || join(homedir(), ".cache", "agent-dispatch-tests");
const cliHomes: string[] = [];
process.on("exit", () => {
	if (!process.env.KEEP_TEST_DIRS) for (const d of cliHomes) rmSync(d, { recursive: true, force: true });
});

export function cliHome(name: string): string {
	mkdirSync(homesRoot, { recursive: true });
	const d = mkdtempSync(join(homesRoot, `${name}-`));
	cliHomes.push(d);
	return d;
}

/**
 * Job stores (AGENT_DISPATCH_STATE_DIR) live outside the temp dir and the clone, like every home a
 * test gives a CLI: under $HOME/.cache/agent-dispatch-tests, removed at exit.
 */
let stateRoot: string | undefined;
const stateDirs: string[] = [];
export function jobStateDir(name: string): string {
	if (!stateRoot) {
		mkdirSync(homesRoot, { recursive: true });
		const root = mkdtempSync(join(homesRoot, "pi-jobs-"));
		stateRoot = root;
		process.on("exit", () => {
			// A failed test must not leave a job running: cancel what is still live, then remove.
			for (const d of stateDirs) cancelLiveJobs(d);
			if (!process.env.KEEP_TEST_DIRS) rmSync(root, { recursive: true, force: true });
		});
	}
	const d = join(stateRoot, `${++dirCounter}-${name}`);
	mkdirSync(d, { recursive: true });
	stateDirs.push(d);
	return d;
}

/** Cancel every queued or running job in the store `state` (through the binary); returns their ids. */
export function cancelLiveJobs(state: string): string[] {
	const env = dispatchEnv({ AGENT_DISPATCH_STATE_DIR: state });
	const list = spawnSync(BIN, ["jobs", "--json"], { env, encoding: "utf8" });
	if (list.status !== 0) return [];
	const live = (JSON.parse(list.stdout) as { id: string; state: string }[]).filter((j) => j.state === "queued" || j.state === "running");
	for (const j of live) spawnSync(BIN, ["jobs", "cancel", j.id], { env });
	return live.map((j) => j.id);
}

let dirCounter = 0;
export function scratch(name: string): string {
	const d = join(scratchRoot, `${++dirCounter}-${name}`);
	mkdirSync(d, { recursive: true });
	return d;
}

/**
 * A directory of wrappers, one per fake CLI in tests/fake-cli, that exec the fake with FAKE_CLI_LOG
 * set to `log`. (The binary builds the agent CLI's environment from an allowlist, so a FAKE_CLI_LOG
 * in the dispatcher's own environment never reaches the fake; PATH does.) `exec` keeps the pid.
 */
export function fakeCliDir(log: string): string {
	const dir = scratch("fake-cli");
	for (const entry of readdirSync(FAKE_CLI_DIR, { withFileTypes: true })) {
		if (!entry.isFile()) continue;
		const name = entry.name;
		const target = join(FAKE_CLI_DIR, name);
		const wrapper = join(dir, name);
		writeFileSync(wrapper, `#!/bin/sh\nFAKE_CLI_LOG='${log}' exec '${target}' "$@"\n`);
		chmodSync(wrapper, 0o755);
	}
	return dir;
}

/**
 * Environment for anything that runs the dispatcher against the fake CLIs. With `log`, every fake
 * CLI invocation is recorded there (pid, pgid, argv).
 */
export function dispatchEnv(extra: Record<string, string> = {}, log?: string): NodeJS.ProcessEnv {
	const fakes = log ? `${fakeCliDir(log)}:${FAKE_CLI_DIR}` : FAKE_CLI_DIR;
	return {
		...process.env,
		PATH: `${fakes}:${dirname(NODE)}:${process.env.PATH ?? ""}`,
		AGENT_DISPATCH_BIN: BIN,
		...SKIP_CHECK,
		...extra,
	};
}

/** An isolated Pi agent dir whose only model is the fake endpoint. */
export function makePiHome(baseUrl: string): string {
	const home = scratch("pi-home");
	writeFileSync(
		join(home, "models.json"),
		JSON.stringify({
			providers: {
				fake: {
					baseUrl,
					api: "openai-completions",
					apiKey: "dummy",
					models: [
						{
							id: "fake-model",
							name: "Fake Model",
							contextWindow: 32000,
							maxTokens: 1024,
							cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 },
						},
					],
				},
			},
		}),
	);
	return home;
}

export function piEnv(home: string, extra: Record<string, string> = {}, log?: string): NodeJS.ProcessEnv {
	return dispatchEnv({
		PI_CODING_AGENT_DIR: home,
		PI_OFFLINE: "1",
		PI_SKIP_VERSION_CHECK: "1",
		PI_TELEMETRY: "0",
		...extra,
	}, log);
}

export interface PiRun {
	code: number | null;
	stdout: string;
	stderr: string;
	events: Record<string, unknown>[];
}

/** `pi --mode json` to completion. */
export function runPiJson(opts: {
	home: string;
	cwd: string;
	args: string[];
	prompt: string;
	env?: Record<string, string>;
	/** Fake-CLI invocation log (see `fakeCliDir`). */
	log?: string;
	timeoutMs?: number;
}): Promise<PiRun> {
	return new Promise((resolvePromise, reject) => {
		const child = spawn(
			NODE,
			[PI_CLI, "--mode", "json", "--model", "fake/fake-model", ...opts.args, opts.prompt],
			{ cwd: opts.cwd, env: piEnv(opts.home, opts.env, opts.log), stdio: ["ignore", "pipe", "pipe"] },
		);
		let stdout = "";
		let stderr = "";
		child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
		child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
		const timer = setTimeout(() => {
			child.kill("SIGKILL");
			reject(new Error(`pi --mode json timed out\nstderr:\n${stderr}`));
		}, opts.timeoutMs ?? 90_000);
		child.on("close", (code) => {
			clearTimeout(timer);
			const events = stdout
				.split("\n")
				.filter((l) => l.trim().startsWith("{"))
				.map((l) => JSON.parse(l) as Record<string, unknown>);
			resolvePromise({ code, stdout, stderr, events });
		});
	});
}

/** A `pi --mode rpc` process with line-framed events and command helpers. */
export class PiRpc {
	readonly child: ChildProcess;
	readonly events: Record<string, unknown>[] = [];
	stderr = "";
	private waiters: { pred: (e: Record<string, unknown>) => boolean; resolve: (e: Record<string, unknown>) => void }[] = [];
	private nextId = 0;
	private closed: Promise<number | null>;

	constructor(opts: { home: string; cwd: string; args: string[]; env?: Record<string, string>; log?: string }) {
		this.child = spawn(NODE, [PI_CLI, "--mode", "rpc", "--model", "fake/fake-model", ...opts.args], {
			cwd: opts.cwd,
			env: piEnv(opts.home, opts.env, opts.log),
			stdio: ["pipe", "pipe", "pipe"],
		});
		const dec = new StringDecoder("utf8");
		let buf = "";
		this.child.stdout!.on("data", (c: Buffer) => {
			buf += dec.write(c);
			let i: number;
			while ((i = buf.indexOf("\n")) >= 0) {
				const line = buf.slice(0, i).replace(/\r$/, "");
				buf = buf.slice(i + 1);
				if (!line.trim()) continue;
				const e = JSON.parse(line) as Record<string, unknown>;
				e.__t = Date.now();
				this.events.push(e);
				for (const w of [...this.waiters]) {
					if (w.pred(e)) {
						this.waiters.splice(this.waiters.indexOf(w), 1);
						w.resolve(e);
					}
				}
			}
		});
		this.child.stderr!.on("data", (c: Buffer) => (this.stderr += c.toString()));
		this.closed = new Promise((r) => this.child.on("close", (code) => r(code)));
	}

	send(cmd: Record<string, unknown>): string {
		const id = `c${++this.nextId}`;
		this.child.stdin!.write(`${JSON.stringify({ id, ...cmd })}\n`);
		return id;
	}

	/** Resolve with the first event (already seen or future) matching `pred`. */
	waitFor(pred: (e: Record<string, unknown>) => boolean, timeoutMs = 60_000, what = "event"): Promise<Record<string, unknown>> {
		const seen = this.events.find(pred);
		if (seen) return Promise.resolve(seen);
		return new Promise((resolvePromise, reject) => {
			const timer = setTimeout(() => {
				reject(new Error(`timed out waiting for ${what}; stderr:\n${this.stderr.slice(-3000)}`));
			}, timeoutMs);
			this.waiters.push({
				pred,
				resolve: (e) => {
					clearTimeout(timer);
					resolvePromise(e);
				},
			});
		});
	}

	async command(cmd: Record<string, unknown>, timeoutMs = 30_000): Promise<Record<string, unknown>> {
		const id = this.send(cmd);
		const r = await this.waitFor((e) => e.type === "response" && e.id === id, timeoutMs, `response to ${String(cmd.type)}`);
		if (r.success !== true) throw new Error(`${String(cmd.type)} failed: ${JSON.stringify(r)}`);
		return r;
	}

	async close(): Promise<number | null> {
		this.child.stdin!.end();
		const t = setTimeout(() => this.child.kill("SIGTERM"), 10_000);
		const code = await this.closed;
		clearTimeout(t);
		return code;
	}
}

/** Entries of the one session file under `dir` (searched recursively). */
export function readSession(dir: string): Record<string, any>[] {
	const files: string[] = [];
	const walk = (d: string) => {
		for (const e of readdirSync(d, { withFileTypes: true })) {
			const p = join(d, e.name);
			if (e.isDirectory()) walk(p);
			else if (e.name.endsWith(".jsonl")) files.push(p);
		}
	};
	if (existsSync(dir)) walk(dir);
	if (files.length !== 1) throw new Error(`expected one session file under ${dir}, found ${files.length}`);
	return readFileSync(files[0]!, "utf8")
		.split("\n")
		.filter((l) => l.trim())
		.map((l) => JSON.parse(l));
}

/** Persisted `toolResult` messages for one tool. */
export function toolResults(entries: Record<string, any>[], toolName = "dispatch"): Record<string, any>[] {
	return entries
		.filter((e) => e.type === "message" && e.message?.role === "toolResult" && e.message.toolName === toolName)
		.map((e) => e.message);
}

/** A process is alive when /proc has it and it is not a zombie. */
export function alive(pid: number): boolean {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
		const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
		return state !== "Z" && state !== "X";
	} catch {
		return false;
	}
}

/** Every process whose pgid is `pgid` (from /proc). */
export function groupMembers(pgid: number): number[] {
	const out: number[] = [];
	for (const name of readdirSync("/proc")) {
		if (!/^\d+$/.test(name)) continue;
		try {
			const stat = readFileSync(`/proc/${name}/stat`, "utf8");
			const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
			if (Number(f[2]) === pgid && f[0] !== "Z") out.push(Number(name));
		} catch {
			// raced with exit
		}
	}
	return out;
}

export interface FakeInvocation {
	pid: number;
	pgid: number;
	argv: string[];
}

export function readFakeLog(path: string): FakeInvocation[] {
	if (!existsSync(path)) return [];
	return readFileSync(path, "utf8")
		.split("\n")
		.filter((l) => l.trim())
		.map((l) => JSON.parse(l) as FakeInvocation);
}

/** Poll `check` until it returns a truthy value or the bound passes. */
export async function pollUntil<T>(check: () => T | undefined | null | false, timeoutMs: number, what: string, everyMs = 50): Promise<T> {
	const end = Date.now() + timeoutMs;
	for (;;) {
		const v = check();
		if (v) return v;
		if (Date.now() > end) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
		await new Promise((r) => setTimeout(r, everyMs));
	}
}

/** The binary's own view of a job (`jobs show ID --json`) in the store `state`. */
export function showJob(state: string, id: string): Record<string, any> {
	const r = spawnSync(BIN, ["jobs", "show", id, "--json"], { env: dispatchEnv({ AGENT_DISPATCH_STATE_DIR: state }), encoding: "utf8" });
	if (r.status !== 0) throw new Error(`jobs show ${id}: ${r.stderr}`);
	return JSON.parse(r.stdout) as Record<string, any>;
}

/** The pid of a job's worker, as the binary recorded it in the store. */
export function workerPid(state: string, id: string): number {
	return Number(readFileSync(join(state, "jobs", id, "pid"), "utf8").trim());
}
