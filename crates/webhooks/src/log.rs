//! What a receiver can inspect and repair (beyond the contract, as Svix and Stripe offer it):
//! the delivery log with every attempt, replay of one delivery, recovery of every failed one
//! since a time, the notifications a pause leaves, and the test send.

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use kernel::error::FieldErrors;
use kernel::state::{Event as _, Status as _};
use kernel::{Caller, Error, Page, PageRequest, Permission, TenantId};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::attempt;
use crate::schema::{webhook_attempts, webhook_deliveries, webhook_notifications};
use crate::status::{DeliveryEvent, DeliveryState};
use crate::{DeliveryId, WebhookId, WebhookService, catalogue};

pub const PER_PAGE: i64 = 20;

/// One delivery of one event to one receiver.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Delivery {
    /// `X-Delivery-Id`: the same on every automatic retry, new on a replay.
    pub id: Uuid,
    pub webhook_id: i64,
    pub event: String,
    /// `X-Event-Id` and the body's `event_id`: the same on every retry, replay and endpoint.
    pub event_id: Uuid,
    /// `pending` (waiting for its next attempt), `delivered`, `failed`, or `held` (its receiver
    /// is paused).
    pub state: String,
    pub attempt_count: i32,
    #[serde(with = "time::serde::rfc3339::option")]
    pub next_attempt_at: Option<OffsetDateTime>,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    /// The delivery this one replays.
    pub replay_of: Option<Uuid>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// Every attempt, first first.
    pub attempts: Vec<Attempt>,
}

#[derive(Debug, Clone, Serialize, ToSchema, Queryable, Selectable)]
#[diesel(table_name = webhook_attempts)]
pub struct Attempt {
    #[serde(skip)]
    pub delivery_id: Uuid,
    pub number: i32,
    #[serde(with = "time::serde::rfc3339")]
    pub attempted_at: OffsetDateTime,
    /// The receiver's HTTP status; null when no answer came.
    pub status: Option<i32>,
    pub duration_ms: i32,
    pub error: Option<String>,
    /// The first bytes of the answer.
    pub response_excerpt: Option<String>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = webhook_deliveries)]
struct Row {
    id: Uuid,
    webhook_id: i64,
    event: String,
    event_id: Uuid,
    state: String,
    attempts: i32,
    next_attempt_at: Option<OffsetDateTime>,
    last_status: Option<i32>,
    last_error: Option<String>,
    replay_of: Option<Uuid>,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

impl Row {
    fn view(self, attempts: Vec<Attempt>) -> Delivery {
        Delivery {
            id: self.id,
            webhook_id: self.webhook_id,
            event: self.event,
            event_id: self.event_id,
            state: self.state,
            attempt_count: self.attempts,
            next_attempt_at: self.next_attempt_at,
            last_status: self.last_status,
            last_error: self.last_error,
            replay_of: self.replay_of,
            created_at: self.created_at,
            updated_at: self.updated_at,
            attempts,
        }
    }
}

/// Filters of the delivery log.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveryFilter {
    /// `pending`, `delivered`, `failed` or `held`.
    #[param(schema_with = crate::doc::state_query)]
    pub state: Option<String>,
    /// A catalogue event.
    #[param(schema_with = crate::doc::event_query)]
    pub event: Option<String>,
}

/// `POST /webhooks/{webhook}/recover`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct Recover {
    /// RFC 3339: failed deliveries created at or after this are replayed.
    #[schema(required = true, schema_with = crate::doc::since)]
    pub since: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Recovered {
    /// Failed deliveries sent again, each as a new delivery.
    pub replayed: usize,
    /// Held deliveries released by resuming the receiver.
    pub released: usize,
}

/// What a pause leaves for the tenant's webhook managers.
#[derive(Debug, Clone, Serialize, ToSchema, Queryable, Selectable)]
#[diesel(table_name = webhook_notifications)]
pub struct Notification {
    pub id: i64,
    pub webhook_id: i64,
    /// `webhook.paused`.
    pub kind: String,
    pub message: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// `POST /webhooks/{webhook}/test`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct TestSend {
    /// A catalogue event whose sample is sent; `webhook.test` when absent.
    #[schema(schema_with = crate::doc::test_event)]
    pub event: Option<String>,
}

/// The contract's answer to a test send.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TestResult {
    pub delivered: bool,
    pub status: Option<u16>,
    pub duration_ms: i32,
    pub response_excerpt: Option<String>,
    pub error: Option<String>,
}

