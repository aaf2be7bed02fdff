//! Data tables (contract: Data tables). Every rule lives in `data_tables::DataService`; these
//! handlers read the path, query and body and answer in the data envelope.

use std::collections::HashMap;

use actix_web::{HttpRequest, HttpResponse, web};
use data_tables::groups::parse_range;
use data_tables::records::list::ListQuery;
use data_tables::{RecordId, RecordWrite, TableId};
use kernel::Error;
use kernel::page::TimelineQuery;
use kernel::parse_id;
use serde_json::json;

use crate::AppState;
use crate::docs::{DataErrorEnvelope, Refusals};
use crate::http::Auth;
use crate::http::data::{DataError, created, ok};

type Answer = Result<HttpResponse, DataError>;

/// The query parameters; a malformed query string is a `validation_error`.
fn query(req: &HttpRequest) -> Result<HashMap<String, String>, DataError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(req.query_string())
        .map_err(|_| Error::field("query", "The query string is not valid URL encoding."))?;
    Ok(pairs.into_iter().collect())
}

/// The record body through the one body reader (`kernel::body::parse`, as `Json<T>` reads
/// every other body); a malformed or mistyped body is a `validation_error` in the data
/// envelope, which is why these routes read the bytes themselves.
fn body(bytes: &web::Bytes) -> Result<RecordWrite, DataError> {
    Ok(kernel::body::parse::<RecordWrite>(bytes)?)
}

fn table(raw: &str) -> Result<TableId, DataError> {
    Ok(parse_id(raw, "Table")?)
}

fn record(raw: &str) -> Result<RecordId, DataError> {
    Ok(parse_id(raw, "Record")?)
}

