//! Groups and their overview (contract: Data tables; docs/api.md "Groups"): the group list and
//! a group with its tables and reports, the overview's ranges (named, a JSON object, from/to),
//! its totals, table cards, amounts, series and relationships as records come and go over
//! time, hidden tables left out, and another tenant's group not found.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Account, Resp, TestApp, json};
use serde_json::Value;
use time::{Date, Duration, Month, OffsetDateTime};
use uuid::Uuid;

use super::kit::*;
use super::support::*;

fn group_path(group: Uuid) -> String {
    format!("{GROUPS}/{group}")
}

fn overview_path(group: Uuid, query: &[(&str, &str)]) -> String {
    let query = serde_urlencoded::to_string(query).expect("query");
    if query.is_empty() { format!("{GROUPS}/{group}/overview") } else { format!("{GROUPS}/{group}/overview?{query}") }
}

/// `GET .../overview?query`, 200 expected: the body.
async fn overview<S, B>(app: &TestApp<S>, key: &str, group: Uuid, query: &[(&str, &str)]) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&overview_path(group, query), key).await;
    assert_status(&res, 200);
    res.body
}

/// `GET /data/groups`, 200 expected: the groups.
async fn groups<S, B>(app: &TestApp<S>, key: &str) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(GROUPS, key).await;
    assert_status(&res, 200);
    res.body["groups"].as_array().unwrap_or_else(|| panic!("groups in {}", res.body)).clone()
}

/// A table card of the overview by slug.
#[track_caller]
fn card<'a>(overview: &'a Value, slug: &str) -> &'a Value {
    overview["tables"]
        .as_array()
        .unwrap_or_else(|| panic!("tables in {overview}"))
        .iter()
        .find(|t| t["slug"] == slug)
        .unwrap_or_else(|| panic!("table {slug} in {overview}"))
}

/// The entry of `list` (amounts, relationships) whose `column` is `column`.
#[track_caller]
fn by_column<'a>(overview: &'a Value, list: &str, column: &str) -> &'a Value {
    overview[list]
        .as_array()
        .unwrap_or_else(|| panic!("{list} in {overview}"))
        .iter()
        .find(|t| t["column"] == column)
        .unwrap_or_else(|| panic!("{list} of {column} in {overview}"))
}

#[track_caller]
fn number(value: &Value) -> f64 {
    value.as_f64().unwrap_or_else(|| panic!("a number, got {value}"))
}

fn series_total(overview: &Value) -> i64 {
    overview["series"]
        .as_array()
        .unwrap_or_else(|| panic!("series in {overview}"))
        .iter()
        .map(|d| d["created"].as_i64().unwrap_or_else(|| panic!("created in {d}")))
        .sum()
}

fn day(at: OffsetDateTime) -> String {
    let d = at.date();
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

/// A tenant with a group `ops` of two tables, `public` (readable with data.view) and `private`
/// (needs data.private), a record in each made by an editor holding both; and a key that
/// reads only the public table.
struct Hidden {
    editor: Account,
    reader: String,
    group: Uuid,
    public: Uuid,
    private: Uuid,
}

async fn hidden<S, B>(app: &TestApp<S>) -> Hidden
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let editor = app.account("data.view,data.records.edit,data.private").await;
    let applied = apply(
        app,
        &editor,
        json!({"group": {"slug": "ops", "name": "Operations"},
               "tables": [
                   {"slug": "public", "name": "Public", "columns": [{"key": "name", "type": "text"}]},
                   {"slug": "private", "name": "Private", "access": {"read": "data.private", "write": "data.private"},
                    "columns": [{"key": "name", "type": "text"}, {"key": "fee", "type": "currency"}]}]}),
    )
    .await;
    let table = |slug: &str| applied.tables.iter().find(|t| t.slug == slug).expect("table").id;
    let (public, private) = (table("public"), table("private"));
    create(app, &editor.key, public, json!({"name": "Open"})).await;
    create(app, &editor.key, private, json!({"name": "Secret", "fee": 5000})).await;
    create(app, &editor.key, private, json!({"name": "Secret too", "fee": 7000})).await;
    let user = app.user(editor.tenant, "data.view").await;
    let reader = app.key(editor.tenant, user).await;
    // A second later, as any real request comes after the records it counts.
    app.advance(Duration::seconds(1)).await;
    Hidden { editor, reader, group: applied.group.id, public, private }
}

