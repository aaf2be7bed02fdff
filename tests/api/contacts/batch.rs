//! Contact batch import: size limits, partial success, merge updates, skip-existing, repeats.

use api_tests::{json, spawn};
use serde_json::Value;

use super::{
    batch_path, contact_path, contacts_path, field_error, groups_path, items, make_contact, make_group, success, tz,
    tz_full, tz_national,
};

#[actix_web::test]
async fn batch_size_is_1_to_500_rows() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let rows: Vec<Value> = (0..501).map(|n| json!({"PHONE": tz(n)})).collect();
    field_error(&app.post(&batch_path(&group), &a.key, json!({"contacts": rows})).await, "contacts");
    field_error(&app.post(&batch_path(&group), &a.key, json!({"contacts": []})).await, "contacts");
    field_error(&app.post(&batch_path(&group), &a.key, json!({})).await, "contacts");
    field_error(&app.post(&batch_path(&group), &a.key, json!({"contacts": {"PHONE": tz(1)}})).await, "contacts");
    // The body is an object, not the members by position.
    field_error(&app.post(&batch_path(&group), &a.key, json!([[{"PHONE": tz(1)}], true])).await, "body");
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 0, "nothing landed");

    let rows: Vec<Value> = (0..500).map(|n| json!({"PHONE": tz(n)})).collect();
    let data = success(&app.post(&batch_path(&group), &a.key, json!({"contacts": rows})).await, 200);
    assert_eq!((data["received"].clone(), data["created"].clone()), (json!(500), json!(500)));
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 500);
}

#[actix_web::test]
async fn batch_with_bad_rows_lands_the_good_ones_and_answers_207() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let res = app
        .post(
            &batch_path(&group),
            &a.key,
            json!({"contacts": [
                {"PHONE": tz(1), "name": "Good one", "city": "Arusha"},
                {"PHONE": "12345", "name": "Bad number"},
                {"name": "No number"},
                {"phone_number": tz(2), "is_subscribed": false},
                "not an object",
                {"PHONE": "+255712000003"}
            ]}),
        )
        .await;
    let data = success(&res, 207);
    assert_eq!(data["group_id"], group["id"]);
    assert_eq!(data["received"], 6);
    assert_eq!(data["created"], 2);
    assert_eq!(data["updated"], 0);
    assert_eq!(data["skipped"], 0);
    assert_eq!(data["rejected"], 4);
    let results = data["results"].as_array().expect("results");
    assert_eq!(results.len(), 6, "a result for every row");
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["index"], i, "{r}");
    }
    let outcomes: Vec<&str> = results.iter().map(|r| r["outcome"].as_str().expect("string")).collect();
    assert_eq!(outcomes, ["created", "rejected", "rejected", "created", "rejected", "rejected"]);
    assert!(results[0]["uid"].as_str().is_some_and(|u| u.starts_with("ctc_")));
    assert!(results[3]["uid"].as_str().is_some_and(|u| u.starts_with("ctc_")));
    assert!(results[1]["uid"].is_null(), "a rejected row has no uid: {}", results[1]);
    let problems = data["problems"].as_array().expect("problems");
    let indexes: Vec<i64> = problems.iter().map(|p| p["index"].as_i64().expect("integer")).collect();
    assert_eq!(indexes, [1, 2, 4, 5]);
    assert!(problems[0]["errors"]["PHONE"].as_array().is_some_and(|e| !e.is_empty()), "{}", problems[0]);
    assert!(problems[1]["errors"]["PHONE"].as_array().is_some_and(|e| !e.is_empty()), "{}", problems[1]);
    assert!(problems[2]["errors"].as_object().is_some_and(|e| !e.is_empty()), "{}", problems[2]);
    assert!(problems[3]["errors"]["PHONE"].as_array().is_some_and(|e| !e.is_empty()), "{}", problems[3]);

    // The good rows landed with the same rules as a single create.
    let good = success(
        &app.get(&format!("{}/{}", contacts_path(&group), results[0]["uid"].as_str().expect("string")), &a.key).await,
        200,
    );
    assert_eq!(good["name"], "Good one");
    assert_eq!(good["full_phone_number"], tz_full(1));
    assert_eq!(good["custom_field_values"], json!({"city": "Arusha"}));
    let other = success(
        &app.get(&format!("{}/{}", contacts_path(&group), results[3]["uid"].as_str().expect("string")), &a.key).await,
        200,
    );
    assert_eq!(other["is_subscribed"], false);
    assert_eq!(other["name"], tz_full(2), "named after the number");
    let read = success(&app.get(&groups_path(&group), &a.key).await, 200);
    assert_eq!((read["contacts_count"].clone(), read["subscribed_count"].clone()), (json!(2), json!(1)));
}

#[actix_web::test]
async fn batch_of_only_good_rows_answers_200() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let res = app
        .post(
            &batch_path(&group),
            &a.key,
            json!({"contacts": [
                {"PHONE": tz(1), "NAME": "Upper"},
                {"PHONE": "712345678", "country_code": "254", "FIRST_NAME": "Ke", "LAST_NAME": "Nya"}
            ]}),
        )
        .await;
    let data = success(&res, 200);
    assert_eq!(
        (
            data["received"].clone(),
            data["created"].clone(),
            data["updated"].clone(),
            data["skipped"].clone(),
            data["rejected"].clone()
        ),
        (json!(2), json!(2), json!(0), json!(0), json!(0))
    );
    assert_eq!(data["problems"], json!([]));
    assert_eq!(data["group_id"], group["id"]);
    let list = success(&app.get(&contacts_path(&group), &a.key).await, 200);
    let mut names: Vec<&str> = items(&list).iter().map(|c| c["name"].as_str().expect("string")).collect();
    names.sort_unstable();
    assert_eq!(names, ["Ke Nya", "Upper"]);
    let ke = items(&list).iter().find(|c| c["name"] == "Ke Nya").expect("listed");
    assert_eq!(ke["full_phone_number"], "254712345678");
    // The batch also takes the group's UUID.
    let res = app
        .post(
            &format!("/api/v3/contact-groups/{}/contacts/batch", group["uid"].as_str().expect("string")),
            &a.key,
            json!({"contacts": [{"PHONE": tz(2)}]}),
        )
        .await;
    assert_eq!(success(&res, 200)["created"], 1);
}

