//! Groups of tables (contract: Data tables, groups): the list, one group with its tables and
//! saved reports, and an overview of a time range.

use std::collections::BTreeMap;

use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Date as SqlDate, Double, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use kernel::{Caller, Error, Result};
use serde::Serialize;
use serde_json::{Value, json};
use time::{Date, Duration, Month, OffsetDateTime, Time};
use uuid::Uuid;

use crate::apply::Report;
use crate::definition::ColumnType;
use crate::describe::{TableSummary, rfc3339};
use crate::service::View;
use crate::{DataService, sql, values};

/// Days a time series covers at most.
const SERIES_DAYS: i64 = 366;

#[derive(Debug, Clone, QueryableByName)]
pub(crate) struct GroupRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub slug: String,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Nullable<Text>)]
    description: Option<String>,
    #[diesel(sql_type = Jsonb)]
    reports: Value,
    #[diesel(sql_type = Timestamptz)]
    created_at: OffsetDateTime,
    #[diesel(sql_type = Timestamptz)]
    updated_at: OffsetDateTime,
}

impl GroupRow {
    fn meta(&self, table_count: usize) -> Value {
        json!({
            "id": self.id, "slug": self.slug, "name": self.name, "description": self.description,
            "table_count": table_count, "created_at": rfc3339(self.created_at), "updated_at": rfc3339(self.updated_at),
        })
    }
}

#[derive(Debug, Serialize)]
pub struct Groups {
    pub groups: Vec<Value>,
}

/// The range of an overview.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    pub name: String,
    pub from: OffsetDateTime,
    /// Inclusive: a named range ends now, a date ends at its last microsecond.
    pub to: OffsetDateTime,
}

pub const RANGES: [&str; 8] =
    ["today", "last_7_days", "last_30_days", "last_90_days", "this_month", "last_month", "this_year", "all_time"];

fn named_range(name: &str, now: OffsetDateTime) -> Option<Range> {
    let today = now.date().midnight().assume_utc();
    let month = now.date().replace_day(1).ok()?.midnight().assume_utc();
    let (from, to) = match name {
        "today" => (today, now),
        "last_7_days" => (now - Duration::days(7), now),
        "last_30_days" => (now - Duration::days(30), now),
        "last_90_days" => (now - Duration::days(90), now),
        "this_month" => (month, now),
        "last_month" => {
            let previous = (month - Duration::days(1)).date().replace_day(1).ok()?.midnight().assume_utc();
            (previous, month - Duration::microseconds(1))
        }
        "this_year" => (Date::from_calendar_date(now.year(), Month::January, 1).ok()?.midnight().assume_utc(), now),
        "all_time" => (OffsetDateTime::UNIX_EPOCH, now),
        _ => return None,
    };
    Some(Range { name: name.to_owned(), from, to: to.max(from) })
}

/// A range bound: an RFC 3339 time, or a date (`end` of a date is the end of that day).
fn bound(value: &Value, end: bool) -> std::result::Result<OffsetDateTime, String> {
    let at = values::instant(value)?;
    let is_date = value.as_str().is_some_and(|s| s.trim().len() == 10);
    Ok(if end && is_date { at + Duration::days(1) - Duration::microseconds(1) } else { at })
}

