//! Channels (a tenant's route to a provider), sender identities, the SMS rate card and the
//! routing policy that picks `tenant_channel_id` for each message (contract: Message).

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Error, TenantId};
use serde::{Deserialize, Serialize};
use store::secrets::Keyring;
use store::{Conn, Prepare};

use crate::schema::{channels, senders, sms_rates};

/// `sms`, `chat` or `voice`.
pub const KINDS: &[&str] = &["sms", "chat", "voice"];
/// Providers the service can reach.
pub const PROVIDERS: &[&str] = &["sandbox", "africastalking"];
/// Sender identity types (contract: `GET /sms/senders`).
pub const SENDER_TYPES: &[&str] = &["sender_id", "phone_number", "short_code"];
/// Sender review states; only `approved` identities are usable.
pub const SENDER_STATUSES: &[&str] = &["approved", "pending", "rejected", "inactive"];

/// What an operator gives to add a channel (`gateway admin channel add`). Its `Debug` leaves
/// the API key out.
#[derive(Clone, Default)]
pub struct NewChannel {
    pub kind: String,
    pub provider: String,
    pub code: Option<String>,
    pub base_url: Option<String>,
    pub username: Option<String>,
    pub api_key: Option<String>,
    pub throughput_per_second: Option<i32>,
}

impl std::fmt::Debug for NewChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewChannel")
            .field("kind", &self.kind)
            .field("provider", &self.provider)
            .field("code", &self.code)
            .field("base_url", &self.base_url)
            .field("username", &self.username)
            .field("throughput_per_second", &self.throughput_per_second)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = channels)]
pub struct Channel {
    pub id: i64,
    pub tenant_id: i64,
    pub kind: String,
    pub provider: String,
    pub code: String,
    /// Sealed (`crate::credentials`): opened only to build the provider client.
    pub credentials: serde_json::Value,
    pub throughput_per_second: i32,
    pub status: String,
    pub callback_token: String,
}

/// Sends per second when the operator does not say: the sandbox is only bounded by us; a real
/// aggregator account starts low, as their default contracts do.
fn default_throughput(provider: &str) -> i32 {
    if provider == "sandbox" { 10_000 } else { 50 }
}

/// The credentials object a provider's client reads.
fn credentials(new: &NewChannel) -> Result<serde_json::Value, Error> {
    Ok(match new.provider.as_str() {
        "africastalking" => {
            let (Some(username), Some(api_key)) = (new.username.as_deref(), new.api_key.as_deref()) else {
                return Err(Error::validation("Africa's Talking needs --username and --api-key."));
            };
            let base_url = match new.kind.as_str() {
                "voice" => providers::AfricasTalkingVoice::DEFAULT_BASE_URL,
                _ => providers::AfricasTalkingConfig::DEFAULT_BASE_URL,
            };
            serde_json::json!({
                "base_url": new.base_url.as_deref().unwrap_or(base_url),
                "username": username,
                "api_key": api_key,
            })
        }
        _ => serde_json::json!({}),
    })
}

/// Adds a channel; its credentials are sealed with `keyring`.
pub async fn add(conn: &mut Conn, keyring: &Keyring, tenant: TenantId, new: NewChannel) -> Result<Channel, Error> {
    if !KINDS.contains(&new.kind.as_str()) {
        return Err(Error::field("kind", "The kind must be sms, chat or voice."));
    }
    if !PROVIDERS.contains(&new.provider.as_str()) {
        return Err(Error::field("provider", "The provider must be sandbox or africastalking."));
    }
    let credentials = credentials(&new)?;
    insert(conn, keyring, tenant, (&new.kind, &new.provider), new.code, &credentials, new.throughput_per_second).await
}

