/**
 * `render.ts`'s lines as pi-tui components, shared by the tool row and the `/dispatch` message.
 */

import { getMarkdownTheme, type Theme } from "@earendil-works/pi-coding-agent";
import { type Component, Container, Markdown, Text } from "@earendil-works/pi-tui";

import type { DispatchDetails } from "./details.ts";
import { backgroundLines, expandedView, type KeyHint, runningLines, summaryLines } from "./render.ts";

/** The text parts of a tool result's or a message's content. */
export function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.filter((c): c is { type: "text"; text: string } => c?.type === "text" && typeof c.text === "string")
		.map((c) => c.text)
		.join("\n");
}

/** A running dispatch's live tail, a background one's job line, or a finished one collapsed (summary) or expanded (answer as Markdown). */
export function resultComponent(d: DispatchDetails, answer: string, expanded: boolean, theme: Theme, keyHint: KeyHint): Component {
	if (d.status === "running") return new Text(runningLines(d, theme).join("\n"), 0, 0);
	if (d.status === "background") return new Text(backgroundLines(d, theme).join("\n"), 0, 0);
	if (!expanded) return new Text(summaryLines(d, answer, theme, keyHint).join("\n"), 0, 0);
	const view = expandedView(d, answer, theme);
	const box = new Container();
	box.addChild(new Text(view.head.join("\n"), 0, 0));
	if (view.answer.trim()) box.addChild(new Markdown(view.answer, 0, 1, getMarkdownTheme()));
	box.addChild(new Text(view.tail.join("\n"), 0, 0));
	return box;
}
