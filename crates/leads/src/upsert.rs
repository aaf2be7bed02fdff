//! `POST /leads` (contract: Leads, upsert rules): one lead per person. The person is found by a
//! phone in any common form or an email in any case; what is sent fills or changes fields, and
//! an empty value never blanks one.

use std::collections::BTreeMap;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::error::FieldErrors;
use kernel::{Caller, Error, Patch, Permission, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use store::idempotency::{self, Answer, Key, Request};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::LeadId;
use crate::identity::normalize_email;
use crate::lead::{self, Lead, Row};
use crate::schema::{lead_fields, lead_identities, leads};
use crate::service::{Actor, LeadService};
use crate::stage::{LeadStage, Transition, Via};
use crate::timeline::{self, Activity, LeadEvent};

const LONG: usize = 2_000;
const NOTE: usize = 10_000;
/// A label made by an upsert gets this colour until someone picks one.
pub const DEFAULT_LABEL_COLOR: &str = "#6B7280";

/// The upsert body. Values are trimmed; an empty string or null is not applied (it is listed in
/// `ignored`, as are members the record does not have).
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct UpsertLead {
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub name: Patch<String>,
    /// Any common form: `+255 712 345 678`, `0712345678`, `255712345678`.
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(schema_with = crate::doc::phone_upsert)]
    pub phone: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(schema_with = crate::doc::email_upsert)]
    pub email: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub company: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub title: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub location: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<String>, max_length = 2000)]
    pub interest: Patch<String>,
    /// In main currency units.
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<f64>, minimum = 0, exclusive_maximum = 1e15)]
    pub estimated_value: Patch<f64>,
    /// ISO 4217; defaults to the workspace currency.
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(schema_with = crate::doc::currency_upsert)]
    pub currency: Patch<String>,
    /// Matched by name, any case.
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(schema_with = crate::doc::labels_upsert)]
    pub labels: Patch<Vec<String>>,
    /// Added to the timeline.
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<String>, max_length = 10000)]
    pub note: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(schema_with = crate::doc::stage_upsert)]
    pub stage: Patch<String>,
    /// Required with `lost` and `unqualified`.
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<String>, max_length = 2000)]
    pub reason: Patch<String>,
    /// 0 to 100.
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 100)]
    pub score: Patch<i64>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<String>, max_length = 2000)]
    pub score_reason: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<String>, max_length = 2000)]
    pub summary: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub source_channel: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub source_detail: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub next_action: Patch<String>,
    /// RFC 3339.
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(schema_with = crate::doc::date_time_upsert)]
    pub next_action_at: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(inline)]
    pub conversation_id: Patch<i64>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(inline)]
    pub call_id: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent", serialize_with = "sent")]
    #[schema(value_type = Option<Object>)]
    pub custom_fields: Patch<Map<String, Value>>,
    /// Members the record does not have: listed in `ignored`.
    #[serde(flatten)]
    #[schema(ignore)]
    pub unknown: BTreeMap<String, Value>,
}

/// A member as it was sent (the idempotency fingerprint compares bodies, not what they mean).
fn sent<T: Serialize, S: serde::Serializer>(value: &Patch<T>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Patch::Set(value) => value.serialize(serializer),
        _ => serializer.serialize_none(),
    }
}

impl UpsertLead {
    /// The free-text members with their longest value, taken out.
    fn take_texts(&mut self) -> [(&'static str, usize, Patch<String>); 10] {
        lead::take_texts([
            &mut self.name,
            &mut self.title,
            &mut self.company,
            &mut self.location,
            &mut self.interest,
            &mut self.summary,
            &mut self.score_reason,
            &mut self.source_channel,
            &mut self.source_detail,
            &mut self.next_action,
        ])
    }
}

/// The answer (contract: `data:{lead, created, was_closed, ignored[], refused[], possible_duplicate_of}`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Upserted {
    pub lead: Lead,
    pub created: bool,
    /// The matched lead was closed (won, lost or unqualified) before this upsert.
    pub was_closed: bool,
    /// Fields sent but not applied: unknown keys, empty values, undefined custom fields.
    pub ignored: Vec<String>,
    /// Labels not created for want of `leads.settings`.
    pub refused: Vec<String>,
    /// Another lead one of the identities sent belongs to.
    #[schema(value_type = Option<uuid::Uuid>)]
    pub possible_duplicate_of: Option<LeadId>,
}