/// Writes a channel of `kind` on `provider` (a chat account's too), its credentials sealed.
pub(crate) async fn insert(
    conn: &mut Conn,
    keyring: &Keyring,
    tenant: TenantId,
    (kind, provider): (&str, &str),
    code: Option<String>,
    credentials: &serde_json::Value,
    throughput: Option<i32>,
) -> Result<Channel, Error> {
    let throughput = throughput.unwrap_or_else(|| default_throughput(provider));
    if throughput <= 0 {
        return Err(Error::field("throughput", "The throughput must be a positive number of messages per second."));
    }
    let code = match code {
        Some(code) if !code.trim().is_empty() => code.trim().to_owned(),
        _ => format!("{provider}-{kind}-{}", &uuid::Uuid::new_v4().simple().to_string()[..6]),
    };
    let token = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    let inserted = diesel::insert_into(channels::table)
        .values((
            channels::tenant_id.eq(tenant.0),
            channels::kind.eq(kind),
            channels::provider.eq(provider),
            channels::code.eq(&code),
            channels::credentials.eq(crate::credentials::seal(keyring, credentials)?),
            channels::throughput_per_second.eq(throughput),
            channels::callback_token.eq(token),
        ))
        .returning(Channel::as_returning())
        .get_result(conn)
        .await;
    match inserted {
        Err(e) if store::is_unique_violation(&e, None) => {
            Err(Error::conflict(format!("The account already has a channel with the code {code}.")))
        }
        other => Ok(other?),
    }
}

