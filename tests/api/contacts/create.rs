//! Contact create rules: phone fields and numbers, names, subscription, custom fields, duplicates.

use api_tests::{json, spawn};

use super::{
    assert_status, conflict_on, contact_path, contacts_path, field_error, groups_path, is_rfc3339, items, make_contact,
    make_group, success, tz, tz_full, tz_national,
};

#[actix_web::test]
async fn contact_create_answers_201_with_every_field() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let res = app
        .post(&contacts_path(&group), &a.key, json!({"PHONE": "0712345678", "name": "Asha Juma", "city": "Arusha"}))
        .await;
    let c = success(&res, 201);
    assert!(c["id"].as_i64().is_some_and(|id| id > 0), "{c}");
    assert!(c["uid"].as_str().is_some_and(|u| u.starts_with("ctc_") && u.len() > 4), "{c}");
    assert_eq!(c["group_id"], group["id"]);
    assert_eq!(c["group_uid"], group["uid"]);
    assert_eq!(c["name"], "Asha Juma");
    assert_eq!(c["country_code"], "255");
    assert_eq!(c["phone_number"], "712345678");
    assert_eq!(c["full_phone_number"], "255712345678");
    assert_eq!(c["is_subscribed"], true);
    assert_eq!(c["custom_field_values"], json!({"city": "Arusha"}));
    assert!(is_rfc3339(&c["created_at"]), "{c}");
    assert!(is_rfc3339(&c["updated_at"]), "{c}");
    // The stored record reads back the same.
    assert_eq!(success(&app.get(&contact_path(&group, &c), &a.key).await, 200), c);
    let second = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    assert_ne!(second["uid"], c["uid"]);
}

#[actix_web::test]
async fn contact_phone_wins_over_phone_number_and_phone_number_alone_works() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let both = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "phone_number": tz(2)})).await;
    assert_eq!(both["phone_number"], tz_national(1));
    assert_eq!(both["full_phone_number"], tz_full(1));
    assert!(both["custom_field_values"].as_object().is_some_and(|m| m.is_empty()), "phone_number is reserved: {both}");

    let alias = make_contact(&app, &a.key, &group, json!({"phone_number": tz(2)})).await;
    assert_eq!(alias["phone_number"], tz_national(2));
    assert_eq!(alias["full_phone_number"], tz_full(2));

    // An empty PHONE counts as absent, so phone_number is used.
    let empty = make_contact(&app, &a.key, &group, json!({"PHONE": "", "phone_number": tz(3)})).await;
    assert_eq!(empty["phone_number"], tz_national(3));
    // A bad PHONE is not rescued by a good phone_number.
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": "12345", "phone_number": tz(4)})).await;
    field_error(&res, "PHONE");
}

#[actix_web::test]
async fn contact_without_phone_is_422_on_phone() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    for body in [
        json!({}),
        json!({"name": "No number"}),
        json!({"PHONE": ""}),
        json!({"PHONE": null}),
        json!({"phone_number": ""}),
    ] {
        let res = app.post(&contacts_path(&group), &a.key, body.clone()).await;
        field_error(&res, "PHONE");
    }
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 0);
}

/// Each phone member keeps the shape its description states, the one `PHONE` wins over too:
/// a fraction, letters or a number of 16 digits is a 422 naming that member, on a create and
/// on a patch, and nothing is written.
#[actix_web::test]
async fn each_phone_member_keeps_its_stated_shape_even_when_the_other_wins() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let bad = [json!(58882.648596643805), json!("abc"), json!(1_000_000_000_000_000_u64)];
    for phone_number in &bad {
        let body = json!({"PHONE": "0712345678", "phone_number": phone_number});
        field_error(&app.post(&contacts_path(&group), &a.key, body).await, "phone_number");
    }
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 0);
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": 712345678.0, "name": "Asha"})).await;
    assert_eq!(c["phone_number"], "712345678", "a whole number written with .0 is one");
    let path = format!("{}/{}", contacts_path(&group), c["uid"].as_str().expect("uid"));
    for phone_number in &bad {
        let body = json!({"PHONE": "0712345679", "phone_number": phone_number, "name": "Changed"});
        field_error(&app.patch(&path, &a.key, body).await, "phone_number");
    }
    assert_eq!(success(&app.get(&path, &a.key).await, 200)["name"], "Asha");
}

#[actix_web::test]
async fn contact_national_number_is_digits_without_the_trunk_zero() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": "0712-345 678"})).await;
    assert_eq!(c["phone_number"], "712345678");
    assert_eq!(c["country_code"], "255");
    assert_eq!(c["full_phone_number"], "255712345678");
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": "(0712) 345.679"})).await;
    assert_eq!(c["phone_number"], "712345679");
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": "712345680"})).await;
    assert_eq!(c["phone_number"], "712345680");
    assert_eq!(c["full_phone_number"], "255712345680");
}

