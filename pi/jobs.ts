/**
 * Background jobs from this session: hand a dispatch to `agent-dispatch run --background`, wait for
 * the job (`jobs wait ID --json`, a captured run) and report how it ended exactly once; list, show,
 * cancel and keep jobs; at session shutdown cancel the ones the person did not keep.
 *
 * The job store is the binary's. Whether a job runs, its cancellation (the whole tree), its result
 * and whether it was lost all come from there; this module only remembers which jobs this session
 * started, which of them are kept, and whom to tell when one ends. Node built-ins only.
 */

import { rmSync } from "node:fs";

import { ActivityTail } from "./activity.ts";
import { type Captured, runCaptured } from "./captured.ts";
import { buildArgs, type DispatchParams, type Outcome, taskFile } from "./dispatch.ts";
import type { ProcessRegistry } from "./process.ts";
import {
	type DispatchResult,
	type Failure,
	type Identity,
	type JobState,
	type JobView,
	type Line,
	parseLine,
	pendingIdentity,
	settle,
} from "./protocol.ts";

/** A job this session started. */
export interface TrackedJob {
	id: string;
	params: DispatchParams;
	/** Kept: it is not cancelled when this session ends. */
	keep: boolean;
	/** When `run --background` returned (ms since the epoch). */
	submittedAt: number;
	/** The last state read from the store (`running` until the wait ends). */
	state: JobState;
	/** How it ended, once it did. */
	outcome?: Outcome;
	/** Someone in this session asked for its cancellation (the person, or shutdown). */
	cancelledHere: boolean;
}

/** What `submit` came back with: the job, or the binary's refusal (bad input starts nothing). */
export type Submitted = { kind: "job"; job: TrackedJob } | { kind: "refused"; outcome: Outcome };

/** A job of this session ended; `outcome` is its result (or a `job-lost` failure). */
export type JobEndListener = (job: TrackedJob, outcome: Outcome) => void;

export interface TrackerOptions {
	/** The binary's path (throws when there is none: the caller reports that). */
	binary: () => string;
	registry: ProcessRegistry;
	env?: NodeJS.ProcessEnv;
}

/** An outcome built from a result read back from the job store (no process of ours ran it). */
export function outcomeOf(result: DispatchResult, extra: Partial<Outcome> = {}): Outcome {
	return {
		result: { ...result, identity: settle(result.identity) },
		activity: [],
		eventCount: 0,
		program: null,
		synthesized: false,
		cancelRequested: false,
		pid: null,
		dispatcherStderr: "",
		protocolErrors: [],
		...extra,
	};
}

/** A result made up here (the binary wrote none). */
function madeUp(identity: Identity, failure: Failure, stderr: string, text = ""): DispatchResult {
	return {
		ok: false,
		text,
		usage: null,
		identity,
		sessionId: null,
		failure,
		exit: null,
		stderrTail: stderr,
		durationMs: 0,
		checkBypassed: false,
	};
}

function parseAll(stdout: string): Line[] {
	const out: Line[] = [];
	for (const raw of stdout.split("\n")) {
		try {
			const l = parseLine(raw);
			if (l) out.push(l);
		} catch {
			// not a protocol line: diagnostics are on stderr
		}
	}
	return out;
}

/**
 * A finished job as an outcome: its result from the store, and the activity, program and session
 * replayed from its protocol lines (`jobs logs ID`). No result: the job was lost.
 */
export function jobOutcome(params: DispatchParams, view: JobView | null, log: string, stderr: string): Outcome {
	const tail = new ActivityTail();
	let eventCount = 0;
	let program: string | null = null;
	let identity = pendingIdentity(params.agent, params.model, params.effort);
	let fromLog: DispatchResult | null = null;
	for (const l of parseAll(log)) {
		if (l.type === "started") {
			program = l.program;
			identity = l.identity;
		} else if (l.type === "event") {
			eventCount++;
			tail.add(l.event);
		} else if (l.type === "result") {
			const { type: _t, protocol: _p, ...r } = l;
			fromLog = r;
		}
	}
	let result: DispatchResult | null = null;
	if (view?.result) {
		const { type: _t, protocol: _p, ...r } = view.result;
		result = r;
	}
	result ??= fromLog;
	const extra = { activity: tail.items, eventCount, program, dispatcherStderr: stderr };
	if (result) return outcomeOf(result, extra);
	const state = view?.state ?? "unknown";
	const why =
		state === "lost"
			? "its worker ended without a result (the job store says lost; its process tree went with it)"
			: `no result could be read (state ${state})`;
	const id = view?.id ?? "?";
	return outcomeOf(madeUp(identity, { kind: "job-lost", message: `background job ${id}: ${why}` }, stderr.trim(), tail.lastText()), {
		...extra,
		synthesized: true,
	});
}

/** The jobs this session started, and the binary's job commands. */
export class JobTracker {
	private readonly jobs = new Map<string, TrackedJob>();
	private readonly listeners: JobEndListener[] = [];
	private closed = false;
	private waiters = new AbortController();
	private readonly opts: TrackerOptions;

	constructor(opts: TrackerOptions) {
		this.opts = opts;
	}

	/** Tell `listener` about every job of this session that ends (not after shutdown). */
	onEnd(listener: JobEndListener): void {
		this.listeners.push(listener);
	}

	get(id: string): TrackedJob | undefined {
		return this.jobs.get(id);
	}

	/** This session's jobs, oldest first. */
	all(): TrackedJob[] {
		return [...this.jobs.values()];
	}

