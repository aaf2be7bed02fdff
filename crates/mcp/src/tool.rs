//! A tool: its name and description, the scopes and permission it needs, its annotations, its
//! input and output JSON Schemas (built from the same types the REST routes read and answer,
//! through utoipa), and the call that reads its arguments and runs the domain service.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use kernel::{Caller, Error, Permission};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;

use crate::Domains;
use crate::scopes::Elevation;

/// What a tool call gets: the domain services, who calls, and the arguments.
pub struct Call {
    pub domains: Arc<Domains>,
    pub caller: Caller,
    /// The scopes the connection was granted (a run it starts is bounded by them too).
    pub scopes: Vec<String>,
    pub args: Map<String, Value>,
}

pub type Answer = Pin<Box<dyn Future<Output = Result<Value, Error>> + Send>>;

/// What a tool does to the workspace, as MCP's annotations tell a client (`readOnlyHint`,
/// `destructiveHint`, `idempotentHint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads only.
    Read,
    /// Makes something new each call (a send, a note, an order).
    Create,
    /// Changes something; the same call again changes nothing more.
    Update,
    /// Removes something; the same call again removes nothing more.
    Delete,
    /// Replaces what is there (a batch that retires what it leaves out); each call counts.
    Replace,
}

/// One tool.
pub struct Tool {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// The server that offers it (also offered on `/mcp`).
    pub server: &'static str,
    /// The elevation it needs on top of its server's capability.
    pub elevation: Option<Elevation>,
    /// The permission the REST route needs; tools the issuer lacks it for are not listed.
    /// `None`: the route needs the tenant credential only (contract: Authentication, "Legacy
    /// messaging, campaigns, profile, balance"); `_meta.permission` is then null.
    pub permission: Option<Permission>,
    /// What it does to the workspace: its annotations' hints.
    pub effect: Effect,
    pub input: fn() -> Value,
    pub output: fn() -> Value,
    pub call: fn(Call) -> Answer,
}

impl Tool {
    /// The capability scope its server needs.
    pub fn capability(&self) -> &'static str {
        crate::servers::find(self.server).map_or("mcp:navigate", |s| s.capability)
    }

    /// The scopes a connection needs to call it: the base grant, the capability and maybe an
    /// elevation.
    pub fn scopes(&self) -> Vec<&'static str> {
        let mut scopes = vec![crate::scopes::USE, self.capability()];
        scopes.extend(self.elevation.map(Elevation::scope));
        scopes
    }

    /// The tool as `tools/list` and the manifest show it (MCP's `Tool` object).
    pub fn describe(&self) -> Value {
        let scopes = self.scopes();
        json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": (self.input)(),
            "outputSchema": (self.output)(),
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.effect == Effect::Read,
                "destructiveHint": matches!(self.effect, Effect::Delete | Effect::Replace),
                "idempotentHint": matches!(self.effect, Effect::Read | Effect::Update | Effect::Delete),
                "openWorldHint": false,
            },
            "_meta": {"scopes": scopes, "permission": self.permission.map(|p| p.0), "server": self.server},
        })
    }
}

/// The self-contained JSON Schema of `T` as the REST description has it: the components it
/// refers to are carried in `$defs`.
pub fn schema_of<T: utoipa::ToSchema>() -> Value {
    let mut parts = Vec::new();
    T::schemas(&mut parts);
    let mut schema = resolve(T::schema());
    if !parts.is_empty() {
        let defs: Map<String, Value> = parts.into_iter().map(|(name, part)| (name, resolve(part))).collect();
        if let Some(object) = schema.as_object_mut() {
            object.insert("$defs".into(), Value::Object(defs));
        }
    }
    schema
}

/// `schema` with `U` and the components it refers to added to its `$defs`: a generic answer
/// (`Page<Lead>`) refers to its item without carrying it.
pub fn with_def<U: utoipa::ToSchema>(mut schema: Value) -> Value {
    let mut parts = vec![(U::name().into_owned(), U::schema())];
    U::schemas(&mut parts);
    if let Some(object) = schema.as_object_mut() {
        let defs = object.entry("$defs").or_insert_with(|| Value::Object(Map::new()));
        if let Some(defs) = defs.as_object_mut() {
            for (name, part) in parts {
                defs.insert(name, resolve(part));
            }
        }
    }
    schema
}

