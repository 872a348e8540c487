//! Codex's model catalogue (`codex debug models`) and its effective model (`codex doctor --json`),
//! and pre-validation of a request against them.
//!
//! * `codex debug models` prints `{"models":[{slug, display_name, default_reasoning_level,
//!   supported_reasoning_levels:[{effort,…}], visibility:"list"|"hide", priority, …}, …]}`.
//! * The default model is chosen the way Codex chooses it: sort by `priority` (stable), the
//!   first entry whose `visibility` is `list` (shown in the picker), else the first entry.
//! * `codex doctor --json` reports `checks["config.load"].details.model`: the configured model
//!   or the literal `"<default>"` (then the catalogue default applies). Its exit code is 1
//!   whenever any check fails (for example offline), so its JSON is read regardless.

use serde::Deserialize;

use crate::adapter::ModelInfo;
use crate::contract::{Failure, FailureKind};

/// One catalogue entry with the ordering key Codex uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub info: ModelInfo,
    pub priority: i64,
}

/// The parsed catalogue, in Codex's order (by priority, stable).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalogue {
    pub entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct RawCatalogue {
    models: Vec<RawModel>,
}

#[derive(Deserialize)]
struct RawModel {
    slug: String,
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    default_reasoning_level: Option<String>,
    #[serde(default)]
    supported_reasoning_levels: Vec<RawLevel>,
    #[serde(default)]
    visibility: Option<String>,
    #[serde(default)]
    priority: Option<i64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawLevel {
    Object { effort: String },
    Bare(String),
}

impl Catalogue {
    /// Parse `codex debug models` output.
    pub fn parse(stdout: &[u8]) -> Result<Self, String> {
        let raw: RawCatalogue = serde_json::from_slice(stdout)
            .map_err(|e| format!("`codex debug models` printed unexpected output ({e})"))?;
        let mut entries: Vec<Entry> = raw
            .models
            .into_iter()
            .map(|m| Entry {
                priority: m.priority.unwrap_or(i64::MAX),
                info: ModelInfo {
                    slug: m.slug,
                    display_name: m.display_name,
                    default_effort: m.default_reasoning_level,
                    efforts: m
                        .supported_reasoning_levels
                        .into_iter()
                        .map(|l| match l {
                            RawLevel::Object { effort } | RawLevel::Bare(effort) => effort,
                        })
                        .collect(),
                    hidden: m.visibility.as_deref().is_some_and(|v| v != "list"),
                },
            })
            .collect();
        entries.sort_by_key(|e| e.priority);
        Ok(Self { entries })
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn models(&self) -> Vec<ModelInfo> {
        self.entries.iter().map(|e| e.info.clone()).collect()
    }

    pub fn find(&self, slug: &str) -> Option<&ModelInfo> {
        self.entries
            .iter()
            .map(|e| &e.info)
            .find(|m| m.slug == slug)
    }

    /// The model Codex uses when none is configured.
    pub fn default_model(&self) -> Option<&ModelInfo> {
        self.entries
            .iter()
            .map(|e| &e.info)
            .find(|m| !m.hidden)
            .or_else(|| self.entries.first().map(|e| &e.info))
    }

    /// An unknown model is an invalid request naming the valid choices.
    pub fn check_model(&self, slug: &str) -> Result<&ModelInfo, Failure> {
        self.find(slug).ok_or_else(|| {
            let listed: Vec<&str> = self
                .entries
                .iter()
                .filter(|e| !e.info.hidden)
                .map(|e| e.info.slug.as_str())
                .collect();
            let hidden: Vec<&str> = self
                .entries
                .iter()
                .filter(|e| e.info.hidden)
                .map(|e| e.info.slug.as_str())
                .collect();
            let mut msg = format!(
                "codex does not know model {slug:?}; valid models: {}",
                listed.join(", ")
            );
            if !hidden.is_empty() {
                msg.push_str(&format!(
                    " (also accepted, unlisted: {})",
                    hidden.join(", ")
                ));
            }
            Failure::new(FailureKind::InvalidRequest, msg)
        })
    }
}

/// An effort the resolved model does not support is an invalid request naming the supported
/// levels. `Ok(false)` when the model lists no levels, so there is nothing to check against.
pub fn check_effort(model: &ModelInfo, effort: &str, why: &str) -> Result<bool, Failure> {
    if model.efforts.is_empty() {
        return Ok(false);
    }
    if model.efforts.iter().any(|e| e == effort) {
        return Ok(true);
    }
    Err(Failure::new(
        FailureKind::InvalidRequest,
        format!(
            "model {:?} ({why}) does not support reasoning effort {effort:?}; supported: {}",
            model.slug,
            model.efforts.join(", ")
        ),
    ))
}

/// What `codex doctor --json` says about the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DoctorModel {
    /// A model is configured.
    Configured(String),
    /// `"<default>"`: the catalogue default applies.
    Default,
}

/// Read the effective model out of `codex doctor --json` output.
pub fn parse_doctor(stdout: &[u8]) -> Result<DoctorModel, String> {
    let v: serde_json::Value = serde_json::from_slice(stdout)
        .map_err(|e| format!("`codex doctor --json` printed unexpected output ({e})"))?;
    let load = &v["checks"]["config.load"];
    match load["details"]["model"].as_str() {
        Some("<default>") => Ok(DoctorModel::Default),
        Some(m) if !m.trim().is_empty() => Ok(DoctorModel::Configured(m.to_owned())),
        _ => {
            let status = load["status"].as_str().unwrap_or("missing");
            let detail = load["details"]["error"]
                .as_str()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            Err(format!(
                "`codex doctor --json` reported no model (config.load {status}{detail})"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CATALOGUE: &str = r#"{"models":[
      {"slug":"b-hidden","priority":0,"visibility":"hide","default_reasoning_level":"low",
       "supported_reasoning_levels":[{"effort":"low","description":"x"}]},
      {"slug":"gpt-6-astra","priority":5,"visibility":"list","default_reasoning_level":"low",
       "supported_reasoning_levels":[{"effort":"low"},{"effort":"medium"},{"effort":"ultra"}],"extra":{"k":1}},
      {"slug":"gpt-6.1-sol","priority":4,"visibility":"list","display_name":"Sol",
       "default_reasoning_level":"low","supported_reasoning_levels":[{"effort":"low"}]},
      {"slug":"gpt-5.5","priority":13,"visibility":"list","default_reasoning_level":"medium",
       "supported_reasoning_levels":[{"effort":"low"},{"effort":"medium"},{"effort":"high"},{"effort":"xhigh"}]}
    ]}"#;

    #[test]
    fn parses_sorts_by_priority_and_picks_the_first_listed_default() {
        let c = Catalogue::parse(CATALOGUE.as_bytes()).unwrap();
        let slugs: Vec<_> = c.entries.iter().map(|e| e.info.slug.as_str()).collect();
        assert_eq!(slugs, ["b-hidden", "gpt-6.1-sol", "gpt-6-astra", "gpt-5.5"]);
        assert_eq!(c.default_model().unwrap().slug, "gpt-6.1-sol");
        let m = c.find("gpt-6.1-sol").unwrap();
        assert_eq!(m.display_name.as_deref(), Some("Sol"));
        assert!(c.find("b-hidden").unwrap().hidden);
    }

    #[test]
    fn unknown_model_names_valid_choices() {
        let c = Catalogue::parse(CATALOGUE.as_bytes()).unwrap();
        let e = c.check_model("nope").unwrap_err();
        assert_eq!(e.kind, FailureKind::InvalidRequest);
        assert!(e.message.contains("\"nope\""), "{}", e.message);
        assert!(
            e.message
                .contains("valid models: gpt-6.1-sol, gpt-6-astra, gpt-5.5"),
            "{}",
            e.message
        );
        assert!(e.message.contains("b-hidden"), "{}", e.message);
        assert!(c.check_model("b-hidden").is_ok(), "hidden models are valid");
    }

    #[test]
    fn unsupported_effort_names_supported_levels() {
        let c = Catalogue::parse(CATALOGUE.as_bytes()).unwrap();
        let m = c.find("gpt-5.5").unwrap();
        assert_eq!(check_effort(m, "high", "requested"), Ok(true));
        let e = check_effort(m, "max", "requested").unwrap_err();
        assert_eq!(e.kind, FailureKind::InvalidRequest);
        assert!(
            e.message.contains("supported: low, medium, high, xhigh"),
            "{}",
            e.message
        );
        let bare = ModelInfo {
            slug: "x".into(),
            display_name: None,
            default_effort: None,
            efforts: vec![],
            hidden: false,
        };
        assert_eq!(check_effort(&bare, "max", "requested"), Ok(false));
    }

    #[test]
    fn empty_or_garbage_catalogue() {
        assert!(Catalogue::parse(br#"{"models":[]}"#).unwrap().is_empty());
        assert!(Catalogue::parse(b"not json").is_err());
        assert!(Catalogue::parse(br#"{"data":[]}"#).is_err());
        assert_eq!(Catalogue::default().default_model(), None);
    }

    #[test]
    fn doctor_model() {
        let d = |m: &str| {
            format!(
                r#"{{"overallStatus":"fail","checks":{{"config.load":{{"status":"ok","details":{{"model":"{m}"}}}}}}}}"#
            )
        };
        assert_eq!(
            parse_doctor(d("<default>").as_bytes()),
            Ok(DoctorModel::Default)
        );
        assert_eq!(
            parse_doctor(d("gpt-5.5").as_bytes()),
            Ok(DoctorModel::Configured("gpt-5.5".into()))
        );
        let broken =
            br#"{"checks":{"config.load":{"status":"fail","details":{"error":"invalid data"}}}}"#;
        let e = parse_doctor(broken).unwrap_err();
        assert!(e.contains("fail: invalid data"), "{e}");
        assert!(parse_doctor(b"").is_err());
    }
}
