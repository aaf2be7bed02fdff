//! The data service: what the REST routes (and later MCP) call, and the access rules every
//! call goes through (contract: Authentication, the data rows).

use std::sync::{Arc, OnceLock};

use diesel::sql_types::{BigInt, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::RunQueryDsl;
use kernel::{Caller, Clock, Error, Permission, Result, TenantId};
use serde_json::Value;
use store::Prepare;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::definition::{Column, Definition};

/// Cheap to clone.
#[derive(Clone)]
pub struct DataService {
    pub(crate) pool: store::Pool,
    pub(crate) clock: Clock,
    /// Where file URLs point (`SVC_PUBLIC_URL`).
    pub(crate) public_url: String,
    /// The key signing file URLs, read from the database once.
    pub(crate) file_key: Arc<OnceLock<Vec<u8>>>,
}

impl DataService {
    pub fn new(pool: store::Pool, clock: Clock, public_url: impl Into<String>) -> Self {
        let public_url = public_url.into().trim_end_matches('/').to_owned();
        Self { pool, clock, public_url, file_key: Arc::default() }
    }

    /// The service's time: what a named overview range ends at (`groups::parse_range`) for a
    /// caller that has no clock of its own (the MCP tools).
    pub fn now(&self) -> time::OffsetDateTime {
        self.clock.now()
    }

    /// A connection that sees `tenant`'s rows only (row-level security).
    pub(crate) async fn conn(&self, tenant: kernel::TenantId) -> Result<store::PooledConn> {
        store::connect(&self.pool, tenant).await
    }

    /// A connection across tenants, for work that finds out whose it is (docs/operations.md,
    /// "Row-level security").
    pub(crate) async fn system_conn(&self) -> Result<store::PooledConn> {
        store::connect_system(&self.pool).await
    }

    /// Registers the index builder and dropper.
    pub fn register_jobs(self: &Arc<Self>, registry: &mut store::jobs::Registry) {
        registry.register::<crate::apply::BuildIndexes>(self.clone());
        registry.register::<crate::apply::DropIndex>(self.clone());
    }

    /// The caller's view of a table: 404 unless the caller may read it.
    pub(crate) async fn view(&self, conn: &mut store::Conn, caller: &Caller, table: crate::TableId) -> Result<View> {
        reader(caller)?;
        let table = load(conn, caller.tenant_id, TableKey::Id(table.0)).await?;
        View::of(table, caller).ok_or_else(|| Error::not_found("Table"))
    }
}

/// Data reads need an issuer that is known and active, and `data.view`.
pub(crate) fn reader(caller: &Caller) -> Result<()> {
    caller.require_issuer()?;
    caller.require(Permission::DATA_VIEW)
}

/// A table as stored.
#[derive(Debug, Clone, QueryableByName)]
pub struct TableRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = BigInt)]
    pub tenant_id: i64,
    #[diesel(sql_type = SqlUuid)]
    pub group_id: Uuid,
    #[diesel(sql_type = Text)]
    pub slug: String,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub description: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub icon: Option<String>,
    #[diesel(sql_type = Integer)]
    pub position: i32,
    #[diesel(sql_type = Jsonb)]
    pub definition: Value,
    #[diesel(sql_type = BigInt)]
    pub sort_index_threshold: i64,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: OffsetDateTime,
    #[diesel(sql_type = Timestamptz)]
    pub updated_at: OffsetDateTime,
    /// `{column_key: status}` of its indexes (`$q` for the search index).
    #[diesel(sql_type = Jsonb)]
    pub indexes: Value,
}

/// A table with its definition read.
#[derive(Debug, Clone)]
pub struct Table {
    pub row: TableRow,
    pub definition: Definition,
}

impl Table {
    pub fn id(&self) -> Uuid {
        self.row.id
    }

    /// The status of a column's index (`building`, `ready`, `failed`), if it has one.
    pub fn index_status(&self, column_key: &str) -> Option<&str> {
        self.row.indexes.get(column_key).and_then(Value::as_str)
    }

    pub(crate) fn from_row(row: TableRow) -> Result<Self> {
        let definition = serde_json::from_value(row.definition.clone())
            .map_err(|e| Error::internal(format!("table {} has an unreadable definition: {e}", row.id)))?;
        Ok(Self { row, definition })
    }
}

