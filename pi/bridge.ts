/**
 * The bridge to the `agent-dispatch` binary: spawn one `run`, read its protocol lines, keep a live
 * snapshot (identity, activity tail), coalesce progress callbacks, cancel on request, and always
 * come back with one final result — the binary's own `result` line, or a synthesized failure when
 * the binary could not give one (it could not be started, it crashed, it had to be killed).
 *
 * Process model (design D12): the binary is started in its own process group with `--lifeline`, its
 * stdin a pipe that is kept open and never written. Cancelling sends SIGTERM to the binary, which
 * cleans up the agent CLI's process group itself and still writes its result line; if it does not
 * exit within a grace period it is SIGKILLed together with the process groups of its descendants.
 * If Pi dies without running any cleanup, the pipe closes and the binary cancels itself.
 *
 * This module depends on Node built-ins only, so it is unit-tested without Pi.
 */

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { constants as osConstants, tmpdir } from "node:os";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";

import {
	type AgentInfo,
	type CheckReport,
	type CommandStatus,
	type DispatchResult,
	type Identity,
	type ModelCatalogue,
	parseLine,
	pendingIdentity,
	type StreamEvent,
} from "./protocol.ts";

// ---------------------------------------------------------------------------------------------
// Tunables

/** At most one progress callback per this many milliseconds (≈10 per second). */
export const UPDATE_INTERVAL_MS = 100;
/** After SIGTERM, how long the binary gets to clean up and write its result before SIGKILL. */
export const KILL_GRACE_MS = 5000;
/** After the binary exited, how long its stdout/stderr may take to close. */
const DRAIN_MS = 2000;
/** Tasks longer than this go through `--task-file` (Linux caps one argv string at 128 KiB). */
const TASK_ARG_MAX_BYTES = 64 * 1024;
/** Activity items kept in the live tail. */
export const ACTIVITY_KEEP = 12;
/** One activity item's text is cut to this many characters. */
const ACTIVITY_TEXT_MAX = 2000;
/** Bounds for what is read from the binary. */
const STDOUT_LINE_MAX = 64 * 1024 * 1024;
const STDERR_KEEP = 16 * 1024;

// ---------------------------------------------------------------------------------------------
// Types

export interface DispatchParams {
	agent: string;
	task: string;
	scope?: string;
	model?: string;
	effort?: string;
	/** Absolute working directory for the agent. */
	cwd: string;
}

export interface ActivityItem {
	kind: "command" | "text" | "activity" | "notice" | "error";
	text: string;
	/** Command id (to update a started command in place). */
	id?: string;
	status?: CommandStatus;
	exitCode?: number;
	/** For `activity`: reasoning, plan, file-change, tool. For `notice`: info, warning. */
	label?: string;
}

/** A snapshot of a running dispatch, handed to the progress callback. */
export interface Progress {
	identity: Identity;
	activity: ActivityItem[];
	eventCount: number;
	sessionId: string | null;
	program: string | null;
	started: boolean;
	elapsedMs: number;
}

/** The one final outcome of a dispatch, as the extension sees it. */
export interface Outcome {
	result: DispatchResult;
	activity: ActivityItem[];
	eventCount: number;
	program: string | null;
	/** True when the binary wrote no result line and this result was made up by the bridge. */
	synthesized: boolean;
	/** True when cancellation was requested (abort, shutdown). */
	cancelRequested: boolean;
	/** The binary's pid, when it was started. */
	pid: number | null;
	/** The binary's own stderr (not the agent CLI's), tail. */
	dispatcherStderr: string;
	/** Protocol problems seen on the binary's stdout. */
	protocolErrors: string[];
}

export interface StartOptions {
	signal?: AbortSignal;
	onProgress?: (p: Progress) => void;
	env?: NodeJS.ProcessEnv;
	updateIntervalMs?: number;
	killGraceMs?: number;
	registry?: ProcessRegistry;
}

// ---------------------------------------------------------------------------------------------
// Coalescing

/**
 * Calls `emit` at most once per `intervalMs`, however often `poke` is called: the first poke after a
 * quiet period emits at once, later ones are folded into one trailing emit. `emit` builds its own
 * snapshot, so the trailing call always carries the newest state.
 */
