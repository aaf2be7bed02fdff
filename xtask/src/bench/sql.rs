//! The raw-SQL side: the statements each API request runs (see `accounts::keys::authenticate`,
//! `accounts::tenants::get`, `contacts::service` and `messaging::send`), prepared once per
//! connection and run with tokio-postgres, without HTTP, JSON or an ORM in between.

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
/// The group and the tenant's default calling code in one round trip, as writes read them.
const GROUP_FOR_WRITE: &str = "SELECT id, uid, name, status, custom_fields, created_at, updated_at, \
                               (SELECT default_country_code FROM tenants WHERE tenants.id = contact_groups.tenant_id) \
                               FROM contact_groups WHERE tenant_id = $1 AND id = $2 LIMIT 1";
const SEARCH_COUNT: &str = "SELECT count(*) FROM contacts WHERE tenant_id = $1 AND group_id = $2 AND name ILIKE $3";
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
const INSERT_SEND_JOB: &str = "INSERT INTO jobs (name, payload, tenant_id, run_at, max_attempts) \
                               VALUES ('messaging.send', jsonb_build_object('ids', jsonb_build_array($1::bigint)), $2, \
                               now() + interval '5 minutes', 8) RETURNING id";
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
    group_for_write: Statement,
    insert_one: Statement,
    search_count: Statement,
    search_page: Statement,
    existing: Statement,
    insert_batch: Statement,
    rate_limit: Statement,
    wallet_debit: Statement,
    wallet_ledger: Statement,
    insert_message: Statement,
    insert_send_job: Statement,
}

impl Statements {
    async fn prepare(client: &Client) -> Result<Self> {
        Ok(Self {
            auth: client.prepare(AUTH).await?,
            tenant: client.prepare(TENANT).await?,
            group: client.prepare(GROUP).await?,
            group_for_write: client.prepare(GROUP_FOR_WRITE).await?,
            insert_one: client
                .prepare(&format!("{} ON CONFLICT DO NOTHING RETURNING {CONTACT_COLUMNS}", insert_contacts(1)))
                .await?,
            search_count: client.prepare(SEARCH_COUNT).await?,
            search_page: client
                .prepare(&format!(
                    "SELECT {CONTACT_COLUMNS} FROM contacts WHERE tenant_id = $1 AND group_id = $2 AND name ILIKE $3 \
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
        Ok(Self { conns, tenant, key_hash: key_hash.to_vec(), route: route.clone(), salt: data::new_salt() })
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

    /// Authentication, the group with the default calling code, then the INSERT; the unique
    /// index finds a duplicate number (none here: every number is new).
    pub async fn create_contact(&self, worker: usize, group: i64, n: u64) -> OpResult {
        self.authenticate(&self.conns[worker]).await?;
        let Conn { client, statements: st } = &self.conns[worker];
        client.query_one(&st.group_for_write, &[&self.tenant, &group]).await?;
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

    /// Authentication, the group, the match count, the page: what a searched list reads.
    pub async fn search_page(&self, worker: usize, group: i64) -> OpResult {
        self.authenticate(&self.conns[worker]).await?;
        let Conn { client, statements: st } = &self.conns[worker];
        client.query_one(&st.group, &[&self.tenant, &group]).await?;
        let pattern = format!("%{}%", data::SEARCH_TERM);
        client.query_one(&st.search_count, &[&self.tenant, &group, &pattern]).await?;
        let (limit, offset) = (data::PAGE_SIZE, 0i64);
        let rows = client.query(&st.search_page, &[&self.tenant, &group, &pattern, &limit, &offset]).await?;
        if rows.len() != data::PAGE_SIZE as usize {
            return Err(format!("the search page held {} rows, not {}", rows.len(), data::PAGE_SIZE).into());
        }
        Ok(())
    }

    /// Authentication, the group with the default calling code, the existing numbers, then
    /// one multi-row INSERT in a transaction.
    pub async fn batch(&self, worker: usize, group: i64, batch: u64) -> OpResult {
        self.authenticate(&self.conns[worker]).await?;
        let Conn { client, statements: st } = &self.conns[worker];
        client.query_one(&st.group_for_write, &[&self.tenant, &group]).await?;
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
