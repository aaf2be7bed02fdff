//! The five original contact paths (contract: "Contact groups and contacts", "Authentication"
//! rule 4): `POST /contacts/{group_id}/all`, `POST .../store`, `POST .../search/{uid}`,
//! `PATCH .../update/{uid}`, `DELETE .../delete/{uid}`: the same behaviour and records as the
//! new paths, the only ones a key from before the permission model keeps, and a GET to them is
//! not equivalent.

use api_tests::{json, spawn};
use serde_json::Value;

use crate::contacts::{
    conflict_on, error, field_error, items, make_contact, make_group, pagination, success, tz, tz_full, tz_national,
    uids,
};

fn all(group: &Value) -> String {
    format!("/api/v3/contacts/{}/all", group["id"])
}

fn store(group: &Value) -> String {
    format!("/api/v3/contacts/{}/store", group["id"])
}

fn search(group: &Value, contact: &Value) -> String {
    format!("/api/v3/contacts/{}/search/{}", group["id"], contact["uid"].as_str().expect("uid"))
}

fn update(group: &Value, contact: &Value) -> String {
    format!("/api/v3/contacts/{}/update/{}", group["id"], contact["uid"].as_str().expect("uid"))
}

fn delete(group: &Value, contact: &Value) -> String {
    format!("/api/v3/contacts/{}/delete/{}", group["id"], contact["uid"].as_str().expect("uid"))
}

fn new_path(group: &Value, contact: &Value) -> String {
    format!("/api/v3/contact-groups/{}/contacts/{}", group["id"], contact["uid"].as_str().expect("uid"))
}

#[actix_web::test]
async fn original_store_creates_a_contact_the_new_paths_read() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let res = app
        .post(
            &store(&group),
            &a.key,
            json!({"PHONE": "0712-345 678", "phone_number": tz(9), "FIRST_NAME": "Asha", "LAST_NAME": "Juma",
                   "is_subscribed": false, "city": "Arusha", "_token": "csrf"}),
        )
        .await;
    let c = success(&res, 201);
    assert!(c["uid"].as_str().is_some_and(|u| u.starts_with("ctc_")), "{c}");
    assert_eq!(c["group_id"], group["id"]);
    assert_eq!(c["group_uid"], group["uid"]);
    assert_eq!(c["name"], "Asha Juma");
    assert_eq!(c["country_code"], "255");
    assert_eq!(c["phone_number"], "712345678");
    assert_eq!(c["full_phone_number"], "255712345678");
    assert_eq!(c["is_subscribed"], false);
    assert_eq!(c["custom_field_values"], json!({"city": "Arusha"}));
    for key in ["id", "created_at", "updated_at"] {
        assert!(!c[key].is_null(), "{key}: {c}");
    }
    // The same record through the new paths.
    assert_eq!(success(&app.get(&new_path(&group, &c), &a.key).await, 200), c);
    let listed = success(&app.get(&format!("/api/v3/contact-groups/{}/contacts", group["id"]), &a.key).await, 200);
    assert_eq!(items(&listed), &vec![c.clone()]);
    assert_eq!(
        success(&app.get(&format!("/api/v3/contact-groups/{}", group["id"]), &a.key).await, 200)["contacts_count"],
        1
    );
    // The group's UUID works on the original paths as well.
    let res = app
        .post(
            &format!("/api/v3/contacts/{}/store", group["uid"].as_str().expect("string")),
            &a.key,
            json!({"PHONE": tz(1)}),
        )
        .await;
    assert_eq!(success(&res, 201)["group_id"], group["id"]);
}