	/**
	 * Start `p` as a background job. Comes back as soon as the binary printed the job line (or its
	 * refusal); the job is then waited for here and reported through `onEnd`.
	 */
	async submit(p: DispatchParams, keep: boolean): Promise<Submitted> {
		const identity = settle(pendingIdentity(p.agent, p.model, p.effort));
		if (this.closed) {
			const r = madeUp(identity, { kind: "cancelled", message: "Pi is shutting down; no job was started." }, "");
			return { kind: "refused", outcome: outcomeOf(r, { cancelRequested: true, synthesized: true }) };
		}
		const file = taskFile(p.task);
		let out: Captured;
		try {
			out = await this.run(buildArgs(p, file?.file ?? null, "background"));
		} catch (e) {
			const message = `could not start ${this.opts.binary()}: ${e instanceof Error ? e.message : String(e)}`;
			return { kind: "refused", outcome: outcomeOf(madeUp(identity, { kind: "dispatcher-failed", message }, ""), { synthesized: true }) };
		} finally {
			// `run --background` has copied the task into the job store by the time it returns.
			if (file) rmSync(file.dir, { recursive: true, force: true });
		}
		const lines = parseAll(out.stdout);
		const jobLine = lines.find((l) => l.type === "job");
		if (jobLine) {
			const job: TrackedJob = {
				id: jobLine.id,
				params: p,
				keep,
				submittedAt: Date.now(),
				state: "queued",
				cancelledHere: false,
			};
			this.jobs.set(job.id, job);
			void this.watch(job);
			return { kind: "job", job };
		}
		const result = lines.find((l) => l.type === "result");
		if (result) {
			const { type: _t, protocol: _p, ...r } = result;
			return { kind: "refused", outcome: outcomeOf(r, { dispatcherStderr: out.stderr }) };
		}
		const how = out.signal ? `was killed by ${out.signal}` : `exited with code ${out.code}`;
		const failure: Failure = { kind: "dispatcher-failed", message: `agent-dispatch run --background ${how} without a job line` };
		return { kind: "refused", outcome: outcomeOf(madeUp(identity, failure, out.stderr.trim()), { synthesized: true, dispatcherStderr: out.stderr }) };
	}

	/** Keep a job of this session: it is not cancelled when the session ends. False: not one of ours. */
	keep(id: string): boolean {
		const job = this.jobs.get(id);
		if (job) job.keep = true;
		return job !== undefined;
	}

	/** Every job on this machine (`jobs --json`). */
	async list(): Promise<JobView[]> {
		return JSON.parse(await this.ok(["jobs", "--json"])) as JobView[];
	}

	/** One job, any on this machine (`jobs show ID --json`). */
	async show(id: string): Promise<JobView> {
		return JSON.parse(await this.ok(["jobs", "show", id, "--json"])) as JobView;
	}

	/** A finished job's outcome, replayed from the store (any job on this machine). */
	async outcome(view: JobView): Promise<Outcome> {
		const p: DispatchParams = { agent: view.agent, task: "", cwd: view.cwd, model: view.model, effort: view.effort, scope: view.scope };
		const log = await this.run(["jobs", "logs", view.id]).catch(() => undefined);
		return jobOutcome(p, view, log?.stdout ?? "", "");
	}

	/**
	 * Cancel one job (the one named, nothing else) and wait until the binary says its tree is gone.
	 * Resolves with the job as the store has it afterwards.
	 */
	async cancel(id: string): Promise<JobView> {
		const job = this.jobs.get(id);
		if (job) job.cancelledHere = true;
		return JSON.parse(await this.ok(["jobs", "cancel", id, "--json"])) as JobView;
	}

	/**
	 * The session ends: cancel every job of it that is still running and not kept, and wait for each
	 * to be gone; then stop waiting for the kept ones (they run on; `/dispatch jobs` finds them).
	 * Nothing is reported after this.
	 */
	async shutdown(): Promise<void> {
		this.closed = true;
		const doomed = this.all().filter((j) => !j.keep && !j.outcome);
		await Promise.allSettled(doomed.map((j) => this.cancel(j.id)));
		this.waiters.abort();
	}

	reopen(): void {
		this.closed = false;
		if (this.waiters.signal.aborted) this.waiters = new AbortController();
	}

	/** Wait for the job in the store, then report it once. */
	private async watch(job: TrackedJob): Promise<void> {
		const signal = this.waiters.signal;
		let view: JobView | null = null;
		let stderr = "";
		try {
			const w = await this.run(["jobs", "wait", job.id, "--json"], signal);
			stderr = w.stderr;
			view = w.stdout.trim() ? (JSON.parse(w.stdout) as JobView) : null;
		} catch (e) {
			stderr = e instanceof Error ? e.message : String(e);
		}
		if (this.closed || signal.aborted) return;
		const log = await this.run(["jobs", "logs", job.id], signal).catch(() => undefined);
		if (this.closed || signal.aborted) return;
		job.state = view?.state ?? "lost";
		job.outcome = jobOutcome(job.params, view, log?.stdout ?? "", stderr);
		job.outcome.cancelRequested = job.cancelledHere;
		for (const l of this.listeners) l(job, job.outcome);
	}

	private run(args: string[], signal?: AbortSignal): Promise<Captured> {
		return runCaptured(this.opts.binary(), args, { registry: this.opts.registry, env: this.opts.env, signal });
	}

	/** stdout of a job command that must succeed; its stderr as the error otherwise. */
	private async ok(args: string[]): Promise<string> {
		const c = await this.run(args);
		if (c.code !== 0) throw new Error(c.stderr.trim() || `agent-dispatch ${args.join(" ")} exited with ${c.code ?? c.signal}`);
		return c.stdout;
	}
}
