//! The delivery loop. Deliveries are their own queue (`webhook_deliveries`): claimed in batches
//! ahead of need with `FOR UPDATE SKIP LOCKED` under a lease, attempted concurrently with a
//! bound per process and per receiver, and recorded in batches while the next attempts run. They
//! keep the job queue's guarantees (a short lease renewed three times per lease while a claim is
//! held, so a crashed process's claims come back within one lease; attempts are counted;
//! failures stay for inspection) with the webhook schedule instead of the queue's backoff, and
//! without a job row per delivery.

use kernel::state::{Event as _, Status as _};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use diesel::sql_types::{Array, BigInt, Bool, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Error, TenantId};
use serde_json::{Value, json};
use store::Prepare;
use time::OffsetDateTime;
use tokio::sync::{Notify, Semaphore, mpsc, watch};
use uuid::Uuid;

use crate::attempt::{self, Next, Outcome};
use crate::headers::Sealed;
use crate::receivers::LEGACY_HTTP_BEFORE;
use crate::status::{DeliveryEvent, DeliveryState};
use crate::{WebhookService, catalogue};

/// The channel the fan-out trigger notifies.
pub const CHANNEL: &str = "svc_webhooks";

/// Deliveries screened per statement.
const SCREEN_BATCH: usize = 500;

/// A delivery waiting for its event group's filter, with its receiver's filters.
#[derive(diesel::QueryableByName, Debug, Clone)]
struct ScreenRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = BigInt)]
    tenant_id: i64,
    #[diesel(sql_type = SqlUuid)]
    event_id: Uuid,
    #[diesel(sql_type = Text)]
    event: String,
    #[diesel(sql_type = Nullable<Jsonb>)]
    filters: Option<Value>,
}

/// A claimed delivery and its receiver, as the claim reads them; the event comes from the
/// outbox (`store::outbox::read`).
#[derive(diesel::QueryableByName, Debug, Clone)]
struct ClaimedRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = BigInt)]
    tenant_id: i64,
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
}

impl ClaimedRow {
    fn with_event(self, payload: Value, occurred_at: OffsetDateTime) -> Claimed {
        Claimed {
            id: self.id,
            webhook_id: self.webhook_id,
            event_id: self.event_id,
            event: self.event,
            attempts: self.attempts,
            url: self.url,
            secret: self.secret,
            headers: self.headers,
            url_changed_at: self.url_changed_at,
            consecutive_failures: self.consecutive_failures,
            payload,
            occurred_at,
        }
    }
}

/// A claimed delivery with what its attempt needs.
#[derive(Debug, Clone)]
struct Claimed {
    id: Uuid,
    webhook_id: i64,
    event_id: Uuid,
    event: String,
    attempts: i32,
    url: String,
    secret: String,
    headers: Value,
    url_changed_at: OffsetDateTime,
    consecutive_failures: i32,
    payload: Value,
    occurred_at: OffsetDateTime,
}

/// An attempt that ended, or (`outcome: None`) one given back unmade: at shutdown, or when the
/// answers seen here take its receiver to the pause.
#[derive(Debug)]
struct Finished {
    id: Uuid,
    webhook_id: i64,
    event: String,
    attempt: i32,
    /// The receiver's count of failures when the delivery was claimed.
    failures_before: i32,
    at: OffsetDateTime,
    outcome: Option<Outcome>,
}

impl Finished {
    fn unmade(claimed: &Claimed, at: OffsetDateTime) -> Self {
        Self {
            id: claimed.id,
            webhook_id: claimed.webhook_id,
            event: claimed.event.clone(),
            attempt: claimed.attempts,
            failures_before: claimed.consecutive_failures,
            at,
            outcome: None,
        }
    }
}

/// Claimed deliveries per process, as a multiple of the attempts in flight: the claim query and
/// the recording are paid once per batch, and the next batch is claimed while attempts run.
const PREFETCH: usize = 4;