/// `range` (a name, or a JSON object `{from, to}`) or `from`/`to`; default `last_30_days`.
pub fn parse_range(range: Option<&str>, from: Option<&str>, to: Option<&str>, now: OffsetDateTime) -> Result<Range> {
    let invalid = |m: String| Error::field("range", m);
    let custom = |from: Option<Value>, to: Option<Value>| -> Result<Range> {
        let from = from.map(|f| bound(&f, false)).transpose().map_err(|m| invalid(format!("from {m}")))?;
        let to = to.map(|t| bound(&t, true)).transpose().map_err(|m| invalid(format!("to {m}")))?.unwrap_or(now);
        let from = from.unwrap_or(to - Duration::days(30));
        if from > to {
            return Err(invalid("from must come before to.".into()));
        }
        Ok(Range { name: "custom".into(), from, to })
    };
    // `from` and `to` are checked even beside a `range`, which wins over them.
    for (name, value, end) in [("from", from, false), ("to", to, true)] {
        if let Some(value) = value {
            bound(&Value::from(value), end).map_err(|m| invalid(format!("{name} {m}")))?;
        }
    }
    match range.map(str::trim).filter(|r| !r.is_empty()) {
        Some(raw) if raw.starts_with('{') => {
            let object: serde_json::Map<String, Value> = serde_json::from_str(raw)
                .map_err(|_| invalid("range is a name or a JSON object {from, to}.".into()))?;
            if let Some(name) = object.get("name").and_then(Value::as_str) {
                return named_range(name, now).ok_or_else(|| invalid(format!("Unknown range {name:?}.")));
            }
            custom(object.get("from").cloned(), object.get("to").cloned())
        }
        Some(name) => named_range(name, now).ok_or_else(|| {
            invalid(format!("Unknown range {name:?}: use one of {}, a JSON object or from/to.", RANGES.join(", ")))
        }),
        None if from.is_some() || to.is_some() => custom(from.map(Value::from), to.map(Value::from)),
        None => named_range("last_30_days", now).ok_or_else(|| Error::internal("the default range")),
    }
}

#[derive(QueryableByName)]
struct TableCounts {
    #[diesel(sql_type = SqlUuid)]
    table_id: Uuid,
    #[diesel(sql_type = BigInt)]
    records: i64,
    #[diesel(sql_type = BigInt)]
    created: i64,
    #[diesel(sql_type = BigInt)]
    updated: i64,
}

#[derive(QueryableByName)]
struct Day {
    #[diesel(sql_type = SqlDate)]
    day: Date,
    #[diesel(sql_type = BigInt)]
    created: i64,
}

#[derive(QueryableByName)]
struct Sums {
    #[diesel(sql_type = Nullable<Double>)]
    total: Option<f64>,
    #[diesel(sql_type = Nullable<Double>)]
    created_total: Option<f64>,
}

#[derive(QueryableByName)]
struct Links {
    #[diesel(sql_type = BigInt)]
    linked: i64,
    #[diesel(sql_type = BigInt)]
    unlinked: i64,
}

/// A tenant's groups, by name.
pub(crate) async fn group_rows(conn: &mut store::Conn, tenant: kernel::TenantId) -> Result<Vec<GroupRow>> {
    Ok(diesel::sql_query(
        "SELECT id, slug, name, description, reports, created_at, updated_at FROM data_groups
         WHERE tenant_id = $1 ORDER BY name",
    )
    .bind::<BigInt, _>(tenant.0)
    .get_results(conn)
    .await?)
}

impl DataService {
    /// A group with its tables visible to this caller; 404 when it has none.
    async fn group(
        &self,
        conn: &mut store::Conn,
        caller: &Caller,
        id: Uuid,
    ) -> Result<(GroupRow, Vec<(View, TableSummary)>)> {
        let tables: Vec<(View, TableSummary)> =
            self.visible(conn, caller).await?.into_iter().filter(|(v, _)| v.table.row.group_id == id).collect();
        let group = group_rows(conn, caller.tenant_id).await?.into_iter().find(|g| g.id == id);
        match group {
            Some(group) if !tables.is_empty() => Ok((group, tables)),
            _ => Err(Error::not_found("Group")),
        }
    }

