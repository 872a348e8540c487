//! The tools the server offers, generated from the adapter registry: the agent enum, the effort
//! hints and the agents named in the descriptions all come from the adapters, never from here.

use std::sync::{Arc, LazyLock};

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::adapter::Adapter;
use crate::adapters;
use crate::limits;

pub const DISPATCH: &str = "dispatch";
pub const AGENTS: &str = "agents";
pub const MODELS: &str = "models";

/// The protocol's JSON Schema, the one contract for the `result` object `dispatch` returns as
/// `structuredContent` (the same object `agent-dispatch run` prints as its last line).
const PROTOCOL_SCHEMA: &str = include_str!("../../docs/protocol.schema.json");

/// All tools, in the order a host lists them.
pub fn all() -> Vec<Tool> {
    vec![dispatch(), agents(), models()]
}

/// The server's instructions: hosts show them beside the server (Codex lists them as the
/// namespace's description, cut at a few hundred characters), so the gist comes first.
pub fn instructions() -> String {
    format!(
        "Read-only second opinions from other coding agents ({}): `dispatch` hands one a \
         self-contained task and returns its answer (blocks for minutes; costs that agent's \
         tokens). `agents` and `models` list what is installed.",
        agent_ids().join(", ")
    )
}

fn agents_list() -> Vec<&'static dyn Adapter> {
    adapters::registry().to_vec()
}

fn agent_ids() -> Vec<&'static str> {
    agents_list().iter().map(|a| a.id()).collect()
}

