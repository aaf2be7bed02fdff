//! `GET /data/tables/{table}/records` (contract: Data tables, record list query): a filter
//! tree, a `q` search, a sort with empty values last, keyset pages behind an opaque cursor, and
//! an optional count.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::RunQueryDsl;
use kernel::{Caller, Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{ROW_COLUMNS, Record, Row};
use crate::definition::Column;
use crate::filter::{self, System, Tree};
use crate::service::View;
use crate::sql::{self, Bind, Sql};
use crate::{DataService, PAGE_DEFAULT, PAGE_MAX};

/// The query parameters, as sent.
#[derive(Debug, Default, Clone)]
pub struct ListQuery {
    pub filter: Option<String>,
    pub q: Option<String>,
    pub sort: Option<String>,
    pub dir: Option<String>,
    pub limit: Option<String>,
    pub cursor: Option<String>,
    pub with_count: Option<String>,
}

/// A page of records; `next_cursor` goes back with the same filter, q, sort and dir.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RecordPage {
    pub records: Vec<Record>,
    pub next_cursor: Option<String>,
    pub has_more: bool,
    pub count: Option<i64>,
    #[serde(with = "time::serde::rfc3339")]
    pub served_at: OffsetDateTime,
}

/// What the page is ordered by.
enum Sort<'a> {
    System(System),
    Column(&'a Column),
}

/// Where the previous page ended. `phase` 1 is the empty values that follow a column sort.
#[derive(Debug, Serialize, Deserialize)]
struct Cursor {
    /// A digest of filter, q, sort and dir: a cursor works only with the query it came from.
    f: String,
    p: u8,
    /// The sort value of the last record (a time for system sorts).
    v: Value,
    i: Uuid,
}

impl Cursor {
    fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default())
    }

    /// The cursor, if it is readable and belongs to this query; else the first page.
    fn decode(raw: Option<&str>, fingerprint: &str) -> Option<Self> {
        let bytes = URL_SAFE_NO_PAD.decode(raw?.trim()).ok()?;
        serde_json::from_slice::<Self>(&bytes).ok().filter(|c| c.f == fingerprint && c.p <= 1)
    }
}

fn fingerprint(filter: Option<&Tree>, raw_filter: Option<&str>, q: &str, sort: &str, dir: &str) -> String {
    // the parsed filter re-serialized, so whitespace and encoding differences do not matter
    let filter = filter.and(raw_filter).and_then(|f| serde_json::from_str::<Value>(f).ok()).unwrap_or(Value::Null);
    let text = format!("{filter}\u{0}{q}\u{0}{sort}\u{0}{dir}");
    hex::encode(&ring::digest::digest(&ring::digest::SHA256, text.as_bytes()).as_ref()[..12])
}