#[actix_web::test]
async fn original_store_applies_the_same_rules() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let existing = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    field_error(&app.post(&store(&group), &a.key, json!({"name": "No number"})).await, "PHONE");
    field_error(&app.post(&store(&group), &a.key, json!({"PHONE": "+255712345678"})).await, "PHONE");
    field_error(&app.post(&store(&group), &a.key, json!({"PHONE": "12345"})).await, "PHONE");
    let res = app.post(&store(&group), &a.key, json!({"PHONE": tz_national(1)})).await;
    conflict_on(&res, "PHONE");
    assert_eq!(res.body["contact_uid"], existing["uid"], "{}", res.body);
    let ke =
        success(&app.post(&store(&group), &a.key, json!({"PHONE": "712345678", "country_code": "254"})).await, 201);
    assert_eq!(ke["full_phone_number"], "254712345678");
    assert_eq!(ke["name"], "254712345678", "named after the number");
    assert_eq!(ke["is_subscribed"], true);
    assert_eq!(ke["custom_field_values"], json!({}));
    error(&app.post("/api/v3/contacts/999999/store", &a.key, json!({"PHONE": tz(2)})).await, 404);
    error(&app.post("/api/v3/contacts/not-a-group/store", &a.key, json!({"PHONE": tz(2)})).await, 404);
    assert_eq!(
        success(&app.get(&format!("/api/v3/contact-groups/{}", group["id"]), &a.key).await, 200)["contacts_count"],
        2
    );
}

#[actix_web::test]
async fn original_search_reads_a_contact_made_on_the_new_paths() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let other = make_group(&app, &a.key, json!({"name": "Other"})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "name": "Asha", "city": "Arusha"})).await;
    assert_eq!(success(&app.post(&search(&group, &c), &a.key, json!({})).await, 200), c);
    // Without any body, and by numeric id.
    let res = app.request("POST", &search(&group, &c), Some(&a.key), None).await;
    assert_eq!(success(&res, 200), c);
    let by_id = format!("/api/v3/contacts/{}/search/{}", group["id"], c["id"]);
    assert_eq!(success(&app.post(&by_id, &a.key, json!({})).await, 200), c);
    // Only within its own group.
    error(&app.post(&search(&other, &c), &a.key, json!({})).await, 404);
    error(&app.post(&format!("/api/v3/contacts/{}/search/ctc_missing", group["id"]), &a.key, json!({})).await, 404);
}

#[actix_web::test]
async fn original_all_lists_with_search_limit_and_page_from_the_body_or_the_query() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    crate::contacts::fill(&app, &a.key, &group, 100, 24).await;
    let asha =
        make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "name": "Asha Juma", "is_subscribed": false})).await;
    let asha_uid = asha["uid"].as_str().expect("string").to_owned();

    // Defaults: 20 per page, newest first, the same items as the new list.
    let data = success(&app.post(&all(&group), &a.key, json!({})).await, 200);
    assert_eq!(items(&data).len(), 20);
    assert_eq!(pagination(&data), (1, 20, 2, 25, true));
    assert_eq!(items(&data)[0]["uid"], asha["uid"]);
    let new_list = success(&app.get(&format!("/api/v3/contact-groups/{}/contacts", group["id"]), &a.key).await, 200);
    assert_eq!(data, new_list);
    // No body at all.
    let res = app.request("POST", &all(&group), Some(&a.key), None).await;
    assert_eq!(pagination(&success(&res, 200)), (1, 20, 2, 25, true));

    // From the body.
    let data = success(&app.post(&all(&group), &a.key, json!({"search": "ASHA"})).await, 200);
    assert_eq!(uids(&data), vec![asha_uid.clone()]);
    let data = success(&app.post(&all(&group), &a.key, json!({"search": "+255 712-000-001"})).await, 200);
    assert_eq!(uids(&data), vec![asha_uid.clone()]);
    let data = success(&app.post(&all(&group), &a.key, json!({"limit": 10, "page": 3})).await, 200);
    assert_eq!(items(&data).len(), 5);
    assert_eq!(pagination(&data), (3, 10, 3, 25, false));
    let data = success(&app.post(&all(&group), &a.key, json!({"limit": "7", "per_page": 30})).await, 200);
    assert_eq!(pagination(&data).1, 7, "limit wins over per_page");
    let data = success(&app.post(&all(&group), &a.key, json!({"limit": 500})).await, 200);
    assert_eq!((items(&data).len(), pagination(&data).1), (25, 100));
    let data = success(&app.post(&all(&group), &a.key, json!({"limit": 0})).await, 200);
    assert_eq!(pagination(&data).1, 20);
    let data = success(&app.post(&all(&group), &a.key, json!({"subscribed": false})).await, 200);
    assert_eq!(uids(&data), vec![asha_uid.clone()]);
    let data = success(&app.post(&all(&group), &a.key, json!({"page": 9})).await, 200);
    assert!(items(&data).is_empty());
    assert_eq!(pagination(&data).3, 25);
    field_error(&app.post(&all(&group), &a.key, json!({"subscribed": "maybe"})).await, "subscribed");
    field_error(&app.post(&all(&group), &a.key, json!({"subscribed": 2})).await, "subscribed");
    for member in ["page", "limit", "per_page"] {
        field_error(&app.post(&all(&group), &a.key, json!({member: true})).await, member);
        field_error(&app.post(&all(&group), &a.key, json!({member: "two"})).await, member);
    }
    // The body is an object (or nothing), not the members by position.
    field_error(&app.post(&all(&group), &a.key, json!([null, null])).await, "body");

    // From the query.
    let data = success(&app.post(&format!("{}?search=asha&limit=5", all(&group)), &a.key, json!({})).await, 200);
    assert_eq!(uids(&data), vec![asha_uid.clone()]);
    assert_eq!(pagination(&data).1, 5);
    let data = success(&app.post(&format!("{}?limit=10&page=2", all(&group)), &a.key, json!({})).await, 200);
    assert_eq!(pagination(&data), (2, 10, 3, 25, true));
    // A whole number written with a zero fraction is that integer.
    let data = success(&app.post(&all(&group), &a.key, json!({"limit": 10.0, "page": 3.0})).await, 200);
    assert_eq!((pagination(&data).0, pagination(&data).1), (3, 10));
    // The query is read whole even where the body wins over it.
    field_error(
        &app.post(&format!("{}?subscribed=maybe", all(&group)), &a.key, json!({"subscribed": true})).await,
        "subscribed",
    );
    field_error(&app.post(&format!("{}?page=x", all(&group)), &a.key, json!({"page": 2})).await, "page");
    // A form posts its empty fields: an empty member of the body is left out, so the query's
    // member stands.
    let body = json!({"search": "", "page": "", "limit": " ", "per_page": ""});
    let data = success(&app.post(&format!("{}?limit=10&page=2", all(&group)), &a.key, body).await, 200);
    assert_eq!(pagination(&data), (2, 10, 3, 25, true));

    // Unknown group.
    error(&app.post("/api/v3/contacts/999999/all", &a.key, json!({})).await, 404);
}

