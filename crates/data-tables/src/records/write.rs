//! Creating, changing and deleting records. Each write checks the values by type, the state
//! machine, relations, files, size and quota, then writes the record, its unique keys and its
//! history entry together; a unique key taken by another record is a 409 naming the field.

use std::collections::BTreeMap;

use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::error::FieldErrors;
use kernel::{Caller, Error, Result};
use serde_json::{Map, Value, json};
use store::Prepare;
use uuid::Uuid;

use super::{ROW_COLUMNS, Record, Row};
use crate::definition::{ColumnType, Definition};
use crate::service::{TableKey, View, load};
use crate::{DataService, RECORD_BYTES, RecordId, TableId, files, states, values};

/// `POST /data/tables/{table}/records` and `PATCH .../records/{record}`. The columns are the
/// table's own, defined at run time, so `data` stays a dynamic object: the service reads it
/// column by column, by each column's type (an unknown key is refused by name, `null` clears an
/// optional value on a change).
#[derive(Debug, Clone, Default, serde::Deserialize, utoipa::ToSchema)]
pub struct RecordWrite {
    /// The values by column key: `{"name": "Amina", "score": 82.5}`.
    #[schema(value_type = Object, required = true)]
    pub data: Option<Value>,
}

impl RecordWrite {
    /// A write of these values.
    pub fn of(data: Value) -> Self {
        Self { data: Some(data) }
    }
}

/// Where a record came from: `api` for the REST API (fixed afterwards).
pub const SOURCE_API: &str = "api";
/// Records a language-model client wrote through an MCP tool.
pub const SOURCE_MCP: &str = "mcp";
/// Records an operator added (demo data).
pub const SOURCE_ADMIN: &str = "admin";

/// The name of a table's auto-number sequence, in a schema of their own: the service role may
/// create sequences there and nothing in `public` (docs/operations.md, "Row-level security").
pub(crate) fn sequence(table: Uuid) -> String {
    format!("data_sequences.data_seq_{}", table.simple())
}

/// The `data` object of a write body.
fn data_of(body: &RecordWrite) -> Result<&Map<String, Value>> {
    body.data
        .as_ref()
        .and_then(Value::as_object)
        .ok_or_else(|| Error::field("data", "The data field is required: an object of column values."))
}

/// The values a write sets (`None` clears), checked by type and permission.
fn read_input(view: &View, input: &Map<String, Value>) -> Result<BTreeMap<String, Option<Value>>> {
    let definition = view.definition();
    // permission first: a caller learns nothing about a column it may not write
    for key in input.keys() {
        if let Some(column) = definition.column(key)
            && !view.can_write_column(column)
            && column.kind != ColumnType::AutoNumber
        {
            return Err(Error::forbidden(format!("This key may not write the column {key}.")));
        }
    }
    let mut errors = FieldErrors::new();
    let mut changes = BTreeMap::new();
    for (key, value) in input {
        if key.starts_with('$') {
            errors.add(key, "System columns are set by the service.");
            continue;
        }
        let Some(column) = definition.column(key) else {
            errors.add(key, format!("Unknown column {key:?}."));
            continue;
        };
        match values::read(column, value) {
            Ok(value) => {
                changes.insert(key.clone(), value);
            }
            Err(message) => errors.add(key, format!("{key} {message}")),
        }
    }
    errors.finish()?;
    Ok(changes)
}