#[actix_web::test]
async fn contact_country_code_is_explicit_and_digits_only() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let ke = make_contact(&app, &a.key, &group, json!({"PHONE": "712345678", "country_code": "254"})).await;
    assert_eq!(ke["country_code"], "254");
    assert_eq!(ke["phone_number"], "712345678");
    assert_eq!(ke["full_phone_number"], "254712345678");
    // The trunk 0 is dropped under an explicit code too.
    let ke = make_contact(&app, &a.key, &group, json!({"PHONE": "0712345679", "country_code": "254"})).await;
    assert_eq!(ke["phone_number"], "712345679");
    assert_eq!(ke["full_phone_number"], "254712345679");
    // Without country_code the account's default, 255, applies: a different contact.
    let tz_contact = make_contact(&app, &a.key, &group, json!({"PHONE": "0712345678"})).await;
    assert_eq!(tz_contact["country_code"], "255");
    assert_eq!(tz_contact["full_phone_number"], "255712345678");
    // A code with no digits is refused on country_code.
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": tz(9), "country_code": "abc"})).await;
    field_error(&res, "country_code");
}

#[actix_web::test]
async fn contact_plus_is_not_read_as_a_country_code() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    // 255 (default) + 255712345678 is not a valid number.
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": "+255712345678"})).await;
    field_error(&res, "PHONE");
    // A Kenyan number with a plus is not moved to Kenya either: 255 254712345678 is invalid.
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": "+254712345678"})).await;
    field_error(&res, "PHONE");
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 0);
}

#[actix_web::test]
async fn contact_invalid_number_is_422_on_phone() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    for bad in ["12345", "0712", "07123456789012", "abc", "---", "0000000000"] {
        let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": bad})).await;
        field_error(&res, "PHONE");
    }
    // A number that is valid in Tanzania is not valid under another country code.
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": "712345678", "country_code": "1"})).await;
    field_error(&res, "PHONE");
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 0);
}

#[actix_web::test]
async fn contact_name_comes_from_name_then_upper_name_then_first_last_then_the_number() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let all = json!({"PHONE": tz(1), "name": "lower", "NAME": "UPPER", "FIRST_NAME": "First", "LAST_NAME": "Last"});
    assert_eq!(make_contact(&app, &a.key, &group, all).await["name"], "lower");
    let upper = json!({"PHONE": tz(2), "NAME": "UPPER", "FIRST_NAME": "First", "LAST_NAME": "Last"});
    assert_eq!(make_contact(&app, &a.key, &group, upper).await["name"], "UPPER");
    let parts = json!({"PHONE": tz(3), "FIRST_NAME": "First", "LAST_NAME": "Last"});
    assert_eq!(make_contact(&app, &a.key, &group, parts).await["name"], "First Last");
    let first = json!({"PHONE": tz(4), "FIRST_NAME": "Only"});
    assert_eq!(make_contact(&app, &a.key, &group, first).await["name"], "Only");
    let last = json!({"PHONE": tz(5), "LAST_NAME": "Surname"});
    assert_eq!(make_contact(&app, &a.key, &group, last).await["name"], "Surname");
    let none = make_contact(&app, &a.key, &group, json!({"PHONE": tz(6)})).await;
    assert_eq!(none["name"], none["full_phone_number"]);
    assert_eq!(none["name"], tz_full(6));
    let empty = make_contact(&app, &a.key, &group, json!({"PHONE": tz(7), "name": ""})).await;
    assert_eq!(empty["name"], tz_full(7));
    // None of the name keys is a custom field.
    assert_eq!(
        make_contact(&app, &a.key, &group, json!({"PHONE": tz(8), "NAME": "X", "FIRST_NAME": "Y"})).await["custom_field_values"],
        json!({})
    );
    // Each name key is held to its 191 characters, even one another key wins over.
    for key in ["FIRST_NAME", "LAST_NAME", "NAME"] {
        let body = json!({"PHONE": tz(9), "name": "Wins", key: "x".repeat(192)});
        field_error(&app.post(&contacts_path(&group), &a.key, body).await, key);
    }
}

#[actix_web::test]
async fn contact_is_subscribed_defaults_to_true_and_false_is_kept() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let default = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    assert_eq!(default["is_subscribed"], true);
    let off = make_contact(&app, &a.key, &group, json!({"PHONE": tz(2), "is_subscribed": false})).await;
    assert_eq!(off["is_subscribed"], false);
    assert_eq!(success(&app.get(&contact_path(&group, &off), &a.key).await, 200)["is_subscribed"], false);
    let on = make_contact(&app, &a.key, &group, json!({"PHONE": tz(3), "is_subscribed": true})).await;
    assert_eq!(on["is_subscribed"], true);
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": tz(4), "is_subscribed": "maybe"})).await;
    field_error(&res, "is_subscribed");
}

