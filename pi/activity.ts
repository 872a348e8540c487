/**
 * The live activity tail of a dispatch: protocol events turned into a short, bounded list of items
 * a person can follow (prose, commands updated in place, reasoning, notices, errors).
 */

import type { CommandStatus, StreamEvent } from "./protocol.ts";

/** Activity items kept in the live tail. */
export const ACTIVITY_KEEP = 12;
/** One activity item's text is cut to this many characters. */
const ACTIVITY_TEXT_MAX = 2000;

export interface ActivityItem {
	kind: "command" | "text" | "activity" | "notice" | "error";
	text: string;
	/** Command id (to update a started command in place). */
	id?: string;
	status?: CommandStatus;
	exitCode?: number;
	/** For `activity`: reasoning, plan, file-change, tool. For `notice`: info, warning. */
	label?: string;
}

function cut(s: string): string {
	return s.length <= ACTIVITY_TEXT_MAX ? s : `${s.slice(0, ACTIVITY_TEXT_MAX - 1)}…`;
}

/** The last {@link ACTIVITY_KEEP} items; `metadata` and `done` events add none. */
export class ActivityTail {
	readonly items: ActivityItem[] = [];

	add(ev: StreamEvent): void {
		switch (ev.type) {
			case "text":
				if (ev.text.trim()) this.push({ kind: "text", text: cut(ev.text) });
				break;
			case "command": {
				const item: ActivityItem = {
					kind: "command",
					text: cut(ev.command),
					status: ev.status,
					id: ev.id,
					exitCode: ev.exitCode,
				};
				const prev = ev.id ? this.items.findIndex((a) => a.kind === "command" && a.id === ev.id) : -1;
				if (prev >= 0) this.items[prev] = item;
				else this.push(item);
				break;
			}
			case "activity":
				this.push({ kind: "activity", label: ev.kind, text: cut(ev.text) });
				break;
			case "notice":
				this.push({ kind: "notice", label: ev.level, text: cut(ev.message) });
				break;
			case "error":
				this.push({ kind: "error", text: cut(ev.message) });
				break;
			default:
				break; // metadata, done, and unknown event types
		}
	}

	/** The newest prose, e.g. the partial answer of a run that ended without a result. */
	lastText(): string {
		return [...this.items].reverse().find((a) => a.kind === "text")?.text ?? "";
	}

	private push(item: ActivityItem): void {
		this.items.push(item);
		if (this.items.length > ACTIVITY_KEEP) this.items.splice(0, this.items.length - ACTIVITY_KEEP);
	}
}
