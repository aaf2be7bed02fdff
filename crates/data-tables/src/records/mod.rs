//! Records (contract: Data table, column and record): `id`, `data` keyed by column key,
//! `source`, times, `title` and the `titles` of related records, as one caller may see them.

pub mod list;
pub mod write;

use std::collections::HashMap;

use diesel::sql_types::{Array, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::RunQueryDsl;
use kernel::{Caller, Result};
use serde::Serialize;
use serde_json::{Map, Value};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::definition::ColumnType;
use crate::service::{TableKey, View, load};
use crate::{DataService, RecordId, TableId, values};

/// A record as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Record {
    pub id: Uuid,
    /// Every column of the table in order; empty and masked values are null.
    #[schema(value_type = Object)]
    pub data: Map<String, Value>,
    pub source: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// The value of the table's first text column.
    pub title: Option<String>,
    /// Each relation column's related record title.
    #[schema(value_type = Object)]
    pub titles: Map<String, Value>,
    /// The columns this caller may not read.
    pub masked: Vec<String>,
}

/// A record row as stored.
#[derive(Debug, Clone, QueryableByName)]
pub(crate) struct Row {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Jsonb)]
    pub data: Value,
    #[diesel(sql_type = Text)]
    pub source: String,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: OffsetDateTime,
    #[diesel(sql_type = Timestamptz)]
    pub updated_at: OffsetDateTime,
}

pub(crate) const ROW_COLUMNS: &str = "id, data, source, created_at, updated_at";

#[derive(QueryableByName)]
struct Title {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Nullable<Text>)]
    title: Option<String>,
}

impl DataService {
    /// Shapes rows for `view`'s caller: masks, file descriptors and related titles, each looked
    /// up once for the whole page.
    pub(crate) async fn render(
        &self,
        conn: &mut store::Conn,
        caller: &Caller,
        view: &View,
        rows: Vec<Row>,
    ) -> Result<Vec<Record>> {
        let definition = view.definition();
        let readable =
            |kind: ColumnType| definition.columns.iter().filter(move |c| c.kind == kind && !view.is_masked(&c.key));
        let ids_in = |key: &str| -> Vec<Uuid> {
            rows.iter().flat_map(|r| r.data.get(key).map(values::ids).unwrap_or_default()).collect()
        };

        let file_ids: Vec<Uuid> = readable(ColumnType::File).flat_map(|c| ids_in(&c.key)).collect();
        let files: HashMap<Uuid, Value> = self
            .describe_files(conn, caller.tenant_id, &file_ids)
            .await?
            .into_iter()
            .map(|f| (f.id, serde_json::to_value(f).unwrap_or_default()))
            .collect();

        let mut titles: HashMap<String, HashMap<Uuid, Option<String>>> = HashMap::new();
        for column in readable(ColumnType::Relation) {
            let ids = ids_in(&column.key);
            let Some(target) = column.config.table.as_deref().filter(|_| !ids.is_empty()) else { continue };
            let Ok(target) = load(conn, caller.tenant_id, TableKey::Slug(target)).await else { continue };
            let target_id = target.id();
            // a hidden target table or a masked title column shows no title
            let Some(target) = View::of(target, caller) else { continue };
            let Some(title) = target.definition().title_column().filter(|c| !target.is_masked(&c.key)) else {
                continue;
            };
            let found: Vec<Title> = diesel::sql_query(format!(
                "SELECT id, data->>'{}' AS title FROM data_records
                 WHERE table_id = $1 AND id = ANY($2) AND deleted_at IS NULL",
                title.key
            ))
            .bind::<SqlUuid, _>(target_id)
            .bind::<Array<SqlUuid>, _>(&ids)
            .get_results(conn)
            .await?;
            titles.insert(column.key.clone(), found.into_iter().map(|t| (t.id, t.title)).collect());
        }

        let title_column = definition.title_column().filter(|c| !view.is_masked(&c.key));
        Ok(rows
            .into_iter()
            .map(|row| {
                let mut data = Map::new();
                let mut related = Map::new();
                for column in &definition.columns {
                    let stored = row.data.get(&column.key).filter(|_| !view.is_masked(&column.key));
                    let value = match (column.kind, stored) {
                        (_, None) => Value::Null,
                        (ColumnType::File, Some(v)) => {
                            Value::Array(values::ids(v).iter().filter_map(|id| files.get(id).cloned()).collect())
                        }
                        (_, Some(v)) => v.clone(),
                    };
                    if column.kind == ColumnType::Relation {
                        let title = stored
                            .and_then(|v| values::ids(v).into_iter().next())
                            .and_then(|id| titles.get(&column.key)?.get(&id).cloned().flatten());
                        related.insert(column.key.clone(), title.map(Value::String).unwrap_or(Value::Null));
                    }
                    data.insert(column.key.clone(), value);
                }
                let title = title_column.and_then(|c| row.data.get(&c.key)).and_then(Value::as_str).map(str::to_owned);
                Record {
                    id: row.id,
                    data,
                    source: row.source,
                    created_at: row.created_at,
                    updated_at: row.updated_at,
                    title,
                    titles: related,
                    masked: view.masked.clone(),
                }
            })
            .collect())
    }

    /// One live record of `view`'s table, as stored.
    pub(crate) async fn row(&self, conn: &mut store::Conn, view: &View, id: RecordId, lock: bool) -> Result<Row> {
        let lock = if lock { " FOR UPDATE" } else { "" };
        diesel::sql_query(format!(
            "SELECT {ROW_COLUMNS} FROM data_records WHERE id = $1 AND table_id = $2 AND deleted_at IS NULL{lock}"
        ))
        .bind::<SqlUuid, _>(id)
        .bind::<SqlUuid, _>(view.table.id())
        .get_result(conn)
        .await
        .optional()?
        .ok_or_else(|| kernel::Error::not_found("Record"))
    }

    /// `GET .../records/{record}`.
    pub async fn get_record(&self, caller: &Caller, table: TableId, record: RecordId) -> Result<Record> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let view = self.view(&mut conn, caller, table).await?;
        let row = self.row(&mut conn, &view, record, false).await?;
        let mut records = self.render(&mut conn, caller, &view, vec![row]).await?;
        records.pop().ok_or_else(|| kernel::Error::not_found("Record"))
    }
}
