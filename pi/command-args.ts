/**
 * Parsing `/dispatch` arguments (pure; the command itself lives in `command.ts`).
 *
 *   /dispatch AGENT [--model M] [--effort E] [--scope S] TASK…   run a dispatch for a person
 *   /dispatch models AGENT                                        list the agent's model catalogue
 *   /dispatch check [AGENT…]                                      prove read-only on this machine
 *   /dispatch help | /dispatch                                    usage
 *
 * Flag values are single words; `--scope` may be quoted ("…" or '…'). Everything after the flags is
 * the task, verbatim.
 */

export type Parsed =
	| { kind: "help"; error?: string }
	| { kind: "models"; agent: string }
	| { kind: "check"; agents: string[] }
	| { kind: "run"; agent: string; task: string; model?: string; effort?: string; scope?: string };

/** Subcommand words; an agent can never be called this. */
export const SUBCOMMANDS = ["models", "check", "help"] as const;

export const USAGE = [
	"/dispatch AGENT [--model M] [--effort E] [--scope S] TASK",
	"/dispatch models AGENT",
	"/dispatch check [AGENT…]",
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
	if (word === "models") {
		const [agent] = takeWord(rest);
		return agent ? { kind: "models", agent } : { kind: "help", error: "which agent? /dispatch models AGENT" };
	}
	const agent = word;
	const opts: { model?: string; effort?: string; scope?: string } = {};
	for (;;) {
		const [flag, after] = takeWord(rest);
		const m = /^--(model|effort|scope)(?:=(.*))?$/.exec(flag);
		if (!m) break;
		let value: string;
		if (m[2] !== undefined) {
			value = m[2];
			rest = after;
		} else {
			[value, rest] = takeWord(after);
		}
		if (!value) return { kind: "help", error: `--${m[1]} needs a value` };
		opts[m[1] as "model" | "effort" | "scope"] = value;
	}
	const task = rest.trim();
	if (!task) return { kind: "help", error: `what should ${agent} do? /dispatch ${agent} TASK` };
	return { kind: "run", agent, task, ...opts };
}
