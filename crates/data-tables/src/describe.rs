//! What a caller may know about tables: the list (`GET /data/tables`) and one table's schema
//! blocks (`GET /data/tables/{table}/schema`, contract: Data table, column and record).

use std::collections::BTreeMap;

use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use kernel::{Caller, Result};
use serde::Serialize;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::definition::{ColumnType, Config};
use crate::filter::System;
use crate::service::{TableRow, View, load_all, reader};
use crate::{DataService, HISTORY_PAGE, PAGE_DEFAULT, PAGE_MAX, RECORD_BYTES, SEARCH_COLUMNS, filter};

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct GroupRef {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
}

/// A table in lists.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TableSummary {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub description: Option<String>,
    pub icon: Option<String>,
    pub group: GroupRef,
    pub record_count: i64,
    pub column_count: usize,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Tables {
    pub tables: Vec<TableSummary>,
}

#[derive(QueryableByName)]
struct Counted {
    #[diesel(sql_type = SqlUuid)]
    table_id: Uuid,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Live records per table.
pub(crate) async fn record_counts(conn: &mut store::Conn, tables: &[Uuid]) -> Result<BTreeMap<Uuid, i64>> {
    let counted: Vec<Counted> = diesel::sql_query(
        "SELECT table_id, count(*) AS n FROM data_records
         WHERE table_id = ANY($1) AND deleted_at IS NULL GROUP BY table_id",
    )
    .bind::<Array<SqlUuid>, _>(tables)
    .get_results(conn)
    .await?;
    Ok(counted.into_iter().map(|c| (c.table_id, c.n)).collect())
}

/// The groups of a tenant by id.
pub(crate) async fn group_refs(conn: &mut store::Conn, tenant: kernel::TenantId) -> Result<BTreeMap<Uuid, GroupRef>> {
    let rows = crate::groups::group_rows(conn, tenant).await?;
    Ok(rows.into_iter().map(|g| (g.id, GroupRef { id: g.id, slug: g.slug, name: g.name })).collect())
}

pub(crate) fn summary(row: &TableRow, columns: usize, group: GroupRef, record_count: i64) -> TableSummary {
    TableSummary {
        id: row.id,
        name: row.name.clone(),
        slug: row.slug.clone(),
        description: row.description.clone(),
        icon: row.icon.clone(),
        group,
        record_count,
        column_count: columns,
        updated_at: row.updated_at,
    }
}

impl DataService {
    /// The tables this caller may read, with their summaries.
    pub(crate) async fn visible(&self, conn: &mut store::Conn, caller: &Caller) -> Result<Vec<(View, TableSummary)>> {
        reader(caller)?;
        let views: Vec<View> =
            load_all(conn, caller.tenant_id).await?.into_iter().filter_map(|t| View::of(t, caller)).collect();
        let ids: Vec<Uuid> = views.iter().map(|v| v.table.id()).collect();
        let counts = record_counts(conn, &ids).await?;
        let groups = group_refs(conn, caller.tenant_id).await?;
        Ok(views
            .into_iter()
            .filter_map(|view| {
                let group = groups.get(&view.table.row.group_id)?.clone();
                let count = counts.get(&view.table.id()).copied().unwrap_or(0);
                let summary = summary(&view.table.row, view.definition().columns.len(), group, count);
                Some((view, summary))
            })
            .collect())
    }

    /// `GET /data/tables`.
    pub async fn tables(&self, caller: &Caller) -> Result<Tables> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let mut tables: Vec<TableSummary> =
            self.visible(&mut conn, caller).await?.into_iter().map(|(_, s)| s).collect();
        tables.sort_by(|a, b| (&a.group.name, &a.name).cmp(&(&b.group.name, &b.name)));
        Ok(Tables { tables })
    }

    /// `GET /data/tables/{table}/schema`.
    pub async fn schema(&self, caller: &Caller, table: crate::TableId) -> Result<Value> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let view = self.view(&mut conn, caller, table).await?;
        let row = &view.table.row;
        let definition = view.definition();
        let count = record_counts(&mut conn, &[row.id]).await?.get(&row.id).copied().unwrap_or(0);
        let group = group_refs(&mut conn, caller.tenant_id).await?.remove(&row.group_id);
        let columns: Vec<Value> = definition
            .columns
            .iter()
            .enumerate()
            .map(|(position, c)| {
                let status = if c.indexed { view.table.index_status(&c.key).unwrap_or("building") } else { "none" };
                json!({
                    "key": c.key, "label": c.label, "type": c.kind.as_str(), "required": c.required,
                    "unique": c.unique, "indexed": c.indexed, "index": {"status": status},
                    "masked": view.is_masked(&c.key), "writable": c.kind != ColumnType::AutoNumber && view.can_write_column(c),
                    "config": config_value(&c.config), "position": position,
                })
            })
            .collect();
        let types: Map<String, Value> = ColumnType::ALL
            .iter()
            .map(|t| {
                let operators: Vec<&str> = t.operators().iter().map(|o| o.as_str()).collect();
                let value = json!({
                    "operators": operators, "sortable": t.sortable(), "searchable": t.is_textual(), "value": t.value(),
                });
                (t.as_str().to_owned(), value)
            })
            .collect();
        let system_columns: Vec<Value> = System::ALL
            .iter()
            .map(|s| {
                let operators: Vec<&str> = s.operators().iter().map(|o| o.as_str()).collect();
                json!({"key": s.key(), "type": s.kind(), "operators": operators, "sortable": s.sortable()})
            })
            .collect();
        let base = format!("/api/v3/data/tables/{}", row.id);
        let actions = json!([
            {"name": "list", "method": "GET", "path": format!("{base}/records")},
            {"name": "create", "method": "POST", "path": format!("{base}/records")},
            {"name": "read", "method": "GET", "path": format!("{base}/records/{{record}}")},
            {"name": "update", "method": "PATCH", "path": format!("{base}/records/{{record}}")},
            {"name": "delete", "method": "DELETE", "path": format!("{base}/records/{{record}}")},
            {"name": "history", "method": "GET", "path": format!("{base}/records/{{record}}/history")},
            {"name": "states", "method": "GET", "path": format!("{base}/states")},
        ]);
        let search: Vec<&str> = definition.search_columns().iter().map(|c| c.key.as_str()).collect();
        Ok(json!({
            "table": {
                "id": row.id, "slug": row.slug, "name": row.name, "description": row.description, "icon": row.icon,
                "group": group, "record_count": count, "search_columns": search,
                "created_at": rfc3339(row.created_at), "updated_at": rfc3339(row.updated_at),
            },
            "columns": columns,
            "types": types,
            "system_columns": system_columns,
            "access": definition.access,
            "unique_sets": definition.unique_sets,
            "limits": {
                "record_bytes": RECORD_BYTES, "filter_leaves": filter::MAX_LEAVES, "filter_depth": filter::MAX_DEPTH,
                "filter_in_values": filter::MAX_IN, "search_columns": SEARCH_COLUMNS, "page_default": PAGE_DEFAULT,
                "page_max": PAGE_MAX, "history_page": HISTORY_PAGE, "records": definition.limits.records,
            },
            "sort_index_threshold": row.sort_index_threshold,
            "actions": actions,
            "can": {"read": true, "create": view.can_write, "update": view.can_write, "delete": view.can_write},
        }))
    }
}

fn config_value(config: &Config) -> Value {
    serde_json::to_value(config).unwrap_or_else(|_| json!({}))
}

pub(crate) fn rfc3339(at: OffsetDateTime) -> String {
    at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}
