//! The campaign workload: a group of contacts loaded by SQL, then one `POST /sms/campaign`
//! timed until every message of the campaign is `sent` (or already `delivered`) through the
//! sandbox provider, against the same message and job rows written by one raw
//! `INSERT ... SELECT`. One operation per side, so its rate is messages per second.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tokio::time::Instant;
use tokio_postgres::Client;

use super::load::Measured;
use super::report::{CampaignFacts, Facts, Outcome};
use super::sql;
use super::{Gateway, Run, Workload, data};
use crate::Result;

/// How often the API side looks at the campaign.
const POLL: Duration = Duration::from_millis(100);
/// How often the exact count of sent messages is taken before the campaign's own counters say
/// everything was sent (after that, at every poll).
const EXACT_EVERY: Duration = Duration::from_secs(1);
/// A campaign that sends nothing for this long has stalled: the run fails.
const STALLED_AFTER: Duration = Duration::from_secs(60);
/// The longest a campaign may take before the run gives up.
const GIVE_UP_AFTER: Duration = Duration::from_secs(20 * 60);

/// Messages per send job when the environment does not say (`SVC_SMS_SEND_CHUNK`, as the
/// gateway reads it): the raw side writes its jobs in the same chunks.
const DEFAULT_SEND_CHUNK: i64 = 500;

const LOAD_CONTACTS: &str = "INSERT INTO contacts (uid, tenant_id, group_id, name, country_code, phone_number, \
                             full_phone_number, is_subscribed, custom_field_values, created_at, updated_at) \
                             SELECT c.uid, $1, $2, c.name, $3, c.national, $3 || c.national, true, '{}', now(), now() \
                             FROM unnest($4::text[], $5::text[], $6::text[]) AS c(uid, name, national)";

/// The campaign's progress as the service counts it, and the exact count of its messages that
/// reached the provider.
const PROGRESS: &str =
    "SELECT status, status_reason, sent_count, failed_count, dispatched FROM campaigns WHERE id = $1";
const SENT: &str = "SELECT count(*) FROM messages WHERE campaign_id = $1 AND status IN ('sent', 'delivered')";
const FIRST_FAILURE: &str = "SELECT recipient, error_message FROM messages \
                             WHERE campaign_id = $1 AND status = 'failed' ORDER BY id LIMIT 1";

/// The campaign row `POST /sms/campaign` writes, running from the start.
const RAW_CAMPAIGN: &str = "INSERT INTO campaigns (uid, tenant_id, name, status, tenant_channel_id, channel_code, \
                            message, sender, contact_group_id, dispatch_token, created_at, updated_at) \
                            VALUES ('cmp_' || replace(gen_random_uuid()::text, '-', ''), $1, $2, 'running', $3, $4, \
                            $5, $6, $7, gen_random_uuid(), now(), now()) RETURNING id";
/// Every message of the campaign, personalized and priced, and their send jobs in chunks, in
/// one statement; the same contacts dispatch reads (a number, not blacklisted). Every body
/// here is one GSM-7 segment, so segments, encoding and price are constants.
const RAW_MESSAGES: &str = "WITH m AS ( \
    INSERT INTO messages (uid, tenant_id, direction, channel_type, tenant_channel_id, channel_code, sender, \
                          recipient, body, status, segments, encoding, price_minor, campaign_id, contact_id, \
                          created_at, updated_at) \
    SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), c.tenant_id, 'outbound', 'sms', $3, $4, $5, \
           '+' || c.full_phone_number, replace($6, '{{name}}', c.name), 'queued', 1, 'gsm7', $7, $8, c.id, now(), now() \
    FROM contacts c \
    WHERE c.tenant_id = $1 AND c.group_id = $2 AND c.phone_number <> '' \
      AND NOT EXISTS (SELECT 1 FROM sms_blacklist b \
                      WHERE b.tenant_id = c.tenant_id AND b.number = '+' || c.full_phone_number) \
    ORDER BY c.id \
    ON CONFLICT DO NOTHING \
    RETURNING id, price_minor), \
  j AS ( \
    INSERT INTO jobs (name, payload, tenant_id, max_attempts) \
    SELECT 'messaging.send', jsonb_build_object('ids', jsonb_agg(id ORDER BY id)), $1, 8 \
    FROM (SELECT id, (row_number() OVER (ORDER BY id) - 1) / $9 AS chunk FROM m) AS numbered \
    GROUP BY chunk \
    RETURNING id) \
  SELECT (SELECT count(*) FROM m), (SELECT coalesce(sum(price_minor), 0)::bigint FROM m), (SELECT count(*) FROM j)";
