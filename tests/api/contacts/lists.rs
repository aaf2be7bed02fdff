//! Contact lists: defaults, search, subscription filter, pagination, and cross-group search.

use api_tests::{json, spawn};
use serde_json::Value;

use super::{
    contacts_path, field_error, fill, items, make_contact, make_group, pagination, success, tz, uids, urlencode,
};

#[actix_web::test]
async fn contact_list_defaults_to_20_newest_first() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    fill(&app, &a.key, &group, 100, 22).await;
    let last = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "name": "Newest"})).await;
    let list = success(&app.get(&contacts_path(&group), &a.key).await, 200);
    assert_eq!(items(&list).len(), 20);
    assert_eq!(pagination(&list), (1, 20, 2, 23, true));
    assert_eq!(items(&list)[0]["uid"], last["uid"], "newest first");
    let ids: Vec<i64> = items(&list).iter().map(|c| c["id"].as_i64().expect("integer")).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
    let page2 = success(&app.get(&format!("{}?page=2", contacts_path(&group)), &a.key).await, 200);
    assert_eq!(items(&page2).len(), 3);
    assert_eq!(pagination(&page2), (2, 20, 2, 23, false));
    // Every item has the contact shape.
    for key in [
        "id",
        "uid",
        "group_id",
        "group_uid",
        "name",
        "country_code",
        "phone_number",
        "full_phone_number",
        "is_subscribed",
        "custom_field_values",
        "created_at",
        "updated_at",
    ] {
        assert!(items(&list)[0].get(key).is_some(), "{key}: {}", items(&list)[0]);
    }
}

#[actix_web::test]
async fn contact_list_search_matches_name_national_number_and_stripped_full_number() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let asha = make_contact(&app, &a.key, &group, json!({"PHONE": "0712345601", "name": "Asha Juma"})).await;
    let baraka = make_contact(&app, &a.key, &group, json!({"PHONE": "0712999902", "name": "Baraka"})).await;
    let kenyan =
        make_contact(&app, &a.key, &group, json!({"PHONE": "0733111103", "country_code": "254", "name": "Wanjiru"}))
            .await;
    let uid = |c: &Value| c["uid"].as_str().expect("string").to_owned();
    let search = async |term: &str| {
        let path = format!("{}?search={}", contacts_path(&group), urlencode(term));
        let data = success(&app.get(&path, &a.key).await, 200);
        let mut found = uids(&data);
        found.sort();
        assert_eq!(pagination(&data).3 as usize, found.len(), "total agrees with items: {data}");
        found
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };

    // Name: substring, any case.
    assert_eq!(search("asha").await, vec![uid(&asha)]);
    assert_eq!(search("JUMA").await, vec![uid(&asha)]);
    assert_eq!(search("ara").await, vec![uid(&baraka)]);
    assert_eq!(search("nobody").await, Vec::<String>::new());
    // National number, whole or part, with or without the trunk 0.
    assert_eq!(search("712345601").await, vec![uid(&asha)]);
    assert_eq!(search("0712345601").await, vec![uid(&asha)]);
    assert_eq!(search("0712 345 601").await, vec![uid(&asha)]);
    assert_eq!(search("999902").await, vec![uid(&baraka)]);
    assert_eq!(search("733111103").await, vec![uid(&kenyan)]);
    // The full number with punctuation stripped.
    assert_eq!(search("255712345601").await, vec![uid(&asha)]);
    assert_eq!(search("+255 712-345").await, vec![uid(&asha)]);
    assert_eq!(search("+255 (712) 345-601").await, vec![uid(&asha)]);
    assert_eq!(search("+254 733").await, vec![uid(&kenyan)]);
    assert_eq!(search("+255 712").await, sorted(vec![uid(&asha), uid(&baraka)]));
    // A search term with LIKE wildcards matches literally.
    assert_eq!(search("%").await, Vec::<String>::new());
    assert_eq!(search("_").await, Vec::<String>::new());
    // An empty search lists everyone.
    assert_eq!(search("").await.len(), 3);
}

