//! The delivery loop. Deliveries are their own queue (`webhook_deliveries`): claimed in batches
//! with `FOR UPDATE SKIP LOCKED` under a lease, attempted concurrently with a bound per receiver,
//! and recorded in batches. They keep the job queue's guarantees (a crashed process's claims
//! come back after the lease; attempts are counted; failures stay for inspection) with the
//! webhook schedule instead of the queue's backoff, and without a job row per delivery.

use std::collections::HashMap;
use std::sync::Arc;

use diesel::sql_types::{Array, BigInt, Bool, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Error, TenantId};
use serde_json::{Value, json};
use time::OffsetDateTime;
use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinSet;
use uuid::Uuid;

use crate::attempt::{self, Next, Outcome, Target};
use crate::headers::Sealed;
use crate::receivers::LEGACY_HTTP_BEFORE;
use crate::{WebhookService, catalogue};

/// The channel the fan-out trigger notifies.
pub const CHANNEL: &str = "svc_webhooks";

/// A claimed delivery with what its attempt needs.
#[derive(diesel::QueryableByName, Debug, Clone)]
struct Claimed {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = BigInt)]
    webhook_id: i64,
    #[diesel(sql_type = SqlUuid)]
    event_id: Uuid,
    #[diesel(sql_type = Text)]
    event: String,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Text)]
    url: String,
    #[diesel(sql_type = Text)]
    secret: String,
    #[diesel(sql_type = Jsonb)]
    headers: Value,
    #[diesel(sql_type = Timestamptz)]
    url_changed_at: OffsetDateTime,
    #[diesel(sql_type = Integer)]
    consecutive_failures: i32,
    #[diesel(sql_type = Jsonb)]
    payload: Value,
    #[diesel(sql_type = Timestamptz)]
    occurred_at: OffsetDateTime,
}

/// An attempt that ended.
#[derive(Debug)]
struct Finished {
    id: Uuid,
    webhook_id: i64,
    event: String,
    attempt: i32,
    /// The receiver's count of failures when the delivery was claimed.
    failures_before: i32,
    at: OffsetDateTime,
    outcome: Outcome,
}

/// Runs deliveries: `run` is the long-lived loop, `deliver_due` the one-shot tests use.
pub struct Deliverer {
    service: WebhookService,
    id: Uuid,
    /// One per receiver with attempts in flight in this process.
    gates: std::sync::Mutex<HashMap<i64, (Arc<Semaphore>, usize)>>,
}

impl Deliverer {
    pub fn new(service: WebhookService) -> Arc<Self> {
        Arc::new(Self { service, id: Uuid::new_v4(), gates: Default::default() })
    }

    /// Receivers with as many deliveries in flight here as they may have.
    fn saturated(&self) -> Vec<i64> {
        let limit = self.service.config.per_receiver;
        let gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        gates.iter().filter(|(_, (_, n))| *n >= limit).map(|(id, _)| *id).collect()
    }

    fn gate(&self, webhook: i64) -> Arc<Semaphore> {
        let mut gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        let entry =
            gates.entry(webhook).or_insert_with(|| (Arc::new(Semaphore::new(self.service.config.per_receiver)), 0));
        entry.1 += 1;
        entry.0.clone()
    }

    fn ungate(&self, webhook: i64) {
        let mut gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = gates.get_mut(&webhook) {
            entry.1 -= 1;
            if entry.1 == 0 {
                gates.remove(&webhook);
            }
        }
    }

