//! Contact read, patch and delete by uid and numeric id.

use api_tests::{json, spawn};

use super::{
    conflict_on, contact_path, contacts_path, error, field_error, groups_path, make_contact, make_group, success, tz,
    tz_full, tz_national,
};

#[actix_web::test]
async fn contact_is_read_by_uid_and_by_numeric_id() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "name": "Asha"})).await;
    make_contact(&app, &a.key, &group, json!({"PHONE": tz(2)})).await;
    let by_uid = success(&app.get(&contact_path(&group, &c), &a.key).await, 200);
    let by_id = success(&app.get(&format!("{}/{}", contacts_path(&group), c["id"]), &a.key).await, 200);
    assert_eq!(by_uid, c);
    assert_eq!(by_id, c);
    error(&app.get(&format!("{}/ctc_doesnotexist", contacts_path(&group)), &a.key).await, 404);
    error(
        &app.get(&format!("{}/{}", contacts_path(&group), c["id"].as_i64().expect("integer") + 1000), &a.key).await,
        404,
    );
}

#[actix_web::test]
async fn contact_of_another_group_is_404_through_this_groups_path() {
    let app = spawn().await;
    let a = app.account("all").await;
    let home = make_group(&app, &a.key, json!({"name": "Home"})).await;
    let elsewhere = make_group(&app, &a.key, json!({"name": "Elsewhere"})).await;
    let c = make_contact(&app, &a.key, &home, json!({"PHONE": tz(1), "name": "Asha", "city": "Arusha"})).await;
    for contact in [c["uid"].as_str().expect("string").to_owned(), c["id"].to_string()] {
        let path = format!("{}/{contact}", contacts_path(&elsewhere));
        error(&app.get(&path, &a.key).await, 404);
        error(&app.patch(&path, &a.key, json!({"name": "Hijacked", "city": null})).await, 404);
        error(&app.delete(&path, &a.key).await, 404);
    }
    assert_eq!(success(&app.get(&contact_path(&home, &c), &a.key).await, 200), c, "unchanged");
}

#[actix_web::test]
async fn contact_patch_changes_only_the_keys_sent() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = make_contact(
        &app,
        &a.key,
        &group,
        json!({"PHONE": tz(1), "name": "Asha", "is_subscribed": false, "city": "Arusha", "tier": "silver"}),
    )
    .await;
    let path = contact_path(&group, &c);

    // A custom field alone: everything else stays, custom fields merge.
    let p = success(&app.patch(&path, &a.key, json!({"tier": "gold", "email": "a@example.com"})).await, 200);
    assert_eq!(p["name"], "Asha", "name kept when not sent");
    assert_eq!(p["is_subscribed"], false);
    assert_eq!(p["full_phone_number"], tz_full(1));
    assert_eq!(p["custom_field_values"], json!({"city": "Arusha", "tier": "gold", "email": "a@example.com"}));
    assert_eq!(p["uid"], c["uid"]);
    assert_eq!(p["id"], c["id"]);

    // null removes a key.
    let p = success(&app.patch(&path, &a.key, json!({"city": null})).await, 200);
    assert_eq!(p["custom_field_values"], json!({"tier": "gold", "email": "a@example.com"}));
    assert_eq!(p["name"], "Asha");

    // Subscription alone.
    let p = success(&app.patch(&path, &a.key, json!({"is_subscribed": true})).await, 200);
    assert_eq!(p["is_subscribed"], true);
    assert_eq!(p["custom_field_values"], json!({"tier": "gold", "email": "a@example.com"}));

    // The name alone, through each alias.
    assert_eq!(success(&app.patch(&path, &a.key, json!({"name": "Asha J"})).await, 200)["name"], "Asha J");
    assert_eq!(success(&app.patch(&path, &a.key, json!({"NAME": "ASHA"})).await, 200)["name"], "ASHA");
    let p = success(&app.patch(&path, &a.key, json!({"FIRST_NAME": "Asha", "LAST_NAME": "Juma"})).await, 200);
    assert_eq!(p["name"], "Asha Juma");

    // PHONE changes the number and nothing else; the name is not reset to the number.
    let p = success(&app.patch(&path, &a.key, json!({"PHONE": tz(2)})).await, 200);
    assert_eq!(p["phone_number"], tz_national(2));
    assert_eq!(p["full_phone_number"], tz_full(2));
    assert_eq!(p["country_code"], "255");
    assert_eq!(p["name"], "Asha Juma");
    assert_eq!(p["custom_field_values"], json!({"tier": "gold", "email": "a@example.com"}));
    // The phone_number alias changes it too.
    let p = success(&app.patch(&path, &a.key, json!({"phone_number": tz(3)})).await, 200);
    assert_eq!(p["full_phone_number"], tz_full(3));

    // An empty body changes nothing.
    let before = success(&app.get(&path, &a.key).await, 200);
    let p = success(&app.patch(&path, &a.key, json!({})).await, 200);
    for key in ["name", "phone_number", "full_phone_number", "country_code", "is_subscribed", "custom_field_values"] {
        assert_eq!(p[key], before[key], "{key}");
    }
    // A bad number is refused and changes nothing.
    field_error(&app.patch(&path, &a.key, json!({"PHONE": "12345", "name": "Bad"})).await, "PHONE");
    let after = success(&app.get(&path, &a.key).await, 200);
    assert_eq!(after["name"], "Asha Juma");
    assert_eq!(after["full_phone_number"], tz_full(3));
    // Also by numeric id.
    let by_id = format!("{}/{}", contacts_path(&group), c["id"]);
    assert_eq!(success(&app.patch(&by_id, &a.key, json!({"name": "By id"})).await, 200)["name"], "By id");
}

#[actix_web::test]
async fn contact_patch_to_a_number_already_in_the_group_is_409() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let taken = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(2), "name": "Mover"})).await;
    let res = app.patch(&contact_path(&group, &c), &a.key, json!({"PHONE": tz_national(1), "name": "Changed"})).await;
    conflict_on(&res, "PHONE");
    let taken_uid = taken["uid"].as_str().expect("string");
    assert_eq!(res.body["contact_uid"], json!(taken_uid), "{}", res.body);
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains(taken_uid)), "{}", res.body);
    let after = success(&app.get(&contact_path(&group, &c), &a.key).await, 200);
    assert_eq!((after["full_phone_number"].clone(), after["name"].clone()), (json!(tz_full(2)), json!("Mover")));
    // Sending its own number again is not a conflict.
    let same =
        success(&app.patch(&contact_path(&group, &c), &a.key, json!({"PHONE": tz(2), "name": "Same"})).await, 200);
    assert_eq!(same["name"], "Same");
}

#[actix_web::test]
async fn contact_delete_then_read_is_404() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    let keep = make_contact(&app, &a.key, &group, json!({"PHONE": tz(2)})).await;
    let deleted = success(&app.delete(&contact_path(&group, &c), &a.key).await, 200);
    assert_eq!(deleted["uid"], c["uid"]);
    error(&app.get(&contact_path(&group, &c), &a.key).await, 404);
    error(&app.delete(&contact_path(&group, &c), &a.key).await, 404);
    error(&app.patch(&contact_path(&group, &c), &a.key, json!({"name": "Ghost"})).await, 404);
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 1);
    success(&app.get(&contact_path(&group, &keep), &a.key).await, 200);
    // By numeric id too; and the number is free again.
    success(&app.delete(&format!("{}/{}", contacts_path(&group), keep["id"]), &a.key).await, 200);
    make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
}