async fn attempts_of(conn: &mut store::Conn, tenant: TenantId, ids: &[Uuid]) -> Result<Vec<Attempt>, Error> {
    Ok(webhook_attempts::table
        .filter(webhook_attempts::tenant_id.eq(tenant.0))
        .filter(webhook_attempts::delivery_id.eq_any(ids))
        .order((webhook_attempts::delivery_id, webhook_attempts::number))
        .select(Attempt::as_select())
        .load(conn)
        .await?)
}

fn with_attempts(rows: Vec<Row>, mut attempts: Vec<Attempt>) -> Vec<Delivery> {
    rows.into_iter()
        .map(|row| {
            let (mine, rest): (Vec<_>, Vec<_>) = attempts.drain(..).partition(|a| a.delivery_id == row.id);
            attempts = rest;
            row.view(mine)
        })
        .collect()
}

#[derive(diesel::QueryableByName)]
struct Released {
    #[diesel(sql_type = BigInt)]
    released: i64,
}

/// Resumes a paused receiver: its count starts again and its held deliveries are due now.
async fn resume(conn: &mut store::Conn, webhook: i64, now: OffsetDateTime) -> Result<usize, Error> {
    let released: Released = diesel::sql_query(
        "WITH resumed AS (
             UPDATE webhooks SET paused_at = NULL, paused_reason = NULL, consecutive_failures = 0,
                    updated_at = CASE WHEN paused_at IS NULL THEN updated_at ELSE $2 END
             WHERE id = $1
         ), released AS (
             UPDATE webhook_deliveries SET state = $3, next_attempt_at = $2, updated_at = $2
             WHERE webhook_id = $1 AND state = ANY ($4)
             RETURNING 1
         )
         SELECT count(*) AS released FROM released",
    )
    .bind::<BigInt, _>(webhook)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(DeliveryEvent::Release.target().as_str())
    .bind::<Array<Text>, _>(DeliveryEvent::Release.sources())
    .get_result(conn)
    .await?;
    if released.released > 0 {
        diesel::sql_query(format!("NOTIFY {}", crate::deliver::CHANNEL)).execute(conn).await?;
    }
    Ok(released.released as usize)
}

impl WebhookService {
    async fn delivery_row(
        &self,
        conn: &mut store::Conn,
        tenant: TenantId,
        webhook: WebhookId,
        delivery: DeliveryId,
    ) -> Result<Row, Error> {
        webhook_deliveries::table
            .filter(webhook_deliveries::tenant_id.eq(tenant.0))
            .filter(webhook_deliveries::webhook_id.eq(webhook.0))
            .filter(webhook_deliveries::id.eq(delivery.0))
            .filter(webhook_deliveries::state.ne(DeliveryState::Screening.as_str()))
            .select(Row::as_select())
            .first(conn)
            .await
            .optional()?
            .ok_or_else(|| Error::not_found("Delivery"))
    }

    /// `GET /webhooks/{webhook}/deliveries`: newest first, with every attempt.
    pub async fn deliveries(
        &self,
        caller: &Caller,
        webhook: WebhookId,
        filter: &DeliveryFilter,
        page: PageRequest,
    ) -> Result<Page<Delivery>, Error> {
        caller.require(Permission::WEBHOOKS_VIEW)?;
        let mut errors = FieldErrors::new();
        let state = filter.state.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let shown = state.map(DeliveryState::parse_shown);
        if let Some(None) = shown {
            let states: Vec<&str> = DeliveryState::SHOWN.iter().map(|s| s.as_str()).collect();
            errors.add("state", format!("The state must be one of {}.", states.join(", ")));
        }
        let state = shown.flatten();
        let event = filter.event.as_deref().map(str::trim).filter(|s| !s.is_empty());
        if let Some(event) = event
            && catalogue::find(event).is_none()
        {
            errors.add("event", format!("\"{event}\" is not an event of the catalogue."));
        }
        errors.finish()?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let receiver = self.row(&mut conn, caller.tenant_id, webhook).await?;
        let query = || {
            let mut q = webhook_deliveries::table.filter(webhook_deliveries::webhook_id.eq(receiver.id)).into_boxed();
            q = match state {
                Some(state) => q.filter(webhook_deliveries::state.eq(state.as_str())),
                None => q.filter(webhook_deliveries::state.ne(DeliveryState::Screening.as_str())),
            };
            if let Some(event) = event {
                q = q.filter(webhook_deliveries::event.eq(event));
            }
            q
        };
        let total: i64 = query().count().get_result(&mut conn).await?;
        let rows: Vec<Row> = query()
            .order((webhook_deliveries::created_at.desc(), webhook_deliveries::id.desc()))
            .limit(page.per_page)
            .offset(page.offset())
            .select(Row::as_select())
            .load(&mut conn)
            .await?;
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        let attempts = attempts_of(&mut conn, caller.tenant_id, &ids).await?;
        Ok(Page::new(with_attempts(rows, attempts), page, total))
    }

