//! `apply`: creates or alters a group and its tables by slug from a definition file (the admin
//! CLI's `data-table apply`; MCP later). One transaction writes the definitions, rebuilds
//! unique keys whose rules changed and queues the index builds, which run concurrently in the
//! background (`data.build_index`) so a large table stays writable meanwhile.

use std::collections::BTreeMap;
use std::sync::Arc;

use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Bool, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::error::FieldErrors;
use kernel::{Error, Result, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use store::jobs::{Enqueue, Job, JobContext, JobError};
use uuid::Uuid;

use crate::DataService;
use crate::definition::{self, Access, ColumnFile, Definition, Limits};
use crate::filter::{self, Tree};
use crate::records::write::{sequence, unique_keys};
use crate::service::{Table, load_all};
use crate::sql::{self, Sql};

/// The definition file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    group: GroupFile,
    tables: Vec<TableFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupFile {
    slug: String,
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    reports: Vec<Report>,
}

/// A saved report: a named filter over one table of the group.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub key: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The table's slug.
    pub table: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    slug: String,
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    icon: Option<String>,
    #[serde(default)]
    access: Access,
    #[serde(default)]
    sort_index_threshold: Option<i64>,
    #[serde(default)]
    limits: Limits,
    columns: Vec<ColumnFile>,
    #[serde(default)]
    unique_sets: Vec<Vec<String>>,
}

pub const DEFAULT_SORT_INDEX_THRESHOLD: i64 = 10_000;

#[derive(Debug, Clone, Serialize)]
pub struct AppliedGroup {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct AppliedTable {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
}

/// What `apply` made or changed.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    pub group: AppliedGroup,
    pub tables: Vec<AppliedTable>,
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

#[derive(QueryableByName)]
struct StoredRecord {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Jsonb)]
    data: Value,
}

/// An index a table has or waits for (`data_indexes`).
#[derive(QueryableByName)]
struct IndexRow {
    #[diesel(sql_type = BigInt)]
    tenant_id: i64,
    #[diesel(sql_type = SqlUuid)]
    table_id: Uuid,
    #[diesel(sql_type = Text)]
    column_key: String,
    #[diesel(sql_type = Text)]
    index_name: String,
    #[diesel(sql_type = Text)]
    expression: String,
}

/// An index a table wants: a column's (for sorts and ranges) or the search index (`$q`).
struct WantedIndex {
    column_key: String,
    /// What goes after `ON data_records`.
    expression: String,
}

pub const SEARCH_INDEX: &str = "$q";

/// `trigram_opclass`: the operator class of the search index (store::search).
fn wanted_indexes(definition: &Definition, trigram_opclass: &str) -> Vec<WantedIndex> {
    let mut wanted: Vec<WantedIndex> = definition
        .columns
        .iter()
        .filter(|c| c.indexed)
        .map(|c| WantedIndex { column_key: c.key.clone(), expression: format!("(({}), id)", sql::value_of(&c.key)) })
        .collect();
    let search: Vec<&str> = definition.search_columns().iter().map(|c| c.key.as_str()).collect();
    if !search.is_empty() {
        let expression = format!("USING gin ({} {trigram_opclass})", sql::search_expression(&search));
        wanted.push(WantedIndex { column_key: SEARCH_INDEX.to_owned(), expression });
    }
    wanted
}

/// A name for the index of `expression` on `table`, within PostgreSQL's 63 characters.
fn index_name(table: Uuid, expression: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, expression.as_bytes());
    format!("dx_{}_{}", table.simple(), hex::encode(&digest.as_ref()[..4]))
}

