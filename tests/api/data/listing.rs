//! Listing records (contract: Data tables, the record list query and condition trees; Limits;
//! docs/api.md "Listing records"): every operator on every type that advertises it and the
//! refusal of the others, the tree limits, system columns, `q`, sorting with empty values last,
//! limits, keyset cursors, counts and the sort that needs an index.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, json};
use serde_json::Value;
use std::collections::BTreeSet;
use time::Duration;
use uuid::Uuid;

use super::kit::*;
use super::support::*;

/// Runs `(filter, expected names)` cases; every mismatch is reported at once.
async fn check_cases<S, B>(app: &TestApp<S>, key: &str, table: Uuid, cases: Vec<(Value, Vec<&str>)>)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let mut failures = Vec::new();
    for (filter, expected) in cases {
        let res = filter_raw(app, key, table, &filter).await;
        if res.status != 200 {
            failures.push(format!("{filter}: expected 200, got {} {}", res.status, res.body));
            continue;
        }
        let mut got = names(&res.body);
        got.sort();
        let mut expected: Vec<String> = expected.into_iter().map(str::to_owned).collect();
        expected.sort();
        if got != expected {
            failures.push(format!("{filter}: expected {expected:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{} filter(s) answered wrongly:\n{}", failures.len(), failures.join("\n"));
}

#[actix_web::test]
async fn text_like_operators_match_and_ignore_case() {
    // Proves every operator of text, long_text, email and phone, with records that match and
    // records that do not: comparisons ignore case, not_equals also matches empty values.
    let app = roomy().await;
    let p = people(&app).await;
    let v = Value::Null;
    let cases = vec![
        // text
        (leaf("name", "equals", json!("amina juma")), vec![AMINA]),
        (leaf("name", "not_equals", json!("AMINA JUMA")), vec![BARAKA, CHAUSIKU]),
        (leaf("name", "contains", json!("USH")), vec![BARAKA]),
        (leaf("name", "contains", json!("a")), vec![AMINA, BARAKA, CHAUSIKU]),
        (leaf("name", "starts_with", json!("bA")), vec![BARAKA]),
        (leaf("name", "starts_with", json!("ush")), vec![]),
        (leaf("name", "in", json!(["amina juma", "CHAUSIKU", "nobody"])), vec![AMINA, CHAUSIKU]),
        (leaf("name", "is_empty", v.clone()), vec![]),
        (leaf("name", "is_not_empty", v.clone()), vec![AMINA, BARAKA, CHAUSIKU]),
        // long_text
        (leaf("notes", "equals", json!("pays on TIME")), vec![AMINA]),
        (leaf("notes", "not_equals", json!("Pays on time")), vec![BARAKA, CHAUSIKU]),
        (leaf("notes", "contains", json!("PAY")), vec![AMINA, BARAKA]),
        (leaf("notes", "starts_with", json!("late")), vec![BARAKA]),
        (leaf("notes", "in", json!(["late payer"])), vec![BARAKA]),
        (leaf("notes", "is_empty", v.clone()), vec![CHAUSIKU]),
        (leaf("notes", "is_not_empty", v.clone()), vec![AMINA, BARAKA]),
        // email
        (leaf("email", "equals", json!("AMINA@example.com")), vec![AMINA]),
        (leaf("email", "not_equals", json!("amina@example.com")), vec![BARAKA, CHAUSIKU]),
        (leaf("email", "contains", json!("@SHOP")), vec![BARAKA]),
        (leaf("email", "starts_with", json!("amina@")), vec![AMINA]),
        (leaf("email", "in", json!(["baraka@shop.co.tz", "nobody@example.com"])), vec![BARAKA]),
        (leaf("email", "is_empty", v.clone()), vec![CHAUSIKU]),
        (leaf("email", "is_not_empty", v.clone()), vec![AMINA, BARAKA]),
        // phone
        (leaf("phone", "equals", json!("+255712000001")), vec![AMINA]),
        (leaf("phone", "not_equals", json!("+255712000001")), vec![BARAKA, CHAUSIKU]),
        (leaf("phone", "contains", json!("713")), vec![BARAKA]),
        (leaf("phone", "starts_with", json!("+25571")), vec![AMINA, BARAKA]),
        (leaf("phone", "in", json!(["+255713000002", "+255799999999"])), vec![BARAKA]),
        (leaf("phone", "is_empty", v.clone()), vec![CHAUSIKU]),
        (leaf("phone", "is_not_empty", v), vec![AMINA, BARAKA]),
    ];
    check_cases(&app, p.key(), p.crm.customers, cases).await;
}

#[actix_web::test]
async fn ordered_operators_match_numbers_amounts_dates_times_and_auto_numbers() {
    // Proves equals, not_equals, greater_than and less_than (strict), between (both ends
    // inclusive), in, is_empty and is_not_empty on number, currency, date, datetime and
    // auto_number; a datetime value is read as a time (another offset, same instant).
    let app = roomy().await;
    let p = people(&app).await;
    let v = Value::Null;
    let cases = vec![
        // number
        (leaf("score", "equals", json!(40)), vec![BARAKA]),
        (leaf("score", "not_equals", json!(40)), vec![AMINA, CHAUSIKU]),
        (leaf("score", "greater_than", json!(40)), vec![AMINA]),
        (leaf("score", "less_than", json!(80.5)), vec![BARAKA]),
        (leaf("score", "between", json!([40, 80.5])), vec![AMINA, BARAKA]),
        (leaf("score", "between", json!([41, 100])), vec![AMINA]),
        (leaf("score", "in", json!([40, 99])), vec![BARAKA]),
        (leaf("score", "is_empty", v.clone()), vec![CHAUSIKU]),
        (leaf("score", "is_not_empty", v.clone()), vec![AMINA, BARAKA]),
        // currency
        (leaf("credit", "equals", json!(150000)), vec![AMINA]),
        (leaf("credit", "not_equals", json!(150000)), vec![BARAKA, CHAUSIKU]),
        (leaf("credit", "greater_than", json!(20000)), vec![AMINA]),
        (leaf("credit", "less_than", json!(150000)), vec![BARAKA]),
        (leaf("credit", "between", json!([20000, 150000])), vec![AMINA, BARAKA]),
        (leaf("credit", "between", json!([20001, 149999])), vec![]),
        (leaf("credit", "in", json!([20000, 5])), vec![BARAKA]),
        (leaf("credit", "is_empty", v.clone()), vec![CHAUSIKU]),
        (leaf("credit", "is_not_empty", v.clone()), vec![AMINA, BARAKA]),
        // date
        (leaf("joined", "equals", json!("2026-01-15")), vec![AMINA]),
        (leaf("joined", "not_equals", json!("2026-01-15")), vec![BARAKA, CHAUSIKU]),
        (leaf("joined", "greater_than", json!("2026-01-15")), vec![BARAKA]),
        (leaf("joined", "less_than", json!("2026-02-20")), vec![AMINA]),
        (leaf("joined", "between", json!(["2026-01-15", "2026-02-20"])), vec![AMINA, BARAKA]),
        (leaf("joined", "between", json!(["2026-01-16", "2026-02-19"])), vec![]),
        (leaf("joined", "in", json!(["2026-02-20", "2030-01-01"])), vec![BARAKA]),
        (leaf("joined", "is_empty", v.clone()), vec![CHAUSIKU]),
        (leaf("joined", "is_not_empty", v.clone()), vec![AMINA, BARAKA]),
        // datetime
        (leaf("seen", "equals", json!("2026-03-01T13:00:00+03:00")), vec![AMINA]),
        (leaf("seen", "not_equals", json!("2026-03-01T10:00:00Z")), vec![BARAKA, CHAUSIKU]),
        (leaf("seen", "greater_than", json!("2026-03-01T10:00:00Z")), vec![BARAKA]),
        (leaf("seen", "less_than", json!("2026-04-01T08:30:00Z")), vec![AMINA]),
        (leaf("seen", "between", json!(["2026-03-01T10:00:00Z", "2026-04-01T08:30:00Z"])), vec![AMINA, BARAKA]),
        (leaf("seen", "between", json!(["2026-03-01T10:00:01Z", "2026-04-01T08:29:59Z"])), vec![]),
        (leaf("seen", "in", json!(["2026-04-01T08:30:00Z"])), vec![BARAKA]),
        (leaf("seen", "is_empty", v.clone()), vec![CHAUSIKU]),
        (leaf("seen", "is_not_empty", v.clone()), vec![AMINA, BARAKA]),
        // auto_number: every record has one
        (leaf("ref", "is_empty", v.clone()), vec![]),
        (leaf("ref", "is_not_empty", v), vec![AMINA, BARAKA, CHAUSIKU]),
    ];
    check_cases(&app, p.key(), p.crm.customers, cases).await;

    // auto_number: the expected sets follow from the numbers the records were given.
    let refs: Vec<(&str, i64)> = [(&p.amina, AMINA), (&p.baraka, BARAKA), (&p.chausiku, CHAUSIKU)]
        .into_iter()
        .map(|(r, name)| (name, r["data"]["ref"].as_i64().unwrap_or_else(|| panic!("ref in {r}"))))
        .collect();
    let distinct: BTreeSet<i64> = refs.iter().map(|(_, n)| *n).collect();
    assert_eq!(distinct.len(), 3, "auto numbers are distinct: {refs:?}");
    let (a, b, c) = (refs[0].1, refs[1].1, refs[2].1);
    let whose = |keep: &dyn Fn(i64) -> bool| -> Vec<&str> {
        refs.iter().filter(|(_, n)| keep(*n)).map(|(name, _)| *name).collect()
    };
    let cases = vec![
        (leaf("ref", "equals", json!(b)), vec![BARAKA]),
        (leaf("ref", "not_equals", json!(b)), vec![AMINA, CHAUSIKU]),
        (leaf("ref", "greater_than", json!(a)), whose(&|n| n > a)),
        (leaf("ref", "less_than", json!(c)), whose(&|n| n < c)),
        (leaf("ref", "between", json!([a.min(b), a.max(b)])), whose(&|n| n >= a.min(b) && n <= a.max(b))),
        (leaf("ref", "in", json!([a, c])), vec![AMINA, CHAUSIKU]),
    ];
    check_cases(&app, p.key(), p.crm.customers, cases).await;
}

#[actix_web::test]
async fn choice_boolean_relation_and_file_operators_match() {
    // Proves the operators of boolean, select, status, relation, multi_select (contains has the
    // option, in has any of them) and file, with not_equals also matching empty values.
    let app = roomy().await;
    let p = people(&app).await;
    let v = Value::Null;
    let cases = vec![
        // boolean
        (leaf("vip", "equals", json!(true)), vec![AMINA]),
        (leaf("vip", "equals", json!(false)), vec![BARAKA]),
        (leaf("vip", "not_equals", json!(true)), vec![BARAKA, CHAUSIKU]),
        (leaf("vip", "is_empty", v.clone()), vec![CHAUSIKU]),
        (leaf("vip", "is_not_empty", v.clone()), vec![AMINA, BARAKA]),
        // select
        (leaf("segment", "equals", json!("retail")), vec![AMINA]),
        (leaf("segment", "not_equals", json!("retail")), vec![BARAKA, CHAUSIKU]),
        (leaf("segment", "in", json!(["wholesale"])), vec![BARAKA]),
        (leaf("segment", "in", json!(["retail", "wholesale"])), vec![AMINA, BARAKA]),
        (leaf("segment", "is_empty", v.clone()), vec![CHAUSIKU]),
        (leaf("segment", "is_not_empty", v.clone()), vec![AMINA, BARAKA]),
        // status (required, so never empty)
        (leaf("stage", "equals", json!("active")), vec![BARAKA]),
        (leaf("stage", "not_equals", json!("active")), vec![AMINA, CHAUSIKU]),
        (leaf("stage", "in", json!(["new", "closed"])), vec![AMINA, CHAUSIKU]),
        (leaf("stage", "is_empty", v.clone()), vec![]),
        (leaf("stage", "is_not_empty", v.clone()), vec![AMINA, BARAKA, CHAUSIKU]),
        // relation
        (leaf("agent", "equals", json!(p.agent1)), vec![AMINA]),
        (leaf("agent", "not_equals", json!(p.agent1)), vec![BARAKA, CHAUSIKU]),
        (leaf("agent", "in", json!([p.agent1, p.agent2])), vec![AMINA, BARAKA]),
        (leaf("agent", "is_empty", v.clone()), vec![CHAUSIKU]),
        (leaf("agent", "is_not_empty", v.clone()), vec![AMINA, BARAKA]),
        // multi_select
        (leaf("tags", "contains", json!("late")), vec![BARAKA]),
        (leaf("tags", "contains", json!("vip")), vec![AMINA, BARAKA]),
        (leaf("tags", "in", json!(["late"])), vec![BARAKA]),
        (leaf("tags", "in", json!(["late", "vip"])), vec![AMINA, BARAKA]),
        (leaf("tags", "is_empty", v.clone()), vec![CHAUSIKU]),
        (leaf("tags", "is_not_empty", v.clone()), vec![AMINA, BARAKA]),
        // file
        (leaf("contract", "is_empty", v.clone()), vec![BARAKA, CHAUSIKU]),
        (leaf("contract", "is_not_empty", v), vec![AMINA]),
    ];
    check_cases(&app, p.key(), p.crm.customers, cases).await;
}

#[actix_web::test]
async fn all_and_any_combine_leaves() {
    // Proves that `all` is AND and `any` is OR, nested.
    let app = roomy().await;
    let p = people(&app).await;
    let cases = vec![
        (
            json!({"all": [leaf("tags", "contains", json!("vip")), leaf("score", "greater_than", json!(50))]}),
            vec![AMINA],
        ),
        (
            json!({"any": [leaf("segment", "equals", json!("wholesale")), leaf("name", "equals", json!(CHAUSIKU))]}),
            vec![BARAKA, CHAUSIKU],
        ),
        (
            json!({"all": [
                {"any": [leaf("score", "less_than", json!(50)), leaf("score", "is_empty", Value::Null)]},
                leaf("stage", "equals", json!("new")),
            ]}),
            vec![CHAUSIKU],
        ),
    ];
    check_cases(&app, p.key(), p.crm.customers, cases).await;
}

/// A sample value of the CRM column `key` that its type reads.
fn sample(p: &People, key: &str) -> Value {
    match key {
        "name" => json!("Amina"),
        "phone" => json!("+255712000001"),
        "email" => json!("amina@example.com"),
        "score" => json!(40),
        "credit" => json!(20000),
        "segment" => json!("retail"),
        "tags" => json!("vip"),
        "stage" => json!("new"),
        "joined" => json!("2026-01-15"),
        "seen" => json!("2026-03-01T10:00:00Z"),
        "vip" => json!(true),
        "notes" => json!("late"),
        "agent" => json!(p.agent1),
        "contract" => json!(p.file.to_string()),
        "ref" => json!(1),
        other => panic!("no column {other}"),
    }
}

#[actix_web::test]
async fn a_known_operator_a_type_does_not_advertise_is_not_supported() {
    // Proves the 501 not_supported (reason operator_not_supported) for each of the ten
    // operators on each type that does not list it, with a value the type reads.
    let app = roomy().await;
    let p = people(&app).await;
    let mut failures = Vec::new();
    let mut checked = 0;
    for (key, ty) in CUSTOMER_COLUMNS {
        for op in OPERATORS.iter().filter(|op| !advertised(ty).contains(*op)) {
            let value = match *op {
                "between" => json!([sample(&p, key), sample(&p, key)]),
                "in" => json!([sample(&p, key)]),
                _ => sample(&p, key),
            };
            let filter = leaf(key, op, value);
            let res = filter_raw(&app, p.key(), p.crm.customers, &filter).await;
            checked += 1;
            if res.status != 501
                || res.body["code"] != "not_supported"
                || res.body["error"]["code"] != "not_supported"
                || res.body["error"]["reason"] != "operator_not_supported"
            {
                failures.push(format!("{ty} {filter}: {} {}", res.status, res.body));
            }
        }
    }
    assert!(checked > 40, "every type lacks some operator: {checked}");
    assert!(failures.is_empty(), "{} refusal(s) wrong:\n{}", failures.len(), failures.join("\n"));

    // The envelope of one of them, in full.
    let res = filter_raw(&app, p.key(), p.crm.customers, &leaf("vip", "greater_than", json!(true))).await;
    assert_not_supported(&res, "operator_not_supported");
}

#[actix_web::test]
async fn an_unknown_operator_or_a_malformed_filter_is_a_validation_error() {
    // Proves that anything but a well-formed tree of known operators, known columns and values
    // the column's type reads is 422 validation_error.
    let app = roomy().await;
    let p = people(&app).await;
    let mut bad: Vec<String> = [
        leaf("name", "like", json!("Amina")),
        leaf("name", "EQUALS_ISH", json!("Amina")),
        leaf("nope", "equals", json!("x")),
        json!({"column": "name", "op": "equals"}),
        json!({"op": "equals", "value": "x"}),
        json!({"all": "x"}),
        json!({"any": {"column": "name", "op": "equals", "value": "x"}}),
        json!({"none": [leaf("name", "equals", json!("x"))]}),
        json!([leaf("name", "equals", json!("x"))]),
        json!("name = x"),
        leaf("score", "greater_than", json!("abc")),
        leaf("joined", "equals", json!("15/01/2026")),
        leaf("seen", "equals", json!("2026-03-01T10:00:00")),
        leaf("score", "between", json!([1])),
        leaf("score", "between", json!(5)),
        leaf("name", "in", json!([])),
        leaf("name", "in", json!("Amina")),
        leaf("name", "in", Value::Array((0..101).map(|i| json!(format!("n{i}"))).collect())),
        leaf("vip", "equals", json!("maybe")),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    bad.push("{not json".to_owned());
    bad.push("{\"all\": [".to_owned());
    let mut failures = Vec::new();
    for filter in &bad {
        let res = list_raw(&app, p.key(), p.crm.customers, &[("filter", filter)]).await;
        if res.status != 422
            || res.body["code"] != "validation_error"
            || res.body["error"]["code"] != "validation_error"
        {
            failures.push(format!("{filter}: {} {}", res.status, res.body));
        }
    }
    assert!(failures.is_empty(), "{} filter(s) not refused 422:\n{}", failures.len(), failures.join("\n"));
    let res = filter_raw(&app, p.key(), p.crm.customers, &leaf("name", "like", json!("A"))).await;
    assert_data_error(&res, 422, "validation_error");

    // 100 values in `in` are fine.
    let mut many: Vec<Value> = (0..99).map(|i| json!(format!("n{i}"))).collect();
    many.push(json!(AMINA));
    let res = filter_raw(&app, p.key(), p.crm.customers, &leaf("name", "in", Value::Array(many))).await;
    assert_status(&res, 200);
    assert_eq!(names(&res.body), vec![AMINA]);
}

#[actix_web::test]
async fn a_tree_may_hold_forty_leaves_and_be_six_deep() {
    // Proves the limits: 40 leaves accepted, 41 refused (counted over the whole tree); depth 6
    // accepted, 7 refused (a bare leaf is depth 1, {all:[leaf]} depth 2).
    let app = roomy().await;
    let p = people(&app).await;
    let misses = |n: usize| (0..n).map(|i| leaf("name", "equals", json!(format!("nobody {i}")))).collect::<Vec<_>>();
    let hit = leaf("name", "equals", json!(BARAKA));

    let mut forty = misses(39);
    forty.push(hit.clone());
    let res = filter_raw(&app, p.key(), p.crm.customers, &json!({"any": forty})).await;
    assert_status(&res, 200);
    assert_eq!(names(&res.body), vec![BARAKA]);

    let mut forty_one = misses(40);
    forty_one.push(hit.clone());
    let res = filter_raw(&app, p.key(), p.crm.customers, &json!({"any": forty_one})).await;
    assert_data_error(&res, 422, "validation_error");

    // 20 + 21 leaves in two branches: 41 in all.
    let mut second = misses(20);
    second.push(hit.clone());
    let split = json!({"any": [{"any": misses(20)}, {"any": second}]});
    let res = filter_raw(&app, p.key(), p.crm.customers, &split).await;
    assert_data_error(&res, 422, "validation_error");
    let mut second = misses(19);
    second.push(hit.clone());
    let split = json!({"any": [{"any": misses(20)}, {"any": second}]});
    let res = filter_raw(&app, p.key(), p.crm.customers, &split).await;
    assert_status(&res, 200);
    assert_eq!(names(&res.body), vec![BARAKA]);

    // Depth.
    let res = filter_raw(&app, p.key(), p.crm.customers, &hit).await;
    assert_status(&res, 200);
    assert_eq!(names(&res.body), vec![BARAKA], "a bare leaf is a tree");
    let six = nest(hit.clone(), 6);
    assert_eq!(six.to_string().matches("\"all\"").count() + six.to_string().matches("\"any\"").count(), 5);
    let res = filter_raw(&app, p.key(), p.crm.customers, &six).await;
    assert_status(&res, 200);
    assert_eq!(names(&res.body), vec![BARAKA]);
    let res = filter_raw(&app, p.key(), p.crm.customers, &nest(hit, 7)).await;
    assert_data_error(&res, 422, "validation_error");
}

#[actix_web::test]
async fn an_empty_filter_or_none_selects_every_live_record() {
    // Proves that `{}` and no filter select all, and that deleted records are never listed.
    let app = roomy().await;
    let p = people(&app).await;
    let all = [AMINA, BARAKA, CHAUSIKU];
    for query in [vec![], vec![("filter", "{}")]] {
        let body = list(&app, p.key(), p.crm.customers, &query).await;
        let mut got = names(&body);
        got.sort();
        assert_eq!(got, all, "{query:?}: {body}");
    }
    remove(&app, p.key(), p.crm.customers, &record_id(&p.baraka)).await;
    let body = list(&app, p.key(), p.crm.customers, &[("filter", "{}")]).await;
    let mut got = names(&body);
    got.sort();
    assert_eq!(got, vec![AMINA, CHAUSIKU]);
}

#[actix_web::test]
async fn system_columns_filter_by_id_times_and_source() {
    // Proves `$id`, `$created_at`, `$updated_at` and `$source` as filter columns: the
    // customers were made a minute apart and Amina was changed last.
    let app = roomy().await;
    let p = people(&app).await;
    let (a, b, c) = (&p.amina, &p.baraka, &p.chausiku);
    let cases = vec![
        (leaf("$id", "equals", a["id"].clone()), vec![AMINA]),
        (leaf("$id", "in", json!([a["id"], c["id"]])), vec![AMINA, CHAUSIKU]),
        (leaf("$created_at", "greater_than", a["created_at"].clone()), vec![BARAKA, CHAUSIKU]),
        (leaf("$created_at", "less_than", b["created_at"].clone()), vec![AMINA]),
        (leaf("$created_at", "between", json!([a["created_at"], b["created_at"]])), vec![AMINA, BARAKA]),
        (leaf("$created_at", "equals", c["created_at"].clone()), vec![CHAUSIKU]),
        (leaf("$updated_at", "greater_than", c["updated_at"].clone()), vec![AMINA]),
        (leaf("$updated_at", "less_than", c["updated_at"].clone()), vec![BARAKA]),
        (leaf("$source", "equals", json!("api")), vec![AMINA, BARAKA, CHAUSIKU]),
        (leaf("$source", "not_equals", json!("api")), vec![]),
    ];
    check_cases(&app, p.key(), p.crm.customers, cases).await;

    let res = filter_raw(&app, p.key(), p.crm.customers, &leaf("$nope", "equals", json!("x"))).await;
    assert_data_error(&res, 422, "validation_error");
}

#[actix_web::test]
async fn q_searches_text_like_columns_without_case() {
    // Proves `q` over text, long_text, phone and email columns, case-insensitive substring;
    // a select value is not searched.
    let app = roomy().await;
    let p = people(&app).await;
    let mut failures = Vec::new();
    for (q, expected) in [
        ("JUMA", vec![AMINA]),
        ("shop.CO", vec![BARAKA]),
        ("713000", vec![BARAKA]),
        ("PAYER", vec![BARAKA]),
        ("pays", vec![AMINA]),
        ("a", vec![AMINA, BARAKA, CHAUSIKU]),
        ("wholesale", vec![]),
        ("zzz", vec![]),
    ] {
        let body = list(&app, p.key(), p.crm.customers, &[("q", q)]).await;
        let mut got = names(&body);
        got.sort();
        if got != expected {
            failures.push(format!("q={q}: expected {expected:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // With a filter, both apply.
    let filter = leaf("segment", "equals", json!("retail")).to_string();
    let body = list(&app, p.key(), p.crm.customers, &[("q", "a"), ("filter", &filter)]).await;
    assert_eq!(names(&body), vec![AMINA]);
}

#[actix_web::test]
async fn q_searches_only_the_first_six_text_like_columns() {
    // Proves the six-column limit: a seventh text column is not searched; columns of other
    // types do not count towards the six.
    let app = roomy().await;
    let account = app.account(EDITOR).await;
    let applied = apply(
        &app,
        &account,
        json!({"group": {"slug": "search", "name": "Search"},
               "tables": [{"slug": "notes", "name": "Notes", "columns": [
                   {"key": "t1", "type": "text"}, {"key": "amount", "type": "number"},
                   {"key": "t2", "type": "long_text"}, {"key": "t3", "type": "phone"},
                   {"key": "t4", "type": "email"}, {"key": "flag", "type": "boolean"},
                   {"key": "t5", "type": "text"}, {"key": "t6", "type": "text"},
                   {"key": "t7", "type": "text"}]}]}),
    )
    .await;
    let table = applied.tables.first().expect("the table").id;
    let key = &account.key;
    let mut made = Vec::new();
    for data in [
        json!({"t1": "NEEDLEWORK"}),
        json!({"t2": "a long needle"}),
        json!({"t3": "+255754000111"}),
        json!({"t4": "needle@example.com"}),
        json!({"t5": "fifth needle"}),
        json!({"t6": "The Needle Here"}),
        json!({"t7": "needle hidden in the seventh"}),
        json!({"amount": 987654}),
    ] {
        made.push(record_id(&create(&app, key, table, data).await));
    }
    let found = |body: &Value| {
        let found: BTreeSet<usize> =
            ids(body).iter().map(|id| made.iter().position(|m| m == id).expect("a record of the table")).collect();
        found
    };
    let body = list(&app, key, table, &[("q", "needle")]).await;
    assert_eq!(found(&body), BTreeSet::from([0, 1, 3, 4, 5]), "t1..t6 searched, t7 not: {body}");
    let body = list(&app, key, table, &[("q", "754000")]).await;
    assert_eq!(found(&body), BTreeSet::from([2]), "the phone column is searched: {body}");
    let body = list(&app, key, table, &[("q", "seventh")]).await;
    assert!(records(&body).is_empty(), "the seventh text column is not searched: {body}");
    let body = list(&app, key, table, &[("q", "987654")]).await;
    assert!(records(&body).is_empty(), "a number is not searched: {body}");
}

#[actix_web::test]
async fn sort_by_a_column_puts_empty_values_last_in_both_directions() {
    // Proves sorting by user columns asc and desc (desc the default), with the record lacking a
    // value last either way.
    let app = roomy().await;
    let p = people(&app).await;
    let mut failures = Vec::new();
    for (sort, dir, expected) in [
        ("score", Some("asc"), [BARAKA, AMINA, CHAUSIKU]),
        ("score", Some("desc"), [AMINA, BARAKA, CHAUSIKU]),
        ("score", None, [AMINA, BARAKA, CHAUSIKU]),
        ("credit", Some("asc"), [BARAKA, AMINA, CHAUSIKU]),
        ("joined", Some("asc"), [AMINA, BARAKA, CHAUSIKU]),
        ("joined", Some("desc"), [BARAKA, AMINA, CHAUSIKU]),
        ("seen", Some("desc"), [BARAKA, AMINA, CHAUSIKU]),
        ("notes", Some("asc"), [BARAKA, AMINA, CHAUSIKU]),
        ("notes", Some("desc"), [AMINA, BARAKA, CHAUSIKU]),
        ("name", Some("asc"), [AMINA, BARAKA, CHAUSIKU]),
        ("name", Some("desc"), [CHAUSIKU, BARAKA, AMINA]),
        ("vip", Some("desc"), [AMINA, BARAKA, CHAUSIKU]),
        ("vip", Some("asc"), [BARAKA, AMINA, CHAUSIKU]),
    ] {
        let mut query = vec![("sort", sort)];
        if let Some(dir) = dir {
            query.push(("dir", dir));
        }
        let res = list_raw(&app, p.key(), p.crm.customers, &query).await;
        if res.status != 200 {
            failures.push(format!("{query:?}: {} {}", res.status, res.body));
        } else if names(&res.body) != expected {
            failures.push(format!("{query:?}: expected {expected:?}, got {:?}", names(&res.body)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[actix_web::test]
async fn the_default_order_is_newest_created_first_and_updated_at_sorts() {
    // Proves the default sort ($created_at desc), $created_at asc, and $updated_at both ways
    // (Amina was created first but changed last).
    let app = roomy().await;
    let p = people(&app).await;
    for (query, expected) in [
        (vec![], [CHAUSIKU, BARAKA, AMINA]),
        (vec![("sort", "$created_at")], [CHAUSIKU, BARAKA, AMINA]),
        (vec![("dir", "asc")], [AMINA, BARAKA, CHAUSIKU]),
        (vec![("sort", "$created_at"), ("dir", "asc")], [AMINA, BARAKA, CHAUSIKU]),
        (vec![("sort", "$updated_at")], [AMINA, CHAUSIKU, BARAKA]),
        (vec![("sort", "$updated_at"), ("dir", "desc")], [AMINA, CHAUSIKU, BARAKA]),
        (vec![("sort", "$updated_at"), ("dir", "asc")], [BARAKA, CHAUSIKU, AMINA]),
    ] {
        let body = list(&app, p.key(), p.crm.customers, &query).await;
        assert_eq!(names(&body), expected, "{query:?}");
    }
}

#[actix_web::test]
async fn files_and_multi_selects_cannot_sort_and_bad_sort_parameters_are_refused() {
    // Proves 501 not_supported for a sort by a file or a multi_select column, and 422 for a
    // sort by an unknown column or an unknown direction.
    let app = roomy().await;
    let p = people(&app).await;
    for sort in ["contract", "tags"] {
        for query in [vec![("sort", sort)], vec![("sort", sort), ("dir", "asc")]] {
            let res = list_raw(&app, p.key(), p.crm.customers, &query).await;
            assert_data_error(&res, 501, "not_supported");
            // docs/api.md: a column type that cannot sort is `sort_not_supported`
            assert_eq!(res.body["error"]["reason"], "sort_not_supported", "{}", res.body);
        }
    }
    let res = list_raw(&app, p.key(), p.crm.customers, &[("sort", "nope")]).await;
    assert_data_error(&res, 422, "validation_error");
    let res = list_raw(&app, p.key(), p.crm.customers, &[("sort", "name"), ("dir", "sideways")]).await;
    assert_data_error(&res, 422, "validation_error");
}

#[actix_web::test]
async fn limit_defaults_to_fifty_and_is_clamped_to_one_and_two_hundred() {
    // Proves the page size: 50 by default, 0 or less gives 1, more than 200 gives 200, and a
    // limit that is not a number is 422.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    for i in 0..205 {
        create(&app, key, crm.agents, json!({"name": format!("Agent {i:03}")})).await;
    }
    let count = |body: &Value| records(body).len();
    let body = list(&app, key, crm.agents, &[]).await;
    assert_eq!(count(&body), 50);
    assert_eq!(body["has_more"], true, "{}", body["has_more"]);
    assert!(body["next_cursor"].is_string(), "{}", body["next_cursor"]);
    for (limit, expected) in [("0", 1), ("-3", 1), ("1", 1), ("7", 7), ("200", 200), ("201", 200), ("500", 200)] {
        let body = list(&app, key, crm.agents, &[("limit", limit)]).await;
        assert_eq!(count(&body), expected, "limit={limit}");
        assert_eq!(body["has_more"], true, "limit={limit}");
    }
    // an empty value is no integer either, as on every list
    for limit in ["abc", "1.5", ""] {
        let res = list_raw(&app, key, crm.agents, &[("limit", limit)]).await;
        assert_data_error(&res, 422, "validation_error");
    }
}

/// Walks the pages after `first` with `query` (which has the limit), calling nothing between
/// them: every page's ids, in order. The last page has has_more false and no cursor.
async fn rest<S, B>(app: &TestApp<S>, key: &str, table: Uuid, query: &[(&str, &str)], first: &Value) -> Vec<String>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let mut seen = Vec::new();
    let mut page = first.clone();
    for _ in 0..50 {
        if page["has_more"] == false {
            assert!(page["next_cursor"].is_null(), "no cursor on the last page: {page}");
            return seen;
        }
        assert_eq!(page["has_more"], true, "{page}");
        let cursor =
            page["next_cursor"].as_str().unwrap_or_else(|| panic!("a cursor when has_more: {page}")).to_owned();
        let mut next = query.to_vec();
        next.push(("cursor", &cursor));
        page = list(app, key, table, &next).await;
        seen.extend(ids(&page));
    }
    panic!("more than 50 pages");
}

#[track_caller]
fn assert_each_once(collected: &[String], originals: &[String], inserted: &[String]) {
    let distinct: BTreeSet<&String> = collected.iter().collect();
    assert_eq!(distinct.len(), collected.len(), "no record repeated: {collected:?}");
    for id in originals {
        assert!(collected.contains(id), "record {id} skipped: {collected:?}");
    }
    for id in collected {
        assert!(originals.contains(id) || inserted.contains(id), "{id} is no record of the table");
    }
}

#[actix_web::test]
async fn cursors_walk_the_default_order_without_skips_or_repeats_across_inserts() {
    // Proves keyset pages in $created_at order (both directions): records inserted between
    // pages neither repeat nor push out a record that existed at the first page.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let mut originals = Vec::new();
    for i in 0..7 {
        app.advance(Duration::seconds(1)).await;
        originals.push(record_id(&create(&app, key, crm.agents, json!({"name": format!("Agent {i}")})).await));
    }
    for dir in ["desc", "asc"] {
        let query = [("limit", "3"), ("dir", dir)];
        let first = list(&app, key, crm.agents, &query).await;
        assert_eq!(records(&first).len(), 3);
        let mut collected = ids(&first);
        let mut inserted = Vec::new();
        for i in 0..2 {
            app.advance(Duration::seconds(1)).await;
            inserted.push(record_id(&create(&app, key, crm.agents, json!({"name": format!("New {dir} {i}")})).await));
        }
        collected.extend(rest(&app, key, crm.agents, &query, &first).await);
        assert_each_once(&collected, &originals, &inserted);
        let order: Vec<&String> = collected.iter().filter(|id| originals.contains(id)).collect();
        let mut expected: Vec<&String> = originals.iter().collect();
        if dir == "desc" {
            expected.reverse();
        }
        assert_eq!(order, expected, "{dir}: created order kept across pages");
        originals.extend(inserted);
    }
}

#[actix_web::test]
async fn cursors_walk_a_column_sort_with_empty_values_across_inserts() {
    // Proves keyset pages sorted by a column with empty values (which come last in both
    // directions), with page boundaries inside the empty values and inserts between pages
    // before the cursor, after it and among the empty values.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let mut originals = Vec::new();
    let mut scores: Vec<(String, Option<f64>)> = Vec::new();
    for (i, score) in [Some(10.0), Some(30.0), None, None, Some(20.0), None, Some(20.0)].into_iter().enumerate() {
        let mut data = json!({"name": format!("Customer {i}")});
        if let Some(score) = score {
            data["score"] = json!(score);
        }
        let id = record_id(&create(&app, key, crm.customers, data).await);
        originals.push(id.clone());
        scores.push((id, score));
    }
    for dir in ["asc", "desc"] {
        let query = [("sort", "score"), ("dir", dir), ("limit", "2")];
        let first = list(&app, key, crm.customers, &query).await;
        let mut collected = ids(&first);
        let mut inserted = Vec::new();
        for (i, score) in [Some(5.0), Some(25.0), None, Some(99.0)].into_iter().enumerate() {
            let mut data = json!({"name": format!("Late {dir} {i}")});
            if let Some(score) = score {
                data["score"] = json!(score);
            }
            let id = record_id(&create(&app, key, crm.customers, data).await);
            inserted.push(id.clone());
            scores.push((id, score));
        }
        collected.extend(rest(&app, key, crm.customers, &query, &first).await);
        assert_each_once(&collected, &originals, &inserted);
        // The order holds across pages: values in order, then the empty ones.
        let values: Vec<Option<f64>> =
            collected.iter().map(|id| scores.iter().find(|(s, _)| s == id).expect("a known record").1).collect();
        let filled: Vec<f64> = values.iter().map_while(|v| *v).collect();
        assert!(values[filled.len()..].iter().all(Option::is_none), "{dir}: empty values last: {values:?}");
        let sorted = filled.windows(2).all(|w| if dir == "asc" { w[0] <= w[1] } else { w[0] >= w[1] });
        assert!(sorted, "{dir}: in order: {values:?}");
        originals.extend(inserted);
    }
}

#[actix_web::test]
async fn an_unreadable_or_mismatched_cursor_restarts_at_the_first_page() {
    // Proves that a cursor is valid only with the filter, q, sort and dir it came from: a
    // garbled one, or one sent with another filter, q, sort or dir, gives the first page.
    let app = roomy().await;
    let p = people(&app).await;
    let key = p.key();
    let table = p.crm.customers;
    let first = list(&app, key, table, &[("limit", "1")]).await;
    assert_eq!(names(&first), vec![CHAUSIKU]);
    let cursor = first["next_cursor"].as_str().expect("a cursor").to_owned();
    let second = list(&app, key, table, &[("limit", "1"), ("cursor", &cursor)]).await;
    assert_eq!(names(&second), vec![BARAKA], "the cursor works with its own query");

    for garbage in ["garbage", "", "eyJmb28iOiJiYXIifQ", "%%%"] {
        let body = list(&app, key, table, &[("limit", "1"), ("cursor", garbage)]).await;
        assert_eq!(names(&body), vec![CHAUSIKU], "cursor {garbage:?} restarts");
    }

    let filter = leaf("stage", "equals", json!("new")).to_string();
    let filtered = list(&app, key, table, &[("limit", "1"), ("filter", &filter)]).await;
    assert_eq!(names(&filtered), vec![CHAUSIKU]);
    let filtered_cursor = filtered["next_cursor"].as_str().expect("a cursor").to_owned();
    let other = leaf("stage", "not_equals", json!("closed")).to_string();
    for query in [
        vec![("limit", "1"), ("filter", other.as_str()), ("cursor", filtered_cursor.as_str())],
        vec![("limit", "1"), ("cursor", filtered_cursor.as_str())],
    ] {
        let body = list(&app, key, table, &query).await;
        assert_eq!(names(&body), vec![CHAUSIKU], "a cursor of another filter restarts: {query:?}");
    }

    let sorted = list(&app, key, table, &[("limit", "1"), ("sort", "name"), ("dir", "asc")]).await;
    assert_eq!(names(&sorted), vec![AMINA]);
    let sorted_cursor = sorted["next_cursor"].as_str().expect("a cursor").to_owned();
    let body =
        list(&app, key, table, &[("limit", "1"), ("sort", "name"), ("dir", "desc"), ("cursor", &sorted_cursor)]).await;
    assert_eq!(names(&body), vec![CHAUSIKU], "a cursor of another direction restarts");
    let body = list(&app, key, table, &[("limit", "1"), ("cursor", &sorted_cursor)]).await;
    assert_eq!(names(&body), vec![CHAUSIKU], "a cursor of another sort restarts");
    let body = list(&app, key, table, &[("limit", "1"), ("q", "a"), ("cursor", &cursor)]).await;
    assert_eq!(names(&body), vec![CHAUSIKU], "a cursor of another q restarts");
}

#[actix_web::test]
async fn with_count_counts_matching_records_and_served_at_is_the_time_of_the_answer() {
    // Proves `count` (every matching record, not the page) with with_count=1 and null
    // otherwise, and `served_at` on every answer, in the service's time.
    let app = roomy().await;
    let p = people(&app).await;
    let filter = leaf("stage", "equals", json!("new")).to_string();
    let body = list(&app, p.key(), p.crm.customers, &[("filter", &filter), ("limit", "1"), ("with_count", "1")]).await;
    assert_eq!(body["count"], 2, "{body}");
    assert_eq!(records(&body).len(), 1);
    assert_eq!(body["has_more"], true);
    let body = list(&app, p.key(), p.crm.customers, &[("with_count", "1")]).await;
    assert_eq!(body["count"], 3, "{body}");
    for query in [vec![("filter", filter.as_str())], vec![("with_count", "0")], vec![]] {
        let body = list(&app, p.key(), p.crm.customers, &query).await;
        assert!(body.get("count").is_some_and(Value::is_null), "count null for {query:?}: {body}");
        assert_eq!(body["has_more"], false, "{body}");
        assert!(body["next_cursor"].is_null(), "{body}");
    }

    app.advance(Duration::days(3)).await;
    let body = list(&app, p.key(), p.crm.customers, &[]).await;
    let served = time_of(&body["served_at"]);
    let now = app.clock.now();
    assert!((served - now).abs() < Duration::seconds(2), "served_at {served} is the service's now {now}");
}

#[actix_web::test]
async fn a_sort_by_a_column_needs_a_ready_index_at_the_sort_index_threshold() {
    // Proves sort_needs_index: under the threshold any column sorts; at it, an unindexed column
    // is refused and an indexed one only once its index is ready (after the build job).
    let app = roomy().await;
    let account = app.account(EDITOR).await;
    let applied = apply(
        &app,
        &account,
        json!({"group": {"slug": "league", "name": "League"},
               "tables": [{"slug": "players", "name": "Players", "sort_index_threshold": 3, "columns": [
                   {"key": "name", "type": "text", "required": true},
                   {"key": "score", "type": "number", "indexed": true},
                   {"key": "rank", "type": "number"}]}]}),
    )
    .await;
    let table = applied.tables.first().expect("the table").id;
    let key = &account.key;
    create(&app, key, table, json!({"name": "P1", "score": 5, "rank": 3})).await;
    create(&app, key, table, json!({"name": "P2", "score": 9, "rank": 1})).await;
    for sort in ["rank", "score"] {
        let body = list(&app, key, table, &[("sort", sort), ("dir", "asc")]).await;
        assert_eq!(records(&body).len(), 2, "under the threshold {sort} sorts");
    }
    let third = create(&app, key, table, json!({"name": "P3", "score": 7, "rank": 2})).await;

    let res = list_raw(&app, key, table, &[("sort", "rank")]).await;
    assert_not_supported(&res, "sort_needs_index");
    let res = list_raw(&app, key, table, &[("sort", "score")]).await;
    assert_not_supported(&res, "sort_needs_index");
    let body = list(&app, key, table, &[("sort", "$created_at")]).await;
    assert_eq!(names(&body), vec!["P3", "P2", "P1"], "system sorts need no index");

    app.run_jobs().await;
    let body = list(&app, key, table, &[("sort", "score"), ("dir", "asc")]).await;
    assert_eq!(names(&body), vec!["P1", "P3", "P2"], "a ready index sorts");
    let res = list_raw(&app, key, table, &[("sort", "rank")]).await;
    assert_not_supported(&res, "sort_needs_index");

    // Two live records again: under the threshold.
    remove(&app, key, table, &record_id(&third)).await;
    let body = list(&app, key, table, &[("sort", "rank"), ("dir", "asc")]).await;
    assert_eq!(names(&body), vec!["P2", "P1"]);
}