#[actix_web::test]
async fn original_update_merges_like_the_new_patch() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = success(
        &app.post(&store(&group), &a.key, json!({"PHONE": tz(1), "name": "Asha", "city": "Arusha", "tier": "silver"}))
            .await,
        201,
    );
    let taken = make_contact(&app, &a.key, &group, json!({"PHONE": tz(2)})).await;

    let p = success(&app.patch(&update(&group, &c), &a.key, json!({"tier": "gold", "city": null})).await, 200);
    assert_eq!(p["name"], "Asha", "name kept when not sent");
    assert_eq!(p["custom_field_values"], json!({"tier": "gold"}));
    assert_eq!(p["full_phone_number"], tz_full(1));
    let p =
        success(&app.patch(&update(&group, &c), &a.key, json!({"PHONE": tz(3), "is_subscribed": false})).await, 200);
    assert_eq!(p["phone_number"], tz_national(3));
    assert_eq!(p["name"], "Asha");
    assert_eq!(p["is_subscribed"], false);
    // The change is visible on the new path.
    assert_eq!(success(&app.get(&new_path(&group, &c), &a.key).await, 200), p);

    let res = app.patch(&update(&group, &c), &a.key, json!({"PHONE": tz(2)})).await;
    conflict_on(&res, "PHONE");
    assert_eq!(res.body["contact_uid"], taken["uid"]);
    field_error(&app.patch(&update(&group, &c), &a.key, json!({"PHONE": "12345"})).await, "PHONE");
    assert_eq!(success(&app.get(&new_path(&group, &c), &a.key).await, 200), p, "refused changes changed nothing");

    // A contact made on the new path is changed on the original one, by numeric id too.
    let by_id = format!("/api/v3/contacts/{}/update/{}", group["id"], taken["id"]);
    assert_eq!(success(&app.patch(&by_id, &a.key, json!({"name": "Renamed"})).await, 200)["name"], "Renamed");
    assert_eq!(success(&app.get(&new_path(&group, &taken), &a.key).await, 200)["name"], "Renamed");
}

