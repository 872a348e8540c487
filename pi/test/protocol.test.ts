/**
 * `pi/protocol.ts` against the contract, `docs/protocol.schema.json` (which the engine's own tests
 * hold to real output): every line, event, identity, usage, failure and exit type has exactly the
 * schema's fields, required where the schema requires them, and every enum the schema's members.
 *
 * How the types reach run time: each expected value below is written `satisfies Shape<T>` or
 * `satisfies Members<U>`, so `tsc` (scripts/test-pi.sh runs it first) fails if it does not list
 * exactly T's fields or U's members; the tests then compare those values with the schema.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";

import {
	type ActivityKind,
	type CommandStatus,
	type ExitInfo,
	type Failure,
	type FailureKind,
	type Identity,
	type JobState,
	type JobView,
	type Line,
	type NoticeLevel,
	PROTOCOL_VERSION,
	type ProtocolUsage,
	type Reported,
	type StreamEvent,
} from "../protocol.ts";
import { REPO } from "./support/env.ts";

/** Each field of T, tagged with whether T requires it. */
type Shape<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? "optional" : "required" };
/** Each member of a string union. */
type Members<U extends string> = Record<U, true>;

type LineOf<K extends Line["type"]> = Extract<Line, { type: K }>;
type EventOf<K extends StreamEvent["type"]> = Extract<StreamEvent, { type: K }>;

// ---------------------------------------------------------------------------------------------
// The schema, read as the repository ships it

type Json = { [k: string]: unknown };
const schema = JSON.parse(readFileSync(join(REPO, "docs/protocol.schema.json"), "utf8")) as Json & { $defs: Record<string, Json> };

function resolveRef(s: Json): Json {
	const ref = s.$ref;
	if (typeof ref !== "string") return s;
	const name = /^#\/\$defs\/(.+)$/.exec(ref)?.[1];
	assert.ok(name && schema.$defs[name], `unresolvable $ref ${ref}`);
	return resolveRef(schema.$defs[name]);
}

/** The object schema in `s` (through a $ref, or the non-null branch of a nullable oneOf). */
function objectOf(s: Json): Json {
	const r = resolveRef(s);
	if (r.type === "object") return r;
	const branches = (r.oneOf as Json[] | undefined)?.map(resolveRef).filter((b) => b.type === "object") ?? [];
	assert.equal(branches.length, 1, `expected one object branch in ${JSON.stringify(r)}`);
	return branches[0]!;
}

function property(s: Json, name: string): Json {
	const props = objectOf(s).properties as Record<string, Json>;
	assert.ok(props[name], `no property ${name}`);
	return props[name];
}

/** The schema's fields of an object, tagged like {@link Shape}. */
function shapeOf(s: Json): Record<string, "required" | "optional"> {
	const o = objectOf(s);
	const required = new Set((o.required as string[] | undefined) ?? []);
	assert.equal(o.additionalProperties, false, "the schema closes every object");
	return Object.fromEntries(Object.keys(o.properties as Json).map((k) => [k, required.has(k) ? "required" : "optional"]));
}

/** The values an enum (or const) schema allows. */
function membersOf(s: Json): Record<string, true> {
	const r = resolveRef(s);
	const values = Array.isArray(r.enum) ? r.enum : [r.const];
	return Object.fromEntries(values.map((v) => [String(v), true]));
}

/** The branches of a `oneOf`, keyed by the const of their tag property. */
function branchesBy(s: Json, tag: string): Record<string, Json> {
	const r = resolveRef(s);
	return Object.fromEntries((r.oneOf as Json[]).map((b) => [String(resolveRef(property(b, tag)).const), resolveRef(b)]));
}

const defs = schema.$defs;

// ---------------------------------------------------------------------------------------------

