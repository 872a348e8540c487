/**
 * agent-dispatch for Pi: a `dispatch` tool and a `/dispatch` command that run another coding-agent
 * CLI as a blocking, read-only subagent through the `agent-dispatch` binary.
 *
 * This file only wires things up: the binary owns adapters, sandboxing and the agent CLI's
 * processes; `host.ts` finds the binary and its agents; `tool.ts` is the tool, `command.ts` the
 * command. Agents are whatever `agent-dispatch agents --json` lists, so a new adapter needs no
 * change here. `docs/pi.md` has the map of every module.
 */

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

import { registerDispatchCommand } from "./command.ts";
import { loadHost } from "./host.ts";
import { JobTracker } from "./jobs.ts";
import { jobMessage } from "./messages.ts";
import { registerDispatchTool } from "./tool.ts";

export default async function agentDispatch(pi: ExtensionAPI): Promise<void> {
	// Find the binary and its agents once, at load. A missing binary still registers the tool, so the
	// model (and the person) get the install instructions instead of "tool not found".
	const host = await loadHost();
	const jobs = new JobTracker({ binary: () => host.binary(), registry: host.registry });
	registerDispatchTool(pi, host, jobs);
	registerDispatchCommand(pi, host, jobs);

	// A background job of this session ended: its result goes into the session as a message the
	// model sees, and starts a turn (after the current run, if the agent is busy) so it can act on
	// it; the person is told at once (a queued follow-up is not shown until it is delivered). A job
	// cancelled from here is only recorded: nobody is waiting for it any more.
	let session: ExtensionContext | undefined;
	jobs.onEnd((job, outcome) => {
		const triggerTurn = !outcome.cancelRequested;
		const message = jobMessage(job, outcome);
		pi.sendMessage(message, { triggerTurn, deliverAs: "followUp" });
		if (session?.hasUI) {
			const how = message.details.status === "succeeded" ? "finished" : `ended: ${message.details.failure?.kind ?? "failed"}`;
			session.ui.notify(`dispatch job ${job.id} (${job.params.agent}) ${how}`, message.details.failure ? "warning" : "info");
		}
	});

	pi.on("session_start", (_event, ctx) => {
		session = ctx;
		host.registry.reopen();
		jobs.reopen();
		if (host.loadProblem && ctx.hasUI) ctx.ui.notify(`dispatch: ${host.loadProblem}`, "warning");
	});

	// D12: the same idempotent cancel as abort, for every live process, and wait for all of them.
	// First this session's background jobs that were not kept (through the binary, which stops each
	// job's whole tree), then everything else, the waiters for kept jobs included.
	pi.on("session_shutdown", async () => {
		session = undefined;
		await jobs.shutdown();
		await host.registry.shutdown();
	});
}