#[actix_web::test]
async fn original_delete_removes_the_record_for_the_new_paths_too() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let other = make_group(&app, &a.key, json!({"name": "Other"})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    error(&app.delete(&delete(&other, &c), &a.key).await, 404);
    assert_eq!(success(&app.delete(&delete(&group, &c), &a.key).await, 200)["uid"], c["uid"]);
    error(&app.get(&new_path(&group, &c), &a.key).await, 404);
    error(&app.post(&search(&group, &c), &a.key, json!({})).await, 404);
    error(&app.delete(&delete(&group, &c), &a.key).await, 404);
    // One stored on the original path, deleted on the new one.
    let d = success(&app.post(&store(&group), &a.key, json!({"PHONE": tz(2)})).await, 201);
    success(&app.delete(&new_path(&group, &d), &a.key).await, 200);
    error(&app.post(&search(&group, &d), &a.key, json!({})).await, 404);
    assert_eq!(
        success(&app.get(&format!("/api/v3/contact-groups/{}", group["id"]), &a.key).await, 200)["contacts_count"],
        0
    );
}

#[actix_web::test]
async fn a_get_to_an_original_path_is_405_in_the_v3_envelope() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    for path in [all(&group), store(&group), search(&group, &c), update(&group, &c), delete(&group, &c)] {
        let res = app.get(&path, &a.key).await;
        error(&res, 405);
    }
    // Other wrong methods too.
    error(&app.delete(&all(&group), &a.key).await, 405);
    error(&app.request("POST", &update(&group, &c), Some(&a.key), Some(json!({"name": "x"}))).await, 405);
    error(&app.request("POST", &delete(&group, &c), Some(&a.key), Some(json!({}))).await, 405);
    // Nothing changed.
    assert_eq!(success(&app.get(&new_path(&group, &c), &a.key).await, 200), c);
}

#[actix_web::test]
async fn original_paths_check_the_same_permissions_as_the_new_ones() {
    let app = spawn().await;
    let owner = app.account("all").await;
    let group = make_group(&app, &owner.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &owner.key, &group, json!({"PHONE": tz(1), "name": "Asha"})).await;
    let viewer_user = app.user(owner.tenant, "contacts.view").await;
    let viewer = app.key(owner.tenant, viewer_user).await;
    success(&app.post(&all(&group), &viewer, json!({})).await, 200);
    success(&app.post(&search(&group, &c), &viewer, json!({})).await, 200);
    error(&app.post(&store(&group), &viewer, json!({"PHONE": tz(2)})).await, 403);
    error(&app.patch(&update(&group, &c), &viewer, json!({"name": "Nope"})).await, 403);
    error(&app.delete(&delete(&group, &c), &viewer).await, 403);
    assert_eq!(success(&app.get(&new_path(&group, &c), &owner.key).await, 200), c);
}

