/**
 * What the tool and the `/dispatch` command share: the binary (looked up once at load, and again
 * only while it is missing — it may be built after Pi started), the agents it listed at load, and
 * the registry of every process the extension started.
 */

import { listAgents } from "./discovery.ts";
import { type Located, locateBinary } from "./locate.ts";
import { ProcessRegistry } from "./process.ts";
import type { AgentInfo } from "./protocol.ts";

export interface Host {
	readonly registry: ProcessRegistry;
	/** The agents `agents --json` listed at load; empty when that failed. */
	readonly agents: readonly AgentInfo[];
	/** Why the binary or its agents could not be read at load, if they could not. */
	readonly loadProblem: string | undefined;
	/** The binary's path; throws `BinaryNotFoundError` (with the install instructions) when there is none. */
	binary(): string;
}

/** Find the binary and its agents. A missing binary is a load problem, not an error. */
export async function loadHost(): Promise<Host> {
	const registry = new ProcessRegistry();
	let located: Located | undefined;
	let loadProblem: string | undefined;
	let agents: AgentInfo[] = [];
	try {
		located = locateBinary();
		agents = await listAgents(located.bin, { registry });
	} catch (e) {
		loadProblem = e instanceof Error ? e.message : String(e);
	}
	return {
		registry,
		agents,
		loadProblem,
		binary() {
			located ??= locateBinary();
			return located.bin;
		},
	};
}