/// contract: an upsert matching a lead outside the issuer's visibility answers 409.
fn hidden() -> Error {
    Error::conflict("A lead for this person exists but is not visible to this key's issuer.")
}

/// What the body asks for, checked.
#[derive(Debug, Clone, Default)]
struct Wanted {
    text: BTreeMap<&'static str, String>,
    phone: Option<String>,
    email: Option<String>,
    estimated_value_cents: Option<i64>,
    currency: Option<String>,
    score: Option<i32>,
    next_action_at: Option<OffsetDateTime>,
    stage: Option<LeadStage>,
    reason: Option<String>,
    labels: Vec<String>,
    note: Option<String>,
    custom_fields: Map<String, Value>,
    ignored: Vec<String>,
}

/// A member's value: text trimmed; null and an empty string are not applied, only listed in
/// `ignored`.
fn given<T>(field: &str, value: Patch<T>, ignored: &mut Vec<String>) -> Option<T> {
    match value {
        Patch::Absent => None,
        Patch::Null => {
            ignored.push(field.to_owned());
            None
        }
        Patch::Set(value) => Some(value),
    }
}

fn given_text(field: &str, value: Patch<String>, ignored: &mut Vec<String>) -> Option<String> {
    given_sized(field, value, ignored).map(|(text, _)| text)
}

/// [`given_text`] with the length of the text as sent: limits count it, spaces included, as
/// the description's `maxLength` does.
fn given_sized(field: &str, value: Patch<String>, ignored: &mut Vec<String>) -> Option<(String, usize)> {
    let sent = given(field, value, ignored)?;
    let text = sent.trim();
    if text.is_empty() {
        ignored.push(field.to_owned());
        return None;
    }
    Some((text.to_owned(), sent.chars().count()))
}