/// Every agent as `id (display name)`, comma-separated.
fn agents_named() -> String {
    agents_list()
        .iter()
        .map(|a| format!("`{}` ({})", a.id(), a.display_name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `id: effort, effort; id: …` for the agents with a fixed list of efforts.
fn efforts_named() -> String {
    agents_list()
        .iter()
        .filter(|a| !a.capabilities().efforts.is_empty())
        .map(|a| format!("{}: {}", a.id(), a.capabilities().efforts.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

fn object(schema: Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("tool schemas are JSON objects"),
    }
}

fn agent_property(what: &str) -> Value {
    json!({
        "type": "string",
        "enum": agent_ids(),
        "description": format!("{what}: {}.", agents_named()),
    })
}

fn dispatch() -> Tool {
    let description = format!(
        "Hand a task to another coding agent — {agents} — and get its answer: a read-only \
         second opinion from a different model — a review of a change, an explanation, a plan, \
         a bug hunt. The agent reads the repository on this machine inside its CLI's own \
         sandbox and cannot change any file. Blocking: the call returns when the agent has \
         finished, often after one to several minutes, and reports progress meanwhile. It \
         costs tokens on that agent's account (the result reports usage). The agent does not \
         see this conversation: give it a self-contained task. Not for making edits.",
        agents = agents_named()
    );
    let mut effort =
        String::from("Reasoning effort, passed to the CLI unchanged; omit for the CLI's default.");
    let efforts = efforts_named();
    if !efforts.is_empty() {
        effort.push_str(&format!(" Accepted: {efforts}."));
    }
    let input = json!({
        "type": "object",
        "properties": {
            "agent": agent_property("Which agent answers"),
            "task": {
                "type": "string",
                "minLength": 1,
                "description": "What to ask, self-contained: the question, what to look at and what a good answer contains.",
            },
            "scope": {
                "type": "string",
                "description": "Which files or change to look at, appended to the task (for example \"the uncommitted change\" or \"src/parser/\").",
            },
            "model": {
                "type": "string",
                "description": "Model name, passed to the CLI unchanged; omit for the CLI's default. The `models` tool lists an agent's models.",
            },
            "effort": { "type": "string", "description": effort },
            "cwd": {
                "type": "string",
                "description": "Directory the agent works in (absolute, or relative to the server's); default: the server's working directory. Must lie inside a root the client declared.",
            },
            "timeout": {
                "type": "string",
                "description": format!(
                    "Wall-clock limit, like \"90s\", \"15m\" or \"1h30m\", or \"off\"; default {} min (or the server's {}). The agent is stopped when it runs out.",
                    limits::DEFAULT_TIMEOUT.as_secs() / 60,
                    limits::TIMEOUT_VAR
                ),
            },
            "maxTokens": {
                "type": "integer",
                "minimum": 1,
                "description": "Token budget: the agent is stopped at the first usage report over it. Default: none.",
            },
        },
        "required": ["agent", "task"],
        "additionalProperties": false,
    });
    Tool::new(DISPATCH, description, object(input))
        .with_title("Dispatch to another coding agent (read-only)")
        .with_raw_output_schema(RESULT_SCHEMA.clone())
        .with_annotations(
            ToolAnnotations::with_title("Dispatch to another coding agent (read-only)")
                .read_only(true)
                .destructive(false)
                .idempotent(false)
                .open_world(true),
        )
}

/// The protocol schema's `result` definition as a self-contained object schema: the `$defs` it
/// refers to travel with it; the draft marker and id stay behind (hosts validate with their
/// own draft).
static RESULT_SCHEMA: LazyLock<Arc<JsonObject>> = LazyLock::new(|| {
    let doc: Value = serde_json::from_str(PROTOCOL_SCHEMA).expect("docs/protocol.schema.json");
    let defs = &doc["$defs"];
    let mut result = defs["result"].clone();
    let mut used = serde_json::Map::new();
    let mut todo = refs_in(&result);
    while let Some(name) = todo.pop() {
        if used.contains_key(&name) {
            continue;
        }
        let def = defs[&name].clone();
        todo.extend(refs_in(&def));
        used.insert(name, def);
    }
    result["$defs"] = Value::Object(used);
    object(result)
});

/// The `$defs` names a schema refers to (`"$ref": "#/$defs/NAME"`).
fn refs_in(v: &Value) -> Vec<String> {
    match v {
        Value::Object(m) => m
            .iter()
            .flat_map(|(k, v)| match (k.as_str(), v.as_str()) {
                ("$ref", Some(r)) => r
                    .strip_prefix("#/$defs/")
                    .map(|n| vec![n.to_owned()])
                    .unwrap_or_default(),
                _ => refs_in(v),
            })
            .collect(),
        Value::Array(a) => a.iter().flat_map(refs_in).collect(),
        _ => Vec::new(),
    }
}

fn agents() -> Tool {
    let input = json!({ "type": "object", "properties": {}, "additionalProperties": false });
    Tool::new(
        AGENTS,
        "List the agents `dispatch` can hand a task to: each one's CLI, whether it is installed \
         here and its version, and what it promises (read-only enforced, model catalogue, \
         accepted efforts). Quick; no model is called.",
        object(input),
    )
    .with_title("Agents available to dispatch")
    .with_annotations(
        ToolAnnotations::with_title("Agents available to dispatch")
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
}

fn models() -> Tool {
    let input = json!({
        "type": "object",
        "properties": { "agent": agent_property("Whose models to list") },
        "required": ["agent"],
        "additionalProperties": false,
    });
    Tool::new(
        MODELS,
        "List an agent's models and their reasoning efforts, read live from its CLI, to pick \
         `model` and `effort` for `dispatch`. Quick; no model is called.",
        object(input),
    )
    .with_title("Models of an agent")
    .with_annotations(
        ToolAnnotations::with_title("Models of an agent")
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_enum_is_the_registry() {
        let tools = all();
        let d = tools.iter().find(|t| t.name == DISPATCH).unwrap();
        let ids: Vec<_> = adapters::registry().iter().map(|a| a.id()).collect();
        assert_eq!(d.input_schema["properties"]["agent"]["enum"], json!(ids));
        for id in ids {
            assert!(d.description.as_deref().unwrap().contains(id));
        }
    }

    #[test]
    fn the_output_schema_is_a_self_contained_object_schema() {
        let s = &*RESULT_SCHEMA;
        assert_eq!(s["type"], "object");
        assert!(s["$defs"]["usage"].is_object());
        assert!(
            s["$defs"]["reported"].is_object(),
            "refs of refs come along"
        );
        assert!(
            s["$defs"].get("started").is_none(),
            "unused defs stay behind"
        );
        assert!(s.get("$schema").is_none());
    }
}
