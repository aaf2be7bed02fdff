//! Answers: a customer's flow reply (an inbound `interactive` message of type `nfm_reply`)
//! carries the send token and the answers; it is read against the version that was sent, stored
//! once per message and announced as `form.submitted`. A menu form's answer places its order
//! at the shop first (`order.received`), and the answer carries it.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Permission, TenantId};
use providers::chat::ChatInbound;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use super::{Row, allowed, row};
use crate::MessagingService;
use crate::chat::orders::{ChatOrder, ChatOrderItem};
use crate::forms::{Definition, menu_order, read_answers, redact};
use crate::schema::{chat_form_answers as fa, chat_form_sends as fs, chat_form_versions as fv};

/// Whoever saves form answers as rows of the tenant's data tables (wired in by the
/// composition root).
#[async_trait::async_trait]
pub trait FormRecords: Send + Sync {
    /// Saves `answers` as a row of the table `slug`, through its rules: the row's id.
    async fn save(&self, tenant: TenantId, slug: &str, answers: &Map<String, Value>) -> Result<String, Error>;
}

impl MessagingService {
    /// The same service, saving form answers through `tables`.
    pub fn with_form_records(self, tables: std::sync::Arc<dyn FormRecords>) -> Self {
        Self { form_records: Some(tables), ..self }
    }

    /// A form answer saved as a data-table row: `record` of `form.submitted`, `{id, status,
    /// error}` (`created`, or `failed` with why; the answer is kept either way).
    async fn save_record(&self, tenant: TenantId, slug: &str, answers: &Map<String, Value>) -> Value {
        let saved = match &self.form_records {
            Some(tables) => tables.save(tenant, slug, answers).await,
            None => Err(Error::validation("No data tables take form answers in this service.")),
        };
        match saved {
            Ok(id) => json!({ "id": id, "status": "created", "error": null }),
            Err(error) => json!({ "id": null, "status": "failed", "error": error.message }),
        }
    }
}

/// Answers of a page.
pub const PER_PAGE: i64 = 50;

/// One answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FormAnswer {
    pub id: i64,
    pub form_id: i64,
    pub version: i32,
    /// `api` (a send through the API), `mcp`, `flow`...
    pub source: String,
    pub conversation_id: Option<i64>,
    /// The customer (E.164).
    pub customer: Option<String>,
    /// The send's `reference`.
    pub reference: Option<String>,
    /// Keyed by question key; phone, email and uploads only with `forms.answers.export`.
    #[schema(value_type = Object)]
    pub answers: Value,
    /// What the reply held that the version's rules refused (kept, never lost).
    #[schema(value_type = Vec<Object>)]
    pub issues: Value,
    /// A saved data-table row (`id`, `status`, `error`), or a menu form's order.
    #[schema(value_type = Option<Object>)]
    pub record: Option<Value>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// A page of answers, newest first; `next_before` reads the next.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AnswerPage {
    pub items: Vec<FormAnswer>,
    /// Pass as `before` for the next page; null on the last.
    pub next_before: Option<i64>,
}

/// `GET /chat/forms/{form}/answers`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AnswersQuery {
    /// Answers older than this one (a `next_before`).
    #[param(minimum = 1)]
    pub before: Option<i64>,
    /// Answers received at or after this time (RFC 3339).
    #[param(max_length = 64)]
    pub since: Option<String>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = fa, check_for_backend(diesel::pg::Pg))]
struct AnswerRow {
    id: i64,
    form_id: i64,
    version: i32,
    send_token: Option<String>,
    conversation_id: Option<i64>,
    customer: Option<String>,
    source: String,
    answers: Value,
    issues: Value,
    record: Option<Value>,
    created_at: OffsetDateTime,
}