#[actix_web::test]
async fn the_group_list_shows_groups_with_a_visible_table() {
    // Proves GET /data/groups: members and table_count, counting visible tables only, and a
    // group whose every table is hidden left out; another tenant's groups never listed.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    crm_with(&app, EDITOR).await; // another tenant
    let listed = groups(&app, &crm.account.key).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let g = &listed[0];
    assert_eq!(g["id"], crm.group.to_string());
    assert_eq!(g["slug"], "crm");
    assert_eq!(g["name"], "CRM");
    assert_eq!(g["description"], "Customers and the agents who serve them");
    assert_eq!(g["table_count"], 2, "{g}");
    time_of(&g["updated_at"]);

    let h = hidden(&app).await;
    let as_editor = groups(&app, &h.editor.key).await;
    assert_eq!(as_editor.len(), 1);
    assert_eq!(as_editor[0]["table_count"], 2, "{as_editor:?}");
    let as_reader = groups(&app, &h.reader).await;
    assert_eq!(as_reader.len(), 1);
    assert_eq!(as_reader[0]["table_count"], 1, "the hidden table is not counted: {as_reader:?}");

    // A group of hidden tables only is not listed.
    apply(
        &app,
        &h.editor,
        json!({"group": {"slug": "vault", "name": "Vault"},
               "tables": [{"slug": "keys", "name": "Keys", "access": {"read": "data.private"},
                           "columns": [{"key": "name", "type": "text"}]}]}),
    )
    .await;
    assert_eq!(groups(&app, &h.editor.key).await.len(), 2);
    let as_reader = groups(&app, &h.reader).await;
    let slugs: Vec<&Value> = as_reader.iter().map(|g| &g["slug"]).collect();
    assert_eq!(slugs, [&json!("ops")], "{as_reader:?}");
}

#[actix_web::test]
async fn a_group_shows_its_tables_with_columns_and_its_reports() {
    // Proves GET /data/groups/{group}: the group, each visible table's summary with its
    // columns (key, label, type), and the reports of the definition file.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    create(&app, &crm.account.key, crm.customers, json!({"name": "Amina"})).await;
    let res = app.get(&group_path(crm.group), &crm.account.key).await;
    assert_status(&res, 200);
    let body = &res.body;
    assert_eq!(body["group"]["id"], crm.group.to_string(), "{body}");
    assert_eq!(body["group"]["slug"], "crm");
    assert_eq!(body["group"]["name"], "CRM");

    let tables = body["tables"].as_array().unwrap_or_else(|| panic!("tables in {body}"));
    let slugs: Vec<&str> = tables.iter().map(|t| t["slug"].as_str().expect("slug")).collect();
    assert_eq!(slugs, ["agents", "customers"]);
    let customers = &tables[1];
    assert_eq!(customers["id"], crm.customers.to_string());
    assert_eq!(customers["name"], "Customers");
    assert_eq!(customers["record_count"], 1, "{customers}");
    assert_eq!(customers["column_count"], 15, "{customers}");
    let columns = customers["columns"].as_array().unwrap_or_else(|| panic!("columns in {customers}"));
    let keys: Vec<(&str, &str)> =
        columns.iter().map(|c| (c["key"].as_str().expect("key"), c["type"].as_str().expect("type"))).collect();
    assert_eq!(keys, CUSTOMER_COLUMNS);
    assert_eq!(columns[0]["label"], "Name");
    assert_eq!(columns[1]["label"], "Phone");
    let agents = &tables[0];
    assert_eq!(agents["columns"], json!([{"key": "name", "label": "Name", "type": "text"}]), "{agents}");

    let reports = body["reports"].as_array().unwrap_or_else(|| panic!("reports in {body}"));
    assert_eq!(reports.len(), 1, "{body}");
    let report = &reports[0];
    assert_eq!(report["key"], "active");
    assert_eq!(report["name"], "Active customers");
    assert!(report.get("description").is_some(), "{report}");
    assert_eq!(report["table"]["id"], crm.customers.to_string(), "{report}");
    assert_eq!(report["table"]["slug"], "customers");
    assert_eq!(report["filter"], json!({"all": [{"column": "stage", "op": "equals", "value": "active"}]}));
}