    /// Claims up to `limit` due deliveries, oldest first: at most `per_receiver` of any one
    /// receiver (fewer when its failures near the pause, so a pause lands at fifty), and none of
    /// a receiver already saturated here.
    async fn claim(&self, limit: usize) -> Result<Vec<Claimed>, Error> {
        let config = &self.service.config;
        let now = self.service.clock.now();
        let mut conn = self.service.conn().await?;
        let claimed = diesel::sql_query(
            "WITH candidates AS (
                 SELECT id, webhook_id, next_attempt_at FROM webhook_deliveries
                 WHERE state = 'pending' AND next_attempt_at <= $1
                   AND (locked_until IS NULL OR locked_until < $1) AND webhook_id <> ALL ($2)
                 ORDER BY next_attempt_at LIMIT $3 * 4
             ), capped AS (
                 -- a failing receiver gets no more than the attempts that would pause it
                 SELECT c.id FROM (
                     SELECT id, webhook_id, next_attempt_at,
                            row_number() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, id) AS n
                     FROM candidates) c
                 JOIN webhooks w ON w.id = c.webhook_id
                 WHERE c.n <= LEAST($4, GREATEST($7 - w.consecutive_failures, 1))
                 ORDER BY c.next_attempt_at LIMIT $3
             ), locked AS (
                 SELECT d.id FROM webhook_deliveries d JOIN capped USING (id)
                 WHERE d.state = 'pending' AND (d.locked_until IS NULL OR d.locked_until < $1)
                 FOR UPDATE OF d SKIP LOCKED
             )
             UPDATE webhook_deliveries d
             SET attempts = d.attempts + 1, locked_by = $5, locked_until = $6, updated_at = $1
             FROM locked l, webhooks w, events e
             WHERE d.id = l.id AND w.id = d.webhook_id AND e.id = d.event_id
             RETURNING d.id, d.webhook_id, d.event_id, d.event, d.attempts, w.url, w.secret, w.headers,
                       w.url_changed_at, w.consecutive_failures, e.payload, e.occurred_at",
        )
        .bind::<Timestamptz, _>(now)
        .bind::<Array<BigInt>, _>(self.saturated())
        .bind::<BigInt, _>(limit as i64)
        .bind::<BigInt, _>(config.per_receiver as i64)
        .bind::<SqlUuid, _>(self.id)
        .bind::<Timestamptz, _>(now + config.lease)
        .bind::<Integer, _>(config.pause_after)
        .get_results(&mut conn)
        .await?;
        Ok(claimed)
    }

    /// Starts the attempt of one claimed delivery.
    fn start(self: &Arc<Self>, running: &mut JoinSet<Finished>, claimed: Claimed) {
        let gate = self.gate(claimed.webhook_id);
        let this = self.clone();
        running.spawn(async move {
            let _permit = gate.acquire_owned().await;
            let service = &this.service;
            let sealed: Vec<Sealed> = serde_json::from_value(claimed.headers).unwrap_or_default();
            let headers: Result<Vec<_>, Error> =
                sealed.iter().map(|h| Ok((h.name.clone(), service.key.open(h)?))).collect();
            let body =
                catalogue::envelope(&claimed.event, claimed.event_id, claimed.occurred_at, claimed.payload, false);
            let body = serde_json::to_vec(&body).unwrap_or_default();
            let (delivery_id, event_id) = (claimed.id.to_string(), claimed.event_id.to_string());
            let delivery = attempt::Delivery {
                delivery_id: &delivery_id,
                event: &claimed.event,
                event_id: &event_id,
                body: &body,
            };
            let at = service.clock.now();
            let config = &service.config;
            let outcome = match headers {
                Ok(headers) => {
                    let legacy_http = claimed.url_changed_at < LEGACY_HTTP_BEFORE;
                    let target = Target { url: claimed.url, secret: claimed.secret, headers, legacy_http };
                    attempt::send(&service.client, &config.policy, &target, &delivery, at, config.excerpt_limit).await
                }
                // not sent without them (they are often the receiver's credentials); retried, as
                // the operator may restore the key
                Err(_) => Outcome::unsent(format!(
                    "a custom header cannot be opened: was {} changed?",
                    crate::headers::HeaderKey::ENV
                )),
            };
            Finished {
                id: claimed.id,
                webhook_id: claimed.webhook_id,
                event: claimed.event,
                attempt: claimed.attempts,
                failures_before: claimed.consecutive_failures,
                at,
                outcome,
            }
        });
    }

    /// Records what a batch of attempts came to, in one transaction: the attempts' log, each
    /// delivery's next state, the receivers' failure counts, and any pause they cause.
    async fn record(&self, finished: Vec<Finished>) -> Result<(), Error> {
        if finished.is_empty() {
            return Ok(());
        }
        for done in &finished {
            self.ungate(done.webhook_id);
        }
        let service = &self.service;
        let now = service.clock.now();
        let mut deliveries = Rows::default();
        // per receiver, in the order the attempts ended
        let mut counts: Vec<Count> = Vec::new();
        for done in &finished {
            let next = attempt::next(catalogue::retry_of(&done.event), done.attempt, &done.outcome, attempt::jitter());
            let (state, next_at) = match next {
                Next::Delivered => ("delivered", None),
                Next::RetryAfter(wait) => ("pending", Some(done.at + wait)),
                Next::Failed => ("failed", None),
            };
            deliveries.push(done, state, next_at);
            let count = match counts.iter_mut().position(|c| c.webhook == done.webhook_id) {
                Some(i) => &mut counts[i],
                None => {
                    counts.push(Count { webhook: done.webhook_id, before: done.failures_before, ..Count::default() });
                    counts.last_mut().expect("just pushed")
                }
            };
            if done.outcome.succeeded() {
                (count.reset, count.tail) = (true, 0);
            } else {
                count.tail += 1;
                count.last_failure = Some(done.outcome.describe());
            }
        }
        // nothing to count when a receiver that had no failures only succeeded
        counts.retain(|c| !(c.reset && c.tail == 0 && c.before == 0));
        let me = self.id;
        let pause_after = service.config.pause_after;
        let mut conn = service.conn().await?;
        // The common case, successes of healthy receivers, is one statement: atomic as it is.
        if counts.is_empty() {
            return deliveries.write(&mut conn, me, now).await;
        }
        conn.transaction::<_, Error, _>(async |conn| {
            for webhook in count_failures(conn, &counts, pause_after, now).await? {
                let last = counts.iter().find(|c| c.webhook == webhook).and_then(|c| c.last_failure.as_deref());
                pause(conn, webhook, last.unwrap_or("no answer"), now).await?;
            }
            deliveries.write(conn, me, now).await
        })
        .await
    }

    /// Attempts everything due now, as many at once as the configuration allows, and says how
    /// many attempts were made. Tests drive deliveries with it.
    pub async fn deliver_due(self: &Arc<Self>) -> Result<usize, Error> {
        let mut total = 0;
        loop {
            let claimed = self.claim(self.service.config.concurrency).await?;
            if claimed.is_empty() {
                return Ok(total);
            }
            total += claimed.len();
            let mut running = JoinSet::new();
            for c in claimed {
                self.start(&mut running, c);
            }
            let mut finished = Vec::new();
            while let Some(done) = running.join_next().await {
                finished.push(done.map_err(Error::internal)?);
            }
            self.record(finished).await?;
        }
    }

    /// Runs until `shutdown` turns true: claims while there is room, wakes on the fan-out's
    /// notifications (when `listen_url` is given) or polls, records attempts as they end.
    /// Attempts still running at shutdown are recorded before it returns; claims not started
    /// come back to any process after the lease.
    pub async fn run(self: Arc<Self>, listen_url: Option<String>, mut shutdown: watch::Receiver<bool>) {
        let wake = Arc::new(Notify::new());
        let listener = listen_url.map(|url| tokio::spawn(store::jobs::listen(url, CHANNEL, wake.clone())));
        let config = self.service.config.clone();
        let mut running: JoinSet<Finished> = JoinSet::new();
        while !*shutdown.borrow() {
            let free = config.concurrency.saturating_sub(running.len());
            let mut more = false;
            if free > 0 {
                match self.claim(free).await {
                    Ok(claimed) => {
                        more = claimed.len() == free;
                        for c in claimed {
                            self.start(&mut running, c);
                        }
                    }
                    Err(error) => tracing::error!(%error, "claiming webhook deliveries failed"),
                }
            }
            tokio::select! {
                Some(done) = running.join_next(), if !running.is_empty() => {
                    let mut finished: Vec<Finished> = done.into_iter().collect();
                    while let Some(done) = running.try_join_next() {
                        finished.extend(done);
                    }
                    if let Err(error) = self.record(finished).await {
                        tracing::error!(%error, "recording webhook attempts failed");
                    }
                }
                _ = wake.notified(), if !more => {}
                _ = tokio::time::sleep(config.poll_interval), if !more => {}
                changed = shutdown.changed() => {
                    if changed.is_err() {
                        break;
                    }
                }
            }
        }
        if let Some(listener) = listener {
            listener.abort();
        }
        let mut finished = Vec::new();
        while let Some(done) = running.join_next().await {
            finished.extend(done);
        }
        if let Err(error) = self.record(finished).await {
            tracing::error!(%error, "recording webhook attempts at shutdown failed");
        }
    }
}

