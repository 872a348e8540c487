/**
 * Captured runs: the binary run to completion with its output collected (`agents`, `models`,
 * `check`), tracked in the process registry so a session shutdown stops them too.
 */

import { BinaryProcess, type Cancellable, type ProcessRegistry, registry } from "./process.ts";
import { collectTail } from "./streams.ts";

/** Bounds on what a captured run keeps of its stdout and stderr. */
const STDOUT_KEEP = 16 * 1024 * 1024;
const STDERR_KEEP = 16 * 1024;
/**
 * How a captured run is stopped: SIGINT, as Ctrl-C at a terminal. `check` cancels its probes and
 * cleans up the CLIs it started on it; `agents` and `models` simply end.
 */
const STOP_SIGNAL: NodeJS.Signals = "SIGINT";

export interface Captured {
	code: number | null;
	signal: NodeJS.Signals | null;
	stdout: string;
	stderr: string;
	timedOut: boolean;
}

export interface CaptureOptions {
	env?: NodeJS.ProcessEnv;
	timeoutMs?: number;
	signal?: AbortSignal;
	registry?: ProcessRegistry;
}

/** Run the binary to completion. Rejects when it cannot be started (or nothing may start now). */
export async function runCaptured(bin: string, args: string[], opts: CaptureOptions = {}): Promise<Captured> {
	const reg = opts.registry ?? registry;
	if (reg.isClosed) throw new Error("Pi is shutting down");
	if (opts.signal?.aborted) throw new Error("cancelled");
	const proc = new BinaryProcess(bin, args, { lifeline: false, env: opts.env });
	const stdout = proc.stdout ? collectTail(proc.stdout, STDOUT_KEEP) : undefined;
	const stderr = proc.stderr ? collectTail(proc.stderr, STDERR_KEEP) : undefined;
	let timedOut = false;
	const entry: Cancellable = {
		cancel: () => {
			proc.stop(STOP_SIGNAL);
			return proc.ended;
		},
	};
	reg.add(entry);
	const timer = opts.timeoutMs
		? setTimeout(() => {
				timedOut = true;
				void entry.cancel();
			}, opts.timeoutMs)
		: undefined;
	const onAbort = () => void entry.cancel();
	opts.signal?.addEventListener("abort", onAbort, { once: true });
	const ended = await proc.ended;
	if (timer) clearTimeout(timer);
	opts.signal?.removeEventListener("abort", onAbort);
	reg.delete(entry);
	if (ended.spawnError && !ended.exit) throw ended.spawnError;
	return {
		code: ended.exit?.code ?? null,
		signal: ended.exit?.signal ?? null,
		stdout: stdout?.text() ?? "",
		stderr: stderr?.text() ?? "",
		timedOut,
	};
}
