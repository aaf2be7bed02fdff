//! Clients for the outside world (house rule 8): SMS aggregators, voice, the chat provider, mobile money and language models. Each kind of provider is a trait with a real
//! HTTP implementation (reqwest, base URL and credentials from configuration) and a sandbox
//! that behaves like the real thing, so the service runs fully on a laptop.

pub mod africastalking;
pub mod africastalking_voice;
pub mod catalogue;
pub mod chat;
pub mod chat_flows;
pub mod chat_groups;
pub mod chat_sandbox;
pub mod cloud;
mod cloud_catalogue;
mod cloud_flows;
mod cloud_groups;
pub mod models;
pub mod models_sandbox;
pub mod mpesa;
pub mod openai;
pub mod payments;
pub mod payments_sandbox;
pub mod sandbox;
pub mod sms;
pub mod voice;
pub mod voice_sandbox;

pub use africastalking::{AfricasTalking, AfricasTalkingConfig};
pub use africastalking_voice::AfricasTalkingVoice;
pub use catalogue::{CatalogueError, CatalogueGateway, CatalogueItem, ItemOutcome};
pub use chat::{ChatContent, ChatEvent, ChatGateway, OutboundChat};
pub use chat_sandbox::{ChatSandbox, ChatSandboxConfig};
pub use cloud::{Cloud, CloudConfig};
pub use models::{ModelError, ModelGateway, ModelMessage, TokenUsage, ToolCall, ToolSpec, Turn, TurnRequest};
pub use models_sandbox::ModelSandbox;
pub use mpesa::{Mpesa, MpesaConfig};
pub use openai::{OpenAi, OpenAiConfig};
pub use payments::{MobileMoney, PushCallback, PushOutcome, PushRequest, PushResult, RefundOutcome};
pub use payments_sandbox::{PaymentSandbox, PaymentSandboxConfig};
pub use sandbox::{Sandbox, SandboxConfig, SandboxOutcome, SandboxSms};
pub use sms::{
    CallbackError, DeliveryReceipt, InboundSms, OutboundSms, ReceiptStatus, ScheduledReceipt, SendError, SendOutcome,
    SmsGateway,
};
pub use voice::{
    CallEnd, CallScript, OutboundCall, PlaceOutcome, ScriptedAnswer, VoiceAction, VoiceCallback, VoiceGateway,
};
pub use voice_sandbox::VoiceSandbox;

/// The HTTP client every provider shares: one connection pool, rustls with ring, the system's
/// roots. Per-request timeouts are set by each provider from its configuration.
pub fn http_client() -> Result<reqwest::Client, String> {
    // Installing twice is harmless; the first provider wins.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .user_agent(concat!("svc/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}
