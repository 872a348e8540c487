/**
 * Presentation (design D9, D13) as plain strings, so it is tested without a terminal. `view.ts`
 * wraps these lines in pi-tui components; the `/dispatch` command and the tool share them.
 *
 * - call row: agent, requested model/effort (or `CLI default`), and the confirmation state;
 * - running: a live tail of the agent's activity;
 * - done, collapsed: one or two lines with the configured expand key;
 * - done, expanded: the full answer, confirmed vs requested identity, usage and cost, and for a
 *   failure its kind and diagnostics.
 */

import type { ActivityItem } from "./activity.ts";
import type { DispatchDetails } from "./details.ts";
import type { TrackedJob } from "./jobs.ts";
import { type Identity, type JobView, jobFinished, type PiUsage, type Reported } from "./protocol.ts";

/** The part of Pi's theme the renderers use. */
export interface ThemeLike {
	fg(color: string, text: string): string;
	bold(text: string): string;
}

/** `context.keyHint` from Pi's render context (only the expand binding is used). */
export type KeyHint = (keybinding: "app.tools.expand", description: string) => string;

/** Activity lines shown while a dispatch runs. */
export const LIVE_TAIL = 5;
const LINE_MAX = 100;

const CLI_DEFAULT = "CLI default";

export interface CallArgs {
	agent?: string;
	task?: string;
	model?: string;
	effort?: string;
	scope?: string;
}

function oneLine(s: string, max = LINE_MAX): string {
	const first = s.replace(/\s+/g, " ").trim();
	return first.length <= max ? first : `${first.slice(0, max - 1)}…`;
}

function fmtTokens(n: number): string {
	if (n < 1000) return String(n);
	if (n < 10_000) return `${(n / 1000).toFixed(1)}k`;
	if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
	return `${(n / 1_000_000).toFixed(1)}M`;
}

function fmtDuration(ms: number | null | undefined): string {
	if (ms === null || ms === undefined) return "";
	if (ms < 1000) return `${ms}ms`;
	if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
	const m = Math.floor(ms / 60_000);
	return `${m}m${Math.round((ms % 60_000) / 1000)}s`;
}

function fmtCost(usage: PiUsage | null, reported: boolean): string {
	if (!usage || !reported) return "cost not reported";
	return `$${usage.cost.total.toFixed(4)}`;
}

/** Compact usage: ↑input ↓output R cache-read W cache-write, and the cost when reported. */
export function usageShort(usage: PiUsage | null, costReported: boolean): string {
	if (!usage) return "usage not reported";
	const parts = [`↑${fmtTokens(usage.input)}`, `↓${fmtTokens(usage.output)}`];
	if (usage.cacheRead) parts.push(`R${fmtTokens(usage.cacheRead)}`);
	if (usage.cacheWrite) parts.push(`W${fmtTokens(usage.cacheWrite)}`);
	if (costReported) parts.push(fmtCost(usage, true));
	return parts.join(" ");
}

function requestedText(v: string | null): string {
	return v ?? CLI_DEFAULT;
}

/** One identity value: what was asked for and what the CLI said. */
function valueText(requested: string | null, confirmed: Reported): string {
	switch (confirmed.state) {
		case "confirmed":
			return requested && requested !== confirmed.value
				? `${confirmed.value} (requested ${requested})`
				: confirmed.value;
		case "not-reported":
			return `${requestedText(requested)} (not reported)`;
		default:
			return requestedText(requested);
	}
}

/** True while any identity value still waits for the CLI. */
export function confirmationPending(id: Identity): boolean {
	return id.confirmed.model.state === "pending" || id.confirmed.effort.state === "pending";
}

/** `model X · effort Y[ · confirmation pending]` */
export function identityLine(id: Identity, theme: ThemeLike): string {
	let s = `${theme.fg("muted", "model")} ${valueText(id.requested.model, id.confirmed.model)}`;
	s += ` ${theme.fg("dim", "·")} ${theme.fg("muted", "effort")} ${valueText(id.requested.effort, id.confirmed.effort)}`;
	if (confirmationPending(id)) s += ` ${theme.fg("dim", "· confirmation pending")}`;
	return s;
}

/** The identity implied by the call's arguments before anything is known. */
export function requestedIdentity(args: CallArgs): Identity {
	return {
		agent: args.agent ?? "?",
		requested: { model: args.model ?? null, effort: args.effort ?? null },
		confirmed: { model: { state: "pending" }, effort: { state: "pending" } },
	};
}