    pub async fn delivery(&self, caller: &Caller, webhook: WebhookId, delivery: DeliveryId) -> Result<Delivery, Error> {
        caller.require(Permission::WEBHOOKS_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let row = self.delivery_row(&mut conn, caller.tenant_id, webhook, delivery).await?;
        let attempts = attempts_of(&mut conn, caller.tenant_id, &[row.id]).await?;
        Ok(row.view(attempts))
    }

    /// Sends a delivery's event again as a new delivery (a new `X-Delivery-Id`, the same
    /// `X-Event-Id`), due now, and resumes the receiver if it was paused. A delivery waiting for
    /// its next automatic attempt ends `failed` there (the replay takes its place: a receiver
    /// that is back wants its events now, not at the 6-hour attempt); one whose attempt is in
    /// flight this moment is 409 until it ends. A held delivery is released as it is (it is
    /// the automatic delivery, waiting for the receiver).
    pub async fn replay(&self, caller: &Caller, webhook: WebhookId, delivery: DeliveryId) -> Result<Delivery, Error> {
        caller.require(Permission::WEBHOOKS_MANAGE)?;
        let now = self.clock.now();
        let mut conn = self.conn(caller.tenant_id).await?;
        let tenant = caller.tenant_id;
        let id = diesel_async::AsyncConnection::transaction::<_, Error, _>(&mut *conn, async |conn| {
            // the receiver's row lock orders a replay against a pause being recorded
            diesel::sql_query("SELECT id FROM webhooks WHERE id = $1 AND tenant_id = $2 FOR UPDATE")
                .bind::<BigInt, _>(webhook)
                .bind::<BigInt, _>(tenant.0)
                .execute(conn)
                .await?;
            let original = self.delivery_row(conn, tenant, webhook, delivery).await?;
            let state = DeliveryState::parse(&original.state)
                .ok_or_else(|| Error::internal(format!("a delivery in the unknown state {}", original.state)))?;
            match state {
                DeliveryState::Held => {
                    resume(conn, webhook.0, now).await?;
                    Ok(original.id)
                }
                state => {
                    // the automatic attempt is cancelled: the row stops being due, unless a
                    // worker holds it (an attempt in flight, whose outcome must be recorded)
                    if let Ok(failed) = state.apply(DeliveryEvent::Cancel) {
                        use webhook_deliveries as d;
                        let idle = d::locked_until.is_null().or(d::locked_until.le(now));
                        let cancelled =
                            diesel::update(d::table.find(original.id).filter(d::state.eq(state.as_str())).filter(idle))
                                .set((
                                    d::state.eq(failed.as_str()),
                                    d::next_attempt_at.eq(None::<OffsetDateTime>),
                                    d::updated_at.eq(now),
                                ))
                                .execute(conn)
                                .await?;
                        if cancelled == 0 {
                            return Err(Error::conflict(
                                "This delivery is being attempted right now; replay it once the attempt ends.",
                            ));
                        }
                    }
                    let id = Uuid::new_v4();
                    diesel::insert_into(webhook_deliveries::table)
                        .values((
                            webhook_deliveries::id.eq(id),
                            webhook_deliveries::tenant_id.eq(tenant.0),
                            webhook_deliveries::webhook_id.eq(webhook.0),
                            webhook_deliveries::event_id.eq(original.event_id),
                            webhook_deliveries::event.eq(&original.event),
                            webhook_deliveries::state.eq(DeliveryState::Pending.as_str()),
                            webhook_deliveries::next_attempt_at.eq(now),
                            webhook_deliveries::replay_of.eq(original.id),
                            webhook_deliveries::created_at.eq(now),
                            webhook_deliveries::updated_at.eq(now),
                        ))
                        .execute(conn)
                        .await?;
                    resume(conn, webhook.0, now).await?;
                    diesel::sql_query(format!("NOTIFY {}", crate::deliver::CHANNEL)).execute(conn).await?;
                    Ok(id)
                }
            }
        })
        .await?;
        let row = self.delivery_row(&mut conn, tenant, webhook, DeliveryId(id)).await?;
        let attempts = attempts_of(&mut conn, tenant, &[row.id]).await?;
        Ok(row.view(attempts))
    }

    /// Replays every failed delivery created since `since` that was not replayed already, and
    /// resumes the receiver (releasing what it held).
    pub async fn recover(&self, caller: &Caller, webhook: WebhookId, input: Recover) -> Result<Recovered, Error> {
        caller.require(Permission::WEBHOOKS_MANAGE)?;
        let since = match input.since.as_deref().map(str::trim) {
            None | Some("") => return Err(Error::field("since", "The since field is required (RFC 3339).")),
            Some(raw) => OffsetDateTime::parse(raw, &time::format_description::well_known::Rfc3339)
                .map_err(|_| Error::field("since", "The since field must be an RFC 3339 date and time."))?,
        };
        let now = self.clock.now();
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        diesel_async::AsyncConnection::transaction::<_, Error, _>(&mut *conn, async |conn| {
            let receiver = self.row(conn, tenant, webhook).await?;
            diesel::sql_query("SELECT id FROM webhooks WHERE id = $1 FOR UPDATE")
                .bind::<BigInt, _>(receiver.id)
                .execute(conn)
                .await?;
            let replayed = diesel::sql_query(
                "INSERT INTO webhook_deliveries (id, tenant_id, webhook_id, event_id, event, state, next_attempt_at,
                                                 replay_of, created_at, updated_at)
                 SELECT gen_random_uuid(), d.tenant_id, d.webhook_id, d.event_id, d.event, $4, $3, d.id, $3, $3
                 FROM webhook_deliveries d
                 WHERE d.webhook_id = $1 AND d.state = $5 AND d.created_at >= $2
                   AND NOT EXISTS (SELECT 1 FROM webhook_deliveries r WHERE r.replay_of = d.id)",
            )
            .bind::<BigInt, _>(receiver.id)
            .bind::<Timestamptz, _>(since)
            .bind::<Timestamptz, _>(now)
            .bind::<Text, _>(DeliveryState::Pending.as_str())
            .bind::<Text, _>(DeliveryState::Failed.as_str())
            .execute(conn)
            .await?;
            let released = resume(conn, receiver.id, now).await?;
            if replayed > 0 {
                diesel::sql_query(format!("NOTIFY {}", crate::deliver::CHANNEL)).execute(conn).await?;
            }
            Ok(Recovered { replayed, released })
        })
        .await
    }

