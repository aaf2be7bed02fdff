//! The bodies of `POST /voice/otp`, `POST /voice/messages` and `POST /calls`, their rules, and
//! what every one of them does with its calls: route, price, hold one minute, write, queue.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::error::FieldErrors;
use kernel::{Caller, Error, Permission, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::plan::{Connect, Feedback, MAX_MENU_DEPTH, Menu, MenuOption, Plan};
use super::{CallRecord, place::PlaceCalls};
use crate::channels::{Channel, RateCard};
use crate::schema::{calls, channels, senders, voice_rates};
use crate::{MessagingService, voice};

pub const LANGUAGES: [&str; 2] = ["en", "sw"];
/// Numbers one `POST /voice/messages` may call; more is a call campaign's job.
pub const MAX_VOICE_RECIPIENTS: usize = 1_000;
pub const MAX_TEXT_CHARS: usize = 1_000;
pub const MAX_URL_CHARS: usize = 2_048;
pub const MAX_METADATA_KEYS: usize = 50;

/// `POST /voice/otp`: a code read out in a call (Twilio Verify's voice channel).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OtpBody {
    /// The number to call, in any common form.
    #[schema(min_length = 1, max_length = 64)]
    pub recipient: String,
    /// The code to read, 4 to 8 digits. Without it a code of `length` digits is made and
    /// answered (once, in this response).
    #[serde(default)]
    #[schema(pattern = "^[0-9]{4,8}$")]
    pub code: Option<String>,
    /// The made code's length, 4 to 8 (default 6); only without `code`.
    #[serde(default)]
    #[schema(minimum = 4, maximum = 8)]
    pub length: Option<u8>,
    /// `en` (default) or `sw`.
    #[serde(default)]
    #[schema(pattern = "^(en|sw)$")]
    pub language: Option<String>,
    /// Times the code is read, 1 to 3 (default 2).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 3)]
    pub repeat: Option<u8>,
    /// One of the account's voice numbers; the first voice channel's number when absent.
    #[serde(default)]
    #[schema(max_length = 64)]
    pub sender_id: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

/// `POST /voice/messages`: text read out, or an audio file played, to each number.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VoiceMessageBody {
    /// Numbers separated by commas, semicolons or whitespace, as in `POST /sms/send`.
    #[serde(default)]
    #[schema(max_length = 4000)]
    pub recipient: Option<String>,
    /// More numbers (at most 1,000 in all).
    #[serde(default)]
    #[schema(max_items = 1000)]
    pub recipients: Option<Vec<String>>,
    /// Text to speech, 1 to 1,000 characters; or `audio_url`.
    #[serde(default)]
    #[schema(max_length = 1000)]
    pub message: Option<String>,
    /// An `https` (or `http`) address of an audio file to play instead of `message`.
    #[serde(default)]
    #[schema(max_length = 2048)]
    pub audio_url: Option<String>,
    #[serde(default)]
    #[schema(pattern = "^(en|sw)$")]
    pub language: Option<String>,
    #[serde(default)]
    #[schema(max_length = 64)]
    pub sender_id: Option<String>,
    /// ISO 8601 with an offset; a future time queues the calls until then.
    #[serde(default)]
    #[schema(max_length = 100)]
    pub schedule_time: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

/// `POST /calls`: a call that connects the callee to an agent (`connect`) or runs a menu
/// (`ivr`), with an optional post-call survey.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CallBody {
    #[schema(min_length = 1, max_length = 64)]
    pub recipient: String,
    /// Exactly one of `connect` and `ivr`.
    #[serde(default)]
    pub connect: Option<Connect>,
    #[serde(default)]
    pub ivr: Option<Menu>,
    #[serde(default)]
    pub feedback: Option<Feedback>,
    #[serde(default)]
    #[schema(pattern = "^(en|sw)$")]
    pub language: Option<String>,
    #[serde(default)]
    #[schema(max_length = 64)]
    pub sender_id: Option<String>,
    #[serde(default)]
    #[schema(max_length = 100)]
    pub schedule_time: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

/// The answer of `POST /voice/otp`: the call, and the code when it was made here.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OtpCall {
    #[serde(flatten)]
    pub call: CallRecord,
    /// The code read out; only in this answer (a stored call keeps it blanked once ended).
    pub code: String,
}

