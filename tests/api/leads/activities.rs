//! `GET /leads/{lead}/activities` (contract: Leads — "timeline newest first; `before` =
//! `next_before`"; docs/api.md): every kind of change with its details, actor and source,
//! newest first, 50 a page, and a bad `before` refused.

use api_tests::{json, spawn};
use serde_json::Value;
use time::Duration;

use super::support::*;

#[actix_web::test]
async fn the_timeline_tells_every_change_newest_first() {
    // Proves the kinds `created`, `updated` (details = `{field: {from, to}}`), `stage_changed`
    // (details and reason), `label_added`, `label_removed`, `note_added` and `assigned`, each
    // with `{id, kind, details, reason, actor, source, created_at}` at the clock's time.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let mut times = Vec::new();
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "company": "Duka"})).await);
    times.push(app.clock.now());
    let step = |times: &mut Vec<_>| {
        app.clock.advance(Duration::minutes(1));
        times.push(app.clock.now());
    };

    step(&mut times);
    patched(&app, &acme.key, &id, json!({"company": "Duka Kubwa", "name": "Amina"})).await;
    step(&mut times);
    assert_status(&set_stage(&app, &acme.key, &id, json!({"stage": "lost", "reason": "no budget"})).await, 200);
    step(&mut times);
    assert_status(&app.post(&sub_path(&id, "labels"), &acme.key, json!({"labels": ["VIP"]})).await, 200);
    step(&mut times);
    let note = app.post(&sub_path(&id, "notes"), &acme.key, json!({"body": "Call on Monday"})).await;
    assert_status(&note, 201);
    step(&mut times);
    assert_status(&app.post(&sub_path(&id, "assign"), &acme.key, json!({"user_id": acme.user.0})).await, 200);
    step(&mut times);
    assert_status(&remove_labels(&app, &acme.key, &id, json!(["vip"])).await, 200);

    let page = activities(&app, &acme.key, &id, None).await;
    assert_eq!(
        kinds(&page),
        ["label_removed", "assigned", "note_added", "label_added", "stage_changed", "updated", "created"]
    );
    assert_eq!(page["next_before"], Value::Null, "one page");
    let items = page["items"].as_array().expect("items");
    for (item, at) in items.iter().zip(times.iter().rev()) {
        let mut keys: Vec<&str> = item.as_object().expect("activity").keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["actor", "created_at", "details", "id", "kind", "reason", "source"], "{item}");
        assert_eq!(time_of(item, "created_at"), *at, "{item}");
        assert_eq!(item["actor"], json!({"kind": "api", "id": acme.user.0}), "{item}");
        assert_eq!(item["source"]["kind"], "api", "{item}");
        assert!(item["id"].is_i64(), "{item}");
    }
    let by_kind = |kind: &str| items.iter().find(|i| i["kind"] == kind).unwrap_or_else(|| panic!("{kind}"));
    assert_eq!(
        by_kind("updated")["details"],
        json!({"company": {"from": "Duka", "to": "Duka Kubwa"}, "name": {"from": null, "to": "Amina"}})
    );
    assert_eq!(by_kind("updated")["reason"], Value::Null);
    assert_eq!(by_kind("stage_changed")["details"], json!({"stage": {"from": "new", "to": "lost"}}));
    assert_eq!(by_kind("stage_changed")["reason"], "no budget");
    assert_eq!(by_kind("label_added")["details"]["label"]["name"], "VIP");
    assert_eq!(by_kind("label_removed")["details"]["label"]["name"], "VIP");
    assert!(by_kind("note_added")["details"].to_string().contains("Call on Monday"));
    let assignee = json!({"id": acme.user.0, "name": "Test user"});
    assert_eq!(by_kind("assigned")["details"], json!({"assigned_to": {"from": null, "to": assignee}}));
}

#[actix_web::test]
async fn a_long_timeline_comes_fifty_at_a_time() {
    // Proves the page size and `before` = `next_before`: 56 activities are 50 then 6, newest
    // first across both pages, every activity once, `next_before` null on the last page.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    for n in 0..55 {
        app.clock.advance(Duration::seconds(1));
        let res = app.post(&sub_path(&id, "notes"), &acme.key, json!({"body": format!("note {n}")})).await;
        assert_status(&res, 201);
    }

    let first = activities(&app, &acme.key, &id, None).await;
    assert_eq!(first["items"].as_array().map(Vec::len), Some(50));
    assert!(first["items"][0]["details"].to_string().contains("\"note 54\""), "newest first: {}", first["items"][0]);
    let next = first["next_before"].as_i64().unwrap_or_else(|| panic!("next_before in {}", first["next_before"]));
    let second = activities(&app, &acme.key, &id, Some(&next.to_string())).await;
    assert_eq!(second["next_before"], Value::Null);
    assert_eq!(kinds(&second), ["note_added", "note_added", "note_added", "note_added", "note_added", "created"]);
    assert!(second["items"][0]["details"].to_string().contains("\"note 4\""), "{}", second["items"][0]);

    let mut all: Vec<&Value> = first["items"].as_array().expect("items").iter().collect();
    all.extend(second["items"].as_array().expect("items"));
    let ids: Vec<i64> = all.iter().map(|a| a["id"].as_i64().expect("id")).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first, none twice: {ids:?}");
    let times: Vec<_> = all.iter().map(|a| time_of(a, "created_at")).collect();
    assert!(times.windows(2).all(|w| w[0] > w[1]), "newest first by time too");
}

#[actix_web::test]
async fn the_timeline_honours_limit_and_per_page_within_its_cap() {
    // Proves `limit` (and `per_page`, which it wins over) sizes the page: 3 then 3 then the
    // last, with `next_before` while older entries remain; above 100 is 100, 0 the default.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    for n in 0..6 {
        let res = app.post(&sub_path(&id, "notes"), &acme.key, json!({"body": format!("note {n}")})).await;
        assert_status(&res, 201);
    }
    let page = |query: String| {
        let app = &app;
        let key = acme.key.clone();
        let path = format!("{}?{query}", sub_path(&id, "activities"));
        async move {
            let res = app.get(&path, &key).await;
            assert_status(&res, 200);
            res.data().clone()
        }
    };
    let first = page("limit=3&per_page=5".into()).await;
    assert_eq!(first["items"].as_array().map(Vec::len), Some(3), "{first}");
    let next = first["next_before"].as_i64().unwrap_or_else(|| panic!("next_before in {first}"));
    let second = page(format!("per_page=3&before={next}")).await;
    assert_eq!(second["items"].as_array().map(Vec::len), Some(3), "{second}");
    let next = second["next_before"].as_i64().unwrap_or_else(|| panic!("next_before in {second}"));
    let last = page(format!("limit=3&before={next}")).await;
    assert_eq!(kinds(&last), ["created"]);
    assert_eq!(last["next_before"], Value::Null);
    for query in ["limit=500", "limit=0"] {
        assert_eq!(page(query.into()).await["items"].as_array().map(Vec::len), Some(7), "{query}");
    }
    let res = app.get(&format!("{}?limit=many", sub_path(&id, "activities")), &acme.key).await;
    assert_status(&res, 422);
}

#[actix_web::test]
async fn a_before_that_is_no_next_before_is_invalid() {
    // Proves 422 `invalid` naming `before` for values that cannot be a `next_before`.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    for before in ["abc", "1.5", "yesterday"] {
        let res = app.get(&format!("{}?before={before}", sub_path(&id, "activities")), &acme.key).await;
        assert_refused(&res, 422, "invalid");
        assert!(res.body["errors"]["before"].is_array(), "{before}: {}", res.body);
    }
}
