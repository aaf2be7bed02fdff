//! The `data` tools (contract: Data tables), served on the `data` server and on `/mcp`: tables,
//! schema, state rules, records (the list with its filter tree, create, patch, delete), history,
//! groups and a group's overview. Each calls the method of `data_tables::DataService` its REST
//! route calls, so `data.view`, `data.records.edit`, table grants and field masks are the
//! service's, read from the caller. No tool changes a table's definition (that would be
//! `mcp:shape`).

use data_tables::describe::Tables;
use data_tables::filter::{MAX_DEPTH, MAX_LEAVES, Op};
use data_tables::groups::{RANGES, parse_range};
use data_tables::history::History;
use data_tables::records::list::{ListQuery, RecordPage};
use data_tables::states::States;
use data_tables::{PAGE_DEFAULT, PAGE_MAX, Record, RecordId, RecordWrite, TableId};
use kernel::page::TimelineQuery;
use kernel::{Error, Permission, parse_id};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::openapi::path::ParameterIn;

use crate::scopes::Elevation;
use crate::tool::{Call, Effect, Tool, answer, list_of, object, schema_of, uuid, with_def, with_members};

const SERVER: &str = "data";

/// The data tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_tables",
            title: "List data tables",
            description: "The data tables the issuer may read, by group and name: UUID id, name, slug, description, icon, group, record count, column count, updated_at.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::DATA_VIEW),
            effect: Effect::Read,
            input: || object(&[]),
            output: schema_of::<Tables>,
            call: |call| Box::pin(list_tables(call)),
        },
        Tool {
            name: "get_table_schema",
            title: "Get a table's schema",
            description: "A table's schema blocks: table, columns (ordered keys, types, required/unique flags, configuration, index status, masked, writable), types (each with its filter operators), system_columns ($id, $created_at, $updated_at, $source), access, unique_sets, limits, sort_index_threshold, actions, can.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::DATA_VIEW),
            effect: Effect::Read,
            input: table_input,
            output: schema_output,
            call: |call| Box::pin(get_table_schema(call)),
        },
        Tool {
            name: "get_table_states",
            title: "Get a table's state rules",
            description: "The state rules of a table: per status field its key, label, required and strict flags, states, initial states and moves, each move with allowed (whether the issuer may make it now). A record starts in an initial state; under strict only the declared moves are legal.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::DATA_VIEW),
            effect: Effect::Read,
            input: table_input,
            output: schema_of::<States>,
            call: |call| Box::pin(get_table_states(call)),
        },
        Tool {
            name: "list_records",
            title: "List records",
            description: "A page of a table's records, as GET /data/tables/{table}/records: filter (a condition tree {all:[...]} (AND), {any:[...]} (OR), leaf {column, op, value}; up to 40 leaves and depth six; {} selects all), q (case-insensitive over up to the first six text, long_text, phone, email columns), sort (a column key, $created_at, $updated_at; default newest created first), dir (asc/desc, default desc, nulls last), limit (default 50, 1 to 200), cursor (next_cursor, sent back with the same filter, q, sort, dir), with_count.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::DATA_VIEW),
            effect: Effect::Read,
            input: list_input,
            output: schema_of::<RecordPage>,
            call: |call| Box::pin(list_records(call)),
        },
        Tool {
            name: "get_record",
            title: "Get a record",
            description: "One record: id, data keyed by column keys (masked columns are null and named in masked), source, created_at, updated_at, title, titles of related records.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::DATA_VIEW),
            effect: Effect::Read,
            input: record_input,
            output: record_output,
            call: |call| Box::pin(get_record(call)),
        },
        Tool {
            name: "create_record",
            title: "Create a record",
            description: "Creates a record from {data:{<column_key>: value}}: unknown keys are refused; each value is read by its column's type; a status starts in an initial state; unique values, the record size (8,192 bytes) and the table's quota are checked.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::DATA_RECORDS_EDIT),
            effect: Effect::Create,
            input: || with_members(schema_of::<RecordWrite>(), &[("table", uuid("The table's id."), true)]),
            output: record_output,
            call: |call| Box::pin(create_record(call)),
        },
        Tool {
            name: "update_record",
            title: "Update a record",
            description: "Merges {data:{...}} into a record: null clears an optional value; clearing a required field fails validation; a status moves under the table's state rules. Returns the full record.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::DATA_RECORDS_EDIT),
            effect: Effect::Update,
            input: || {
                with_members(
                    schema_of::<RecordWrite>(),
                    &[("table", uuid("The table's id."), true), ("record", uuid("The record's id."), true)],
                )
            },
            output: record_output,
            call: |call| Box::pin(update_record(call)),
        },
        Tool {
            name: "delete_record",
            title: "Delete a record",
            description: "Soft-deletes a record ({ok: true, deleted: 1}); its unique values are free again and its history stays readable; a repeat is not found.",
            server: SERVER,
            elevation: Some(Elevation::Delete),
            permission: Some(Permission::DATA_RECORDS_EDIT),
            effect: Effect::Delete,
            input: record_input,
            output: || {
                object(&[
                    ("ok", json!({"type": "boolean"}), true),
                    ("deleted", json!({"type": "integer", "description": "Records deleted: 1."}), true),
                ])
            },
            call: |call| Box::pin(delete_record(call)),
        },
        Tool {
            name: "get_record_history",
            title: "Get a record's history",
            description: "A record's history, newest first (50 entries a page, limit up to 100; before takes next_before for the next page): each create, change and delete with its changed columns (from, to; masked values hidden), source and actor; columns names the field labels. Readable after deletion.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::DATA_VIEW),
            effect: Effect::Read,
            input: history_input,
            output: schema_of::<History>,
            call: |call| Box::pin(get_record_history(call)),
        },
        Tool {
            name: "list_groups",
            title: "List data groups",
            description: "The data groups with at least one table the issuer may read: id, slug, name, description, table_count, created_at, updated_at.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::DATA_VIEW),
            effect: Effect::Read,
            input: || object(&[]),
            output: || list_of("groups", group_schema()),
            call: |call| Box::pin(list_groups(call)),
        },
        Tool {
            name: "get_group_overview",
            title: "Get a group's overview",
            description: "A group's overview of a range (range: a name such as last_30_days, the default, or an object {from, to}; or from/to): totals, table cards, amount headlines, a daily time series and relationship summaries, over the tables the issuer may read.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::DATA_VIEW),
            effect: Effect::Read,
            input: overview_input,
            output: overview_output,
            call: |call| Box::pin(get_group_overview(call)),
        },
    ]
}