/// The channel a provider callback names by its secret token.
pub async fn by_callback_token(conn: &mut Conn, token: &str) -> Result<Channel, Error> {
    channels::table
        .filter(channels::callback_token.eq(token))
        .select(Channel::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Channel"))
}

pub async fn get(conn: &mut Conn, tenant: TenantId, id: i64) -> Result<Channel, Error> {
    channels::table
        .find(id)
        .filter(channels::tenant_id.eq(tenant.0))
        .select(Channel::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Channel"))
}

/// A channel of `tenant` by numeric id or code.
async fn of_tenant(conn: &mut Conn, tenant: TenantId, channel: &str) -> Result<Channel, Error> {
    let mut query = channels::table.filter(channels::tenant_id.eq(tenant.0)).select(Channel::as_select()).into_boxed();
    query = match channel.parse::<i64>() {
        Ok(id) => query.filter(channels::id.eq(id).or(channels::code.eq(channel))),
        Err(_) => query.filter(channels::code.eq(channel)),
    };
    query.first(conn).await.optional()?.ok_or_else(|| Error::not_found("Channel"))
}

/// Replaces the credentials of a channel of `tenant` (by id or code), sealed with `keyring`:
/// the provider issued a new API key, or the key that sealed the old ones is lost.
pub async fn set_credentials(
    conn: &mut Conn,
    keyring: &Keyring,
    tenant: TenantId,
    channel: &str,
    new: NewChannel,
) -> Result<Channel, Error> {
    let channel = of_tenant(conn, tenant, channel).await?;
    let credentials = credentials(&NewChannel { provider: channel.provider.clone(), ..new })?;
    Ok(diesel::update(channels::table.find(channel.id))
        .set((
            channels::credentials.eq(crate::credentials::seal(keyring, &credentials)?),
            channels::updated_at.eq(diesel::dsl::now),
        ))
        .returning(Channel::as_returning())
        .get_result(conn)
        .await?)
}

/// Switches a channel of `tenant` (by id or code) on (`active`) or off (`disabled`).
pub async fn set_status(conn: &mut Conn, tenant: TenantId, channel: &str, status: &str) -> Result<Channel, Error> {
    if status != "active" && status != "disabled" {
        return Err(Error::field("status", "The status must be active or disabled."));
    }
    let channel = of_tenant(conn, tenant, channel).await?;
    Ok(diesel::update(channels::table.find(channel.id))
        .set((channels::status.eq(status), channels::updated_at.eq(diesel::dsl::now)))
        .returning(Channel::as_returning())
        .get_result(conn)
        .await?)
}

/// What an operator gives to add a sender identity (`gateway admin sender add`).
#[derive(Debug, Clone)]
pub struct NewSender {
    pub channel: String,
    pub kind: String,
    pub value: String,
    pub label: Option<String>,
    pub status: Option<String>,
}

/// A sender identity as `GET /sms/senders` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, Queryable, utoipa::ToSchema)]
pub struct Sender {
    #[serde(skip)]
    pub id: i64,
    /// `sender_id`, `phone_number` or `short_code`.
    #[serde(rename = "type")]
    pub kind: String,
    /// What to pass as `sender_id` when sending.
    pub value: String,
    pub label: Option<String>,
    pub status: String,
}

pub async fn add_sender(conn: &mut Conn, tenant: TenantId, new: NewSender) -> Result<Sender, Error> {
    let channel = of_tenant(conn, tenant, &new.channel).await?;
    if !SENDER_TYPES.contains(&new.kind.as_str()) {
        return Err(Error::field("type", "The type must be sender_id, phone_number or short_code."));
    }
    if channel.kind == "voice" && new.kind != "phone_number" {
        return Err(Error::field("type", "A voice channel's caller ids are phone numbers (type phone_number)."));
    }
    let status = new.status.unwrap_or_else(|| "approved".to_owned());
    if !SENDER_STATUSES.contains(&status.as_str()) {
        return Err(Error::field("status", "The status must be approved, pending, rejected or inactive."));
    }
    let value = new.value.trim().to_owned();
    if value.is_empty() || value.chars().count() > 64 {
        return Err(Error::field("value", "The value must be 1 to 64 characters."));
    }
    let inserted = diesel::insert_into(senders::table)
        .values((
            senders::tenant_id.eq(tenant.0),
            senders::channel_id.eq(channel.id),
            senders::kind.eq(&new.kind),
            senders::value.eq(&value),
            senders::label.eq(&new.label),
            senders::status.eq(&status),
        ))
        .returning((senders::id, senders::kind, senders::value, senders::label, senders::status))
        .get_result(conn)
        .await;
    match inserted {
        Err(e) if store::is_unique_violation(&e, None) => {
            Err(Error::conflict(format!("The channel already has the {} {value}.", new.kind)))
        }
        other => Ok(other?),
    }
}

/// Senders that can carry an SMS now: approved, SMS-capable, on an active SMS channel.
fn usable(tenant: TenantId) -> senders::BoxedQuery<'static, diesel::pg::Pg> {
    senders::table
        .filter(senders::tenant_id.eq(tenant.0))
        .filter(senders::status.eq("approved"))
        .filter(senders::sms_capable)
        .filter(
            senders::channel_id.eq_any(
                channels::table
                    .filter(channels::tenant_id.eq(tenant.0))
                    .filter(channels::kind.eq("sms"))
                    .filter(channels::status.eq("active"))
                    .select(channels::id),
            ),
        )
        .into_boxed()
}

/// `GET /sms/senders`: only usable identities (contract: SMS).
pub async fn usable_senders(conn: &mut Conn, tenant: TenantId) -> Result<Vec<Sender>, Error> {
    Ok(usable(tenant)
        .order((senders::kind, senders::value))
        .select((senders::id, senders::kind, senders::value, senders::label, senders::status))
        .load(conn)
        .await?)
}

/// Where a message goes: the channel the routing policy chose, and the sender identity.
#[derive(Debug, Clone)]
pub struct Route {
    pub channel: Channel,
    pub sender: Option<String>,
}

/// The routing policy. With a `sender_id`, its identity's channel (422 when it is not a usable
/// identity of the account, or names more than one); without, the account's first active SMS
/// channel by priority, sending from that channel's first usable sender id. `None`: no route.
pub async fn route(conn: &mut Conn, tenant: TenantId, sender_id: Option<&str>) -> Result<Option<Route>, Error> {
    if let Some(value) = sender_id.map(str::trim).filter(|v| !v.is_empty()) {
        // One query: the identity's channel along with it (this is on every send's path).
        let mut matches: Vec<Channel> = senders::table
            .inner_join(channels::table)
            .filter(senders::tenant_id.eq(tenant.0))
            .filter(senders::value.eq(value))
            .filter(senders::status.eq("approved"))
            .filter(senders::sms_capable)
            .filter(channels::kind.eq("sms"))
            .filter(channels::status.eq("active"))
            .select(Channel::as_select())
            .load(conn)
            .await?;
        // The same value twice on one channel (a sender id and a short code) is one route.
        matches.sort_unstable_by_key(|c| c.id);
        matches.dedup_by_key(|c| c.id);
        return match matches.len() {
            0 => Err(Error::field(
                "sender_id",
                "The sender_id is not an approved sender id, SMS-capable number or active short code of this account.",
            )),
            1 => Ok(matches.pop().map(|channel| Route { channel, sender: Some(value.to_owned()) })),
            _ => Err(Error::field("sender_id", "The sender_id names more than one sender identity of this account.")),
        };
    }
    let channel: Option<Channel> = channels::table
        .filter(channels::tenant_id.eq(tenant.0))
        .filter(channels::kind.eq("sms"))
        .filter(channels::status.eq("active"))
        .order((channels::priority, channels::id))
        .select(Channel::as_select())
        .first(conn)
        .await
        .optional()?;
    let Some(channel) = channel else { return Ok(None) };
    // A sender id reads better on a handset than a number; then numbers, then short codes.
    let sender: Option<String> = usable(tenant)
        .filter(senders::channel_id.eq(channel.id))
        .order((
            diesel::dsl::sql::<diesel::sql_types::Integer>(
                "CASE type WHEN 'sender_id' THEN 0 WHEN 'phone_number' THEN 1 ELSE 2 END",
            ),
            senders::id,
        ))
        .select(senders::value)
        .limit(1)
        // the `sql()` order would have diesel prepare it on every send
        .prepared()
        .get_result(conn)
        .await
        .optional()?;
    Ok(Some(Route { channel, sender }))
}

/// Sets the price per segment for numbers starting with `prefix` (E.164 digits; none: the
/// account's default rate).
pub async fn set_rate(conn: &mut Conn, tenant: TenantId, prefix: Option<&str>, price_minor: i64) -> Result<(), Error> {
    let prefix = prefix.map(kernel::phone::digits).unwrap_or_default();
    if price_minor < 0 {
        return Err(Error::field("price_minor", "The price must not be negative."));
    }
    diesel::insert_into(sms_rates::table)
        .values((
            sms_rates::tenant_id.eq(tenant.0),
            sms_rates::prefix.eq(&prefix),
            sms_rates::price_minor.eq(price_minor),
        ))
        .on_conflict((sms_rates::tenant_id, sms_rates::prefix))
        .do_update()
        .set((sms_rates::price_minor.eq(price_minor), sms_rates::updated_at.eq(diesel::dsl::now)))
        .execute(conn)
        .await?;
    Ok(())
}

/// A tenant's prices per segment, longest matching prefix first.
#[derive(Debug, Clone)]
pub struct RateCard {
    rates: Vec<(String, i64)>,
    fallback: i64,
}

impl RateCard {
    /// `fallback` is the service's default price, for numbers no rate of the tenant matches.
    pub async fn load(conn: &mut Conn, tenant: TenantId, fallback: i64) -> Result<Self, Error> {
        let rates: Vec<(String, i64)> = sms_rates::table
            .filter(sms_rates::tenant_id.eq(tenant.0))
            .select((sms_rates::prefix, sms_rates::price_minor))
            .load(conn)
            .await?;
        Ok(Self::from_rates(rates, fallback))
    }

    /// A card of `(prefix, price)` rows (the voice rates per minute use it too).
    pub(crate) fn from_rates(mut rates: Vec<(String, i64)>, fallback: i64) -> Self {
        rates.sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));
        Self { rates, fallback }
    }

    /// The price of one segment to `number` (E.164, with or without `+`).
    pub fn price(&self, number: &str) -> i64 {
        let digits = number.trim_start_matches('+');
        self.rates.iter().find(|(prefix, _)| digits.starts_with(prefix.as_str())).map_or(self.fallback, |(_, p)| *p)
    }
}

