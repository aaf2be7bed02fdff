//! The raw-SQL side: the statements each API request runs (see `accounts::keys::authenticate`,
//! `accounts::tenants::get`, `contacts::service`, `messaging::send` and `leads::upsert`),
//! prepared once per connection and run with tokio-postgres, without HTTP, JSON or an ORM in
//! between.

use std::fmt::Write;

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Statement};

use super::data;
use super::load::OpResult;
use crate::Result;

const CONTACT_COLUMNS: &str = "id, uid, group_id, name, country_code, phone_number, full_phone_number, \
                               is_subscribed, custom_field_values, created_at, updated_at";

/// Authentication: the key, its tenant's status and its issuer's permissions in one lookup.
pub const AUTH: &str = "SELECT k.id, k.tenant_id, k.name, k.legacy, k.expires_at, k.revoked_at, t.status, \
                    u.id, u.name, u.active, u.all_permissions, u.permissions \
                    FROM api_keys k JOIN tenants t ON t.id = k.tenant_id LEFT JOIN users u ON u.id = k.user_id \
                    WHERE k.key_hash = $1 LIMIT 1";
const TENANT: &str = "SELECT id, uid, name, status, currency, default_country_code, created_at, updated_at \
                      FROM tenants WHERE id = $1 LIMIT 1";
const GROUP: &str = "SELECT id, uid, name, status, custom_fields, created_at, updated_at \
                     FROM contact_groups WHERE tenant_id = $1 AND id = $2 LIMIT 1";
/// A search's total: counted up to 1,001 matches, the planner's estimate beyond (as the
/// service does, `store::search`); `~~~*` is the service's leakproof ILIKE.
const SEARCH_COUNT: &str = "SELECT count(*) FROM (SELECT id FROM contacts \
                            WHERE tenant_id = $1 AND group_id = $2 AND name ~~~* $3 LIMIT 1001) AS m";
const SEARCH_ESTIMATE: &str = "EXPLAIN (FORMAT JSON) SELECT id FROM contacts \
                               WHERE tenant_id = $1 AND group_id = $2 AND name ~~~* $3";
const RATE_LIMIT: &str = "SELECT * FROM rate_limit_hit($1, now(), interval '1 minute', 100000000)";
/// The prepaid debit of `accounts::wallet::debit`: refused when the balance cannot pay.
pub const WALLET_DEBIT: &str = "UPDATE wallets SET balance_minor = balance_minor - $2, updated_at = now() \
                                WHERE tenant_id = $1 AND (billing_mode = 'postpaid' OR balance_minor >= $2) \
                                RETURNING tenant_id, balance_minor, currency, billing_mode, updated_at";
pub const WALLET_LEDGER: &str = "INSERT INTO wallet_ledger (tenant_id, kind, amount_minor, balance_after, note) \
                                 VALUES ($1, 'debit', $2, $3, $4)";
/// One queued outbound SMS, as `messaging::send` writes it: routed, priced, one GSM-7 segment.
const INSERT_MESSAGE: &str = "INSERT INTO messages (uid, tenant_id, direction, channel_type, tenant_channel_id, \
                              channel_code, sender, recipient, body, status, segments, encoding, price_minor, \
                              created_at, updated_at) \
                              VALUES ($1, $2, 'outbound', 'sms', $3, $4, $5, $6, $7, 'queued', 1, 'gsm7', $8, now(), now()) \
                              ON CONFLICT DO NOTHING RETURNING id";
/// Its dispatch job. An inline send's job waits for the job lease (5 minutes) as the fallback
/// should the process die mid-send, so no worker picks these up during the run.
pub const INSERT_SEND_JOB: &str = "INSERT INTO jobs (name, payload, tenant_id, run_at, max_attempts) \
                               VALUES ('messaging.send', jsonb_build_object('ids', jsonb_build_array($1::bigint)), $2, \
                               now() + interval '5 minutes', 8) RETURNING id";
/// The lead upsert's lookup: the person by the E.164 digits of the phone.
const LEAD_IDENTITY: &str =
    "SELECT lead_id::text FROM lead_identities WHERE tenant_id = $1 AND kind = 'phone' AND value = $2";
/// A found lead: the company sent, and the activity times.
const LEAD_UPDATE: &str =
    "UPDATE leads SET company = $2, updated_at = now(), last_activity_at = now() WHERE id = $1::text::uuid";
