//! The provider client for a channel: the process's one sandbox, or a real aggregator built
//! from the channel's credentials (opened with the keyring) over the shared HTTP client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kernel::Error;
use providers::voice_sandbox::VoiceSandboxConfig;
use providers::{
    AfricasTalking, AfricasTalkingConfig, AfricasTalkingVoice, ChatGateway, ChatSandbox, ChatSandboxConfig, Cloud,
    CloudConfig, OutboundChat, OutboundSms, Sandbox, SendError, SendOutcome, SmsGateway, VoiceGateway, VoiceSandbox,
};

use crate::channels::Channel;
use crate::messages::Message;

/// The provider of a channel, whichever kind: what dispatch hands a claimed message to.
#[derive(Clone)]
pub enum ChannelProvider {
    Sms(Arc<dyn SmsGateway>),
    Chat(Arc<dyn ChatGateway>),
}

impl ChannelProvider {
    /// Sends one stored message: an SMS as it is, a chat message with its content rebuilt from
    /// its row (`chat::content`), from the business number it names.
    pub async fn send(&self, m: &Message) -> Result<SendOutcome, SendError> {
        match self {
            Self::Sms(gateway) => {
                let sms = OutboundSms { reference: &m.uid, to: &m.recipient, from: m.sender.as_deref(), body: &m.body };
                gateway.send(sms).await
            }
            Self::Chat(gateway) => {
                let content = crate::chat::content::of(m).map_err(SendError::Malformed)?;
                let chat = OutboundChat {
                    reference: &m.uid,
                    phone_number_id: m.sender.as_deref().unwrap_or_default(),
                    to: &m.recipient,
                    content: &content,
                    reply_to: crate::chat::content::reply_to(m),
                };
                gateway.send(chat).await
            }
        }
    }
}

#[derive(Clone)]
pub struct Gateways {
    client: reqwest::Client,
    sandbox: Arc<Sandbox>,
    chat_sandbox: Arc<ChatSandbox>,
    voice_sandbox: Arc<VoiceSandbox>,
    timeout: Duration,
    keyring: store::secrets::Keyring,
    /// Channels whose provider let a call time out, until when this process leaves them be.
    stalled: Arc<Mutex<HashMap<i64, Instant>>>,
}

impl Gateways {
    /// `keyring` opens the channels' credentials.
    pub fn new(
        client: reqwest::Client,
        sandbox: Arc<Sandbox>,
        timeout: Duration,
        keyring: store::secrets::Keyring,
    ) -> Self {
        let chat = ChatSandboxConfig { delivery_delay: sandbox.config().delivery_delay, ..Default::default() };
        let chat_sandbox = Arc::new(ChatSandbox::new(chat));
        let voice = VoiceSandboxConfig { answer_delay: sandbox.config().delivery_delay, ..Default::default() };
        let voice_sandbox = Arc::new(VoiceSandbox::new(voice));
        Self { client, sandbox, chat_sandbox, voice_sandbox, timeout, keyring, stalled: Arc::default() }
    }

    /// The same, with this chat sandbox (its review time and clock from the configuration).
    pub fn with_chat_sandbox(self, chat_sandbox: Arc<ChatSandbox>) -> Self {
        Self { chat_sandbox, ..self }
    }

    /// The chat sandbox every sandbox chat account of this process shares.
    pub fn chat_sandbox(&self) -> &Arc<ChatSandbox> {
        &self.chat_sandbox
    }

    /// The provider a channel sends through, by its kind.
    pub fn provider(&self, channel: &Channel) -> Result<ChannelProvider, Error> {
        match channel.kind.as_str() {
            "chat" => self.chat(channel).map(ChannelProvider::Chat),
            _ => self.sms(channel).map(ChannelProvider::Sms),
        }
    }

    /// The chat provider of a chat account's channel.
    pub fn chat(&self, channel: &Channel) -> Result<Arc<dyn ChatGateway>, Error> {
        match channel.provider.as_str() {
            "sandbox" => Ok(self.chat_sandbox.clone()),
            "cloud" => Ok(self.cloud(channel)?),
            other => Err(Error::internal(format!("chat channel {} has an unknown provider {other}", channel.id))),
        }
    }

    /// The Cloud API client of a `cloud` chat account's channel (messages, templates and the
    /// catalogue).
    pub fn cloud(&self, channel: &Channel) -> Result<Arc<Cloud>, Error> {
        let credentials = crate::chat::accounts::ChatCredentials::open(&self.keyring, channel)?;
        let config = CloudConfig {
            base_url: credentials.base_url,
            version: credentials.version,
            access_token: credentials.access_token,
            timeout: self.timeout,
        };
        Ok(Arc::new(Cloud::new(self.client.clone(), config)))
    }