#[actix_web::test]
async fn batch_updates_existing_numbers_by_merge() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let existing = make_contact(
        &app,
        &a.key,
        &group,
        json!({"PHONE": tz(1), "name": "Asha", "city": "Arusha", "tier": "silver", "is_subscribed": false}),
    )
    .await;
    let res = app
        .post(
            &batch_path(&group),
            &a.key,
            json!({"contacts": [
                {"PHONE": tz_national(1), "tier": "gold", "city": null},
                {"PHONE": tz(2), "name": "New"}
            ]}),
        )
        .await;
    let data = success(&res, 200);
    assert_eq!((data["created"].clone(), data["updated"].clone()), (json!(1), json!(1)));
    assert_eq!(data["results"][0], json!({"index": 0, "uid": existing["uid"], "outcome": "updated"}));
    assert_eq!(data["results"][1]["outcome"], "created");
    let read = success(&app.get(&contact_path(&group, &existing), &a.key).await, 200);
    assert_eq!(read["name"], "Asha", "name kept when not sent");
    assert_eq!(read["is_subscribed"], false, "subscription kept when not sent");
    assert_eq!(read["custom_field_values"], json!({"tier": "gold"}), "merged; null removes");
    assert_eq!(read["id"], existing["id"]);
    // Values that are sent do change.
    let data = success(
        &app.post(
            &batch_path(&group),
            &a.key,
            json!({"contacts": [{"PHONE": tz(1), "name": "Asha J", "is_subscribed": true}]}),
        )
        .await,
        200,
    );
    assert_eq!(data["updated"], 1);
    let read = success(&app.get(&contact_path(&group, &existing), &a.key).await, 200);
    assert_eq!((read["name"].clone(), read["is_subscribed"].clone()), (json!("Asha J"), json!(true)));
    assert_eq!(read["custom_field_values"], json!({"tier": "gold"}));
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 2);
}

#[actix_web::test]
async fn batch_skip_existing_leaves_existing_contacts_untouched() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let existing = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "name": "Asha", "city": "Arusha"})).await;
    let res = app
        .post(
            &batch_path(&group),
            &a.key,
            json!({"skip_existing": true, "contacts": [
                {"PHONE": tz(1), "name": "Overwritten", "city": "Dodoma", "is_subscribed": false},
                {"PHONE": tz(2), "name": "New"}
            ]}),
        )
        .await;
    let data = success(&res, 200);
    assert_eq!(
        (data["created"].clone(), data["updated"].clone(), data["skipped"].clone(), data["rejected"].clone()),
        (json!(1), json!(0), json!(1), json!(0))
    );
    assert_eq!(data["results"][0], json!({"index": 0, "uid": existing["uid"], "outcome": "skipped"}));
    assert_eq!(data["results"][1]["outcome"], "created");
    let read = success(&app.get(&contact_path(&group, &existing), &a.key).await, 200);
    assert_eq!(read, existing, "untouched");
    // skip_existing:false is the default behaviour: update.
    let data = success(
        &app.post(
            &batch_path(&group),
            &a.key,
            json!({"skip_existing": false, "contacts": [{"PHONE": tz(1), "name": "Updated"}]}),
        )
        .await,
        200,
    );
    assert_eq!(data["results"][0]["outcome"], "updated");
    assert_eq!(success(&app.get(&contact_path(&group, &existing), &a.key).await, 200)["name"], "Updated");
}

#[actix_web::test]
async fn batch_number_repeated_in_one_batch_updates_the_row_created_earlier() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let res = app
        .post(
            &batch_path(&group),
            &a.key,
            json!({"contacts": [
                {"PHONE": tz(1), "name": "First", "city": "Arusha"},
                {"PHONE": tz(2)},
                {"PHONE": tz_national(1), "tier": "gold"},
                {"PHONE": "0712-000-001", "name": "Third"}
            ]}),
        )
        .await;
    let data = success(&res, 200);
    assert_eq!(
        (data["received"].clone(), data["created"].clone(), data["updated"].clone()),
        (json!(4), json!(2), json!(2))
    );
    let results = data["results"].as_array().expect("array");
    let outcomes: Vec<&str> = results.iter().map(|r| r["outcome"].as_str().expect("string")).collect();
    assert_eq!(outcomes, ["created", "created", "updated", "updated"]);
    assert_eq!(results[2]["uid"], results[0]["uid"], "same contact");
    assert_eq!(results[3]["uid"], results[0]["uid"]);
    assert_eq!(
        success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"],
        2,
        "one contact per number"
    );
    let read = success(
        &app.get(&format!("{}/{}", contacts_path(&group), results[0]["uid"].as_str().expect("string")), &a.key).await,
        200,
    );
    assert_eq!(read["name"], "Third");
    assert_eq!(read["custom_field_values"], json!({"city": "Arusha", "tier": "gold"}));
}
