/**
 * Progress coalescing: a dispatch can stream thousands of events a second, and Pi re-renders on
 * every update, so updates reach Pi at most about ten times a second and the last one is never lost.
 */

/** At most one progress callback per this many milliseconds (≈10 per second). */
export const UPDATE_INTERVAL_MS = 100;

/**
 * Calls `emit` at most once per `intervalMs`, however often `poke` is called: the first poke after a
 * quiet period emits at once, later ones are folded into one trailing emit. `emit` builds its own
 * snapshot, so the trailing call always carries the newest state.
 */
export class Coalescer {
	private last = Number.NEGATIVE_INFINITY;
	private timer: NodeJS.Timeout | undefined;
	private stopped = false;
	private readonly emit: () => void;
	private readonly intervalMs: number;
	constructor(emit: () => void, intervalMs: number = UPDATE_INTERVAL_MS) {
		this.emit = emit;
		this.intervalMs = intervalMs;
	}

	poke(): void {
		if (this.stopped || this.timer) return;
		const wait = this.last + this.intervalMs - Date.now();
		if (wait <= 0) {
			this.fire();
		} else {
			this.timer = setTimeout(() => {
				this.timer = undefined;
				this.fire();
			}, wait);
		}
	}

	stop(): void {
		this.stopped = true;
		if (this.timer) clearTimeout(this.timer);
		this.timer = undefined;
	}

	private fire(): void {
		if (this.stopped) return;
		this.last = Date.now();
		try {
			this.emit();
		} catch {
			// A failing consumer must not break the dispatch.
		}
	}
}
