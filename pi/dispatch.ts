/**
 * One running dispatch: start `agent-dispatch run`, turn its protocol lines into a live snapshot
 * (identity, activity tail) handed to a coalesced progress callback, cancel on request, and always
 * come back with one final outcome — the binary's own `result` line, or a failure made up here when
 * the binary could not give one (it could not be started, it crashed, it had to be killed).
 *
 * The binary is started with `--lifeline`: its stdin is a pipe kept open and never written. Cancel
 * is SIGTERM to the binary, which stops the agent CLI's tree and still writes its result line; see
 * `process.ts` for the last resort.
 */

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { constants as osConstants, tmpdir } from "node:os";
import { join } from "node:path";

import { type ActivityItem, ActivityTail } from "./activity.ts";
import { Coalescer, UPDATE_INTERVAL_MS } from "./coalesce.ts";
import { BinaryProcess, type Cancellable, type Ended, KILL_GRACE_MS, type ProcessRegistry, registry } from "./process.ts";
import {
	type DispatchResult,
	type Failure,
	type Identity,
	type Line,
	parseLine,
	pendingIdentity,
	settle,
} from "./protocol.ts";
import { collectTail, readLines } from "./streams.ts";

/** Tasks longer than this go through `--task-file` (Linux caps one argv string at 128 KiB). */
const TASK_ARG_MAX_BYTES = 64 * 1024;
/** The binary's own stderr kept for diagnostics. */
const STDERR_KEEP = 16 * 1024;

export interface DispatchParams {
	agent: string;
	task: string;
	scope?: string;
	model?: string;
	effort?: string;
	/** Absolute working directory for the agent. */
	cwd: string;
	/** Wall-clock limit (`90s`, `15m`, `off`); the binary's default (30 min, or its config) when absent. */
	timeout?: string;
	/** Token budget: the run fails with `budget-exceeded` at the first usage report over it. */
	maxTokens?: number;
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

/** The one final outcome of a dispatch, as the extension sees it. Its identity is settled. */
export interface Outcome {
	result: DispatchResult;
	activity: ActivityItem[];
	eventCount: number;
	program: string | null;
	/** True when the binary wrote no result line and this result was made up by the extension. */
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

/**
 * `agent-dispatch run` for these parameters: `--lifeline` for a dispatch the extension holds,
 * `--background` for one handed to a job (`jobs.ts`). Everything else is the same.
 */
export function buildArgs(p: DispatchParams, taskFile: string | null, mode: "lifeline" | "background" = "lifeline"): string[] {
	const args = ["run", "--agent", p.agent, `--${mode}`, "--cwd", p.cwd];
	if (p.model) args.push("--model", p.model);
	if (p.effort) args.push("--effort", p.effort);
	if (p.scope) args.push("--scope", p.scope);
	if (p.timeout) args.push("--timeout", p.timeout);
	if (p.maxTokens !== undefined) args.push("--max-tokens", String(p.maxTokens));
	if (taskFile) args.push("--task-file", taskFile);
	else args.push("--", p.task);
	return args;
}

/** A dispatch in flight. `done` always resolves (never rejects) with the final outcome. */
export class RunningDispatch implements Cancellable {
	readonly done: Promise<Outcome>;
	readonly params: DispatchParams;
	private proc: BinaryProcess | null = null;
	private stderr: { text(): string } = { text: () => "" };
	private identity: Identity;
	private readonly tail = new ActivityTail();
	private eventCount = 0;
	private sessionId: string | null = null;
	private program: string | null = null;
	private started = false;
	private result: DispatchResult | null = null;
	private protocolErrors: string[] = [];
	private cancelRequested = false;
	private finished = false;
	private readonly t0 = Date.now();
	private readonly coalescer: Coalescer;
	private resolveDone!: (o: Outcome) => void;
	private taskDir: string | null = null;

	private readonly bin: string;
	private readonly opts: StartOptions;
	private readonly registry: ProcessRegistry;

	constructor(bin: string, params: DispatchParams, opts: StartOptions = {}) {
		this.bin = bin;
		this.opts = opts;
		this.params = params;
		this.registry = opts.registry ?? registry;
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
		return this.proc?.pid ?? null;
	}

	/** Idempotent: request cancellation and wait for the final outcome. */
	cancel(): Promise<Outcome> {
		if (!this.cancelRequested) {
			this.cancelRequested = true;
			this.proc?.stop("SIGTERM", this.opts.killGraceMs ?? KILL_GRACE_MS);
		}
		return this.done;
	}

	snapshot(): Progress {
		return {
			identity: structuredClone(this.identity),
			activity: this.tail.items.map((a) => ({ ...a })),
			eventCount: this.eventCount,
			sessionId: this.sessionId,
			program: this.program,
			started: this.started,
			elapsedMs: Date.now() - this.t0,
		};
	}