/** The call row: `dispatch AGENT  model … · effort … · confirmation pending`, then the task. */
export function callLines(args: CallArgs, identity: Identity | undefined, theme: ThemeLike, title = "dispatch"): string[] {
	const id = identity ?? requestedIdentity(args);
	const head = `${theme.fg("toolTitle", theme.bold(`${title} `))}${theme.fg("accent", args.agent ?? "…")}  ${identityLine(id, theme)}`;
	const lines = [head];
	if (args.task) lines.push(theme.fg("dim", oneLine(args.task, 100)));
	return lines;
}

function activityLine(a: ActivityItem, theme: ThemeLike): string {
	switch (a.kind) {
		case "command": {
			const mark =
				a.status === "completed"
					? theme.fg("success", a.exitCode && a.exitCode !== 0 ? `✓ exit ${a.exitCode}` : "✓")
					: a.status === "failed"
						? theme.fg("error", a.exitCode !== undefined ? `✗ exit ${a.exitCode}` : "✗")
						: a.status === "declined"
							? theme.fg("warning", "declined")
							: theme.fg("dim", "…");
			return `${theme.fg("muted", "$ ")}${theme.fg("toolOutput", oneLine(a.text, 100))} ${mark}`;
		}
		case "text":
			return `${theme.fg("muted", "› ")}${oneLine(a.text)}`;
		case "activity":
			return theme.fg("dim", `· ${a.label ?? "activity"}: ${oneLine(a.text)}`);
		case "notice":
			return theme.fg(a.label === "warning" ? "warning" : "dim", `! ${oneLine(a.text)}`);
		case "error":
			return theme.fg("error", `✗ ${oneLine(a.text)}`);
	}
}

/** While running: status line and the last few activity items. */
export function runningLines(d: DispatchDetails, theme: ThemeLike): string[] {
	const status = `${theme.fg("warning", "⏳")} ${d.agent} running ${theme.fg("dim", `· ${d.eventCount} events · ${fmtDuration(d.elapsedMs)}`)}`;
	const tail = d.activity.slice(-LIVE_TAIL).map((a) => `  ${activityLine(a, theme)}`);
	return tail.length ? [status, ...tail] : [status, theme.fg("dim", "  waiting for the agent…")];
}

/** Handed to a background job: which one, and that its result comes later. */
export function backgroundLines(d: DispatchDetails, theme: ThemeLike): string[] {
	const id = d.job?.id ?? "?";
	const first = `${theme.fg("accent", "⏵")} ${d.agent} running in the background ${theme.fg("dim", `· job ${id}`)}`;
	const after = d.job?.keep ? "kept if this session ends" : "cancelled if this session ends first";
	return [first, theme.fg("dim", `  its result is posted here when it ends · ${after} · /dispatch jobs · /dispatch cancel ${id}`)];
}

/** Done, collapsed: one or two lines, the second ending with the expand hint. */
export function summaryLines(d: DispatchDetails, answer: string, theme: ThemeLike, keyHint: KeyHint): string[] {
	const hint = theme.fg("dim", `(${keyHint("app.tools.expand", "to expand")})`);
	const stats = theme.fg("dim", `${fmtDuration(d.durationMs)} · ${usageShort(d.usage, d.costReported)}`);
	if (d.status === "succeeded") {
		const first = `${theme.fg("success", "✓")} ${d.agent} answered ${stats}`;
		const body = answer.trim() ? oneLine(answer, 120) : theme.fg("dim", "(empty answer)");
		return [first, `  ${body} ${hint}`];
	}
	const f = d.failure ?? { kind: "unknown", message: "" };
	const first = `${theme.fg("error", "✗")} ${d.agent} ${theme.fg("error", f.kind)} ${stats}`;
	return [first, `  ${oneLine(f.message, 120)} ${hint}`];
}

function reportedText(r: Reported): string {
	return r.state === "confirmed" ? r.value : r.state === "not-reported" ? "not reported" : "pending";
}

export interface ExpandedView {
	/** Lines before the answer. */
	head: string[];
	/** The answer (Markdown). Empty when there is none. */
	answer: string;
	/** Lines after the answer: identity, usage, failure and diagnostics. */
	tail: string[];
}