/// The demo account's sandbox SMS channel and sender id, and its sandbox voice channel and
/// number (`cargo xtask run`), made once.
pub async fn ensure_demo(conn: &mut Conn, keyring: &Keyring, tenant: TenantId) -> Result<(), Error> {
    demo_channel(conn, keyring, tenant, ("sms", "demo-sandbox"), ("sender_id", "DEMO")).await?;
    demo_channel(conn, keyring, tenant, ("voice", "demo-voice"), ("phone_number", "+255222110000")).await?;
    Ok(())
}

async fn demo_channel(
    conn: &mut Conn,
    keyring: &Keyring,
    tenant: TenantId,
    (kind, code): (&str, &str),
    (sender_kind, value): (&str, &str),
) -> Result<Channel, Error> {
    let existing: Option<Channel> = channels::table
        .filter(channels::tenant_id.eq(tenant.0))
        .filter(channels::code.eq(code))
        .select(Channel::as_select())
        .first(conn)
        .await
        .optional()?;
    if let Some(channel) = existing {
        return Ok(channel);
    }
    let new = NewChannel {
        kind: kind.to_owned(),
        provider: "sandbox".to_owned(),
        code: Some(code.to_owned()),
        ..NewChannel::default()
    };
    let channel = add(conn, keyring, tenant, new).await?;
    let sender = NewSender {
        channel: channel.code.clone(),
        kind: sender_kind.to_owned(),
        value: value.to_owned(),
        label: Some(format!("Demo {kind} {sender_kind}")),
        status: None,
    };
    add_sender(conn, tenant, sender).await?;
    Ok(channel)
}