#[actix_web::test]
async fn contact_list_filters_on_subscribed() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let on1 = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "name": "On one"})).await;
    let off = make_contact(&app, &a.key, &group, json!({"PHONE": tz(2), "is_subscribed": false, "name": "Off"})).await;
    let on2 = make_contact(&app, &a.key, &group, json!({"PHONE": tz(3), "name": "On two"})).await;
    let list = |q: &str| format!("{}?{q}", contacts_path(&group));
    let uid = |c: &Value| c["uid"].as_str().expect("string").to_owned();

    let yes = success(&app.get(&list("subscribed=true"), &a.key).await, 200);
    assert_eq!(uids(&yes), vec![uid(&on2), uid(&on1)]);
    assert_eq!(pagination(&yes).3, 2);
    let no = success(&app.get(&list("subscribed=false"), &a.key).await, 200);
    assert_eq!(uids(&no), vec![uid(&off)]);
    assert_eq!(pagination(&no).3, 1);
    let both = success(&app.get(&contacts_path(&group), &a.key).await, 200);
    assert_eq!(pagination(&both).3, 3);
    // Combined with a search.
    let combined = success(&app.get(&list("subscribed=true&search=two"), &a.key).await, 200);
    assert_eq!(uids(&combined), vec![uid(&on2)]);

    // Exactly the described values: spaces around one are not trimmed away.
    for bad in ["maybe", "yes%20please", "2", "%20true", "%0B"] {
        field_error(&app.get(&list(&format!("subscribed={bad}")), &a.key).await, "subscribed");
    }
}

#[actix_web::test]
async fn contact_list_pagination_limit_wins_is_clamped_and_non_positive_means_default() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Big"})).await;
    fill(&app, &a.key, &group, 0, 150).await;
    let list = async |q: &str| success(&app.get(&format!("{}?{q}", contacts_path(&group)), &a.key).await, 200);

    let data = list("limit=7&per_page=30").await;
    assert_eq!(items(&data).len(), 7, "limit wins over per_page");
    assert_eq!(pagination(&data), (1, 7, 22, 150, true));
    let data = list("per_page=30").await;
    assert_eq!(items(&data).len(), 30);
    assert_eq!(pagination(&data), (1, 30, 5, 150, true));

    let data = list("limit=500").await;
    assert_eq!(items(&data).len(), 100, "clamped to 100");
    assert_eq!(pagination(&data), (1, 100, 2, 150, true));
    let data = list("per_page=101").await;
    assert_eq!(items(&data).len(), 100);
    assert_eq!(pagination(&data).1, 100);
    let data = list("limit=500&page=2").await;
    assert_eq!(items(&data).len(), 50);
    assert_eq!(pagination(&data), (2, 100, 2, 150, false));

    for q in ["limit=0", "limit=-5", "per_page=0", "per_page=-1", "limit=0&per_page=30"] {
        let data = list(q).await;
        assert_eq!(items(&data).len(), 20, "{q} means the default");
        assert_eq!(pagination(&data), (1, 20, 8, 150, true), "{q}");
    }

    let data = list("page=99").await;
    assert!(items(&data).is_empty(), "beyond the last page: {data}");
    assert_eq!(pagination(&data), (99, 20, 8, 150, false));
    let data = list("page=16&limit=10").await;
    assert!(items(&data).is_empty());
    assert_eq!(pagination(&data), (16, 10, 15, 150, false));
    let data = list("page=15&limit=10").await;
    assert_eq!(items(&data).len(), 10);
    assert_eq!(pagination(&data), (15, 10, 15, 150, false));

    // Pages do not overlap and cover everything.
    let mut seen = std::collections::BTreeSet::new();
    for page in 1..=2 {
        seen.extend(uids(&list(&format!("limit=100&page={page}")).await));
    }
    assert_eq!(seen.len(), 150);
}