/// A receiver's share of this process: its claimed, unrecorded deliveries, the permits that
/// bound its attempts in flight, and its run of failures as known here (the stored count at the
/// claim, moved by each answer as it arrives), so that no attempt starts that could take it past
/// the pause before the answers are recorded.
struct Gate {
    permits: Arc<Semaphore>,
    claimed: usize,
    streak: i32,
    in_flight: i32,
    /// An answer has moved `streak` here.
    answered: bool,
    /// Told when one of its attempts ends.
    ended: Arc<Notify>,
}

/// Whether a claimed delivery's attempt may start now.
enum Admission {
    Go,
    /// Not until an attempt in flight ends.
    Wait(tokio::sync::futures::OwnedNotified),
    /// Its receiver's answers reached the pause: given back, to be held with the others.
    GiveBack,
}

/// Runs deliveries as a pipeline: claim batches ahead, attempt with bounded concurrency (per
/// process and per receiver), record the answers in batches while the next attempts run. `run`
/// is the long-lived loop; `deliver_due` the one-shot tests use.
pub struct Deliverer {
    service: WebhookService,
    id: Uuid,
    /// Claims held here and not yet recorded: the ones whose lease `run` renews.
    held: std::sync::Mutex<std::collections::HashSet<Uuid>>,
    gates: std::sync::Mutex<HashMap<i64, Gate>>,
    /// Attempts in flight in this process.
    slots: Arc<Semaphore>,
    /// Set at shutdown: claimed deliveries not yet attempted are given back.
    stopping: AtomicBool,
}

impl Deliverer {
    pub fn new(service: WebhookService) -> Arc<Self> {
        let slots = Arc::new(Semaphore::new(service.config.concurrency));
        Arc::new(Self {
            service,
            id: Uuid::new_v4(),
            held: Default::default(),
            gates: Default::default(),
            slots,
            stopping: Default::default(),
        })
    }

    /// The most a receiver may have claimed here at once.
    fn receiver_share(&self) -> usize {
        self.service.config.per_receiver * PREFETCH
    }

    /// The receivers with claims held here, and how many each holds.
    fn held_here(&self) -> (Vec<i64>, Vec<i32>) {
        let gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        gates.iter().map(|(id, gate)| (*id, i32::try_from(gate.claimed).unwrap_or(i32::MAX))).unzip()
    }

    fn gate(&self, claimed: &Claimed) -> Arc<Semaphore> {
        let mut gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        let per_receiver = self.service.config.per_receiver;
        let gate = gates.entry(claimed.webhook_id).or_insert_with(|| Gate {
            permits: Arc::new(Semaphore::new(per_receiver)),
            claimed: 0,
            streak: 0,
            in_flight: 0,
            answered: false,
            ended: Arc::new(Notify::new()),
        });
        gate.claimed += 1;
        // another process's failures count too; answers not yet recorded are only known here
        gate.streak = gate.streak.max(claimed.consecutive_failures);
        gate.permits.clone()
    }

    /// At most the attempts that would reach the pause if every one failed are in flight for a
    /// receiver; once its answers here reached it, the rest are given back. A receiver whose
    /// stored count is at the pause already (before any answer here) has one attempt at a time,
    /// whose failure has the recording pause it.
    fn admit(&self, webhook: i64) -> Admission {
        let mut gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        let Some(gate) = gates.get_mut(&webhook) else { return Admission::Go };
        let ok = gate.streak + gate.in_flight < self.service.config.pause_after;
        if ok || (gate.in_flight == 0 && !gate.answered) {
            gate.in_flight += 1;
            Admission::Go
        } else if gate.in_flight > 0 {
            // made now, under the lock, so that the end it waits for cannot slip by
            Admission::Wait(gate.ended.clone().notified_owned())
        } else {
            Admission::GiveBack
        }
    }

    /// Counts an attempt's answer into its receiver's run of failures.
    fn answered(&self, finished: &Finished) {
        let mut gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        let Some(gate) = gates.get_mut(&finished.webhook_id) else { return };
        gate.in_flight -= 1;
        if let Some(outcome) = &finished.outcome {
            gate.answered = true;
            gate.streak = if outcome.succeeded() { 0 } else { gate.streak + 1 };
        }
        gate.ended.notify_waiters();
    }