export class Coalescer {
	private last = Number.NEGATIVE_INFINITY;
	private timer: NodeJS.Timeout | undefined;
	private stopped = false;
	private readonly emit: () => void;
	private readonly intervalMs: number;
	constructor(emit: () => void, intervalMs: number = UPDATE_INTERVAL_MS) {
		this.emit = emit;
		this.intervalMs = intervalMs;
	}

	poke(): void {
		if (this.stopped || this.timer) return;
		const wait = this.last + this.intervalMs - Date.now();
		if (wait <= 0) {
			this.fire();
		} else {
			this.timer = setTimeout(() => {
				this.timer = undefined;
				this.fire();
			}, wait);
		}
	}

	stop(): void {
		this.stopped = true;
		if (this.timer) clearTimeout(this.timer);
		this.timer = undefined;
	}

	private fire(): void {
		if (this.stopped) return;
		this.last = Date.now();
		try {
			this.emit();
		} catch {
			// A failing consumer must not break the dispatch.
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Registry of live processes (dispatches and discovery runs)

interface Cancellable {
	cancel(): Promise<unknown>;
}

/**
 * Every process the extension started and has not finished cleaning up. `shutdown` cancels them all
 * through their own idempotent cancel and waits; after it, nothing new starts until `reopen`.
 */
export class ProcessRegistry {
	private readonly live = new Set<Cancellable>();
	private closed = false;

	get size(): number {
		return this.live.size;
	}
	get isClosed(): boolean {
		return this.closed;
	}
	add(c: Cancellable): void {
		this.live.add(c);
	}
	delete(c: Cancellable): void {
		this.live.delete(c);
	}
	reopen(): void {
		this.closed = false;
	}
	async shutdown(): Promise<void> {
		this.closed = true;
		// Entries remove themselves only after cleanup, so waiting on every cancel is waiting on all of it.
		await Promise.allSettled([...this.live].map((c) => c.cancel()));
	}
}

/** The process-wide default registry. */
export const registry = new ProcessRegistry();

// ---------------------------------------------------------------------------------------------
// Killing

function signalPid(pid: number, sig: NodeJS.Signals): void {
	if (!Number.isInteger(pid) || pid <= 1) return; // never pid 0/1 or a process group by accident
	try {
		process.kill(pid, sig);
	} catch {
		// already gone
	}
}

function signalGroup(pgid: number, sig: NodeJS.Signals): void {
	if (!Number.isInteger(pgid) || pgid <= 1) return;
	if (pgid === ownPgid()) return; // never Pi's own group
	try {
		process.kill(-pgid, sig);
	} catch {
		// already gone
	}
}

let cachedPgid: number | null | undefined;
function ownPgid(): number | null {
	if (cachedPgid === undefined) cachedPgid = readPgid(process.pid);
	return cachedPgid;
}

/** Field 5 of /proc/PID/stat (after the parenthesised command name). Linux only; null elsewhere. */
export function readPgid(pid: number): number | null {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
		const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
		const pgid = Number(rest[2]);
		return Number.isInteger(pgid) ? pgid : null;
	} catch {
		return null;
	}
}

/** All descendants of `pid` (Linux /proc; empty elsewhere). */
export function descendants(pid: number): number[] {
	const out: number[] = [];
	const queue = [pid];
	while (queue.length) {
		const p = queue.shift()!;
		let tasks: string[] = [];
		try {
			tasks = readdirSync(`/proc/${p}/task`);
		} catch {
			continue;
		}
		for (const t of tasks) {
			let children = "";
			try {
				children = readFileSync(`/proc/${p}/task/${t}/children`, "utf8");
			} catch {
				continue;
			}
			for (const c of children.split(" ")) {
				const n = Number(c);
				if (Number.isInteger(n) && n > 1 && !out.includes(n)) {
					out.push(n);
					queue.push(n);
				}
			}
		}
	}
	return out;
}

// ---------------------------------------------------------------------------------------------
// One dispatch

function cut(s: string, max: number): string {
	return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

function keepTail(s: string, max: number): string {
	return s.length <= max ? s : s.slice(s.length - max);
}

function buildArgs(p: DispatchParams, taskFile: string | null): string[] {
	const args = ["run", "--agent", p.agent, "--lifeline", "--cwd", p.cwd];
	if (p.model) args.push("--model", p.model);
	if (p.effort) args.push("--effort", p.effort);
	if (p.scope) args.push("--scope", p.scope);
	if (taskFile) args.push("--task-file", taskFile);
	else args.push("--", p.task);
	return args;
}

/** A dispatch in flight. `done` always resolves (never rejects) with the final outcome. */
export class RunningDispatch implements Cancellable {
	readonly done: Promise<Outcome>;
	readonly params: DispatchParams;
	private child: ChildProcess | null = null;
	private identity: Identity;
	private activity: ActivityItem[] = [];
	private eventCount = 0;
	private sessionId: string | null = null;
	private program: string | null = null;
	private started = false;
	private result: DispatchResult | null = null;
	private protocolErrors: string[] = [];
	private stderr = "";
	private cancelRequested = false;
	private killTimer: NodeJS.Timeout | undefined;
	private readonly t0 = Date.now();
	private readonly coalescer: Coalescer;
	private resolveDone!: (o: Outcome) => void;
	private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null = null;
	private spawnError: Error | null = null;
	private taskDir: string | null = null;

	private readonly bin: string;
	private readonly opts: StartOptions;

	constructor(bin: string, params: DispatchParams, opts: StartOptions = {}) {
		this.bin = bin;
		this.opts = opts;
		this.params = params;
		this.identity = pendingIdentity(params.agent, params.model, params.effort);
		this.coalescer = new Coalescer(
			() => this.opts.onProgress?.(this.snapshot()),
			opts.updateIntervalMs ?? UPDATE_INTERVAL_MS,
		);
		this.done = new Promise<Outcome>((r) => {
			this.resolveDone = r;
		});
		this.begin();
	}

	get pid(): number | null {
		return this.child?.pid ?? null;
	}

	/** Idempotent: request cancellation and wait for the final outcome. */
	cancel(): Promise<Outcome> {
		if (!this.cancelRequested) {
			this.cancelRequested = true;
			const pid = this.child?.pid;
			if (pid && this.exitInfo === null) {
				signalPid(pid, "SIGTERM");
				const grace = this.opts.killGraceMs ?? KILL_GRACE_MS;
				this.killTimer = setTimeout(() => this.forceKill(), grace);
			}
		}
		return this.done;
	}

	snapshot(): Progress {
		return {
			identity: structuredClone(this.identity),
			activity: this.activity.map((a) => ({ ...a })),
			eventCount: this.eventCount,
			sessionId: this.sessionId,
			program: this.program,
			started: this.started,
			elapsedMs: Date.now() - this.t0,
		};
	}

	private begin(): void {
		const reg = this.opts.registry ?? registry;
		const signal = this.opts.signal;
		if (reg.isClosed) {
			this.cancelRequested = true;
			this.finish("Pi is shutting down; no new dispatch was started.");
			return;
		}
		if (signal?.aborted) {
			this.cancelRequested = true;
			this.finish("The dispatch was cancelled before it started.");
			return;
		}
		let taskFile: string | null = null;
		try {
			if (Buffer.byteLength(this.params.task, "utf8") > TASK_ARG_MAX_BYTES) {
				this.taskDir = mkdtempSync(join(tmpdir(), "agent-dispatch-task-"));
				taskFile = join(this.taskDir, "task.txt");
				writeFileSync(taskFile, this.params.task, { mode: 0o600 });
			}
			this.child = spawn(this.bin, buildArgs(this.params, taskFile), {
				stdio: ["pipe", "pipe", "pipe"],
				detached: true, // own process group: terminal signals meant for Pi do not reach it
				env: this.opts.env ?? process.env,
			});
		} catch (e) {
			this.spawnError = e instanceof Error ? e : new Error(String(e));
			this.finish();
			return;
		}
		reg.add(this);
		const child = this.child;

		// The lifeline: open, never written. Errors on it (EPIPE after the binary exits) are expected.
		child.stdin?.on("error", () => {});

		const decoder = new StringDecoder("utf8"); // a UTF-8 sequence split across chunks stays whole
		let buf = "";
		child.stdout?.on("data", (chunk: Buffer) => {
			const scanFrom = buf.length; // the old part holds no newline: never rescan it
			buf += decoder.write(chunk);
			let start = 0;
			let i = buf.indexOf("\n", scanFrom);
			while (i >= 0) {
				this.onLine(buf.slice(start, i));
				start = i + 1;
				i = buf.indexOf("\n", start);
			}
			buf = start > 0 ? buf.slice(start) : buf;
			if (buf.length > STDOUT_LINE_MAX) {
				this.protocolErrors.push(`a protocol line exceeded ${STDOUT_LINE_MAX} characters`);
				buf = "";
			}
		});
		child.stdout?.on("end", () => {
			buf += decoder.end();
			if (buf) this.onLine(buf); // a final line without a newline still counts
			buf = "";
		});
		const errDecoder = new StringDecoder("utf8");
		child.stderr?.on("data", (chunk: Buffer) => {
			this.stderr = keepTail(this.stderr + errDecoder.write(chunk), STDERR_KEEP);
		});

		let drainTimer: NodeJS.Timeout | undefined;
		child.on("error", (e) => {
			// Spawn failure (ENOENT, EACCES): no exit/close may follow.
			this.spawnError = e;
			if (!child.pid) this.finishAfterCleanup();
		});
		child.on("exit", (code, sig) => {
			this.exitInfo = { code, signal: sig };
			// Normally 'close' follows at once; never wait forever on pipes something else holds.
			drainTimer = setTimeout(() => {
				child.stdout?.destroy();
				child.stderr?.destroy();
				this.finishAfterCleanup();
			}, DRAIN_MS);
		});
		child.on("close", () => {
			if (drainTimer) clearTimeout(drainTimer);
			this.finishAfterCleanup();
		});

		if (signal) {
			const onAbort = () => void this.cancel();
			signal.addEventListener("abort", onAbort, { once: true });
			void this.done.then(() => signal.removeEventListener("abort", onAbort));
			if (signal.aborted) void this.cancel(); // aborted between the check above and now
		}
		this.coalescer.poke();
	}

	private onLine(raw: string): void {
		let line: ReturnType<typeof parseLine>;
		try {
			line = parseLine(raw);
		} catch (e) {
			const msg = e instanceof Error ? e.message : String(e);
			this.protocolErrors.push(msg);
			if (/protocol/.test(msg) && !this.cancelRequested) void this.cancel(); // cannot understand it
			return;
		}
		if (!line) return;
		switch (line.type) {
			case "started":
				this.started = true;
				this.identity = line.identity;
				this.program = line.program;
				break;
			case "event":
				this.eventCount++;
				this.onEvent(line.event);
				break;
			case "result": {
				const { type: _t, protocol: _p, ...result } = line;
				this.result = result;
				this.identity = result.identity;
				// The dispatch is over: release the lifeline. (The binary may also wait for this EOF
				// before it exits; closing it after the result line never cancels anything.)
				this.child?.stdin?.destroy();
				break;
			}
			default:
				return; // unknown line types are ignored (forward compatibility)
		}
		this.coalescer.poke();
	}

	private onEvent(ev: StreamEvent): void {
		switch (ev.type) {
			case "text":
				if (ev.text.trim()) this.push({ kind: "text", text: cut(ev.text, ACTIVITY_TEXT_MAX) });
				break;
			case "command": {
				const item: ActivityItem = {
					kind: "command",
					text: cut(ev.command, ACTIVITY_TEXT_MAX),
					status: ev.status,
					id: ev.id,
					exitCode: ev.exitCode,
				};
				const prev = ev.id ? this.activity.findIndex((a) => a.kind === "command" && a.id === ev.id) : -1;
				if (prev >= 0) this.activity[prev] = item;
				else this.push(item);
				break;
			}
			case "activity":
				this.push({ kind: "activity", label: ev.kind, text: cut(ev.text, ACTIVITY_TEXT_MAX) });
				break;
			case "notice":
				this.push({ kind: "notice", label: ev.level, text: cut(ev.message, ACTIVITY_TEXT_MAX) });
				break;
			case "error":
				this.push({ kind: "error", text: cut(ev.message, ACTIVITY_TEXT_MAX) });
				break;
			case "metadata": {
				if (ev.sessionId) this.sessionId = ev.sessionId;
				const c = this.identity.confirmed;
				if (ev.model) c.model = { state: "confirmed", value: ev.model };
				if (ev.effort) c.effort = { state: "confirmed", value: ev.effort };
				break;
			}
			case "done":
				break;
			default:
				break; // unknown event types: ignored
		}
	}

	private push(item: ActivityItem): void {
		this.activity.push(item);
		if (this.activity.length > ACTIVITY_KEEP) this.activity.splice(0, this.activity.length - ACTIVITY_KEEP);
	}

	private forceKill(): void {
		const pid = this.child?.pid;
		if (!pid || this.exitInfo !== null) return;
		// The binary did not clean up in time: kill it and every process group below it.
		const groups = new Set<number>();
		for (const d of descendants(pid)) {
			const g = readPgid(d);
			if (g !== null) groups.add(g);
			signalPid(d, "SIGKILL");
		}
		for (const g of groups) signalGroup(g, "SIGKILL");
		signalGroup(pid, "SIGKILL");
		signalPid(pid, "SIGKILL");
	}

	private finished = false;
	private finishAfterCleanup(): void {
		if (this.finished) return;
		if (this.killTimer) clearTimeout(this.killTimer);
		this.child?.stdin?.destroy(); // close the lifeline
		(this.opts.registry ?? registry).delete(this);
		this.finish();
	}

	private finish(earlyCancelMessage?: string): void {
		if (this.finished) return;
		this.finished = true;
		this.coalescer.stop();
		if (this.taskDir) {
			try {
				rmSync(this.taskDir, { recursive: true, force: true });
			} catch {
				// best effort
			}
		}
		const result = this.result ?? this.synthesize(earlyCancelMessage);
		this.resolveDone({
			result,
			activity: this.activity,
			eventCount: this.eventCount,
			program: this.program,
			synthesized: this.result === null,
			cancelRequested: this.cancelRequested,
			pid: this.child?.pid ?? null,
			dispatcherStderr: this.stderr,
			protocolErrors: this.protocolErrors,
		});
	}

	private synthesize(earlyCancelMessage?: string): DispatchResult {
		const identity = structuredClone(this.identity);
		for (const k of ["model", "effort"] as const) {
			if (identity.confirmed[k].state === "pending") identity.confirmed[k] = { state: "not-reported" };
		}
		let kind: string;
		let message: string;
		if (earlyCancelMessage !== undefined) {
			kind = "cancelled";
			message = earlyCancelMessage;
		} else if (this.spawnError) {
			kind = "dispatcher-failed";
			message = `could not start ${this.bin}: ${this.spawnError.message}`;
		} else {
			const how = this.exitInfo?.signal
				? `was killed by ${this.exitInfo.signal}`
				: `exited with code ${this.exitInfo?.code ?? "?"}`;
			kind = this.cancelRequested ? "cancelled" : "dispatcher-failed";
			message = `agent-dispatch ${how} without writing a result line`;
			if (this.protocolErrors.length) message += ` (${this.protocolErrors[0]})`;
		}
		const lastText = [...this.activity].reverse().find((a) => a.kind === "text")?.text ?? "";
		return {
			ok: false,
			text: lastText,
			usage: null,
			identity,
			sessionId: this.sessionId,
			failure: { kind, message },
			exit: this.exitInfo
				? { code: this.exitInfo.code ?? undefined, signal: signalNumber(this.exitInfo.signal) }
				: null,
			stderrTail: this.stderr,
			durationMs: Date.now() - this.t0,
			checkBypassed: false,
		};
	}
}

function signalNumber(sig: NodeJS.Signals | null): number | undefined {
	if (!sig) return undefined;
	const n = (osConstants.signals as Record<string, number>)[sig];
	return typeof n === "number" ? n : undefined;
}

/** Start a dispatch. The returned object's `done` always resolves. */
export function startDispatch(bin: string, params: DispatchParams, opts: StartOptions = {}): RunningDispatch {
	return new RunningDispatch(bin, params, opts);
}

// ---------------------------------------------------------------------------------------------
// Discovery runs (`agents --json`, `models AGENT --json`)

export interface Captured {
	code: number | null;
	signal: NodeJS.Signals | null;
	stdout: string;
	stderr: string;
	timedOut: boolean;
}

/** Run the binary to completion, capturing output; tracked in the registry and killed on shutdown. */
export function runCaptured(
	bin: string,
	args: string[],
	opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number; signal?: AbortSignal; registry?: ProcessRegistry } = {},
): Promise<Captured> {
	const reg = opts.registry ?? registry;
	return new Promise<Captured>((resolvePromise, reject) => {
		if (reg.isClosed) return reject(new Error("Pi is shutting down"));
		if (opts.signal?.aborted) return reject(new Error("cancelled"));
		let child: ChildProcess;
		try {
			child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"], detached: true, env: opts.env ?? process.env });
		} catch (e) {
			return reject(e);
		}
		let stdout = "";
		let stderr = "";
		let timedOut = false;
		const out = new StringDecoder("utf8");
		const err = new StringDecoder("utf8");
		child.stdout?.on("data", (c: Buffer) => (stdout = keepTail(stdout + out.write(c), 16 * 1024 * 1024)));
		child.stderr?.on("data", (c: Buffer) => (stderr = keepTail(stderr + err.write(c), STDERR_KEEP)));
		let settled = false;
		let closeWaiter: ((v: unknown) => void) | undefined;
		const closed = new Promise((r) => (closeWaiter = r));
		const entry: Cancellable = {
			cancel: () => {
				if (child.pid && child.exitCode === null && child.signalCode === null) signalGroup(child.pid, "SIGKILL");
				return closed;
			},
		};
		reg.add(entry);
		const timer = opts.timeoutMs
			? setTimeout(() => {
					timedOut = true;
					void entry.cancel();
				}, opts.timeoutMs)
			: undefined;
		const onAbort = () => void entry.cancel();
		opts.signal?.addEventListener("abort", onAbort, { once: true });
		const done = (f: () => void) => {
			if (settled) return;
			settled = true;
			if (timer) clearTimeout(timer);
			opts.signal?.removeEventListener("abort", onAbort);
			reg.delete(entry);
			closeWaiter?.(undefined);
			f();
		};
		child.on("error", (e) => done(() => reject(e)));
		child.on("close", (code, sig) =>
			done(() => resolvePromise({ code, signal: sig, stdout: stdout + out.end(), stderr: stderr + err.end(), timedOut })),
		);
	});
}

/** `agent-dispatch agents --json`. */
export async function listAgents(bin: string, opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<AgentInfo[]> {
	const r = await runCaptured(bin, ["agents", "--json"], { timeoutMs: opts.timeoutMs ?? 30_000, env: opts.env });
	if (r.timedOut) throw new Error(`${bin} agents --json timed out`);
	if (r.code !== 0) throw new Error(`${bin} agents --json failed (${r.code ?? r.signal}): ${r.stderr.trim()}`);
	const parsed = JSON.parse(r.stdout) as AgentInfo[];
	if (!Array.isArray(parsed)) throw new Error(`${bin} agents --json did not print a list`);
	return parsed;
}

/**
 * `agent-dispatch check [AGENT…] --json`: prove read-only on this machine. Exit 1 only means some
 * agent failed; the reports are printed either way.
 */
export async function runCheck(
	bin: string,
	agents: string[],
	opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<CheckReport[]> {
	const r = await runCaptured(bin, ["check", ...agents, "--json"], {
		timeoutMs: opts.timeoutMs ?? 300_000,
		env: opts.env,
		signal: opts.signal,
	});
	if (r.timedOut) throw new Error(`${bin} check timed out`);
	if (r.code !== 0 && r.code !== 1) {
		const msg = r.stderr.trim().replace(/^agent-dispatch:\s*/, "");
		throw new Error(msg || `${bin} check exited with ${r.code ?? r.signal}`);
	}
	const parsed = JSON.parse(r.stdout) as CheckReport[];
	if (!Array.isArray(parsed)) throw new Error(`${bin} check --json did not print a list`);
	return parsed;
}

/** `agent-dispatch models AGENT --json`: the catalogue, or an error carrying the binary's own message. */
export async function listModels(
	bin: string,
	agent: string,
	opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<ModelCatalogue> {
	const r = await runCaptured(bin, ["models", agent, "--json"], {
		timeoutMs: opts.timeoutMs ?? 60_000,
		env: opts.env,
		signal: opts.signal,
	});
	if (r.timedOut) throw new Error(`${bin} models ${agent} --json timed out`);
	if (r.code !== 0) {
		const msg = r.stderr.trim().replace(/^Error:\s*/, "");
		throw new Error(msg || `${bin} models ${agent} exited with ${r.code ?? r.signal}`);
	}
	return JSON.parse(r.stdout) as ModelCatalogue;
}
