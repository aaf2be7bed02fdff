//! Dispatch: claim queued messages within the channel's throughput, hand them to the provider,
//! record what it said. Used by the send job and by the inline attempt of a small send.
//!
//! A message is never handed to a provider twice by us: claiming is an atomic `queued` ->
//! `processing` move marked with the claiming process, and a message found still `processing`
//! once that process's heartbeat stopped, or after `stale_after` in any case (its sender died
//! during the provider call, outcome unknown), is failed, not resent (docs/api.md).

use kernel::state::{Event as _, Status as _};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Integer, Nullable, Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use futures_util::StreamExt;
use kernel::{Error, TenantId};
use providers::{ReceiptStatus, SendError, SendOutcome};
use serde::{Deserialize, Serialize};
use store::Prepare;
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::channels::Channel;
use crate::messages::Message;
use crate::receipts::{ApplyReceipts, CheckDelivery, ReceiptItem};
use crate::send::OPTED_OUT;
use crate::status::{MessageEvent, MessageStatus};
use crate::{MessagingService, blacklist, campaigns, channels};

/// Sends a chunk of messages (written by a send or a campaign batch).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SendMessages {
    #[serde(default = "crate::service::no_tenant")]
    pub tenant_id: TenantId,
    pub ids: Vec<i64>,
}

impl Job for SendMessages {
    const NAME: &'static str = "messaging.send";
    // Its messages are paid for and waiting: keep trying through a long outage (the backoff
    // reaches an hour; 30 attempts span about a day) rather than leave them queued for good.
    const MAX_ATTEMPTS: i32 = 30;
    type State = MessagingService;

    async fn run(self, state: Arc<MessagingService>, ctx: JobContext) -> Result<(), JobError> {
        let tenant = crate::service::job_tenant(self.tenant_id, &ctx)?;
        if let Some(later) = state.dispatch(tenant, &self.ids).await? {
            let mut conn = store::connect(&ctx.pool, tenant).await?;
            let options = Enqueue { tenant_id: Some(tenant), run_at: Some(later.at), ..Default::default() };
            store::jobs::enqueue(&mut conn, &SendMessages { tenant_id: tenant, ids: later.ids }, options).await?;
        }
        Ok(())
    }
}

/// Messages a dispatch left for later: scheduled, over the channel's throughput, or still
/// being sent by someone else.
#[derive(Debug, Clone)]
pub struct Later {
    pub ids: Vec<i64>,
    pub at: OffsetDateTime,
}

/// The position of a message in the statement's array of ids (`$1`), for updates that give each
/// row its own values: rows are found by key (`m.id = ANY($1)`) and their values read by
/// position rather than by joining the arrays, because a join is planned from the table's
/// statistics, and those lag a burst (a campaign filling a fresh table): the planner then loops
/// over the arrays once per row (a 500-row update took 1.5 s; docs/benchmarks.md, "Issue 24").
pub(crate) const BY_POSITION: &str = "array_position($1::bigint[], m.id)";

/// How long messages of a disabled channel wait before looking again.
const DISABLED_RETRY: Duration = Duration::minutes(1);

const OUTCOME_UNKNOWN: &str =
    "Send outcome unknown: the sender stopped during the provider call; not resent, to avoid a duplicate (refunded).";

#[derive(QueryableByName)]
struct Pending {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    tenant_channel_id: Option<i64>,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    scheduled_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Timestamptz)]
    updated_at: OffsetDateTime,
    #[diesel(sql_type = Nullable<diesel::sql_types::Uuid>)]
    claimed_by: Option<Uuid>,
}

#[derive(QueryableByName)]
struct Granted {
    #[diesel(sql_type = Integer)]
    granted: i32,
}

fn std_duration(d: std::time::Duration) -> Duration {
    Duration::try_from(d).unwrap_or(Duration::MAX)
}