impl DataService {
    /// Creates or alters the group and tables of a definition file, by slug.
    pub async fn apply(&self, tenant: TenantId, file: Value) -> Result<Applied> {
        let file: File = serde_json::from_value(file).map_err(|e| Error::field("definition", e.to_string()))?;
        let mut conn = self.conn(tenant).await?;
        let existing = load_all(&mut conn, tenant).await?;
        let calling_code = accounts::tenants::get(&mut conn, tenant).await?.default_country_code;
        let region = kernel::phone::region_of(&calling_code).unwrap_or_default();
        let mut errors = FieldErrors::new();
        if !definition::is_name(&file.group.slug) {
            errors.add("group.slug", "A slug is a lower-case letter, then letters, digits or _ (at most 63).");
        }
        if file.group.name.trim().is_empty() {
            errors.add("group.name", "The group needs a name.");
        }
        let file_slugs: Vec<&str> = file.tables.iter().map(|t| t.slug.as_str()).collect();
        let mut targets: Vec<&str> = existing.iter().map(|t| t.row.slug.as_str()).collect();
        targets.extend(&file_slugs);

        let mut built = Vec::new();
        for (i, table) in file.tables.iter().enumerate() {
            let at = format!("tables[{i}]");
            if !definition::is_name(&table.slug) {
                errors.add(
                    format!("{at}.slug"),
                    "A slug is a lower-case letter, then letters, digits or _ (at most 63).",
                );
            } else if file_slugs.iter().filter(|s| **s == table.slug).count() > 1 {
                errors.add(format!("{at}.slug"), format!("The slug {:?} is used twice.", table.slug));
            }
            if table.name.trim().is_empty() {
                errors.add(format!("{at}.name"), "A table needs a name.");
            }
            if table.sort_index_threshold.is_some_and(|n| n < 1) {
                errors.add(format!("{at}.sort_index_threshold"), "sort_index_threshold is at least 1.");
            }
            let mut definition = definition::build(
                table.columns.clone(),
                table.access.clone(),
                table.unique_sets.clone(),
                table.limits.clone(),
                &targets,
                &at,
                &mut errors,
            );
            definition.default_region(&region);
            built.push(definition);
        }
        for (i, report) in file.group.reports.iter().enumerate() {
            let at = format!("group.reports[{i}]");
            let Some(index) = file_slugs.iter().position(|s| *s == report.table) else {
                errors.add(format!("{at}.table"), format!("No table {:?} in this file.", report.table));
                continue;
            };
            let tree = report.filter.as_ref().map(Tree::parse).transpose().map(Option::flatten);
            let checked = tree.and_then(|tree| match tree {
                Some(tree) => filter::compile(&tree, &built[index], &[], &mut Sql::default()),
                None => Ok(()),
            });
            if let Err(e) = checked {
                errors.add(format!("{at}.filter"), e.message.clone());
            }
        }
        errors.finish()?;

        let now = self.clock.now();
        let group_id = Uuid::now_v7();
        let applied = conn
            .transaction::<Applied, Error, _>(async |conn| {
                let group: Id = diesel::sql_query(
                    "INSERT INTO data_groups (id, tenant_id, slug, name, description, reports, created_at, updated_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
                         ON CONFLICT (tenant_id, slug) DO UPDATE
                            SET name = excluded.name, description = excluded.description,
                                reports = excluded.reports, updated_at = excluded.updated_at
                         RETURNING id",
                )
                .bind::<SqlUuid, _>(group_id)
                .bind::<BigInt, _>(tenant.0)
                .bind::<Text, _>(&file.group.slug)
                .bind::<Text, _>(file.group.name.trim())
                .bind::<Nullable<Text>, _>(file.group.description.as_deref())
                .bind::<Jsonb, _>(serde_json::to_value(&file.group.reports).map_err(Error::internal)?)
                .bind::<Timestamptz, _>(now)
                .get_result(conn)
                .await?;
                let mut tables = Vec::new();
                for (position, (table, definition)) in file.tables.iter().zip(built).enumerate() {
                    let before = existing.iter().find(|t| t.row.slug == table.slug);
                    if let Some(before) = before
                        && before.row.group_id != group.id
                    {
                        return Err(Error::field(
                            format!("tables[{position}].slug"),
                            format!("The slug {:?} belongs to a table of another group.", table.slug),
                        ));
                    }
                    let id = self.write_table(conn, tenant, group.id, position, table, &definition, before).await?;
                    tables.push(AppliedTable { id, slug: table.slug.clone(), name: table.name.trim().to_owned() });
                }
                Ok(Applied {
                    group: AppliedGroup {
                        id: group.id,
                        slug: file.group.slug.clone(),
                        name: file.group.name.trim().to_owned(),
                    },
                    tables,
                })
            })
            .await?;
        Ok(applied)
    }

