//! Subscriptions: a callback URL and the business events it follows. Made by the operator
//! (`gateway admin automation subscribe`) and by MCP tools, read by keys
//! (`GET /automations/subscriptions`); the secret is shown once, when made.

use base64::Engine as _;
use diesel::sql_types::{Array, BigInt, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use kernel::{Caller, Error, TenantId};
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::AutomationService;
use crate::events::NOT_LIVE;

/// The fixed cap of `GET /automations/subscriptions` (no pagination), and of a workspace.
pub const MAX_SUBSCRIPTIONS: i64 = 100;
/// Events one subscription may name.
pub const MAX_EVENTS: usize = 100;
/// The prefix of the events schedules emit (`scheduled.daily_report`).
pub const SCHEDULED_PREFIX: &str = "scheduled.";

/// A subscription, as reads show it (never its secret).
#[derive(Debug, Clone, Serialize, ToSchema, diesel::QueryableByName)]
pub struct Subscription {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Array<Text>)]
    pub events: Vec<String>,
    #[diesel(sql_type = Text)]
    pub url: String,
    /// `operator` or `mcp`.
    #[diesel(sql_type = Text)]
    pub created_by: String,
    /// Callbacks delivered, waiting (first attempt or a retry) and given up.
    #[diesel(sql_type = BigInt)]
    pub delivered: i64,
    #[diesel(sql_type = BigInt)]
    pub pending: i64,
    #[diesel(sql_type = BigInt)]
    pub failed: i64,
    #[diesel(sql_type = Timestamptz)]
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// `{subscriptions}`: newest first, at most 100.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Subscriptions {
    pub subscriptions: Vec<Subscription>,
}

/// A subscription just made, with the secret its callbacks are signed with (shown once).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Subscribed {
    pub id: i64,
    /// `whsec_` and the base64 of 24 random bytes (the Standard Webhooks form).
    pub secret: String,
    pub events: Vec<String>,
    pub url: String,
}

const READ: &str = "SELECT s.id, s.events, s.url, s.created_by, s.created_at,
        count(*) FILTER (WHERE d.state = 'delivered') AS delivered,
        count(*) FILTER (WHERE d.state = 'pending') AS pending,
        count(*) FILTER (WHERE d.state = 'failed') AS failed
     FROM automation_subscriptions s LEFT JOIN automation_deliveries d
       ON d.tenant_id = s.tenant_id AND d.subscription_id = s.id
     WHERE s.tenant_id = $1";

impl AutomationService {
    pub async fn subscriptions(&self, caller: &Caller) -> Result<Subscriptions, Error> {
        Self::may_read(caller)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let subscriptions = diesel::sql_query(format!("{READ} GROUP BY s.tenant_id, s.id ORDER BY s.id DESC LIMIT $2"))
            .bind::<BigInt, _>(caller.tenant_id.0)
            .bind::<BigInt, _>(MAX_SUBSCRIPTIONS)
            .load(&mut conn)
            .await?;
        Ok(Subscriptions { subscriptions })
    }

    /// A new subscription of `tenant` (`created_by`: `operator` or `mcp`). 422 naming `events`
    /// for no event, too many, an unknown name or a payment event (not live: poll
    /// `GET /payments`), naming `url` for a target the address guard refuses; 409 past 100.
    pub async fn subscribe(
        &self,
        tenant: TenantId,
        events: &[String],
        url: &str,
        created_by: &str,
    ) -> Result<Subscribed, Error> {
        let events = self.check_events(events)?;
        let url = webhooks::guard::check_url(url.trim(), &self.config.policy)
            .map_err(|refusal| Error::field("url", refusal.to_string()))?
            .to_string();
        let secret = new_secret()?;
        let sealed = self.keyring.seal(&seal_context(tenant), &secret)?;
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        #[derive(diesel::QueryableByName)]
        struct Made {
            #[diesel(sql_type = BigInt)]
            id: i64,
        }
        // the cap is checked by the insert itself, so two at once cannot pass it together
        let made: Vec<Made> = diesel::sql_query(
            "INSERT INTO automation_subscriptions (tenant_id, events, url, secret, created_by, created_at, updated_at)
             SELECT $1, $2, $3, $4, $5, $6, $6
             WHERE (SELECT count(*) FROM automation_subscriptions WHERE tenant_id = $1) < $7
             RETURNING id",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<Array<Text>, _>(&events)
        .bind::<Text, _>(&url)
        .bind::<Text, _>(&sealed)
        .bind::<Text, _>(created_by)
        .bind::<Timestamptz, _>(now)
        .bind::<BigInt, _>(MAX_SUBSCRIPTIONS)
        .load(&mut conn)
        .await?;
        let Some(id) = <[Made]>::first(&made).map(|m| m.id) else {
            return Err(Error::conflict(format!("A workspace keeps at most {MAX_SUBSCRIPTIONS} subscriptions.")));
        };
        Ok(Subscribed { id, secret, events, url })
    }

    /// Removes a subscription and its callbacks still waiting (404 for none of `tenant`'s).
    pub async fn unsubscribe(&self, tenant: TenantId, id: i64) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let removed = diesel::sql_query("DELETE FROM automation_subscriptions WHERE tenant_id = $1 AND id = $2")
            .bind::<BigInt, _>(tenant.0)
            .bind::<BigInt, _>(id)
            .execute(&mut conn)
            .await?;
        if removed == 0 {
            return Err(Error::not_found("Subscription"));
        }
        Ok(())
    }

    /// Trimmed, lowercased, once each, in the order given.
    fn check_events(&self, events: &[String]) -> Result<Vec<String>, Error> {
        let mut names: Vec<String> = Vec::new();
        for raw in events {
            let name = raw.trim().to_lowercase();
            if !name.is_empty() && !names.contains(&name) {
                names.push(name);
            }
        }
        if names.is_empty() {
            return Err(Error::field("events", "Name at least one event."));
        }
        if names.len() > MAX_EVENTS {
            return Err(Error::field("events", format!("Name at most {MAX_EVENTS} events.")));
        }
        for name in &names {
            if NOT_LIVE.contains(&name.as_str()) {
                return Err(Error::field(
                    "events",
                    format!("{name} is not live: payment events are not emitted; poll GET /payments instead."),
                ));
            }
            let scheduled = name.strip_prefix(SCHEDULED_PREFIX).is_some_and(is_word);
            if !scheduled && !self.live.iter().any(|live| live == name) {
                return Err(Error::field(
                    "events",
                    format!("{name} is not an event: name one of the catalogue's, or a schedule's `scheduled.<word>`."),
                ));
            }
        }
        Ok(names)
    }
}

/// Lowercase letters, digits and underscores, 1 to 64 of them.
pub(crate) fn is_word(text: &str) -> bool {
    (1..=64).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

pub(crate) fn seal_context(tenant: TenantId) -> String {
    format!("automation_subscriptions.secret:{}", tenant.0)
}

/// `whsec_` and the base64 of 24 random bytes.
fn new_secret() -> Result<String, Error> {
    let mut bytes = [0u8; 24];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| Error::internal("no randomness"))?;
    Ok(format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(bytes)))
}
