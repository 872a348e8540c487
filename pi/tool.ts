/**
 * The `dispatch` tool for the model: its parameters, its description (the agents the binary lists),
 * `execute` (one dispatch, progress as partial results, the outcome as the tool result), the tool
 * row's rendering, and the `tool_result` patch that marks a returned failure as an error (D11).
 */

import { resolve } from "node:path";

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Text } from "@earendil-works/pi-tui";
import { type Static, Type } from "typebox";

import {
	backgroundDetails,
	backgroundText,
	finalDetails,
	isDetails,
	modelText,
	notFoundDetails,
	progressText,
	runningDetails,
} from "./details.ts";
import { type DispatchParams, type Outcome, startDispatch } from "./dispatch.ts";
import type { Host } from "./host.ts";
import type { JobTracker, TrackedJob } from "./jobs.ts";
import type { AgentInfo, Identity } from "./protocol.ts";
import { callLines } from "./render.ts";
import { resultComponent, textOf } from "./view.ts";

export const TOOL_NAME = "dispatch";

/**
 * The tool's parameters. `agent` is a plain string here; {@link parametersFor} narrows it to the ids
 * the binary listed, with the same static type, so `execute` gets typed arguments.
 */
export const DISPATCH_PARAMETERS = Type.Object({
	agent: Type.Unsafe<string>({ type: "string", description: "Which coding-agent CLI to run (see `agent-dispatch agents`)." }),
	task: Type.String({ description: "The question or task, passed to the agent unchanged." }),
	scope: Type.Optional(
		Type.String({ description: "Optional scope hint appended to the task: files, a diff, a commit range." }),
	),
	model: Type.Optional(Type.String({ description: "Model, passed unchanged. Omit for the CLI's default." })),
	effort: Type.Optional(Type.String({ description: "Reasoning effort, passed unchanged. Omit for the CLI's default." })),
	cwd: Type.Optional(Type.String({ description: "Working directory for the agent (default: the current one)." })),
	timeout: Type.Optional(
		Type.String({ description: "Wall-clock limit such as 90s, 15m, 1h (default 30m). Past it the dispatch fails with `timeout`." }),
	),
	maxTokens: Type.Optional(
		Type.Integer({ minimum: 1, description: "Token budget; past it the dispatch fails with `budget-exceeded`." }),
	),
	background: Type.Optional(
		Type.Boolean({
			description:
				"Run as a background job: return at once with its id; the result is posted into this conversation when it ends.",
		}),
	),
	keep: Type.Optional(
		Type.Boolean({ description: "With background: let the job run on if this session ends first (default: it is cancelled)." }),
	),
});

export type DispatchToolArgs = Static<typeof DISPATCH_PARAMETERS>;

/** The parameters with `agent` as a string enum of `agentIds` (`{type: "string", enum}`), when there are any. */
export function parametersFor(agentIds: readonly string[]): typeof DISPATCH_PARAMETERS {
	if (agentIds.length === 0) return DISPATCH_PARAMETERS;
	const agent = Type.Unsafe<string>({ type: "string", enum: [...agentIds], description: "Which coding-agent CLI to run." });
	return Type.Object({ ...DISPATCH_PARAMETERS.properties, agent });
}

function describeAgents(agents: readonly AgentInfo[]): string {
	return agents
		.map((a) => {
			const state = a.installed ? `installed${a.version ? ` (${a.version})` : ""}` : "not installed";
			const ro = a.capabilities.readOnlyEnforced ? "" : ", read-only not available: refused";
			const efforts = a.capabilities.efforts.length ? `, efforts: ${a.capabilities.efforts.join("/")}` : "";
			return `- ${a.id} (${a.displayName}): ${state}${ro}${efforts}`;
		})
		.join("\n");
}

function toolDescription(host: Host): string {
	return [
		"Run another coding-agent CLI as a read-only subagent and return its full answer (or, with background: true, start it as a job and return at once).",
		"The agent works in `cwd` under its own sandbox: it can read files and run commands but cannot change anything.",
		"Use it for an independent second opinion, a review, or an investigation. The task is passed unchanged.",
		"model and effort go to the CLI unchanged; omit them to use the CLI's own configured defaults.",
		"background: true returns at once with a job id while the agent works (for long reviews); its result arrives later in this conversation as a message, with a new turn. Do not poll for it. A background job is cancelled when this session ends unless keep: true.",
		host.agents.length
			? `Agents:\n${describeAgents(host.agents)}`
			: `No agents available: ${host.loadProblem ?? "unknown"}`,
	].join("\n");
}

