/**
 * Starts one dispatch through `dispatch.ts` (as Pi would) and then just waits, so a test can SIGKILL
 * this process — no cleanup runs — and check that the lifeline alone ends the dispatch.
 * Prints one JSON line `{"dispatcherPid": N}` once the agent CLI is working.
 * argv: BIN AGENT TASK
 */

import { startDispatch } from "../../dispatch.ts";

const [bin, agent, task] = process.argv.slice(2);
const run = startDispatch(bin!, { agent: agent!, task: task!, cwd: process.cwd() }, {
	onProgress: (p) => {
		if (p.activity.some((a) => a.kind === "command")) {
			process.stdout.write(`${JSON.stringify({ dispatcherPid: run.pid })}\n`);
		}
	},
});
await run.done;
process.stdout.write(`${JSON.stringify({ finished: true })}\n`);