/// The body's rules, every bad member named at once.
async fn read(
    conn: &mut store::Conn,
    tenant: TenantId,
    default_code: &str,
    mut body: UpsertLead,
) -> Result<Wanted, Error> {
    let mut wanted = Wanted::default();
    let mut errors = FieldErrors::new();
    let ignored = &mut wanted.ignored;
    for (field, max, value) in body.take_texts() {
        match given_sized(field, value, ignored) {
            Some((_, sent)) if sent > max => {
                errors.add(field, format!("The {field} may not be longer than {max} characters."))
            }
            Some((v, _)) => {
                wanted.text.insert(field, v);
            }
            None => {}
        }
    }
    if let Some(raw) = given_text("phone", body.phone, ignored) {
        match kernel::phone::normalize(&raw, default_code) {
            Some(e164) => wanted.phone = Some(e164),
            None => errors.add("phone", "The phone is not a valid number."),
        }
    }
    if let Some(raw) = given_text("email", body.email, ignored) {
        match normalize_email(&raw) {
            Some(email) => wanted.email = Some(email),
            None => errors.add("email", "The email is not a valid address."),
        }
    }
    if let Some(v) = given("estimated_value", body.estimated_value, ignored) {
        if v.is_finite() && (0.0..1e15).contains(&v) {
            wanted.estimated_value_cents = Some((v * 100.0).round() as i64);
        } else {
            errors.add("estimated_value", "The estimated_value must be a number of at least 0.");
        }
    }
    if let Some(c) = given_text("currency", body.currency, ignored) {
        if c.len() == 3 && c.chars().all(|ch| ch.is_ascii_alphabetic()) {
            wanted.currency = Some(c.to_ascii_uppercase());
        } else {
            errors.add("currency", "The currency must be a three-letter ISO 4217 code.");
        }
    }
    if let Some(score) = given("score", body.score, ignored) {
        match i32::try_from(score).ok().filter(|s| (0..=100).contains(s)) {
            Some(s) => wanted.score = Some(s),
            None => errors.add("score", "The score must be a whole number from 0 to 100."),
        }
    }
    if let Some(raw) = given_text("next_action_at", body.next_action_at, ignored) {
        match OffsetDateTime::parse(&raw, &Rfc3339) {
            Ok(at) => wanted.next_action_at = Some(at),
            Err(_) => errors.add("next_action_at", "The next_action_at must be an RFC 3339 date and time."),
        }
    }
    if let Some(raw) = given_text("stage", body.stage, ignored) {
        match LeadStage::parse(&raw) {
            Some(stage) => wanted.stage = Some(stage),
            None => errors.add("stage", LeadStage::INVALID),
        }
    }
    // a reason left out or empty is simply no reason; its limit counts it as sent
    let reason = body.reason.set();
    let too_long = reason.as_ref().is_some_and(|r| r.chars().count() > LONG);
    match reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty()) {
        Some(_) if too_long => errors.add("reason", format!("The reason may not be longer than {LONG} characters.")),
        reason => wanted.reason = reason,
    }
    if let Some((note, sent)) = given_sized("note", body.note, ignored) {
        if sent <= NOTE {
            wanted.note = Some(note);
        } else {
            errors.add("note", format!("The note may not be longer than {NOTE} characters."));
        }
    }
    for sent in given("labels", body.labels, ignored).unwrap_or_default() {
        let name = sent.trim();
        if name.is_empty() {
            continue;
        }
        if sent.chars().count() > crate::labels::NAME_MAX {
            errors.add("labels", "Labels are names of up to 60 characters.");
        } else if !wanted.labels.iter().any(|l| l.eq_ignore_ascii_case(name)) {
            wanted.labels.push(name.to_owned());
        }
    }
    let custom = given("custom_fields", body.custom_fields, ignored).unwrap_or_default();
    // a chat conversation names its customer: their number identifies the lead, on chat
    if let Some(id) = given("conversation_id", body.conversation_id, ignored) {
        match messaging::chat::conversations::customer(conn, tenant, id).await? {
            None => errors.add("conversation_id", "The conversation_id does not belong to this workspace."),
            Some(customer) if wanted.phone.as_ref().is_some_and(|p| *p != customer.phone) => {
                errors.add("conversation_id", "The conversation is with another number than the phone sent.")
            }
            Some(customer) => {
                wanted.phone = Some(customer.phone);
                wanted.text.entry("source_channel").or_insert_with(|| "chat".to_owned());
                if let Some(name) = customer.name {
                    wanted.text.entry("name").or_insert(name);
                }
            }
        }
    }
    // calls arrive with a later domain: no id belongs to the workspace yet
    if given("call_id", body.call_id, ignored).is_some() {
        errors.add("call_id", "The call_id does not belong to this workspace.");
    }
    ignored.extend(body.unknown.into_keys());
    wanted.custom_fields = check_custom_fields(conn, tenant, custom, &mut wanted.ignored, &mut errors).await?;
    if !errors.is_empty() {
        return Err(Error::fields(errors.into_map()).with_reason("invalid"));
    }
    Ok(wanted)
}

/// Values of defined custom fields, checked against their type; undefined keys and empty values
/// are ignored.
pub(crate) async fn check_custom_fields(
    conn: &mut store::Conn,
    tenant: TenantId,
    fields: Map<String, Value>,
    ignored: &mut Vec<String>,
    errors: &mut FieldErrors,
) -> Result<Map<String, Value>, Error> {
    if fields.is_empty() {
        return Ok(fields);
    }
    let defined: BTreeMap<String, (String, Vec<String>)> = lead_fields::table
        .filter(lead_fields::tenant_id.eq(tenant.0))
        .select((lead_fields::key, lead_fields::kind, lead_fields::options))
        .load::<(String, String, Vec<String>)>(conn)
        .await?
        .into_iter()
        .map(|(key, kind, options)| (key, (kind, options)))
        .collect();
    let mut kept = Map::new();
    for (key, value) in fields {
        let field = format!("custom_fields.{key}");
        let Some((kind, options)) = defined.get(&key) else {
            ignored.push(field);
            continue;
        };
        if value.is_null() || value.as_str().is_some_and(|s| s.trim().is_empty()) {
            ignored.push(field);
            continue;
        }
        let fits = match kind.as_str() {
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "date" => value.as_str().is_some_and(|s| {
                time::Date::parse(s, &time::macros::format_description!("[year]-[month]-[day]")).is_ok()
            }),
            "select" => value.as_str().is_some_and(|s| options.iter().any(|o| o == s)),
            _ => value.as_str().is_some_and(|s| s.chars().count() <= LONG),
        };
        if fits {
            kept.insert(key, value);
        } else {
            errors.add(field, format!("The value does not fit the {kind} field {key}."));
        }
    }
    Ok(kept)
}

