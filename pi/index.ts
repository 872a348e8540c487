/**
 * agent-dispatch for Pi: a `dispatch` tool and a `/dispatch` command that run another coding-agent
 * CLI as a blocking, read-only subagent through the `agent-dispatch` binary.
 *
 * This file is deliberately thin: the binary owns adapters, sandboxing and process cleanup of the
 * agent CLI; `bridge.ts` owns the binary's process; `details.ts` and `render.ts` own presentation.
 * Agents are whatever `agent-dispatch agents --json` lists, so a new adapter needs no change here.
 */

import { resolve } from "node:path";

import { StringEnum } from "@earendil-works/pi-ai";
import {
	type ExtensionAPI,
	type ExtensionContext,
	getMarkdownTheme,
	type Theme,
} from "@earendil-works/pi-coding-agent";
import { Box, type Component, Container, Markdown, Text } from "@earendil-works/pi-tui";
import { Type } from "typebox";

import {
	type DispatchParams,
	listAgents,
	listModels,
	type Outcome,
	ProcessRegistry,
	runCheck,
	startDispatch,
} from "./bridge.ts";
import { parseDispatchArgs, SUBCOMMANDS, USAGE } from "./command.ts";
import { refuseInPrintMode } from "./print-mode.ts";
import { type DispatchDetails, finalDetails, modelText, progressText, runningDetails } from "./details.ts";
import { BinaryNotFoundError, type Located, locateBinary } from "./locate.ts";
import type { AgentInfo, CheckReport, Identity, ModelCatalogue } from "./protocol.ts";
import {
	type CallArgs,
	callLines,
	expandedView,
	type KeyHint,
	runningLines,
	summaryLines,
} from "./render.ts";

export const TOOL_NAME = "dispatch";
/** Custom message types for the `/dispatch` command. */
const MSG_RESULT = "dispatch";
const MSG_MODELS = "dispatch-models";
const MSG_CHECK = "dispatch-check";

interface ToolParams {
	agent: string;
	task: string;
	scope?: string;
	model?: string;
	effort?: string;
	cwd?: string;
}

/** Per-row renderer state shared by renderCall and renderResult. */
interface RowState {
	identity?: Identity;
	callKey?: string;
}

function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.filter((c): c is { type: "text"; text: string } => c?.type === "text" && typeof c.text === "string")
		.map((c) => c.text)
		.join("\n");
}

function isDetails(d: unknown): d is DispatchDetails {
	return typeof d === "object" && d !== null && (d as DispatchDetails).v === 1 && typeof (d as DispatchDetails).agent === "string";
}

/** The components for a finished or running dispatch, shared by the tool row and the command message. */
function resultComponent(d: DispatchDetails, answer: string, expanded: boolean, theme: Theme, keyHint: KeyHint): Component {
	if (d.status === "running") return new Text(runningLines(d, theme).join("\n"), 0, 0);
	if (!expanded) return new Text(summaryLines(d, answer, theme, keyHint).join("\n"), 0, 0);
	const view = expandedView(d, answer, theme);
	const box = new Container();
	box.addChild(new Text(view.head.join("\n"), 0, 0));
	if (view.answer.trim()) box.addChild(new Markdown(view.answer, 0, 1, getMarkdownTheme()));
	box.addChild(new Text(view.tail.join("\n"), 0, 0));
	return box;
}

function identityKey(id: Identity | undefined): string {
	return id ? JSON.stringify(id.confirmed) : "";
}

function describeAgents(agents: AgentInfo[]): string {
	return agents
		.map((a) => {
			const state = a.installed ? `installed${a.version ? ` (${a.version})` : ""}` : "not installed";
			const ro = a.capabilities.readOnlyEnforced ? "" : ", read-only not available: refused";
			const efforts = a.capabilities.efforts.length ? `, efforts: ${a.capabilities.efforts.join("/")}` : "";
			return `- ${a.id} (${a.displayName}): ${state}${ro}${efforts}`;
		})
		.join("\n");
}

