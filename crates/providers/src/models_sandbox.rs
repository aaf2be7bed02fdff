//! The sandbox language model: the default when no model provider is configured, and what the
//! tests run agents with. It does not think; it plays a script written in the task's input, so
//! every run is deterministic.
//!
//! The script is the first user message, when that is a JSON object with a `script` array:
//!
//! ```json
//! {"script": [
//!   {"tool": "find_lead", "arguments": {"name": "Amina"}},
//!   {"tool": "send_sms", "arguments": {"lead": "{{results.0.id}}", "body": "Hi {{results.0.name}}"}, "delay_ms": 5},
//!   {"say": "Amina was texted."}
//! ], "output": "used when the script runs out"}
//! ```
//!
//! The turn to answer is the number of assistant messages so far: item `n` of the script. A
//! `tool` item calls that tool (id `call_<n>`), a `say` item answers text and so ends the run.
//! `{{results.<i>.<path>}}` in a string argument reads the `i`-th tool answer (0-based, in
//! conversation order) at a dot path; a placeholder that is the whole string keeps the value's
//! JSON type, one inside a longer string is replaced by its text.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::models::{ModelError, ModelGateway, ModelMessage, TokenUsage, ToolCall, Turn, TurnRequest};

/// The longest a script item may make a turn wait.
const MAX_DELAY: Duration = Duration::from_secs(60);
/// The answer to an input that is not a script.
const NO_SCRIPT: &str = "The sandbox model follows a script: send input {\"script\": [...]}; nothing to do.";

/// The scripted model. Stateless: everything it answers follows from the conversation.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelSandbox;

impl ModelSandbox {
    pub const DEFAULT_MODEL: &'static str = "sandbox-1";

    pub fn new() -> Self {
        Self
    }
}

/// The script in the first user message, and its `output`.
struct Script {
    items: Vec<Value>,
    output: Option<String>,
}

impl Script {
    fn of(messages: &[ModelMessage]) -> Option<Script> {
        let input = messages.iter().find_map(|m| match m {
            ModelMessage::User { content } => Some(content),
            _ => None,
        })?;
        let Ok(Value::Object(mut input)) = serde_json::from_str::<Value>(input) else { return None };
        let Some(Value::Array(items)) = input.remove("script") else { return None };
        let output = match input.remove("output") {
            Some(Value::String(output)) => Some(output),
            _ => None,
        };
        Some(Script { items, output })
    }
}

/// What one turn answers, before usage is counted.
enum Answer {
    Say(String),
    Call(ToolCall),
}

/// How long an item makes its turn wait (`delay_ms`, capped).
fn delay_of(item: &Value) -> Duration {
    item.get("delay_ms").and_then(Value::as_u64).map_or(Duration::ZERO, |ms| Duration::from_millis(ms).min(MAX_DELAY))
}

/// Item `n` of the script, as an answer.
fn answer_item(item: &Value, n: usize, results: &[Value]) -> Result<Answer, ModelError> {
    if let Some(name) = item.get("tool").and_then(Value::as_str) {
        let arguments = item.get("arguments").cloned().unwrap_or_else(|| Value::Object(Map::new()));
        let arguments = resolve(arguments, results);
        return Ok(Answer::Call(ToolCall { id: format!("call_{n}"), name: name.to_owned(), arguments }));
    }
    if let Some(text) = item.get("say").and_then(Value::as_str) {
        return Ok(Answer::Say(text.to_owned()));
    }
    // A broken script is the task author's mistake: say so rather than guess.
    Err(ModelError::Refused(format!(
        "sandbox script item {n} is neither {{\"tool\": \"<name>\", \"arguments\": {{...}}}} nor {{\"say\": \"<text>\"}}"
    )))
}

/// The tool answers so far, in conversation order, as JSON (text that is not JSON as a string).
fn results(messages: &[ModelMessage]) -> Vec<Value> {
    messages
        .iter()
        .filter_map(|m| match m {
            ModelMessage::Tool { content, .. } => {
                Some(serde_json::from_str(content).unwrap_or_else(|_| Value::String(content.clone())))
            }
            _ => None,
        })
        .collect()
}