/// A new lead with the columns `leads::upsert` writes for a name, phone and company.
const LEAD_INSERT: &str = "INSERT INTO leads (id, tenant_id, name, company, phone, stage, currency, created_by_kind, \
                           created_by_id, last_activity_at, sources, custom_fields, created_at, updated_at) \
                           VALUES ($1::text::uuid, $2, $3, $4, $5, 'new', $6, 'api', $7, now(), \
                           jsonb_build_array(jsonb_build_object('kind', 'api', 'id', NULL, 'channel', NULL, 'at', now())), \
                           '{}', now(), now())";
const LEAD_IDENTITY_INSERT: &str = "INSERT INTO lead_identities (tenant_id, kind, value, lead_id, created_at) \
                                    VALUES ($1, 'phone', $2, $3::text::uuid, now())";
/// The timeline entry: `created` with `{}`, `updated` with the field's change.
const LEAD_ACTIVITY: &str = "INSERT INTO lead_activities (tenant_id, lead_id, kind, details, actor_kind, actor_id, \
                             source_kind, created_at) VALUES ($1, $2::text::uuid, $3, $4::text::jsonb, 'api', $5, 'api', now())";
const LEAD_CREATED_EVENT: &str = "INSERT INTO events (id, tenant_id, name, payload, occurred_at) \
                                  VALUES (gen_random_uuid(), $1, 'lead.created', '{}'::jsonb, now())";
/// The key's issuer (who creates the bench's leads) and the tenant's currency.
const LEAD_DEFAULTS: &str = "SELECT k.user_id, t.currency FROM api_keys k JOIN tenants t ON t.id = k.tenant_id \
                             WHERE k.key_hash = $1";

/// Columns of one new contact that are bound; custom fields and times are written in the SQL.
const BOUND_PER_ROW: usize = 8;

fn insert_contacts(rows: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO contacts (uid, tenant_id, group_id, name, country_code, phone_number, full_phone_number, \
         is_subscribed, custom_field_values, created_at, updated_at) VALUES ",
    );
    for row in 0..rows {
        let p = row * BOUND_PER_ROW;
        if row > 0 {
            sql.push_str(", ");
        }
        // Writing to a String cannot fail.
        let _ = write!(
            sql,
            "(${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, '{{}}', now(), now())",
            p + 1,
            p + 2,
            p + 3,
            p + 4,
            p + 5,
            p + 6,
            p + 7,
            p + 8
        );
    }
    sql
}

struct Statements {
    auth: Statement,
    tenant: Statement,
    group: Statement,
    insert_one: Statement,
    search_count: Statement,
    search_estimate: Statement,
    search_page: Statement,
    existing: Statement,
    insert_batch: Statement,
    rate_limit: Statement,
    wallet_debit: Statement,
    wallet_ledger: Statement,
    insert_message: Statement,
    insert_send_job: Statement,
    lead_identity: Statement,
    lead_update: Statement,
    lead_insert: Statement,
    lead_identity_insert: Statement,
    lead_activity: Statement,
    lead_created_event: Statement,
}

impl Statements {
    async fn prepare(client: &Client) -> Result<Self> {
        Ok(Self {
            auth: client.prepare(AUTH).await?,
            tenant: client.prepare(TENANT).await?,
            group: client.prepare(GROUP).await?,
            insert_one: client
                .prepare(&format!("{} ON CONFLICT DO NOTHING RETURNING {CONTACT_COLUMNS}", insert_contacts(1)))
                .await?,
            search_count: client.prepare(SEARCH_COUNT).await?,
            search_estimate: client.prepare(SEARCH_ESTIMATE).await?,
            search_page: client
                .prepare(&format!(
                    "SELECT {CONTACT_COLUMNS} FROM contacts WHERE tenant_id = $1 AND group_id = $2 AND name ~~~* $3 \
                     ORDER BY id DESC LIMIT $4 OFFSET $5"
                ))
                .await?,
            existing: client
                .prepare(
                    "SELECT c.* FROM unnest($2::text[]) AS n(full_phone_number) \
                     JOIN contacts c ON c.group_id = $1 AND c.full_phone_number = n.full_phone_number",
                )
                .await?,
            insert_batch: client.prepare(&insert_contacts(data::BATCH_ROWS)).await?,
            rate_limit: client.prepare(RATE_LIMIT).await?,
            wallet_debit: client.prepare(WALLET_DEBIT).await?,
            wallet_ledger: client.prepare(WALLET_LEDGER).await?,
            insert_message: client.prepare(INSERT_MESSAGE).await?,
            insert_send_job: client.prepare(INSERT_SEND_JOB).await?,
            lead_identity: client.prepare(LEAD_IDENTITY).await?,
            lead_update: client.prepare(LEAD_UPDATE).await?,
            lead_insert: client.prepare(LEAD_INSERT).await?,
            lead_identity_insert: client.prepare(LEAD_IDENTITY_INSERT).await?,
            lead_activity: client.prepare(LEAD_ACTIVITY).await?,
            lead_created_event: client.prepare(LEAD_CREATED_EVENT).await?,
        })
    }
}