    /// `GET /data/groups`: groups with at least one table this caller may read.
    pub async fn groups(&self, caller: &Caller) -> Result<Groups> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let visible = self.visible(&mut conn, caller).await?;
        let groups = group_rows(&mut conn, caller.tenant_id)
            .await?
            .iter()
            .filter_map(|g| {
                let count = visible.iter().filter(|(v, _)| v.table.row.group_id == g.id).count();
                (count > 0).then(|| g.meta(count))
            })
            .collect();
        Ok(Groups { groups })
    }

    /// `GET /data/groups/{group}`: the group, its tables with their columns, its reports.
    pub async fn group_detail(&self, caller: &Caller, id: Uuid) -> Result<Value> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let (group, tables) = self.group(&mut conn, caller, id).await?;
        let reports: Vec<Report> = serde_json::from_value(group.reports.clone()).unwrap_or_default();
        let reports: Vec<Value> = reports
            .into_iter()
            .filter_map(|r| {
                let (_, table) = tables.iter().find(|(v, _)| v.table.row.slug == r.table)?;
                Some(json!({
                    "key": r.key, "name": r.name, "description": r.description,
                    "table": {"id": table.id, "slug": table.slug, "name": table.name},
                    "filter": r.filter, "sort": r.sort, "dir": r.dir,
                }))
            })
            .collect();
        let tables: Vec<Value> = tables
            .iter()
            .map(|(view, summary)| {
                let columns: Vec<Value> = view
                    .definition()
                    .columns
                    .iter()
                    .map(|c| json!({"key": c.key, "label": c.label, "type": c.kind.as_str()}))
                    .collect();
                let mut table = serde_json::to_value(summary).unwrap_or_default();
                table["columns"] = Value::Array(columns);
                table
            })
            .collect();
        Ok(json!({"group": group.meta(tables.len()), "tables": tables, "reports": reports}))
    }

    /// `GET /data/groups/{group}/overview`.
    pub async fn overview(&self, caller: &Caller, id: Uuid, range: &Range) -> Result<Value> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let (group, tables) = self.group(&mut conn, caller, id).await?;
        let ids: Vec<Uuid> = tables.iter().map(|(v, _)| v.table.id()).collect();
        let counts: Vec<TableCounts> = diesel::sql_query(
            "SELECT table_id, count(*) AS records,
                    count(*) FILTER (WHERE created_at >= $2 AND created_at <= $3) AS created,
                    count(*) FILTER (WHERE updated_at >= $2 AND updated_at <= $3 AND updated_at > created_at) AS updated
             FROM data_records WHERE table_id = ANY($1) AND deleted_at IS NULL GROUP BY table_id",
        )
        .bind::<Array<SqlUuid>, _>(&ids)
        .bind::<Timestamptz, _>(range.from)
        .bind::<Timestamptz, _>(range.to)
        .get_results(&mut conn)
        .await?;
        let counts: BTreeMap<Uuid, &TableCounts> = counts.iter().map(|c| (c.table_id, c)).collect();
        let count = |id: Uuid, pick: fn(&TableCounts) -> i64| counts.get(&id).map(|c| pick(c)).unwrap_or(0);
        let cards: Vec<Value> = tables
            .iter()
            .map(|(_, t)| {
                json!({"id": t.id, "slug": t.slug, "name": t.name, "records": count(t.id, |c| c.records),
                       "created": count(t.id, |c| c.created), "updated": count(t.id, |c| c.updated)})
            })
            .collect();
        let total = |pick: fn(&TableCounts) -> i64| counts.values().map(|c| pick(c)).sum::<i64>();

        let mut amounts = Vec::new();
        let mut relationships = Vec::new();
        for (view, summary) in &tables {
            let live = sql::live(view.table.id());
            for column in view.definition().columns.iter().filter(|c| !view.is_masked(&c.key)) {
                match column.kind {
                    ColumnType::Currency => {
                        let text = sql::text_of(&column.key);
                        let sums: Sums = diesel::sql_query(format!(
                            "SELECT sum(({text})::numeric)::float8 AS total,
                                    sum(({text})::numeric) FILTER (WHERE created_at >= $1 AND created_at <= $2)::float8 AS created_total
                             FROM data_records WHERE {live}"
                        ))
                        .bind::<Timestamptz, _>(range.from)
                        .bind::<Timestamptz, _>(range.to)
                        .get_result(&mut conn)
                        .await?;
                        amounts.push(json!({
                            "table": summary.slug, "column": column.key, "label": column.label,
                            "currency": column.config.currency,
                            "total": values::number_value(sums.total.unwrap_or(0.0)),
                            "created_total": values::number_value(sums.created_total.unwrap_or(0.0)),
                        }));
                    }
                    ColumnType::Relation => {
                        let value = sql::value_of(&column.key);
                        let links: Links = diesel::sql_query(format!(
                            "SELECT count(*) FILTER (WHERE {value} IS NOT NULL) AS linked,
                                    count(*) FILTER (WHERE {value} IS NULL) AS unlinked
                             FROM data_records WHERE {live}"
                        ))
                        .get_result(&mut conn)
                        .await?;
                        relationships.push(json!({
                            "table": summary.slug, "column": column.key, "label": column.label,
                            "target": column.config.table, "linked": links.linked, "unlinked": links.unlinked,
                        }));
                    }
                    _ => {}
                }
            }
        }

        // one point per UTC day, the last SERIES_DAYS days of the range at most
        let last = range.to.max(range.from).date();
        let first = range.from.date().max(last - Duration::days(SERIES_DAYS - 1));
        let days: Vec<Day> = diesel::sql_query(
            "SELECT (created_at AT TIME ZONE 'UTC')::date AS day, count(*) AS created FROM data_records
             WHERE table_id = ANY($1) AND deleted_at IS NULL AND created_at >= $2 AND created_at <= $3 GROUP BY 1",
        )
        .bind::<Array<SqlUuid>, _>(&ids)
        .bind::<Timestamptz, _>(range.from.max(first.with_time(Time::MIDNIGHT).assume_utc()))
        .bind::<Timestamptz, _>(range.to)
        .get_results(&mut conn)
        .await?;
        let mut series = Vec::new();
        let mut day = first;
        while day <= last {
            let created = days.iter().find(|d| d.day == day).map(|d| d.created).unwrap_or(0);
            series.push(json!({"date": day.to_string(), "created": created}));
            day = day.next_day().unwrap_or(last + Duration::days(1));
        }

        Ok(json!({
            "group": group.meta(tables.len()),
            "range": {"name": range.name, "from": rfc3339(range.from), "to": rfc3339(range.to)},
            "totals": {"tables": tables.len(), "records": total(|c| c.records), "created": total(|c| c.created),
                       "updated": total(|c| c.updated)},
            "tables": cards,
            "amounts": amounts,
            "series": series,
            "relationships": relationships,
        }))
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn ranges_by_name_object_and_bounds() {
        let now = datetime!(2026-11-26 08:00 UTC);
        let default = parse_range(None, None, None, now).expect("default");
        assert_eq!((default.name.as_str(), default.from), ("last_30_days", now - Duration::days(30)));
        let last_month = parse_range(Some("last_month"), None, None, now).expect("named");
        assert_eq!(
            (last_month.from, last_month.to),
            (datetime!(2026-10-01 0:00 UTC), datetime!(2026-10-31 23:59:59.999999 UTC))
        );
        let object =
            parse_range(Some(r#"{"from": "2026-11-01", "to": "2026-11-02"}"#), None, None, now).expect("object");
        assert_eq!(
            (object.from, object.to),
            (datetime!(2026-11-01 0:00 UTC), datetime!(2026-11-02 23:59:59.999999 UTC))
        );
        let params = parse_range(None, Some("2026-11-20T00:00:00Z"), None, now).expect("from");
        assert_eq!((params.from, params.to), (datetime!(2026-11-20 0:00 UTC), now));
        assert!(parse_range(Some("last_year"), None, None, now).is_err());
        assert!(parse_range(Some("today"), Some("yesterday"), None, now).is_err(), "from is checked beside a range");
        assert!(parse_range(Some(r#"{"from": "2026-11-05", "to": "2026-11-01"}"#), None, None, now).is_err());
    }
}
