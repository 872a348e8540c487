/**
 * agent-dispatch for Pi: a `dispatch` tool and a `/dispatch` command that run another coding-agent
 * CLI as a blocking, read-only subagent through the `agent-dispatch` binary.
 *
 * This file only wires things up: the binary owns adapters, sandboxing and the agent CLI's
 * processes; `host.ts` finds the binary and its agents; `tool.ts` is the tool, `command.ts` the
 * command. Agents are whatever `agent-dispatch agents --json` lists, so a new adapter needs no
 * change here. `docs/pi.md` has the map of every module.
 */

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import { registerDispatchCommand } from "./command.ts";
import { loadHost } from "./host.ts";
import { registerDispatchTool } from "./tool.ts";

export default async function agentDispatch(pi: ExtensionAPI): Promise<void> {
	// Find the binary and its agents once, at load. A missing binary still registers the tool, so the
	// model (and the person) get the install instructions instead of "tool not found".
	const host = await loadHost();
	registerDispatchTool(pi, host);
	registerDispatchCommand(pi, host);

	pi.on("session_start", (_event, ctx) => {
		host.registry.reopen();
		if (host.loadProblem && ctx.hasUI) ctx.ui.notify(`dispatch: ${host.loadProblem}`, "warning");
	});

	// D12: the same idempotent cancel as abort, for every live process, and wait for all of them.
	pi.on("session_shutdown", async () => {
		await host.registry.shutdown();
	});
}