/// The answer of `POST /voice/messages`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VoiceCalls {
    pub calls: Vec<CallRecord>,
}

/// What every request shares once checked.
struct Calls {
    numbers: Vec<String>,
    plan: Plan,
    kind: &'static str,
    language: String,
    sender_id: Option<String>,
    schedule: Option<OffsetDateTime>,
    metadata: Option<Map<String, Value>>,
}

pub(super) fn language(errors: &mut FieldErrors, raw: Option<&str>) -> String {
    match raw.map(str::trim).filter(|l| !l.is_empty()) {
        None => "en".to_owned(),
        Some(l) if LANGUAGES.contains(&l) => l.to_owned(),
        Some(_) => {
            errors.add("language", "The language must be en or sw.");
            "en".to_owned()
        }
    }
}

pub(super) fn text(errors: &mut FieldErrors, field: &str, value: Option<&str>, required: bool) {
    match value {
        Some(v) if v.trim().is_empty() && required => errors.add(field, format!("The {field} must not be blank.")),
        Some(v) if v.chars().count() > MAX_TEXT_CHARS => {
            errors.add(field, format!("The {field} may not be longer than {MAX_TEXT_CHARS} characters."))
        }
        Some(v) if v.contains('\0') => errors.add(field, format!("The {field} must not contain NUL characters.")),
        _ => {}
    }
}

pub(super) fn audio_url(errors: &mut FieldErrors, field: &str, value: &str) {
    let ok = (value.starts_with("https://") || value.starts_with("http://"))
        && value.len() <= MAX_URL_CHARS
        && !value.chars().any(|c| c.is_whitespace() || c.is_control());
    if !ok {
        errors
            .add(field, format!("The {field} must be an http or https address of at most {MAX_URL_CHARS} characters."));
    }
}

pub(super) fn metadata(errors: &mut FieldErrors, metadata: &Option<Map<String, Value>>) {
    let Some(metadata) = metadata else { return };
    if metadata.len() > MAX_METADATA_KEYS {
        errors.add("metadata", format!("The metadata may hold at most {MAX_METADATA_KEYS} keys."));
    }
    if serde_json::to_string(metadata).map_or(0, |s| s.len()) > 8_192 || metadata.keys().any(|k| k.contains('\0')) {
        errors.add("metadata", "The metadata may not be larger than 8 kB as JSON, nor hold NUL characters.");
    }
}

fn one_number(errors: &mut FieldErrors, field: &str, raw: &str, calling_code: &str) -> Option<String> {
    let number = crate::recipients::normalize(raw.trim(), calling_code);
    if number.is_none() {
        errors.add(field, format!("The {field} is not a valid phone number."));
    }
    number
}

pub(super) fn schedule(errors: &mut FieldErrors, raw: Option<&str>) -> Option<OffsetDateTime> {
    crate::send::parse_schedule(raw).unwrap_or_else(|_| {
        errors.add("schedule_time", "The schedule_time must be an ISO 8601 time with an offset or Z.");
        None
    })
}

/// A code of `length` random digits.
fn made_code(length: u8) -> String {
    let random = uuid::Uuid::new_v4().as_u128();
    format!("{:0width$}", random % 10u128.pow(u32::from(length)), width = usize::from(length))
}

