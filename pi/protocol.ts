/**
 * The versioned JSONL protocol `agent-dispatch run` writes on stdout, mirrored as TypeScript types.
 *
 * Source of truth: the engine's `src/contract.rs` and `src/protocol.rs`, published as
 * `docs/protocol.schema.json`; `test/protocol.test.ts` holds these types to that schema (every
 * field, whether it is required, every enum). Nothing here knows about a particular agent CLI:
 * agents are plain ids reported by `agent-dispatch agents --json`.
 */

/** The protocol version this extension speaks. A line with another version is refused. */
export const PROTOCOL_VERSION = 1;

/** A value the CLI may or may not report. Pending, not-reported and confirmed are never conflated. */
export type Reported =
	| { state: "pending" }
	| { state: "not-reported" }
	| { state: "confirmed"; value: string };

export interface Identity {
	agent: string;
	requested: { model: string | null; effort: string | null };
	confirmed: { model: Reported; effort: Reported };
}

export type CommandStatus = "started" | "completed" | "failed" | "declined";
export type ActivityKind = "reasoning" | "plan" | "file-change" | "tool";
export type NoticeLevel = "info" | "warning";

export type StreamEvent =
	| { type: "text"; text: string }
	| {
			type: "command";
			id?: string;
			command: string;
			status: CommandStatus;
			exitCode?: number;
			outputTail?: string;
	  }
	| { type: "activity"; kind: ActivityKind; text: string }
	| { type: "metadata"; sessionId?: string; model?: string; effort?: string }
	| { type: "notice"; level: NoticeLevel; message: string }
	| { type: "error"; message: string }
	| { type: "done"; success: boolean }
	/** The usage reported so far in this run: a running total, not a delta (budgets are enforced on it). */
	| { type: "usage"; usage: ProtocolUsage };

/** Normalised usage: `input` excludes cache reads and writes; `reasoning` is part of `output`. */
export interface ProtocolUsage {
	input: number;
	cacheRead: number;
	cacheWrite: number;
	output: number;
	reasoning: number;
	costUsd?: number;
}

/** Why the binary says a dispatch did not succeed (stable, kebab-case). */
export type FailureKind =
	| "invalid-request"
	| "unsupported-agent"
	| "not-installed"
	| "spawn-failed"
	| "read-only-unavailable"
	| "not-logged-in"
	| "nonzero-exit"
	| "signal"
	| "error-envelope"
	| "malformed-stream"
	| "incomplete-stream"
	| "cancelled"
	| "timeout"
	| "budget-exceeded";

/**
 * Kinds only the extension reports: the binary could not be found, or started, or understood; or a
 * background job ended without a result (its worker died: the job store says `lost`).
 */
export type ExtensionFailureKind = "dispatcher-not-found" | "dispatcher-failed" | "job-lost";

export interface Failure {
	kind: FailureKind | ExtensionFailureKind;
	message: string;
}

export interface ExitInfo {
	code?: number;
	signal?: number;
}

export interface DispatchResult {
	ok: boolean;
	text: string;
	usage: ProtocolUsage | null;
	identity: Identity;
	sessionId: string | null;
	failure: Failure | null;
	exit: ExitInfo | null;
	stderrTail: string;
	durationMs: number;
	checkBypassed: boolean;
}

export type Line =
	| { type: "started"; protocol: number; identity: Identity; program: string; cwd: string }
	| { type: "event"; protocol: number; event: StreamEvent }
	| ({ type: "result"; protocol: number } & DispatchResult)
	/** `run --background`'s only line: the job that now carries the dispatch. */
	| { type: "job"; protocol: number; id: string };

/** Where a background job is in its life (`agent-dispatch jobs`). `lost`: its worker died without a result. */
export type JobState = "queued" | "running" | "succeeded" | "failed" | "cancelled" | "lost";

/** One job of `agent-dispatch jobs --json` / `jobs show ID --json` (see src/jobs/store.rs). */
export interface JobView {
	id: string;
	agent: string;
	cwd: string;
	model?: string;
	effort?: string;
	scope?: string;
	limits: { timeoutMs: number | null; maxTokens: number | null };
	/** Milliseconds since the Unix epoch. */
	createdAt: number;
	state: JobState;
	startedAt: number | null;
	finishedAt: number | null;
	/** The protocol `result` line, once finished (null while running, and for a lost job). */
	result: Extract<Line, { type: "result" }> | null;
}

