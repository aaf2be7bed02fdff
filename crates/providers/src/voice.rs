//! The voice provider interface, in the shape of Africa's Talking Voice (and Twilio's
//! Programmable Voice): we ask for an outbound call; once it is answered the provider asks our
//! callback what to do and we answer with actions (say, play, get digits, record, dial); keys
//! pressed come back to the same callback, which answers the next actions; a last callback
//! tells how the call ended, how long it lasted and what it cost.

use std::time::Duration;

pub use crate::sms::{CallbackError, SendError};

/// One call to place. `reference` is our call uid (Africa's Talking's `clientRequestId`), so
/// callbacks can be matched to the call even before the provider's id is recorded.
#[derive(Debug, Clone, Copy)]
pub struct OutboundCall<'a> {
    pub reference: &'a str,
    /// E.164 with the leading `+`.
    pub to: &'a str,
    /// Our number the callee sees; `None` uses the account's default.
    pub from: Option<&'a str>,
}

/// The provider's answer to a call request.
#[derive(Debug, Clone, PartialEq)]
pub enum PlaceOutcome {
    /// The provider queued the call; callbacks follow.
    Placed {
        provider_call_id: String,
        /// Set only by the sandbox, which announces up front how the call will play out.
        script: Option<CallScript>,
    },
    /// The provider refused the call; it will never ring.
    Refused { reason: String },
}

/// How a sandbox call plays out, announced when it is placed (a real provider tells the same
/// through its callbacks).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CallScript {
    /// How long after the request the callee answers (or the call fails).
    pub after: Duration,
    pub answer: ScriptedAnswer,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ScriptedAnswer {
    /// The callee answers, presses `digits` at every prompt that asks for keys (none: lets
    /// each prompt time out), and stays `seconds` on the line, or hangs up after `seconds`
    /// when `hangs_up_early` (before the actions end).
    Answered { seconds: u32, digits: Option<String>, hangs_up_early: bool },
    /// The call never connected.
    NotAnswered(CallEnd),
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CallEnd {
    /// Answered and ended normally (by either side).
    Completed,
    Busy,
    NoAnswer,
    Failed {
        reason: String,
    },
}

/// What a provider's callback says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VoiceCallback {
    /// The call is live and the provider asks for the next actions: first when it is
    /// answered, then after each `GetDigits` (with the keys pressed, possibly none) or
    /// `Record` (with the recording's address).
    Active {
        provider_call_id: String,
        reference: Option<String>,
        digits: Option<String>,
        recording_url: Option<String>,
    },
    /// The call ended. Answered with no actions.
    Ended {
        provider_call_id: String,
        reference: Option<String>,
        end: CallEnd,
        /// Seconds on the line (0 when never answered).
        duration_seconds: u32,
        /// The provider's own cost text (e.g. `"KES 2.5000"`), kept for audit.
        cost: Option<String>,
        recording_url: Option<String>,
    },
}

/// One action of a call's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VoiceAction {
    /// Text to speech; `language` is `en` or `sw`.
    Say { text: String, language: String },
    /// An audio file the provider fetches and plays.
    Play { url: String },
    /// Plays `prompt`, then waits for keys: up to `num_digits`, or until `finish_on_key`, or
    /// `timeout_seconds` of silence. The keys come back in the next `Active` callback.
    GetDigits { prompt: Vec<VoiceAction>, num_digits: Option<u8>, finish_on_key: Option<char>, timeout_seconds: u32 },
    /// Plays `prompt` and records the caller (a voicemail) for at most `max_seconds`, ended
    /// early by `finish_on_key`; the recording's address comes back in a callback.
    Record { prompt: Vec<VoiceAction>, max_seconds: u32, finish_on_key: Option<char> },
    /// Connects the call to the first of `numbers` that answers, recording the conversation
    /// when `record`; `caller_id` is the number shown to them.
    Dial { numbers: Vec<String>, record: bool, caller_id: Option<String> },
    /// Ends the call.
    Hangup,
}

/// A voice provider.
#[async_trait::async_trait]
pub trait VoiceGateway: Send + Sync {
    /// Asks for one outbound call.
    async fn place(&self, call: OutboundCall<'_>) -> Result<PlaceOutcome, SendError>;

    /// Reads a callback body (`content_type` as the request carried it).
    fn parse_callback(&self, content_type: &str, body: &[u8]) -> Result<VoiceCallback, CallbackError>;

    /// Writes the answer to an `Active` callback: `(content type, body)`.
    fn render(&self, actions: &[VoiceAction]) -> (&'static str, String);
}