impl OtpBody {
    fn check(self, calling_code: &str) -> Result<(Calls, String), Error> {
        let mut errors = FieldErrors::new();
        let number = one_number(&mut errors, "recipient", &self.recipient, calling_code);
        let code = match (self.code.as_deref().map(str::trim), self.length) {
            (Some(code), _) if (4..=8).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_digit()) => {
                code.to_owned()
            }
            (Some(_), _) => {
                errors.add("code", "The code must be 4 to 8 digits.");
                String::new()
            }
            (None, Some(length)) if !(4..=8).contains(&length) => {
                errors.add("length", "The length must be between 4 and 8.");
                String::new()
            }
            (None, length) => made_code(length.unwrap_or(6)),
        };
        let repeat = self.repeat.unwrap_or(2);
        if !(1..=3).contains(&repeat) {
            errors.add("repeat", "The repeat must be between 1 and 3.");
        }
        let language = language(&mut errors, self.language.as_deref());
        metadata(&mut errors, &self.metadata);
        errors.finish()?;
        let calls = Calls {
            numbers: number.into_iter().collect(),
            plan: Plan::Otp { code: code.clone(), repeat },
            kind: "otp",
            language,
            sender_id: self.sender_id,
            schedule: None,
            metadata: self.metadata,
        };
        Ok((calls, code))
    }
}

impl VoiceMessageBody {
    fn check(self, calling_code: &str) -> Result<Calls, Error> {
        let mut errors = FieldErrors::new();
        let recipients = crate::recipients::plan(
            self.recipient.as_deref(),
            self.recipients.as_deref().unwrap_or_default(),
            calling_code,
        );
        if let Some(bad) = recipients.iter().find(|r| r.number.is_none()) {
            errors.add("recipient", format!("{} is not a valid phone number.", bad.input));
        }
        match recipients.len() {
            0 => errors.add("recipient", "At least one recipient is required."),
            n if n > MAX_VOICE_RECIPIENTS => errors.add(
                "recipients",
                format!(
                    "A voice message may call at most {MAX_VOICE_RECIPIENTS} numbers; use a call campaign for more."
                ),
            ),
            _ => {}
        }
        let message = self.message.filter(|m| !m.trim().is_empty());
        let audio = self.audio_url.map(|u| u.trim().to_owned()).filter(|u| !u.is_empty());
        text(&mut errors, "message", message.as_deref(), true);
        match (&message, &audio) {
            (None, None) => errors.add("message", "A message or an audio_url is required."),
            (Some(_), Some(_)) => errors.add("audio_url", "Give a message or an audio_url, not both."),
            (None, Some(url)) => audio_url(&mut errors, "audio_url", url),
            (Some(_), None) => {}
        }
        let language = language(&mut errors, self.language.as_deref());
        let schedule = schedule(&mut errors, self.schedule_time.as_deref());
        metadata(&mut errors, &self.metadata);
        errors.finish()?;
        Ok(Calls {
            numbers: recipients.into_iter().filter_map(|r| r.number).collect(),
            plan: Plan::Message { text: message, audio_url: audio },
            kind: "message",
            language,
            sender_id: self.sender_id,
            schedule,
            metadata: self.metadata,
        })
    }
}

impl CallBody {
    fn check(self, calling_code: &str) -> Result<Calls, Error> {
        let mut errors = FieldErrors::new();
        let number = one_number(&mut errors, "recipient", &self.recipient, calling_code);
        let connect = self.connect.map(|connect| check_connect(&mut errors, "connect", connect, calling_code));
        let ivr = self.ivr.map(|menu| check_ivr(&mut errors, menu, calling_code));
        if connect.is_some() == ivr.is_some() {
            errors.add("connect", "Give exactly one of connect and ivr.");
        }
        if let Some(feedback) = &self.feedback {
            text(&mut errors, "feedback.prompt", feedback.prompt.as_deref(), false);
        }
        let language = language(&mut errors, self.language.as_deref());
        let schedule = schedule(&mut errors, self.schedule_time.as_deref());
        metadata(&mut errors, &self.metadata);
        errors.finish()?;
        Ok(Calls {
            numbers: number.into_iter().collect(),
            plan: Plan::Call { connect, ivr, feedback: self.feedback },
            kind: "call",
            language,
            sender_id: self.sender_id,
            schedule,
            metadata: self.metadata,
        })
    }
}