/** Per-row renderer state shared by renderCall and renderResult. */
interface RowState {
	identity?: Identity;
	callKey?: string;
}

function identityKey(id: Identity | undefined): string {
	return id ? JSON.stringify(id.confirmed) : "";
}

export function registerDispatchTool(pi: ExtensionAPI, host: Host, jobs: JobTracker): void {
	pi.registerTool({
		name: TOOL_NAME,
		label: "Dispatch",
		description: toolDescription(host),
		promptSnippet: "Ask another coding agent (read-only) for an independent answer or review",
		promptGuidelines: [
			"Use dispatch when an independent second opinion or review from another coding agent would help; give it the full question and relevant scope, since it does not see this conversation.",
		],
		parameters: parametersFor(host.agents.map((a) => a.id)),

		async execute(_toolCallId, args, signal, onUpdate, ctx) {
			const p: DispatchParams = {
				agent: args.agent,
				task: args.task,
				scope: args.scope || undefined,
				model: args.model || undefined,
				effort: args.effort || undefined,
				cwd: resolve(ctx.cwd, args.cwd || "."),
				timeout: args.timeout || undefined,
				maxTokens: args.maxTokens,
			};
			let bin: string;
			try {
				bin = host.binary();
			} catch (e) {
				return notFoundResult(p, e);
			}
			if (args.background) {
				const submitted = await jobs.submit(p, args.keep === true);
				return submitted.kind === "job" ? backgroundResult(p, submitted.job) : toolResult(p, submitted.outcome);
			}
			const run = startDispatch(bin, p, {
				signal,
				registry: host.registry,
				onProgress: (progress) => {
					const d = runningDetails(p, progress);
					onUpdate?.({ content: [{ type: "text", text: progressText(d) }], details: d });
				},
			});
			return toolResult(p, await run.done);
		},

		renderCall(args, theme, context) {
			const state = context.state as RowState;
			const text = context.lastComponent instanceof Text ? context.lastComponent : new Text("", 0, 0);
			text.setText(callLines(args, state.identity, theme).join("\n"));
			state.callKey = identityKey(state.identity);
			return text;
		},

		renderResult(result, { expanded, isPartial }, theme, context) {
			const d = result.details;
			if (!isDetails(d)) {
				// Not ours (e.g. an exception result): show its text.
				return new Text(theme.fg(context.isError ? "error" : "toolOutput", textOf(result.content)), 0, 0);
			}
			// Keep the call row's identity in step with what the CLI confirmed (D13). Re-rendering the
			// row from inside a render is not allowed, so it is scheduled.
			const state = context.state as RowState;
			state.identity = d.identity;
			if (identityKey(d.identity) !== state.callKey) queueMicrotask(() => context.invalidate());
			const answer = d.status === "succeeded" ? textOf(result.content) : "";
			return resultComponent(d, answer, expanded && !isPartial, theme, context.keyHint);
		},
	});

	// D11: a known failure is returned (details and usage survive) and marked as an error here.
	pi.on("tool_result", (event) => {
		if (event.toolName !== TOOL_NAME) return;
		if (isDetails(event.details) && event.details.failure) return { isError: true };
	});
}

/** Result when the binary cannot be found: the install instructions, as a failure with a marker. */
function notFoundResult(p: DispatchParams, e: unknown) {
	const message = e instanceof Error ? e.message : String(e);
	return {
		content: [{ type: "text" as const, text: `dispatch unavailable (dispatcher-not-found): ${message}` }],
		details: notFoundDetails(p, message),
		isError: true,
	};
}

/** A background dispatch has started: the job id and what happens next (not an error, no usage yet). */
function backgroundResult(p: DispatchParams, job: TrackedJob) {
	const d = backgroundDetails(p, { id: job.id, keep: job.keep });
	return { content: [{ type: "text" as const, text: backgroundText(d) }], details: d, isError: false };
}

function toolResult(p: DispatchParams, o: Outcome) {
	const d = finalDetails(p, o);
	return {
		content: [{ type: "text" as const, text: modelText(d, o) }],
		details: d,
		...(d.usage ? { usage: d.usage } : {}),
		isError: d.failure !== null,
	};
}
