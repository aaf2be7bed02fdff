//! Contact group tests: create, custom field keys, name rules, list, lookup, patch, counts, delete.

use api_tests::{json, spawn};
use serde_json::Value;

use super::{
    contact_path, contacts_path, error, field_error, groups_path, is_rfc3339, items, make_contact, make_group,
    pagination, success, tz, uids,
};

#[actix_web::test]
async fn group_create_answers_201_with_every_field() {
    let app = spawn().await;
    let a = app.account("all").await;
    let res = app
        .post(
            "/api/v3/contact-groups",
            &a.key,
            json!({
                "name": "Customers",
                "custom_fields": [
                    {"key": "city"},
                    {"key": "tier", "label": "Loyalty tier", "type": "number"},
                    "region"
                ]
            }),
        )
        .await;
    let group = success(&res, 201);
    assert!(group["id"].as_i64().is_some_and(|id| id > 0), "{group}");
    let uid = group["uid"].as_str().expect("uid string");
    assert!(uuid::Uuid::parse_str(uid).is_ok(), "uid is a UUID: {uid}");
    assert_eq!(group["name"], "Customers");
    assert_eq!(group["status"], "active");
    assert_eq!(group["contacts_count"], 0);
    assert_eq!(group["subscribed_count"], 0);
    assert_eq!(
        group["custom_fields"],
        json!([
            {"key": "city", "label": "city", "type": "text"},
            {"key": "tier", "label": "Loyalty tier", "type": "number"},
            {"key": "region", "label": "region", "type": "text"}
        ])
    );
    assert!(is_rfc3339(&group["created_at"]), "{group}");
    assert!(is_rfc3339(&group["updated_at"]), "{group}");

    // Without custom_fields the list is empty, never missing.
    let plain = make_group(&app, &a.key, json!({"name": "Plain"})).await;
    assert_eq!(plain["custom_fields"], json!([]));
    assert_ne!(plain["uid"], group["uid"]);
}

#[actix_web::test]
async fn group_custom_field_keys_use_letters_digits_underscore_dot_dash() {
    let app = spawn().await;
    let a = app.account("all").await;
    let good = make_group(
        &app,
        &a.key,
        json!({"name": "Keys", "custom_fields": [{"key": "Abc_1.x-y"}, {"key": "2nd"}, {"key": "a.b"}]}),
    )
    .await;
    assert_eq!(good["custom_fields"][0]["key"], "Abc_1.x-y");
    assert_eq!(good["custom_fields"].as_array().map(Vec::len), Some(3));

    for bad in ["has space", "slash/key", "colon:key", "accént", "emoji🙂", "semi;colon", "$dollar", "at@sign"] {
        let res = app
            .post(
                "/api/v3/contact-groups",
                &a.key,
                json!({"name": "Bad", "custom_fields": [{"key": "fine"}, {"key": bad}]}),
            )
            .await;
        field_error(&res, "custom_fields[1].key");
    }
    // A missing or empty key is refused the same way.
    let res =
        app.post("/api/v3/contact-groups", &a.key, json!({"name": "Bad", "custom_fields": [{"label": "x"}]})).await;
    field_error(&res, "custom_fields[0].key");
    let res = app.post("/api/v3/contact-groups", &a.key, json!({"name": "Bad", "custom_fields": [{"key": ""}]})).await;
    field_error(&res, "custom_fields[0].key");

    // Nothing was stored by the refused requests.
    let list = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    assert_eq!(pagination(&list).3, 1, "{list}");
}

#[actix_web::test]
async fn group_duplicate_custom_field_keys_are_refused() {
    let app = spawn().await;
    let a = app.account("all").await;
    let res = app
        .post(
            "/api/v3/contact-groups",
            &a.key,
            json!({"name": "Dupes", "custom_fields": [{"key": "city"}, {"key": "tier"}, {"key": "city", "label": "Town"}]}),
        )
        .await;
    field_error(&res, "custom_fields[2].key");
    let list = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    assert_eq!(pagination(&list).3, 0, "nothing created: {list}");

    // The same on PATCH.
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let res = app.patch(&groups_path(&group), &a.key, json!({"custom_fields": ["a", "a"]})).await;
    field_error(&res, "custom_fields[1].key");
}

#[actix_web::test]
async fn group_unknown_custom_field_type_is_refused() {
    let app = spawn().await;
    let a = app.account("all").await;
    let res = app
        .post(
            "/api/v3/contact-groups",
            &a.key,
            json!({"name": "Types", "custom_fields": [{"key": "a", "type": "text"}, {"key": "b", "type": "colour"}]}),
        )
        .await;
    field_error(&res, "custom_fields[1].type");
    let list = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    assert_eq!(pagination(&list).3, 0, "nothing created: {list}");
}

