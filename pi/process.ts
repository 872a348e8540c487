/**
 * The binary's processes as the extension sees them: start one in its own process group, end it by
 * signalling it, and keep a registry of everything still running so a session shutdown can cancel
 * all of it (design D12).
 *
 * The extension never walks or kills the binary's descendants: the binary owns the agent CLI's
 * process tree. A stop signal (or, for `run --lifeline`, its stdin closing) makes it clean up that
 * tree itself and still report; if Pi dies without running any cleanup, the pipe closes and the
 * binary cancels itself. Only a binary that has not exited a grace period after the signal is
 * SIGKILLed — its own process group, the one it was started in.
 *
 * Node built-ins only, so it is unit-tested without Pi.
 */

import { type ChildProcess, spawn } from "node:child_process";
import type { Readable } from "node:stream";

/** After the stop signal, how long the binary gets to clean up and report before SIGKILL. */
export const KILL_GRACE_MS = 5000;
/** After the binary exited, how long its stdout/stderr may take to close. */
const DRAIN_MS = 2000;

// ---------------------------------------------------------------------------------------------
// Registry

export interface Cancellable {
	cancel(): Promise<unknown>;
}

/**
 * Every process the extension started and has not finished cleaning up. `shutdown` cancels them all
 * through their own idempotent cancel and waits; after it, nothing new starts until `reopen`.
 */
export class ProcessRegistry {
	private readonly live = new Set<Cancellable>();
	private closed = false;

	get size(): number {
		return this.live.size;
	}
	get isClosed(): boolean {
		return this.closed;
	}
	add(c: Cancellable): void {
		this.live.add(c);
	}
	delete(c: Cancellable): void {
		this.live.delete(c);
	}
	reopen(): void {
		this.closed = false;
	}
	async shutdown(): Promise<void> {
		this.closed = true;
		// Entries remove themselves only after cleanup, so waiting on every cancel is waiting on all of it.
		await Promise.allSettled([...this.live].map((c) => c.cancel()));
	}
}

/** The process-wide default registry. */
export const registry = new ProcessRegistry();

// ---------------------------------------------------------------------------------------------
// One process of the binary

/** How the binary's process ended. */
export interface Ended {
	/** How it exited; null when it never ran. */
	exit: { code: number | null; signal: NodeJS.Signals | null } | null;
	/** Set when it could not be started (ENOENT, EACCES). */
	spawnError: Error | null;
}

export interface SpawnOptions {
	/** Keep stdin an open pipe that is never written: the binary's `--lifeline`. Else stdin is /dev/null. */
	lifeline: boolean;
	env?: NodeJS.ProcessEnv;
}

/**
 * The binary, started in its own process group so terminal signals meant for Pi do not reach it.
 * `ended` always resolves (never rejects) once the process and its pipes are done with.
 */
export class BinaryProcess {
	readonly ended: Promise<Ended>;
	private readonly child: ChildProcess;
	private exit: Ended["exit"] = null;
	private spawnError: Error | null = null;
	private stopping = false;
	private killTimer: NodeJS.Timeout | undefined;

	/** Throws when Node refuses the spawn synchronously; a missing binary shows up in `ended`. */
	constructor(bin: string, args: string[], opts: SpawnOptions) {
		this.child = spawn(bin, args, {
			stdio: [opts.lifeline ? "pipe" : "ignore", "pipe", "pipe"],
			detached: true,
			env: opts.env ?? process.env,
		});
		// The lifeline is never written; EPIPE on it after the binary exits is expected.
		this.child.stdin?.on("error", () => {});
		this.ended = new Promise<Ended>((resolveEnded) => {
			let done = false;
			let drainTimer: NodeJS.Timeout | undefined;
			const end = () => {
				if (done) return;
				done = true;
				if (drainTimer) clearTimeout(drainTimer);
				if (this.killTimer) clearTimeout(this.killTimer);
				this.closeLifeline();
				resolveEnded({ exit: this.exit, spawnError: this.spawnError });
			};
			this.child.on("error", (e) => {
				this.spawnError = e;
				if (!this.child.pid) end(); // never started: no exit or close may follow
			});
			this.child.on("exit", (code, signal) => {
				this.exit = { code, signal };
				// Normally 'close' follows at once; never wait forever on pipes something else holds.
				drainTimer = setTimeout(() => {
					this.child.stdout?.destroy();
					this.child.stderr?.destroy();
					end();
				}, DRAIN_MS);
			});
			this.child.on("close", end);
		});
	}

	get pid(): number | null {
		return this.child.pid ?? null;
	}
	get stdout(): Readable | null {
		return this.child.stdout;
	}
	get stderr(): Readable | null {
		return this.child.stderr;
	}
	/** Started, and its exit not seen yet. */
	get running(): boolean {
		return this.child.pid !== undefined && this.exit === null;
	}

	/**
	 * Ask the binary to stop with `signal` (it cleans up its own tree and reports); SIGKILL its process
	 * group if it is still running `graceMs` later. Only the first call acts.
	 */
	stop(signal: NodeJS.Signals, graceMs: number = KILL_GRACE_MS): void {
		if (this.stopping || !this.running) return;
		this.stopping = true;
		this.signal(signal);
		this.killTimer = setTimeout(() => this.signal("SIGKILL", true), graceMs);
	}

	/** The caller is done with the binary: EOF on its stdin. After its result this cancels nothing. */
	closeLifeline(): void {
		this.child.stdin?.destroy();
	}

	private signal(sig: NodeJS.Signals, group = false): void {
		const pid = this.child.pid;
		// While its exit is unseen the pid cannot be reused, and a detached child leads its own group,
		// never Pi's.
		if (!pid || pid <= 1 || !this.running) return;
		try {
			process.kill(group ? -pid : pid, sig);
		} catch {
			// already gone
		}
	}
}