/// An agent's numbers, normalized.
fn check_connect(errors: &mut FieldErrors, field: &str, mut connect: Connect, calling_code: &str) -> Connect {
    if !(1..=5).contains(&connect.numbers.len()) {
        errors.add(format!("{field}.numbers"), "Give 1 to 5 numbers to connect to.");
    }
    for (i, raw) in connect.numbers.iter_mut().enumerate() {
        if let Some(number) = one_number(errors, &format!("{field}.numbers.{i}"), raw, calling_code) {
            *raw = number;
        }
    }
    text(errors, &format!("{field}.greeting"), connect.greeting.as_deref(), false);
    connect
}

/// A call's or a campaign's `ivr`, its numbers normalized.
pub(crate) fn check_ivr(errors: &mut FieldErrors, menu: Menu, calling_code: &str) -> Menu {
    check_menu(errors, "ivr", menu, 1, calling_code)
}

fn check_menu(errors: &mut FieldErrors, field: &str, mut menu: Menu, depth: usize, calling_code: &str) -> Menu {
    text(errors, &format!("{field}.prompt"), Some(&menu.prompt), true);
    if menu.options.is_empty() {
        errors.add(format!("{field}.options"), "A menu needs at least one option.");
    }
    if menu.timeout_seconds.is_some_and(|t| !(3..=60).contains(&t)) {
        errors.add(format!("{field}.timeout_seconds"), "The timeout must be between 3 and 60 seconds.");
    }
    if menu.attempts.is_some_and(|a| !(1..=3).contains(&a)) {
        errors.add(format!("{field}.attempts"), "The attempts must be between 1 and 3.");
    }
    let options = std::mem::take(&mut menu.options);
    for (key, option) in options {
        let at = format!("{field}.options.{key}");
        if !matches!(key.as_bytes(), [b'0'..=b'9' | b'*' | b'#']) {
            errors.add(at.clone(), "A menu key is one of 0-9, * and #.");
        }
        let option = check_option(errors, &at, option, depth, calling_code);
        menu.options.insert(key, option);
    }
    menu
}

fn check_option(
    errors: &mut FieldErrors,
    at: &str,
    mut option: MenuOption,
    depth: usize,
    calling_code: &str,
) -> MenuOption {
    let given = [
        option.say.is_some(),
        option.play.is_some(),
        option.voicemail.is_some(),
        option.transfer.is_some(),
        option.menu.is_some(),
    ];
    if given.iter().filter(|g| **g).count() != 1 {
        errors.add(at, "An option does exactly one of say, play, voicemail, transfer and menu.");
    }
    text(errors, &format!("{at}.say"), option.say.as_deref(), true);
    if let Some(url) = &option.play {
        audio_url(errors, &format!("{at}.play"), url);
    }
    if let Some(voicemail) = &option.voicemail {
        text(errors, &format!("{at}.voicemail.prompt"), voicemail.prompt.as_deref(), false);
        if voicemail.max_seconds.is_some_and(|s| !(5..=300).contains(&s)) {
            errors.add(format!("{at}.voicemail.max_seconds"), "A voicemail lasts 5 to 300 seconds.");
        }
    }
    if let Some(transfer) = option.transfer.take() {
        option.transfer = Some(check_connect(errors, &format!("{at}.transfer"), transfer, calling_code));
    }
    if let Some(menu) = option.menu.take() {
        if depth >= MAX_MENU_DEPTH {
            errors.add(format!("{at}.menu"), format!("Menus nest at most {MAX_MENU_DEPTH} deep."));
        }
        option.menu = Some(Box::new(check_menu(errors, &format!("{at}.menu"), *menu, depth + 1, calling_code)));
    }
    option
}