/// A schema in JSON, its references pointing into `$defs`.
fn resolve(schema: RefOr<Schema>) -> Value {
    let mut value = serde_json::to_value(schema).unwrap_or(Value::Null);
    retarget(&mut value);
    value
}

fn retarget(value: &mut Value) {
    match value {
        Value::Object(members) => {
            for (key, member) in members.iter_mut() {
                match member {
                    Value::String(target) if key == "$ref" => {
                        if let Some(name) = target.strip_prefix("#/components/schemas/") {
                            *target = format!("#/$defs/{name}");
                        }
                    }
                    member => retarget(member),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(retarget),
        _ => {}
    }
}

/// An object schema with `extra` properties (ids the REST route reads from its path, an
/// `idempotency_key`) added in front of `body`'s, the required ones named.
pub fn with_members(mut body: Value, extra: &[(&str, Value, bool)]) -> Value {
    let Some(object) = body.as_object_mut() else { return body };
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    for (name, schema, needed) in extra {
        properties.insert((*name).into(), schema.clone());
        if *needed {
            required.push(json!(name));
        }
    }
    if let Some(Value::Object(own)) = object.remove("properties") {
        properties.extend(own);
    }
    if let Some(Value::Array(own)) = object.remove("required") {
        required.extend(own);
    }
    object.insert("type".into(), json!("object"));
    object.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        object.insert("required".into(), Value::Array(required));
    }
    body
}

/// An object schema of `members` alone.
pub fn object(members: &[(&str, Value, bool)]) -> Value {
    with_members(json!({"type": "object"}), members)
}

/// A schema wrapping a list answer in an object (structured content is always an object).
pub fn list_of(member: &str, item: Value) -> Value {
    let mut defs = Map::new();
    let mut item = item;
    if let Some(Value::Object(own)) = item.as_object_mut().and_then(|o| o.remove("$defs")) {
        defs = own;
    }
    let mut schema = object(&[(member, json!({"type": "array", "items": item}), true)]);
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    schema
}

/// A record as its REST path names it: its public uid, or its numeric id.
pub fn uid_or_id(description: &str) -> Value {
    json!({"type": ["string", "integer"], "description": description})
}

/// A UUID member: the id a REST path carries.
pub fn uuid(description: &str) -> Value {
    json!({"type": "string", "format": "uuid", "description": description})
}

/// The `idempotency_key` member of creating tools: REST's `Idempotency-Key` header.
pub fn idempotency_key() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 255,
           "description": "Replays the first answer for 24 hours, like the Idempotency-Key header."})
}

impl Call {
    /// Takes a string member (an id) out of the arguments; missing or not text is a field error.
    pub fn take_text(&mut self, name: &str) -> Result<String, Error> {
        match self.args.remove(name) {
            Some(Value::String(text)) => Ok(text),
            Some(_) => Err(Error::field(name, format!("The {name} field must be a string."))),
            None => Err(Error::field(name, format!("The {name} field is required."))),
        }
    }

