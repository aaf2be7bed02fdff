//! `POST /api/engine/tasks`' body: what the model is told, what it may use, and its limits.
//! The shape follows the run APIs people know (OpenAI's Responses: `instructions`, `input`,
//! `tools`, `model`, `metadata`; Stripe's metadata limits); docs/api.md, "Agent tasks".

use kernel::error::FieldErrors;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

pub const MAX_INSTRUCTIONS_CHARS: usize = 20_000;
/// The input as JSON text.
pub const MAX_INPUT_BYTES: usize = 100_000;
pub const MAX_TOOLS: usize = 50;
pub const MAX_MODEL_CHARS: usize = 100;
pub const DEFAULT_MAX_STEPS: i32 = 20;
pub const MAX_STEPS: i32 = 100;
pub const DEFAULT_MAX_SECONDS: i32 = 300;
pub const MAX_SECONDS: i32 = 3_600;
pub const MAX_METADATA_KEYS: usize = 50;
pub const MAX_METADATA_KEY_CHARS: usize = 40;
pub const MAX_METADATA_VALUE_CHARS: usize = 500;

/// A task to run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskBody {
    /// What the model is to do (its system message), 1 to 20,000 characters.
    #[schema(min_length = 1, max_length = 20_000)]
    pub instructions: String,
    /// What it is to work on: text, or an object given to the model as JSON (at most 100 kB).
    #[serde(default)]
    #[schema(schema_with = input_schema)]
    pub input: Value,
    /// The tools it may call: MCP server names (`contacts`: every tool of that server) or tool
    /// names (`set_lead_stage`), at most 50. None: the model only writes.
    #[serde(default)]
    #[schema(max_items = 50)]
    pub tools: Vec<String>,
    /// The model to ask; the configured one when absent.
    #[serde(default)]
    #[schema(max_length = 100)]
    pub model: Option<String>,
    #[serde(default)]
    pub limits: Limits,
    /// Tools (or servers) whose calls wait for a person's approval: the run stops at
    /// `requires_action` until `POST /api/engine/runs/{run_uuid}/approval` answers.
    #[serde(default)]
    #[schema(max_items = 50)]
    pub require_approval: Vec<String>,
    /// Your own string values, kept and returned (at most 50 keys of 40 characters, values of
    /// 500).
    #[serde(default)]
    #[schema(schema_with = metadata_schema)]
    pub metadata: Map<String, Value>,
    /// `async` (default): 202 with the queued run. `sync`: 200 with the run as it stands once
    /// it ended or a bounded wait passed; check its `status` either way.
    #[serde(default)]
    pub mode: Mode,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Async,
    Sync,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Async => "async",
            Self::Sync => "sync",
        }
    }
}

/// Where a run stops: past one of these it ends `failed` with the limit as its reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RunLimits)]
pub struct Limits {
    /// Model turns and tool calls together, 1 to 100 (default 20).
    #[schema(minimum = 1, maximum = 100)]
    pub max_steps: Option<i32>,
    /// Wall time from its start, not counting waits for an approval: 1 to 3,600 seconds (default 300).
    #[schema(minimum = 1, maximum = 3_600)]
    pub max_seconds: Option<i32>,
    /// What it may cost, in minor units of the wallet's currency (no limit when absent).
    #[schema(minimum = 0)]
    pub max_spend_minor: Option<i64>,
}

/// `POST /api/engine/runs/{run_uuid}/approval`: the answer to the tool call a run waits on.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RunApproval)]
pub struct Approval {
    /// `true` runs the call; `false` tells the model it was denied.
    pub approve: bool,
    /// Why, for the model when denied (at most 500 characters).
    #[serde(default)]
    #[schema(max_length = 500)]
    pub reason: Option<String>,
}

/// `input`: text, or an object (`null` reads as no input).
fn input_schema() -> utoipa::openapi::schema::Schema {
    input_as_kept(true)
}

/// A run's `input` as kept: text or an object (no input is kept as empty text).
pub(crate) fn kept_input_schema() -> utoipa::openapi::schema::Schema {
    input_as_kept(false)
}