describe("pi/protocol.ts matches docs/protocol.schema.json", () => {
	test("the protocol version", () => {
		assert.equal(defs.protocol!.const, PROTOCOL_VERSION);
	});

	test("line types and each line's fields", () => {
		const lines = branchesBy(schema, "type");
		assert.deepEqual(Object.keys(lines).sort(), Object.keys({ started: true, event: true, result: true, job: true } satisfies Members<Line["type"]>).sort());
		assert.deepEqual(shapeOf(lines.started!), {
			type: "required",
			protocol: "required",
			identity: "required",
			program: "required",
			cwd: "required",
		} satisfies Shape<LineOf<"started">>);
		assert.deepEqual(shapeOf(lines.event!), {
			type: "required",
			protocol: "required",
			event: "required",
		} satisfies Shape<LineOf<"event">>);
		assert.deepEqual(shapeOf(lines.result!), {
			type: "required",
			protocol: "required",
			ok: "required",
			text: "required",
			usage: "required",
			identity: "required",
			sessionId: "required",
			failure: "required",
			exit: "required",
			stderrTail: "required",
			durationMs: "required",
			checkBypassed: "required",
		} satisfies Shape<LineOf<"result">>);
		assert.deepEqual(shapeOf(lines.job!), { type: "required", protocol: "required", id: "required" } satisfies Shape<LineOf<"job">>);
	});

	test("identity, and the three states of a reported value", () => {
		assert.deepEqual(shapeOf(defs.identity!), { agent: "required", requested: "required", confirmed: "required" } satisfies Shape<Identity>);
		assert.deepEqual(shapeOf(property(defs.identity!, "requested")), { model: "required", effort: "required" } satisfies Shape<Identity["requested"]>);
		assert.deepEqual(shapeOf(property(defs.identity!, "confirmed")), { model: "required", effort: "required" } satisfies Shape<Identity["confirmed"]>);
		const states = (defs.reported!.oneOf as Json[]).map((b) => membersOf(property(b, "state")));
		assert.deepEqual(
			Object.assign({}, ...states),
			{ pending: true, "not-reported": true, confirmed: true } satisfies Members<Reported["state"]>,
		);
		const confirmed = (defs.reported!.oneOf as Json[]).find((b) => membersOf(property(b, "state")).confirmed)!;
		assert.deepEqual(shapeOf(confirmed), { state: "required", value: "required" } satisfies Shape<Extract<Reported, { state: "confirmed" }>>);
	});

	test("usage, failure (every kind), exit", () => {
		assert.deepEqual(shapeOf(defs.usage!), {
			input: "required",
			cacheRead: "required",
			cacheWrite: "required",
			output: "required",
			reasoning: "required",
			costUsd: "optional",
		} satisfies Shape<ProtocolUsage>);
		assert.deepEqual(shapeOf(property(defs.result!, "failure")), { kind: "required", message: "required" } satisfies Shape<Failure>);
		assert.deepEqual(membersOf(defs.failureKind!), {
			"invalid-request": true,
			"unsupported-agent": true,
			"not-installed": true,
			"spawn-failed": true,
			"read-only-unavailable": true,
			"not-logged-in": true,
			"nonzero-exit": true,
			signal: true,
			"error-envelope": true,
			"malformed-stream": true,
			"incomplete-stream": true,
			cancelled: true,
			timeout: true,
			"budget-exceeded": true,
		} satisfies Members<FailureKind>);
		assert.deepEqual(shapeOf(property(defs.result!, "exit")), { code: "optional", signal: "optional" } satisfies Shape<ExitInfo>);
	});

	test("event types, each event's fields, and their enums", () => {
		const events = branchesBy(defs.streamEvent!, "type");
		const expected = {
			text: { type: "required", text: "required" } satisfies Shape<EventOf<"text">>,
			command: {
				type: "required",
				id: "optional",
				command: "required",
				status: "required",
				exitCode: "optional",
				outputTail: "optional",
			} satisfies Shape<EventOf<"command">>,
			activity: { type: "required", kind: "required", text: "required" } satisfies Shape<EventOf<"activity">>,
			metadata: { type: "required", sessionId: "optional", model: "optional", effort: "optional" } satisfies Shape<EventOf<"metadata">>,
			notice: { type: "required", level: "required", message: "required" } satisfies Shape<EventOf<"notice">>,
			error: { type: "required", message: "required" } satisfies Shape<EventOf<"error">>,
			done: { type: "required", success: "required" } satisfies Shape<EventOf<"done">>,
			usage: { type: "required", usage: "required" } satisfies Shape<EventOf<"usage">>,
		} satisfies Record<StreamEvent["type"], object>;
		assert.deepEqual(Object.keys(events).sort(), Object.keys(expected).sort());
		for (const [type, shape] of Object.entries(expected)) assert.deepEqual(shapeOf(events[type]!), shape, `event ${type}`);

		assert.deepEqual(
			membersOf(property(events.command!, "status")),
			{ started: true, completed: true, failed: true, declined: true } satisfies Members<CommandStatus>,
		);
		assert.deepEqual(
			membersOf(property(events.activity!, "kind")),
			{ reasoning: true, plan: true, "file-change": true, tool: true } satisfies Members<ActivityKind>,
		);
		assert.deepEqual(membersOf(property(events.notice!, "level")), { info: true, warning: true } satisfies Members<NoticeLevel>);
	});

	test("the job view (`jobs --json`, `jobs show/wait/cancel ID --json`) and job states", () => {
		const view = defs.jobView!;
		assert.deepEqual(shapeOf(view), {
			id: "required",
			state: "required",
			agent: "required",
			cwd: "required",
			model: "optional",
			effort: "optional",
			scope: "optional",
			limits: "required",
			createdAt: "required",
			startedAt: "required",
			finishedAt: "required",
			result: "required",
		} satisfies Shape<JobView>);
		assert.deepEqual(shapeOf(property(view, "limits")), { timeoutMs: "required", maxTokens: "required" } satisfies Shape<JobView["limits"]>);
		assert.deepEqual(
			membersOf(property(view, "state")),
			{ queued: true, running: true, succeeded: true, failed: true, cancelled: true, lost: true } satisfies Members<JobState>,
		);
	});
});
