/**
 * `/dispatch` for a person: run a dispatch with a live widget (Esc cancels), list an agent's models,
 * run the read-only check, list background jobs or show one's result, cancel or keep a job; each
 * lands in the session as a message (`messages.ts`) or a notification.
 */

import type { ExtensionAPI, ExtensionContext, Theme } from "@earendil-works/pi-coding-agent";
import { Text } from "@earendil-works/pi-tui";

import { parseDispatchArgs, SUBCOMMANDS, USAGE } from "./command-args.ts";
import { type DispatchDetails, finalDetails, modelText, progressText, runningDetails } from "./details.ts";
import { type DispatchParams, type Outcome, startDispatch } from "./dispatch.ts";
import { listModels, runCheck } from "./discovery.ts";
import type { Host } from "./host.ts";
import type { JobTracker } from "./jobs.ts";
import {
	catalogueText,
	checkText,
	jobMessage,
	MSG_CHECK,
	MSG_JOBS,
	MSG_MODELS,
	MSG_RESULT,
	registerMessageRenderers,
} from "./messages.ts";
import { type CheckReport, type JobView, jobFinished, type ModelCatalogue } from "./protocol.ts";
import { type CallArgs, callLines, jobsText, runningLines } from "./render.ts";
import { refuseInPrintMode } from "./print-mode.ts";

type Level = "info" | "warning" | "error";

function say(ctx: ExtensionContext, text: string, level: Level): void {
	if (ctx.hasUI) ctx.ui.notify(text, level);
	else process.stderr.write(`${text}\n`);
}

function errorText(e: unknown): string {
	return e instanceof Error ? e.message : String(e);
}

export function registerDispatchCommand(pi: ExtensionAPI, host: Host, jobs: JobTracker): void {
	registerMessageRenderers(pi);
	const agentIds = host.agents.map((a) => a.id);

	pi.registerCommand("dispatch", {
		description:
			"Run another coding agent read-only: /dispatch AGENT TASK · models AGENT · check [AGENT…] · jobs [ID] · cancel ID · keep ID",
		getArgumentCompletions: (prefix) => {
			const words = [...agentIds, ...SUBCOMMANDS.filter((s) => s !== "help")];
			const items = words.filter((w) => w.startsWith(prefix.trim())).map((w) => ({ value: `${w} `, label: w }));
			return items.length ? items : null;
		},
		handler: async (args, ctx) => {
			if (refuseInPrintMode(ctx)) return;
			const parsed = parseDispatchArgs(args);
			switch (parsed.kind) {
				case "help": {
					const agents = agentIds.length ? `\nagents: ${agentIds.join(", ")}` : "";
					say(ctx, `${parsed.error ? `${parsed.error}\n` : ""}${USAGE}${agents}`, parsed.error ? "warning" : "info");
					return;
				}
				case "check":
					await showCheck(parsed.agents, ctx);
					return;
				case "models":
					await showModels(parsed.agent, ctx);
					return;
				case "run":
					await personDispatch(parsed, ctx);
					return;
				case "jobs":
					await (parsed.id ? showJob(parsed.id, ctx) : listJobs(ctx));
					return;
				case "cancel":
					await cancelJob(parsed.id, ctx);
					return;
				case "keep":
					if (jobs.keep(parsed.id)) say(ctx, `job ${parsed.id} is kept: it runs on if this session ends; /dispatch jobs ${parsed.id} shows its result later`, "info");
					else say(ctx, `job ${parsed.id} was not started by this session (only those are cancelled when it ends)`, "warning");
					return;
			}
		},
	});

	/** The dispatcher binary, or undefined after telling the person how to install it. */
	function binaryOrSay(ctx: ExtensionContext): string | undefined {
		try {
			return host.binary();
		} catch (e) {
			say(ctx, errorText(e), "error");
			return undefined;
		}
	}

	async function showModels(agent: string, ctx: ExtensionContext): Promise<void> {
		const bin = binaryOrSay(ctx);
		if (!bin) return;
		let catalogue: ModelCatalogue;
		try {
			catalogue = await listModels(bin, agent, { signal: ctx.signal, registry: host.registry });
		} catch (e) {
			say(ctx, `/dispatch models ${agent}: ${errorText(e)}`, "warning");
			return;
		}
		pi.sendMessage({ customType: MSG_MODELS, content: catalogueText(catalogue), display: true, details: catalogue });
	}

	/** `/dispatch check [AGENT…]`: run the offline read-only check now; the report lands as a message. */
	async function showCheck(agents: string[], ctx: ExtensionContext): Promise<void> {
		const bin = binaryOrSay(ctx);
		if (!bin) return;
		const which = agents.length ? agents.join(", ") : "every agent";
		say(ctx, `Running the offline read-only check for ${which}…`, "info");
		let reports: CheckReport[];
		try {
			reports = await runCheck(bin, agents, { signal: ctx.signal, registry: host.registry });
		} catch (e) {
			say(ctx, `/dispatch check: ${errorText(e)}`, "warning");
			return;
		}
		pi.sendMessage({ customType: MSG_CHECK, content: reports.map(checkText).join("\n\n"), display: true, details: reports });
	}

	/** `/dispatch jobs`: every job on this machine, and the results of this session's finished ones. */
	async function listJobs(ctx: ExtensionContext): Promise<void> {
		if (!binaryOrSay(ctx)) return;
		let views: JobView[];
		try {
			views = await jobs.list();
		} catch (e) {
			say(ctx, `/dispatch jobs: ${errorText(e)}`, "warning");
			return;
		}
		pi.sendMessage({ customType: MSG_JOBS, content: jobsText(views, jobs.all()), display: true, details: views });
	}

	/** `/dispatch jobs ID`: a finished job's result as a message (any job on this machine, e.g. a kept one). */
	async function showJob(id: string, ctx: ExtensionContext): Promise<void> {
		if (!binaryOrSay(ctx)) return;
		try {
			const view = await jobs.show(id);
			if (!jobFinished(view.state)) {
				say(ctx, `job ${id} is ${view.state} (${view.agent} in ${view.cwd}); /dispatch cancel ${id} stops it`, "info");
				return;
			}
			const mine = jobs.get(id);
			const outcome = mine?.outcome ?? (await jobs.outcome(view));
			const params = mine?.params ?? { agent: view.agent, task: "", cwd: view.cwd, model: view.model, effort: view.effort, scope: view.scope };
			pi.sendMessage(jobMessage({ id, keep: mine?.keep ?? false, params }, outcome));
		} catch (e) {
			say(ctx, `/dispatch jobs ${id}: ${errorText(e)}`, "warning");
		}
	}

	/** `/dispatch cancel ID`: that job only; returns once the binary says its tree is gone. */
	async function cancelJob(id: string, ctx: ExtensionContext): Promise<void> {
		if (!binaryOrSay(ctx)) return;
		try {
			const view = await jobs.cancel(id);
			say(ctx, `job ${id}: ${view.state}`, "info");
		} catch (e) {
			say(ctx, `/dispatch cancel ${id}: ${errorText(e)}`, "warning");
		}
	}

	/** A person's dispatch: live tail in a widget, Esc cancels, the result lands as a message. */
	async function personDispatch(
		req: Omit<DispatchParams, "cwd">,
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
				registry: host.registry,
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