/** Done, expanded: the full answer, identity (confirmed vs requested), usage and cost, failure diagnostics. */
export function expandedView(d: DispatchDetails, answer: string, theme: ThemeLike): ExpandedView {
	const head: string[] = [];
	const tail: string[] = [];
	const ok = d.status === "succeeded";
	head.push(
		ok
			? `${theme.fg("success", "✓")} ${d.agent} answered ${theme.fg("dim", `in ${fmtDuration(d.durationMs)}`)}`
			: `${theme.fg("error", "✗")} ${d.agent} failed: ${theme.fg("error", d.failure?.kind ?? "unknown")} ${theme.fg("dim", `after ${fmtDuration(d.durationMs)}`)}`,
	);
	// The call row shows the task's first 100 characters; a longer one is shown further here.
	if (d.task.length > 100) head.push(theme.fg("dim", `task: ${oneLine(d.task, 400)}`));
	if (d.scope) head.push(theme.fg("dim", `scope: ${oneLine(d.scope, 300)}`));

	const section = (name: string) => theme.fg("muted", `── ${name}`);
	const id = d.identity;
	tail.push(section("identity"));
	tail.push(
		`  model   requested ${requestedText(id.requested.model)} · confirmed ${reportedText(id.confirmed.model)}`,
	);
	tail.push(
		`  effort  requested ${requestedText(id.requested.effort)} · confirmed ${reportedText(id.confirmed.effort)}`,
	);
	if (d.sessionId) tail.push(theme.fg("dim", `  session ${d.sessionId}`));
	if (d.program) tail.push(theme.fg("dim", `  program ${d.program}`));
	if (d.checkBypassed) tail.push(theme.fg("warning", "  read-only self-check was bypassed for this run"));

	tail.push(section("usage"));
	if (d.usage) {
		const u = d.usage;
		let line = `  input ${u.input} · cache read ${u.cacheRead} · cache write ${u.cacheWrite} · output ${u.output}`;
		if (d.reasoningTokens) line += ` (reasoning ${d.reasoningTokens})`;
		line += ` · total ${u.totalTokens}`;
		tail.push(line);
		tail.push(`  cost ${fmtCost(u, d.costReported)}`);
	} else {
		tail.push("  usage not reported");
	}

	if (!ok) {
		const f = d.failure ?? { kind: "unknown", message: "" };
		tail.push(section("failure"));
		tail.push(`  ${theme.fg("error", f.kind)}: ${f.message}`);
		if (d.exit && (d.exit.code !== undefined || d.exit.signal !== undefined)) {
			tail.push(theme.fg("dim", `  exit ${d.exit.code ?? "-"}${d.exit.signal !== undefined ? ` signal ${d.exit.signal}` : ""}`));
		}
		if (d.stderrTail.trim()) {
			tail.push(section("diagnostics (stderr tail)"));
			for (const l of d.stderrTail.trimEnd().split("\n").slice(-20)) tail.push(theme.fg("dim", `  ${l}`));
		}
	}
	if (d.activity.length) {
		tail.push(section("last activity"));
		for (const a of d.activity.slice(-LIVE_TAIL)) tail.push(`  ${activityLine(a, theme)}`);
	}
	return { head, answer: ok ? answer : d.partialAnswer, tail };
}

/** A finished job's answer shown in the `/dispatch jobs` list. */
const JOB_PREVIEW = 2000;

function ago(ms: number, now: number): string {
	const s = Math.max(0, Math.round((now - ms) / 1000));
	if (s < 90) return `${s}s ago`;
	if (s < 90 * 60) return `${Math.round(s / 60)}m ago`;
	return `${Math.round(s / 3600)}h ago`;
}

/**
 * `/dispatch jobs`: every job on this machine with its state (this session's marked, and whether
 * kept), then the results of this session's finished jobs.
 */
export function jobsText(views: JobView[], mine: TrackedJob[], now = Date.now()): string {
	const byId = new Map(mine.map((j) => [j.id, j]));
	const lines = [`${views.length} background job${views.length === 1 ? "" : "s"} on this machine`];
	for (const v of [...views].sort((a, b) => b.createdAt - a.createdAt)) {
		const j = byId.get(v.id);
		const tag = j ? (j.keep ? " [this session, kept]" : " [this session]") : "";
		const why = v.result?.failure ? ` (${v.result.failure.kind})` : "";
		lines.push(`${v.id}  ${v.state}${why}  ${v.agent}  ${ago(v.createdAt, now)}  ${v.cwd}${tag}`);
	}
	const done = mine.filter((j) => j.outcome);
	for (const j of done) {
		const r = j.outcome!.result;
		const body = r.ok ? r.text : `${r.failure?.kind ?? "failed"}: ${r.failure?.message ?? ""}`;
		const cut = body.length > JOB_PREVIEW ? `${body.slice(0, JOB_PREVIEW - 1)}…` : body;
		lines.push("", `── ${j.id} (${j.params.agent}) ${r.ok ? "succeeded" : "failed"}`, cut);
	}
	const running = views.filter((v) => !jobFinished(v.state)).length;
	if (running) lines.push("", "A running job: /dispatch cancel ID. Any finished job's result: /dispatch jobs ID.");
	return lines.join("\n");
}

/** A theme that adds no styling (tests, plain-text contexts). */
export const plainTheme: ThemeLike = { fg: (_c, t) => t, bold: (t) => t };