impl MessagingService {
    /// Dispatches what is due among `ids` (messages of `tenant`); answers what is left for later.
    pub async fn dispatch(&self, tenant: TenantId, ids: &[i64]) -> Result<Option<Later>, Error> {
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        // Messages are found by id (the primary key) and their tenant checked, `tenant_id + 0`
        // keeping the planner off the tenant-led indexes: with statistics older than the rows
        // (a fresh table, a tenant new since the last ANALYZE) those look as cheap and would
        // scan the tenant's whole history for each message (docs/architecture.md, "Tenancy").
        let pending: Vec<Pending> = diesel::sql_query(
            "SELECT id, tenant_channel_id, status, scheduled_at, updated_at, claimed_by FROM messages
             WHERE id = ANY($1) AND tenant_id + 0 = $2 AND status = ANY($3) ORDER BY id",
        )
        .bind::<Array<BigInt>, _>(ids)
        .bind::<BigInt, _>(tenant)
        .bind::<Array<Text>, _>(vec![MessageStatus::Queued.as_str(), MessageStatus::Processing.as_str()])
        .prepared()
        .get_results(&mut conn)
        .await?;
        let doubt = self.doubt(&mut conn, &pending, now).await?;
        let stale: Vec<i64> =
            pending.iter().filter(|p| doubt.get(&p.id).is_some_and(|d| d.is_none())).map(|p| p.id).collect();
        // Left `processing` by a sender that died: failed (never resent), refunded (most such
        // messages never reached the provider), counted, all in one transaction.
        if !stale.is_empty() {
            conn.transaction(async |conn| {
                let stale: Vec<Message> = diesel::sql_query(format!(
                    "UPDATE messages SET status = $5, error_message = $1, updated_at = $2
                     WHERE id = ANY($3) AND tenant_id + 0 = $4 AND status = ANY($6) RETURNING {}",
                    crate::messages::columns("")
                ))
                .bind::<Text, _>(OUTCOME_UNKNOWN)
                .bind::<Timestamptz, _>(now)
                .bind::<Array<BigInt>, _>(&stale)
                .bind::<BigInt, _>(tenant)
                .bind::<Text, _>(MessageEvent::Refuse.target().as_str())
                .bind::<Array<Text>, _>(vec![MessageStatus::Processing.as_str()])
                .prepared()
                .get_results(conn)
                .await?;
                if !stale.is_empty() {
                    let refund: i64 = stale.iter().map(|m| m.price_minor).sum();
                    let note = format!("Refund of {} message(s) whose send outcome is unknown", stale.len());
                    let changed: Vec<(Message, Delta)> = stale.into_iter().map(|m| (m, Delta::Failed)).collect();
                    settle(conn, &changed, now).await?;
                    accounts::wallet::refund(conn, tenant, refund, &note).await?;
                }
                Ok::<_, Error>(())
            })
            .await?;
        }
        let mut later = Vec::new();
        let mut later_at: Option<OffsetDateTime> = None;
        let mut defer = |id: i64, at: OffsetDateTime, later: &mut Vec<i64>| {
            later.push(id);
            later_at = Some(later_at.map_or(at, |l| l.min(at)));
        };
        let mut by_channel: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        for p in pending {
            match (MessageStatus::parse(&p.status), p.scheduled_at, p.tenant_channel_id) {
                // failed just now, as in doubt
                (Some(MessageStatus::Processing), _, _) if stale.contains(&p.id) => {}
                // someone else is sending it; look again once it would be in doubt
                (Some(MessageStatus::Processing), _, _) => {
                    let at = doubt.get(&p.id).copied().flatten().unwrap_or(now + Duration::SECOND);
                    defer(p.id, at, &mut later);
                }
                (_, Some(at), _) if at > now => defer(p.id, at, &mut later),
                (_, _, Some(channel)) => by_channel.entry(channel).or_default().push(p.id),
                (_, _, None) => tracing::error!(message = p.id, "a queued message without a channel"),
            }
        }
        let next_second = now.replace_nanosecond(0).unwrap_or(now) + Duration::SECOND;
        drop(conn);
        for (channel_id, ids) in by_channel {
            let channel = channels::get(&mut *self.conn(tenant).await?, tenant, channel_id).await?;
            if channel.status != "active" {
                // A disabled channel sends nothing; its messages wait for it to come back.
                for id in &ids {
                    defer(*id, now + DISABLED_RETRY, &mut later);
                }
                continue;
            }
            // Its provider hangs (a call timed out lately): the messages wait for it here, and
            // the worker goes on with other channels' jobs.
            if let Some(left) = self.gateways.stall_left(channel.id) {
                for id in &ids {
                    defer(*id, now + std_duration(left), &mut later);
                }
                continue;
            }
            let sent = self.send_on(&channel, &ids, now, Consent::Recheck).await?;
            for id in sent.deferred {
                defer(id, next_second, &mut later);
            }
        }
        Ok(later_at.map(|at| Later { ids: later, at }))
    }

