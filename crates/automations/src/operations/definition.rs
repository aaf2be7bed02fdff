//! An operation's definition: its typed inputs and its steps, each an action over a domain
//! service with arguments that may name the inputs and earlier steps' results
//! (`{{inputs.phone}}`, `{{steps.lead.id}}`). Checked whole when applied, so a run never meets
//! a definition it cannot follow.

use std::collections::HashSet;

use kernel::Error;
use kernel::error::FieldErrors;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use super::actions::Action;

/// Most inputs an operation declares.
pub const MAX_INPUTS: usize = 50;
/// Most steps an operation runs.
pub const MAX_STEPS: usize = 20;
/// The longest text input unless the definition says less (or more, up to this).
pub const MAX_TEXT: u64 = 10_000;
/// The largest definition file, in bytes.
pub const MAX_BYTES: usize = 64 * 1024;

/// A workspace's named operation, as applied.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = OperationDefinition)]
pub struct Definition {
    /// Lowercase letters, digits and underscores, starting with a letter (at most 64).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The inputs a run gives, in order.
    #[serde(default)]
    pub inputs: Vec<InputSpec>,
    /// What a run does, in order (1 to 20).
    pub steps: Vec<StepSpec>,
}

/// One input.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = OperationInput)]
pub struct InputSpec {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: InputType,
    /// Required unless it has a default (default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub default: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Text: its length bounds (characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// Numbers: their bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<f64>,
}

/// What an input holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = OperationInputType)]
pub enum InputType {
    String,
    Integer,
    Number,
    Boolean,
    /// A phone number in any common form, given to the steps as E.164 (`+255712345678`).
    Phone,
    Email,
}

/// One step.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = OperationStep)]
pub struct StepSpec {
    /// Names the step's result for later steps (`{{steps.<id>...}}`); unique in the operation.
    pub id: String,
    pub action: Action,
    /// The action's arguments (its REST body's members, and what names the record it acts
    /// on); strings may hold placeholders.
    #[serde(default = "empty", rename = "with")]
    #[schema(value_type = Object)]
    pub args: Value,
}

fn empty() -> Value {
    json!({})
}

/// A name: lowercase letters, digits and underscores, starting with a letter, at most 64.
pub fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

impl InputSpec {
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(self.default.is_none())
    }

    /// `value` as the steps get it, or why not (`calling_code` reads national phone numbers).
    pub fn read(&self, value: &Value, calling_code: &str) -> Result<Value, String> {
        match self.kind {
            InputType::String => {
                let text = value.as_str().ok_or("must be a string")?;
                let chars = text.chars().count() as u64;
                if chars < self.min_length.unwrap_or(0) {
                    return Err(format!("must be at least {} characters", self.min_length.unwrap_or(0)));
                }
                let max = self.max_length.unwrap_or(MAX_TEXT);
                if chars > max {
                    return Err(format!("must be at most {max} characters"));
                }
                Ok(value.clone())
            }
            InputType::Integer => {
                let n = value.as_i64().ok_or("must be an integer")?;
                self.bounded(n as f64)?;
                Ok(value.clone())
            }
            InputType::Number => {
                let n = value.as_f64().ok_or("must be a number")?;
                self.bounded(n)?;
                Ok(value.clone())
            }
            InputType::Boolean => value.as_bool().map(Value::Bool).ok_or_else(|| "must be true or false".into()),
            // one form for every step (a send's recipients split on spaces): E.164, national
            // forms read in the account's calling code
            InputType::Phone => value
                .as_str()
                .and_then(|text| kernel::phone::normalize(text, calling_code))
                .map(Value::String)
                .ok_or_else(|| "must be a phone number".into()),
            InputType::Email => {
                let text = value.as_str().ok_or("must be an email address")?.trim();
                let valid = text.len() <= 254
                    && text.split_once('@').is_some_and(|(local, domain)| {
                        !local.is_empty() && domain.contains('.') && !domain.starts_with('.') && !domain.ends_with('.')
                    })
                    && !text.chars().any(char::is_whitespace);
                if !valid {
                    return Err("must be an email address".into());
                }
                Ok(Value::String(text.to_lowercase()))
            }
        }
    }

    fn bounded(&self, n: f64) -> Result<(), String> {
        if let Some(min) = self.minimum.filter(|min| n < *min) {
            return Err(format!("must be at least {min}"));
        }
        if let Some(max) = self.maximum.filter(|max| n > *max) {
            return Err(format!("must be at most {max}"));
        }
        Ok(())
    }

    /// The input's JSON Schema (what `describe` shows and MCP clients fill in).
    fn schema(&self) -> Value {
        let mut schema = Map::new();
        let kind = match self.kind {
            InputType::String | InputType::Phone | InputType::Email => "string",
            InputType::Integer => "integer",
            InputType::Number => "number",
            InputType::Boolean => "boolean",
        };
        schema.insert("type".into(), kind.into());
        match self.kind {
            InputType::Phone => {
                schema.insert("format".into(), "phone".into());
            }
            InputType::Email => {
                schema.insert("format".into(), "email".into());
            }
            InputType::String => {
                if let Some(min) = self.min_length {
                    schema.insert("minLength".into(), min.into());
                }
                schema.insert("maxLength".into(), self.max_length.unwrap_or(MAX_TEXT).into());
            }
            _ => {}
        }
        for (key, bound) in [("minimum", self.minimum), ("maximum", self.maximum)] {
            if let Some(bound) = bound {
                schema.insert(key.into(), json!(bound));
            }
        }
        if let Some(default) = &self.default {
            schema.insert("default".into(), default.clone());
        }
        if let Some(description) = &self.description {
            schema.insert("description".into(), description.clone().into());
        }
        Value::Object(schema)
    }
}