    fn ungate(&self, webhook: i64) {
        let mut gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(gate) = gates.get_mut(&webhook) {
            gate.claimed -= 1;
            if gate.claimed == 0 {
                gates.remove(&webhook);
            }
        }
    }

    /// Claims up to `limit` due deliveries, counting what each receiver holds here already: up
    /// to its share, and for a failing receiver no more than would reach the pause if every one
    /// failed (one at a time once it is that close). A healthy receiver's claims may reach past
    /// the pause: `admit` lets no attempt start that could pass it, so a pause lands at fifty.
    ///
    /// Every step finds its rows by key or through the index of due rows, and the due rows are
    /// taken as that index or the table gives them (in due order, or nearly), not sorted: the
    /// queue's statistics always lag a burst (a fan-out of thousands looks like a handful to the
    /// planner), and a sort would read the whole backlog on every claim.
    async fn claim(&self, limit: usize) -> Result<Vec<Claimed>, Error> {
        let config = &self.service.config;
        let mut conn = self.service.system_conn().await?;
        while self.screen(&mut conn).await? == SCREEN_BATCH {}
        let now = self.service.clock.now();
        let pending = DeliveryState::Pending.sql();
        let (held_by, held) = self.held_here();
        let claimed = diesel::sql_query(format!(
            "WITH candidates AS (
                 -- due rows are pending ones (webhook_deliveries_due_when_pending)
                 SELECT id, webhook_id, next_attempt_at FROM webhook_deliveries
                 WHERE next_attempt_at <= $1 AND (locked_until IS NULL OR locked_until < $1)
                   AND webhook_id <> ALL (ARRAY(SELECT h FROM unnest($2::bigint[], $8::int[]) AS s (h, n) WHERE n >= $4))
                 LIMIT $3 * 2
             ), capped AS (
                 -- a failing receiver gets no more than the attempts that would pause it
                 SELECT c.id FROM (
                     SELECT id, webhook_id, next_attempt_at,
                            row_number() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, id) AS n
                     FROM candidates) c
                 JOIN webhooks w ON w.id = c.webhook_id
                 LEFT JOIN unnest($2::bigint[], $8::int[]) AS h (webhook_id, held) ON h.webhook_id = c.webhook_id
                 WHERE c.n <= CASE WHEN w.consecutive_failures = 0 THEN $4
                                   ELSE LEAST($4, GREATEST($7 - w.consecutive_failures, 1)) END
                              - COALESCE(h.held, 0)
                 ORDER BY c.next_attempt_at LIMIT $3
             ), locked AS (
                 SELECT d.id FROM webhook_deliveries d
                 WHERE d.id = ANY (ARRAY(SELECT id FROM capped))
                   AND d.state = {pending} AND (d.locked_until IS NULL OR d.locked_until < $1)
                 FOR UPDATE OF d SKIP LOCKED
             ), claimed AS (
                 UPDATE webhook_deliveries d
                 SET attempts = d.attempts + 1, locked_by = $5, locked_until = $6, updated_at = $1
                 WHERE d.id = ANY (ARRAY(SELECT id FROM locked))
                 RETURNING d.id, d.tenant_id, d.webhook_id, d.event_id, d.event, d.attempts
             )
             SELECT c.*, w.url, w.secret, w.headers, w.url_changed_at, w.consecutive_failures
             FROM claimed c JOIN webhooks w ON w.tenant_id = c.tenant_id AND w.id = c.webhook_id",
        ))
        .bind::<Timestamptz, _>(now)
        .bind::<Array<BigInt>, _>(held_by)
        .bind::<BigInt, _>(limit as i64)
        .bind::<BigInt, _>(self.receiver_share() as i64)
        .bind::<SqlUuid, _>(self.id)
        .bind::<Timestamptz, _>(now + config.lease)
        .bind::<Integer, _>(config.pause_after)
        .bind::<Array<Integer>, _>(held)
        .get_results::<ClaimedRow>(&mut conn)
        .await?;
        let keys: Vec<(TenantId, Uuid)> = claimed.iter().map(|c| (TenantId(c.tenant_id), c.event_id)).collect();
        let events: HashMap<Uuid, (Value, OffsetDateTime)> = store::outbox::read(&mut conn, &keys)
            .await?
            .into_iter()
            .map(|e| (e.id, (e.payload, e.occurred_at)))
            .collect();
        let claimed: Vec<Claimed> = claimed
            .into_iter()
            // one event may have several receivers' deliveries in the batch
            .filter_map(|row| match events.get(&row.event_id) {
                Some((payload, occurred_at)) => Some(row.with_event(payload.clone(), *occurred_at)),
                // the fan-out writes a delivery with its event, and events are kept
                None => {
                    tracing::error!(delivery = %row.id, event = %row.event_id, "a delivery's event is missing");
                    None
                }
            })
            .collect();
        // held here until recorded: their leases are renewed meanwhile
        self.held.lock().unwrap_or_else(|e| e.into_inner()).extend(claimed.iter().map(|c| c.id));
        Ok(claimed)
    }

    /// Passes a batch of deliveries the fan-out wrote as `screening` (their receiver has filters)
    /// through their event group's filter: one that passes becomes `pending`, due at its event's
    /// time (or `held` when the receiver is paused now), one that does not is deleted, as the
    /// SQL fan-out never wrote it before the filters moved into the owning domain's code.
    /// Answers how many it looked at. Idempotent: each change applies only to rows still
    /// `screening`, and the filter is a pure function of the event and the receiver's filters.
    async fn screen(&self, conn: &mut store::Conn) -> Result<usize, Error> {
        let screening = DeliveryState::Screening.sql();
        let rows: Vec<ScreenRow> = diesel::sql_query(format!(
            "SELECT d.id, d.tenant_id, d.event_id, d.event, w.filters
             FROM webhook_deliveries d JOIN webhooks w ON w.tenant_id = d.tenant_id AND w.id = d.webhook_id
             WHERE d.state = {screening} ORDER BY d.created_at LIMIT $1"
        ))
        .bind::<BigInt, _>(SCREEN_BATCH as i64)
        .load(conn)
        .await?;
        if rows.is_empty() {
            return Ok(0);
        }
        let keys: Vec<(TenantId, Uuid)> = rows.iter().map(|r| (TenantId(r.tenant_id), r.event_id)).collect();
        let events: HashMap<Uuid, Value> =
            store::outbox::read(conn, &keys).await?.into_iter().map(|e| (e.id, e.payload)).collect();
        let catalogue = &self.service.catalogue;
        let (admitted, refused): (Vec<&ScreenRow>, Vec<&ScreenRow>) = rows.iter().partition(|row| {
            let filters = row.filters.as_ref().unwrap_or(&Value::Null);
            events.get(&row.event_id).is_some_and(|payload| catalogue.admits(&row.event, filters, payload))
        });
        let ids = |rows: Vec<&ScreenRow>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
        let (pending, held) = (DeliveryEvent::Admit.target().sql(), DeliveryEvent::Hold.target().sql());
        diesel::sql_query(format!(
            "WITH refused AS (
                 DELETE FROM webhook_deliveries WHERE id = ANY ($1) AND state = {screening}
             )
             UPDATE webhook_deliveries d
             SET state = CASE WHEN w.paused_at IS NULL THEN {pending} ELSE {held} END,
                 next_attempt_at = CASE WHEN w.paused_at IS NULL THEN d.created_at END,
                 updated_at = $3
             FROM webhooks w
             WHERE d.id = ANY ($2) AND d.state = {screening} AND w.tenant_id = d.tenant_id AND w.id = d.webhook_id"
        ))
        .bind::<Array<SqlUuid>, _>(ids(refused))
        .bind::<Array<SqlUuid>, _>(ids(admitted))
        .bind::<Timestamptz, _>(self.service.clock.now())
        .execute(conn)
        .await?;
        Ok(rows.len())
    }

    /// Renews the lease of every claim held here; answers how many were renewed.
    pub async fn renew(&self) -> Result<usize, Error> {
        let held: Vec<Uuid> = self.held.lock().unwrap_or_else(|e| e.into_inner()).iter().copied().collect();
        if held.is_empty() {
            return Ok(0);
        }
        let now = self.service.clock.now();
        let mut conn = self.service.system_conn().await?;
        let renewed = diesel::sql_query(
            "UPDATE webhook_deliveries SET locked_until = $3
             WHERE id = ANY ($1) AND locked_by = $2 AND state = $4 AND locked_until < $3",
        )
        .bind::<Array<SqlUuid>, _>(held)
        .bind::<SqlUuid, _>(self.id)
        .bind::<Timestamptz, _>(now + self.service.config.lease)
        .bind::<Text, _>(DeliveryState::Pending.as_str())
        .execute(&mut conn)
        .await?;
        Ok(renewed)
    }

    /// Renews the held claims three times per lease until the task is aborted.
    async fn keep_renewing(self: Arc<Self>) {
        let interval = store::workers::heartbeat_interval(self.service.config.lease);
        loop {
            tokio::time::sleep(interval).await;
            if let Err(error) = self.renew().await {
                tracing::warn!(%error, "renewing the leases of claimed webhook deliveries failed");
            }
        }
    }

    /// Starts the attempt of one claimed delivery; its end goes to `done`.
    fn start(self: &Arc<Self>, claimed: Claimed, done: mpsc::UnboundedSender<Finished>) {
        let gate = self.gate(&claimed);
        let this = self.clone();
        tokio::spawn(async move {
            // the receiver's permit first: a delivery waiting for a slow receiver holds no slot
            let _mine = gate.acquire_owned().await;
            let finished = loop {
                match this.admit(claimed.webhook_id) {
                    Admission::Go => {
                        let _slot = this.slots.clone().acquire_owned().await;
                        let finished = this.attempt(claimed).await;
                        this.answered(&finished);
                        break finished;
                    }
                    Admission::Wait(ended) => ended.await,
                    Admission::GiveBack => break Finished::unmade(&claimed, this.service.clock.now()),
                }
            };
            let _ = done.send(finished);
        });
    }

    async fn attempt(&self, claimed: Claimed) -> Finished {
        let service = &self.service;
        let at = service.clock.now();
        let mut finished = Finished::unmade(&claimed, at);
        if AtomicBool::load(&self.stopping, Ordering::Relaxed) {
            return finished;
        }
        let sealed: Vec<Sealed> = serde_json::from_value(claimed.headers).unwrap_or_default();
        let legacy_http = claimed.url_changed_at < LEGACY_HTTP_BEFORE;
        let target = crate::secrets::target(
            &service.keyring,
            claimed.webhook_id,
            claimed.url,
            &claimed.secret,
            &sealed,
            legacy_http,
        );
        let body = catalogue::envelope(&claimed.event, claimed.event_id, claimed.occurred_at, claimed.payload, false);
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let (delivery_id, event_id) = (claimed.id.to_string(), claimed.event_id.to_string());
        let delivery =
            attempt::Delivery { delivery_id: &delivery_id, event: &claimed.event, event_id: &event_id, body: &body };
        let config = &service.config;
        finished.outcome = Some(match target {
            Ok(target) => {
                attempt::send(&service.client, &config.policy, &target, &delivery, at, config.excerpt_limit).await
            }
            // not sent without them (the headers are often the receiver's credentials)
            Err(reason) => Outcome::unsent(reason),
        });
        finished
    }

    /// Records what a batch of attempts came to, in one transaction: the attempts' log, each
    /// delivery's next state, the receivers' failure counts, any pause they cause, and the
    /// release of claims given back unmade (held with the rest when their receiver pauses).
    ///
    /// While the database is away the batch waits here, still held (so renewed once renewals
    /// get through), and is written as soon as it is back; only after a lease does it give up,
    /// and the deliveries come back with their claims.
    async fn record(&self, finished: Vec<Finished>) -> Result<(), Error> {
        let written = store::persist(self.service.config.lease.unsigned_abs(), || self.write(&finished)).await;
        // only now: until the answers are stored, the next claim must count them as held here
        for done in &finished {
            self.ungate(done.webhook_id);
        }
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        for done in &finished {
            held.remove(&done.id);
        }
        written
    }

    async fn write(&self, finished: &[Finished]) -> Result<(), Error> {
        let (finished, unmade): (Vec<&Finished>, Vec<&Finished>) = finished.iter().partition(|f| f.outcome.is_some());
        let service = &self.service;
        let mut conn = service.system_conn().await?;
        let unmade: Vec<Uuid> = unmade.iter().map(|f| f.id).collect();
        let now = service.clock.now();
        let mut deliveries = Rows::default();
        // per receiver, in the order the attempts ended
        let mut counts: Vec<Count> = Vec::new();
        for done in &finished {
            let Some(outcome) = &done.outcome else { continue };
            let next = attempt::next(catalogue::retry_of(&done.event), done.attempt, outcome, attempt::jitter());
            let (event, next_at) = match next {
                Next::Delivered => (DeliveryEvent::Deliver, None),
                Next::RetryAfter(wait) => (DeliveryEvent::Retry, Some(done.at + wait)),
                Next::Failed => (DeliveryEvent::Fail, None),
            };
            // every recorded attempt leaves a claimed, so pending, delivery
            let state = DeliveryState::Pending.apply(event).map_err(Error::internal)?;
            deliveries.push(done, outcome, state, next_at);
            let count = match counts.iter().position(|c| c.webhook == done.webhook_id) {
                Some(i) => &mut counts[i],
                None => {
                    counts.push(Count { webhook: done.webhook_id, before: done.failures_before, ..Count::default() });
                    counts.last_mut().expect("just pushed")
                }
            };
            if outcome.succeeded() {
                (count.reset, count.tail) = (true, 0);
            } else {
                count.tail += 1;
                count.last_failure = Some(outcome.describe());
            }
        }
        // nothing to count when a receiver that had no failures only succeeded
        counts.retain(|c| !(c.reset && c.tail == 0 && c.before == 0));
        let me = self.id;
        let pause_after = service.config.pause_after;
        // The common case, successes of healthy receivers, is one statement: atomic as it is.
        if counts.is_empty() && unmade.is_empty() {
            return deliveries.write(&mut conn, me, now).await;
        }
        conn.transaction::<_, Error, _>(async |conn| {
            let to_pause =
                if counts.is_empty() { Vec::new() } else { count_failures(conn, &counts, pause_after, now).await? };
            for webhook in to_pause {
                let last = counts.iter().find(|c| c.webhook == webhook).and_then(|c| c.last_failure.as_deref());
                pause(conn, webhook, last.unwrap_or("no answer"), now).await?;
            }
            if !deliveries.ids.is_empty() {
                deliveries.write(conn, me, now).await?;
            }
            release(conn, me, unmade).await
        })
        .await
    }

    /// Attempts everything due now, as many at once as the configuration allows, and says how
    /// many attempts were made. Tests drive deliveries with it.
    pub async fn deliver_due(self: &Arc<Self>) -> Result<usize, Error> {
        let mut total = 0;
        loop {
            let claimed = self.claim(self.service.config.concurrency * PREFETCH).await?;
            if claimed.is_empty() {
                return Ok(total);
            }
            total += claimed.len();
            let (done, mut ended) = mpsc::unbounded_channel();
            for c in claimed {
                self.start(c, done.clone());
            }
            drop(done);
            let mut finished = Vec::new();
            while let Some(f) = ended.recv().await {
                finished.push(f);
            }
            self.record(finished).await?;
        }
    }

    /// Runs until `shutdown` turns true. Claims a batch whenever fewer than half the prefetch
    /// are claimed and unrecorded, again at once while claims find deliveries; wakes on the fan-out's notifications (when `listen_url` is
    /// given), on recorded batches, or by polling. A recorder task writes what attempts came to,
    /// batch by batch, while the next attempts run. At shutdown, attempts under way finish
    /// (within `shutdown_grace`) and are recorded, and claims not yet attempted are released.
    pub async fn run(self: Arc<Self>, listen_url: Option<String>, mut shutdown: watch::Receiver<bool>) {
        let wake = Arc::new(Notify::new());
        let listener = listen_url.map(|url| tokio::spawn(store::jobs::listen(url, CHANNEL, wake.clone())));
        let config = self.service.config.clone();
        let prefetch = config.concurrency * PREFETCH;
        let outstanding = Arc::new(AtomicUsize::new(0));
        let (done, ended) = mpsc::unbounded_channel();
        let recorder = tokio::spawn(self.clone().recorder(ended, outstanding.clone(), wake.clone()));
        let renewing = tokio::spawn(self.clone().keep_renewing());
        while !*shutdown.borrow() {
            let claimed_now = AtomicUsize::load(&outstanding, Ordering::Acquire);
            let mut more = false;
            if claimed_now <= prefetch / 2 {
                let room = prefetch - claimed_now;
                match self.claim(room).await {
                    Ok(claimed) => {
                        // more may be due: a claim stops at each receiver's cap
                        more = !claimed.is_empty();
                        outstanding.fetch_add(claimed.len(), Ordering::AcqRel);
                        for c in claimed {
                            self.start(c, done.clone());
                        }
                    }
                    Err(error) => tracing::error!(%error, "claiming webhook deliveries failed"),
                }
            }
            if more {
                continue;
            }
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(config.poll_interval) => {}
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
        self.stopping.store(true, Ordering::Relaxed);
        drop(done);
        // every attempt ends within the request timeout; claims not started give themselves back
        let grace = config.timeout + std::time::Duration::from_secs(5);
        if tokio::time::timeout(grace, recorder).await.is_err() {
            tracing::warn!("webhook attempts still running at shutdown; their claims come back after the lease");
        }
        renewing.abort();
    }

    /// Records ended attempts batch by batch (whatever has arrived, up to a bound), and wakes the
    /// claiming loop as room frees up.
    async fn recorder(
        self: Arc<Self>,
        mut ended: mpsc::UnboundedReceiver<Finished>,
        outstanding: Arc<AtomicUsize>,
        wake: Arc<Notify>,
    ) {
        const MOST: usize = 512;
        while let Some(first) = ended.recv().await {
            let mut batch = vec![first];
            while batch.len() < MOST
                && let Ok(next) = ended.try_recv()
            {
                batch.push(next);
            }
            let n = batch.len();
            if let Err(error) = self.record(batch).await {
                tracing::error!(%error, "recording webhook attempts failed; their claims come back after the lease");
            }
            outstanding.fetch_sub(n, Ordering::AcqRel);
            wake.notify_one();
        }
    }
}