/// Unique keys of a record's data: `(name, value)` for each unique column and set with every
/// member set. Text and email compare without case.
pub(crate) fn unique_keys(definition: &Definition, data: &Map<String, Value>) -> Vec<(String, String)> {
    definition
        .unique_keys()
        .into_iter()
        .filter_map(|(name, columns)| {
            let parts: Option<Vec<String>> = columns
                .iter()
                .map(|c| {
                    data.get(&c.key).map(|v| match v {
                        Value::String(s) if c.kind.is_textual() => s.to_lowercase(),
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                })
                .collect();
            let parts = parts?;
            let value = if parts.len() == 1 { parts[0].clone() } else { json!(parts).to_string() };
            Some((name, value))
        })
        .collect()
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

impl DataService {
    /// Checks what the merged record must satisfy beyond single values: required columns and
    /// the initial status, state moves from `current`, relations, files and size.
    async fn check_record(
        &self,
        conn: &mut store::Conn,
        caller: &Caller,
        view: &View,
        current: Option<&Map<String, Value>>,
        merged: &mut Map<String, Value>,
    ) -> Result<()> {
        let definition = view.definition();
        let mut errors = FieldErrors::new();
        for column in definition.columns.iter().filter(|c| c.required) {
            if merged.contains_key(&column.key) {
                continue;
            }
            // a new record's required status with one initial state starts there
            let initial = &column.config.initial;
            if current.is_none() && column.kind == ColumnType::Status && initial.len() == 1 {
                merged.insert(column.key.clone(), Value::String(initial[0].clone()));
            } else {
                errors.add(&column.key, format!("The {} field is required.", column.key));
            }
        }
        std::mem::take(&mut errors).finish()?;
        for column in definition.columns.iter().filter(|c| c.kind == ColumnType::Status) {
            let from = current.and_then(|c| c.get(&column.key)).and_then(Value::as_str);
            let to = merged.get(&column.key).and_then(Value::as_str);
            states::check(column, view, from, to)?;
        }
        let changed = |key: &str| current.and_then(|c| c.get(key)) != merged.get(key);
        for column in definition.columns.iter().filter(|c| c.kind == ColumnType::Relation && changed(&c.key)) {
            let Some(id) = merged.get(&column.key).and_then(|v| values::ids(v).into_iter().next()) else { continue };
            let slug = column.config.table.as_deref().unwrap_or_default();
            let target = load(conn, caller.tenant_id, TableKey::Slug(slug)).await?;
            let found: Count = diesel::sql_query(
                "SELECT count(*) AS n FROM data_records WHERE id = $1 AND table_id = $2 AND deleted_at IS NULL",
            )
            .bind::<SqlUuid, _>(id)
            .bind::<SqlUuid, _>(target.id())
            .get_result(conn)
            .await?;
            if found.n == 0 {
                errors.add(&column.key, format!("{} must be a record of {slug}: {id} is not one.", column.key));
            }
        }
        for column in definition.columns.iter().filter(|c| c.kind == ColumnType::File && changed(&c.key)) {
            let ids = merged.get(&column.key).map(values::ids).unwrap_or_default();
            let missing = files::missing(conn, caller.tenant_id, &ids).await?;
            if let Some(id) = missing.into_iter().next() {
                errors.add(&column.key, format!("{} must name stored files: {id} is not one.", column.key));
            }
        }
        errors.finish()?;
        let bytes = serde_json::to_vec(&merged).map_err(Error::internal)?.len();
        if bytes > RECORD_BYTES {
            return Err(Error::field(
                "data",
                format!("The record is {bytes} bytes serialized; a record must fit in {RECORD_BYTES} bytes."),
            ));
        }
        Ok(())
    }

    /// The 409 for a unique key another live record holds, naming its field.
    async fn taken(
        &self,
        conn: &mut store::Conn,
        tenant: kernel::TenantId,
        table: Uuid,
        keys: &[(String, String)],
    ) -> Error {
        let (names, values): (Vec<&str>, Vec<&str>) = keys.iter().map(|(n, v)| (n.as_str(), v.as_str())).unzip();
        let found: Option<Name> = diesel::sql_query(
            "SELECT name FROM data_record_keys WHERE tenant_id = $4 AND table_id = $1
               AND (name, value) IN (SELECT * FROM unnest($2::text[], $3::text[])) LIMIT 1",
        )
        .bind::<SqlUuid, _>(table)
        .bind::<Array<Text>, _>(names)
        .bind::<Array<Text>, _>(values)
        .bind::<BigInt, _>(tenant.0)
        .get_result(conn)
        .await
        .ok();
        let field = found.map(|f| f.name).unwrap_or_else(|| "data".to_owned());
        Error::conflict(format!("{field} must be unique: another record has this value."))
            .with_detail("field", field.clone())
            .with_field(field, "Another record has this value.")
    }

    /// `POST /data/tables/{table}/records`: 201 `{record}`.
    pub async fn create_record(&self, caller: &Caller, table: TableId, body: &RecordWrite) -> Result<Record> {
        self.insert(caller, table, body, source_of(caller)).await
    }

    /// Adds `records` to an empty table as the operator (`Caller::operator`, source `admin`),
    /// for demo data; says whether it did.
    pub async fn seed(&self, operator: &Caller, table: TableId, records: &[Value]) -> Result<bool> {
        if self.first_record(operator.tenant_id, table).await?.is_some() {
            return Ok(false);
        }
        for data in records {
            self.insert(operator, table, &RecordWrite::of(data.clone()), SOURCE_ADMIN).await?;
        }
        Ok(true)
    }

    /// The oldest live record of a table.
    pub async fn first_record(&self, tenant: kernel::TenantId, table: TableId) -> Result<Option<RecordId>> {
        #[derive(QueryableByName)]
        struct Id {
            #[diesel(sql_type = SqlUuid)]
            id: RecordId,
        }
        let mut conn = self.conn(tenant).await?;
        let found: Vec<Id> = diesel::sql_query(
            "SELECT id FROM data_records WHERE tenant_id = $1 AND table_id = $2 AND deleted_at IS NULL
             ORDER BY created_at, id LIMIT 1",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<SqlUuid, _>(table)
        .get_results(&mut conn)
        .await?;
        Ok(found.into_iter().next().map(|r| r.id))
    }

    async fn insert(&self, caller: &Caller, table: TableId, body: &RecordWrite, source: &str) -> Result<Record> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let view = self.view(&mut conn, caller, table).await?;
        view.require_write()?;
        let input = read_input(&view, data_of(body)?)?;
        let definition = view.definition();
        let mut data: Map<String, Value> = input.into_iter().filter_map(|(k, v)| Some((k, v?))).collect();
        self.check_record(&mut conn, caller, &view, None, &mut data).await?;
        let keys = unique_keys(definition, &data);
        let now = self.clock.now();
        let id = Uuid::now_v7();
        // an auto-number column's key and sequence, bound: the statement's text is the same for
        // every table, so each connection keeps it prepared
        let numbered = definition.columns.iter().find(|c| c.kind == ColumnType::AutoNumber);
        let (number_key, number_sequence) = match numbered {
            Some(c) => (Some(c.key.clone()), Some(sequence(view.table.id()))),
            None => (None, None),
        };
        let statement = format!(
            "WITH r AS (
                INSERT INTO data_records (id, tenant_id, table_id, data, source, created_at, updated_at)
                VALUES ($1, $2, $3,
                        CASE WHEN $10::text IS NULL THEN $4 ELSE $4 || jsonb_build_object($10::text, nextval($11::regclass)) END,
                        $5, $6, $6)
                RETURNING {ROW_COLUMNS}),
             k AS (
                INSERT INTO data_record_keys (tenant_id, table_id, name, value, record_id)
                SELECT $2, $3, u.name, u.value, r.id FROM r, unnest($7::text[], $8::text[]) AS u (name, value)),
             h AS (
                INSERT INTO data_record_history (tenant_id, table_id, record_id, action, changes, source, actor, at)
                SELECT $2, $3, r.id, 'created',
                       (SELECT coalesce(jsonb_object_agg(e.key, jsonb_build_object('from', NULL, 'to', e.value)), '{{}}')
                          FROM jsonb_each(r.data) e),
                       $5, $9, $6 FROM r)
             SELECT {ROW_COLUMNS} FROM r"
        );
        let (names, values): (Vec<String>, Vec<String>) = keys.iter().cloned().unzip();
        let table_id = view.table.id();
        let insert = async |conn: &mut store::Conn| -> Result<Row> {
            diesel::sql_query(&statement)
                .bind::<SqlUuid, _>(id)
                .bind::<BigInt, _>(caller.tenant_id.0)
                .bind::<SqlUuid, _>(table_id)
                .bind::<Jsonb, _>(Value::Object(data.clone()))
                .bind::<Text, _>(source)
                .bind::<Timestamptz, _>(now)
                .bind::<Array<Text>, _>(&names)
                .bind::<Array<Text>, _>(&values)
                .bind::<Jsonb, _>(actor(caller, source))
                .bind::<Nullable<Text>, _>(&number_key)
                .bind::<Nullable<Text>, _>(&number_sequence)
                .prepared()
                .get_result(conn)
                .await
                .map_err(unique_violation)
        };
        let result = match definition.limits.records {
            // one statement is atomic by itself
            None => insert(&mut conn).await,
            Some(limit) => {
                conn.transaction::<Row, Error, _>(async |conn| {
                    // creates of a capped table take turns, so the count stays exact
                    diesel::sql_query("SELECT pg_advisory_xact_lock(hashtext($1))")
                        .bind::<Text, _>(table_id.to_string())
                        .execute(conn)
                        .await?;
                    let used: Count = diesel::sql_query(
                        "SELECT count(*) AS n FROM data_records WHERE table_id = $1 AND deleted_at IS NULL",
                    )
                    .bind::<SqlUuid, _>(table_id)
                    .get_result(conn)
                    .await?;
                    if used.n >= limit {
                        return Err(Error::payment_required(format!("This table holds at most {limit} records."))
                            .with_detail("quota", "records")
                            .with_detail("used", used.n)
                            .with_detail("limit", limit));
                    }
                    insert(conn).await
                })
                .await
            }
        };
        let row = match result {
            Err(e) if e.reason.as_deref() == Some(TAKEN) => {
                return Err(self.taken(&mut conn, caller.tenant_id, table_id, &keys).await);
            }
            other => other?,
        };
        let mut records = self.render(&mut conn, caller, &view, vec![row]).await?;
        records.pop().ok_or_else(|| Error::internal("a created record was not rendered"))
    }

    /// `PATCH /data/tables/{table}/records/{record}`: merges `data`, returns the whole record.
    pub async fn update_record(
        &self,
        caller: &Caller,
        table: TableId,
        record: RecordId,
        body: &RecordWrite,
    ) -> Result<Record> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let view = self.view(&mut conn, caller, table).await?;
        view.require_write()?;
        let input = read_input(&view, data_of(body)?)?;
        let definition = view.definition();
        let now = self.clock.now();
        let outcome = conn
            .transaction::<Row, Error, _>(async |conn| {
                let current = self.row(conn, &view, record, true).await?;
                let before = current.data.as_object().cloned().unwrap_or_default();
                let mut merged = before.clone();
                for (key, value) in &input {
                    match value {
                        Some(value) => merged.insert(key.clone(), value.clone()),
                        None => merged.remove(key),
                    };
                }
                self.check_record(conn, caller, &view, Some(&before), &mut merged).await?;
                let changes: Map<String, Value> = definition
                    .columns
                    .iter()
                    .filter(|c| before.get(&c.key) != merged.get(&c.key))
                    .map(|c| (c.key.clone(), json!({"from": before.get(&c.key), "to": merged.get(&c.key)})))
                    .collect();
                if changes.is_empty() {
                    return Ok(current);
                }
                // only the keys whose value changed are rewritten
                let old_keys = unique_keys(definition, &before);
                let new_keys = unique_keys(definition, &merged);
                let stale: Vec<&str> =
                    old_keys.iter().filter(|k| !new_keys.contains(k)).map(|k| k.0.as_str()).collect();
                let (names, values): (Vec<&str>, Vec<&str>) =
                    new_keys.iter().filter(|k| !old_keys.contains(k)).map(|(n, v)| (n.as_str(), v.as_str())).unzip();
                diesel::sql_query(
                    "DELETE FROM data_record_keys WHERE tenant_id = $3 AND record_id = $1 AND name = ANY($2)",
                )
                .bind::<SqlUuid, _>(record)
                .bind::<Array<Text>, _>(&stale)
                .bind::<BigInt, _>(caller.tenant_id.0)
                .execute(conn)
                .await?;
                diesel::sql_query(
                    "INSERT INTO data_record_keys (tenant_id, table_id, name, value, record_id)
                         SELECT $5, $1, u.name, u.value, $2 FROM unnest($3::text[], $4::text[]) AS u (name, value)",
                )
                .bind::<SqlUuid, _>(view.table.id())
                .bind::<SqlUuid, _>(record)
                .bind::<Array<Text>, _>(&names)
                .bind::<Array<Text>, _>(&values)
                .bind::<BigInt, _>(caller.tenant_id.0)
                .execute(conn)
                .await
                .map_err(|e| {
                    unique_violation(e).with_detail("keys", json!(names.iter().zip(&values).collect::<Vec<_>>()))
                })?;
                let row: Row = diesel::sql_query(format!(
                    "UPDATE data_records SET data = $2, updated_at = $3 WHERE id = $1 RETURNING {ROW_COLUMNS}"
                ))
                .bind::<SqlUuid, _>(record)
                .bind::<Jsonb, _>(Value::Object(merged))
                .bind::<Timestamptz, _>(now)
                .get_result(conn)
                .await?;
                self.write_history(conn, caller, &view, record, "updated", Value::Object(changes)).await?;
                Ok(row)
            })
            .await;
        let row = match outcome {
            Ok(row) => row,
            Err(e) if e.reason.as_deref() == Some(TAKEN) => {
                let keys: Vec<(String, String)> =
                    e.details.get("keys").and_then(|k| serde_json::from_value(k.clone()).ok()).unwrap_or_default();
                return Err(self.taken(&mut conn, caller.tenant_id, view.table.id(), &keys).await);
            }
            Err(e) => return Err(e),
        };
        let mut records = self.render(&mut conn, caller, &view, vec![row]).await?;
        records.pop().ok_or_else(|| Error::internal("an updated record was not rendered"))
    }

    /// `DELETE /data/tables/{table}/records/{record}`: soft; its unique values are free again.
    pub async fn delete_record(&self, caller: &Caller, table: TableId, record: RecordId) -> Result<()> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let view = self.view(&mut conn, caller, table).await?;
        view.require_write()?;
        let now = self.clock.now();
        conn.transaction::<(), Error, _>(async |conn| {
            let deleted = diesel::sql_query(
                "UPDATE data_records SET deleted_at = $3 WHERE id = $1 AND table_id = $2 AND deleted_at IS NULL",
            )
            .bind::<SqlUuid, _>(record)
            .bind::<SqlUuid, _>(view.table.id())
            .bind::<Timestamptz, _>(now)
            .execute(conn)
            .await?;
            if deleted == 0 {
                return Err(Error::not_found("Record"));
            }
            diesel::sql_query("DELETE FROM data_record_keys WHERE tenant_id = $2 AND record_id = $1")
                .bind::<SqlUuid, _>(record)
                .bind::<BigInt, _>(caller.tenant_id.0)
                .execute(conn)
                .await?;
            self.write_history(conn, caller, &view, record, "deleted", json!({})).await
        })
        .await
    }

    async fn write_history(
        &self,
        conn: &mut store::Conn,
        caller: &Caller,
        view: &View,
        record: RecordId,
        action: &str,
        changes: Value,
    ) -> Result<()> {
        diesel::sql_query(
            "INSERT INTO data_record_history (tenant_id, table_id, record_id, action, changes, source, actor, at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind::<BigInt, _>(caller.tenant_id.0)
        .bind::<SqlUuid, _>(view.table.id())
        .bind::<SqlUuid, _>(record)
        .bind::<Text, _>(action)
        .bind::<Jsonb, _>(changes)
        .bind::<Text, _>(source_of(caller))
        .bind::<Jsonb, _>(actor(caller, source_of(caller)))
        .bind::<Timestamptz, _>(self.clock.now())
        .execute(conn)
        .await?;
        Ok(())
    }
}

/// The source of what `caller` writes: the credential's channel.
fn source_of(caller: &Caller) -> &'static str {
    match caller.credential {
        kernel::CredentialKind::RestKey => SOURCE_API,
        kernel::CredentialKind::McpConnection | kernel::CredentialKind::OAuthToken => SOURCE_MCP,
    }
}

/// Who made a change, as history shows it.
fn actor(caller: &Caller, source: &str) -> Value {
    if source == SOURCE_ADMIN {
        return json!({"kind": "admin"});
    }
    let user = match &caller.issuer {
        kernel::Issuer::User { id, .. } => json!(id.0),
        _ => Value::Null,
    };
    json!({"kind": caller.credential.as_str(), "id": caller.key_id.0, "name": caller.key_name, "user_id": user})
}

/// Marks a unique violation inside a transaction; once it is rolled back, [`DataService::taken`]
/// names the field.
const TAKEN: &str = "unique_taken";

fn unique_violation(error: diesel::result::Error) -> Error {
    if store::is_unique_violation(&error, None) {
        Error::conflict("A unique value is taken.").with_reason(TAKEN)
    } else {
        error.into()
    }
}