#[actix_web::test]
async fn group_name_is_required_and_at_most_191_characters() {
    let app = spawn().await;
    let a = app.account("all").await;
    for body in [json!({"name": ""}), json!({"name": "   "}), json!({"name": null, "custom_fields": []})] {
        let res = app.post("/api/v3/contact-groups", &a.key, body.clone()).await;
        field_error(&res, "name");
    }
    let res = app.post("/api/v3/contact-groups", &a.key, json!({"name": "x".repeat(192)})).await;
    field_error(&res, "name");
    // The limit counts the name as sent, as the description's maxLength does (then it is trimmed).
    let res = app.post("/api/v3/contact-groups", &a.key, json!({"name": format!(" {}", "x".repeat(191))})).await;
    field_error(&res, "name");
    let list = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    assert_eq!(pagination(&list).3, 0, "nothing created: {list}");

    let longest = make_group(&app, &a.key, json!({"name": "é".repeat(191)})).await;
    assert_eq!(longest["name"].as_str().map(|n| n.chars().count()), Some(191));
}

/// A body without `name` at all is a 422 whose `errors` names `name` (not `body`).
#[actix_web::test]
async fn group_name_missing_is_422_naming_name() {
    let app = spawn().await;
    let a = app.account("all").await;
    for body in [json!({}), json!({"custom_fields": ["city"]})] {
        let res = app.post("/api/v3/contact-groups", &a.key, body).await;
        field_error(&res, "name");
    }
    let list = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    assert_eq!(pagination(&list).3, 0, "nothing created: {list}");
}

#[actix_web::test]
async fn group_list_defaults_to_25_newest_first() {
    let app = spawn().await;
    let a = app.account("all").await;
    let mut ids = Vec::new();
    for n in 0..27 {
        ids.push(make_group(&app, &a.key, json!({"name": format!("Group {n}")})).await["id"].clone());
    }
    let page1 = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    assert_eq!(items(&page1).len(), 25);
    assert_eq!(pagination(&page1), (1, 25, 2, 27, true));
    let listed: Vec<Value> = items(&page1).iter().map(|g| g["id"].clone()).collect();
    let newest_first: Vec<Value> = ids.iter().rev().take(25).cloned().collect();
    assert_eq!(listed, newest_first);
    // Every listed group carries the full shape.
    for key in
        ["uid", "name", "status", "contacts_count", "subscribed_count", "custom_fields", "created_at", "updated_at"]
    {
        assert!(items(&page1)[0].get(key).is_some(), "{key} missing: {}", items(&page1)[0]);
    }

    let page2 = success(&app.get("/api/v3/contact-groups?page=2", &a.key).await, 200);
    assert_eq!(pagination(&page2), (2, 25, 2, 27, false));
    let listed: Vec<Value> = items(&page2).iter().map(|g| g["id"].clone()).collect();
    assert_eq!(listed, vec![ids[1].clone(), ids[0].clone()]);

    let small = success(&app.get("/api/v3/contact-groups?limit=5&per_page=10", &a.key).await, 200);
    assert_eq!(pagination(&small), (1, 5, 6, 27, true));
    let zero = success(&app.get("/api/v3/contact-groups?limit=0", &a.key).await, 200);
    assert_eq!(pagination(&zero).1, 25);
    let negative = success(&app.get("/api/v3/contact-groups?per_page=-3", &a.key).await, 200);
    assert_eq!(pagination(&negative).1, 25);
    let clamped = success(&app.get("/api/v3/contact-groups?limit=500", &a.key).await, 200);
    assert_eq!(items(&clamped).len(), 27);
    assert_eq!(pagination(&clamped), (1, 100, 1, 27, false));
    let beyond = success(&app.get("/api/v3/contact-groups?page=5", &a.key).await, 200);
    assert!(items(&beyond).is_empty());
    assert_eq!(pagination(&beyond), (5, 25, 2, 27, false));
}

#[actix_web::test]
async fn group_is_found_by_numeric_id_and_by_uuid() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Both ways"})).await;
    let by_id = success(&app.get(&format!("/api/v3/contact-groups/{}", group["id"]), &a.key).await, 200);
    let by_uid = success(
        &app.get(&format!("/api/v3/contact-groups/{}", group["uid"].as_str().expect("string")), &a.key).await,
        200,
    );
    assert_eq!(by_id, group);
    assert_eq!(by_uid, group);
    // The UUID also addresses the group's contacts.
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    let path = format!(
        "/api/v3/contact-groups/{}/contacts/{}",
        group["uid"].as_str().expect("string"),
        c["uid"].as_str().expect("string")
    );
    assert_eq!(success(&app.get(&path, &a.key).await, 200)["id"], c["id"]);
}

