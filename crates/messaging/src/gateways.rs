//! The provider client for a channel: the process's one sandbox, or a real aggregator built
//! from the channel's credentials over the shared HTTP client.

use std::sync::Arc;
use std::time::Duration;

use kernel::Error;
use providers::{AfricasTalking, AfricasTalkingConfig, Sandbox, SmsGateway};

use crate::channels::Channel;

#[derive(Clone)]
pub struct Gateways {
    client: reqwest::Client,
    sandbox: Arc<Sandbox>,
    timeout: Duration,
}

impl Gateways {
    pub fn new(client: reqwest::Client, sandbox: Arc<Sandbox>, timeout: Duration) -> Self {
        Self { client, sandbox, timeout }
    }

    /// The sandbox every sandbox channel of this process shares (tests count its calls).
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    pub fn sms(&self, channel: &Channel) -> Result<Arc<dyn SmsGateway>, Error> {
        match channel.provider.as_str() {
            "sandbox" => Ok(self.sandbox.clone()),
            "africastalking" => {
                let field = |name: &str| channel.credentials[name].as_str().unwrap_or_default().to_owned();
                let config = AfricasTalkingConfig {
                    base_url: field("base_url"),
                    username: field("username"),
                    api_key: field("api_key"),
                    timeout: self.timeout,
                };
                Ok(Arc::new(AfricasTalking::new(self.client.clone(), config)))
            }
            other => Err(Error::internal(format!("channel {} has an unknown provider {other}", channel.id))),
        }
    }
}