/// The voice channel and caller number of a request: `sender_id` names one of the account's
/// voice numbers; without it, the first active voice channel and its first number.
pub(crate) async fn route(
    conn: &mut store::Conn,
    tenant: TenantId,
    sender_id: Option<&str>,
) -> Result<(Channel, Option<String>), Error> {
    let voice = channels::table
        .filter(channels::tenant_id.eq(tenant.0))
        .filter(channels::kind.eq("voice"))
        .filter(channels::status.eq("active"));
    let numbers = senders::table
        .filter(senders::tenant_id.eq(tenant.0))
        .filter(senders::kind.eq("phone_number"))
        .filter(senders::status.eq("approved"));
    if let Some(value) = sender_id.map(str::trim).filter(|v| !v.is_empty()) {
        let found: Option<Channel> = numbers
            .inner_join(channels::table)
            .filter(senders::value.eq(value))
            .filter(channels::kind.eq("voice"))
            .filter(channels::status.eq("active"))
            .order(channels::priority)
            .select(Channel::as_select())
            .first(conn)
            .await
            .optional()?;
        return match found {
            Some(channel) => Ok((channel, Some(value.to_owned()))),
            None => Err(Error::field("sender_id", "The sender_id is not an approved voice number of this account.")),
        };
    }
    let channel: Option<Channel> =
        voice.order((channels::priority, channels::id)).select(Channel::as_select()).first(conn).await.optional()?;
    let Some(channel) = channel else {
        return Err(Error::validation("The account has no active voice channel to call from."));
    };
    let number: Option<String> = numbers
        .filter(senders::channel_id.eq(channel.id))
        .order(senders::id)
        .select(senders::value)
        .first(conn)
        .await
        .optional()?;
    Ok((channel, number))
}

/// The tenant's voice rates per started minute, longest prefix first.
async fn rates(conn: &mut store::Conn, tenant: TenantId, fallback: i64) -> Result<RateCard, Error> {
    let rates: Vec<(String, i64)> = voice_rates::table
        .filter(voice_rates::tenant_id.eq(tenant.0))
        .select((voice_rates::prefix, voice_rates::price_minor))
        .load(conn)
        .await?;
    Ok(RateCard::from_rates(rates, fallback))
}

/// Sets the price per started minute for numbers starting with `prefix` (none: the account's
/// default) (`gateway admin voice-rate`).
pub async fn set_rate(
    conn: &mut store::Conn,
    tenant: TenantId,
    prefix: Option<&str>,
    price_minor: i64,
) -> Result<(), Error> {
    if price_minor < 0 {
        return Err(Error::field("price_minor", "The price must not be negative."));
    }
    let prefix = prefix.map(kernel::phone::digits).unwrap_or_default();
    diesel::insert_into(voice_rates::table)
        .values((
            voice_rates::tenant_id.eq(tenant.0),
            voice_rates::prefix.eq(&prefix),
            voice_rates::price_minor.eq(price_minor),
        ))
        .on_conflict((voice_rates::tenant_id, voice_rates::prefix))
        .do_update()
        .set((voice_rates::price_minor.eq(price_minor), voice_rates::updated_at.eq(diesel::dsl::now)))
        .execute(conn)
        .await?;
    Ok(())
}

impl MessagingService {
    /// `POST /voice/otp`.
    pub async fn voice_otp(&self, caller: &Caller, body: OtpBody) -> Result<OtpCall, Error> {
        let (calls, code) = body.check(&caller.calling_code)?;
        let call = self.create_calls(caller, calls).await?.pop().ok_or_else(|| Error::internal("no call written"))?;
        Ok(OtpCall { call, code })
    }

    /// `POST /voice/messages`.
    pub async fn voice_messages(&self, caller: &Caller, body: VoiceMessageBody) -> Result<VoiceCalls, Error> {
        let calls = body.check(&caller.calling_code)?;
        Ok(VoiceCalls { calls: self.create_calls(caller, calls).await? })
    }

    /// `POST /calls`.
    pub async fn place_call(&self, caller: &Caller, body: CallBody) -> Result<CallRecord, Error> {
        let calls = body.check(&caller.calling_code)?;
        self.create_calls(caller, calls).await?.pop().ok_or_else(|| Error::internal("no call written"))
    }