/// The columns of a batch of recorded attempts.
#[derive(Default)]
struct Rows {
    ids: Vec<Uuid>,
    states: Vec<&'static str>,
    next_at: Vec<Option<OffsetDateTime>>,
    numbers: Vec<i32>,
    at: Vec<OffsetDateTime>,
    statuses: Vec<Option<i32>>,
    durations: Vec<i32>,
    errors: Vec<Option<String>>,
    excerpts: Vec<Option<String>>,
}

impl Rows {
    fn push(&mut self, done: &Finished, state: &'static str, next_at: Option<OffsetDateTime>) {
        self.ids.push(done.id);
        self.states.push(state);
        self.next_at.push(next_at);
        self.numbers.push(done.attempt);
        self.at.push(done.at);
        self.statuses.push(done.outcome.status.map(i32::from));
        self.durations.push(done.outcome.duration_ms);
        self.errors.push(done.outcome.error.clone());
        self.excerpts.push(done.outcome.response_excerpt.clone());
    }

    /// One statement: the deliveries still claimed by this process move on (a retry of a paused
    /// receiver is held instead), and every attempt joins the log.
    async fn write(self, conn: &mut store::Conn, me: Uuid, now: OffsetDateTime) -> Result<(), Error> {
        diesel::sql_query(
            "WITH r AS (
                 SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::int[], $5::timestamptz[],
                                      $6::int[], $7::int[], $8::text[], $9::text[])
                     AS r (id, state, next_at, number, at, status, duration_ms, error, excerpt)
             ), moved AS (
                 UPDATE webhook_deliveries d
                 SET state = CASE WHEN r.state = 'pending' AND w.paused_at IS NOT NULL THEN 'held' ELSE r.state END,
                     next_attempt_at = CASE WHEN w.paused_at IS NULL THEN r.next_at END,
                     locked_by = NULL, locked_until = NULL, last_status = r.status,
                     last_error = r.error, updated_at = $11
                 FROM r, webhooks w
                 WHERE d.id = r.id AND d.locked_by = $10 AND w.id = d.webhook_id
             )
             INSERT INTO webhook_attempts (delivery_id, number, attempted_at, status, duration_ms, error, response_excerpt)
             SELECT r.id, r.number, r.at, r.status, r.duration_ms, r.error, r.excerpt
             FROM r JOIN webhook_deliveries d ON d.id = r.id
             ON CONFLICT (delivery_id, number) DO NOTHING",
        )
        .bind::<Array<SqlUuid>, _>(self.ids)
        .bind::<Array<Text>, _>(self.states)
        .bind::<Array<Nullable<Timestamptz>>, _>(self.next_at)
        .bind::<Array<Integer>, _>(self.numbers)
        .bind::<Array<Timestamptz>, _>(self.at)
        .bind::<Array<Nullable<Integer>>, _>(self.statuses)
        .bind::<Array<Integer>, _>(self.durations)
        .bind::<Array<Nullable<Text>>, _>(self.errors)
        .bind::<Array<Nullable<Text>>, _>(self.excerpts)
        .bind::<SqlUuid, _>(me)
        .bind::<Timestamptz, _>(now)
        .execute(conn)
        .await?;
        Ok(())
    }
}