    /// Writes one table's definition; its sequence, unique keys and indexes follow it.
    #[allow(clippy::too_many_arguments)]
    async fn write_table(
        &self,
        conn: &mut store::Conn,
        tenant: TenantId,
        group: Uuid,
        position: usize,
        table: &TableFile,
        definition: &Definition,
        before: Option<&Table>,
    ) -> Result<Uuid> {
        let now = self.clock.now();
        let row: Id = diesel::sql_query(
            "INSERT INTO data_tables (id, tenant_id, group_id, slug, name, description, icon, position, definition,
                                      sort_index_threshold, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
             ON CONFLICT (tenant_id, slug) DO UPDATE
                SET name = excluded.name, description = excluded.description, icon = excluded.icon,
                    position = excluded.position, definition = excluded.definition,
                    sort_index_threshold = excluded.sort_index_threshold, updated_at = excluded.updated_at
             RETURNING id",
        )
        .bind::<SqlUuid, _>(Uuid::now_v7())
        .bind::<BigInt, _>(tenant.0)
        .bind::<SqlUuid, _>(group)
        .bind::<Text, _>(&table.slug)
        .bind::<Text, _>(table.name.trim())
        .bind::<Nullable<Text>, _>(table.description.as_deref())
        .bind::<Nullable<Text>, _>(table.icon.as_deref())
        .bind::<Integer, _>(position as i32)
        .bind::<Jsonb, _>(serde_json::to_value(definition).map_err(Error::internal)?)
        .bind::<BigInt, _>(table.sort_index_threshold.unwrap_or(DEFAULT_SORT_INDEX_THRESHOLD))
        .bind::<Timestamptz, _>(now)
        .get_result(conn)
        .await?;
        let id = row.id;
        if definition.columns.iter().any(|c| c.kind == crate::definition::ColumnType::AutoNumber) {
            diesel::sql_query(format!("CREATE SEQUENCE IF NOT EXISTS {}", sequence(id))).execute(conn).await?;
        }
        let old_rules = before.map(|t| unique_rules(&t.definition)).unwrap_or_default();
        if before.is_some() && unique_rules(definition) != old_rules {
            rebuild_unique_keys(conn, tenant, id, definition).await?;
        }
        self.plan_indexes(conn, tenant, id, definition).await?;
        Ok(id)
    }

    /// Records the indexes the definition wants and queues their builds; indexes it no longer
    /// wants are dropped by the same job.
    async fn plan_indexes(
        &self,
        conn: &mut store::Conn,
        tenant: TenantId,
        table: Uuid,
        definition: &Definition,
    ) -> Result<()> {
        let current: Vec<IndexRow> = diesel::sql_query(
            "SELECT tenant_id, table_id, column_key, index_name, expression FROM data_indexes
             WHERE tenant_id = $2 AND table_id = $1",
        )
        .bind::<SqlUuid, _>(table)
        .bind::<BigInt, _>(tenant.0)
        .get_results(conn)
        .await?;
        let wanted = wanted_indexes(definition, store::search::trigram_opclass(conn).await?);
        let now = self.clock.now();
        for old in &current {
            let kept = wanted.iter().any(|w| w.column_key == old.column_key && w.expression == old.expression);
            if !kept {
                store::jobs::enqueue(conn, &DropIndex { index_name: old.index_name.clone() }, enqueue(tenant)).await?;
                diesel::sql_query(
                    "DELETE FROM data_indexes WHERE tenant_id = $3 AND table_id = $1 AND column_key = $2",
                )
                .bind::<SqlUuid, _>(table)
                .bind::<Text, _>(&old.column_key)
                .bind::<BigInt, _>(tenant.0)
                .execute(conn)
                .await?;
            }
        }
        for want in wanted {
            let ready = current.iter().any(|c| c.column_key == want.column_key && c.expression == want.expression);
            if ready {
                continue;
            }
            diesel::sql_query(
                "INSERT INTO data_indexes (tenant_id, table_id, column_key, index_name, expression, status, updated_at)
                 VALUES ($6, $1, $2, $3, $4, 'building', $5)",
            )
            .bind::<SqlUuid, _>(table)
            .bind::<Text, _>(&want.column_key)
            .bind::<Text, _>(index_name(table, &want.expression))
            .bind::<Text, _>(&want.expression)
            .bind::<Timestamptz, _>(now)
            .bind::<BigInt, _>(tenant.0)
            .execute(conn)
            .await?;
            store::jobs::enqueue(conn, &BuildIndexes {}, enqueue(tenant)).await?;
        }
        Ok(())
    }
}