export default async function agentDispatch(pi: ExtensionAPI): Promise<void> {
	const registry = new ProcessRegistry();

	// Find the binary and its agents once, at load. A missing binary still registers the tool, so the
	// model (and the person) get the install instructions instead of "tool not found".
	let located: Located | undefined;
	let loadProblem: string | undefined;
	let agents: AgentInfo[] = [];
	try {
		located = locateBinary();
		agents = await listAgents(located.bin);
	} catch (e) {
		loadProblem = e instanceof Error ? e.message : String(e);
	}
	const agentIds = agents.map((a) => a.id);

	const locate = (): Located => {
		if (!located) located = locateBinary(); // the binary may have been built since load
		return located;
	};

	const agentSchema =
		agentIds.length > 0
			? StringEnum(agentIds as [string, ...string[]], { description: "Which coding-agent CLI to run." })
			: Type.String({ description: "Which coding-agent CLI to run (see `agent-dispatch agents`)." });

	const description = [
		"Run another coding-agent CLI as a blocking, read-only subagent and return its full answer.",
		"The agent works in `cwd` under its own sandbox: it can read files and run commands but cannot change anything.",
		"Use it for an independent second opinion, a review, or an investigation. The task is passed unchanged.",
		"model and effort go to the CLI unchanged; omit them to use the CLI's own configured defaults.",
		agents.length ? `Agents:\n${describeAgents(agents)}` : `No agents available: ${loadProblem ?? "unknown"}`,
	].join("\n");

	pi.registerTool({
		name: TOOL_NAME,
		label: "Dispatch",
		description,
		promptSnippet: "Ask another coding agent (read-only) for an independent answer or review",
		promptGuidelines: [
			"Use dispatch when an independent second opinion or review from another coding agent would help; give it the full question and relevant scope, since it does not see this conversation.",
		],
		parameters: Type.Object({
			agent: agentSchema,
			task: Type.String({ description: "The question or task, passed to the agent unchanged." }),
			scope: Type.Optional(
				Type.String({ description: "Optional scope hint appended to the task: files, a diff, a commit range." }),
			),
			model: Type.Optional(Type.String({ description: "Model, passed unchanged. Omit for the CLI's default." })),
			effort: Type.Optional(
				Type.String({ description: "Reasoning effort, passed unchanged. Omit for the CLI's default." }),
			),
			cwd: Type.Optional(Type.String({ description: "Working directory for the agent (default: the current one)." })),
		}),

		async execute(_toolCallId, raw, signal, onUpdate, ctx) {
			const params = raw as ToolParams;
			const p: DispatchParams = {
				agent: params.agent,
				task: params.task,
				scope: params.scope || undefined,
				model: params.model || undefined,
				effort: params.effort || undefined,
				cwd: resolve(ctx.cwd, params.cwd || "."),
			};
			let bin: string;
			try {
				bin = locate().bin;
			} catch (e) {
				return notFoundResult(p, e);
			}
			const run = startDispatch(bin, p, {
				signal,
				registry,
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
			text.setText(callLines(args as CallArgs, state.identity, theme).join("\n"));
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

	pi.on("session_start", (_event, ctx) => {
		registry.reopen();
		if (loadProblem && ctx.hasUI) ctx.ui.notify(`dispatch: ${loadProblem}`, "warning");
	});

	// D12: the same idempotent cancel as abort, for every live process, and wait for all of them.
	pi.on("session_shutdown", async () => {
		await registry.shutdown();
	});

	// ---------------------------------------------------------------------------------------------
	// /dispatch

	pi.registerMessageRenderer(MSG_RESULT, (message, options, theme) => {
		const d = message.details;
		if (!isDetails(d)) return undefined;
		const call = callLines(
			{ agent: d.agent, task: d.task, model: d.identity.requested.model ?? undefined, effort: d.identity.requested.effort ?? undefined },
			d.identity,
			theme,
			"/dispatch",
		);
		const box = new Box(options.outputPad, 1, (t) => theme.bg("customMessageBg", t));
		box.addChild(new Text(call.join("\n"), 0, 0));
		const answer = d.status === "succeeded" ? textOf(message.content) : "";
		box.addChild(resultComponent(d, answer, options.expanded, theme, options.keyHint));
		return box;
	});

	pi.registerMessageRenderer(MSG_MODELS, (message, options, theme) => {
		const box = new Box(options.outputPad, 1, (t) => theme.bg("customMessageBg", t));
		box.addChild(new Text(theme.fg("toolTitle", theme.bold("/dispatch models ")) + textOf(message.content), 0, 0));
		return box;
	});

	pi.registerMessageRenderer(MSG_CHECK, (message, options, theme) => {
		const box = new Box(options.outputPad, 1, (t) => theme.bg("customMessageBg", t));
		const reports = Array.isArray(message.details) ? (message.details as CheckReport[]) : [];
		const failed = reports.some((r) => !r.passed);
		const title = theme.fg("toolTitle", theme.bold("/dispatch check "));
		const body = theme.fg(failed ? "error" : "toolOutput", textOf(message.content));
		box.addChild(new Text(title + body, 0, 0));
		return box;
	});

	pi.registerCommand("dispatch", {
		description:
			"Run another coding agent read-only: /dispatch AGENT TASK · /dispatch models AGENT · /dispatch check [AGENT…]",
		getArgumentCompletions: (prefix) => {
			const words = [...agentIds, ...SUBCOMMANDS.filter((s) => s !== "help")];
			const items = words.filter((w) => w.startsWith(prefix.trim())).map((w) => ({ value: `${w} `, label: w }));
			return items.length ? items : null;
		},
		handler: async (args, ctx) => {
			if (refuseInPrintMode(ctx)) return;
			const parsed = parseDispatchArgs(args);
			switch (parsed.kind) {
				case "help":
					say(ctx, `${parsed.error ? `${parsed.error}\n` : ""}${USAGE}${agentIds.length ? `\nagents: ${agentIds.join(", ")}` : ""}`, parsed.error ? "warning" : "info");
					return;
				case "check":
					await showCheck(parsed.agents, ctx);
					return;
				case "models":
					await showModels(parsed.agent, ctx);
					return;
				case "run":
					await personDispatch(parsed, ctx);
					return;
			}
		},
	});

	function say(ctx: ExtensionContext, text: string, level: "info" | "warning" | "error"): void {
		if (ctx.hasUI) ctx.ui.notify(text, level);
		else process.stderr.write(`${text}\n`);
	}

	async function showModels(agent: string, ctx: ExtensionContext): Promise<void> {
		let catalogue: ModelCatalogue;
		try {
			catalogue = await listModels(locate().bin, agent, { signal: ctx.signal });
		} catch (e) {
			say(ctx, `/dispatch models ${agent}: ${e instanceof Error ? e.message : String(e)}`, "warning");
			return;
		}
		const lines = catalogue.models.map((m) => {
			const def = m.defaultEffort ? ` default effort ${m.defaultEffort}` : "";
			const efforts = m.efforts.length ? `; efforts ${m.efforts.join(", ")}` : "";
			return `${m.slug}${m.displayName ? ` (${m.displayName})` : ""}${def}${efforts}${m.hidden ? " [hidden]" : ""}`;
		});
		pi.sendMessage({
			customType: MSG_MODELS,
			content: `${catalogue.agent}: ${catalogue.models.length} models\n${lines.join("\n")}`,
			display: true,
			details: catalogue,
		});
	}

	/** The dispatcher binary, or undefined after telling the person how to install it. */
	function binaryOrSay(ctx: ExtensionContext): string | undefined {
		try {
			return locate().bin;
		} catch (e) {
			say(ctx, e instanceof Error ? e.message : String(e), "error");
			return undefined;
		}
	}

	/** `/dispatch check [AGENT…]`: run the offline read-only check now; the report lands as a message. */
	async function showCheck(agents: string[], ctx: ExtensionContext): Promise<void> {
		const bin = binaryOrSay(ctx);
		if (!bin) return;
		const which = agents.length ? agents.join(", ") : "every agent";
		say(ctx, `Running the offline read-only check for ${which}…`, "info");
		let reports: CheckReport[];
		try {
			reports = await runCheck(bin, agents, { signal: ctx.signal });
		} catch (e) {
			say(ctx, `/dispatch check: ${e instanceof Error ? e.message : String(e)}`, "warning");
			return;
		}
		pi.sendMessage({
			customType: MSG_CHECK,
			content: reports.map(checkText).join("\n\n"),
			display: true,
			details: reports,
		});
	}

	/** A person's dispatch: live tail in a widget, Esc cancels, the result lands as a message. */
	async function personDispatch(
		req: { agent: string; task: string; model?: string; effort?: string; scope?: string },
		ctx: ExtensionContext,
	): Promise<void> {
		const p: DispatchParams = { ...req, cwd: ctx.cwd };
		const bin = binaryOrSay(ctx);
		if (!bin) return;
		const widgetKey = `dispatch-${Date.now()}`;
		const abort = new AbortController();
		let live: Text | undefined;
		let requestRender: (() => void) | undefined;
		let widgetTheme: Theme | undefined;
		const callArgs: CallArgs = { agent: p.agent, task: p.task, model: p.model, effort: p.effort };
		const liveText = (d: DispatchDetails | undefined, theme: Theme) => {
			const lines = callLines(callArgs, d?.identity, theme, "/dispatch");
			if (d) lines.push(...runningLines(d, theme));
			lines.push(theme.fg("dim", "Esc cancels"));
			return lines.join("\n");
		};
		let stopInput: (() => void) | undefined;
		if (ctx.mode === "tui") {
			ctx.ui.setWidget(widgetKey, (tui, theme) => {
				widgetTheme = theme;
				requestRender = () => tui.requestRender();
				live = new Text(liveText(undefined, theme), 0, 0);
				return live;
			});
			stopInput = ctx.ui.onTerminalInput((data) => {
				if (data === "\u001b") {
					abort.abort();
					return { consume: true };
				}
				return undefined;
			});
		}
		let outcome: Outcome;
		try {
			const run = startDispatch(bin, p, {
				signal: abort.signal,
				registry,
				onProgress: (progress) => {
					const d = runningDetails(p, progress);
					if (live && widgetTheme) {
						live.setText(liveText(d, widgetTheme));
						requestRender?.();
					} else if (ctx.hasUI && ctx.mode !== "tui") {
						ctx.ui.setWidget(widgetKey, [progressText(d)]);
					}
				},
			});
			outcome = await run.done;
		} finally {
			stopInput?.();
			if (ctx.hasUI) ctx.ui.setWidget(widgetKey, undefined);
		}
		const d = finalDetails(p, outcome);
		pi.sendMessage({ customType: MSG_RESULT, content: modelText(d, outcome), display: true, details: d });
	}
}

/** Result when the binary cannot be found: the install instructions, as a failure with a marker. */
function notFoundResult(p: DispatchParams, e: unknown) {
	const message = e instanceof BinaryNotFoundError || e instanceof Error ? e.message : String(e);
	const details: DispatchDetails = {
		v: 1,
		status: "failed",
		agent: p.agent,
		task: p.task.slice(0, 400),
		scope: p.scope ?? null,
		cwd: p.cwd,
		identity: {
			agent: p.agent,
			requested: { model: p.model ?? null, effort: p.effort ?? null },
			confirmed: { model: { state: "not-reported" }, effort: { state: "not-reported" } },
		},
		failure: { kind: "dispatcher-not-found", message },
		activity: [],
		eventCount: 0,
		usage: null,
		costReported: false,
		reasoningTokens: null,
		sessionId: null,
		program: null,
		exit: null,
		stderrTail: "",
		durationMs: 0,
		elapsedMs: 0,
		checkBypassed: false,
		partialAnswer: "",
	};
	return {
		content: [{ type: "text" as const, text: `dispatch unavailable (dispatcher-not-found): ${message}` }],
		details,
		isError: true,
	};
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

/** One agent's check report as a few lines a person reads. */
export function checkText(r: CheckReport): string {
	const head = `${r.passed ? "PASS" : "FAIL"} ${r.agent}${r.version ? ` (${r.version})` : ""} in ${(r.durationMs / 1000).toFixed(1)} s`;
	const lines = [head];
	for (const p of r.probes) {
		lines.push(`  ${p.kind}: ${p.verdict}${p.evidence ? ` — ${p.evidence}` : ""}`);
	}
	if (r.probes.length) lines.push(`  tree: ${r.treeIdentical ? "byte-identical before and after" : `changed (${r.treeChanges.join(", ")})`}`);
	for (const p of r.problems) lines.push(`  problem: ${p}`);
	for (const f of r.fixes) lines.push(`  fix: ${f}`);
	return lines.join("\n");
}