/// A table's columns, and its indexes' statuses read in the same query.
pub(crate) const TABLE_COLUMNS: &str = "id, tenant_id, group_id, slug, name, description, icon, position, definition,
    sort_index_threshold, created_at, updated_at,
    (SELECT coalesce(jsonb_object_agg(i.column_key, i.status), '{}') FROM data_indexes i
        WHERE i.tenant_id = data_tables.tenant_id AND i.table_id = data_tables.id)
        AS indexes";

pub(crate) enum TableKey<'a> {
    Id(Uuid),
    Slug(&'a str),
}

/// One table of the tenant; another tenant's is not found.
pub(crate) async fn load(conn: &mut store::Conn, tenant: TenantId, key: TableKey<'_>) -> Result<Table> {
    let query = format!("SELECT {TABLE_COLUMNS} FROM data_tables WHERE tenant_id = $1 AND ");
    let row: Option<TableRow> = match key {
        TableKey::Id(id) => {
            diesel::sql_query(query + "id = $2")
                .bind::<BigInt, _>(tenant.0)
                .bind::<SqlUuid, _>(id)
                .prepared()
                .get_result(conn)
                .await
        }
        TableKey::Slug(slug) => {
            diesel::sql_query(query + "slug = $2")
                .bind::<BigInt, _>(tenant.0)
                .bind::<Text, _>(slug)
                .prepared()
                .get_result(conn)
                .await
        }
    }
    .optional()?;
    Table::from_row(row.ok_or_else(|| Error::not_found("Table"))?)
}

/// Every table of the tenant, by group and position.
pub(crate) async fn load_all(conn: &mut store::Conn, tenant: TenantId) -> Result<Vec<Table>> {
    let rows: Vec<TableRow> = diesel::sql_query(format!(
        "SELECT {TABLE_COLUMNS} FROM data_tables WHERE tenant_id = $1 ORDER BY group_id, position, name"
    ))
    .bind::<BigInt, _>(tenant.0)
    .get_results(conn)
    .await?;
    rows.into_iter().map(Table::from_row).collect()
}

/// What one caller may do with one table.
#[derive(Debug, Clone)]
pub struct View {
    pub table: Table,
    /// Columns whose values this caller may not read.
    pub masked: Vec<String>,
    /// `data.records.edit` and the table's write grant.
    pub can_write: bool,
    caller_allows: Vec<String>,
}

impl View {
    /// `None` when the caller may not read the table.
    pub fn of(table: Table, caller: &Caller) -> Option<Self> {
        let access = &table.definition.access;
        if !caller.allows(&access.read) {
            return None;
        }
        let masked = table
            .definition
            .columns
            .iter()
            .filter(|c| access.columns.get(&c.key).and_then(|a| a.read.as_ref()).is_some_and(|p| !caller.allows(p)))
            .map(|c| c.key.clone())
            .collect();
        let can_write = caller.allows(Permission::DATA_RECORDS_EDIT.as_str()) && caller.allows(&access.write);
        // the column and move permissions this caller holds, so later checks need no caller
        let mut names: Vec<&String> = access.columns.values().filter_map(|a| a.write.as_ref()).collect();
        let moves = table.definition.columns.iter().flat_map(|c| &c.config.moves).filter_map(|m| m.permission.as_ref());
        names.extend(moves);
        let caller_allows = names.into_iter().filter(|p| caller.allows(p)).cloned().collect();
        Some(Self { table, masked, can_write, caller_allows })
    }

    pub fn definition(&self) -> &Definition {
        &self.table.definition
    }

    pub fn is_masked(&self, key: &str) -> bool {
        self.masked.iter().any(|k| k == key)
    }

    pub fn holds(&self, permission: &str) -> bool {
        self.caller_allows.iter().any(|p| p == permission)
    }

    /// Whether the caller may write this column: the table's write grant, the column readable,
    /// and the column's own write permission if it has one.
    pub fn can_write_column(&self, column: &Column) -> bool {
        let own = self.definition().access.columns.get(&column.key).and_then(|a| a.write.as_ref());
        self.can_write && !self.is_masked(&column.key) && own.is_none_or(|p| self.holds(p))
    }

    /// 403 unless the caller may write records of this table.
    pub fn require_write(&self) -> Result<()> {
        if self.can_write {
            Ok(())
        } else {
            Err(Error::forbidden(format!(
                "This key may not write records of {} (it needs {} and {}).",
                self.table.row.slug,
                Permission::DATA_RECORDS_EDIT,
                self.definition().access.write
            )))
        }
    }
}