    /// For each `processing` message among `pending`: `None` when its send is in doubt now
    /// (its holder's heartbeat stopped, or it has been processing for `stale_after`), else when
    /// it would be. Queued messages are not in the answer.
    async fn doubt(
        &self,
        conn: &mut store::Conn,
        pending: &[Pending],
        now: OffsetDateTime,
    ) -> Result<HashMap<i64, Option<OffsetDateTime>>, Error> {
        let stale_after = std_duration(self.config.stale_after);
        let dead_after = std_duration(self.config.dead_after);
        let processing: Vec<&Pending> =
            pending.iter().filter(|p| p.status == MessageStatus::Processing.as_str()).collect();
        let mut holders: Vec<Uuid> = processing.iter().filter_map(|p| p.claimed_by).collect();
        holders.sort_unstable();
        holders.dedup();
        let seen = store::workers::last_seen(conn, &holders).await?;
        Ok(processing
            .into_iter()
            .map(|p| {
                let by_age = p.updated_at + stale_after;
                let at = match p.claimed_by {
                    None => Some(by_age),
                    Some(holder) => match seen.get(&holder) {
                        // stopped (its row removed at a clean stop) or never kept a heartbeat
                        None => None,
                        Some(&seen) if store::workers::is_dead(Some(seen), now, dead_after) => None,
                        // a second past the moment it would count as dead, so the look is not early
                        Some(&seen) => Some(by_age.min(seen + dead_after + Duration::SECOND)),
                    },
                };
                (p.id, at.filter(|&at| at >= now))
            })
            .collect())
    }

    /// The inline attempt of a send just written: its messages are queued on `channel` and were
    /// checked against the blacklist a moment ago. Answers the messages as they now are (those
    /// it touched) and what the channel's throughput held back.
    pub(crate) async fn dispatch_fresh(
        &self,
        channel: &Channel,
        ids: &[i64],
    ) -> Result<(Vec<Message>, Option<Later>), Error> {
        let now = self.clock.now();
        let sent = self.send_on(channel, ids, now, Consent::Checked).await?;
        let next_second = now.replace_nanosecond(0).unwrap_or(now) + Duration::SECOND;
        let later = (!sent.deferred.is_empty()).then_some(Later { ids: sent.deferred, at: next_second });
        Ok((sent.recorded, later))
    }

    /// Claims what the channel's throughput allows of `ids` this second, hands it to the
    /// provider and records the answers.
    async fn send_on(
        &self,
        channel: &Channel,
        ids: &[i64],
        now: OffsetDateTime,
        consent: Consent,
    ) -> Result<Sent, Error> {
        let tenant = TenantId(channel.tenant_id);
        let (claimed, deferred) = {
            let mut conn = self.conn(tenant).await?;
            let granted = self.take(&mut conn, channel, ids.len(), now).await?;
            let claimed = claim(&mut conn, tenant, &ids[..granted], now, self.config.process).await?;
            // Granted but not claimed: another sender holds them, or they moved on. Looking
            // again later costs little and keeps them from being lost if that sender rolls back.
            let taken: std::collections::HashSet<i64> = claimed.iter().map(|m| m.id).collect();
            let mut deferred: Vec<i64> = ids[..granted].iter().copied().filter(|id| !taken.contains(id)).collect();
            deferred.extend_from_slice(&ids[granted..]);
            (claimed, deferred)
        };
        if claimed.is_empty() {
            return Ok(Sent { recorded: Vec::new(), deferred });
        }
        // The consent ledger applies at sending time too: a number that opted out after its
        // message was written is not sent to. (It is the SMS ledger: on chat, the customer
        // blocks the business in the app instead.)
        let consent = if channel.kind == "chat" { Consent::Checked } else { consent };
        let (claimed, opted_out) = match consent {
            Consent::Checked => (claimed, Vec::new()),
            Consent::Recheck => {
                let mut conn = self.conn(tenant).await?;
                let numbers: Vec<String> = claimed.iter().map(|m| m.recipient.clone()).collect();
                let listed = blacklist::listed(&mut conn, tenant, &numbers).await?;
                claimed.into_iter().partition::<Vec<_>, _>(|m| !listed.contains(&m.recipient))
            }
        };
        // No connection is held while the provider answers.
        let mut results = self.hand_over(channel, claimed).await;
        results.extend(opted_out.into_iter().map(|m| (m, Answer::OptedOut)));
        let recorded = self.record_with_retries(channel, results).await?;
        Ok(Sent { recorded, deferred })
    }