/// Gives claims back unmade: due again at once, the claim not counted as an attempt.
async fn release(conn: &mut store::Conn, me: Uuid, ids: Vec<Uuid>) -> Result<(), Error> {
    if ids.is_empty() {
        return Ok(());
    }
    diesel::sql_query(
        "UPDATE webhook_deliveries SET locked_by = NULL, locked_until = NULL, attempts = attempts - 1
         WHERE id = ANY ($1) AND locked_by = $2",
    )
    .bind::<Array<SqlUuid>, _>(ids)
    .bind::<SqlUuid, _>(me)
    .execute(conn)
    .await?;
    Ok(())
}

/// The columns of a batch of recorded attempts.
#[derive(Default)]
struct Rows {
    ids: Vec<Uuid>,
    webhooks: Vec<i64>,
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
    fn push(&mut self, done: &Finished, outcome: &Outcome, state: DeliveryState, next_at: Option<OffsetDateTime>) {
        self.ids.push(done.id);
        self.webhooks.push(done.webhook_id);
        self.states.push(state.as_str());
        self.next_at.push(next_at);
        self.numbers.push(done.attempt);
        self.at.push(done.at);
        self.statuses.push(outcome.status.map(i32::from));
        self.durations.push(outcome.duration_ms);
        self.errors.push(outcome.error.clone());
        self.excerpts.push(outcome.response_excerpt.clone());
    }