fn table_member() -> (&'static str, Value, bool) {
    ("table", uuid("The table's id."), true)
}

fn record_member() -> (&'static str, Value, bool) {
    ("record", uuid("The record's id."), true)
}

fn table_input() -> Value {
    object(&[table_member()])
}

fn record_input() -> Value {
    object(&[table_member(), record_member()])
}

/// `{record}`, as the record routes answer.
fn record_output() -> Value {
    with_def::<Record>(object(&[("record", json!({"$ref": "#/$defs/Record"}), true)]))
}

/// The members of `GET .../records`' query; `filter` is the condition tree itself (REST sends
/// it URL-encoded as JSON text; here it is a JSON object, read by the same parser).
fn list_input() -> Value {
    let operators: Vec<&str> = Op::ALL.iter().map(|op| op.as_str()).collect();
    let mut schema = object(&[
        table_member(),
        (
            "filter",
            json!({"$ref": "#/$defs/Condition",
                   "description": format!("The condition tree: up to {MAX_LEAVES} leaves and depth {MAX_DEPTH}; {{}} selects all.")}),
            false,
        ),
        (
            "q",
            json!({"type": "string",
                   "description": "Case-insensitive search over up to the first six text, long_text, phone and email columns."}),
            false,
        ),
        (
            "sort",
            json!({"type": "string",
                   "description": "A column key, $created_at or $updated_at (default: newest created first)."}),
            false,
        ),
        (
            "dir",
            json!({"type": "string", "enum": ["asc", "desc"], "description": "Default desc; empty values last."}),
            false,
        ),
        (
            "limit",
            json!({"type": "integer",
                   "description": format!("Records a page: default {PAGE_DEFAULT}, clamped to 1..{PAGE_MAX}.")}),
            false,
        ),
        (
            "cursor",
            json!({"type": "string",
                   "description": "The next_cursor of the previous page, with the same filter, q, sort and dir; an invalid one restarts at the first page."}),
            false,
        ),
        ("with_count", json!({"type": "boolean", "description": "Include count (otherwise null)."}), false),
    ]);
    schema["$defs"] = json!({"Condition": {
        "type": "object",
        "description": "{all:[...]} (AND), {any:[...]} (OR), or a leaf {column, op, value}.",
        "properties": {
            "all": {"type": "array", "items": {"$ref": "#/$defs/Condition"}},
            "any": {"type": "array", "items": {"$ref": "#/$defs/Condition"}},
            "column": {"type": "string", "description": "A column key, or $id, $created_at, $updated_at, $source."},
            "op": {"type": "string", "enum": operators,
                   "description": "Only the operators the column's type advertises (get_table_schema's types)."},
            "value": {"description": "Two endpoints for between, a list for in, none for is_empty and is_not_empty."},
        },
    }});
    schema
}