#[actix_web::test]
async fn a_legacy_key_may_use_the_original_paths_and_nothing_else() {
    let app = spawn().await;
    let owner = app.account("all").await;
    let legacy = app.legacy_key(owner.tenant).await;
    let group = make_group(&app, &owner.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &owner.key, &group, json!({"PHONE": tz(1), "name": "Asha"})).await;

    // All five original paths.
    let made = success(&app.post(&store(&group), &legacy, json!({"PHONE": tz(2), "name": "Legacy"})).await, 201);
    assert_eq!(made["group_id"], group["id"]);
    let listed = success(&app.post(&all(&group), &legacy, json!({})).await, 200);
    assert_eq!(pagination(&listed).3, 2);
    assert_eq!(success(&app.post(&search(&group, &c), &legacy, json!({})).await, 200), c);
    assert_eq!(
        success(&app.patch(&update(&group, &made), &legacy, json!({"city": "Moshi"})).await, 200)["custom_field_values"],
        json!({"city": "Moshi"})
    );
    success(&app.delete(&delete(&group, &made), &legacy).await, 200);
    error(&app.get(&new_path(&group, &made), &owner.key).await, 404);

    // Every new path refuses it with 403, and nothing changes.
    let g = format!("/api/v3/contact-groups/{}", group["id"]);
    let cp = new_path(&group, &c);
    let refusals = [
        app.get("/api/v3/contact-groups", &legacy).await,
        app.post("/api/v3/contact-groups", &legacy, json!({"name": "Nope"})).await,
        app.get(&g, &legacy).await,
        app.patch(&g, &legacy, json!({"name": "Nope"})).await,
        app.delete(&format!("{g}?force=true"), &legacy).await,
        app.get(&format!("{g}/contacts"), &legacy).await,
        app.post(&format!("{g}/contacts"), &legacy, json!({"PHONE": tz(3)})).await,
        app.post(&format!("{g}/contacts/batch"), &legacy, json!({"contacts": [{"PHONE": tz(3)}]})).await,
        app.get(&cp, &legacy).await,
        app.patch(&cp, &legacy, json!({"name": "Nope"})).await,
        app.delete(&cp, &legacy).await,
        app.get("/api/v3/contacts", &legacy).await,
        app.get(&format!("/api/v3/contacts?group_id={}", group["id"]), &legacy).await,
    ];
    for res in &refusals {
        error(res, 403);
    }
    let read = success(&app.get(&g, &owner.key).await, 200);
    assert_eq!((read["name"].clone(), read["contacts_count"].clone()), (json!("G"), json!(1)));
    assert_eq!(success(&app.get(&cp, &owner.key).await, 200), c);
    assert_eq!(pagination(&success(&app.get("/api/v3/contact-groups", &owner.key).await, 200)).3, 1);
}

#[actix_web::test]
async fn original_paths_answer_404_for_another_tenants_ids_and_change_nothing() {
    let app = spawn().await;
    let a = app.account("all").await;
    let b = app.account("all").await;
    let b_legacy = app.legacy_key(b.tenant).await;
    let ga = make_group(&app, &a.key, json!({"name": "A"})).await;
    let ca = make_contact(&app, &a.key, &ga, json!({"PHONE": tz(1), "name": "Asha of A", "city": "Arusha"})).await;
    let gb = make_group(&app, &b.key, json!({"name": "B"})).await;

    for key in [&b.key, &b_legacy] {
        for g in [ga["id"].to_string(), ga["uid"].as_str().expect("string").to_owned()] {
            let base = format!("/api/v3/contacts/{g}");
            error(&app.post(&format!("{base}/all"), key, json!({})).await, 404);
            error(&app.post(&format!("{base}/all"), key, json!({"search": "asha"})).await, 404);
            error(&app.post(&format!("{base}/store"), key, json!({"PHONE": tz(9)})).await, 404);
            for contact in [ca["uid"].as_str().expect("string").to_owned(), ca["id"].to_string()] {
                error(&app.post(&format!("{base}/search/{contact}"), key, json!({})).await, 404);
                error(
                    &app.patch(&format!("{base}/update/{contact}"), key, json!({"name": "Taken", "city": null})).await,
                    404,
                );
                error(&app.delete(&format!("{base}/delete/{contact}"), key).await, 404);
            }
        }
        // A's contact through B's own group.
        for contact in [ca["uid"].as_str().expect("string").to_owned(), ca["id"].to_string()] {
            let base = format!("/api/v3/contacts/{}", gb["id"]);
            error(&app.post(&format!("{base}/search/{contact}"), key, json!({})).await, 404);
            error(&app.patch(&format!("{base}/update/{contact}"), key, json!({"name": "Taken"})).await, 404);
            error(&app.delete(&format!("{base}/delete/{contact}"), key).await, 404);
        }
        let b_list = success(&app.post(&all(&gb), key, json!({"search": "asha"})).await, 200);
        assert_eq!(pagination(&b_list).3, 0);
    }
    assert_eq!(success(&app.get(&new_path(&ga, &ca), &a.key).await, 200), ca);
    let read = success(&app.get(&format!("/api/v3/contact-groups/{}", ga["id"]), &a.key).await, 200);
    assert_eq!(read["contacts_count"], 1);
    assert_eq!(pagination(&success(&app.get("/api/v3/contacts", &b.key).await, 200)).3, 0);
}