/// `limit`: default 50; 0 or less gives 1, more than 200 gives 200; not a number (an empty
/// value included, as on every list) is 422.
fn page_size(raw: Option<&str>) -> Result<i64> {
    match raw.map(str::trim) {
        None => Ok(PAGE_DEFAULT),
        Some(raw) => raw
            .parse::<i64>()
            .map(|n| n.clamp(1, PAGE_MAX))
            .map_err(|_| Error::field("limit", "The limit must be an integer (1 to 200).")),
    }
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

impl DataService {
    /// One page of a table's live records.
    pub async fn list_records(&self, caller: &Caller, table: crate::TableId, query: ListQuery) -> Result<RecordPage> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let view = self.view(&mut conn, caller, table).await?;
        let definition = view.definition();
        let limit = page_size(query.limit.as_deref())?;
        let tree = Tree::parse_param(query.filter.as_deref())?;
        let q = query.q.as_deref().map(str::trim).unwrap_or_default().to_lowercase();
        let descending = match query.dir.as_deref().map(str::trim).map(str::to_ascii_lowercase).as_deref() {
            None | Some("") | Some("desc") => true,
            Some("asc") => false,
            Some(_) => return Err(Error::field("dir", "dir is asc or desc.")),
        };
        let sort_key = query.sort.as_deref().map(str::trim).filter(|s| !s.is_empty()).unwrap_or("$created_at");
        let sort = match System::parse(sort_key) {
            Some(system) if system.sortable() => Sort::System(system),
            Some(_) => {
                return Err(Error::field(
                    "sort",
                    format!("{sort_key} cannot be sorted by; use $created_at or $updated_at."),
                ));
            }
            None => {
                let column = definition
                    .column(sort_key)
                    .ok_or_else(|| Error::field("sort", format!("No column {sort_key:?} in this table.")))?;
                if view.is_masked(&column.key) {
                    return Err(Error::forbidden(format!("You may not sort by the column {}.", column.key)));
                }
                if !column.kind.sortable() {
                    return Err(Error::not_supported(format!(
                        "A {} column cannot be sorted by.",
                        column.kind.as_str()
                    ))
                    .with_reason("sort_not_supported"));
                }
                Sort::Column(column)
            }
        };

        // the conditions every page and the count share
        let mut base = Sql::new(&format!("FROM data_records WHERE {}", sql::live(view.table.id())));
        if let Some(tree) = &tree {
            base.push(" AND ");
            filter::compile(tree, definition, &view.masked, &mut base)?;
        }
        if !q.is_empty() {
            let columns = definition.search_columns();
            if let Some(masked) = columns.iter().find(|c| view.is_masked(&c.key)) {
                return Err(Error::forbidden(format!(
                    "You may not search this table: the search covers the column {}, which is masked for you.",
                    masked.key
                )));
            }
            if columns.is_empty() {
                base.push(" AND FALSE");
            } else {
                let keys: Vec<&str> = columns.iter().map(|c| c.key.as_str()).collect();
                let pattern = base.bind(Bind::Text(store::search::contains(&q)));
                base.push(&format!(" AND {} {} {pattern}", sql::search_expression(&keys), store::search::LIKE));
            }
        }
        if let Sort::Column(column) = sort {
            self.require_sort_index(&mut conn, &view, column).await?;
        }

        let dir = if descending { "desc" } else { "asc" };
        let print = fingerprint(tree.as_ref(), query.filter.as_deref(), &q, sort_key, dir);
        let cursor = Cursor::decode(query.cursor.as_deref(), &print);
        let (rows, has_more) = self.page(&mut conn, &base, &sort, descending, cursor.as_ref(), limit).await?;
        let next_cursor = if has_more {
            rows.last().map(|last| {
                let (p, v) = match &sort {
                    Sort::System(system) => (0, Value::String(sort_time(last, *system))),
                    Sort::Column(column) => match last.data.get(&column.key) {
                        Some(value) => (0, value.clone()),
                        None => (1, Value::Null),
                    },
                };
                Cursor { f: print.clone(), p, v, i: last.id }.encode()
            })
        } else {
            None
        };
        let count = match query.with_count.as_deref().map(str::trim) {
            Some("1") | Some("true") => {
                Some(base.select("count(*) AS n").query().get_result::<Count>(&mut conn).await?.n)
            }
            _ => None,
        };
        let records = self.render(&mut conn, caller, &view, rows).await?;
        Ok(RecordPage { records, next_cursor, has_more, count, served_at: self.clock.now() })
    }

    /// A page after `cursor`: `limit` rows and whether more follow.
    async fn page(
        &self,
        conn: &mut store::Conn,
        base: &Sql,
        sort: &Sort<'_>,
        descending: bool,
        cursor: Option<&Cursor>,
        limit: i64,
    ) -> Result<(Vec<Row>, bool)> {
        let (cmp, dir) = if descending { ("<", "DESC") } else { (">", "ASC") };
        let mut rows: Vec<Row> = match sort {
            Sort::System(system) => {
                let column = system.sql();
                let mut sql = base.select(ROW_COLUMNS);
                if let Some(cursor) = cursor
                    && let Some(at) = cursor.v.as_str().and_then(parse_time)
                {
                    let at = sql.bind(Bind::Time(at));
                    let id = sql.bind(Bind::Uuid(cursor.i));
                    sql.push(&format!(" AND ({column}, id) {cmp} ({at}, {id})"));
                }
                sql.order_limit(&format!("{column} {dir}, id {dir}"), limit + 1).query().get_results(conn).await?
            }
            Sort::Column(column) => {
                let value = sql::value_of(&column.key);
                // values first, in an order the column's index serves in both directions...
                let mut rows: Vec<Row> = Vec::new();
                if cursor.is_none_or(|c| c.p == 0) {
                    let mut sql = base.select(ROW_COLUMNS);
                    sql.push(&format!(" AND {value} IS NOT NULL"));
                    if let Some(cursor) = cursor {
                        let v = sql.bind(Bind::Json(cursor.v.clone()));
                        let id = sql.bind(Bind::Uuid(cursor.i));
                        sql.push(&format!(" AND ({value}, id) {cmp} ({v}, {id})"));
                    }
                    let nulls = if descending { "NULLS FIRST" } else { "NULLS LAST" };
                    let order = format!("{value} {dir} {nulls}, id {dir}");
                    rows = sql.order_limit(&order, limit + 1).query().get_results(conn).await?;
                }
                // ...then the empty ones, whichever the direction
                let room = limit + 1 - rows.len() as i64;
                if room > 0 {
                    let mut sql = base.select(ROW_COLUMNS);
                    sql.push(&format!(" AND {value} IS NULL"));
                    if let Some(cursor) = cursor.filter(|c| c.p == 1) {
                        let id = sql.bind(Bind::Uuid(cursor.i));
                        sql.push(&format!(" AND id {cmp} {id}"));
                    }
                    rows.extend(sql.order_limit(&format!("id {dir}"), room).query().get_results::<Row>(conn).await?);
                }
                rows
            }
        };
        let has_more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        Ok((rows, has_more))
    }

    /// A user-column sort on a table at or above its `sort_index_threshold` needs the column's
    /// index to be ready (contract: 501 `sort_needs_index`).
    async fn require_sort_index(&self, conn: &mut store::Conn, view: &View, column: &Column) -> Result<()> {
        let threshold = view.table.row.sort_index_threshold;
        if view.table.index_status(&column.key) == Some("ready") {
            return Ok(());
        }
        let counted: Count = diesel::sql_query(format!(
            "SELECT count(*) AS n FROM (SELECT 1 FROM data_records WHERE {} LIMIT $1) s",
            sql::live(view.table.id())
        ))
        .bind::<BigInt, _>(threshold)
        .get_result(conn)
        .await?;
        if counted.n >= threshold {
            return Err(Error::not_supported(format!(
                "Sorting {} by {} needs an index: the table has at least {threshold} records. Mark the column indexed.",
                view.table.row.slug, column.key
            ))
            .with_reason("sort_needs_index"));
        }
        Ok(())
    }
}

fn sort_time(row: &Row, system: System) -> String {
    crate::describe::rfc3339(if system == System::UpdatedAt { row.updated_at } else { row.created_at })
}

fn parse_time(raw: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(raw, &time::format_description::well_known::Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_clamped() {
        assert_eq!(page_size(None).expect("default"), 50);
        assert_eq!(page_size(Some("0")).expect("zero"), 1);
        assert_eq!(page_size(Some("-3")).expect("negative"), 1);
        assert_eq!(page_size(Some("500")).expect("large"), 200);
        assert!(page_size(Some("abc")).is_err());
        assert!(page_size(Some(" ")).is_err(), "an empty value is no integer");
    }

    #[test]
    fn cursors_belong_to_their_query() {
        let cursor = Cursor { f: "abc".into(), p: 0, v: Value::from(5), i: Uuid::nil() };
        let raw = cursor.encode();
        assert!(Cursor::decode(Some(&raw), "abc").is_some());
        assert!(Cursor::decode(Some(&raw), "other").is_none());
        assert!(Cursor::decode(Some("not a cursor"), "abc").is_none());
    }
}