/// The query members of `GET .../history` (before, limit, per_page), as the REST route reads
/// them.
fn history_input() -> Value {
    let mut params = Vec::new();
    for param in <TimelineQuery as utoipa::IntoParams>::into_params(|| Some(ParameterIn::Query)) {
        let param = serde_json::to_value(param).unwrap_or(Value::Null);
        let Some(name) = param["name"].as_str() else { continue };
        let mut schema = param.get("schema").cloned().unwrap_or_else(|| json!({}));
        if let (Some(object), Some(description)) = (schema.as_object_mut(), param.get("description")) {
            object.insert("description".into(), description.clone());
        }
        params.push((name.to_owned(), schema));
    }
    let mut members = vec![table_member(), record_member()];
    members.extend(params.iter().map(|(name, schema)| (name.as_str(), schema.clone(), false)));
    object(&members)
}

fn overview_input() -> Value {
    let date = "An RFC 3339 time or a date, YYYY-MM-DD";
    object(&[
        ("group", uuid("The group's id."), true),
        (
            "range",
            json!({"description": "A named range (default last_30_days), or an object {from, to}; wins over from/to.",
            "anyOf": [
                {"type": "string", "enum": RANGES},
                {"type": "object", "properties": {
                    "from": {"type": "string", "description": date},
                    "to": {"type": "string", "description": format!("{date}, whose whole day counts")}}},
            ]}),
            false,
        ),
        ("from", json!({"type": "string", "description": format!("{date} (with no range); before to.")}), false),
        (
            "to",
            json!({"type": "string", "description": format!("{date}, whose whole day counts (with no range); default now.")}),
            false,
        ),
    ])
}

/// The schema blocks (the route answers them as built, so they are described by name).
fn schema_output() -> Value {
    let block = |description: &str| json!({"type": "object", "description": description});
    let list = |description: &str| json!({"type": "array", "items": {"type": "object"}, "description": description});
    object(&[
        (
            "table",
            block("id, slug, name, description, icon, group, record_count, search_columns, created_at, updated_at"),
            true,
        ),
        (
            "columns",
            list(
                "In order: key, label, type, required, unique, indexed, index {status}, masked, writable, config, position",
            ),
            true,
        ),
        ("types", block("Per column type: operators, sortable, searchable, value"), true),
        ("system_columns", list("$id, $created_at, $updated_at, $source: key, type, operators, sortable"), true),
        ("access", block("The read and write permissions of the table and of its columns"), true),
        ("unique_sets", json!({"type": "array", "items": {"type": "array", "items": {"type": "string"}}}), true),
        (
            "limits",
            block(
                "record_bytes, filter_leaves, filter_depth, filter_in_values, search_columns, page_default, page_max, history_page, records",
            ),
            true,
        ),
        ("sort_index_threshold", json!({"type": "integer"}), true),
        ("actions", list("The record routes of the table: name, method, path"), true),
        ("can", block("read, create, update, delete for the issuer"), true),
    ])
}

/// A group as `GET /data/groups` lists it.
fn group_schema() -> Value {
    let text = json!({"type": "string"});
    let time = json!({"type": "string", "format": "date-time"});
    object(&[
        ("id", json!({"type": "string", "format": "uuid"}), true),
        ("slug", text.clone(), true),
        ("name", text, true),
        ("description", json!({"type": ["string", "null"]}), true),
        (
            "table_count",
            json!({"type": "integer", "description": "The tables of the group the issuer may read."}),
            true,
        ),
        ("created_at", time.clone(), true),
        ("updated_at", time, true),
    ])
}

