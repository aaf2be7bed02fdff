//! Client ID Metadata Documents: a client whose `client_id` is an https URL publishes its
//! metadata there. The service fetches it as it delivers webhooks: through the address guard
//! (no private, loopback or internal address, whatever the DNS answers), no redirects, no proxy,
//! a short timeout and a small size limit.

use std::time::Duration;

use serde_json::Value;
use webhooks::guard::{self, Policy};

/// The most a document may weigh (the draft asks clients to keep them under 5 KB).
const MAX_BYTES: usize = 5 * 1024;
const TIMEOUT: Duration = Duration::from_secs(5);

pub struct Documents {
    client: reqwest::Client,
    policy: Policy,
}

impl Documents {
    /// `policy` is the webhooks' (`SVC_WEBHOOKS_ALLOW_LOOPBACK` lets tests and local development
    /// serve a document on loopback over http).
    pub fn new(policy: Policy) -> Result<Self, String> {
        Ok(Self { client: guard::client(policy, TIMEOUT)?, policy })
    }

    /// The document at `url`, as JSON; the error is shown on the page.
    pub async fn fetch(&self, url: &str) -> Result<Value, String> {
        let refused = |why: String| format!("The client's metadata document at {url} cannot be used: {why}.");
        let parsed = guard::check_url(url, &self.policy).map_err(|r| refused(words(&r)))?;
        if parsed.fragment().is_some() || parsed.path() == "/" || parsed.query().is_some() {
            return Err(refused("a client_id URL has a path, and no query or fragment".into()));
        }
        let response = self
            .client
            .get(parsed)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| refused(guard::refusal_of(&e).map_or_else(|| "it could not be fetched".into(), words)))?;
        if !response.status().is_success() {
            return Err(refused(format!("it answered HTTP {}", response.status().as_u16())));
        }
        let body =
            guard::read_excerpt(response, MAX_BYTES + 1).await.map_err(|_| refused("it could not be read".into()))?;
        if body.len() > MAX_BYTES {
            return Err(refused(format!("it is larger than {MAX_BYTES} bytes")));
        }
        serde_json::from_str(&body).map_err(|_| refused("it is not JSON".into()))
    }
}

/// The guard's refusal in this page's words: its texts speak of webhooks.
fn words(refusal: &guard::Refusal) -> String {
    let text = refusal.to_string();
    let reason = text.split("; webhooks").next().unwrap_or(&text);
    reason.replace("the webhook URL", "the client_id URL").replace("the webhook host", "the client_id host")
}