#[actix_web::test]
async fn cross_group_search_filters_by_q_and_group_id_and_defaults_to_20() {
    let app = spawn().await;
    let a = app.account("all").await;
    let g1 = make_group(&app, &a.key, json!({"name": "One"})).await;
    let g2 = make_group(&app, &a.key, json!({"name": "Two"})).await;
    fill(&app, &a.key, &g1, 100, 12).await;
    fill(&app, &a.key, &g2, 200, 12).await;
    let asha1 = make_contact(&app, &a.key, &g1, json!({"PHONE": tz(1), "name": "Asha Juma"})).await;
    let asha2 = make_contact(&app, &a.key, &g2, json!({"PHONE": tz(1), "name": "asha mwita"})).await;

    let all = success(&app.get("/api/v3/contacts", &a.key).await, 200);
    assert_eq!(items(&all).len(), 20);
    assert_eq!(pagination(&all), (1, 20, 2, 26, true));
    assert_eq!(items(&all)[0]["uid"], asha2["uid"], "newest first");
    assert_eq!(items(&all)[0]["group_uid"], g2["uid"], "each item names its own group");
    assert_eq!(items(&all)[1]["group_uid"], g1["uid"]);

    let q = success(&app.get("/api/v3/contacts?q=ASHA", &a.key).await, 200);
    assert_eq!(
        uids(&q),
        vec![asha2["uid"].as_str().expect("string").to_owned(), asha1["uid"].as_str().expect("string").to_owned()]
    );
    assert_eq!(pagination(&q).3, 2);
    let q = success(&app.get(&format!("/api/v3/contacts?q={}", urlencode("+255 712-000-001")), &a.key).await, 200);
    assert_eq!(pagination(&q).3, 2, "by number: {q}");

    let in_g1 = success(&app.get(&format!("/api/v3/contacts?group_id={}", g1["id"]), &a.key).await, 200);
    assert_eq!(pagination(&in_g1).3, 13);
    assert!(items(&in_g1).iter().all(|c| c["group_id"] == g1["id"]));
    let in_g2 = success(
        &app.get(&format!("/api/v3/contacts?group_id={}&q=asha", g2["uid"].as_str().expect("string")), &a.key).await,
        200,
    );
    assert_eq!(uids(&in_g2), vec![asha2["uid"].as_str().expect("string").to_owned()]);

    let paged = success(&app.get("/api/v3/contacts?limit=500", &a.key).await, 200);
    assert_eq!((items(&paged).len(), pagination(&paged).1), (26, 100));
    let paged = success(&app.get("/api/v3/contacts?limit=5&per_page=50&page=2", &a.key).await, 200);
    assert_eq!(pagination(&paged), (2, 5, 6, 26, true));
    let paged = success(&app.get("/api/v3/contacts?limit=-1", &a.key).await, 200);
    assert_eq!(pagination(&paged).1, 20);
}

/// A search counts its matches exactly up to 1,000 and estimates beyond, saying so; a short
/// page gives the exact total without counting (docs/api.md, "Search totals").
#[actix_web::test]
async fn a_search_with_more_than_a_thousand_matches_has_an_estimated_total() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Big"})).await;
    for first in [0, 500, 1000] {
        fill(&app, &a.key, &group, first, if first == 1000 { 150 } else { 500 }).await;
    }
    let rows: Vec<Value> = (0..15).map(|n| json!({"PHONE": tz(5000 + n), "name": format!("Zawadi {n}")})).collect();
    let path = format!("/api/v3/contact-groups/{}/contacts/batch", group["id"]);
    success(&app.post(&path, &a.key, json!({"contacts": rows})).await, 200);

    let many = success(&app.get(&format!("{}?search=person&per_page=10", contacts_path(&group)), &a.key).await, 200);
    assert_eq!(items(&many).len(), 10);
    let (_, _, last_page, total, more) = pagination(&many);
    assert!((1001..=100_000).contains(&total), "an estimate past the exact count: {many}");
    assert_eq!((last_page, more), ((total + 9) / 10, true));
    assert_eq!(many["pagination"]["total_is_estimate"], true, "{many}");
    let across = success(&app.get("/api/v3/contacts?q=person&per_page=10", &a.key).await, 200);
    assert_eq!(across["pagination"]["total_is_estimate"], true, "{across}");

    // 15 matches: counted on a full first page, read off the short second and the empty third
    for (page, on_page) in [(1, 10), (2, 5), (3, 0)] {
        let path = format!("{}?search=zawadi&per_page=10&page={page}", contacts_path(&group));
        let few = success(&app.get(&path, &a.key).await, 200);
        assert_eq!(items(&few).len(), on_page, "page {page}");
        assert_eq!(pagination(&few).3, 15, "page {page}: {few}");
        assert!(few["pagination"].get("total_is_estimate").is_none(), "exact: {few}");
    }
    // a list without a search is counted exactly, however long
    let all = success(&app.get(&format!("{}?per_page=10", contacts_path(&group)), &a.key).await, 200);
    assert_eq!(pagination(&all).3, 1165);
    assert!(all["pagination"].get("total_is_estimate").is_none());
}