const RAW_DISPATCHED: &str =
    "UPDATE campaigns SET dispatched = $2, total_recipients = $2, updated_at = now() WHERE id = $1";

/// What the API side saw.
struct ApiRun {
    elapsed: Duration,
    /// When every message was written (the campaign's `dispatched` reached the group's size).
    written: Option<Duration>,
    status: String,
}

impl Run<'_> {
    /// Workload 7 on both sides, with a fresh gateway for the API side that is stopped before
    /// the raw side writes its rows (their jobs are due at once; no worker may take them).
    pub(super) async fn campaign(&self, workload: &'static Workload) -> Result<Outcome> {
        let contacts = self.setup.campaign_contacts;
        self.prepare(workload, "both sides").await?;
        let group = self.load_campaign_group(workload, contacts).await?;

        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        let label = format!("{}. campaign of {contacts} contacts · API", workload.number);
        let before = self.meter.read(gateway.pid);
        let api = self.api_campaign(&label, group, contacts).await;
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let rss_mb = super::sys::peak_rss_mb(gateway.pid).ok();
        let pid = gateway.pid;
        gateway.stop().await?;
        let api = api?;
        let api_measured = Measured::single(api.elapsed, contacts);
        super::print_run(&label, &api_measured, &api_cpu);
        println!(
            "xtask: {label}: all {contacts} messages written after {}, sent after {:.1} s; campaign {}; gateway peak RSS {}",
            api.written.map_or_else(|| "?".to_owned(), |w| format!("{:.1} s", w.as_secs_f64())),
            api.elapsed.as_secs_f64(),
            api.status,
            rss_mb.map_or_else(|| "?".to_owned(), |mb| format!("{mb:.1} MB")),
        );

        let label = format!("{}. campaign of {contacts} contacts · raw SQL", workload.number);
        let before = self.meter.read(pid);
        let (raw_elapsed, written) = self.raw_campaign(group).await?;
        let raw_cpu = self.meter.share(&before, &self.meter.read(pid));
        if written != contacts {
            return Err(format!("{label}: wrote {written} messages, not {contacts}").into());
        }
        let raw = Measured::single(raw_elapsed, contacts);
        super::print_run(&label, &raw, &raw_cpu);
        // The raw rows' jobs are due: a gateway started on the kept database would send them all.
        self.db.execute("DELETE FROM jobs WHERE state = 'queued'", &[]).await?;

        let facts = CampaignFacts {
            contacts,
            api_seconds: api.elapsed.as_secs_f64(),
            written_after_s: api.written.map(|w| w.as_secs_f64()),
            final_status: api.status,
            raw_seconds: raw_elapsed.as_secs_f64(),
        };
        Ok(Outcome {
            workload,
            api: api_measured,
            raw,
            rss_mb,
            api_cpu,
            raw_cpu,
            facts: Some(Facts::Campaign(facts)),
            open: None,
        })
    }

    /// A new group with `contacts` contacts, written by SQL: numbers the sandbox delivers (and,
    /// skipping every ending below 1000, numbers the voice sandbox answers: see [`super::voice`]).
    pub(super) async fn load_campaign_group(&self, workload: &Workload, contacts: u64) -> Result<i64> {
        let started = Instant::now();
        let name = format!("bench: {}. campaign of {contacts} contacts", workload.number);
        let group: i64 = self
            .db
            .query_one(
                "INSERT INTO contact_groups (uid, tenant_id, name, created_at, updated_at) \
                 VALUES (gen_random_uuid(), $1, $2, now(), now()) RETURNING id",
                &[&self.setup.tenant, &name],
            )
            .await?
            .get(0);
        let salt = data::new_salt();
        let uids: Vec<String> = (0..contacts).map(|n| data::uid(salt, n)).collect();
        let names: Vec<String> = (0..contacts).map(data::name).collect();
        let nationals: Vec<String> = (0..contacts).map(data::campaign_national).collect();
        let loaded = self
            .db
            .execute(LOAD_CONTACTS, &[&self.setup.tenant, &group, &data::COUNTRY_CODE, &uids, &names, &nationals])
            .await?;
        if loaded != contacts {
            return Err(format!("loading the campaign's group wrote {loaded} contacts, not {contacts}").into());
        }
        self.db.batch_execute("VACUUM ANALYZE contacts, contact_groups").await?;
        self.db.batch_execute("CHECKPOINT").await?;
        println!(
            "xtask: loaded {contacts} contacts by SQL into group {group} in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Ok(group)
    }

    /// From the request until every message is `sent` or `delivered`. Every 100 ms the
    /// campaign's own counters are read (one row); the exact count over its messages is taken
    /// once a second, and at every poll once the counters say all were sent, so the end is
    /// seen within a poll without a count over up to 100,000 rows ten times a second.
    async fn api_campaign(&self, label: &str, group: i64, contacts: u64) -> Result<ApiRun> {
        let db = self.db;
        let target = i64::try_from(contacts)?;
        let started = Instant::now();
        let campaign = self.api.create_campaign(group).await?;
        let bar = ProgressBar::new(contacts).with_message(label.to_owned());
        bar.set_style(
            ProgressStyle::with_template("{msg:<44} [{bar:30}] {pos}/{len} sent ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        let mut tick = tokio::time::interval(POLL);
        let (mut written, mut next_exact) = (None, started + EXACT_EVERY);
        let (mut last_sent, mut last_progress) = (-1_i64, Instant::now());
        loop {
            tick.tick().await;
            let row = db.query_one(PROGRESS, &[&campaign]).await?;
            let (status, reason): (String, Option<String>) = (row.get(0), row.get(1));
            let (sent, failed, dispatched): (i32, i32, i32) = (row.get(2), row.get(3), row.get(4));
            let now = Instant::now();
            if failed > 0 {
                let first = db.query_opt(FIRST_FAILURE, &[&campaign]).await?;
                let first = first.map_or_else(String::new, |r| {
                    format!(
                        "; first: {} ({})",
                        r.get::<_, String>(0),
                        r.get::<_, Option<String>>(1).unwrap_or_default()
                    )
                });
                bar.abandon();
                return Err(format!("campaign {campaign}: {failed} messages failed{first}").into());
            }
            if matches!(status.as_str(), "paused" | "cancelled") {
                bar.abandon();
                let reason = reason.unwrap_or_default();
                return Err(format!("campaign {campaign} is {status} ({reason}) after {sent} sent").into());
            }
            if written.is_none() && i64::from(dispatched) >= target {
                written = Some(started.elapsed());
            }
            bar.set_position(u64::try_from(sent).unwrap_or(0));
            if i64::from(sent) >= target || now >= next_exact {
                let exact: i64 = db.query_one(SENT, &[&campaign]).await?.get(0);
                if exact >= target {
                    let elapsed = started.elapsed();
                    bar.finish_and_clear();
                    let status: String =
                        db.query_one("SELECT status FROM campaigns WHERE id = $1", &[&campaign]).await?.get(0);
                    return Ok(ApiRun { elapsed, written, status });
                }
                next_exact = now + EXACT_EVERY;
            }
            if i64::from(sent) != last_sent {
                (last_sent, last_progress) = (i64::from(sent), now);
            }
            if now - last_progress > STALLED_AFTER || now - started > GIVE_UP_AFTER {
                bar.abandon();
                return Err(format!(
                    "campaign {campaign} stalled: {sent} of {contacts} sent, {dispatched} written, status {status}, \
                     after {:.0} s",
                    started.elapsed().as_secs_f64()
                )
                .into());
            }
        }
    }

    /// Authentication, then in one transaction the campaign row, its messages and send jobs by
    /// one `INSERT ... SELECT`, the wallet debit with its ledger entry, and the campaign's
    /// count. Answers the time and the messages written.
    async fn raw_campaign(&self, group: i64) -> Result<(Duration, u64)> {
        let client = sql::connect(&self.setup.database_url).await?;
        let chunk: i64 =
            std::env::var("SVC_SMS_SEND_CHUNK").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_SEND_CHUNK);
        let statements = RawStatements::prepare(&client).await?;
        let started = Instant::now();
        let written = self.raw_campaign_statements(&client, &statements, group, chunk.max(1)).await;
        let elapsed = started.elapsed();
        let written = written?;
        Ok((elapsed, written))
    }

    async fn raw_campaign_statements(
        &self,
        client: &Client,
        st: &RawStatements,
        group: i64,
        chunk: i64,
    ) -> Result<u64> {
        let (tenant, route) = (self.setup.tenant, &self.setup.route);
        client.query_one(&st.auth, &[&self.key_hash]).await?;
        client.batch_execute("BEGIN").await?;
        let name = "bench: raw campaign";
        let campaign: i64 = client
            .query_one(
                &st.campaign,
                &[&tenant, &name, &route.channel_id, &route.code, &data::CAMPAIGN_TEMPLATE, &route.sender, &group],
            )
            .await?
            .get(0);
        let price = data::SMS_PRICE_MINOR;
        let row = client
            .query_one(
                &st.messages,
                &[
                    &tenant,
                    &group,
                    &route.channel_id,
                    &route.code,
                    &route.sender,
                    &data::CAMPAIGN_TEMPLATE,
                    &price,
                    &campaign,
                    &chunk,
                ],
            )
            .await?;
        let (written, cost): (i64, i64) = (row.get(0), row.get(1));
        let Some(wallet) = client.query_opt(&st.debit, &[&tenant, &cost]).await? else {
            client.batch_execute("ROLLBACK").await?;
            return Err("the wallet cannot pay for the raw campaign".into());
        };
        let balance: i64 = wallet.get(1);
        let note = format!("Campaign raw: {written} message(s)");
        client.execute(&st.ledger, &[&tenant, &cost, &balance, &note]).await?;
        let written_i32 = i32::try_from(written)?;
        client.execute(&st.dispatched, &[&campaign, &written_i32]).await?;
        client.batch_execute("COMMIT").await?;
        Ok(u64::try_from(written)?)
    }
}

struct RawStatements {
    auth: tokio_postgres::Statement,
    campaign: tokio_postgres::Statement,
    messages: tokio_postgres::Statement,
    debit: tokio_postgres::Statement,
    ledger: tokio_postgres::Statement,
    dispatched: tokio_postgres::Statement,
}

impl RawStatements {
    async fn prepare(client: &Client) -> Result<Self> {
        Ok(Self {
            auth: client.prepare(sql::AUTH).await?,
            campaign: client.prepare(RAW_CAMPAIGN).await?,
            messages: client.prepare(RAW_MESSAGES).await?,
            debit: client.prepare(sql::WALLET_DEBIT).await?,
            ledger: client.prepare(sql::WALLET_LEDGER).await?,
            dispatched: client.prepare(RAW_DISPATCHED).await?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_raw_campaign_personalizes_as_the_template_says() {
        assert!(data::CAMPAIGN_TEMPLATE.contains("{{name}}"));
        assert!(RAW_MESSAGES.contains("replace($6, '{{name}}', c.name)"));
    }
}