struct Conn {
    client: Client,
    statements: Statements,
}

/// The bench tenant's SMS route: what the service's routing picks for its sends.
#[derive(Clone, Debug)]
pub struct SmsRoute {
    pub channel_id: i64,
    pub code: String,
    pub sender: String,
}

/// One connection per load task, every statement prepared on each.
pub struct Db {
    conns: Vec<Conn>,
    tenant: i64,
    key_hash: Vec<u8>,
    route: SmsRoute,
    /// Makes this run's contact and message uids unique.
    salt: u64,
    /// Who creates the leads (the key's issuer) and in what currency.
    leads: LeadDefaults,
}

/// What a new lead takes from the key and the tenant.
struct LeadDefaults {
    created_by: Option<i64>,
    currency: String,
}

impl LeadDefaults {
    async fn read(client: &Client, key_hash: &[u8]) -> Result<Self> {
        let row = client.query_one(LEAD_DEFAULTS, &[&key_hash]).await?;
        Ok(Self { created_by: row.get(0), currency: row.get(1) })
    }
}

pub async fn connect(url: &str) -> Result<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    // The connection does the I/O; it ends when the client is dropped.
    tokio::spawn(connection);
    Ok(client)
}

impl Db {
    pub async fn open(url: &str, connections: usize, tenant: i64, key_hash: &[u8], route: &SmsRoute) -> Result<Self> {
        let mut conns = Vec::with_capacity(connections);
        for _ in 0..connections {
            let client = connect(url).await?;
            let statements = Statements::prepare(&client).await?;
            conns.push(Conn { client, statements });
        }
        let leads = LeadDefaults::read(&conns.first().ok_or("no connections")?.client, key_hash).await?;
        Ok(Self { conns, tenant, key_hash: key_hash.to_vec(), route: route.clone(), salt: data::new_salt(), leads })
    }

    /// Authentication, then the tenant: what `GET /me` reads.
    pub async fn me(&self, worker: usize) -> OpResult {
        self.authenticate(&self.conns[worker]).await?;
        let Conn { client, statements: st } = &self.conns[worker];
        client.query_one(&st.tenant, &[&self.tenant]).await?;
        Ok(())
    }

    /// [`Db::me`] plus one hit on the shared sliding log.
    pub async fn me_shared_limiter(&self, worker: usize) -> OpResult {
        self.me(worker).await?;
        let Conn { client, statements: st } = &self.conns[worker];
        client.query_one(&st.rate_limit, &[&self.key_hash]).await?;
        Ok(())
    }

    /// Every request authenticates first; the raw side reads the same row, so the ratio
    /// measures what the gateway adds (HTTP, JSON, pool, checks), not the lookup itself.
    async fn authenticate(&self, conn: &Conn) -> OpResult {
        conn.client.query_one(&conn.statements.auth, &[&self.key_hash]).await?;
        Ok(())
    }

    /// Authentication, the group, then the INSERT; the unique
    /// index finds a duplicate number (none here: every number is new).
    pub async fn create_contact(&self, worker: usize, group: i64, n: u64) -> OpResult {
        self.authenticate(&self.conns[worker]).await?;
        let Conn { client, statements: st } = &self.conns[worker];
        client.query_one(&st.group, &[&self.tenant, &group]).await?;
        let (uid, name, national, full) =
            (data::uid(self.salt, n), data::name(n), data::national(n), data::full_number(n));
        let subscribed = true;
        let params: [&(dyn ToSql + Sync); BOUND_PER_ROW] =
            [&uid, &self.tenant, &group, &name, &data::COUNTRY_CODE, &national, &full, &subscribed];
        if client.query_opt(&st.insert_one, &params).await?.is_none() {
            return Err(format!("number {full} is already in group {group}").into());
        }
        Ok(())
    }

    /// Authentication, the group, the page, the match count up to 1,001 and then the
    /// estimate: what a searched list reads.
    pub async fn search_page(&self, worker: usize, group: i64) -> OpResult {
        self.authenticate(&self.conns[worker]).await?;
        let Conn { client, statements: st } = &self.conns[worker];
        client.query_one(&st.group, &[&self.tenant, &group]).await?;
        let pattern = format!("%{}%", data::SEARCH_TERM);
        let (limit, offset) = (data::PAGE_SIZE, 0i64);
        let rows = client.query(&st.search_page, &[&self.tenant, &group, &pattern, &limit, &offset]).await?;
        if rows.len() != data::PAGE_SIZE as usize {
            return Err(format!("the search page held {} rows, not {}", rows.len(), data::PAGE_SIZE).into());
        }
        let counted: i64 = client.query_one(&st.search_count, &[&self.tenant, &group, &pattern]).await?.get(0);
        if counted > 1_000 {
            client.query_one(&st.search_estimate, &[&self.tenant, &group, &pattern]).await?;
        }
        Ok(())
    }