#[actix_web::test]
async fn hidden_tables_are_left_out_of_a_group_and_its_overview() {
    // Proves that a table the caller may not read is left out of the group (tables) and of
    // its overview (totals, cards, amounts), while the editor sees both.
    let app = roomy().await;
    let h = hidden(&app).await;

    let res = app.get(&group_path(h.group), &h.reader).await;
    assert_status(&res, 200);
    let slugs: Vec<&Value> = res.body["tables"].as_array().expect("tables").iter().map(|t| &t["slug"]).collect();
    assert_eq!(slugs, [&json!("public")], "{}", res.body);
    let res = app.get(&group_path(h.group), &h.editor.key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["tables"].as_array().expect("tables").len(), 2);

    let seen = overview(&app, &h.reader, h.group, &[]).await;
    assert_eq!(seen["totals"]["tables"], 1, "{seen}");
    assert_eq!(seen["totals"]["records"], 1, "{seen}");
    assert_eq!(seen["totals"]["created"], 1, "{seen}");
    let cards: Vec<&Value> = seen["tables"].as_array().expect("tables").iter().map(|t| &t["slug"]).collect();
    assert_eq!(cards, [&json!("public")]);
    assert!(seen["amounts"].as_array().expect("amounts").is_empty(), "the private fee is not summed: {seen}");
    assert_eq!(series_total(&seen), 1);

    let all = overview(&app, &h.editor.key, h.group, &[]).await;
    assert_eq!(all["totals"]["tables"], 2, "{all}");
    assert_eq!(all["totals"]["records"], 3, "{all}");
    assert_eq!(card(&all, "private")["id"], h.private.to_string());
    assert_eq!(card(&all, "public")["id"], h.public.to_string());
    assert_eq!(number(&by_column(&all, "amounts", "fee")["total"]), 12000.0, "{all}");
}

#[actix_web::test]
async fn another_tenants_group_is_not_found() {
    // Proves isolation: a group of another tenant, or no group at all, is 404 not_found on the
    // group and its overview.
    let app = roomy().await;
    let mine = crm_with(&app, EDITOR).await;
    let theirs = crm_with(&app, EDITOR).await;
    for path in [group_path(theirs.group), overview_path(theirs.group, &[]), group_path(Uuid::new_v4())] {
        let res: Resp = app.get(&path, &mine.account.key).await;
        assert_data_error(&res, 404, "not_found");
    }
    assert_status(&app.get(&group_path(theirs.group), &theirs.account.key).await, 200);
}

#[actix_web::test]
async fn the_overview_defaults_to_the_last_thirty_days_and_reads_named_ranges() {
    // Proves the default range and each named range: the name echoed, from/to as times, and
    // the calendar ranges starting where they should (UTC).
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let now = app.clock.now();

    let body = overview(&app, key, crm.group, &[]).await;
    assert_eq!(body["range"]["name"], "last_30_days", "{}", body["range"]);
    let (from, to) = (time_of(&body["range"]["from"]), time_of(&body["range"]["to"]));
    assert!(to - from >= Duration::days(29) && to - from <= Duration::days(31), "{}", body["range"]);
    assert!(to >= now - Duration::seconds(1), "the range reaches now: {}", body["range"]);
    for member in ["group", "range", "totals", "tables", "amounts", "series", "relationships"] {
        assert!(body.get(member).is_some(), "{member} in {body}");
    }
    assert_eq!(body["group"]["id"], crm.group.to_string());
    assert_eq!(body["totals"]["tables"], 2);
    let series = body["series"].as_array().expect("series");
    assert!((30..=31).contains(&series.len()), "a day each: {}", series.len());
    assert_eq!(series.last().expect("a day")["date"], day(now), "the series ends today");

    let today = now.date();
    let month_start = Date::from_calendar_date(today.year(), today.month(), 1).expect("date");
    let last_month_start = Date::from_calendar_date(
        if today.month() == Month::January { today.year() - 1 } else { today.year() },
        today.month().previous(),
        1,
    )
    .expect("date");
    let year_start = Date::from_calendar_date(today.year(), Month::January, 1).expect("date");
    let starts = |d: Date| d.midnight().assume_utc();
    for (name, expected_from) in [
        ("today", Some(starts(today))),
        ("last_7_days", None),
        ("last_30_days", None),
        ("last_90_days", None),
        ("this_month", Some(starts(month_start))),
        ("last_month", Some(starts(last_month_start))),
        ("this_year", Some(starts(year_start))),
        ("all_time", None),
    ] {
        let body = overview(&app, key, crm.group, &[("range", name)]).await;
        let range = &body["range"];
        assert_eq!(range["name"], name, "{range}");
        if let Some(expected) = expected_from {
            assert_eq!(time_of(&range["from"]), expected, "{name}: {range}");
        }
        let to = time_of(&range["to"]);
        if let Some(days) = match name {
            "last_7_days" => Some(7),
            "last_90_days" => Some(90),
            _ => None,
        } {
            let span = to - time_of(&range["from"]);
            assert!(span >= Duration::days(days - 1) && span <= Duration::days(days + 1), "{name}: {range}");
        }
        if name == "last_month" {
            assert!(to <= starts(month_start), "last month ends where this one starts: {range}");
        }
    }
}

