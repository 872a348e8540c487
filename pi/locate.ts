/**
 * Finding the `agent-dispatch` binary.
 *
 * Order: the explicit `AGENT_DISPATCH_BIN` environment variable (an error when it points at nothing
 * runnable — an explicit choice is never silently replaced), then `agent-dispatch` on PATH, then this
 * repository's own build (`target/release`, then `target/debug`, relative to the package root).
 */

import { accessSync, constants, statSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const BINARY_NAME = "agent-dispatch";
export const BIN_ENV = "AGENT_DISPATCH_BIN";

/** The package root: the repository that holds `package.json`, `Cargo.toml` and `pi/`. */
export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export type BinarySource = "env" | "path" | "repo-release" | "repo-debug";

export interface Located {
	bin: string;
	source: BinarySource;
}

/** The binary could not be found; `message` says exactly how to install it. */
export class BinaryNotFoundError extends Error {
	readonly searched: string[];
	constructor(message: string, searched: string[]) {
		super(message);
		this.name = "BinaryNotFoundError";
		this.searched = searched;
	}
}

function isExecutableFile(p: string): boolean {
	try {
		if (!statSync(p).isFile()) return false;
		accessSync(p, constants.X_OK);
		return true;
	} catch {
		return false;
	}
}

export function installInstructions(packageRoot: string = PACKAGE_ROOT): string {
	return [
		`Install it with:  cargo install --path ${packageRoot}`,
		`or build it in place:  (cd ${packageRoot} && cargo build --release)`,
		`or point ${BIN_ENV} at an existing binary.`,
	].join("\n");
}

export interface LocateOptions {
	env?: NodeJS.ProcessEnv;
	packageRoot?: string;
}

export function locateBinary(opts: LocateOptions = {}): Located {
	const env = opts.env ?? process.env;
	const root = opts.packageRoot ?? PACKAGE_ROOT;
	const searched: string[] = [];

	const explicit = env[BIN_ENV];
	if (explicit !== undefined && explicit !== "") {
		const p = isAbsolute(explicit) ? explicit : resolve(explicit);
		if (isExecutableFile(p)) return { bin: p, source: "env" };
		throw new BinaryNotFoundError(
			`${BIN_ENV}=${explicit} is not an executable file.\nUnset it to search PATH, or fix it.\n${installInstructions(root)}`,
			[p],
		);
	}

	for (const dir of (env.PATH ?? "").split(delimiter)) {
		if (!dir) continue;
		const p = join(dir, BINARY_NAME);
		searched.push(p);
		if (isExecutableFile(p)) return { bin: p, source: "path" };
	}

	for (const [profile, source] of [
		["release", "repo-release"],
		["debug", "repo-debug"],
	] as const) {
		const p = join(root, "target", profile, BINARY_NAME);
		searched.push(p);
		if (isExecutableFile(p)) return { bin: p, source };
	}

	throw new BinaryNotFoundError(
		`The ${BINARY_NAME} binary was not found (${BIN_ENV} unset; not on PATH; no build in ${join(root, "target")}).\n${installInstructions(root)}`,
		searched,
	);
}