    /// Authentication, the group, the existing numbers, then
    /// one multi-row INSERT in a transaction.
    pub async fn batch(&self, worker: usize, group: i64, batch: u64) -> OpResult {
        self.authenticate(&self.conns[worker]).await?;
        let Conn { client, statements: st } = &self.conns[worker];
        client.query_one(&st.group, &[&self.tenant, &group]).await?;
        let numbers: Vec<u64> = data::batch_numbers(batch).collect();
        let fulls: Vec<String> = numbers.iter().map(|n| data::full_number(*n)).collect();
        let existing = client.query(&st.existing, &[&group, &fulls]).await?;
        if !existing.is_empty() {
            return Err(format!("{} numbers of batch {batch} exist already", existing.len()).into());
        }
        let uids: Vec<String> = numbers.iter().map(|n| data::uid(self.salt, *n)).collect();
        let names: Vec<String> = numbers.iter().map(|n| data::name(*n)).collect();
        let nationals: Vec<String> = numbers.iter().map(|n| data::national(*n)).collect();
        let subscribed = true;
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(numbers.len() * BOUND_PER_ROW);
        for i in 0..numbers.len() {
            params.extend([
                &uids[i] as &(dyn ToSql + Sync),
                &self.tenant,
                &group,
                &names[i],
                &data::COUNTRY_CODE,
                &nationals[i],
                &fulls[i],
                &subscribed,
            ]);
        }
        client.batch_execute("BEGIN").await?;
        let inserted = client.execute(&st.insert_batch, &params).await;
        if let Err(error) = inserted {
            client.batch_execute("ROLLBACK").await?;
            return Err(error.into());
        }
        client.batch_execute("COMMIT").await?;
        Ok(())
    }
}

impl Db {
    /// Authentication, then in one transaction the wallet debit with its ledger entry, the
    /// message and its dispatch job: the rows `POST /sms/send` writes for one recipient.
    pub async fn sms_send(&self, worker: usize, n: u64) -> OpResult {
        self.authenticate(&self.conns[worker]).await?;
        let Conn { client, statements: st } = &self.conns[worker];
        client.batch_execute("BEGIN").await?;
        let written = self.write_sms(client, st, n).await;
        if let Err(error) = written {
            client.batch_execute("ROLLBACK").await?;
            return Err(error);
        }
        client.batch_execute("COMMIT").await?;
        Ok(())
    }

    async fn write_sms(&self, client: &Client, st: &Statements, n: u64) -> OpResult {
        let price = data::SMS_PRICE_MINOR;
        let wallet = client.query_opt(&st.wallet_debit, &[&self.tenant, &price]).await?;
        let Some(wallet) = wallet else { return Err("the wallet cannot pay for a message".into()) };
        let balance: i64 = wallet.get(1);
        let note = "SMS send to 1 recipient(s)";
        client.execute(&st.wallet_ledger, &[&self.tenant, &price, &balance, &note]).await?;
        let (uid, recipient, body) = (data::message_uid(self.salt, n), data::sms_recipient(n), data::sms_body(n));
        let route = &self.route;
        let params: [&(dyn ToSql + Sync); 8] =
            [&uid, &self.tenant, &route.channel_id, &route.code, &route.sender, &recipient, &body, &price];
        let Some(message) = client.query_opt(&st.insert_message, &params).await? else {
            return Err(format!("message uid {uid} exists already").into());
        };
        let id: i64 = message.get(0);
        client.query_one(&st.insert_send_job, &[&id, &self.tenant]).await?;
        Ok(())
    }
}

impl Db {
    /// Authentication, the identity lookup, then in one transaction either the found lead's
    /// update with its `updated` activity, or the new lead with its identity, its `created`
    /// activity and its `lead.created` event: the rows `POST /leads` writes (see
    /// [`data::lead_upsert`]).
    pub async fn lead_upsert(&self, worker: usize, n: u64) -> OpResult {
        self.authenticate(&self.conns[worker]).await?;
        let Conn { client, statements: st } = &self.conns[worker];
        let upsert = data::lead_upsert(n);
        let found = client.query_opt(&st.lead_identity, &[&self.tenant, &upsert.digits]).await?;
        let found: Option<String> = found.map(|row| row.get(0));
        if found.is_some() != upsert.existing {
            let what = if upsert.existing { "no lead has" } else { "a lead has already" };
            return Err(format!("{what} the phone {}", upsert.digits).into());
        }
        client.batch_execute("BEGIN").await?;
        let written = match found {
            Some(lead) => self.update_lead(client, st, &lead, &upsert).await,
            None => self.insert_lead(client, st, &upsert).await,
        };
        if let Err(error) = written {
            client.batch_execute("ROLLBACK").await?;
            return Err(error);
        }
        client.batch_execute("COMMIT").await?;
        Ok(())
    }