    /// Seals channel credentials (`channels::add`) and opens them here.
    pub fn keyring(&self) -> &store::secrets::Keyring {
        &self.keyring
    }

    /// A call to `channel`'s provider timed out: for one more timeout, sends on it wait instead
    /// of tying up more of this process's workers on a provider that hangs.
    pub fn stalled(&self, channel: i64) {
        let now = Instant::now();
        let before = self.stalled.lock().unwrap_or_else(|e| e.into_inner()).insert(channel, now + self.timeout);
        if before.is_none_or(|until| until < now) {
            tracing::warn!(channel, wait = ?self.timeout, "a provider call timed out; sends on the channel wait");
        }
    }

    /// How long sends on `channel` should still wait, if its provider stalled lately.
    pub fn stall_left(&self, channel: i64) -> Option<Duration> {
        let mut stalled = self.stalled.lock().unwrap_or_else(|e| e.into_inner());
        let left = stalled.get(&channel)?.checked_duration_since(Instant::now());
        if left.is_none() {
            stalled.remove(&channel);
        }
        left
    }

    /// The sandbox every sandbox channel of this process shares (tests count its calls).
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    pub fn sms(&self, channel: &Channel) -> Result<Arc<dyn SmsGateway>, Error> {
        match channel.provider.as_str() {
            "sandbox" => Ok(self.sandbox.clone()),
            "africastalking" => Ok(Arc::new(AfricasTalking::new(self.client.clone(), self.africastalking(channel)?))),
            other => Err(Error::internal(format!("channel {} has an unknown provider {other}", channel.id))),
        }
    }

    /// The voice sandbox every sandbox voice channel of this process shares (tests count its calls).
    pub fn voice_sandbox(&self) -> &Arc<VoiceSandbox> {
        &self.voice_sandbox
    }

    /// The voice provider of a voice channel.
    pub fn voice(&self, channel: &Channel) -> Result<Arc<dyn VoiceGateway>, Error> {
        match channel.provider.as_str() {
            "sandbox" => Ok(self.voice_sandbox.clone()),
            "africastalking" => {
                Ok(Arc::new(AfricasTalkingVoice::new(self.client.clone(), self.africastalking(channel)?)))
            }
            other => Err(Error::internal(format!("voice channel {} has an unknown provider {other}", channel.id))),
        }
    }

    /// The client that reads a voice channel's callbacks (no credentials needed).
    pub fn voice_reader(&self, channel: &Channel) -> Result<Arc<dyn VoiceGateway>, Error> {
        match channel.provider.as_str() {
            "africastalking" => {
                let config = AfricasTalkingConfig::new(String::new(), String::new());
                Ok(Arc::new(AfricasTalkingVoice::new(self.client.clone(), config)))
            }
            _ => self.voice(channel),
        }
    }

    /// An Africa's Talking channel's account, its credentials opened.
    fn africastalking(&self, channel: &Channel) -> Result<AfricasTalkingConfig, Error> {
        // the operator's log names the missing key; the message's reason only says why
        let credentials = crate::credentials::open(&self.keyring, &channel.credentials).map_err(|e| {
            tracing::error!(channel = channel.id, error = %e.message, "a channel's credentials cannot be opened");
            Error::internal("the channel's credentials cannot be opened: is the key that sealed them configured?")
        })?;
        let field = |name: &str| credentials[name].as_str().unwrap_or_default().to_owned();
        Ok(AfricasTalkingConfig {
            base_url: field("base_url"),
            username: field("username"),
            api_key: field("api_key"),
            timeout: self.timeout,
        })
    }

    /// The client that reads a channel's callbacks. Reading needs no credentials, so a
    /// channel whose credentials cannot be opened still takes its receipts and messages.
    pub fn reader(&self, channel: &Channel) -> Result<Arc<dyn SmsGateway>, Error> {
        match channel.provider.as_str() {
            "sandbox" => Ok(self.sandbox.clone()),
            "africastalking" => {
                let config = AfricasTalkingConfig {
                    base_url: String::new(),
                    username: String::new(),
                    api_key: String::new(),
                    timeout: self.timeout,
                };
                Ok(Arc::new(AfricasTalking::new(self.client.clone(), config)))
            }
            other => Err(Error::internal(format!("channel {} has an unknown provider {other}", channel.id))),
        }
    }
}