#[actix_web::test]
async fn group_patch_renames_deactivates_and_validates() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Old", "custom_fields": ["city"]})).await;
    let path = groups_path(&group);

    let renamed = success(&app.patch(&path, &a.key, json!({"name": "New"})).await, 200);
    assert_eq!(renamed["name"], "New");
    assert_eq!(renamed["status"], "active");
    assert_eq!(renamed["custom_fields"], group["custom_fields"], "custom fields kept when not sent");
    assert_eq!(renamed["uid"], group["uid"]);

    let inactive = success(&app.patch(&path, &a.key, json!({"status": "inactive"})).await, 200);
    assert_eq!(inactive["status"], "inactive");
    assert_eq!(inactive["name"], "New", "name kept when not sent");
    assert_eq!(success(&app.get(&path, &a.key).await, 200)["status"], "inactive");

    let active = success(&app.patch(&path, &a.key, json!({"status": "active"})).await, 200);
    assert_eq!(active["status"], "active");

    for bad in ["archived", "ACTIVE", ""] {
        let res = app.patch(&path, &a.key, json!({"status": bad})).await;
        field_error(&res, "status");
    }
    field_error(&app.patch(&path, &a.key, json!({"name": "x".repeat(192)})).await, "name");
    field_error(&app.patch(&path, &a.key, json!({"name": ""})).await, "name");
    field_error(
        &app.patch(&path, &a.key, json!({"custom_fields": [{"key": "bad key"}]})).await,
        "custom_fields[0].key",
    );

    let after = success(&app.get(&path, &a.key).await, 200);
    assert_eq!((after["name"].clone(), after["status"].clone()), (json!("New"), json!("active")));
    assert_eq!(after["custom_fields"], group["custom_fields"], "refused patches changed nothing");
}

#[actix_web::test]
async fn group_patch_replaces_custom_fields_and_leaves_stored_values() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group =
        make_group(&app, &a.key, json!({"name": "G", "custom_fields": ["city", {"key": "tier", "type": "number"}]}))
            .await;
    let contact = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "city": "Arusha", "tier": 3})).await;

    let patched = success(
        &app.patch(&groups_path(&group), &a.key, json!({"custom_fields": [{"key": "email", "type": "email"}]})).await,
        200,
    );
    assert_eq!(
        patched["custom_fields"],
        json!([{"key": "email", "label": "email", "type": "email"}]),
        "replaced, not merged"
    );
    let stored = success(&app.get(&groups_path(&group), &a.key).await, 200);
    assert_eq!(stored["custom_fields"], patched["custom_fields"]);

    let read = success(&app.get(&contact_path(&group, &contact), &a.key).await, 200);
    assert_eq!(read["custom_field_values"], json!({"city": "Arusha", "tier": 3}), "stored values untouched");

    let emptied = success(&app.patch(&groups_path(&group), &a.key, json!({"custom_fields": []})).await, 200);
    assert_eq!(emptied["custom_fields"], json!([]));
    let read = success(&app.get(&contact_path(&group, &contact), &a.key).await, 200);
    assert_eq!(read["custom_field_values"], json!({"city": "Arusha", "tier": 3}));
}

#[actix_web::test]
async fn group_counts_include_unsubscribed_only_in_contacts_count() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Counted"})).await;
    make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    make_contact(&app, &a.key, &group, json!({"PHONE": tz(2), "is_subscribed": true})).await;
    make_contact(&app, &a.key, &group, json!({"PHONE": tz(3), "is_subscribed": false})).await;
    let other = make_group(&app, &a.key, json!({"name": "Other"})).await;
    make_contact(&app, &a.key, &other, json!({"PHONE": tz(4)})).await;

    let read = success(&app.get(&groups_path(&group), &a.key).await, 200);
    assert_eq!((read["contacts_count"].clone(), read["subscribed_count"].clone()), (json!(3), json!(2)));
    let list = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    let listed = items(&list).iter().find(|g| g["id"] == group["id"]).expect("listed");
    assert_eq!((listed["contacts_count"].clone(), listed["subscribed_count"].clone()), (json!(3), json!(2)));
    let listed = items(&list).iter().find(|g| g["id"] == other["id"]).expect("listed");
    assert_eq!((listed["contacts_count"].clone(), listed["subscribed_count"].clone()), (json!(1), json!(1)));

    // The counts follow changes.
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(5)})).await;
    success(&app.patch(&contact_path(&group, &c), &a.key, json!({"is_subscribed": false})).await, 200);
    let read = success(&app.get(&groups_path(&group), &a.key).await, 200);
    assert_eq!((read["contacts_count"].clone(), read["subscribed_count"].clone()), (json!(4), json!(2)));
    let patched = success(&app.patch(&groups_path(&group), &a.key, json!({"name": "Renamed"})).await, 200);
    assert_eq!((patched["contacts_count"].clone(), patched["subscribed_count"].clone()), (json!(4), json!(2)));
}