    async fn update_lead(&self, client: &Client, st: &Statements, lead: &str, upsert: &data::LeadUpsert) -> OpResult {
        if client.execute(&st.lead_update, &[&lead, &upsert.company]).await? != 1 {
            return Err(format!("lead {lead} is gone").into());
        }
        let details = serde_json::json!({ "company": { "to": upsert.company } }).to_string();
        let params: [&(dyn ToSql + Sync); 5] = [&self.tenant, &lead, &"updated", &details, &self.leads.created_by];
        client.execute(&st.lead_activity, &params).await?;
        Ok(())
    }

    async fn insert_lead(&self, client: &Client, st: &Statements, upsert: &data::LeadUpsert) -> OpResult {
        let id = uuid::Uuid::new_v4().to_string();
        let phone = format!("+{}", upsert.digits);
        let (tenant, created_by) = (&self.tenant, &self.leads.created_by);
        let params: [&(dyn ToSql + Sync); 7] =
            [&id, tenant, &upsert.name, &upsert.company, &phone, &self.leads.currency, created_by];
        client.execute(&st.lead_insert, &params).await?;
        client.execute(&st.lead_identity_insert, &[tenant, &upsert.digits, &id]).await?;
        let params: [&(dyn ToSql + Sync); 5] = [tenant, &id, &"created", &"{}", created_by];
        client.execute(&st.lead_activity, &params).await?;
        client.execute(&st.lead_created_event, &[tenant]).await?;
        Ok(())
    }
}

/// Replaces the tenant's leads (with their identities, timeline and events) by
/// [`data::PRELOADED_LEADS`] people with one phone each, as the service would have stored
/// them: the same start for each side of the upsert workload.
pub async fn preload_leads(db: &Client, tenant: i64, key_hash: &[u8]) -> Result<()> {
    let defaults = LeadDefaults::read(db, key_hash).await?;
    let ks = 0..data::PRELOADED_LEADS;
    let ids: Vec<String> = ks.clone().map(|_| uuid::Uuid::new_v4().to_string()).collect();
    let digits: Vec<String> = ks.clone().map(data::lead_digits).collect();
    let names: Vec<String> = ks.clone().map(data::lead_name).collect();
    let companies: Vec<String> = ks.map(data::preloaded_company).collect();
    db.batch_execute("BEGIN").await?;
    db.execute("DELETE FROM leads WHERE tenant_id = $1", &[&tenant]).await?;
    db.execute("DELETE FROM events WHERE tenant_id = $1 AND name LIKE 'lead.%'", &[&tenant]).await?;
    db.execute(
        "INSERT INTO leads (id, tenant_id, name, company, phone, stage, currency, created_by_kind, created_by_id, \
         last_activity_at, sources, custom_fields, created_at, updated_at) \
         SELECT l.id::uuid, $1, l.name, l.company, '+' || l.digits, 'new', $6, 'api', $7, now(), \
         jsonb_build_array(jsonb_build_object('kind', 'api', 'id', NULL, 'channel', NULL, 'at', now())), '{}', now(), now() \
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS l(id, digits, name, company)",
        &[&tenant, &ids, &digits, &names, &companies, &defaults.currency, &defaults.created_by],
    )
    .await?;
    db.execute(
        "INSERT INTO lead_identities (tenant_id, kind, value, lead_id, created_at) \
         SELECT $1, 'phone', l.digits, l.id::uuid, now() FROM unnest($2::text[], $3::text[]) AS l(id, digits)",
        &[&tenant, &ids, &digits],
    )
    .await?;
    db.batch_execute("COMMIT").await?;
    db.batch_execute("VACUUM ANALYZE leads, lead_identities, lead_activities, lead_pending_updates, events").await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_row_insert_numbers_its_parameters() {
        let sql = insert_contacts(2);
        assert!(sql.ends_with(
            "($1, $2, $3, $4, $5, $6, $7, $8, '{}', now(), now()), ($9, $10, $11, $12, $13, $14, $15, $16, '{}', now(), now())"
        ));
    }
}