    /// Takes an optional string member out of the arguments.
    pub fn take_optional_text(&mut self, name: &str) -> Result<Option<String>, Error> {
        match self.args.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(Error::field(name, format!("The {name} field must be a string."))),
        }
    }

    /// The remaining arguments read as a REST body of type `T`, through the same reader.
    pub fn body<T: DeserializeOwned>(&mut self) -> Result<T, Error> {
        let bytes = serde_json::to_vec(&std::mem::take(&mut self.args)).map_err(Error::internal)?;
        kernel::body::parse(&bytes)
    }

    /// The arguments read as REST query members of type `T`: numbers and booleans become their
    /// text, lists their comma-separated text, as a query string carries them. A member the
    /// `schema` does not name is refused, as REST refuses an unknown query member.
    pub fn query<T: DeserializeOwned>(&self, schema: &Value) -> Result<T, Error> {
        if let Some(unknown) = self.args.keys().find(|name| schema["properties"].get(name.as_str()).is_none()) {
            let known: Vec<&str> =
                schema["properties"].as_object().map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default();
            let message = format!("This tool reads {}.", known.join(", "));
            return Err(Error::validation(format!("The {unknown} argument is unknown. {message}"))
                .with_field(unknown.clone(), message));
        }
        let members: Map<String, Value> = self
            .args
            .iter()
            .filter(|(_, value)| !value.is_null())
            .map(|(name, value)| {
                let text = match value {
                    Value::String(text) => text.clone(),
                    Value::Array(items) => items
                        .iter()
                        .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                        .collect::<Vec<_>>()
                        .join(","),
                    other => other.to_string(),
                };
                (name.clone(), Value::String(text))
            })
            .collect();
        let bytes = serde_json::to_vec(&members).map_err(Error::internal)?;
        kernel::body::parse(&bytes)
    }
}

/// A service's answer as structured content.
pub fn answer<T: serde::Serialize>(value: T) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(Error::internal)
}

/// A numeric id member: the id a REST path carries (`{catalogue}`, `{order}`).
pub fn numeric_id(description: &str) -> Value {
    json!({"type": "integer", "minimum": 1, "description": description})
}

/// The members of a REST query type (`PageQuery`, a list's filter) as its `IntoParams` describes
/// them.
pub fn params_of<P: utoipa::IntoParams>() -> Vec<utoipa::openapi::path::Parameter> {
    P::into_params(|| Some(utoipa::openapi::path::ParameterIn::Query))
}

/// An object schema of `extra` members (the ids a REST path carries) and the query `params`,
/// each with its schema and description, none of those required.
pub fn query_input(extra: &[(&str, Value, bool)], params: Vec<utoipa::openapi::path::Parameter>) -> Value {
    let mut members: Vec<(String, Value, bool)> =
        extra.iter().map(|(name, schema, needed)| ((*name).to_owned(), schema.clone(), *needed)).collect();
    for param in params {
        let param = serde_json::to_value(param).unwrap_or(Value::Null);
        let Some(name) = param["name"].as_str() else { continue };
        let mut schema = param.get("schema").cloned().unwrap_or_else(|| json!({}));
        if let (Some(object), Some(description)) = (schema.as_object_mut(), param.get("description")) {
            object.insert("description".into(), description.clone());
        }
        members.push((name.to_owned(), schema, false));
    }
    let members: Vec<(&str, Value, bool)> = members.iter().map(|(n, s, r)| (n.as_str(), s.clone(), *r)).collect();
    object(&members)
}

/// A refusal of the `Idempotency-Key` header named after the argument that carries the key.
pub fn key_refusal(mut error: Error) -> Error {
    if let Some(messages) = error.errors.remove("Idempotency-Key") {
        error.errors.insert("idempotency_key".into(), messages);
    }
    error
}

impl Call {
    /// Takes an id member as the REST path carries it, text: a string, or a whole number written
    /// as text; then read with `kernel::parse_id` as the route reads its path (an id that names
    /// nothing is not found).
    pub fn take_path(&mut self, name: &str) -> Result<String, Error> {
        match self.args.remove(name) {
            Some(Value::String(text)) => Ok(text),
            Some(Value::Number(number)) if number.is_i64() || number.is_u64() => Ok(number.to_string()),
            None | Some(Value::Null) => Err(Error::field(name, format!("The {name} field is required."))),
            Some(_) => Err(Error::field(name, format!("The {name} field must be an id."))),
        }
    }

    /// Takes `idempotency_key`, the `Idempotency-Key` header's twin: blank is none, one that is no
    /// key is refused under `idempotency_key`.
    pub fn take_idempotency_key(&mut self) -> Result<Option<store::idempotency::Key>, Error> {
        match self.take_optional_text("idempotency_key")? {
            Some(raw) => store::idempotency::Key::parse(&raw).map_err(key_refusal),
            None => Ok(None),
        }
    }
}
