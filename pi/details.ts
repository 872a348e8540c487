/**
 * What a dispatch leaves behind in Pi: the `details` record (for renderers, the `tool_result`
 * error patch, and anyone reading the session file), the model-facing text, and Pi usage.
 * Pure functions over dispatch snapshots and outcomes; no Pi imports.
 */

import type { ActivityItem } from "./activity.ts";
import type { DispatchParams, Outcome, Progress } from "./dispatch.ts";
import { type ExitInfo, type Failure, type Identity, type PiUsage, pendingIdentity, settle, toPiUsage } from "./protocol.ts";

/** Activity items kept in `details` (the renderer shows fewer). */
const DETAILS_ACTIVITY = 8;
/** Task preview kept in `details` (the full task is in the tool call's arguments). */
const TASK_PREVIEW = 400;
/** The model-facing answer is never silently cut, but a pathological size is bounded. */
const ANSWER_MAX_CHARS = 512 * 1024;
/** Stderr shown to the model on failure. */
const STDERR_FOR_MODEL = 2000;
export const EMPTY_ANSWER = "(the agent returned an empty answer)";

export interface DispatchDetails {
	/** Shape version of this record. */
	v: 1;
	/** `background`: handed to a job (`job` says which); its result comes later as a message. */
	status: "running" | "background" | "succeeded" | "failed";
	agent: string;
	task: string;
	scope: string | null;
	cwd: string;
	identity: Identity;
	/** The failure marker (D11): `failure.kind` is what the `tool_result` handler turns into `isError`. */
	failure: Failure | null;
	activity: ActivityItem[];
	eventCount: number;
	/** Pi-shaped usage, null when the CLI reported none. */
	usage: PiUsage | null;
	/** Whether `usage.cost.total` is a figure the CLI reported (false: unknown, shown as such). */
	costReported: boolean;
	reasoningTokens: number | null;
	sessionId: string | null;
	program: string | null;
	exit: ExitInfo | null;
	stderrTail: string;
	durationMs: number | null;
	elapsedMs: number;
	checkBypassed: boolean;
	/**
	 * On failure only: whatever answer text the agent produced before failing. On success the answer
	 * is the model-facing content itself and is not repeated here.
	 */
	partialAnswer: string;
	/** For a background dispatch: the job that carries it, and whether it outlives this session. */
	job?: JobRef;
}

/** A background job, as a `details` record names it. */
export interface JobRef {
	id: string;
	/** Not cancelled when the session that started it ends. */
	keep: boolean;
}

function preview(s: string, n: number): string {
	return s.length <= n ? s : `${s.slice(0, n - 1)}…`;
}

function base(params: DispatchParams): Pick<DispatchDetails, "v" | "agent" | "task" | "scope" | "cwd"> {
	return {
		v: 1,
		agent: params.agent,
		task: preview(params.task, TASK_PREVIEW),
		scope: params.scope ?? null,
		cwd: params.cwd,
	};
}

export function runningDetails(params: DispatchParams, p: Progress): DispatchDetails {
	return {
		...base(params),
		status: "running",
		identity: p.identity,
		failure: null,
		activity: p.activity.slice(-DETAILS_ACTIVITY),
		eventCount: p.eventCount,
		usage: null,
		costReported: false,
		reasoningTokens: null,
		sessionId: p.sessionId,
		program: p.program,
		exit: null,
		stderrTail: "",
		durationMs: null,
		elapsedMs: p.elapsedMs,
		checkBypassed: false,
		partialAnswer: "",
	};
}

/** No binary was found: nothing ran, so nothing was confirmed or used. */
export function notFoundDetails(params: DispatchParams, message: string): DispatchDetails {
	const identity = settle(pendingIdentity(params.agent, params.model, params.effort));
	const nothing: Progress = { identity, activity: [], eventCount: 0, sessionId: null, program: null, started: false, elapsedMs: 0 };
	return {
		...runningDetails(params, nothing),
		status: "failed",
		failure: { kind: "dispatcher-not-found", message },
		durationMs: 0,
	};
}