impl Definition {
    /// A definition file read and checked whole: every problem named by its path
    /// (`steps[2].with.lead`), 422.
    pub fn parse(file: Value) -> Result<Self, Error> {
        if serde_json::to_vec(&file).map_err(Error::internal)?.len() > MAX_BYTES {
            return Err(Error::validation(format!("An operation's definition is at most {MAX_BYTES} bytes.")));
        }
        let definition: Definition = serde_json::from_value(file)
            .map_err(|e| Error::validation(format!("The definition is not an operation: {e}.")))?;
        definition.check()?;
        Ok(definition)
    }

    fn check(&self) -> Result<(), Error> {
        let mut errors = FieldErrors::new();
        if !is_name(&self.name) {
            errors.add("name", "Lowercase letters, digits and underscores, starting with a letter (at most 64).");
        }
        if self.description.as_ref().is_some_and(|d| d.chars().count() > 1000) {
            errors.add("description", "At most 1,000 characters.");
        }
        if self.inputs.len() > MAX_INPUTS {
            errors.add("inputs", format!("At most {MAX_INPUTS} inputs."));
        }
        let mut inputs = HashSet::new();
        for (i, input) in self.inputs.iter().enumerate() {
            let at = |field: &str| format!("inputs[{i}].{field}");
            if !is_name(&input.name) {
                errors.add(at("name"), "Lowercase letters, digits and underscores, starting with a letter.");
            } else if !inputs.insert(input.name.as_str()) {
                errors.add(at("name"), format!("{:?} is declared twice.", input.name));
            }
            let text = matches!(input.kind, InputType::String);
            let number = matches!(input.kind, InputType::Integer | InputType::Number);
            if !text && (input.min_length.is_some() || input.max_length.is_some()) {
                errors.add(at("type"), "Only a string input has a length.");
            }
            if !number && (input.minimum.is_some() || input.maximum.is_some()) {
                errors.add(at("type"), "Only a number input has bounds.");
            }
            if input.max_length.is_some_and(|max| max > MAX_TEXT || max < input.min_length.unwrap_or(0)) {
                errors.add(at("max_length"), format!("From min_length to {MAX_TEXT}."));
            }
            if let (Some(min), Some(max)) = (input.minimum, input.maximum)
                && min > max
            {
                errors.add(at("maximum"), "At least the minimum.");
            }
            if let Some(default) = &input.default
                && let Err(why) = input.read(default, "")
            {
                errors.add(at("default"), format!("The default {why}."));
            }
            if input.required == Some(true) && input.default.is_some() {
                errors.add(at("required"), "An input with a default is not required.");
            }
        }
        if self.steps.is_empty() || self.steps.len() > MAX_STEPS {
            errors.add("steps", format!("From 1 to {MAX_STEPS} steps."));
        }
        let mut steps: HashSet<&str> = HashSet::new();
        for (i, step) in self.steps.iter().enumerate() {
            let at = |field: &str| format!("steps[{i}].{field}");
            if !is_name(&step.id) {
                errors.add(at("id"), "Lowercase letters, digits and underscores, starting with a letter.");
            } else if steps.contains(step.id.as_str()) {
                errors.add(at("id"), format!("{:?} names two steps.", step.id));
            }
            if !step.args.is_object() {
                errors.add(at("with"), "The action's arguments are an object.");
            }
            // every placeholder names a declared input or a step before this one
            for (path, placeholder) in placeholders(&step.args, &at("with")) {
                match placeholder {
                    Ok(Ref::Input(name)) if !inputs.contains(name.as_str()) => {
                        errors.add(path, format!("{{{{inputs.{name}}}}} names no input."));
                    }
                    Ok(Ref::Step(id, _)) if !steps.contains(id.as_str()) => {
                        errors.add(path, format!("{{{{steps.{id}}}}} names no earlier step."));
                    }
                    Ok(_) => {}
                    Err(why) => errors.add(path, why),
                }
            }
            for missing in step.action.required().iter().filter(|member| step.args.get(**member).is_none()) {
                errors.add(at(&format!("with.{missing}")), format!("{} needs {missing}.", step.action.name()));
            }
            steps.insert(step.id.as_str());
        }
        errors.finish()
    }