	private begin(): void {
		const signal = this.opts.signal;
		if (this.registry.isClosed) return this.refuse("Pi is shutting down; no new dispatch was started.");
		if (signal?.aborted) return this.refuse("The dispatch was cancelled before it started.");
		let proc: BinaryProcess;
		try {
			proc = new BinaryProcess(this.bin, buildArgs(this.params, this.writeTaskFile()), {
				lifeline: true,
				env: this.opts.env,
			});
		} catch (e) {
			const error = e instanceof Error ? e : new Error(String(e));
			return this.finish({ exit: null, spawnError: error });
		}
		this.proc = proc;
		this.registry.add(this);
		if (proc.stdout) {
			readLines(
				proc.stdout,
				(l) => this.onLine(l),
				(max) => this.protocolErrors.push(`a protocol line exceeded ${max} characters`),
			);
		}
		if (proc.stderr) this.stderr = collectTail(proc.stderr, STDERR_KEEP);
		void proc.ended.then((ended) => {
			this.registry.delete(this);
			this.finish(ended);
		});
		if (signal) {
			const onAbort = () => void this.cancel();
			signal.addEventListener("abort", onAbort, { once: true });
			void this.done.then(() => signal.removeEventListener("abort", onAbort));
			if (signal.aborted) void this.cancel(); // aborted between the check above and now
		}
		this.coalescer.poke();
	}

	/** A task too long for argv goes to a private temporary file, removed when the dispatch ends. */
	private writeTaskFile(): string | null {
		const t = taskFile(this.params.task);
		this.taskDir = t?.dir ?? null;
		return t?.file ?? null;
	}

	private onLine(raw: string): void {
		let line: Line | undefined;
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
			case "event": {
				this.eventCount++;
				const ev = line.event;
				if (ev.type === "metadata") {
					if (ev.sessionId) this.sessionId = ev.sessionId;
					const c = this.identity.confirmed;
					if (ev.model) c.model = { state: "confirmed", value: ev.model };
					if (ev.effort) c.effort = { state: "confirmed", value: ev.effort };
				} else {
					this.tail.add(ev);
				}
				break;
			}
			case "result": {
				const { type: _t, protocol: _p, ...result } = line;
				this.result = result;
				this.identity = result.identity;
				// The dispatch is over: release the lifeline. (The binary may also wait for this EOF
				// before it exits; closing it after the result line never cancels anything.)
				this.proc?.closeLifeline();
				break;
			}
			default:
				return; // unknown line types are ignored (forward compatibility)
		}
		this.coalescer.poke();
	}

	/** Nothing was started: the session is shutting down, or the caller aborted already. */
	private refuse(message: string): void {
		this.cancelRequested = true;
		this.finish(null, { kind: "cancelled", message });
	}

	private finish(ended: Ended | null, refusal?: Failure): void {
		if (this.finished) return;
		this.finished = true;
		this.coalescer.stop();
		if (this.taskDir) {
			try {
				rmSync(this.taskDir, { recursive: true, force: true });
			} catch {
				// best effort: the outcome matters more than a leftover temporary file
			}
		}
		const result = this.result ?? this.synthesize(ended, refusal);
		this.resolveDone({
			result: { ...result, identity: settle(result.identity) },
			activity: this.tail.items,
			eventCount: this.eventCount,
			program: this.program,
			synthesized: this.result === null,
			cancelRequested: this.cancelRequested,
			pid: this.pid,
			dispatcherStderr: this.stderr.text(),
			protocolErrors: this.protocolErrors,
		});
	}

	/** The result of a dispatch whose binary wrote none. */
	private synthesize(ended: Ended | null, refusal?: Failure): DispatchResult {
		return {
			ok: false,
			text: this.tail.lastText(),
			usage: null,
			identity: structuredClone(this.identity),
			sessionId: this.sessionId,
			failure: refusal ?? this.failureWithoutResult(ended),
			exit: ended?.exit ? { code: ended.exit.code ?? undefined, signal: signalNumber(ended.exit.signal) } : null,
			stderrTail: this.stderr.text(),
			durationMs: Date.now() - this.t0,
			checkBypassed: false,
		};
	}

	private failureWithoutResult(ended: Ended | null): Failure {
		if (ended?.spawnError) {
			return { kind: "dispatcher-failed", message: `could not start ${this.bin}: ${ended.spawnError.message}` };
		}
		const exit = ended?.exit;
		const how = exit?.signal ? `was killed by ${exit.signal}` : `exited with code ${exit?.code ?? "?"}`;
		let message = `agent-dispatch ${how} without writing a result line`;
		if (this.protocolErrors.length) message += ` (${this.protocolErrors[0]})`;
		return { kind: this.cancelRequested ? "cancelled" : "dispatcher-failed", message };
	}
}

function signalNumber(sig: NodeJS.Signals | null): number | undefined {
	if (!sig) return undefined;
	const n = (osConstants.signals as Record<string, number>)[sig];
	return typeof n === "number" ? n : undefined;
}

/**
 * A task too long for argv, in a private temporary file (`dir` is for the caller to remove once the
 * binary has read it); null when the task fits in argv.
 */
export function taskFile(task: string): { dir: string; file: string } | null {
	if (Buffer.byteLength(task, "utf8") <= TASK_ARG_MAX_BYTES) return null;
	const dir = mkdtempSync(join(tmpdir(), "agent-dispatch-task-"));
	const file = join(dir, "task.txt");
	writeFileSync(file, task, { mode: 0o600 });
	return { dir, file };
}

/** Start a dispatch. The returned object's `done` always resolves. */
export function startDispatch(bin: string, params: DispatchParams, opts: StartOptions = {}): RunningDispatch {
	return new RunningDispatch(bin, params, opts);
}