#[actix_web::test]
async fn group_delete_of_an_empty_group_answers_200() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Empty"})).await;
    let keep = make_group(&app, &a.key, json!({"name": "Keep"})).await;
    let res = app.delete(&groups_path(&group), &a.key).await;
    success(&res, 200);
    error(&app.get(&groups_path(&group), &a.key).await, 404);
    error(&app.get(&format!("/api/v3/contact-groups/{}", group["uid"].as_str().expect("string")), &a.key).await, 404);
    success(&app.get(&groups_path(&keep), &a.key).await, 200);
    // A second delete finds nothing.
    error(&app.delete(&groups_path(&group), &a.key).await, 404);
}

#[actix_web::test]
async fn group_delete_of_a_non_empty_group_is_409_with_the_count_unless_forced() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Full"})).await;
    let c1 = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    make_contact(&app, &a.key, &group, json!({"PHONE": tz(2), "is_subscribed": false})).await;
    let other = make_group(&app, &a.key, json!({"name": "Other"})).await;
    let survivor = make_contact(&app, &a.key, &other, json!({"PHONE": tz(1)})).await;

    let res = app.delete(&groups_path(&group), &a.key).await;
    error(&res, 409);
    assert_eq!(res.body["count"], 2, "the count member: {}", res.body);
    for force in ["false", "no"] {
        let res = app.delete(&format!("{}?force={force}", groups_path(&group)), &a.key).await;
        error(&res, 409);
    }
    // Nothing was deleted.
    let read = success(&app.get(&groups_path(&group), &a.key).await, 200);
    assert_eq!(read["contacts_count"], 2);
    success(&app.get(&contact_path(&group, &c1), &a.key).await, 200);

    let res = app
        .delete(&format!("/api/v3/contact-groups/{}?force=true", group["uid"].as_str().expect("string")), &a.key)
        .await;
    success(&res, 200);
    error(&app.get(&groups_path(&group), &a.key).await, 404);
    error(&app.get(&contacts_path(&group), &a.key).await, 404);
    // Its contacts are gone everywhere; the other group's contact with the same number stays.
    let all = success(&app.get("/api/v3/contacts", &a.key).await, 200);
    assert_eq!(uids(&all), vec![survivor["uid"].as_str().expect("string").to_owned()]);
    assert_eq!(pagination(&all).3, 1);
    assert_eq!(success(&app.get(&groups_path(&other), &a.key).await, 200)["contacts_count"], 1);
}

#[actix_web::test]
async fn unknown_or_malformed_group_is_404() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Real"})).await;
    let missing_id = group["id"].as_i64().expect("integer") + 1000;
    let missing_uuid = uuid::Uuid::new_v4().to_string();
    for g in [missing_id.to_string(), missing_uuid, "abc".to_owned(), "12abc".to_owned(), "ctc_x".to_owned()] {
        let base = format!("/api/v3/contact-groups/{g}");
        error(&app.get(&base, &a.key).await, 404);
        error(&app.patch(&base, &a.key, json!({"name": "x"})).await, 404);
        error(&app.delete(&base, &a.key).await, 404);
        error(&app.get(&format!("{base}/contacts"), &a.key).await, 404);
        error(&app.post(&format!("{base}/contacts"), &a.key, json!({"PHONE": tz(1)})).await, 404);
        error(&app.post(&format!("{base}/contacts/batch"), &a.key, json!({"contacts": [{"PHONE": tz(1)}]})).await, 404);
        error(&app.get(&format!("/api/v3/contacts?group_id={g}"), &a.key).await, 404);
    }
    let all = success(&app.get("/api/v3/contacts", &a.key).await, 200);
    assert_eq!(pagination(&all).3, 0, "no contact landed anywhere: {all}");
}

#[actix_web::test]
async fn a_group_body_must_be_an_object() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    // serde reads a struct from an array of its members; the routes do not.
    for body in [json!(["Named by position"]), json!([null, null]), json!("G")] {
        field_error(&app.post("/api/v3/contact-groups", &a.key, body.clone()).await, "body");
        field_error(&app.patch(&groups_path(&group), &a.key, body.clone()).await, "body");
    }
    let list = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");
}
