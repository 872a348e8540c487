/**
 * What the binary says about its agents, their models and this machine: `agents --json`,
 * `models AGENT --json` and `check [AGENT…] --json`, as protocol types or an error carrying the
 * binary's own message.
 */

import { type CaptureOptions, runCaptured } from "./captured.ts";
import type { AgentInfo, CheckReport, ModelCatalogue } from "./protocol.ts";

/** `agent-dispatch agents --json`. */
export async function listAgents(bin: string, opts: CaptureOptions = {}): Promise<AgentInfo[]> {
	const r = await runCaptured(bin, ["agents", "--json"], { ...opts, timeoutMs: opts.timeoutMs ?? 30_000 });
	if (r.timedOut) throw new Error(`${bin} agents --json timed out`);
	if (r.code !== 0) throw new Error(`${bin} agents --json failed (${r.code ?? r.signal}): ${r.stderr.trim()}`);
	const parsed = JSON.parse(r.stdout) as AgentInfo[];
	if (!Array.isArray(parsed)) throw new Error(`${bin} agents --json did not print a list`);
	return parsed;
}

/**
 * `agent-dispatch check [AGENT…] --json`: prove read-only on this machine. Exit 1 only means some
 * agent failed; the reports are printed either way.
 */
export async function runCheck(bin: string, agents: string[], opts: CaptureOptions = {}): Promise<CheckReport[]> {
	const r = await runCaptured(bin, ["check", ...agents, "--json"], { ...opts, timeoutMs: opts.timeoutMs ?? 300_000 });
	if (r.timedOut) throw new Error(`${bin} check timed out`);
	if (r.code !== 0 && r.code !== 1) {
		const msg = r.stderr.trim().replace(/^agent-dispatch:\s*/, "");
		throw new Error(msg || `${bin} check exited with ${r.code ?? r.signal}`);
	}
	const parsed = JSON.parse(r.stdout) as CheckReport[];
	if (!Array.isArray(parsed)) throw new Error(`${bin} check --json did not print a list`);
	return parsed;
}

/** `agent-dispatch models AGENT --json`: the catalogue, or an error carrying the binary's own message. */
export async function listModels(bin: string, agent: string, opts: CaptureOptions = {}): Promise<ModelCatalogue> {
	const r = await runCaptured(bin, ["models", agent, "--json"], { ...opts, timeoutMs: opts.timeoutMs ?? 60_000 });
	if (r.timedOut) throw new Error(`${bin} models ${agent} --json timed out`);
	if (r.code !== 0) {
		const msg = r.stderr.trim().replace(/^Error:\s*/, "");
		throw new Error(msg || `${bin} models ${agent} exited with ${r.code ?? r.signal}`);
	}
	return JSON.parse(r.stdout) as ModelCatalogue;
}