    /// Sends allowed for `channel` this second, out of `want`.
    async fn take(
        &self,
        conn: &mut store::Conn,
        channel: &Channel,
        want: usize,
        now: OffsetDateTime,
    ) -> Result<usize, Error> {
        let second = now.replace_nanosecond(0).unwrap_or(now);
        let granted: Granted = diesel::sql_query("SELECT channel_take($1, $2, $3, $4, $5) AS granted")
            .bind::<BigInt, _>(channel.tenant_id)
            .bind::<BigInt, _>(channel.id)
            .bind::<Timestamptz, _>(second)
            .bind::<Integer, _>(i32::try_from(want).unwrap_or(i32::MAX))
            .bind::<Integer, _>(channel.throughput_per_second)
            .prepared()
            .get_result(conn)
            .await?;
        Ok(usize::try_from(granted.granted).unwrap_or(0).min(want))
    }

    /// Calls the provider for each claimed message, a bounded number at a time.
    async fn hand_over(&self, channel: &Channel, claimed: Vec<Message>) -> Vec<(Message, Answer)> {
        let provider = match self.gateways.provider(channel) {
            Ok(provider) => provider,
            Err(error) => {
                let reason = SendError::Transport(error.message.clone());
                return claimed.into_iter().map(|m| (m, Answer::Provider(Err(reason.clone())))).collect();
            }
        };
        futures_util::stream::iter(claimed)
            .map(|m| {
                let provider = provider.clone();
                async move {
                    let outcome = provider.send(&m).await;
                    if matches!(outcome, Err(SendError::Timeout)) {
                        self.gateways.stalled(channel.id);
                    }
                    (m, Answer::Provider(outcome))
                }
            })
            .buffer_unordered(self.config.send_concurrency.max(1))
            .collect()
            .await
    }

    /// What the provider said is known only here: a failing write (the database away) is tried
    /// again for up to a lease, so the answers are recorded as soon as it is back; only then
    /// are the messages left to the stale sweep (failed as "outcome unknown").
    async fn record_with_retries(
        &self,
        channel: &Channel,
        results: Vec<(Message, Answer)>,
    ) -> Result<Vec<Message>, Error> {
        store::persist(self.config.dead_after, || async {
            let mut conn = self.conn(TenantId(channel.tenant_id)).await?;
            self.record(&mut conn, channel, results.clone()).await
        })
        .await
    }