    /// Routes, prices and writes the calls with their placing job, holding one minute of each
    /// from the wallet (402 and nothing written when a prepaid one cannot hold them all).
    async fn create_calls(&self, caller: &Caller, calls: Calls) -> Result<Vec<CallRecord>, Error> {
        caller.require_issuer()?;
        caller.require(Permission::SEND)?;
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        let due = calls.schedule.filter(|at| *at > now);
        let config = self.config.clone();
        let mut conn = self.conn(tenant).await?;
        conn.transaction(async move |conn| {
            let route = route(conn, tenant, calls.sender_id.as_deref()).await?;
            let new = NewCalls {
                plan: &calls.plan,
                kind: calls.kind,
                language: &calls.language,
                metadata: calls.metadata.map(Value::Object),
                due,
                campaign: None,
            };
            match write_calls(conn, tenant, &route, &new, &calls.numbers, (now, &config)).await? {
                Ok(written) => Ok(written),
                Err(short) => Err(crate::send::insufficient(conn, tenant, short).await),
            }
        })
        .await
    }
}

/// What the calls of one request (or one campaign batch) share.
pub(crate) struct NewCalls<'a> {
    pub plan: &'a Plan,
    pub kind: &'a str,
    pub language: &'a str,
    pub metadata: Option<Value>,
    /// When a scheduled request's calls are placed.
    pub due: Option<OffsetDateTime>,
    pub campaign: Option<i64>,
}

/// Writes one call per number on `route`, priced from the voice rates, with their placing jobs,
/// and holds one minute of each from the wallet: the wallet's shortfall (nothing to keep) when a
/// prepaid one cannot hold them all. Runs inside the caller's transaction.
pub(crate) async fn write_calls(
    conn: &mut store::Conn,
    tenant: TenantId,
    (channel, number): &(Channel, Option<String>),
    new: &NewCalls<'_>,
    numbers: &[String],
    (now, config): (OffsetDateTime, &crate::MessagingConfig),
) -> Result<Result<Vec<CallRecord>, accounts::wallet::Shortfall>, Error> {
    let card = rates(conn, tenant, config.voice_price_minor).await?;
    let plan = serde_json::to_value(new.plan).map_err(Error::internal)?;
    let rows: Vec<_> = numbers
        .iter()
        .map(|recipient| {
            (
                calls::uid.eq(voice::CallUid::generate()),
                calls::tenant_id.eq(tenant.0),
                calls::kind.eq(new.kind),
                calls::channel_id.eq(channel.id),
                calls::caller.eq(number.clone()),
                calls::recipient.eq(recipient.clone()),
                calls::status.eq("queued"),
                calls::plan.eq(plan.clone()),
                calls::language.eq(new.language),
                calls::rate_minor.eq(card.price(recipient)),
                calls::price_minor.eq(card.price(recipient)),
                calls::metadata.eq(new.metadata.clone()),
                calls::scheduled_at.eq(new.due),
                calls::created_at.eq(now),
                calls::updated_at.eq(now),
                calls::call_campaign_id.eq(new.campaign),
            )
        })
        .collect();
    let written: Vec<CallRecord> =
        diesel::insert_into(calls::table).values(&rows).returning(CallRecord::as_returning()).get_results(conn).await?;
    let ids: Vec<i64> = written.iter().map(|c| c.id).collect();
    for ids in ids.chunks(config.send_chunk.max(1)) {
        let job = PlaceCalls { tenant_id: tenant, ids: ids.to_vec() };
        let options = store::jobs::Enqueue { tenant_id: Some(tenant), run_at: new.due, ..Default::default() };
        store::jobs::enqueue(conn, &job, options).await?;
    }
    let held: i64 = written.iter().map(|c| c.price_minor).sum();
    Ok(accounts::wallet::debit(conn, tenant, held, "voice: first minute held").await?.map(|_| written))
}