fn enqueue(tenant: TenantId) -> Enqueue {
    Enqueue { tenant_id: Some(tenant), ..Enqueue::default() }
}

/// What uniqueness a definition asks for: key names and their columns' keys and types.
fn unique_rules(definition: &Definition) -> Vec<(String, Vec<(String, &'static str)>)> {
    definition
        .unique_keys()
        .into_iter()
        .map(|(name, columns)| (name, columns.iter().map(|c| (c.key.clone(), c.kind.as_str())).collect()))
        .collect()
}

/// Rewrites a table's unique keys from its live records; two records sharing a value refuse
/// the whole apply.
async fn rebuild_unique_keys(
    conn: &mut store::Conn,
    tenant: TenantId,
    table: Uuid,
    definition: &Definition,
) -> Result<()> {
    diesel::sql_query("DELETE FROM data_record_keys WHERE tenant_id = $2 AND table_id = $1")
        .bind::<SqlUuid, _>(table)
        .bind::<BigInt, _>(tenant.0)
        .execute(conn)
        .await?;
    let records: Vec<StoredRecord> = diesel::sql_query(
        "SELECT id, data FROM data_records WHERE tenant_id = $2 AND table_id = $1 AND deleted_at IS NULL",
    )
    .bind::<SqlUuid, _>(table)
    .bind::<BigInt, _>(tenant.0)
    .get_results(conn)
    .await?;
    let mut seen: BTreeMap<(String, String), Uuid> = BTreeMap::new();
    let (mut names, mut values, mut ids) = (Vec::new(), Vec::new(), Vec::new());
    for record in records {
        let data = record.data.as_object().cloned().unwrap_or_else(Map::new);
        for key in unique_keys(definition, &data) {
            if let Some(other) = seen.insert(key.clone(), record.id) {
                return Err(Error::conflict(format!(
                    "{} cannot be unique: records {other} and {} share the value {}.",
                    key.0, record.id, key.1
                ))
                .with_detail("field", key.0));
            }
            names.push(key.0);
            values.push(key.1);
            ids.push(record.id);
        }
    }
    diesel::sql_query(
        "INSERT INTO data_record_keys (tenant_id, table_id, name, value, record_id)
         SELECT $5, $1, u.name, u.value, u.record_id FROM unnest($2::text[], $3::text[], $4::uuid[]) AS u (name, value, record_id)",
    )
    .bind::<SqlUuid, _>(table)
    .bind::<Array<Text>, _>(names)
    .bind::<Array<Text>, _>(values)
    .bind::<Array<SqlUuid>, _>(ids)
    .bind::<BigInt, _>(tenant.0)
    .execute(conn)
    .await?;
    Ok(())
}

/// Index builds and drops take turns: two concurrent `CREATE INDEX CONCURRENTLY` on
/// `data_records` would each wait for the other's transaction. A session advisory lock (never
/// waited for, only tried) lets one worker at a time do them.
const INDEX_LOCK: i64 = 0x6461_7461_5f69_7864; // "data_idx"

#[derive(QueryableByName)]
struct Locked {
    #[diesel(sql_type = Bool)]
    locked: bool,
}

async fn try_lock(conn: &mut store::Conn) -> Result<bool> {
    let locked: Locked = diesel::sql_query("SELECT pg_try_advisory_lock($1) AS locked")
        .bind::<BigInt, _>(INDEX_LOCK)
        .get_result(conn)
        .await?;
    Ok(locked.locked)
}

async fn unlock(conn: &mut store::Conn) -> Result<()> {
    diesel::sql_query("SELECT pg_advisory_unlock($1)").bind::<BigInt, _>(INDEX_LOCK).execute(conn).await?;
    Ok(())
}

async fn next_pending(conn: &mut store::Conn) -> Result<Option<IndexRow>> {
    let rows: Vec<IndexRow> = diesel::sql_query(
        "SELECT tenant_id, table_id, column_key, index_name, expression FROM data_indexes
         WHERE status = 'building' ORDER BY updated_at, table_id, column_key LIMIT 1",
    )
    .get_results(conn)
    .await?;
    Ok(rows.into_iter().next())
}

/// Builds one index concurrently (outside any transaction, so the table stays writable); an
/// invalid leftover of an earlier failed build is dropped first. A failure marks the index
/// `failed` with the database's message.
async fn build(conn: &mut store::Conn, index: &IndexRow, now: time::OffsetDateTime) -> Result<()> {
    #[derive(QueryableByName)]
    struct Valid {
        #[diesel(sql_type = Bool)]
        valid: bool,
    }
    let existing: Vec<Valid> = diesel::sql_query(
        "SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1",
    )
    .bind::<Text, _>(&index.index_name)
    .get_results(conn)
    .await?;
    if existing.iter().any(|e| !e.valid) {
        diesel::sql_query(format!("DROP INDEX CONCURRENTLY IF EXISTS {}", index.index_name)).execute(conn).await?;
    }
    // a column's expression is `((data->'key'), id)`; the search's `USING gin (...)`
    let (using, columns) = match index.expression.strip_prefix("USING ") {
        Some(rest) => rest.split_once(' ').map(|(m, c)| (format!("USING {m}"), c.to_owned())).unwrap_or_default(),
        None => (String::new(), index.expression.clone()),
    };
    let built = diesel::sql_query(format!(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS {} ON data_records {using} {columns} WHERE {}",
        index.index_name,
        sql::live(index.table_id)
    ))
    .execute(conn)
    .await;
    let (status, error) = match &built {
        Ok(_) => ("ready", None),
        Err(e) => {
            tracing::error!(index = %index.index_name, error = %e, "building a data-table index failed");
            ("failed", Some(e.to_string()))
        }
    };
    diesel::sql_query(
        "UPDATE data_indexes SET status = $3, error = $4, updated_at = $5
         WHERE tenant_id = $7 AND table_id = $1 AND column_key = $2 AND index_name = $6",
    )
    .bind::<SqlUuid, _>(index.table_id)
    .bind::<Text, _>(&index.column_key)
    .bind::<Text, _>(status)
    .bind::<Nullable<Text>, _>(error)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(&index.index_name)
    .bind::<BigInt, _>(index.tenant_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Builds every index waiting in `data_indexes` (any table), one at a time. A run that finds
/// another worker building leaves the work to it: that worker looks again after it lets go.
#[derive(Debug, Serialize, Deserialize)]
pub struct BuildIndexes {}

impl Job for BuildIndexes {
    const NAME: &'static str = "data.build_indexes";
    type State = DataService;

    async fn run(self, _state: Arc<DataService>, ctx: JobContext) -> Result<(), JobError> {
        let mut conn = ctx.pool.owner_connection().await?;
        loop {
            if !try_lock(&mut conn).await? {
                return Ok(());
            }
            let mut outcome = Ok(());
            while let Some(index) = next_pending(&mut conn).await? {
                outcome = build(&mut conn, &index, ctx.clock.now()).await;
                if outcome.is_err() {
                    break;
                }
            }
            unlock(&mut conn).await?;
            outcome?;
            // an index queued while this run held the lock, by a run that then gave way
            if next_pending(&mut conn).await?.is_none() {
                return Ok(());
            }
        }
    }
}

/// Drops an index a table no longer wants, when no index build is running.
#[derive(Debug, Serialize, Deserialize)]
pub struct DropIndex {
    pub index_name: String,
}

impl Job for DropIndex {
    const NAME: &'static str = "data.drop_index";
    type State = DataService;

    async fn run(self, _state: Arc<DataService>, ctx: JobContext) -> Result<(), JobError> {
        let mut conn = ctx.pool.owner_connection().await?;
        if !try_lock(&mut conn).await? {
            return Err(JobError("an index build is running; dropping later".into()));
        }
        // a table still wanting this very index (applied back and forth) keeps it
        #[derive(QueryableByName)]
        struct Wanted {
            #[diesel(sql_type = BigInt)]
            n: i64,
        }
        let wanted: Result<Wanted> = diesel::sql_query("SELECT count(*) AS n FROM data_indexes WHERE index_name = $1")
            .bind::<Text, _>(&self.index_name)
            .get_result(&mut conn)
            .await
            .map_err(Error::from);
        let dropped = match wanted {
            Ok(w) if w.n == 0 => diesel::sql_query(format!("DROP INDEX CONCURRENTLY IF EXISTS {}", self.index_name))
                .execute(&mut conn)
                .await
                .map(|_| ())
                .map_err(Error::from),
            other => other.map(|_| ()),
        };
        unlock(&mut conn).await?;
        Ok(dropped?)
    }
}
