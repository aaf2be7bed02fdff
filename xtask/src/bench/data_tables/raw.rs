//! The raw-SQL sides of the data-table workloads: the authentication lookup every request
//! runs, then the page statement or the single-row insert, prepared once per connection and
//! run with tokio-postgres, without HTTP, JSON or an ORM in between.

use tokio_postgres::{Client, Statement};
use uuid::Uuid;

use crate::Result;
use crate::bench::load::OpResult;
use crate::bench::sql;

/// A page statement (the table's id written in, no parameters) on each connection.
pub(super) struct RawReads {
    conns: Vec<(Client, Statement, Statement)>,
    key_hash: Vec<u8>,
    /// What every read must return: 51 rows, or every match when fewer.
    rows: usize,
}

impl RawReads {
    pub(super) async fn open(url: &str, key_hash: &[u8], page: &str, rows: usize, connections: usize) -> Result<Self> {
        let mut conns = Vec::with_capacity(connections);
        for _ in 0..connections {
            let client = sql::connect(url).await?;
            let auth = client.prepare(sql::AUTH).await?;
            let page = client.prepare(page).await?;
            conns.push((client, auth, page));
        }
        Ok(Self { conns, key_hash: key_hash.to_vec(), rows })
    }

    /// Authentication, then the page; Err unless it held the rows expected.
    pub(super) async fn read(&self, worker: usize) -> OpResult {
        let (client, auth, page) = &self.conns[worker];
        client.query_one(auth, &[&self.key_hash]).await?;
        let rows = client.query(page, &[]).await?;
        if rows.len() != self.rows {
            return Err(format!("the page held {} rows, not {}", rows.len(), self.rows).into());
        }
        Ok(())
    }
}

/// The single-row insert (the table's id written in) on each connection.
pub(super) struct RawCreates {
    conns: Vec<(Client, Statement, Statement)>,
    tenant: i64,
    key_hash: Vec<u8>,
}

impl RawCreates {
    pub(super) async fn open(
        url: &str,
        (tenant, key_hash): (i64, &[u8]),
        table: Uuid,
        connections: usize,
    ) -> Result<Self> {
        // the record and its `created` history row, as every create writes them
        let insert = format!(
            "WITH r AS (INSERT INTO data_records (id, tenant_id, table_id, data, source, created_at, updated_at) \
             VALUES (gen_random_uuid(), $1, '{table}', $2::text::jsonb, 'api', now(), now()) RETURNING id, data) \
             INSERT INTO data_record_history (tenant_id, table_id, record_id, action, changes, source, actor, at) \
             SELECT $1, '{table}', r.id, 'created', (SELECT coalesce(jsonb_object_agg(e.key, \
             jsonb_build_object('from', NULL, 'to', e.value)), '{{}}') FROM jsonb_each(r.data) e), 'api', \
             '{{\"kind\": \"api_key\", \"id\": 1, \"name\": \"Bench\", \"user_id\": 1}}'::jsonb, now() FROM r"
        );
        let mut conns = Vec::with_capacity(connections);
        for _ in 0..connections {
            let client = sql::connect(url).await?;
            let auth = client.prepare(sql::AUTH).await?;
            let insert = client.prepare(&insert).await?;
            conns.push((client, auth, insert));
        }
        Ok(Self { conns, tenant, key_hash: key_hash.to_vec() })
    }

    /// Authentication, then the record (`data` its JSON).
    pub(super) async fn create(&self, worker: usize, data: &str) -> OpResult {
        let (client, auth, insert) = &self.conns[worker];
        client.query_one(auth, &[&self.key_hash]).await?;
        if client.execute(insert, &[&self.tenant, &data]).await? != 1 {
            return Err("the insert wrote no row".into());
        }
        Ok(())
    }
}