    /// `GET /webhooks/notifications`: newest first.
    pub async fn notifications(&self, caller: &Caller, page: PageRequest) -> Result<Page<Notification>, Error> {
        caller.require(Permission::WEBHOOKS_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let mine = webhook_notifications::table.filter(webhook_notifications::tenant_id.eq(caller.tenant_id.0));
        let total: i64 = mine.count().get_result(&mut conn).await?;
        let items = mine
            .order((webhook_notifications::created_at.desc(), webhook_notifications::id.desc()))
            .limit(page.per_page)
            .offset(page.offset())
            .select(Notification::as_select())
            .load(&mut conn)
            .await?;
        Ok(Page::new(items, page, total))
    }

    /// `POST /webhooks/{webhook}/test`: a signed sample marked `test: true`, sent now, once. It
    /// is not logged as a delivery and does not count toward pausing.
    pub async fn test(&self, caller: &Caller, webhook: WebhookId, input: TestSend) -> Result<TestResult, Error> {
        caller.require(Permission::WEBHOOKS_MANAGE)?;
        let event = input.event.as_deref().map(str::trim).filter(|e| !e.is_empty()).unwrap_or("webhook.test");
        let Some(payload) = self.catalogue.payload(event) else {
            return Err(Error::field("event", format!("\"{event}\" is not an event of the catalogue.")));
        };
        let row = {
            let mut conn = self.conn(caller.tenant_id).await?;
            self.row(&mut conn, caller.tenant_id, webhook).await?
        };
        let target = crate::secrets::target(
            &self.keyring,
            row.id,
            row.url.clone(),
            &row.secret,
            &row.sealed_headers(),
            row.legacy_http(),
        );
        let now = self.clock.now();
        let (delivery_id, event_id) = (Uuid::new_v4().to_string(), Uuid::new_v4());
        let body =
            serde_json::to_vec(&catalogue::envelope(event, event_id, now, payload, true)).map_err(Error::internal)?;
        let event_id = event_id.to_string();
        let delivery = attempt::Delivery { delivery_id: &delivery_id, event, event_id: &event_id, body: &body };
        let outcome = match target {
            Ok(target) => {
                attempt::send(&self.client, &self.config.policy, &target, &delivery, now, self.config.excerpt_limit)
                    .await
            }
            Err(reason) => attempt::Outcome::unsent(reason),
        };
        Ok(TestResult {
            delivered: outcome.succeeded(),
            status: outcome.status,
            duration_ms: outcome.duration_ms,
            response_excerpt: outcome.response_excerpt,
            error: outcome.error,
        })
    }
}
