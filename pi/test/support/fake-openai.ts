/**
 * A loopback, scripted OpenAI-compatible chat-completions server (SSE streaming) standing in for
 * the model Pi talks to. Binds 127.0.0.1 on an ephemeral port.
 *
 * The model's turns are a list: reply N answers the request whose messages already contain N
 * assistant messages, so a conversation walks the script in order (a tool call, then a final text)
 * and concurrent sessions each follow their own history. A reply is a final text, tool calls, or a
 * function of the request for replies that depend on what the tools returned.
 */

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ToolCallSpec {
	name: string;
	arguments: Record<string, unknown>;
}

export interface ReplySpec {
	text?: string;
	toolCalls?: ToolCallSpec[];
	/** Model usage reported for this turn (defaults to small fixed numbers). */
	usage?: { prompt: number; completion: number };
}

export type Reply = ReplySpec | ((req: ChatRequest) => ReplySpec);

export interface ChatMessage {
	role: string;
	content?: unknown;
	tool_call_id?: string;
	tool_calls?: unknown[];
}

export interface ChatRequest {
	model: string;
	messages: ChatMessage[];
	stream?: boolean;
	stream_options?: { include_usage?: boolean };
	tools?: { function?: { name?: string; parameters?: unknown } }[];
}

export interface FakeOpenAI {
	baseUrl: string;
	port: number;
	/** Every chat request received, in order. */
	requests: ChatRequest[];
	/** Replace the script (for servers shared across tests). */
	setReplies(replies: Reply[]): void;
	close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
	return new Promise((resolve, reject) => {
		const chunks: Buffer[] = [];
		req.on("data", (c: Buffer) => chunks.push(c));
		req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
		req.on("error", reject);
	});
}

function sendJson(res: ServerResponse, code: number, body: unknown): void {
	const data = JSON.stringify(body);
	res.writeHead(code, { "content-type": "application/json", "content-length": Buffer.byteLength(data) });
	res.end(data);
}

let callCounter = 0;

export async function startFakeOpenAI(initial: Reply[]): Promise<FakeOpenAI> {
	let replies = initial;
	const requests: ChatRequest[] = [];

	const server = createServer(async (req, res) => {
		try {
			const url = req.url ?? "";
			if (req.method === "GET" && url.replace(/\/$/, "").endsWith("/models")) {
				return sendJson(res, 200, { object: "list", data: [{ id: "fake-model", object: "model" }] });
			}
			if (req.method !== "POST" || !url.replace(/\/$/, "").endsWith("/chat/completions")) {
				return sendJson(res, 404, { error: { message: "not found" } });
			}
			const body = JSON.parse(await readBody(req)) as ChatRequest;
			requests.push(body);
			const turn = body.messages.filter((m) => m.role === "assistant").length;
			const entry = replies[Math.min(turn, replies.length - 1)];
			const reply = typeof entry === "function" ? entry(body) : (entry ?? { text: "(no reply scripted)" });
			const id = `chatcmpl-fake-${turn}`;
			const created = Math.floor(Date.now() / 1000);
			const calls = (reply.toolCalls ?? []).map((c, index) => ({
				index,
				id: `call_${turn}_${index}_${++callCounter}`,
				type: "function",
				function: { name: c.name, arguments: JSON.stringify(c.arguments) },
			}));
			const finish = calls.length ? "tool_calls" : "stop";
			const u = reply.usage ?? { prompt: 100 + turn, completion: 10 };
			const usage = { prompt_tokens: u.prompt, completion_tokens: u.completion, total_tokens: u.prompt + u.completion };

			if (!body.stream) {
				const message: Record<string, unknown> = { role: "assistant", content: reply.text ?? null };
				if (calls.length) message.tool_calls = calls.map(({ index: _i, ...c }) => c);
				return sendJson(res, 200, {
					id,
					object: "chat.completion",
					created,
					model: body.model,
					choices: [{ index: 0, message, finish_reason: finish }],
					usage,
				});
			}

			res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "close" });
			const chunk = (obj: Record<string, unknown>) => {
				res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, ...obj })}\n\n`);
			};
			const delta = (d: Record<string, unknown>, finishReason: string | null = null) =>
				chunk({ choices: [{ index: 0, delta: d, finish_reason: finishReason }] });
			delta({ role: "assistant", content: "" });
			if (reply.text) {
				const half = Math.ceil(reply.text.length / 2);
				delta({ content: reply.text.slice(0, half) });
				if (reply.text.length > half) delta({ content: reply.text.slice(half) });
			}
			for (const c of calls) delta({ tool_calls: [c] });
			delta({}, finish);
			if (body.stream_options?.include_usage) chunk({ choices: [], usage });
			res.write("data: [DONE]\n\n");
			res.end();
		} catch (e) {
			if (!res.headersSent) sendJson(res, 500, { error: { message: String(e) } });
			else res.end();
		}
	});

	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const port = (server.address() as AddressInfo).port;
	return {
		baseUrl: `http://127.0.0.1:${port}/v1`,
		port,
		requests,
		setReplies(r) {
			replies = r;
		},
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

/** The `tool` messages (tool results) the model received in a request. */
export function toolResultsIn(req: ChatRequest): ChatMessage[] {
	return req.messages.filter((m) => m.role === "tool");
}