    /// The inputs' JSON Schema: an object of them, the required ones listed.
    pub fn input_schema(&self) -> Value {
        let properties: Map<String, Value> = self.inputs.iter().map(|i| (i.name.clone(), i.schema())).collect();
        let required: Vec<&str> = self.inputs.iter().filter(|i| i.is_required()).map(|i| i.name.as_str()).collect();
        json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
    }

    /// A run's input read against the inputs: defaults filled in, phones (E.164, national
    /// forms in `calling_code`) and emails in their one form; 422 naming `input.<name>` for
    /// each problem, and for members not declared.
    pub fn read_input(&self, input: &Value, calling_code: &str) -> Result<Map<String, Value>, Error> {
        let empty = Map::new();
        let given = match input {
            Value::Object(given) => given,
            Value::Null => &empty,
            _ => return Err(Error::field("input", "The input is an object of the operation's inputs.")),
        };
        let mut errors = FieldErrors::new();
        let mut read = Map::new();
        for spec in &self.inputs {
            match given.get(&spec.name).filter(|v| !v.is_null()) {
                Some(value) => match spec.read(value, calling_code) {
                    Ok(value) => {
                        read.insert(spec.name.clone(), value);
                    }
                    Err(why) => errors.add(format!("input.{}", spec.name), format!("{} {why}.", spec.name)),
                },
                None => match &spec.default {
                    Some(default) => {
                        read.insert(spec.name.clone(), default.clone());
                    }
                    None if spec.is_required() => {
                        errors.add(format!("input.{}", spec.name), format!("{} is required.", spec.name));
                    }
                    None => {
                        read.insert(spec.name.clone(), Value::Null);
                    }
                },
            }
        }
        for name in given.keys().filter(|name| !self.inputs.iter().any(|spec| &spec.name == *name)) {
            errors.add(format!("input.{name}"), format!("{} declares no input {name:?}.", self.name));
        }
        errors.finish()?;
        Ok(read)
    }
}

/// What a placeholder names.
#[derive(Debug, Clone, PartialEq)]
pub enum Ref {
    Input(String),
    /// A step's result, and the path into it (`steps.lead.id` -> ("lead", ["id"])).
    Step(String, Vec<String>),
}

/// Reads `{{inputs.x}}` or `{{steps.id.path...}}`.
fn parse_ref(inner: &str) -> Result<Ref, String> {
    let parts: Vec<&str> = inner.trim().split('.').collect();
    match parts.as_slice() {
        ["inputs", name] if !name.is_empty() => Ok(Ref::Input((*name).to_owned())),
        ["steps", id, path @ ..] if !id.is_empty() && path.iter().all(|p| !p.is_empty()) => {
            Ok(Ref::Step((*id).to_owned(), path.iter().map(|p| (*p).to_owned()).collect()))
        }
        _ => Err(format!(
            "{{{{{inner}}}}} is not a placeholder: write {{{{inputs.<name>}}}} or {{{{steps.<id>.<field>}}}}."
        )),
    }
}

/// The placeholders of a string: each `{{...}}` in order.
fn refs_in(text: &str) -> Vec<Result<Ref, String>> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(end) = rest[start..].find("}}") else {
            found.push(Err("A placeholder opened with {{ is not closed.".to_owned()));
            break;
        };
        found.push(parse_ref(&rest[start + 2..start + end]));
        rest = &rest[start + end + 2..];
    }
    found
}

/// Every placeholder in `value`, with the path of the string holding it.
fn placeholders(value: &Value, path: &str) -> Vec<(String, Result<Ref, String>)> {
    match value {
        Value::String(text) => refs_in(text).into_iter().map(|r| (path.to_owned(), r)).collect(),
        Value::Array(items) => {
            items.iter().enumerate().flat_map(|(i, item)| placeholders(item, &format!("{path}[{i}]"))).collect()
        }
        Value::Object(members) => {
            members.iter().flat_map(|(key, item)| placeholders(item, &format!("{path}.{key}"))).collect()
        }
        _ => Vec::new(),
    }
}

