//! An OpenAI-compatible chat-completions API (`POST {base}/chat/completions`): OpenAI itself, or
//! any server that speaks its shape (a local model server, a proxy). One request is one turn.
//!
//! A provider that is down, slow or rate-limited is `Unavailable` (worth trying again); one that
//! turns the request down is `Refused`, in its own words when it gives them.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::models::{ModelError, ModelGateway, ModelMessage, TokenUsage, ToolCall, ToolSpec, Turn, TurnRequest};

/// The longest provider text an error carries (an HTML error page must not fill a run's record).
const ERROR_CHARS: usize = 300;

/// Where and as whom to reach the provider.
#[derive(Clone)]
pub struct OpenAiConfig {
    /// Without the trailing `/chat/completions` (`https://api.openai.com/v1`).
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>`.
    pub api_key: String,
    /// The model asked for when a task names none.
    pub model: String,
    /// Each request, answer body included.
    pub timeout: Duration,
}

impl OpenAiConfig {
    pub const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";
    pub const DEFAULT_MODEL: &'static str = "gpt-4o-mini";
    /// A long answer with many tool calls can take a while to generate.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
}

/// Hand-written so the API key never reaches a log line through `{:?}`.
impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// The chat-completions client.
#[derive(Clone, Debug)]
pub struct OpenAi {
    client: reqwest::Client,
    config: OpenAiConfig,
    completions_url: String,
}

impl OpenAi {
    pub fn new(client: reqwest::Client, config: OpenAiConfig) -> Self {
        let base = config.base_url.trim_end_matches('/');
        let completions_url = format!("{base}/chat/completions");
        Self { client, config, completions_url }
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }
}

/// The request body: the conversation, and the tools when there are any (an empty `tools` array
/// is refused by some servers).
fn request_body(request: &TurnRequest<'_>) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(wire_message).collect();
    let mut body = json!({ "model": request.model, "messages": messages });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request.tools.iter().map(wire_tool).collect();
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!("auto");
    }
    body
}

fn wire_message(message: &ModelMessage) -> Value {
    match message {
        ModelMessage::System { content } => json!({ "role": "system", "content": content }),
        ModelMessage::User { content } => json!({ "role": "user", "content": content }),
        ModelMessage::Assistant { content, tool_calls } => {
            let mut wire = json!({ "role": "assistant", "content": content });
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.id,
                            "type": "function",
                            // The wire carries the arguments as JSON text.
                            "function": { "name": call.name, "arguments": call.arguments.to_string() },
                        })
                    })
                    .collect();
                wire["tool_calls"] = Value::Array(calls);
            }
            wire
        }
        ModelMessage::Tool { tool_call_id, content } => {
            json!({ "role": "tool", "tool_call_id": tool_call_id, "content": content })
        }
    }
}

fn wire_tool(tool: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": { "name": tool.name, "description": tool.description, "parameters": tool.parameters },
    })
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: AnswerMessage,
}

#[derive(Deserialize)]
struct AnswerMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    id: String,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    /// JSON text on OpenAI's wire; some compatible servers send the object itself.
    #[serde(default)]
    arguments: Value,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<i64>,
    #[serde(default)]
    completion_tokens: Option<i64>,
}

/// The provider's error shape (`{"error": {"message": ...}}`).
#[derive(Deserialize)]
struct ErrorAnswer {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: Option<String>,
}

/// The arguments as an object. Text that is not JSON stays a string, so the tool call fails
/// visibly (the tool refuses it) instead of the whole turn.
fn arguments(wire: Value) -> Value {
    match wire {
        Value::String(text) if text.trim().is_empty() => json!({}),
        Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        Value::Null => json!({}),
        other => other,
    }
}

/// Reads a 2xx answer into a turn.
fn turn_from_body(body: &[u8], requested_model: &str) -> Result<Turn, ModelError> {
    let completion: Completion = serde_json::from_slice(body)
        .map_err(|e| ModelError::Refused(format!("unreadable chat-completions answer: {e}")))?;
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(ModelError::Refused("a chat-completions answer without choices".into()));
    };
    let tool_calls = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .map(|call| ToolCall { id: call.id, name: call.function.name, arguments: arguments(call.function.arguments) })
        .collect();
    let usage = completion.usage.map_or_else(TokenUsage::default, |u| TokenUsage {
        input_tokens: u.prompt_tokens.unwrap_or(0),
        output_tokens: u.completion_tokens.unwrap_or(0),
    });
    let model = completion.model.filter(|m| !m.is_empty()).unwrap_or_else(|| requested_model.to_owned());
    Ok(Turn { text: choice.message.content, tool_calls, usage, model })
}

/// What a non-2xx answer means: 429 and 5xx are worth retrying, the rest is a refusal.
fn error_from_status(status: u16, body: &[u8]) -> ModelError {
    let message = serde_json::from_slice::<ErrorAnswer>(body)
        .ok()
        .and_then(|answer| answer.error.message)
        .map(|m| cut(m.trim(), ERROR_CHARS).to_owned())
        .filter(|m| !m.is_empty());
    let text = match message {
        Some(message) => format!("{message} (HTTP {status})"),
        None => format!("HTTP {status}"),
    };
    if status == 429 || (500..600).contains(&status) {
        ModelError::Unavailable(text)
    } else {
        ModelError::Refused(text)
    }
}

/// reqwest's error with its causes, which carry the useful part ("connection refused"), without
/// the URL.
fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    cut(&text, ERROR_CHARS).to_owned()
}

/// The first `max` characters of `text`.
fn cut(text: &str, max: usize) -> &str {
    text.char_indices().nth(max).map_or(text, |(end, _)| &text[..end])
}

#[async_trait::async_trait]
impl ModelGateway for OpenAi {
    fn default_model(&self) -> &str {
        &self.config.model
    }

    async fn turn(&self, request: TurnRequest<'_>) -> Result<Turn, ModelError> {
        let timeout = self.config.timeout;
        let unavailable = |error: reqwest::Error| {
            if error.is_timeout() {
                ModelError::Unavailable(format!("no answer within {timeout:?}"))
            } else {
                ModelError::Unavailable(describe(error))
            }
        };
        let body = request_body(&request);
        tracing::debug!(model = request.model, messages = request.messages.len(), "asking the model for a turn");
        let response = self
            .client
            .post(&self.completions_url)
            .bearer_auth(&self.config.api_key)
            .header(reqwest::header::ACCEPT, "application/json")
            .json(&body)
            .timeout(timeout)
            .send()
            .await
            .map_err(unavailable)?;
        let status = response.status().as_u16();
        let answer = response.bytes().await.map_err(unavailable)?;
        if !(200..300).contains(&status) {
            let error = error_from_status(status, &answer);
            tracing::warn!(model = request.model, status, %error, "the model provider answered with an error");
            return Err(error);
        }
        let turn = turn_from_body(&answer, request.model);
        match &turn {
            Ok(turn) => tracing::debug!(
                model = turn.model,
                tool_calls = turn.tool_calls.len(),
                input_tokens = turn.usage.input_tokens,
                output_tokens = turn.usage.output_tokens,
                "the model answered a turn"
            ),
            Err(error) => tracing::warn!(model = request.model, %error, "the model's answer is unreadable"),
        }
        turn
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wiremock::matchers::{bearer_token, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    const KEY: &str = "sk-test-0123456789";

    fn config(base_url: String, timeout: Duration) -> OpenAiConfig {
        OpenAiConfig { base_url, api_key: KEY.into(), model: OpenAiConfig::DEFAULT_MODEL.into(), timeout }
    }

    fn client(server: &MockServer) -> OpenAi {
        client_with_timeout(server, Duration::from_secs(5))
    }

    fn client_with_timeout(server: &MockServer, timeout: Duration) -> OpenAi {
        OpenAi::new(crate::http_client().expect("http client"), config(server.uri(), timeout))
    }

    async fn answering(template: ResponseTemplate) -> MockServer {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/chat/completions"))
            .and(bearer_token(KEY))
            .respond_with(template)
            .mount(&server)
            .await;
        server
    }

    fn text_answer(text: &str) -> ResponseTemplate {
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": text, "refusal": null },
                "finish_reason": "stop"
            }],
            "usage": { "prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127 }
        }))
    }

    fn conversation() -> Vec<ModelMessage> {
        vec![
            ModelMessage::System { content: "You follow up leads.".into() },
            ModelMessage::User { content: "Find Amina's lead.".into() },
            ModelMessage::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "call_a".into(),
                    name: "find_lead".into(),
                    arguments: json!({ "name": "Amina", "limit": 1 }),
                }],
            },
            ModelMessage::Tool { tool_call_id: "call_a".into(), content: r#"{"id":"lead_1"}"#.into() },
            ModelMessage::Assistant { content: Some("Found it.".into()), tool_calls: vec![] },
        ]
    }

    fn tools() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "find_lead".into(),
            description: "Finds a lead by name.".into(),
            parameters: json!({ "type": "object", "properties": { "name": { "type": "string" } } }),
        }]
    }

    #[test]
    fn debug_hides_the_key() {
        let config = config(OpenAiConfig::DEFAULT_BASE_URL.into(), OpenAiConfig::DEFAULT_TIMEOUT);
        let text = format!("{config:?}");
        assert!(!text.contains(KEY), "{text}");
        assert!(text.contains("gpt-4o-mini"), "{text}");
        let client = OpenAi::new(crate::http_client().expect("http client"), config);
        assert!(!format!("{client:?}").contains(KEY));
    }

    #[tokio::test]
    async fn the_request_is_the_chat_completions_shape() {
        let server = answering(text_answer("ok")).await;
        let messages = conversation();
        let tools = tools();
        let request = TurnRequest { model: "gpt-4o", messages: &messages, tools: &tools };
        client(&server).turn(request).await.expect("a turn");

        let received = server.received_requests().await.expect("requests are recorded");
        assert_eq!(received.len(), 1);
        let header = received[0].headers.get("authorization").and_then(|v| v.to_str().ok());
        assert_eq!(header, Some("Bearer sk-test-0123456789"));
        let body: Value = serde_json::from_slice(&received[0].body).expect("a JSON body");
        assert_eq!(
            body,
            json!({
                "model": "gpt-4o",
                "messages": [
                    { "role": "system", "content": "You follow up leads." },
                    { "role": "user", "content": "Find Amina's lead." },
                    {
                        "role": "assistant",
                        "content": null,
                        "tool_calls": [{
                            "id": "call_a",
                            "type": "function",
                            "function": { "name": "find_lead", "arguments": r#"{"name":"Amina","limit":1}"# }
                        }]
                    },
                    { "role": "tool", "tool_call_id": "call_a", "content": r#"{"id":"lead_1"}"# },
                    { "role": "assistant", "content": "Found it." }
                ],
                "tools": [{
                    "type": "function",
                    "function": {
                        "name": "find_lead",
                        "description": "Finds a lead by name.",
                        "parameters": { "type": "object", "properties": { "name": { "type": "string" } } }
                    }
                }],
                "tool_choice": "auto"
            })
        );
    }

    #[tokio::test]
    async fn without_tools_neither_tools_nor_tool_choice_is_sent() {
        let server = answering(text_answer("ok")).await;
        let messages = vec![ModelMessage::User { content: "Hi".into() }];
        client(&server).turn(TurnRequest { model: "m", messages: &messages, tools: &[] }).await.expect("a turn");
        let received = server.received_requests().await.expect("requests are recorded");
        let body: Value = serde_json::from_slice(&received[0].body).expect("a JSON body");
        assert_eq!(body, json!({ "model": "m", "messages": [{ "role": "user", "content": "Hi" }] }));
    }

    #[tokio::test]
    async fn a_base_url_with_a_trailing_slash_still_reaches_the_endpoint() {
        let server = answering(text_answer("ok")).await;
        let client = OpenAi::new(
            crate::http_client().expect("http client"),
            config(format!("{}/", server.uri()), Duration::from_secs(5)),
        );
        let messages = vec![ModelMessage::User { content: "Hi".into() }];
        let turn = client.turn(TurnRequest { model: "m", messages: &messages, tools: &[] }).await;
        assert_eq!(turn.expect("a turn").text.as_deref(), Some("ok"));
    }

    #[tokio::test]
    async fn tool_calls_are_read_with_their_arguments_as_objects() {
        let server = answering(ResponseTemplate::new(200).set_body_json(json!({
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": null,
                    "tool_calls": [
                        { "id": "call_1", "type": "function",
                          "function": { "name": "find_lead", "arguments": "{\"name\":\"Amina\"}" } },
                        { "id": "call_2", "type": "function",
                          "function": { "name": "send_sms", "arguments": "{\"to\":\"+254700000001\",\"body\":\"Hi\"}" } }
                    ]
                },
                "finish_reason": "tool_calls"
            }],
            "usage": { "prompt_tokens": 50, "completion_tokens": 30 }
        })))
        .await;
        let messages = conversation();
        let tools = tools();
        let turn = client(&server)
            .turn(TurnRequest { model: "gpt-4o-mini", messages: &messages, tools: &tools })
            .await
            .expect("a turn");
        assert_eq!(turn.text, None);
        assert_eq!(
            turn.tool_calls,
            vec![
                ToolCall { id: "call_1".into(), name: "find_lead".into(), arguments: json!({ "name": "Amina" }) },
                ToolCall {
                    id: "call_2".into(),
                    name: "send_sms".into(),
                    arguments: json!({ "to": "+254700000001", "body": "Hi" }),
                },
            ]
        );
        assert_eq!(turn.usage, TokenUsage { input_tokens: 50, output_tokens: 30 });
        assert_eq!(turn.model, "gpt-4o-mini-2024-07-18");
    }

    #[tokio::test]
    async fn a_text_answer_and_its_usage_are_read() {
        let server = answering(text_answer("All three leads were followed up.")).await;
        let messages = conversation();
        let turn = client(&server)
            .turn(TurnRequest { model: "gpt-4o-mini", messages: &messages, tools: &[] })
            .await
            .expect("a turn");
        assert_eq!(turn.text.as_deref(), Some("All three leads were followed up."));
        assert!(turn.tool_calls.is_empty());
        assert_eq!(turn.usage, TokenUsage { input_tokens: 120, output_tokens: 7 });
        assert_eq!(turn.model, "gpt-4o-mini-2024-07-18");
    }

    #[tokio::test]
    async fn missing_usage_and_model_fall_back() {
        let server = answering(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{ "message": { "role": "assistant", "content": "ok" } }]
        })))
        .await;
        let messages = conversation();
        let turn = client(&server)
            .turn(TurnRequest { model: "local-llama", messages: &messages, tools: &[] })
            .await
            .expect("a turn");
        assert_eq!(turn.usage, TokenUsage::default());
        assert_eq!(turn.model, "local-llama");
    }

    #[tokio::test]
    async fn arguments_that_are_not_json_stay_text() {
        let server = answering(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{ "message": { "role": "assistant", "content": null, "tool_calls": [
                { "id": "call_1", "type": "function", "function": { "name": "find_lead", "arguments": "{\"name\": \"Am" } }
            ] } }]
        })))
        .await;
        let messages = conversation();
        let turn = client(&server)
            .turn(TurnRequest { model: "m", messages: &messages, tools: &[] })
            .await
            .expect("the turn itself succeeds");
        assert_eq!(turn.tool_calls[0].arguments, Value::String("{\"name\": \"Am".into()));
    }

    async fn error_of(template: ResponseTemplate) -> ModelError {
        let server = answering(template).await;
        let messages = conversation();
        client(&server).turn(TurnRequest { model: "m", messages: &messages, tools: &[] }).await.expect_err("an error")
    }

    #[tokio::test]
    async fn rate_limits_and_server_errors_are_unavailable() {
        let limited = ResponseTemplate::new(429)
            .set_body_json(json!({ "error": { "message": "Rate limit reached", "type": "requests" } }));
        assert!(matches!(error_of(limited).await, ModelError::Unavailable(m) if m.contains("Rate limit reached")));
        let broken = ResponseTemplate::new(500).set_body_string("<html>oops</html>");
        assert!(matches!(error_of(broken).await, ModelError::Unavailable(m) if m.contains("500")));
        assert!(matches!(error_of(ResponseTemplate::new(503)).await, ModelError::Unavailable(_)));
    }

    #[tokio::test]
    async fn other_errors_are_refusals_in_the_providers_words() {
        let bad = ResponseTemplate::new(400).set_body_json(json!({ "error": { "message": "bad model" } }));
        assert!(matches!(error_of(bad).await, ModelError::Refused(m) if m.contains("bad model")));
        assert!(matches!(error_of(ResponseTemplate::new(401)).await, ModelError::Refused(m) if m.contains("401")));
    }

    #[tokio::test]
    async fn an_answer_without_choices_is_refused() {
        let empty = ResponseTemplate::new(200).set_body_json(json!({ "choices": [] }));
        assert!(matches!(error_of(empty).await, ModelError::Refused(_)));
        let garbage = ResponseTemplate::new(200).set_body_string("not json");
        assert!(matches!(error_of(garbage).await, ModelError::Refused(_)));
    }

    #[tokio::test]
    async fn a_slow_provider_is_unavailable() {
        let server = answering(text_answer("late").set_delay(Duration::from_millis(500))).await;
        let messages = conversation();
        let error = client_with_timeout(&server, Duration::from_millis(50))
            .turn(TurnRequest { model: "m", messages: &messages, tools: &[] })
            .await
            .expect_err("a timeout");
        assert!(matches!(&error, ModelError::Unavailable(m) if m.contains("no answer within")), "{error:?}");
    }

    #[tokio::test]
    async fn an_unreachable_provider_is_unavailable() {
        let client = OpenAi::new(
            crate::http_client().expect("http client"),
            config("http://127.0.0.1:9".into(), Duration::from_secs(2)),
        );
        let messages = conversation();
        let error =
            client.turn(TurnRequest { model: "m", messages: &messages, tools: &[] }).await.expect_err("no connection");
        assert!(matches!(&error, ModelError::Unavailable(m) if !m.contains(KEY)), "{error:?}");
    }
}