/// How a batch of attempts moves one receiver's count of consecutive failures.
#[derive(Debug, Default)]
struct Count {
    webhook: i64,
    /// An attempt succeeded: the count starts again from `tail`.
    reset: bool,
    /// Failures after the last success (or all of them).
    tail: i32,
    /// The count when the first of these deliveries was claimed.
    before: i32,
    last_failure: Option<String>,
}

/// Moves the receivers' consecutive-failure counts; answers those that reached the pause
/// threshold and are not paused yet.
async fn count_failures(
    conn: &mut store::Conn,
    receivers: &[Count],
    pause_after: i32,
    now: OffsetDateTime,
) -> Result<Vec<i64>, Error> {
    let counted: Vec<CountRow> = diesel::sql_query(
        "UPDATE webhooks w
         SET consecutive_failures = CASE WHEN r.reset THEN r.tail ELSE w.consecutive_failures + r.tail END,
             updated_at = CASE WHEN w.consecutive_failures = 0 AND r.tail = 0 THEN w.updated_at ELSE $4 END
         FROM unnest($1::bigint[], $2::bool[], $3::int[]) AS r (id, reset, tail)
         WHERE w.id = r.id
         RETURNING w.id, w.consecutive_failures, w.paused_at",
    )
    .bind::<Array<BigInt>, _>(receivers.iter().map(|c| c.webhook).collect::<Vec<_>>())
    .bind::<Array<Bool>, _>(receivers.iter().map(|c| c.reset).collect::<Vec<_>>())
    .bind::<Array<Integer>, _>(receivers.iter().map(|c| c.tail).collect::<Vec<_>>())
    .bind::<Timestamptz, _>(now)
    .load(conn)
    .await?;
    Ok(counted
        .into_iter()
        .filter(|r| r.consecutive_failures >= pause_after && r.paused_at.is_none())
        .map(|r| r.id)
        .collect())
}

#[derive(diesel::QueryableByName)]
struct CountRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Integer)]
    consecutive_failures: i32,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    paused_at: Option<OffsetDateTime>,
}