/** A job has ended (its result, if any, is final). */
export function jobFinished(state: JobState): boolean {
	return state !== "queued" && state !== "running";
}

/** One entry of `agent-dispatch agents --json`. */
export interface AgentInfo {
	id: string;
	displayName: string;
	program: string;
	installed: boolean;
	path: string | null;
	version: string | null;
	installHint: string;
	capabilities: {
		readOnlyEnforced: boolean;
		modelCatalogue: boolean;
		reportsModel: boolean;
		reportsEffort: boolean;
		efforts: string[];
	};
}

/** `agent-dispatch models AGENT --json`. */
export interface ModelCatalogue {
	agent: string;
	models: {
		slug: string;
		displayName?: string | null;
		defaultEffort?: string | null;
		efforts: string[];
		hidden?: boolean;
	}[];
}

/** `agent-dispatch check --json`: one report per agent (see src/readonly/report.rs). */
export interface CheckReport {
	agent: string;
	passed: boolean;
	program?: string | null;
	version?: string | null;
	launchArgs: string[];
	probes: {
		kind: string;
		command: string;
		target?: string | null;
		output?: string | null;
		verdict: string;
		evidence?: string | null;
	}[];
	treeIdentical: boolean;
	treeChanges: string[];
	problems: string[];
	fixes: string[];
	durationMs: number;
}

/** Pi's `Usage` shape (from `@earendil-works/pi-ai`), restated so this module stays dependency-free. */
export interface PiUsage {
	input: number;
	output: number;
	cacheRead: number;
	cacheWrite: number;
	reasoning?: number;
	totalTokens: number;
	cost: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
}

/**
 * Protocol usage → Pi usage. Cost is never estimated: `cost.total` is the CLI-reported dollar figure
 * when there is one, else 0; the per-kind cost split is unknown and stays 0.
 */
export function toPiUsage(u: ProtocolUsage | null | undefined): PiUsage | undefined {
	if (!u) return undefined;
	const n = (x: unknown) => (typeof x === "number" && Number.isFinite(x) ? x : 0);
	const input = n(u.input);
	const output = n(u.output);
	const cacheRead = n(u.cacheRead);
	const cacheWrite = n(u.cacheWrite);
	return {
		input,
		output,
		cacheRead,
		cacheWrite,
		reasoning: n(u.reasoning),
		totalTokens: input + output + cacheRead + cacheWrite,
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: n(u.costUsd) },
	};
}

/** Parse one stdout line. Returns undefined for blank lines; throws on malformed JSON or a foreign version. */
export function parseLine(raw: string): Line | undefined {
	const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
	if (!line.trim()) return undefined;
	const obj = JSON.parse(line) as { type?: unknown; protocol?: unknown };
	if (obj === null || typeof obj !== "object" || typeof obj.type !== "string") {
		throw new Error("protocol line without a type");
	}
	if (obj.protocol !== PROTOCOL_VERSION) {
		throw new Error(
			`agent-dispatch speaks protocol ${String(obj.protocol)}, this extension speaks ${PROTOCOL_VERSION}; update one of them`,
		);
	}
	return obj as Line;
}

/**
 * At the end of a run, what was never confirmed was not reported (design D13) — the engine's
 * `Reported::settle`. The binary settles the identity of a run it started; a result the extension
 * makes up, or an early refusal, still carries `pending` and is settled with this.
 */
export function settle(id: Identity): Identity {
	const s = (r: Reported): Reported => (r.state === "pending" ? { state: "not-reported" } : r);
	return { ...id, confirmed: { model: s(id.confirmed.model), effort: s(id.confirmed.effort) } };
}

/** The identity before anything was started: requested values, nothing confirmed yet. */
export function pendingIdentity(agent: string, model?: string, effort?: string): Identity {
	return {
		agent,
		requested: { model: model ?? null, effort: effort ?? null },
		confirmed: { model: { state: "pending" }, effort: { state: "pending" } },
	};
}
