/**
 * Reading the binary's output pipes: stdout as whole UTF-8 lines, stderr (or captured stdout) as a
 * bounded tail. A multi-byte character split across chunks stays whole, and nothing read from the
 * binary can grow without bound.
 */

import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";

/** The longest protocol line accepted; a longer one is dropped and reported. */
export const LINE_MAX = 64 * 1024 * 1024;

/** The last `max` characters of `s`. */
export function keepTail(s: string, max: number): string {
	return s.length <= max ? s : s.slice(s.length - max);
}

/**
 * Calls `onLine` for every line of `stream` (without its `\n`), including a final line that has no
 * newline, and `onOverflow` when a line grows past `maxLine` characters (that line is dropped).
 */
export function readLines(
	stream: Readable,
	onLine: (line: string) => void,
	onOverflow: (maxLine: number) => void,
	maxLine: number = LINE_MAX,
): void {
	const decoder = new StringDecoder("utf8");
	let buf = "";
	stream.on("data", (chunk: Buffer) => {
		const scanFrom = buf.length; // the old part holds no newline: never rescan it
		buf += decoder.write(chunk);
		let start = 0;
		let i = buf.indexOf("\n", scanFrom);
		while (i >= 0) {
			onLine(buf.slice(start, i));
			start = i + 1;
			i = buf.indexOf("\n", start);
		}
		buf = start > 0 ? buf.slice(start) : buf;
		if (buf.length > maxLine) {
			onOverflow(maxLine);
			buf = "";
		}
	});
	stream.on("end", () => {
		buf += decoder.end();
		if (buf) onLine(buf);
		buf = "";
	});
}

/** Keeps the last `max` characters `stream` wrote; `text()` is what was kept so far. */
export function collectTail(stream: Readable, max: number): { text(): string } {
	const decoder = new StringDecoder("utf8");
	let kept = "";
	stream.on("data", (chunk: Buffer) => {
		kept = keepTail(kept + decoder.write(chunk), max);
	});
	stream.on("end", () => {
		kept = keepTail(kept + decoder.end(), max);
	});
	return { text: () => kept };
}
