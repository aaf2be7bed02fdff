//! Subscription callbacks (contract: Automation subscription callbacks). Each event a
//! subscription follows is posted to its URL as the Standard Webhooks describe:
//!
//! - body `{id, type, timestamp, data}`: the event's id (the same on every retry: the dedupe
//!   key), its name, when it happened (RFC 3339) and its payload;
//! - headers `webhook-id` (the event id), `webhook-timestamp` (Unix seconds of this attempt)
//!   and `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`
//!   keyed with the base64-decoded part of the secret after `whsec_`);
//! - any 2xx is delivered; anything else (another status, a timeout, a refused address) is
//!   tried again after 5 seconds, 5 minutes, 30 minutes, 2 hours, 5 hours, 10 hours and
//!   10 hours: eight attempts in all, then the callback is `failed`.
//!
//! The fan-out is a trigger on the outbox (migration 000059): each matching event gets its
//! delivery and a job in the event's own transaction. The job makes one attempt and queues the
//! next one itself, at the schedule's time.

use std::sync::Arc;

use base64::Engine as _;
use diesel::sql_types::{BigInt, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use kernel::{Error, TenantId};
use serde::{Deserialize, Serialize};
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::Duration;
use uuid::Uuid;

use crate::AutomationService;
use crate::subscriptions::seal_context;

/// The waits before the second to the eighth attempt.
pub const RETRY_SCHEDULE: [Duration; 7] = [
    Duration::seconds(5),
    Duration::minutes(5),
    Duration::minutes(30),
    Duration::hours(2),
    Duration::hours(5),
    Duration::hours(10),
    Duration::hours(10),
];

/// The signature header's value for `body`: `v1,<base64>`.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Result<String, Error> {
    let key = secret
        .strip_prefix("whsec_")
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .ok_or_else(|| Error::internal("a subscription secret is not whsec_<base64>"))?;
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let mut signed = format!("{id}.{timestamp}.").into_bytes();
    signed.extend_from_slice(body);
    let tag = ring::hmac::sign(&key, &signed);
    Ok(format!("v1,{}", base64::engine::general_purpose::STANDARD.encode(tag.as_ref())))
}

#[derive(diesel::QueryableByName)]
struct Pending {
    #[diesel(sql_type = SqlUuid)]
    event_id: Uuid,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Text)]
    url: String,
    #[diesel(sql_type = Text)]
    secret: String,
}

impl AutomationService {
    /// One attempt of a pending callback; the next is queued at the schedule's time.
    async fn attempt(&self, tenant: TenantId, delivery: Uuid) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let pending: Option<Pending> = diesel::sql_query(
            "SELECT d.event_id, d.attempts, s.url, s.secret FROM automation_deliveries d
             JOIN automation_subscriptions s ON s.tenant_id = d.tenant_id AND s.id = d.subscription_id
             WHERE d.tenant_id = $1 AND d.id = $2 AND d.state = 'pending'",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<SqlUuid, _>(delivery)
        .get_result(&mut conn)
        .await
        .optional()?;
        let Some(pending) = pending else { return Ok(()) };
        let Some(event) = store::outbox::read(&mut conn, &[(tenant, pending.event_id)]).await?.into_iter().next()
        else {
            return Ok(());
        };
        drop(conn);
        let secret = self.keyring.open(&seal_context(tenant), &pending.secret)?;
        let body = serde_json::to_vec(&serde_json::json!({
            "id": event.id,
            "type": event.name,
            "timestamp": event.occurred_at.format(&time::format_description::well_known::Rfc3339).map_err(Error::internal)?,
            "data": event.payload,
        }))
        .map_err(Error::internal)?;
        let now = self.clock.now();
        let id = event.id.to_string();
        let signature = sign(&secret, &id, now.unix_timestamp(), &body)?;
        let outcome = self.post(&pending.url, &id, now.unix_timestamp(), &signature, body).await;
        let attempts = pending.attempts + 1;
        let mut conn = self.conn(tenant).await?;
        let (state, next_at) = match &outcome {
            Ok(status) if (200..300).contains(status) => ("delivered", None),
            _ => match RETRY_SCHEDULE.get(pending.attempts as usize) {
                Some(wait) => ("pending", Some(now + *wait)),
                None => ("failed", None),
            },
        };
        let (status, error) = match outcome {
            Ok(status) => (Some(i32::from(status)), (!(200..300).contains(&status)).then(|| format!("HTTP {status}"))),
            Err(error) => (None, Some(error)),
        };
        diesel::sql_query(
            "UPDATE automation_deliveries SET state = $3, attempts = $4, last_status = $5, last_error = $6,
                 next_attempt_at = $7, delivered_at = CASE WHEN $3 = 'delivered' THEN $8 END, updated_at = $8
             WHERE tenant_id = $1 AND id = $2 AND state = 'pending'",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<SqlUuid, _>(delivery)
        .bind::<Text, _>(state)
        .bind::<Integer, _>(attempts)
        .bind::<Nullable<Integer>, _>(status)
        .bind::<Nullable<Text>, _>(error)
        .bind::<Nullable<Timestamptz>, _>(next_at)
        .bind::<Timestamptz, _>(now)
        .execute(&mut conn)
        .await?;
        if let Some(at) = next_at {
            let options = Enqueue { tenant_id: Some(tenant), run_at: Some(at), ..Enqueue::default() };
            store::jobs::enqueue(&mut conn, &Deliver { delivery }, options).await?;
        }
        Ok(())
    }

    /// The status the callback answered, or why there was none.
    async fn post(&self, url: &str, id: &str, timestamp: i64, signature: &str, body: Vec<u8>) -> Result<u16, String> {
        let target = webhooks::guard::check_url(url, &self.config.policy).map_err(|refusal| refusal.to_string())?;
        let response = self
            .client
            .post(target)
            .header("content-type", "application/json")
            .header("webhook-id", id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(body)
            .send()
            .await
            .map_err(|error| match webhooks::guard::refusal_of(&error) {
                Some(refusal) => refusal.to_string(),
                None if error.is_timeout() => "the callback did not answer in time".to_owned(),
                None => format!("the callback could not be reached: {error}"),
            })?;
        Ok(response.status().as_u16())
    }
}

use diesel::OptionalExtension as _;

/// One attempt of one callback.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Deliver {
    pub delivery: Uuid,
}

impl Job for Deliver {
    const NAME: &'static str = "automations.deliver";
    const MAX_ATTEMPTS: i32 = 3;
    type State = AutomationService;

    async fn run(self, service: Arc<AutomationService>, ctx: JobContext) -> Result<(), JobError> {
        Ok(service.attempt(ctx.tenant()?, self.delivery).await?)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn signatures_follow_the_standard_webhooks_example() {
        // the Standard Webhooks specification's own example
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        let signature = super::sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body).expect("signed");
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }
}
