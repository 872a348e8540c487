/**
 * Small pure pieces: `/dispatch` argument parsing, finding the binary, and the rule that the
 * extension's TypeScript never names an agent.
 */

import assert from "node:assert/strict";
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";

import { parseDispatchArgs } from "../command-args.ts";
import { BinaryNotFoundError, locateBinary } from "../locate.ts";
import { REPO, scratch } from "./support/env.ts";

describe("/dispatch arguments", () => {
	test("AGENT TASK", () => {
		assert.deepEqual(parseDispatchArgs("agent-a  review the diff, carefully "), {
			kind: "run",
			agent: "agent-a",
			task: "review the diff, carefully",
		});
	});

	test("flags before the task; the task is verbatim after them", () => {
		assert.deepEqual(parseDispatchArgs(`a --model m-1 --effort=high --scope "src/a b" is --model a flag here?`), {
			kind: "run",
			agent: "a",
			model: "m-1",
			effort: "high",
			scope: "src/a b",
			task: "is --model a flag here?",
		});
	});

	test("models AGENT, check, help, and mistakes", () => {
		assert.deepEqual(parseDispatchArgs("models a"), { kind: "models", agent: "a" });
		assert.deepEqual(parseDispatchArgs("check"), { kind: "check", agents: [] });
		assert.deepEqual(parseDispatchArgs("check  a  b "), { kind: "check", agents: ["a", "b"] });
		assert.equal(parseDispatchArgs("").kind, "help");
		assert.equal(parseDispatchArgs("help").kind, "help");
		assert.match((parseDispatchArgs("models") as { error: string }).error, /which agent/);
		assert.match((parseDispatchArgs("a") as { error: string }).error, /what should a do/);
		assert.match((parseDispatchArgs("a --model") as { error: string }).error, /--model needs a value/);
	});

	test("limits: --timeout D and --max-tokens N (a whole number)", () => {
		assert.deepEqual(parseDispatchArgs("a --timeout 90s --max-tokens=5000 go"), { kind: "run", agent: "a", timeout: "90s", maxTokens: 5000, task: "go" });
		assert.match((parseDispatchArgs("a --max-tokens lots go") as { error: string }).error, /--max-tokens needs a whole number/);
		assert.match((parseDispatchArgs("a --max-tokens 0 go") as { error: string }).error, /at least 1/);
	});

	test("jobs [ID], cancel ID, keep ID", () => {
		assert.deepEqual(parseDispatchArgs("jobs"), { kind: "jobs" });
		assert.deepEqual(parseDispatchArgs(" jobs  0a1b "), { kind: "jobs", id: "0a1b" });
		assert.deepEqual(parseDispatchArgs("cancel 0a1b"), { kind: "cancel", id: "0a1b" });
		assert.deepEqual(parseDispatchArgs("keep 0a1b"), { kind: "keep", id: "0a1b" });
		assert.match((parseDispatchArgs("cancel") as { error: string }).error, /which job\? \/dispatch cancel ID/);
		assert.match((parseDispatchArgs("keep") as { error: string }).error, /which job\? \/dispatch keep ID/);
	});
});

describe("finding the binary", () => {
	function exe(p: string): string {
		mkdirSync(join(p, ".."), { recursive: true });
		writeFileSync(p, "#!/bin/sh\n");
		chmodSync(p, 0o755);
		return p;
	}

	test("AGENT_DISPATCH_BIN wins; a wrong value is an error, never silently replaced", () => {
		const d = scratch("loc-env");
		const bin = exe(join(d, "custom-name"));
		const onPath = exe(join(d, "path", "agent-dispatch"));
		assert.deepEqual(locateBinary({ env: { AGENT_DISPATCH_BIN: bin, PATH: join(d, "path") }, packageRoot: d }), {
			bin,
			source: "env",
		});
		assert.ok(onPath);
		assert.throws(
			() => locateBinary({ env: { AGENT_DISPATCH_BIN: join(d, "nope"), PATH: join(d, "path") }, packageRoot: d }),
			/AGENT_DISPATCH_BIN=.*nope is not an executable file/,
		);
	});

	test("then PATH, then the package's target/release, then target/debug", () => {
		const root = scratch("loc-root");
		const debug = exe(join(root, "target/debug/agent-dispatch"));
		assert.equal(locateBinary({ env: { PATH: "/nonexistent" }, packageRoot: root }).bin, debug);
		const release = exe(join(root, "target/release/agent-dispatch"));
		assert.deepEqual(locateBinary({ env: { PATH: "/nonexistent" }, packageRoot: root }), { bin: release, source: "repo-release" });
		const pathDir = scratch("loc-path");
		const onPath = exe(join(pathDir, "agent-dispatch"));
		assert.deepEqual(locateBinary({ env: { PATH: `/nonexistent:${pathDir}` }, packageRoot: root }), { bin: onPath, source: "path" });
	});

	test("missing: says exactly how to install it", () => {
		const root = scratch("loc-missing");
		try {
			locateBinary({ env: { PATH: "/nonexistent" }, packageRoot: root });
			assert.fail("should throw");
		} catch (e) {
			assert.ok(e instanceof BinaryNotFoundError);
			assert.match(e.message, new RegExp(`cargo install --path ${root}`));
			assert.match(e.message, /cargo build --release/);
			assert.match(e.message, /AGENT_DISPATCH_BIN/);
		}
	});
});

/** Lines of the extension's own files (tests excluded) that match `re`. */
function extensionLines(re: RegExp): string[] {
	const dir = join(REPO, "pi");
	const files = readdirSync(dir, { recursive: true, withFileTypes: true })
		.filter((e) => e.isFile() && /\.(ts|js|mjs|json)$/.test(e.name))
		.map((e) => join(e.parentPath, e.name))
		.filter((p) => !p.startsWith(join(dir, "test")));
	assert.ok(files.length >= 6, `scanned ${files.length} files`);
	const hits: string[] = [];
	for (const f of files) {
		readFileSync(f, "utf8")
			.split("\n")
			.forEach((line, i) => {
				if (re.test(line)) hits.push(`${f}:${i + 1}: ${line.trim()}`);
			});
	}
	return hits;
}

describe("what the extension leaves to the binary", () => {
	test("pi/*.ts (tests excluded) never mentions a particular agent CLI", () => {
		assert.deepEqual(extensionLines(/codex|claude/i), []);
	});

	test("pi/*.ts never walks /proc: the binary cleans up its own process tree", () => {
		assert.deepEqual(extensionLines(/\/proc\b/), []);
	});
});