fn input_as_kept(or_null: bool) -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
    let one_of = OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::String))
        .item(ObjectBuilder::new().schema_type(Type::Object));
    match or_null {
        true => one_of.item(ObjectBuilder::new().schema_type(Type::Null)).into(),
        false => one_of.into(),
    }
}

/// `metadata`: at most 50 keys of 1 to 40 characters, each with text of at most 500.
fn metadata_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .max_properties(Some(MAX_METADATA_KEYS))
        .property_names(Some(
            ObjectBuilder::new().schema_type(Type::String).min_length(Some(1)).max_length(Some(MAX_METADATA_KEY_CHARS)),
        ))
        .additional_properties(Some(AdditionalProperties::RefOr(
            ObjectBuilder::new().schema_type(Type::String).max_length(Some(MAX_METADATA_VALUE_CHARS)).into(),
        )))
        .build()
}

/// A task as the run keeps it.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    pub instructions: String,
    pub input: Value,
    pub tools: Vec<String>,
    pub require_approval: Vec<String>,
    pub model: Option<String>,
    pub max_steps: i32,
    pub max_seconds: i32,
    pub max_spend_minor: Option<i64>,
    pub metadata: Map<String, Value>,
    pub mode: Mode,
}

/// The prefix the tools of another run's agents may not be (a run starting runs).
pub(crate) const OWN_SERVER: &str = "agents";

impl TaskBody {
    /// Every problem at once, each named by its member; `select` resolves tool names (the
    /// index of an unknown one).
    pub(crate) fn check(
        self,
        select: impl Fn(&[String]) -> Result<Vec<String>, usize>,
    ) -> Result<Checked, kernel::Error> {
        let mut errors = FieldErrors::new();
        let instructions = self.instructions.trim().to_owned();
        if instructions.is_empty() {
            errors.add("instructions", "The instructions are required.");
        } else if instructions.chars().count() > MAX_INSTRUCTIONS_CHARS {
            errors.add(
                "instructions",
                format!("The instructions may not be longer than {MAX_INSTRUCTIONS_CHARS} characters."),
            );
        }
        let input = match self.input {
            Value::Null => Value::String(String::new()),
            input @ (Value::String(_) | Value::Object(_)) => input,
            _ => {
                errors.add("input", "The input must be text or an object.");
                Value::Null
            }
        };
        if input.to_string().len() > MAX_INPUT_BYTES {
            errors.add("input", format!("The input may not be larger than {MAX_INPUT_BYTES} bytes as JSON."));
        }
        let tools = names(&self.tools, "tools", &select, &mut errors);
        let require_approval = names(&self.require_approval, "require_approval", &select, &mut errors);
        if let Some(i) = require_approval.iter().position(|name| !tools.contains(name)) {
            errors
                .add(format!("require_approval.{i}"), "A tool that waits for approval must be one of the run's tools.");
        }
        let model = self.model.map(|m| m.trim().to_owned()).filter(|m| !m.is_empty());
        if model.as_ref().is_some_and(|m| m.chars().count() > MAX_MODEL_CHARS) {
            errors.add("model", format!("The model may not be longer than {MAX_MODEL_CHARS} characters."));
        }
        let max_steps = self.limits.max_steps.unwrap_or(DEFAULT_MAX_STEPS);
        if !(1..=MAX_STEPS).contains(&max_steps) {
            errors.add("limits.max_steps", format!("The step limit must be between 1 and {MAX_STEPS}."));
        }
        let max_seconds = self.limits.max_seconds.unwrap_or(DEFAULT_MAX_SECONDS);
        if !(1..=MAX_SECONDS).contains(&max_seconds) {
            errors.add("limits.max_seconds", format!("The time limit must be between 1 and {MAX_SECONDS} seconds."));
        }
        if self.limits.max_spend_minor.is_some_and(|s| s < 0) {
            errors.add("limits.max_spend_minor", "The spend limit must not be negative.");
        }
        if self.metadata.len() > MAX_METADATA_KEYS {
            errors.add("metadata", format!("The metadata may hold at most {MAX_METADATA_KEYS} keys."));
        }
        for (key, value) in &self.metadata {
            if key.is_empty() || key.chars().count() > MAX_METADATA_KEY_CHARS {
                errors.add(
                    format!("metadata.{key}"),
                    format!("A metadata key is 1 to {MAX_METADATA_KEY_CHARS} characters."),
                );
            }
            match value {
                Value::String(text) if text.chars().count() <= MAX_METADATA_VALUE_CHARS => {}
                _ => errors.add(
                    format!("metadata.{key}"),
                    format!("A metadata value is text of at most {MAX_METADATA_VALUE_CHARS} characters."),
                ),
            }
        }
        errors.finish()?;
        Ok(Checked {
            instructions,
            input,
            tools,
            require_approval,
            model,
            max_steps,
            max_seconds,
            max_spend_minor: self.limits.max_spend_minor,
            metadata: self.metadata,
            mode: self.mode,
        })
    }
}