/// The lead each identity names (phone first), where one does.
async fn matches(
    conn: &mut store::Conn,
    tenant: TenantId,
    identities: &[(&'static str, String)],
) -> Result<Vec<(&'static str, LeadId)>, Error> {
    let mut found = Vec::new();
    for (kind, value) in identities {
        let lead: Option<LeadId> = lead_identities::table
            .find((tenant.0, *kind, value))
            .select(lead_identities::lead_id)
            .first(conn)
            .await
            .optional()?;
        if let Some(lead) = lead {
            found.push((*kind, lead));
        }
    }
    Ok(found)
}

/// A change of one field, as `changes` shows it.
fn change(changes: &mut Map<String, Value>, field: &str, from: Value, to: Value) {
    if from != to {
        changes.insert(field.to_owned(), json!({ "from": from, "to": to }));
    }
}

impl LeadService {
    /// The upsert. With an `Idempotency-Key` a repeat by the same issuer answers the first
    /// answer, once the caller may upsert now and still sees the lead.
    pub async fn upsert(&self, caller: &Caller, body: UpsertLead, key: Option<Key>) -> Result<Answer<Upserted>, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_EDIT).await?;
        let request = key.map(|key| Request::new(caller, "leads.upsert", key, &body)).transpose()?;
        let answer = idempotency::once(&mut conn, self.clock.now(), request, async |conn| {
            self.upsert_on(conn, caller, &actor, body).await
        })
        .await?;
        if let Answer::Replay(first) = &answer {
            // contract: an upsert matching a lead the issuer may not see answers 409
            let lead = first["lead"]["id"].as_str().and_then(|id| Uuid::parse_str(id).ok()).map(LeadId);
            let row = match lead {
                Some(id) => lead::row(&mut conn, caller.tenant_id, id).await.ok(),
                None => None,
            };
            if !row.is_some_and(|row| actor.sees(row.assigned_to, &row.created_by_kind, row.created_by_id)) {
                return Err(hidden());
            }
        }
        Ok(answer)
    }

    async fn upsert_on(
        &self,
        conn: &mut store::Conn,
        caller: &Caller,
        actor: &Actor,
        body: UpsertLead,
    ) -> Result<Upserted, Error> {
        let wanted = read(conn, caller.tenant_id, &caller.calling_code, body).await?;
        let mut identities = Vec::new();
        if let Some(phone) = &wanted.phone {
            identities.push(("phone", phone.trim_start_matches('+').to_owned()));
        }
        if let Some(email) = &wanted.email {
            identities.push(("email", email.clone()));
        }
        if identities.is_empty() {
            return Err(Error::validation(
                "Send a phone, an email, a conversation_id or a call_id to find or create the lead by.",
            )
            .with_reason("nothing_to_identify"));
        }
        // Two first upserts of one person race to write its identity: the loser rolls back and
        // finds the winner's lead on its second try.
        let raced = std::sync::atomic::AtomicBool::new(false);
        for _ in 0..2 {
            raced.store(false, std::sync::atomic::Ordering::Relaxed);
            let result = conn
                .transaction::<_, Error, _>(async |conn| {
                    self.upsert_in(conn, actor, caller.tenant_id, &identities, &wanted, &raced).await
                })
                .await;
            if !std::sync::atomic::AtomicBool::load(&raced, std::sync::atomic::Ordering::Relaxed) {
                return result;
            }
        }
        Err(Error::conflict("This person's lead is being written by another request; retry."))
    }

    async fn upsert_in(
        &self,
        conn: &mut store::Conn,
        actor: &Actor,
        tenant: TenantId,
        identities: &[(&'static str, String)],
        wanted: &Wanted,
        raced: &std::sync::atomic::AtomicBool,
    ) -> Result<Upserted, Error> {
        let now = self.clock.now();
        let found = matches(conn, tenant, identities).await?;
        let first = found.iter().map(|(_, lead)| *lead).next();
        let possible_duplicate_of = found.iter().map(|(_, lead)| *lead).find(|lead| Some(*lead) != first);
        // an identity of another lead stays there: the matched lead does not take it as its own
        let mut wanted_here;
        let mut wanted = wanted;
        if let Some(other) = possible_duplicate_of {
            wanted_here = wanted.clone();
            for (kind, lead) in &found {
                if *lead == other {
                    match *kind {
                        "phone" => wanted_here.phone = None,
                        _ => wanted_here.email = None,
                    }
                    wanted_here.ignored.push((*kind).to_owned());
                }
            }
            wanted = &wanted_here;
        }
        let matched = match first.as_ref() {
            Some(id) => {
                let row: Row =
                    leads::table.filter(leads::id.eq(id)).select(Row::as_select()).for_update().first(conn).await?;
                if !actor.sees(row.assigned_to, &row.created_by_kind, row.created_by_id) {
                    return Err(hidden());
                }
                Some(row)
            }
            None => None,
        };
        let created = matched.is_none();
        let was_closed = matched.as_ref().is_some_and(|r| r.stage.closes());
        let mut ignored = wanted.ignored.clone();
        let mut changes = Map::new();
        let mut activities: Vec<Activity> = Vec::new();
        let mut stage_change: Option<(LeadStage, LeadStage)> = None;

        // the lead as written (RETURNING), for the answer and the events
        let row = match matched {
            Some(row) => {
                // the stage: kept unless sent; a won lead moves only through the stage operation
                if let Some(stage) = wanted.stage
                    && let Transition::Move { from, to } =
                        row.stage.transition(stage, Via::Edit, wanted.reason.as_deref())?
                {
                    stage_change = Some((from, to));
                }
                self.apply(conn, &row, wanted, &mut changes, stage_change, now).await?
            }
            None => {
                let stage = LeadStage::start(wanted.stage, wanted.reason.as_deref())?;
                self.insert(conn, actor, tenant, wanted, stage, now).await?
            }
        };
        let id = row.id;
        // identities this lead did not have yet (one that belongs to another lead stays there)
        let known = |kind: &str| found.iter().any(|(k, lead)| *k == kind && *lead == id);
        for (kind, value) in identities.iter().filter(|(kind, _)| !known(kind)) {
            let written = diesel::insert_into(lead_identities::table)
                .values((
                    lead_identities::tenant_id.eq(tenant.0),
                    lead_identities::kind.eq(*kind),
                    lead_identities::value.eq(value),
                    lead_identities::lead_id.eq(id),
                    lead_identities::created_at.eq(now),
                ))
                .on_conflict_do_nothing()
                .execute(conn)
                .await?;
            if created && written == 0 {
                raced.store(true, std::sync::atomic::Ordering::Relaxed);
                return Err(Error::conflict("another request created this person's lead"));
            }
        }
        let (added, refused) =
            crate::labels::link(conn, tenant, id, &wanted.labels, actor.may_create_labels, now).await?;

        let lead =
            lead::views(conn, vec![row], &self.public_url, now).await?.pop().ok_or_else(|| Error::not_found("Lead"))?;
        let none = Map::new;
        if created {
            activities.push(Activity { kind: "created", details: json!({}), reason: None });
            let event = LeadEvent { name: "lead.created", lead: &lead, changes: None, reason: None, extra: none() };
            timeline::emit(conn, tenant, actor, event, now).await?;
        }
        if !changes.is_empty() {
            activities.push(Activity { kind: "updated", details: Value::Object(changes.clone()), reason: None });
            crate::fold::park(conn, tenant, id, actor, &changes, now).await?;
        }
        if let Some((from, to)) = stage_change {
            let moved = crate::stage::moved_changes(from, to);
            let reason = wanted.reason.as_deref();
            activities.push(Activity { kind: "stage_changed", details: Value::Object(moved.clone()), reason });
            let event =
                LeadEvent { name: "lead.stage_changed", lead: &lead, changes: Some(&moved), reason, extra: none() };
            timeline::emit(conn, tenant, actor, event, now).await?;
        }
        for label in &added {
            let label = serde_json::to_value(label).map_err(Error::internal)?;
            activities.push(Activity { kind: "label_added", details: json!({ "label": label }), reason: None });
            let extra = Map::from_iter([("label".to_owned(), label)]);
            let event = LeadEvent { name: "lead.label_added", lead: &lead, changes: None, reason: None, extra };
            timeline::emit(conn, tenant, actor, event, now).await?;
        }
        if let Some(body) = &wanted.note {
            let note = json!({ "id": Uuid::new_v4(), "body": body, "created_at": now.format(&Rfc3339).map_err(Error::internal)? });
            activities.push(Activity { kind: "note_added", details: json!({ "note": note }), reason: None });
            let extra = Map::from_iter([("note".to_owned(), note)]);
            let event = LeadEvent { name: "lead.note_added", lead: &lead, changes: None, reason: None, extra };
            timeline::emit(conn, tenant, actor, event, now).await?;
        }
        timeline::record(conn, tenant, id, actor, &activities, now).await?;
        ignored.sort();
        ignored.dedup();
        Ok(Upserted { lead, created, was_closed, ignored, refused, possible_duplicate_of })
    }

    async fn insert(
        &self,
        conn: &mut store::Conn,
        actor: &Actor,
        tenant: TenantId,
        wanted: &Wanted,
        stage: LeadStage,
        now: OffsetDateTime,
    ) -> Result<Row, Error> {
        // the workspace's currency is read only when a lead is made (a matched upsert needs none)
        let workspace = accounts::tenants::get(conn, tenant).await?;
        let workspace_currency = workspace.currency.as_str();
        let id = LeadId(Uuid::new_v4());
        let t = |field: &str| wanted.text.get(field).cloned();
        let (closed_at, reason) = stage.settle(None, wanted.reason.clone(), now);
        Ok(diesel::insert_into(leads::table)
            .values((
                leads::id.eq(id),
                leads::tenant_id.eq(tenant.0),
                leads::name.eq(t("name")),
                leads::title.eq(t("title")),
                leads::company.eq(t("company")),
                leads::phone.eq(&wanted.phone),
                leads::email.eq(&wanted.email),
                leads::location.eq(t("location")),
                leads::stage.eq(stage),
                leads::closed_at.eq(closed_at),
                leads::lost_reason.eq(reason),
                leads::interest.eq(t("interest")),
                leads::estimated_value_cents.eq(wanted.estimated_value_cents),
                leads::currency.eq(wanted.currency.as_deref().unwrap_or(workspace_currency)),
                leads::score.eq(wanted.score),
                leads::score_reason.eq(t("score_reason")),
                leads::summary.eq(t("summary")),
                leads::source_channel.eq(t("source_channel")),
                leads::source_detail.eq(t("source_detail")),
                leads::next_action.eq(t("next_action")),
                leads::next_action_at.eq(wanted.next_action_at),
                leads::created_by_kind.eq("api"),
                leads::created_by_id.eq(actor.user.map(|u| u.0)),
                leads::last_activity_at.eq(now),
                leads::sources.eq(json!([{ "kind": "api", "id": null, "channel": t("source_channel"), "at": now.format(&Rfc3339).map_err(Error::internal)? }])),
                leads::custom_fields.eq(Value::Object(wanted.custom_fields.clone())),
                leads::created_at.eq(now),
                leads::updated_at.eq(now),
            ))
            .returning(Row::as_returning())
            .get_result(conn)
            .await?)
    }

    /// Fills and changes the fields sent (never blanking one), and moves the stage; answers the
    /// lead as written.
    async fn apply(
        &self,
        conn: &mut store::Conn,
        row: &Row,
        wanted: &Wanted,
        changes: &mut Map<String, Value>,
        stage_change: Option<(LeadStage, LeadStage)>,
        now: OffsetDateTime,
    ) -> Result<Row, Error> {
        let current: BTreeMap<&str, &Option<String>> = BTreeMap::from([
            ("name", &row.name),
            ("title", &row.title),
            ("company", &row.company),
            ("location", &row.location),
            ("interest", &row.interest),
            ("summary", &row.summary),
            ("score_reason", &row.score_reason),
            ("source_channel", &row.source_channel),
            ("source_detail", &row.source_detail),
            ("next_action", &row.next_action),
        ]);
        let mut text = BTreeMap::new();
        for (field, value) in &wanted.text {
            let old = current.get(field).copied().cloned().flatten();
            change(changes, field, json!(old), json!(value));
            text.insert(*field, value.clone());
        }
        let keep = |field: &str, old: &Option<String>| text.get(field).cloned().or_else(|| old.clone());
        let phone = wanted.phone.clone().or_else(|| row.phone.clone());
        change(changes, "phone", json!(row.phone), json!(phone));
        let email = wanted.email.clone().or_else(|| row.email.clone());
        change(changes, "email", json!(row.email), json!(email));
        let value = wanted.estimated_value_cents.or(row.estimated_value_cents);
        change(
            changes,
            "estimated_value",
            json!(row.estimated_value_cents.map(lead::main_units)),
            json!(value.map(lead::main_units)),
        );
        let currency = wanted.currency.clone().unwrap_or_else(|| row.currency.clone());
        change(changes, "currency", json!(row.currency), json!(currency));
        let score = wanted.score.or(row.score);
        change(changes, "score", json!(row.score), json!(score));
        let next_action_at = wanted.next_action_at.or(row.next_action_at);
        let at = |t: Option<OffsetDateTime>| t.and_then(|t| t.format(&Rfc3339).ok());
        change(changes, "next_action_at", json!(at(row.next_action_at)), json!(at(next_action_at)));
        let mut custom = match &row.custom_fields {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        let mut custom_changed = false;
        for (key, value) in &wanted.custom_fields {
            if custom.get(key) != Some(value) {
                change(
                    changes,
                    &format!("custom_fields.{key}"),
                    custom.get(key).cloned().unwrap_or(Value::Null),
                    value.clone(),
                );
                custom.insert(key.clone(), value.clone());
                custom_changed = true;
            }
        }
        let (stage, closed_at, lost_reason) = match stage_change {
            Some((_, to)) => {
                let (closed_at, lost_reason) = to.settle(row.closed_at, wanted.reason.clone(), now);
                (to, closed_at, lost_reason)
            }
            None => (row.stage, row.closed_at, row.lost_reason.clone()),
        };
        let touched = !changes.is_empty() || stage_change.is_some() || custom_changed;
        Ok(diesel::update(leads::table.filter(leads::id.eq(row.id)))
            .set((
                leads::name.eq(keep("name", &row.name)),
                leads::title.eq(keep("title", &row.title)),
                leads::company.eq(keep("company", &row.company)),
                leads::location.eq(keep("location", &row.location)),
                leads::interest.eq(keep("interest", &row.interest)),
                leads::summary.eq(keep("summary", &row.summary)),
                leads::score_reason.eq(keep("score_reason", &row.score_reason)),
                leads::source_channel.eq(keep("source_channel", &row.source_channel)),
                leads::source_detail.eq(keep("source_detail", &row.source_detail)),
                leads::next_action.eq(keep("next_action", &row.next_action)),
                leads::phone.eq(phone),
                leads::email.eq(email),
                leads::estimated_value_cents.eq(value),
                leads::currency.eq(currency),
                leads::score.eq(score),
                leads::next_action_at.eq(next_action_at),
                leads::custom_fields.eq(Value::Object(custom)),
                leads::stage.eq(stage),
                leads::closed_at.eq(closed_at),
                leads::lost_reason.eq(lost_reason),
                leads::updated_at.eq(if touched { now } else { row.updated_at }),
                leads::last_activity_at.eq(now),
            ))
            .returning(Row::as_returning())
            .get_result(conn)
            .await?)
    }
}