    /// One statement: the deliveries still claimed by this process move on (a retry of a paused
    /// receiver is held instead), and every attempt joins the log.
    async fn write(self, conn: &mut store::Conn, me: Uuid, now: OffsetDateTime) -> Result<(), Error> {
        diesel::sql_query(
            "WITH r AS (
                 SELECT * FROM unnest($1::uuid[], $14::bigint[], $2::text[], $3::timestamptz[], $4::int[],
                                      $5::timestamptz[], $6::int[], $7::int[], $8::text[], $9::text[])
                     AS r (id, webhook_id, state, next_at, number, at, status, duration_ms, error, excerpt)
             ), paused AS (
                 SELECT id FROM webhooks WHERE id = ANY ($14) AND paused_at IS NOT NULL
             ), moved AS (
                 -- the rows by key alone (see `claim`)
                 UPDATE webhook_deliveries d
                 SET state = CASE WHEN r.state = $12 AND r.webhook_id IN (SELECT id FROM paused) THEN $13
                                  ELSE r.state END,
                     next_attempt_at = CASE WHEN r.webhook_id IN (SELECT id FROM paused) THEN NULL ELSE r.next_at END,
                     locked_by = NULL, locked_until = NULL, last_status = r.status,
                     last_error = r.error, updated_at = $11
                 FROM r
                 WHERE d.id = ANY ($1) AND d.id = r.id AND d.locked_by = $10
             )
             -- the attempts of deliveries that still exist (a receiver deleted meanwhile took its own)
             INSERT INTO webhook_attempts (tenant_id, delivery_id, number, attempted_at, status, duration_ms, error,
                                           response_excerpt)
             SELECT d.tenant_id, r.id, r.number, r.at, r.status, r.duration_ms, r.error, r.excerpt
             FROM r JOIN webhook_deliveries d ON d.id = ANY ($1) AND d.id = r.id
             ON CONFLICT (delivery_id, number, tenant_id) DO NOTHING",
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
        .bind::<Text, _>(DeliveryState::Pending.as_str())
        .bind::<Text, _>(DeliveryEvent::Hold.target().as_str())
        .bind::<Array<BigInt>, _>(self.webhooks)
        .prepared()
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
        "UPDATE webhook_deliveries SET state = $3, next_attempt_at = NULL, updated_at = $2
         WHERE webhook_id = $1 AND state = $4",
    )
    .bind::<BigInt, _>(webhook)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(DeliveryEvent::Hold.target().as_str())
    .bind::<Text, _>(DeliveryState::Pending.as_str())
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
            "status": crate::status::WebhookStatus::Paused.as_str(),
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

/// What `/metrics` shows of the deliveries waiting (read through the index of due rows, so its
/// cost follows the backlog, not the log).
#[derive(Debug, Clone, Default, diesel::QueryableByName)]
pub struct Backlog {
    #[diesel(sql_type = BigInt)]
    pub pending: i64,
    /// Seconds the oldest due delivery has waited (0 when none).
    #[diesel(sql_type = diesel::sql_types::Double)]
    pub oldest_due_age_seconds: f64,
}

pub async fn backlog(conn: &mut store::Conn, now: OffsetDateTime) -> Result<Backlog, Error> {
    // pending rows are those with a next attempt (webhook_deliveries_due_when_pending)
    Ok(diesel::sql_query(
        "SELECT count(*) AS pending,
                COALESCE(EXTRACT(EPOCH FROM $1 - min(next_attempt_at) FILTER (WHERE next_attempt_at <= $1)), 0)::float8
                    AS oldest_due_age_seconds
         FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL",
    )
    .bind::<Timestamptz, _>(now)
    .get_result(conn)
    .await?)
}