/// The tool names `given` select, deduplicated in order; each unknown name, and the agents
/// server's own tools (a run does not start runs), named by its index.
fn names(
    given: &[String],
    member: &str,
    select: &impl Fn(&[String]) -> Result<Vec<String>, usize>,
    errors: &mut FieldErrors,
) -> Vec<String> {
    if given.len() > MAX_TOOLS {
        errors.add(member, format!("At most {MAX_TOOLS} names."));
        return Vec::new();
    }
    let mut selected = Vec::new();
    for (i, name) in given.iter().enumerate() {
        if name.trim() == OWN_SERVER {
            errors.add(format!("{member}.{i}"), "A run may not use the agents server's tools.");
            continue;
        }
        match select(std::slice::from_ref(name)) {
            Ok(tools) => selected.extend(tools.into_iter().filter(|t| !selected.contains(t)).collect::<Vec<_>>()),
            Err(_) => errors.add(format!("{member}.{i}"), format!("{name} is neither an MCP server nor a tool.")),
        }
    }
    selected
}

#[cfg(test)]
mod tests {
    use super::*;

    fn select(names: &[String]) -> Result<Vec<String>, usize> {
        match names[0].as_str() {
            "contacts" => Ok(vec!["find_leads".into(), "set_lead_stage".into()]),
            "find_leads" => Ok(vec!["find_leads".into()]),
            _ => Err(0),
        }
    }

    #[test]
    fn defaults_and_tool_names_resolve() {
        let body = TaskBody {
            instructions: " Move the lead. ".into(),
            tools: vec!["find_leads".into(), "contacts".into()],
            ..TaskBody::default()
        };
        let checked = body.check(select).expect("valid");
        assert_eq!(checked.instructions, "Move the lead.");
        assert_eq!(checked.tools, ["find_leads", "set_lead_stage"]);
        assert_eq!(checked.input, Value::String(String::new()));
        assert_eq!((checked.max_steps, checked.max_seconds, checked.max_spend_minor), (20, 300, None));
        assert_eq!(checked.mode, Mode::Async);
    }

    #[test]
    fn every_problem_is_named_by_its_member() {
        let mut metadata = Map::new();
        metadata.insert("n".into(), Value::from(3));
        let body = TaskBody {
            instructions: "  ".into(),
            input: Value::from(7),
            tools: vec!["find_leads".into(), "nope".into(), "agents".into()],
            require_approval: vec!["contacts".into()],
            limits: Limits { max_steps: Some(0), max_seconds: Some(3_601), max_spend_minor: Some(-1) },
            metadata,
            ..TaskBody::default()
        };
        let errors = body.check(select).expect_err("invalid").errors.clone();
        for member in [
            "instructions",
            "input",
            "tools.1",
            "tools.2",
            "require_approval.1",
            "limits.max_steps",
            "limits.max_seconds",
            "limits.max_spend_minor",
            "metadata.n",
        ] {
            assert!(errors.contains_key(member), "{member}: {errors:?}");
        }
    }
}