    /// Writes the provider's answers: `sent` or `failed` (refunded), their events, campaign
    /// counts, and the receipt and overdue-check jobs; all in one transaction.
    async fn record(
        &self,
        conn: &mut store::Conn,
        channel: &Channel,
        results: Vec<(Message, Answer)>,
    ) -> Result<Vec<Message>, Error> {
        let now = self.clock.now();
        let (mut ok_ids, mut gids, mut costs) = (Vec::new(), Vec::new(), Vec::new());
        let (mut bad_ids, mut reasons) = (Vec::new(), Vec::new());
        let mut receipts: BTreeMap<std::time::Duration, Vec<ReceiptItem>> = BTreeMap::new();
        let mut unannounced = std::collections::HashSet::new();
        for (message, outcome) in results {
            match outcome {
                Answer::Provider(Ok(SendOutcome::Accepted { provider_message_id, cost, receipts: announced })) => {
                    let announced: Vec<_> =
                        announced.into_iter().filter(|r| r.status != ReceiptStatus::Pending).collect();
                    // No receipt announced: look for one when it is overdue.
                    if announced.is_empty() {
                        unannounced.insert(message.id);
                    }
                    for receipt in announced {
                        let item = ReceiptItem::new(provider_message_id.clone(), &receipt.status);
                        receipts.entry(receipt.after).or_default().push(item);
                    }
                    ok_ids.push(message.id);
                    gids.push(provider_message_id);
                    costs.push(cost);
                }
                Answer::Provider(Ok(SendOutcome::Refused { reason })) => {
                    bad_ids.push(message.id);
                    reasons.push(format!("Refused by the provider: {reason}"));
                }
                Answer::Provider(Err(error)) => {
                    bad_ids.push(message.id);
                    reasons.push(format!("Send failed: {error}"));
                }
                Answer::OptedOut => {
                    bad_ids.push(message.id);
                    reasons.push(OPTED_OUT.to_owned());
                }
            }
        }
        let receipt_wait = std_duration(self.config.receipt_wait);
        let channel_id = channel.id;
        let tenant = TenantId(channel.tenant_id);
        conn.transaction(async |conn| {
            let sent: Vec<Message> = if ok_ids.is_empty() {
                Vec::new()
            } else {
                // each row's values by its position in the arrays (see `BY_POSITION`)
                diesel::sql_query(format!(
                    "UPDATE messages m SET status = $7, gateway_message_id = ($2::text[])[{BY_POSITION}],
                        provider_cost = ($3::text[])[{BY_POSITION}], sent_at = $4, updated_at = $4
                 WHERE m.id = ANY($1) AND m.tenant_id + 0 = $6 AND m.status = ANY($5) RETURNING {}",
                    crate::messages::columns("m.")
                ))
                .bind::<Array<BigInt>, _>(&ok_ids)
                .bind::<Array<Text>, _>(&gids)
                .bind::<Array<Nullable<Text>>, _>(&costs)
                .bind::<Timestamptz, _>(now)
                .bind::<Array<Text>, _>(MessageEvent::Accept.sources())
                .bind::<BigInt, _>(tenant)
                .bind::<Text, _>(MessageEvent::Accept.target().as_str())
                .prepared()
                .get_results(conn)
                .await?
            };
            let failed: Vec<Message> = if bad_ids.is_empty() {
                Vec::new()
            } else {
                diesel::sql_query(format!(
                    "UPDATE messages m SET status = $6, error_message = ($2::text[])[{BY_POSITION}], updated_at = $3
                 WHERE m.id = ANY($1) AND m.tenant_id + 0 = $5 AND m.status = ANY($4) RETURNING {}",
                    crate::messages::columns("m.")
                ))
                .bind::<Array<BigInt>, _>(&bad_ids)
                .bind::<Array<Text>, _>(&reasons)
                .bind::<Timestamptz, _>(now)
                .bind::<Array<Text>, _>(MessageEvent::Refuse.sources())
                .bind::<BigInt, _>(tenant)
                .bind::<Text, _>(MessageEvent::Refuse.target().as_str())
                .prepared()
                .get_results(conn)
                .await?
            };
            // contract: a refused message is refunded (and one never sent costs nothing)
            let refund: i64 = failed.iter().map(|m| m.price_minor).sum();
            let refunded = failed.len();
            let changed: Vec<(Message, Delta)> = sent
                .into_iter()
                .map(|m| (m, Delta::Sent))
                .chain(failed.into_iter().map(|m| (m, Delta::Failed)))
                .collect();
            for (after, items) in std::mem::take(&mut receipts) {
                let job = ApplyReceipts { tenant_id: tenant, channel_id, receipts: items };
                let run_at = Some(now + std_duration(after));
                store::jobs::enqueue(conn, &job, Enqueue { tenant_id: Some(tenant), run_at, ..Default::default() })
                    .await?;
            }
            let sent_ids: Vec<i64> = changed
                .iter()
                .filter(|(m, d)| *d == Delta::Sent && unannounced.contains(&m.id))
                .map(|(m, _)| m.id)
                .collect();
            if !sent_ids.is_empty() {
                let job = CheckDelivery { tenant_id: tenant, ids: sent_ids };
                let run_at = Some(now + receipt_wait);
                store::jobs::enqueue(conn, &job, Enqueue { tenant_id: Some(tenant), run_at, ..Default::default() })
                    .await?;
            }
            // Last, as every send of a campaign waits for its row: the campaign row before the
            // wallet row, in the order a campaign's dispatch step and its cancellation take
            // them, so that these never deadlock.
            settle(conn, &changed, now).await?;
            let note = format!("Refund of {refunded} message(s) the provider did not take");
            accounts::wallet::refund(conn, tenant, refund, &note).await?;
            Ok::<_, Error>(changed.into_iter().map(|(m, _)| m).collect())
        })
        .await
    }
}