/** A `details` record, as read back from a tool result or a message (anything may be there). */
export function isDetails(d: unknown): d is DispatchDetails {
	return typeof d === "object" && d !== null && (d as DispatchDetails).v === 1 && typeof (d as DispatchDetails).agent === "string";
}

export function finalDetails(params: DispatchParams, o: Outcome): DispatchDetails {
	const r = o.result;
	let stderrTail = r.stderrTail ?? "";
	if (o.synthesized && o.dispatcherStderr.trim()) {
		stderrTail = stderrTail ? `${stderrTail}\n${o.dispatcherStderr}` : o.dispatcherStderr;
	}
	const failure: Failure | null = r.ok
		? null
		: (r.failure ?? { kind: "dispatcher-failed", message: "agent-dispatch reported a failure without saying why" });
	return {
		...base(params),
		status: r.ok ? "succeeded" : "failed",
		identity: r.identity,
		failure,
		activity: o.activity.slice(-DETAILS_ACTIVITY),
		eventCount: o.eventCount,
		usage: toPiUsage(r.usage) ?? null,
		costReported: typeof r.usage?.costUsd === "number",
		reasoningTokens: r.usage ? r.usage.reasoning : null,
		sessionId: r.sessionId,
		program: o.program,
		exit: r.exit,
		stderrTail,
		durationMs: r.durationMs,
		elapsedMs: r.durationMs,
		checkBypassed: r.checkBypassed === true,
		partialAnswer: r.ok ? "" : preview(r.text ?? "", ANSWER_MAX_CHARS),
	};
}

/** The live text Pi shows (and keeps) for a partial result. */
export function progressText(d: DispatchDetails): string {
	const last = d.activity.at(-1);
	return last ? `${d.agent} running: ${preview(last.text.split("\n")[0] ?? "", 200)}` : `${d.agent} starting…`;
}

/** The text the calling model receives: the full answer, or a diagnosis of the failure. */
export function modelText(d: DispatchDetails, o: Outcome): string {
	if (d.status === "succeeded") return preview(o.result.text ?? "", ANSWER_MAX_CHARS) || EMPTY_ANSWER;
	const f = d.failure!;
	const parts = [`dispatch to ${d.agent} failed (${f.kind}): ${f.message}`];
	if (d.partialAnswer.trim()) parts.push(`Partial answer:\n${d.partialAnswer}`);
	const stderr = d.stderrTail.trim();
	if (stderr) parts.push(`Diagnostics (stderr tail):\n${stderr.slice(-STDERR_FOR_MODEL)}`);
	return parts.join("\n\n");
}

/** A dispatch handed to a background job: nothing has run yet as far as this session knows. */
export function backgroundDetails(params: DispatchParams, job: JobRef): DispatchDetails {
	const nothing: Progress = {
		identity: pendingIdentity(params.agent, params.model, params.effort),
		activity: [],
		eventCount: 0,
		sessionId: null,
		program: null,
		started: false,
		elapsedMs: 0,
	};
	return { ...runningDetails(params, nothing), status: "background", job };
}

/** What the model is told when its background dispatch has started: the id, and what happens next. */
export function backgroundText(d: DispatchDetails): string {
	const id = d.job?.id ?? "?";
	return [
		`Started ${d.agent} as background job ${id}; this call returns now and the job runs on.`,
		"When it ends, its result is posted into this conversation as a message and you get a turn to act on it: do not wait or poll for it.",
		`The person can list jobs with /dispatch jobs and cancel this one with /dispatch cancel ${id} (outside Pi: agent-dispatch jobs show ${id}).`,
		d.job?.keep
			? "It is kept: it runs on even if this session ends first."
			: `It is cancelled if this session ends first (the person can keep it with /dispatch keep ${id}).`,
	].join("\n");
}

/** The message that reports a finished job: which job, then the same text a blocking dispatch returns. */
export function jobEndText(d: DispatchDetails, o: Outcome): string {
	const id = d.job?.id ?? "?";
	const how = d.status === "succeeded" ? "finished" : `ended: ${d.failure?.kind ?? "failed"}`;
	return `Background dispatch job ${id} (${d.agent}) ${how}.\n\n${modelText(d, o)}`;
}