impl MessagingService {
    /// `GET /chat/forms/{form}/answers`: newest first, 50 a page.
    pub async fn form_answers(&self, caller: &Caller, id: i64, query: &AnswersQuery) -> Result<AnswerPage, Error> {
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        allowed(&mut conn, caller, Permission::FORMS_ANSWERS_VIEW).await?;
        let form = row(&mut conn, tenant, id).await?;
        if query.before.is_some_and(|b| b < 1) {
            return Err(Error::field("before", "The before must be an answer's id (at least 1)."));
        }
        let since = match query.since.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            Some(raw) => Some(
                OffsetDateTime::parse(raw, &time::format_description::well_known::Rfc3339)
                    .map_err(|_| Error::field("since", "The since must be an RFC 3339 time with an offset or Z."))?,
            ),
            None => None,
        };
        let mut q = fa::table.filter(fa::tenant_id.eq(tenant.0)).filter(fa::form_id.eq(form.id)).into_boxed();
        if let Some(before) = query.before {
            q = q.filter(fa::id.lt(before));
        }
        if let Some(since) = since {
            q = q.filter(fa::created_at.ge(since));
        }
        let mut rows: Vec<AnswerRow> =
            q.order(fa::id.desc()).limit(PER_PAGE + 1).select(AnswerRow::as_select()).load(&mut conn).await?;
        let more = rows.len() as i64 > PER_PAGE;
        rows.truncate(PER_PAGE as usize);
        let export = caller.allows(Permission::FORMS_ANSWERS_EXPORT.0);
        let mut items = Vec::with_capacity(rows.len());
        for answer in rows {
            let reference: Option<String> = match &answer.send_token {
                Some(token) => fs::table
                    .filter(fs::tenant_id.eq(tenant.0))
                    .filter(fs::token.eq(token))
                    .select(fs::reference)
                    .first::<Option<String>>(&mut conn)
                    .await
                    .optional()?
                    .flatten(),
                None => None,
            };
            let answers = match (&answer.answers, export) {
                (Value::Object(all), false) => {
                    let definition = version_definition(&mut conn, &form, answer.version).await?;
                    Value::Object(redact(&definition, all))
                }
                (all, _) => all.clone(),
            };
            items.push(FormAnswer {
                id: answer.id,
                form_id: answer.form_id,
                version: answer.version,
                source: answer.source,
                conversation_id: answer.conversation_id,
                customer: answer.customer,
                reference,
                answers,
                issues: answer.issues,
                record: answer.record,
                created_at: answer.created_at,
            });
        }
        let next_before = if more { items.last().map(|a| a.id) } else { None };
        Ok(AnswerPage { items, next_before })
    }

    /// Reads a customer's flow reply into an answer; `false` when it names no send of this
    /// tenant (or was stored before).
    pub(crate) async fn take_form_reply(
        &self,
        tenant: TenantId,
        conversation: Option<i64>,
        inbound: &ChatInbound,
        now: OffsetDateTime,
    ) -> Result<bool, Error> {
        let reply = &inbound.raw["interactive"]["nfm_reply"];
        let response: Value = match &reply["response_json"] {
            Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
            other => other.clone(),
        };
        let Some(token) = response["flow_token"].as_str().map(str::to_owned) else { return Ok(false) };
        let mut conn = self.conn(tenant).await?;
        let send: Option<(i64, i32, String)> = fs::table
            .filter(fs::tenant_id.eq(tenant.0))
            .filter(fs::token.eq(&token))
            .select((fs::form_id, fs::version, fs::source))
            .first(&mut conn)
            .await
            .optional()?;
        let Some((form_id, version, source)) = send else { return Ok(false) };
        let form = row(&mut conn, tenant, form_id).await?;
        let definition = version_definition(&mut conn, &form, version).await?;
        let (answers, issues) = match read_answers(&definition, &response) {
            Ok(answers) => (answers, Vec::new()),
            // kept as sent, beside why: nothing the customer wrote is lost (the provider's
            // token is not something they wrote, nor an answer)
            Err(issues) => {
                let mut sent = response.as_object().cloned().unwrap_or_default();
                sent.remove(crate::forms::definition::RESERVED_KEY);
                (sent, issues)
            }
        };
        let customer = format!("+{}", inbound.customer.chars().filter(char::is_ascii_digit).collect::<String>());
        // once per reply: a delivery repeated after the order or row was made makes no other
        let repeated = answered(&mut conn, tenant, &inbound.provider_message_id).await?;
        // the shops and the data tables take connections of their own: this one goes back first
        drop(conn);
        let mut record = None;
        if let (Some(shop), true) = (form.menu_shop_id, issues.is_empty()) {
            // the order is placed once by the reply's key, so a repeat answers the same order
            record = Some(self.menu_answer(tenant, &form, shop, &answers, inbound, conversation).await?);
        } else if let (Some(slug), true, false) = (&form.save_to_table, issues.is_empty(), repeated) {
            record = Some(self.save_record(tenant, slug, &answers).await);
        }
        let mut conn = self.conn(tenant).await?;
        let stored = conn
            .transaction::<_, Error, _>(async |conn| {
                let stored = diesel::insert_into(fa::table)
                    .values((
                        fa::tenant_id.eq(tenant.0),
                        fa::form_id.eq(form.id),
                        fa::version.eq(version),
                        fa::send_token.eq(&token),
                        fa::conversation_id.eq(conversation),
                        fa::customer.eq(&customer),
                        fa::source.eq(&source),
                        fa::answers.eq(Value::Object(answers.clone())),
                        fa::issues.eq(json!(issues)),
                        fa::record.eq(&record),
                        fa::provider_message_id.eq(&inbound.provider_message_id),
                        fa::created_at.eq(now),
                    ))
                    .on_conflict_do_nothing()
                    .execute(conn)
                    .await?;
                if stored == 0 {
                    return Ok(false);
                }
                let payload = json!({
                    "form": { "id": form.id, "name": form.name },
                    "version": version,
                    "source": source,
                    "conversation_id": conversation,
                    "customer": customer,
                    "answers": answers,
                    "issues": issues,
                    "record": record,
                });
                store::outbox::emit(conn, tenant, "form.submitted", payload, now).await?;
                Ok(true)
            })
            .await?;
        Ok(stored)
    }

    /// A menu form's answer: the order at the shop, and the answer's order members.
    async fn menu_answer(
        &self,
        tenant: TenantId,
        form: &Row,
        shop: i64,
        answers: &Map<String, Value>,
        inbound: &ChatInbound,
        conversation: Option<i64>,
    ) -> Result<Value, Error> {
        let products = self.menu_products(tenant, shop).await.unwrap_or_default();
        let picked = match menu_order(&products, answers) {
            Ok(order) => order,
            Err(issue) => return Ok(json!({ "status": "refused", "error": issue.message })),
        };
        let Some(shops) = &self.chat_orders else {
            return Ok(json!({ "status": "refused", "error": "No shop takes orders in this service." }));
        };
        let order = ChatOrder {
            tenant_id: tenant,
            message_uid: format!("form-{}-{}", form.id, inbound.provider_message_id),
            catalog_id: None,
            customer_chat_id: inbound.customer.chars().filter(char::is_ascii_digit).collect(),
            customer_name: inbound.profile_name.clone(),
            conversation_id: conversation,
            items: picked
                .items
                .iter()
                .map(|(sku, quantity)| ChatOrderItem { retailer_id: sku.clone(), quantity: i64::from(*quantity) })
                .collect(),
            text: picked.note.clone(),
        };
        let placed = shops.place(shop, order).await?;
        let items: Vec<Value> =
            picked.items.iter().map(|(sku, quantity)| json!({ "sku": sku, "quantity": quantity })).collect();
        Ok(json!({
            "order_reference": placed.order_reference,
            "order_total": placed.order_total,
            "currency": placed.currency,
            "items": items,
            "note": picked.note,
            "order_id": placed.order_id,
        }))
    }
}

/// Whether a reply was already taken as an answer.
async fn answered(conn: &mut store::Conn, tenant: TenantId, message: &str) -> Result<bool, Error> {
    let count: i64 = fa::table
        .filter(fa::tenant_id.eq(tenant.0))
        .filter(fa::provider_message_id.eq(message))
        .count()
        .get_result(conn)
        .await?;
    Ok(count > 0)
}

/// The definition of one published version.
async fn version_definition(conn: &mut store::Conn, form: &Row, version: i32) -> Result<Definition, Error> {
    let value: Value = fv::table
        .filter(fv::tenant_id.eq(form.tenant_id))
        .filter(fv::form_id.eq(form.id))
        .filter(fv::version.eq(version))
        .select(fv::definition)
        .first(conn)
        .await
        .optional()?
        .unwrap_or_else(|| form.definition.clone());
    serde_json::from_value(value).map_err(Error::internal)
}