#[actix_web::test]
async fn contact_other_keys_are_custom_fields_and_reserved_keys_are_not() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G", "custom_fields": ["city"]})).await;
    let c = make_contact(
        &app,
        &a.key,
        &group,
        json!({
            "PHONE": tz(1), "phone_number": tz(2), "country_code": "255", "name": "N", "NAME": "M",
            "FIRST_NAME": "F", "LAST_NAME": "L", "is_subscribed": true, "_token": "csrf",
            "city": "Arusha", "tier": 2, "vip": true, "tags": ["a", "b"], "meta.source": "web", "not-declared": "kept"
        }),
    )
    .await;
    assert_eq!(
        c["custom_field_values"],
        json!({"city": "Arusha", "tier": 2, "vip": true, "tags": ["a", "b"], "meta.source": "web", "not-declared": "kept"})
    );
    let none = make_contact(&app, &a.key, &group, json!({"PHONE": tz(3), "_token": "x"})).await;
    assert_eq!(none["custom_field_values"], json!({}), "an object even when empty");
    let listed = success(&app.get(&contacts_path(&group), &a.key).await, 200);
    assert!(items(&listed).iter().all(|c| c["custom_field_values"].is_object()), "{listed}");
}

#[actix_web::test]
async fn contact_duplicate_number_in_the_group_is_409_naming_the_existing_contact() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let first = make_contact(&app, &a.key, &group, json!({"PHONE": "0712345678", "name": "First"})).await;
    let uid = first["uid"].as_str().expect("string").to_owned();
    // The same number written differently is still the same number.
    for phone in ["0712345678", "712 345 678", "0712-345-678"] {
        let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": phone, "name": "Second"})).await;
        conflict_on(&res, "PHONE");
        assert!(res.body["message"].as_str().is_some_and(|m| m.contains(&uid)), "message names {uid}: {}", res.body);
        assert_eq!(res.body["contact_uid"], json!(uid), "{}", res.body);
    }
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": "712345678", "country_code": "255"})).await;
    assert_eq!(res.body["contact_uid"], json!(uid), "{}", res.body);
    assert_status(&res, 409);
    // Nothing changed.
    let read = success(&app.get(&groups_path(&group), &a.key).await, 200);
    assert_eq!(read["contacts_count"], 1);
    assert_eq!(success(&app.get(&contact_path(&group, &first), &a.key).await, 200)["name"], "First");

    // The same number in another group is a different contact.
    let other = make_group(&app, &a.key, json!({"name": "Other"})).await;
    let twin = make_contact(&app, &a.key, &other, json!({"PHONE": "0712345678"})).await;
    assert_ne!(twin["uid"], first["uid"]);
    assert_eq!(twin["full_phone_number"], first["full_phone_number"]);
    // And the same national number under another country code is too.
    let ke = make_contact(&app, &a.key, &group, json!({"PHONE": "0712345678", "country_code": "254"})).await;
    assert_eq!(ke["full_phone_number"], "254712345678");
}

#[actix_web::test]
async fn contact_numbers_and_custom_field_keys_follow_the_schema_rules() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    // A number sent as a JSON number is read as its digits; 0 is no number.
    for (body, field) in [
        (json!({"PHONE": 0}), "PHONE"),
        (json!({"phone_number": 0}), "phone_number"),
        // A code of no country: the number is not valid for it.
        (json!({"PHONE": 712_345_678, "country_code": 0}), "PHONE"),
        (json!({"PHONE": tz(1), "country_code": "+"}), "country_code"),
        (json!({"PHONE": tz(1), "bad key": 1}), "bad key"),
        (json!({"PHONE": tz(1), "": 1}), ""),
        (json!({"PHONE": tz(1), "k".repeat(65): 1}), &"k".repeat(65)),
    ] {
        field_error(&app.post(&contacts_path(&group), &a.key, body.clone()).await, field);
    }
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": 712_345_678, "country_code": 255})).await;
    assert_eq!(c["full_phone_number"], "255712345678");
    // The same rules on a change.
    for (body, field) in [(json!({"PHONE": 0}), "PHONE"), (json!({"country_code": 0}), "country_code")] {
        let res = app.patch(&contact_path(&group, &c), &a.key, body.clone()).await;
        assert!(res.status == 422, "{body}: {}", res.body);
        assert!(res.body["errors"].get(field).is_some() || res.body["errors"].get("PHONE").is_some(), "{}", res.body);
    }
    field_error(&app.patch(&contact_path(&group, &c), &a.key, json!({"a b": 1})).await, "a b");
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 1);
}

#[actix_web::test]
async fn extreme_numbers_in_custom_fields_read_back_as_sent() {
    // PostgreSQL prints a jsonb number in full (309 digits for the largest double); reading it
    // back must give the same double, not "number out of range" (a 500 before).
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let values = json!({"max": f64::MAX, "tiny": 5e-324, "small": -2.4739831582039154e-64});
    let mut body = values.clone();
    body["PHONE"] = json!("0712345678");
    let c = success(&app.post(&contacts_path(&group), &a.key, body).await, 201);
    assert_eq!(c["custom_field_values"], values);
    let read = success(&app.get(&contact_path(&group, &c), &a.key).await, 200);
    assert_eq!(read["custom_field_values"], values);
}