#[derive(diesel::QueryableByName)]
struct PausedRow {
    #[diesel(sql_type = BigInt)]
    tenant_id: i64,
    #[diesel(sql_type = Text)]
    url: String,
    #[diesel(sql_type = Array<Text>)]
    events: Vec<String>,
    #[diesel(sql_type = Integer)]
    consecutive_failures: i32,
    #[diesel(sql_type = Text)]
    paused_reason: String,
}

/// Pauses a receiver: its waiting deliveries are held, the tenant's webhook managers get a
/// notification, and `webhook.paused` goes to the tenant's other receivers (the fan-out skips
/// the paused one).
async fn pause(conn: &mut store::Conn, webhook: i64, last_failure: &str, now: OffsetDateTime) -> Result<(), Error> {
    let rows: Vec<PausedRow> = diesel::sql_query(
        "UPDATE webhooks
         SET paused_at = $2, updated_at = $2,
             paused_reason = consecutive_failures || ' consecutive failed deliveries; the last one ' || $3 || '.'
         WHERE id = $1 AND paused_at IS NULL
         RETURNING tenant_id, url, events, consecutive_failures, paused_reason",
    )
    .bind::<BigInt, _>(webhook)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(last_failure)
    .load(conn)
    .await?;
    let Some(row) = rows.into_iter().next() else { return Ok(()) };
    diesel::sql_query(
        "UPDATE webhook_deliveries SET state = 'held', next_attempt_at = NULL, updated_at = $2
         WHERE webhook_id = $1 AND state = 'pending'",
    )
    .bind::<BigInt, _>(webhook)
    .bind::<Timestamptz, _>(now)
    .execute(conn)
    .await?;
    let message = format!(
        "Webhook {webhook} ({}) was paused: {} New events are held for it. Fix the endpoint, then replay a \
         failed delivery or POST /webhooks/{webhook}/recover to resume it.",
        row.url, row.paused_reason
    );
    diesel::sql_query(
        "INSERT INTO webhook_notifications (tenant_id, webhook_id, kind, message, created_at)
         VALUES ($1, $2, 'webhook.paused', $3, $4)",
    )
    .bind::<BigInt, _>(row.tenant_id)
    .bind::<BigInt, _>(webhook)
    .bind::<Text, _>(&message)
    .bind::<Timestamptz, _>(now)
    .execute(conn)
    .await?;
    let payload = paused_payload(webhook, &row.url, &row.events, now, row.consecutive_failures, &row.paused_reason);
    store::outbox::emit(conn, TenantId(row.tenant_id), "webhook.paused", payload, now).await?;
    tracing::warn!(webhook, tenant = row.tenant_id, "webhook paused after consecutive failures");
    Ok(())
}

/// The payload of `webhook.paused`: never the receiver's headers or secret.
pub fn paused_payload(
    webhook: i64,
    url: &str,
    events: &[String],
    paused_at: OffsetDateTime,
    consecutive_failures: i32,
    reason: &str,
) -> Value {
    json!({
        "webhook": {
            "id": webhook,
            "url": url,
            "events": events,
            "status": "paused",
            "paused_at": paused_at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
            "consecutive_failures": consecutive_failures,
            "reason": reason,
        }
    })
}

/// Samples of the events this crate emits, by the code that emits them.
pub fn samples() -> Vec<(&'static str, Value)> {
    let at = crate::catalogue::SAMPLE_TIME;
    let events = ["order.received", "order.status_changed", "order.paid"].map(String::from);
    let reason = "50 consecutive failed deliveries; the last one answered with HTTP 503.";
    vec![("webhook.paused", paused_payload(17, "https://hooks.example.com/duka", &events, at, 50, reason))]
}

/// What `/metrics` shows of the deliveries waiting (read through the partial index of pending
/// rows, so its cost follows the backlog, not the log).
#[derive(Debug, Clone, Default, diesel::QueryableByName)]
pub struct Backlog {
    #[diesel(sql_type = BigInt)]
    pub pending: i64,
    /// Seconds the oldest due delivery has waited (0 when none).
    #[diesel(sql_type = diesel::sql_types::Double)]
    pub oldest_due_age_seconds: f64,
}

pub async fn backlog(conn: &mut store::Conn, now: OffsetDateTime) -> Result<Backlog, Error> {
    Ok(diesel::sql_query(
        "SELECT count(*) AS pending,
                COALESCE(EXTRACT(EPOCH FROM $1 - min(next_attempt_at) FILTER (WHERE next_attempt_at <= $1)), 0)::float8
                    AS oldest_due_age_seconds
         FROM webhook_deliveries WHERE state = 'pending'",
    )
    .bind::<Timestamptz, _>(now)
    .get_result(conn)
    .await?)
}