/// The tables this key may read.
#[utoipa::path(get, path = "/api/v3/data/tables", tag = "Data tables",
    responses((status = 200, description = "`{tables:[{id, name, slug, description, icon, group, record_count, column_count, updated_at}]}`"),
        (status = 403, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn tables(auth: Auth, state: web::Data<AppState>) -> Answer {
    Ok(ok(state.data.tables(&auth.0).await?))
}

/// A table's schema blocks: table, columns, types, system_columns, access, unique_sets, limits,
/// sort_index_threshold, actions, can.
#[utoipa::path(get, path = "/api/v3/data/tables/{table}/schema", tag = "Data tables",
    params(("table" = Uuid, Path)),
    responses((status = 200, description = "the schema blocks"), (status = 404, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn schema(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Answer {
    Ok(ok(state.data.schema(&auth.0, table(&path)?).await?))
}

/// The state machine of each status column, with each move `allowed` for this key.
#[utoipa::path(get, path = "/api/v3/data/tables/{table}/states", tag = "Data tables",
    params(("table" = Uuid, Path)),
    responses((status = 200, description = "`{fields:[{key, label, required, strict, states, initial, moves}]}`"),
        (status = 404, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn states(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Answer {
    Ok(ok(state.data.states(&auth.0, table(&path)?).await?))
}

/// A page of records: filter tree, q, sort, dir, limit, cursor, with_count.
#[utoipa::path(get, path = "/api/v3/data/tables/{table}/records", operation_id = "list_records", tag = "Data tables",
    params(("table" = Uuid, Path),
        ("filter" = Option<String>, Query, description = "URL-encoded JSON condition tree"),
        ("q" = Option<String>, Query), ("sort" = Option<String>, Query), ("dir" = Option<String>, Query),
        ("limit" = Option<i64>, Query), ("cursor" = Option<String>, Query), ("with_count" = Option<String>, Query)),
    responses((status = 200, description = "`{records, next_cursor, has_more, count, served_at}`"),
        (status = 403, body = DataErrorEnvelope), (status = 404, body = DataErrorEnvelope),
        (status = 422, body = DataErrorEnvelope), (status = 501, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn list(auth: Auth, state: web::Data<AppState>, req: HttpRequest, path: web::Path<String>) -> Answer {
    let mut q = query(&req)?;
    let list = ListQuery {
        filter: q.remove("filter"),
        q: q.remove("q"),
        sort: q.remove("sort"),
        dir: q.remove("dir"),
        limit: q.remove("limit"),
        cursor: q.remove("cursor"),
        with_count: q.remove("with_count"),
    };
    Ok(ok(state.data.list_records(&auth.0, table(&path)?, list).await?))
}

/// Creates a record from `{data:{<column_key>: value}}`; unknown keys are refused.
#[utoipa::path(post, path = "/api/v3/data/tables/{table}/records", operation_id = "create_record", tag = "Data tables",
    params(("table" = Uuid, Path)), request_body = RecordWrite,
    responses((status = 201, description = "`{record}`"), (status = 403, body = DataErrorEnvelope),
        (status = 404, body = DataErrorEnvelope), (status = 409, body = DataErrorEnvelope),
        (status = 402, body = DataErrorEnvelope), (status = 422, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn create(auth: Auth, state: web::Data<AppState>, path: web::Path<String>, bytes: web::Bytes) -> Answer {
    let record = state.data.create_record(&auth.0, table(&path)?, &body(&bytes)?).await?;
    Ok(created(json!({ "record": record })))
}

/// One record.
#[utoipa::path(get, path = "/api/v3/data/tables/{table}/records/{record}", operation_id = "get_record", tag = "Data tables",
    params(("table" = Uuid, Path), ("record" = Uuid, Path)),
    responses((status = 200, description = "`{record}`"), (status = 404, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get(auth: Auth, state: web::Data<AppState>, path: web::Path<(String, String)>) -> Answer {
    let record = state.data.get_record(&auth.0, table(&path.0)?, record(&path.1)?).await?;
    Ok(ok(json!({ "record": record })))
}

/// Merges `{data:{...}}` into a record; null clears an optional value.
#[utoipa::path(patch, path = "/api/v3/data/tables/{table}/records/{record}", operation_id = "update_record", tag = "Data tables",
    params(("table" = Uuid, Path), ("record" = Uuid, Path)), request_body = RecordWrite,
    responses((status = 200, description = "`{record}`"), (status = 403, body = DataErrorEnvelope),
        (status = 404, body = DataErrorEnvelope), (status = 409, body = DataErrorEnvelope),
        (status = 422, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn update(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    bytes: web::Bytes,
) -> Answer {
    let record = state.data.update_record(&auth.0, table(&path.0)?, record(&path.1)?, &body(&bytes)?).await?;
    Ok(ok(json!({ "record": record })))
}

/// Soft-deletes a record; a repeat is 404.
#[utoipa::path(delete, path = "/api/v3/data/tables/{table}/records/{record}", operation_id = "delete_record", tag = "Data tables",
    params(("table" = Uuid, Path), ("record" = Uuid, Path)),
    responses((status = 200, description = "`{ok: true, deleted: 1}`"), (status = 403, body = DataErrorEnvelope),
        (status = 404, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn delete(auth: Auth, state: web::Data<AppState>, path: web::Path<(String, String)>) -> Answer {
    state.data.delete_record(&auth.0, table(&path.0)?, record(&path.1)?).await?;
    Ok(ok(json!({ "ok": true, "deleted": 1 })))
}

/// A record's history, newest first (50 a page, `limit` up to 100); readable after deletion.
#[utoipa::path(get, path = "/api/v3/data/tables/{table}/records/{record}/history", tag = "Data tables",
    params(("table" = Uuid, Path), ("record" = Uuid, Path), TimelineQuery),
    responses((status = 200, description = "`{entries, has_more, next_before, columns}`"),
        (status = 404, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn history(
    auth: Auth,
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Answer {
    let q = query(&req)?;
    let page = TimelineQuery {
        before: q.get("before").cloned(),
        limit: q.get("limit").cloned(),
        per_page: q.get("per_page").cloned(),
    };
    Ok(ok(state.data.history(&auth.0, table(&path.0)?, record(&path.1)?, &page).await?))
}

/// The groups with a table this key may read.
#[utoipa::path(get, path = "/api/v3/data/groups", tag = "Data tables",
    responses((status = 200, description = "`{groups:[...]}`"), (status = 403, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn groups(auth: Auth, state: web::Data<AppState>) -> Answer {
    Ok(ok(state.data.groups(&auth.0).await?))
}

/// A group, its tables with columns, and its saved reports.
#[utoipa::path(get, path = "/api/v3/data/groups/{group}", tag = "Data tables",
    params(("group" = Uuid, Path)),
    responses((status = 200, description = "`{group, tables, reports}`"), (status = 404, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn group(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Answer {
    Ok(ok(state.data.group_detail(&auth.0, parse_id(&path, "Group")?).await?))
}

/// Totals, table cards, amount headlines, a daily series and relationship summaries of a range.
#[utoipa::path(get, path = "/api/v3/data/groups/{group}/overview", tag = "Data tables",
    params(("group" = Uuid, Path),
        ("range" = Option<String>, Query, pattern = "^(today|last_7_days|last_30_days|last_90_days|this_month|last_month|this_year|all_time)?$",
            description = "a name such as last_30_days (default); the reader also takes a JSON object {from, to} (URL-encoded)"),
        ("from" = Option<String>, Query, pattern = "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))?$",
            description = "an RFC 3339 time or a date, YYYY-MM-DD (with no `range`); before `to` (default now)"),
        ("to" = Option<String>, Query, pattern = "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))?$",
            description = "an RFC 3339 time or a date, YYYY-MM-DD, whose whole day counts (with no `range`)")),
    responses((status = 200, description = "`{group, range, totals, tables, amounts, series, relationships}`"),
        (status = 404, body = DataErrorEnvelope), (status = 422, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn overview(auth: Auth, state: web::Data<AppState>, req: HttpRequest, path: web::Path<String>) -> Answer {
    let q = query(&req)?;
    let get = |key: &str| q.get(key).map(String::as_str);
    let range = parse_range(get("range"), get("from"), get("to"), state.clock.now())?;
    Ok(ok(state.data.overview(&auth.0, parse_id(&path, "Group")?, &range).await?))
}

/// A file behind a signed link from a record (no key: the signature is the credential).
#[utoipa::path(get, path = "/files/{file}", tag = "Data tables",
    params(("file" = Uuid, Path), ("expires" = i64, Query), ("signature" = String, Query)),
    responses((status = 200, description = "the file's bytes"), (status = 403, body = DataErrorEnvelope),
        (status = 404, body = DataErrorEnvelope)))]
pub async fn download(state: web::Data<AppState>, req: HttpRequest, path: web::Path<String>) -> Answer {
    let q = query(&req)?;
    let get = |key: &str| q.get(key).map(String::as_str).unwrap_or_default();
    let file = state.data.download(&path, get("expires"), get("signature")).await?;
    let disposition = format!("inline; filename=\"{}\"", file.name.replace(['"', '\\', '\r', '\n'], "_"));
    Ok(HttpResponse::Ok()
        .content_type(file.mime_type)
        .insert_header(("Content-Disposition", disposition))
        .insert_header(("Cache-Control", "private, max-age=300"))
        .body(file.content))
}
