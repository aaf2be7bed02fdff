//! The language-model interface agent runs reason with, in the shape of the OpenAI-compatible
//! chat-completions API (`POST {base}/chat/completions` with `messages` and `tools`): one call
//! is one model turn, which answers text, tool calls, or both, and the tokens it used.
//! [`crate::openai::OpenAi`] is the real client, [`crate::models_sandbox::ModelSandbox`] the
//! scripted stand-in the demo and the tests use.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of the conversation a turn continues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ModelMessage {
    /// The task's instructions.
    System { content: String },
    /// The task's input.
    User { content: String },
    /// An earlier turn: its text and the tools it called.
    Assistant {
        #[serde(default)]
        content: Option<String>,
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    },
    /// What one of those calls answered (JSON text, or an error as JSON text).
    Tool { tool_call_id: String, content: String },
}

/// A tool the model may call: its name, what it does, and the JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// A call the model asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The model's id of the call, echoed back on the tool's answer.
    pub id: String,
    pub name: String,
    /// The arguments as an object (the wire carries them as JSON text).
    pub arguments: Value,
}

/// Tokens a turn used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub input_tokens: i64,
    pub output_tokens: i64,
}

/// One turn's request.
#[derive(Debug, Clone, Copy)]
pub struct TurnRequest<'a> {
    pub model: &'a str,
    pub messages: &'a [ModelMessage],
    pub tools: &'a [ToolSpec],
}

/// What a turn answered: text, tool calls, or both. No tool call means the model is done and
/// `text` is the run's output.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Turn {
    pub text: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: TokenUsage,
    /// The model that answered, as the provider names it.
    pub model: String,
}

/// Why a turn has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The provider could not be reached, timed out, or answered 429/5xx: try again later.
    #[error("the model provider is unavailable: {0}")]
    Unavailable(String),
    /// The provider refused the request (a 4xx other than 429, a reply it could not read).
    #[error("the model provider refused the request: {0}")]
    Refused(String),
}

/// A language model behind the chat-completions shape.
#[async_trait::async_trait]
pub trait ModelGateway: Send + Sync {
    /// The model asked for when a task names none.
    fn default_model(&self) -> &str;

    /// One model turn.
    async fn turn(&self, request: TurnRequest<'_>) -> Result<Turn, ModelError>;
}