#[actix_web::test]
async fn a_range_may_be_a_json_object_or_from_and_to_and_a_bad_one_is_refused() {
    // Proves the explicit ranges: a JSON object with dates, from/to parameters with dates (to
    // of a date is the end of that day) or RFC 3339 times; and 422 for what is not a range.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let start = app.clock.now();
    create(&app, key, crm.customers, json!({"name": "Amina"})).await;
    create(&app, key, crm.agents, json!({"name": "Neema"})).await;
    app.advance(Duration::days(3)).await;
    create(&app, key, crm.customers, json!({"name": "Baraka"})).await;
    let then = day(start);

    let object = json!({"from": then, "to": then}).to_string();
    for query in [vec![("range", object.as_str())], vec![("from", then.as_str()), ("to", then.as_str())]] {
        let body = overview(&app, key, crm.group, &query).await;
        let range = &body["range"];
        assert!(
            range["from"].as_str().is_some_and(|f| f.starts_with(&format!("{then}T00:00:00"))),
            "{query:?}: {range}"
        );
        let to = time_of(&range["to"]);
        let end_of_day = (start.date().midnight() + Duration::days(1)).assume_utc();
        assert!(
            to >= end_of_day - Duration::seconds(1) && to <= end_of_day,
            "{query:?}: to is the end of {then}: {range}"
        );
        assert_eq!(body["totals"]["created"], 2, "{query:?}: {body}");
        assert_eq!(card(&body, "customers")["created"], 1, "{body}");
        assert_eq!(card(&body, "agents")["created"], 1, "{body}");
        let series = body["series"].as_array().expect("series");
        assert_eq!(series.len(), 1, "one day: {body}");
        assert_eq!(series[0]["date"], then);
        assert_eq!(series[0]["created"], 2);
    }

    // Times: from an hour ago to now holds only the last record.
    let now = app.clock.now();
    let (from, to) = (rfc3339(now - Duration::hours(1)), rfc3339(now + Duration::minutes(1)));
    let body = overview(&app, key, crm.group, &[("from", &from), ("to", &to)]).await;
    assert_eq!(body["totals"]["created"], 1, "{body}");
    assert_eq!(card(&body, "customers")["created"], 1, "{body}");
    assert_eq!(body["totals"]["records"], 3, "records counts every live record: {body}");

    let mut failures = Vec::new();
    for query in [
        vec![("range", "yesterday")],
        vec![("range", "LAST_30_DAYS_PLUS")],
        vec![("range", "{\"from\": \"2026-11-01\"")],
        vec![("range", "{\"from\": \"nope\", \"to\": \"2026-11-30\"}")],
        vec![("range", "{\"from\": \"2026-13-01\", \"to\": \"2026-11-30\"}")],
        vec![("from", "2026-02-30"), ("to", "2026-03-01")],
        vec![("from", "soon"), ("to", "later")],
        vec![("from", "")],
        vec![("to", "")],
        // a range wins over from/to, which are still checked
        vec![("range", "today"), ("from", "soon")],
        vec![("range", "today"), ("to", "later")],
    ] {
        let res = app.get(&overview_path(crm.group, &query), key).await;
        if res.status != 422 || res.body["code"] != "validation_error" {
            failures.push(format!("{query:?}: {} {}", res.status, res.body));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[actix_web::test]
async fn totals_amounts_and_relationships_follow_records_over_time() {
    // Proves the figures: records counts live records, created only those made in the range
    // (not the ones from before it), updated moves with a change, amounts sum the currency
    // column over live records and over those created in the range, relationships count
    // linked and unlinked records, the series adds up to created, and a delete takes a record
    // out of every figure.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let neema = record_id(&create(&app, key, crm.agents, json!({"name": "Neema"})).await);
    let old_linked =
        create(&app, key, crm.customers, json!({"name": "Old linked", "credit": 1000, "agent": neema})).await;
    let old_alone = create(&app, key, crm.customers, json!({"name": "Old alone", "credit": 2500})).await;

    app.advance(Duration::days(40)).await;
    create(&app, key, crm.customers, json!({"name": "New linked", "credit": 400, "agent": neema})).await;
    create(&app, key, crm.agents, json!({"name": "Juma"})).await;
    // Made at the very instant of the request: within the last 30 days.
    let instant = overview(&app, key, crm.group, &[]).await;
    assert_eq!(instant["totals"]["created"], 2, "{}", instant["totals"]);
    app.advance(Duration::seconds(1)).await;

    let body = overview(&app, key, crm.group, &[]).await;
    assert_eq!(body["totals"]["tables"], 2, "{body}");
    assert_eq!(body["totals"]["records"], 5, "{}", body["totals"]);
    assert_eq!(body["totals"]["created"], 2, "records from before the range are not created in it: {}", body["totals"]);
    let customers = card(&body, "customers");
    assert_eq!((&customers["records"], &customers["created"]), (&json!(3), &json!(1)), "{customers}");
    assert_eq!(customers["id"], crm.customers.to_string());
    assert_eq!(customers["name"], "Customers");
    let agents = card(&body, "agents");
    assert_eq!((&agents["records"], &agents["created"]), (&json!(2), &json!(1)), "{agents}");
    let credit = by_column(&body, "amounts", "credit");
    assert_eq!(number(&credit["total"]), 3900.0, "{credit}");
    assert_eq!(number(&credit["created_total"]), 400.0, "{credit}");
    assert_eq!(credit["currency"], "TZS");
    assert_eq!(credit["label"], "Credit");
    assert_eq!(series_total(&body), 2, "the series adds up to created: {body}");
    // Relationships over every live record (the whole history, so whatever the range).
    let history = overview(&app, key, crm.group, &[("range", "all_time")]).await;
    let agent = by_column(&history, "relationships", "agent");
    assert_eq!((&agent["linked"], &agent["unlinked"]), (&json!(2), &json!(1)), "{agent}");
    assert!(agent.get("target").is_some() && agent.get("table").is_some(), "{agent}");
    let updated_before = body["totals"]["updated"].as_i64().expect("updated");

    // A change to an old record counts as updated in the range, not as created.
    update(&app, key, crm.customers, &record_id(&old_alone), json!({"notes": "Called again"})).await;
    app.advance(Duration::seconds(1)).await;
    let body = overview(&app, key, crm.group, &[]).await;
    assert_eq!(body["totals"]["updated"].as_i64(), Some(updated_before + 1), "{}", body["totals"]);
    assert_eq!(body["totals"]["created"], 2);
    let customers = card(&body, "customers");
    assert!(customers["updated"].as_i64().is_some_and(|n| n >= 1), "{customers}");

    // The whole history.
    let body = overview(&app, key, crm.group, &[("range", "all_time")]).await;
    assert_eq!(body["totals"]["created"], 5, "{}", body["totals"]);
    let credit = by_column(&body, "amounts", "credit");
    assert_eq!(number(&credit["created_total"]), 3900.0, "{credit}");
    let days = body["series"].as_array().expect("series").len();
    assert!((1..=366).contains(&days), "one per day, at most 366: {days}");
    assert_eq!(series_total(&body), 5, "the series adds up to created: {}", body["series"]);

    // A deleted record leaves every figure.
    remove(&app, key, crm.customers, &record_id(&old_linked)).await;
    let body = overview(&app, key, crm.group, &[]).await;
    assert_eq!(body["totals"]["records"], 4, "{}", body["totals"]);
    assert_eq!(card(&body, "customers")["records"], 2);
    assert_eq!(number(&by_column(&body, "amounts", "credit")["total"]), 2900.0);
    let history = overview(&app, key, crm.group, &[("range", "all_time")]).await;
    let agent = by_column(&history, "relationships", "agent");
    assert_eq!((&agent["linked"], &agent["unlinked"]), (&json!(1), &json!(1)), "{agent}");

    // Later still, nothing is created in the last 30 days.
    app.advance(Duration::days(45)).await;
    let body = overview(&app, key, crm.group, &[]).await;
    assert_eq!(body["totals"]["created"], 0, "{}", body["totals"]);
    assert_eq!(body["totals"]["updated"], 0, "{}", body["totals"]);
    assert_eq!(body["totals"]["records"], 4);
    assert_eq!(number(&by_column(&body, "amounts", "credit")["created_total"]), 0.0);
    assert_eq!(series_total(&body), 0);
}