/// `args` with its placeholders filled from the run's `inputs` and the finished steps'
/// results: a string that is one placeholder becomes the value itself (a number stays a
/// number); one with text around them becomes text. A value a run does not have is `null`.
pub fn fill(args: &Value, inputs: &Map<String, Value>, results: &Map<String, Value>) -> Value {
    let lookup = |r: &Ref| -> Value {
        match r {
            Ref::Input(name) => inputs.get(name).cloned().unwrap_or(Value::Null),
            Ref::Step(id, path) => {
                let mut at = results.get(id).unwrap_or(&Value::Null);
                for part in path {
                    at = match at {
                        Value::Array(items) => {
                            part.parse::<usize>().ok().and_then(|i| items.get(i)).unwrap_or(&Value::Null)
                        }
                        other => other.get(part).unwrap_or(&Value::Null),
                    };
                }
                at.clone()
            }
        }
    };
    match args {
        Value::String(text) => {
            let trimmed = text.trim();
            let whole = trimmed.starts_with("{{") && trimmed.ends_with("}}") && trimmed[2..].find("{{").is_none();
            if whole && let Ok(r) = parse_ref(&trimmed[2..trimmed.len() - 2]) {
                return lookup(&r);
            }
            let mut out = String::new();
            let mut rest = text.as_str();
            while let Some(start) = rest.find("{{") {
                let Some(end) = rest[start..].find("}}") else { break };
                out.push_str(&rest[..start]);
                if let Ok(r) = parse_ref(&rest[start + 2..start + end]) {
                    match lookup(&r) {
                        Value::String(s) => out.push_str(&s),
                        Value::Null => {}
                        other => out.push_str(&other.to_string()),
                    }
                }
                rest = &rest[start + end + 2..];
            }
            out.push_str(rest);
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|item| fill(item, inputs, results)).collect()),
        Value::Object(members) => {
            Value::Object(members.iter().map(|(k, v)| (k.clone(), fill(v, inputs, results))).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn definition() -> Value {
        json!({
            "name": "welcome",
            "inputs": [
                {"name": "phone", "type": "phone"},
                {"name": "qty", "type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                {"name": "note", "type": "string", "required": false, "max_length": 20}
            ],
            "steps": [
                {"id": "lead", "action": "create_lead", "with": {"phone": "{{inputs.phone}}"}},
                {"id": "stage", "action": "set_lead_stage", "with": {"lead": "{{steps.lead.id}}", "stage": "qualified"}}
            ]
        })
    }

    #[test]
    fn a_definition_names_only_its_inputs_and_earlier_steps() {
        assert!(Definition::parse(definition()).is_ok());
        let mut bad = definition();
        bad["steps"][0]["with"]["name"] = json!("{{inputs.nobody}}");
        bad["steps"][1]["with"]["note"] = json!("{{steps.later.id}}");
        bad["steps"]
            .as_array_mut()
            .expect("steps")
            .push(json!({"id": "lead", "action": "create_lead", "with": {"phone": "{{x}}"}}));
        let error = Definition::parse(bad).expect_err("refused");
        for field in ["steps[0].with.name", "steps[1].with.note", "steps[2].id", "steps[2].with.phone"] {
            assert!(error.errors.contains_key(field), "{field}: {:?}", error.errors);
        }
        let unknown = json!({"name": "x", "steps": [{"id": "a", "action": "launch_rocket"}]});
        assert!(Definition::parse(unknown).is_err());
        let nameless = json!({"name": "Big Name", "steps": [{"id": "a", "action": "create_lead", "with": {}}]});
        assert!(Definition::parse(nameless).expect_err("refused").errors.contains_key("name"));
    }

    #[test]
    fn a_runs_input_is_read_against_the_inputs() {
        let definition = Definition::parse(definition()).expect("a definition");
        let read = definition.read_input(&json!({"phone": " 0712 345 678 "}), "255").expect("read");
        assert_eq!(Value::Object(read), json!({"phone": "+255712345678", "qty": 1, "note": null}));
        let bad = json!({"qty": 11, "note": "x".repeat(21), "extra": 1});
        let error = definition.read_input(&bad, "255").expect_err("refused");
        let fields: Vec<&String> = error.errors.keys().collect();
        assert_eq!(fields, ["input.extra", "input.note", "input.phone", "input.qty"]);
        assert_eq!(definition.input_schema()["required"], json!(["phone"]));
    }

    #[test]
    fn placeholders_fill_whole_values_and_text() {
        let inputs: Map<String, Value> = serde_json::from_value(json!({"qty": 3, "name": "Amina"})).expect("a map");
        let results: Map<String, Value> =
            serde_json::from_value(json!({"lead": {"id": "l-1", "tags": ["a", "b"]}})).expect("a map");
        let args = json!({"n": "{{inputs.qty}}", "text": "Hi {{ inputs.name }}, x{{inputs.qty}} {{steps.lead.tags.1}}", "id": "{{steps.lead.id}}", "none": "{{steps.lead.nothing}}"});
        assert_eq!(
            fill(&args, &inputs, &results),
            json!({"n": 3, "text": "Hi Amina, x3 b", "id": "l-1", "none": null})
        );
    }
}