fn overview_output() -> Value {
    let list = |description: &str| json!({"type": "array", "items": {"type": "object"}, "description": description});
    object(&[
        ("group", group_schema(), true),
        ("range", json!({"type": "object", "description": "name, from, to"}), true),
        ("totals", json!({"type": "object", "description": "tables, records, created, updated"}), true),
        ("tables", list("Table cards: id, slug, name, records, created, updated"), true),
        ("amounts", list("Per currency column: table, column, label, currency, total, created_total"), true),
        ("series", list("One point per UTC day: date, created"), true),
        ("relationships", list("Per relation column: table, column, label, target, linked, unlinked"), true),
    ])
}

fn table_id(call: &mut Call) -> Result<TableId, Error> {
    parse_id(&call.take_text("table")?, "Table")
}

fn record_id(call: &mut Call) -> Result<RecordId, Error> {
    parse_id(&call.take_text("record")?, "Record")
}

/// `GET .../records`' query members as a query string carries them: the filter tree as its
/// JSON text (an object argument is written as JSON by [`Call::query`]).
#[derive(Deserialize)]
struct RecordsQuery {
    filter: Option<String>,
    q: Option<String>,
    sort: Option<String>,
    dir: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
    with_count: Option<String>,
}

#[derive(Deserialize)]
struct OverviewQuery {
    range: Option<String>,
    from: Option<String>,
    to: Option<String>,
}

async fn list_tables(call: Call) -> Result<Value, Error> {
    answer(call.domains.data.tables(&call.caller).await?)
}

async fn get_table_schema(mut call: Call) -> Result<Value, Error> {
    let table = table_id(&mut call)?;
    answer(call.domains.data.schema(&call.caller, table).await?)
}

async fn get_table_states(mut call: Call) -> Result<Value, Error> {
    let table = table_id(&mut call)?;
    answer(call.domains.data.states(&call.caller, table).await?)
}

async fn list_records(mut call: Call) -> Result<Value, Error> {
    let query: RecordsQuery = call.query(&list_input())?;
    let table = table_id(&mut call)?;
    let list = ListQuery {
        filter: query.filter,
        q: query.q,
        sort: query.sort,
        dir: query.dir,
        limit: query.limit,
        cursor: query.cursor,
        with_count: query.with_count,
    };
    answer(call.domains.data.list_records(&call.caller, table, list).await?)
}

async fn get_record(mut call: Call) -> Result<Value, Error> {
    let (table, record) = (table_id(&mut call)?, record_id(&mut call)?);
    answer(json!({"record": call.domains.data.get_record(&call.caller, table, record).await?}))
}

async fn create_record(mut call: Call) -> Result<Value, Error> {
    let table = table_id(&mut call)?;
    let body: RecordWrite = call.body()?;
    answer(json!({"record": call.domains.data.create_record(&call.caller, table, &body).await?}))
}

async fn update_record(mut call: Call) -> Result<Value, Error> {
    let (table, record) = (table_id(&mut call)?, record_id(&mut call)?);
    let body: RecordWrite = call.body()?;
    answer(json!({"record": call.domains.data.update_record(&call.caller, table, record, &body).await?}))
}

async fn delete_record(mut call: Call) -> Result<Value, Error> {
    let (table, record) = (table_id(&mut call)?, record_id(&mut call)?);
    call.domains.data.delete_record(&call.caller, table, record).await?;
    answer(json!({"ok": true, "deleted": 1}))
}

async fn get_record_history(mut call: Call) -> Result<Value, Error> {
    let page: TimelineQuery = call.query(&history_input())?;
    let (table, record) = (table_id(&mut call)?, record_id(&mut call)?);
    answer(call.domains.data.history(&call.caller, table, record, &page).await?)
}

async fn list_groups(call: Call) -> Result<Value, Error> {
    answer(call.domains.data.groups(&call.caller).await?)
}

async fn get_group_overview(mut call: Call) -> Result<Value, Error> {
    let query: OverviewQuery = call.query(&overview_input())?;
    let group = parse_id(&call.take_text("group")?, "Group")?;
    let range =
        parse_range(query.range.as_deref(), query.from.as_deref(), query.to.as_deref(), call.domains.data.now())?;
    answer(call.domains.data.overview(&call.caller, group, &range).await?)
}
