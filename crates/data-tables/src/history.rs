//! A record's history (contract: Data tables, history): every create, change and delete with
//! the changed columns, 50 entries a page newest first, readable after the record is deleted.

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Jsonb, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use kernel::page::{Timeline, TimelineQuery};
use kernel::{Caller, Error, Result};
use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::DataService;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Change {
    pub column: String,
    pub label: String,
    /// The value before; null when it was empty or is masked.
    pub from: Value,
    /// The value after; null when it is empty or masked.
    pub to: Value,
    /// The values are hidden from this caller (present only then).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub masked: bool,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Entry {
    pub id: i64,
    /// `created`, `updated` or `deleted`.
    pub action: String,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    pub source: String,
    /// Who made the change: `{kind, id, name, user_id}` (`kind` `api_key` or `mcp_connection`).
    #[schema(value_type = Object)]
    pub actor: Value,
    pub changes: Vec<Change>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct History {
    pub entries: Vec<Entry>,
    pub has_more: bool,
    pub next_before: Option<i64>,
    /// The key and label of every column the entries name.
    #[schema(value_type = Vec<Object>)]
    pub columns: Vec<Value>,
}

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Text)]
    action: String,
    #[diesel(sql_type = Jsonb)]
    changes: Value,
    #[diesel(sql_type = Text)]
    source: String,
    #[diesel(sql_type = Jsonb)]
    actor: Value,
    #[diesel(sql_type = Timestamptz)]
    at: OffsetDateTime,
}

impl DataService {
    /// `GET .../records/{record}/history?before=&limit=`.
    pub async fn history(
        &self,
        caller: &Caller,
        table: crate::TableId,
        record: crate::RecordId,
        query: &TimelineQuery,
    ) -> Result<History> {
        let page = Timeline::parse(query)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let view = self.view(&mut conn, caller, table).await?;
        let mut rows: Vec<Row> = diesel::sql_query(
            "SELECT id, action, changes, source, actor, at FROM data_record_history
             WHERE record_id = $1 AND table_id = $2 AND id < $3 ORDER BY id DESC LIMIT $4",
        )
        .bind::<SqlUuid, _>(record)
        .bind::<SqlUuid, _>(view.table.id())
        .bind::<BigInt, _>(page.before)
        .bind::<BigInt, _>(page.limit + 1)
        .get_results(&mut conn)
        .await?;
        if rows.is_empty() && page.before == i64::MAX {
            return Err(Error::not_found("Record"));
        }
        let next_before = page.cut(&mut rows, |row| row.id);
        let definition = view.definition();
        let label = |key: &str| definition.column(key).map(|c| c.label.clone()).unwrap_or_else(|| key.to_owned());
        let mut named: Vec<String> = Vec::new();
        let entries: Vec<Entry> = rows
            .into_iter()
            .map(|row| {
                let changes = row
                    .changes
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(key, change)| {
                        if !named.contains(key) {
                            named.push(key.clone());
                        }
                        let masked = view.is_masked(key);
                        let side = |side: &str| if masked { Value::Null } else { change[side].clone() };
                        Change { column: key.clone(), label: label(key), from: side("from"), to: side("to"), masked }
                    })
                    .collect();
                Entry { id: row.id, action: row.action, at: row.at, source: row.source, actor: row.actor, changes }
            })
            .collect();
        let columns = named.iter().map(|key| json!({"key": key, "label": label(key)})).collect();
        Ok(History { entries, has_more: next_before.is_some(), next_before, columns })
    }
}