/// Whether claimed messages are checked against the blacklist again before sending.
#[derive(Debug, Clone, Copy)]
enum Consent {
    Checked,
    Recheck,
}

/// What one round of sending on a channel did.
struct Sent {
    /// The messages whose status changed, as they now are.
    recorded: Vec<Message>,
    /// Held back by the channel's throughput.
    deferred: Vec<i64>,
}

/// What became of a claimed message.
#[derive(Debug, Clone)]
enum Answer {
    Provider(Result<SendOutcome, SendError>),
    /// Its number joined the blacklist after the message was written: not sent.
    OptedOut,
}

/// How a status change moves a campaign's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delta {
    /// The provider took it: `sent_count` + 1.
    Sent,
    /// Failed before the provider took it: `failed_count` + 1.
    Failed,
    /// Taken, then a failed receipt: `sent_count` - 1, `failed_count` + 1.
    SentThenFailed,
    /// No change of counts (a delivery receipt).
    None,
}

/// The consequences every status change shares: its event, and its campaign's counts.
pub(crate) async fn settle(
    conn: &mut store::Conn,
    changed: &[(Message, Delta)],
    now: OffsetDateTime,
) -> Result<(), Error> {
    let events = changed
        .iter()
        .map(|(m, _)| (TenantId(m.tenant_id), format!("message.{}", m.status), m.event_payload()))
        .collect();
    store::outbox::emit_many(conn, events, now).await?;
    let mut counts: BTreeMap<(i64, i64), (i32, i32)> = BTreeMap::new();
    for (message, delta) in changed {
        let Some(campaign) = message.campaign_id else { continue };
        let entry = counts.entry((campaign, message.tenant_id)).or_default();
        match delta {
            Delta::Sent => entry.0 += 1,
            Delta::Failed => entry.1 += 1,
            Delta::SentThenFailed => {
                entry.0 -= 1;
                entry.1 += 1;
            }
            Delta::None => {}
        }
    }
    // a receipt that moves no count leaves the campaign row alone: every send of the campaign
    // waits for that row
    for ((campaign, tenant), (sent, failed)) in counts.into_iter().filter(|(_, delta)| *delta != (0, 0)) {
        campaigns::count(conn, TenantId(tenant), campaign, sent, failed, now).await?;
    }
    Ok(())
}

/// Moves up to all of `ids` from `queued` to `processing`, skipping rows another sender holds.
/// They are marked with `process` (this process's heartbeat id, when it keeps one).
async fn claim(
    conn: &mut store::Conn,
    tenant: TenantId,
    ids: &[i64],
    now: OffsetDateTime,
    process: Option<Uuid>,
) -> Result<Vec<Message>, Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(diesel::sql_query(format!(
        "UPDATE messages SET status = $6, updated_at = $2, claimed_by = $4
         WHERE id = ANY (ARRAY(
             SELECT id FROM messages
             WHERE id = ANY($1) AND tenant_id + 0 = $5 AND status = ANY($3) FOR UPDATE SKIP LOCKED
         )) AND tenant_id + 0 = $5
         RETURNING {}",
        crate::messages::columns("")
    ))
    .bind::<Array<BigInt>, _>(ids)
    .bind::<Timestamptz, _>(now)
    .bind::<Array<Text>, _>(MessageEvent::Claim.sources())
    .bind::<Nullable<diesel::sql_types::Uuid>, _>(process)
    .bind::<BigInt, _>(tenant)
    .bind::<Text, _>(MessageEvent::Claim.target().as_str())
    .prepared()
    .get_results(conn)
    .await?)
}