/// Replaces the placeholders in every string of `value`, at any depth (keys are left alone).
fn resolve(value: Value, results: &[Value]) -> Value {
    match value {
        Value::String(text) => resolve_text(&text, results),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| resolve(v, results)).collect()),
        Value::Object(fields) => Value::Object(fields.into_iter().map(|(k, v)| (k, resolve(v, results))).collect()),
        other => other,
    }
}

fn resolve_text(text: &str, results: &[Value]) -> Value {
    // The whole string is one placeholder: the value itself, JSON type kept.
    if let Some(inner) = text.strip_prefix("{{").and_then(|t| t.strip_suffix("}}"))
        && !inner.contains("{{")
        && !inner.contains("}}")
        && let Some(found) = lookup(inner, results)
    {
        return found.unwrap_or(Value::Null);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(length) = rest[start + 2..].find("}}") else { break };
        let inner = &rest[start + 2..start + 2 + length];
        out.push_str(&rest[..start]);
        match lookup(inner, results) {
            Some(found) => out.push_str(&found.as_ref().map(text_of).unwrap_or_default()),
            // Not ours (`{{name}}` in a template the tool fills): kept as written.
            None => out.push_str(&rest[start..start + 4 + length]),
        }
        rest = &rest[start + 4 + length..];
    }
    out.push_str(rest);
    Value::String(out)
}

