/**
 * Parsing `/dispatch` arguments (pure; the command itself lives in `command.ts`).
 *
 *   /dispatch AGENT [--model M] [--effort E] [--scope S] [--timeout D] [--max-tokens N] TASK…
 *                                                                 run a dispatch for a person
 *   /dispatch models AGENT                                        list the agent's model catalogue
 *   /dispatch check [AGENT…]                                      prove read-only on this machine
 *   /dispatch jobs [ID]                                           this machine's background jobs, or one job's result
 *   /dispatch cancel ID                                           cancel a background job
 *   /dispatch keep ID                                             let this session's job outlive it
 *   /dispatch help | /dispatch                                    usage
 *
 * Flag values are single words; `--scope` may be quoted ("…" or '…'). Everything after the flags is
 * the task, verbatim.
 */

export type Parsed =
	| { kind: "help"; error?: string }
	| { kind: "models"; agent: string }
	| { kind: "check"; agents: string[] }
	| { kind: "jobs"; id?: string }
	| { kind: "cancel"; id: string }
	| { kind: "keep"; id: string }
	| { kind: "run"; agent: string; task: string; model?: string; effort?: string; scope?: string; timeout?: string; maxTokens?: number };

/** Subcommand words; an agent can never be called this. */
export const SUBCOMMANDS = ["models", "check", "jobs", "cancel", "keep", "help"] as const;

export const USAGE = [
	"/dispatch AGENT [--model M] [--effort E] [--scope S] [--timeout D] [--max-tokens N] TASK",
	"/dispatch models AGENT",
	"/dispatch check [AGENT…]",
	"/dispatch jobs [ID]",
	"/dispatch cancel ID",
	"/dispatch keep ID",
].join("\n");

function takeWord(s: string): [string, string] {
	const t = s.trimStart();
	const q = t[0];
	if (q === '"' || q === "'") {
		const end = t.indexOf(q, 1);
		if (end > 0) return [t.slice(1, end), t.slice(end + 1)];
	}
	const m = /^\S+/.exec(t);
	return m ? [m[0], t.slice(m[0].length)] : ["", ""];
}

export function parseDispatchArgs(input: string): Parsed {
	let rest = input.trim();
	if (!rest) return { kind: "help" };
	let word: string;
	[word, rest] = takeWord(rest);
	if (word === "help" || word === "--help" || word === "-h") return { kind: "help" };
	if (word === "check") return { kind: "check", agents: rest.split(/\s+/).filter(Boolean) };
	if (word === "jobs") {
		const [id] = takeWord(rest);
		return id ? { kind: "jobs", id } : { kind: "jobs" };
	}
	if (word === "cancel" || word === "keep") {
		const [id] = takeWord(rest);
		return id ? { kind: word, id } : { kind: "help", error: `which job? /dispatch ${word} ID (ids: /dispatch jobs)` };
	}
	if (word === "models") {
		const [agent] = takeWord(rest);
		return agent ? { kind: "models", agent } : { kind: "help", error: "which agent? /dispatch models AGENT" };
	}
	const agent = word;
	const opts: { model?: string; effort?: string; scope?: string; timeout?: string; maxTokens?: number } = {};
	for (;;) {
		const [flag, after] = takeWord(rest);
		const m = /^--(model|effort|scope|timeout|max-tokens)(?:=(.*))?$/.exec(flag);
		if (!m) break;
		let value: string;
		if (m[2] !== undefined) {
			value = m[2];
			rest = after;
		} else {
			[value, rest] = takeWord(after);
		}
		if (!value) return { kind: "help", error: `--${m[1]} needs a value` };
		if (m[1] === "max-tokens") {
			if (!/^[1-9]\d*$/.test(value)) return { kind: "help", error: "--max-tokens needs a whole number of tokens, at least 1" };
			opts.maxTokens = Number(value);
		} else {
			opts[m[1] as "model" | "effort" | "scope" | "timeout"] = value;
		}
	}
	const task = rest.trim();
	if (!task) return { kind: "help", error: `what should ${agent} do? /dispatch ${agent} TASK` };
	return { kind: "run", agent, task, ...opts };
}
