/**
 * The messages the extension posts into the session, and how they are drawn: a dispatch's result
 * (the same collapsed/expanded view as the tool row), a background job's result, the job list, a
 * model catalogue, a read-only check report.
 */

import type { ExtensionAPI, MessageRenderOptions, Theme } from "@earendil-works/pi-coding-agent";
import { Box, type Component, Text } from "@earendil-works/pi-tui";

import { type DispatchDetails, finalDetails, isDetails, jobEndText } from "./details.ts";
import type { Outcome } from "./dispatch.ts";
import type { TrackedJob } from "./jobs.ts";
import type { CheckReport, ModelCatalogue } from "./protocol.ts";
import { callLines } from "./render.ts";
import { resultComponent, textOf } from "./view.ts";

/** Custom message types. */
export const MSG_RESULT = "dispatch";
export const MSG_MODELS = "dispatch-models";
export const MSG_CHECK = "dispatch-check";
/** A background job's result (posted when it ends, or on `/dispatch jobs ID`). */
export const MSG_JOB = "dispatch-job";
/** `/dispatch jobs`: this machine's jobs. */
export const MSG_JOBS = "dispatch-jobs";

/** A finished job as a message: `details` is a dispatch's, with the job named. */
export function jobMessage(job: Pick<TrackedJob, "id" | "keep" | "params">, o: Outcome) {
	const d: DispatchDetails = { ...finalDetails(job.params, o), job: { id: job.id, keep: job.keep } };
	return { customType: MSG_JOB, content: jobEndText(d, o), display: true, details: d };
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

/** A model catalogue, one model a line. */
export function catalogueText(catalogue: ModelCatalogue): string {
	const lines = catalogue.models.map((m) => {
		const def = m.defaultEffort ? ` default effort ${m.defaultEffort}` : "";
		const efforts = m.efforts.length ? `; efforts ${m.efforts.join(", ")}` : "";
		return `${m.slug}${m.displayName ? ` (${m.displayName})` : ""}${def}${efforts}${m.hidden ? " [hidden]" : ""}`;
	});
	return `${catalogue.agent}: ${catalogue.models.length} models\n${lines.join("\n")}`;
}

/** A message box with the custom-message background. */
function messageBox(pad: number, theme: Theme, ...children: Component[]): Box {
	const box = new Box(pad, 1, (t) => theme.bg("customMessageBg", t));
	for (const c of children) box.addChild(c);
	return box;
}

export function registerMessageRenderers(pi: ExtensionAPI): void {
	/**
	 * A dispatch's result as a message: the call row titled `title`, then the tool row's view. A job's
	 * content starts with a line naming the job (for the model); `answerOf` strips it.
	 */
	const resultMessage =
		(title: (d: DispatchDetails) => string, answerOf: (content: string) => string) =>
		(message: { content: unknown; details?: unknown }, options: MessageRenderOptions, theme: Theme) => {
			const d = message.details;
			if (!isDetails(d)) return undefined;
			const call = callLines(
				{ agent: d.agent, task: d.task, model: d.identity.requested.model ?? undefined, effort: d.identity.requested.effort ?? undefined },
				d.identity,
				theme,
				title(d),
			);
			const answer = d.status === "succeeded" ? answerOf(textOf(message.content)) : "";
			return messageBox(
				options.outputPad,
				theme,
				new Text(call.join("\n"), 0, 0),
				resultComponent(d, answer, options.expanded, theme, options.keyHint),
			);
		};
	pi.registerMessageRenderer(MSG_RESULT, resultMessage(() => "/dispatch", (text) => text));
	pi.registerMessageRenderer(
		MSG_JOB,
		resultMessage((d) => `job ${d.job?.id ?? ""}`, (text) => text.slice(text.indexOf("\n\n") + 2)),
	);

	pi.registerMessageRenderer(MSG_JOBS, (message, options, theme) => {
		const title = theme.fg("toolTitle", theme.bold("/dispatch jobs "));
		return messageBox(options.outputPad, theme, new Text(title + textOf(message.content), 0, 0));
	});

	pi.registerMessageRenderer(MSG_MODELS, (message, options, theme) => {
		const title = theme.fg("toolTitle", theme.bold("/dispatch models "));
		return messageBox(options.outputPad, theme, new Text(title + textOf(message.content), 0, 0));
	});

	pi.registerMessageRenderer(MSG_CHECK, (message, options, theme) => {
		const reports = Array.isArray(message.details) ? (message.details as CheckReport[]) : [];
		const failed = reports.some((r) => !r.passed);
		const title = theme.fg("toolTitle", theme.bold("/dispatch check "));
		const body = theme.fg(failed ? "error" : "toolOutput", textOf(message.content));
		return messageBox(options.outputPad, theme, new Text(title + body, 0, 0));
	});
}