/// `results.<i>.<path>`: `None` when `inner` is not such a placeholder, `Some(None)` when it is
/// but nothing is there.
fn lookup(inner: &str, results: &[Value]) -> Option<Option<Value>> {
    let inner = inner.trim();
    let path = inner.strip_prefix("results.").or_else(|| (inner == "results").then_some(""))?;
    let mut segments = path.split('.');
    let index: usize = segments.next()?.parse().ok()?;
    let mut at = results.get(index);
    for segment in segments.filter(|s| !s.is_empty()) {
        at = at.and_then(|value| match value {
            Value::Object(fields) => fields.get(segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        });
    }
    Some(at.cloned())
}

/// A value as text inside a longer string: a string as itself, null as nothing, the rest as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A stand-in for a tokenizer: a token per four characters, at least one.
fn tokens(chars: usize) -> i64 {
    i64::try_from(chars.div_ceil(4)).unwrap_or(i64::MAX).max(1)
}

fn calls_chars(calls: &[ToolCall]) -> usize {
    calls.iter().map(|call| serde_json::to_string(call).map_or(0, |json| json.chars().count())).sum()
}

fn input_chars(messages: &[ModelMessage]) -> usize {
    messages
        .iter()
        .map(|message| match message {
            ModelMessage::System { content } | ModelMessage::User { content } | ModelMessage::Tool { content, .. } => {
                content.chars().count()
            }
            ModelMessage::Assistant { content, tool_calls } => {
                content.as_deref().map_or(0, |c| c.chars().count()) + calls_chars(tool_calls)
            }
        })
        .sum()
}

#[async_trait::async_trait]
impl ModelGateway for ModelSandbox {
    fn default_model(&self) -> &str {
        Self::DEFAULT_MODEL
    }

    async fn turn(&self, request: TurnRequest<'_>) -> Result<Turn, ModelError> {
        let messages = request.messages;
        let n = messages.iter().filter(|m| matches!(m, ModelMessage::Assistant { .. })).count();
        let results = results(messages);
        let answer = match Script::of(messages) {
            None => Answer::Say(NO_SCRIPT.to_owned()),
            Some(script) => match script.items.get(n) {
                Some(item) => {
                    let delay = delay_of(item);
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    answer_item(item, n, &results)?
                }
                None => Answer::Say(script.output.unwrap_or_else(|| format!("Done: {} tool calls.", results.len()))),
            },
        };
        let (text, tool_calls) = match answer {
            Answer::Say(text) => (Some(text), Vec::new()),
            Answer::Call(call) => (None, vec![call]),
        };
        let output_chars = text.as_deref().map_or(0, |t| t.chars().count()) + calls_chars(&tool_calls);
        let usage = TokenUsage { input_tokens: tokens(input_chars(messages)), output_tokens: tokens(output_chars) };
        Ok(Turn { text, tool_calls, usage, model: request.model.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn user(input: &Value) -> ModelMessage {
        ModelMessage::User { content: input.to_string() }
    }

    async fn turn(messages: &[ModelMessage]) -> Turn {
        ModelSandbox::new().turn(TurnRequest { model: "sandbox-1", messages, tools: &[] }).await.expect("a turn")
    }

    /// Plays the turn's call back into the conversation with `result` as the tool's answer.
    fn answered(messages: &mut Vec<ModelMessage>, turn: &Turn, result: &Value) {
        messages.push(ModelMessage::Assistant { content: turn.text.clone(), tool_calls: turn.tool_calls.clone() });
        for call in &turn.tool_calls {
            messages.push(ModelMessage::Tool { tool_call_id: call.id.clone(), content: result.to_string() });
        }
    }

    #[tokio::test]
    async fn a_script_is_played_turn_by_turn_with_results_carried_forward() {
        let input = json!({ "script": [
            { "tool": "find_lead", "arguments": { "name": "Amina" } },
            { "tool": "send_sms", "arguments": {
                "lead": "{{results.0.lead.id}}",
                "tags": ["{{results.0.lead.tags.1}}"],
                "body": "Hello {{results.0.lead.name}}, lead {{results.0.lead.id}}{{results.0.lead.missing}}!",
                "template": "{{first_name}}"
            } },
            { "tool": "note", "arguments": { "sms": "{{results.1}}", "nothing": "{{results.7.id}}" } }
        ] });
        let mut messages = vec![ModelMessage::System { content: "Follow up.".into() }, user(&input)];

        let first = turn(&messages).await;
        assert_eq!(first.text, None);
        assert_eq!(
            first.tool_calls,
            vec![ToolCall { id: "call_0".into(), name: "find_lead".into(), arguments: json!({ "name": "Amina" }) }]
        );
        answered(&mut messages, &first, &json!({ "lead": { "id": 42, "name": "Amina", "tags": ["new", "hot"] } }));

        let second = turn(&messages).await;
        assert_eq!(
            second.tool_calls,
            vec![ToolCall {
                id: "call_1".into(),
                name: "send_sms".into(),
                arguments: json!({
                    "lead": 42,
                    "tags": ["hot"],
                    "body": "Hello Amina, lead 42!",
                    "template": "{{first_name}}"
                }),
            }]
        );
        answered(&mut messages, &second, &json!({ "sent": true }));

        let third = turn(&messages).await;
        assert_eq!(third.tool_calls[0].id, "call_2");
        assert_eq!(third.tool_calls[0].arguments, json!({ "sms": { "sent": true }, "nothing": null }));
        answered(&mut messages, &third, &json!("noted"));

        let last = turn(&messages).await;
        assert_eq!(last.text.as_deref(), Some("Done: 3 tool calls."));
        assert!(last.tool_calls.is_empty());
    }

    #[tokio::test]
    async fn the_scripts_output_ends_the_run() {
        let mut messages = vec![user(&json!({ "script": [{ "tool": "t" }], "output": "All done." }))];
        let first = turn(&messages).await;
        assert_eq!(first.tool_calls[0].arguments, json!({}));
        answered(&mut messages, &first, &json!({}));
        assert_eq!(turn(&messages).await.text.as_deref(), Some("All done."));
    }

    #[tokio::test]
    async fn say_answers_text_without_a_call() {
        let messages = vec![user(&json!({ "script": [{ "say": "Nothing to follow up." }, { "tool": "never" }] }))];
        let turn = turn(&messages).await;
        assert_eq!(turn.text.as_deref(), Some("Nothing to follow up."));
        assert!(turn.tool_calls.is_empty());
    }

    #[tokio::test]
    async fn input_that_is_not_a_script_has_nothing_to_do() {
        for input in ["Follow up every lead.", r#"{"steps": []}"#, r#"[{"say": "hi"}]"#] {
            let messages = vec![ModelMessage::User { content: input.into() }];
            let turn = turn(&messages).await;
            assert_eq!(turn.text.as_deref(), Some(NO_SCRIPT), "{input}");
            assert!(turn.tool_calls.is_empty());
        }
    }

    #[tokio::test]
    async fn only_the_first_user_message_is_the_script() {
        let messages =
            vec![ModelMessage::User { content: "plain".into() }, user(&json!({ "script": [{ "say": "ignored" }] }))];
        assert_eq!(turn(&messages).await.text.as_deref(), Some(NO_SCRIPT));
    }

    #[tokio::test]
    async fn unknown_tools_are_called_anyway() {
        let messages = vec![user(&json!({ "script": [{ "tool": "no_such_tool", "arguments": { "x": 1 } }] }))];
        let tools = vec![crate::models::ToolSpec {
            name: "find_lead".into(),
            description: "Finds a lead.".into(),
            parameters: json!({ "type": "object" }),
        }];
        let turn = ModelSandbox::new()
            .turn(TurnRequest { model: "sandbox-1", messages: &messages, tools: &tools })
            .await
            .expect("a turn");
        assert_eq!(turn.tool_calls[0].name, "no_such_tool");
    }

    #[tokio::test]
    async fn a_broken_item_is_refused() {
        let messages = vec![user(&json!({ "script": [{ "think": "hard" }] }))];
        let error = ModelSandbox::new()
            .turn(TurnRequest { model: "sandbox-1", messages: &messages, tools: &[] })
            .await
            .expect_err("refused");
        assert!(matches!(error, ModelError::Refused(m) if m.contains("item 0")));
    }

    #[tokio::test]
    async fn usage_is_deterministic_and_counts_characters() {
        let script = r#"{"script":[{"say":"12345"}]}"#;
        let messages =
            vec![ModelMessage::System { content: "abcd".into() }, ModelMessage::User { content: script.into() }];
        let a = turn(&messages).await;
        let b = turn(&messages).await;
        assert_eq!(a, b);
        let input_tokens = i64::try_from((4 + script.len()).div_ceil(4)).expect("small");
        // "12345" is five characters: two tokens.
        assert_eq!(a.usage, TokenUsage { input_tokens, output_tokens: 2 });
        assert_eq!(a.model, "sandbox-1");

        // An earlier call counts as its JSON, and so does the call a turn answers.
        let call = ToolCall { id: "call_0".into(), name: "t".into(), arguments: json!({}) };
        let call_chars = serde_json::to_string(&call).expect("json").len();
        let script = r#"{"script":[{"tool":"t"},{"tool":"t"}]}"#;
        let with_call = vec![
            ModelMessage::User { content: script.into() },
            ModelMessage::Assistant { content: None, tool_calls: vec![call] },
        ];
        let usage = turn(&with_call).await.usage;
        assert_eq!(usage.input_tokens, i64::try_from((script.len() + call_chars).div_ceil(4)).expect("small"));
        // call_1 has the same length as call_0.
        assert_eq!(usage.output_tokens, i64::try_from(call_chars.div_ceil(4)).expect("small"));
        assert_eq!(tokens(0), 1);
    }

    #[tokio::test]
    async fn the_requested_model_names_the_turn() {
        let messages = vec![ModelMessage::User { content: "x".into() }];
        let turn = ModelSandbox::new()
            .turn(TurnRequest { model: "sandbox-2", messages: &messages, tools: &[] })
            .await
            .expect("a turn");
        assert_eq!(turn.model, "sandbox-2");
        assert_eq!(ModelSandbox::new().default_model(), "sandbox-1");
    }

    #[test]
    fn delays_are_capped() {
        assert_eq!(delay_of(&json!({ "say": "x" })), Duration::ZERO);
        assert_eq!(delay_of(&json!({ "say": "x", "delay_ms": 250 })), Duration::from_millis(250));
        assert_eq!(delay_of(&json!({ "say": "x", "delay_ms": 9_999_999 })), MAX_DELAY);
    }

    #[tokio::test]
    async fn a_delayed_item_waits() {
        let messages = vec![user(&json!({ "script": [{ "say": "slow", "delay_ms": 5 }] }))];
        let started = std::time::Instant::now();
        assert_eq!(turn(&messages).await.text.as_deref(), Some("slow"));
        assert!(started.elapsed() >= Duration::from_millis(5));
    }
}
