//! Permissions on contact routes and tenant isolation of groups and contacts.

use api_tests::{json, spawn};

use super::{
    batch_path, contact_path, contacts_path, error, groups_path, items, make_contact, make_group, pagination, success,
    tz, tz_national, uids,
};

#[actix_web::test]
async fn view_only_key_lists_and_reads_but_cannot_change_anything() {
    let app = spawn().await;
    let owner = app.account("all").await;
    let viewer_user = app.user(owner.tenant, "contacts.view").await;
    let viewer = app.key(owner.tenant, viewer_user).await;
    let group = make_group(&app, &owner.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &owner.key, &group, json!({"PHONE": tz(1), "name": "Asha"})).await;

    success(&app.get("/api/v3/contact-groups", &viewer).await, 200);
    success(&app.get(&groups_path(&group), &viewer).await, 200);
    success(&app.get(&contacts_path(&group), &viewer).await, 200);
    success(&app.get(&contact_path(&group, &c), &viewer).await, 200);
    assert_eq!(pagination(&success(&app.get("/api/v3/contacts", &viewer).await, 200)).3, 1);

    error(&app.post("/api/v3/contact-groups", &viewer, json!({"name": "Nope"})).await, 403);
    error(&app.patch(&groups_path(&group), &viewer, json!({"name": "Nope"})).await, 403);
    error(&app.delete(&groups_path(&group), &viewer).await, 403);
    error(&app.delete(&format!("{}?force=true", groups_path(&group)), &viewer).await, 403);
    error(&app.post(&contacts_path(&group), &viewer, json!({"PHONE": tz(2)})).await, 403);
    error(&app.patch(&contact_path(&group, &c), &viewer, json!({"name": "Nope"})).await, 403);
    error(&app.delete(&contact_path(&group, &c), &viewer).await, 403);
    error(&app.post(&batch_path(&group), &viewer, json!({"contacts": [{"PHONE": tz(3)}]})).await, 403);

    let groups = success(&app.get("/api/v3/contact-groups", &owner.key).await, 200);
    assert_eq!(pagination(&groups).3, 1);
    let read = success(&app.get(&groups_path(&group), &owner.key).await, 200);
    assert_eq!((read["name"].clone(), read["contacts_count"].clone()), (json!("G"), json!(1)));
    assert_eq!(success(&app.get(&contact_path(&group, &c), &owner.key).await, 200), c);
}

#[actix_web::test]
async fn a_key_without_contacts_view_cannot_list_or_read() {
    let app = spawn().await;
    let owner = app.account("all").await;
    let other_user = app.user(owner.tenant, "contacts.create").await;
    let creator = app.key(owner.tenant, other_user).await;
    let group = make_group(&app, &owner.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &owner.key, &group, json!({"PHONE": tz(1)})).await;
    error(&app.get("/api/v3/contact-groups", &creator).await, 403);
    error(&app.get(&groups_path(&group), &creator).await, 403);
    error(&app.get(&contacts_path(&group), &creator).await, 403);
    error(&app.get(&contact_path(&group, &c), &creator).await, 403);
    error(&app.get("/api/v3/contacts", &creator).await, 403);
}

#[actix_web::test]
async fn contacts_create_allows_create_but_batch_needs_contacts_import() {
    let app = spawn().await;
    let a = app.account("contacts.view,contacts.create").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "name": "Asha"})).await;
    error(&app.post(&batch_path(&group), &a.key, json!({"contacts": [{"PHONE": tz(2)}]})).await, 403);
    // Creating is neither editing nor deleting.
    error(&app.patch(&contact_path(&group, &c), &a.key, json!({"name": "Nope"})).await, 403);
    error(&app.delete(&contact_path(&group, &c), &a.key).await, 403);
    error(&app.patch(&groups_path(&group), &a.key, json!({"name": "Nope"})).await, 403);
    error(&app.delete(&groups_path(&group), &a.key).await, 403);
    assert_eq!(success(&app.get(&contact_path(&group, &c), &a.key).await, 200), c);
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 1);

    let importer_user = app.user(a.tenant, "contacts.import").await;
    let importer = app.key(a.tenant, importer_user).await;
    let data = success(&app.post(&batch_path(&group), &importer, json!({"contacts": [{"PHONE": tz(2)}]})).await, 200);
    assert_eq!(data["created"], 1);
    // Import alone neither creates one contact nor lists.
    error(&app.post(&contacts_path(&group), &importer, json!({"PHONE": tz(3)})).await, 403);
    error(&app.get(&contacts_path(&group), &importer).await, 403);
}

#[actix_web::test]
async fn contacts_edit_is_needed_to_patch_groups_and_contacts() {
    let app = spawn().await;
    let owner = app.account("all").await;
    let group = make_group(&app, &owner.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &owner.key, &group, json!({"PHONE": tz(1), "name": "Asha"})).await;
    let without_user = app.user(owner.tenant, "contacts.view,contacts.create,contacts.delete,contacts.import").await;
    let without = app.key(owner.tenant, without_user).await;
    error(&app.patch(&groups_path(&group), &without, json!({"name": "Nope"})).await, 403);
    error(&app.patch(&contact_path(&group, &c), &without, json!({"name": "Nope"})).await, 403);
    assert_eq!(success(&app.get(&groups_path(&group), &owner.key).await, 200)["name"], "G");
    assert_eq!(success(&app.get(&contact_path(&group, &c), &owner.key).await, 200)["name"], "Asha");

    let editor_user = app.user(owner.tenant, "contacts.edit").await;
    let editor = app.key(owner.tenant, editor_user).await;
    assert_eq!(success(&app.patch(&groups_path(&group), &editor, json!({"name": "G2"})).await, 200)["name"], "G2");
    assert_eq!(success(&app.patch(&contact_path(&group, &c), &editor, json!({"name": "A2"})).await, 200)["name"], "A2");
    // Editing is neither creating nor deleting.
    error(&app.post(&contacts_path(&group), &editor, json!({"PHONE": tz(2)})).await, 403);
    error(&app.delete(&contact_path(&group, &c), &editor).await, 403);
}

#[actix_web::test]
async fn contacts_delete_is_needed_to_delete_groups_and_contacts() {
    let app = spawn().await;
    let owner = app.account("all").await;
    let group = make_group(&app, &owner.key, json!({"name": "G"})).await;
    let empty = make_group(&app, &owner.key, json!({"name": "Empty"})).await;
    let c = make_contact(&app, &owner.key, &group, json!({"PHONE": tz(1)})).await;
    let without_user = app.user(owner.tenant, "contacts.view,contacts.create,contacts.edit,contacts.import").await;
    let without = app.key(owner.tenant, without_user).await;
    error(&app.delete(&contact_path(&group, &c), &without).await, 403);
    error(&app.delete(&groups_path(&empty), &without).await, 403);
    error(&app.delete(&format!("{}?force=true", groups_path(&group)), &without).await, 403);
    success(&app.get(&contact_path(&group, &c), &owner.key).await, 200);
    success(&app.get(&groups_path(&empty), &owner.key).await, 200);

    let deleter_user = app.user(owner.tenant, "contacts.delete").await;
    let deleter = app.key(owner.tenant, deleter_user).await;
    success(&app.delete(&contact_path(&group, &c), &deleter).await, 200);
    success(&app.delete(&groups_path(&empty), &deleter).await, 200);
    success(&app.delete(&groups_path(&group), &deleter).await, 200);
    let groups = success(&app.get("/api/v3/contact-groups", &owner.key).await, 200);
    assert_eq!(pagination(&groups).3, 0);
}

#[actix_web::test]
async fn a_removed_permission_is_refused_on_the_very_next_request() {
    let app = spawn().await;
    let a = app.account("contacts.view,contacts.create,contacts.edit").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    success(&app.patch(&contact_path(&group, &c), &a.key, json!({"name": "Before"})).await, 200);

    app.set_permissions(a.user, "contacts.view").await;
    error(&app.post(&contacts_path(&group), &a.key, json!({"PHONE": tz(2)})).await, 403);
    error(&app.patch(&contact_path(&group, &c), &a.key, json!({"name": "After"})).await, 403);
    error(&app.post("/api/v3/contact-groups", &a.key, json!({"name": "G2"})).await, 403);
    assert_eq!(success(&app.get(&contact_path(&group, &c), &a.key).await, 200)["name"], "Before");

    app.set_permissions(a.user, "contacts.create").await;
    error(&app.get(&contacts_path(&group), &a.key).await, 403);
    error(&app.get("/api/v3/contacts", &a.key).await, 403);

    // And granting applies just as fast.
    app.set_permissions(a.user, "contacts.view,contacts.import").await;
    success(&app.post(&batch_path(&group), &a.key, json!({"contacts": [{"PHONE": tz(2)}]})).await, 200);
    assert_eq!(pagination(&success(&app.get(&contacts_path(&group), &a.key).await, 200)).3, 2);
}

// --- tenant isolation ------------------------------------------------------------------------------------

#[actix_web::test]
async fn another_tenants_groups_and_contacts_are_404_on_every_route_and_stay_unchanged() {
    let app = spawn().await;
    let a = app.account("all").await;
    let b = app.account("all").await;
    assert_ne!(a.tenant, b.tenant);
    let ga = make_group(&app, &a.key, json!({"name": "A's group", "custom_fields": ["city"]})).await;
    let ca = make_contact(&app, &a.key, &ga, json!({"PHONE": tz(1), "name": "Asha of A", "city": "Arusha"})).await;
    let ca2 =
        make_contact(&app, &a.key, &ga, json!({"PHONE": tz(2), "name": "Baraka of A", "is_subscribed": false})).await;
    let gb = make_group(&app, &b.key, json!({"name": "B's group"})).await;
    let cb = make_contact(&app, &b.key, &gb, json!({"PHONE": tz(3), "name": "Bibi of B"})).await;
    let ga_before = success(&app.get(&groups_path(&ga), &a.key).await, 200);

    let ga_uid = ga["uid"].as_str().expect("string").to_owned();
    for g in [ga["id"].to_string(), ga_uid.clone()] {
        let base = format!("/api/v3/contact-groups/{g}");
        error(&app.get(&base, &b.key).await, 404);
        error(
            &app.patch(&base, &b.key, json!({"name": "Taken", "status": "inactive", "custom_fields": []})).await,
            404,
        );
        error(&app.delete(&base, &b.key).await, 404);
        error(&app.delete(&format!("{base}?force=true"), &b.key).await, 404);
        error(&app.get(&format!("{base}/contacts"), &b.key).await, 404);
        error(&app.get(&format!("{base}/contacts?search=asha"), &b.key).await, 404);
        error(&app.post(&format!("{base}/contacts"), &b.key, json!({"PHONE": tz(9), "name": "Intruder"})).await, 404);
        let rows = json!({"contacts": [{"PHONE": tz(1), "name": "Overwrite"}, {"PHONE": tz(9)}]});
        error(&app.post(&format!("{base}/contacts/batch"), &b.key, rows).await, 404);
        for contact in [ca["uid"].as_str().expect("string").to_owned(), ca["id"].to_string()] {
            let path = format!("{base}/contacts/{contact}");
            error(&app.get(&path, &b.key).await, 404);
            error(&app.patch(&path, &b.key, json!({"name": "Taken", "city": null, "PHONE": tz(8)})).await, 404);
            error(&app.delete(&path, &b.key).await, 404);
        }
        error(&app.get(&format!("/api/v3/contacts?group_id={g}"), &b.key).await, 404);
        error(&app.get(&format!("/api/v3/contacts?group_id={g}&q=asha"), &b.key).await, 404);
    }
    // A's contact through B's own group is not found either.
    for contact in [ca["uid"].as_str().expect("string").to_owned(), ca["id"].to_string()] {
        let path = format!("{}/{contact}", contacts_path(&gb));
        error(&app.get(&path, &b.key).await, 404);
        error(&app.patch(&path, &b.key, json!({"name": "Taken"})).await, 404);
        error(&app.delete(&path, &b.key).await, 404);
    }
    // B's lists never show A's data.
    let b_groups = success(&app.get("/api/v3/contact-groups", &b.key).await, 200);
    assert_eq!(items(&b_groups).iter().map(|g| g["id"].clone()).collect::<Vec<_>>(), vec![gb["id"].clone()]);
    let b_all = success(&app.get("/api/v3/contacts", &b.key).await, 200);
    assert_eq!(uids(&b_all), vec![cb["uid"].as_str().expect("string").to_owned()]);
    assert_eq!(pagination(&b_all).3, 1);
    for q in ["asha", "of", tz_national(1).as_str(), "255712", "Baraka"] {
        let res = success(&app.get(&format!("/api/v3/contacts?q={q}"), &b.key).await, 200);
        assert!(
            items(&res).iter().all(|c| c["uid"] != ca["uid"] && c["uid"] != ca2["uid"]),
            "B's search {q:?} shows A's contacts: {res}"
        );
    }
    let b_list = success(&app.get(&contacts_path(&gb), &b.key).await, 200);
    assert_eq!(pagination(&b_list).3, 1);

    // A sees everything exactly as before.
    let ga_after = success(&app.get(&groups_path(&ga), &a.key).await, 200);
    assert_eq!(ga_after, ga_before);
    assert_eq!(success(&app.get(&contact_path(&ga, &ca), &a.key).await, 200), ca);
    assert_eq!(success(&app.get(&contact_path(&ga, &ca2), &a.key).await, 200), ca2);
    let a_list = success(&app.get(&contacts_path(&ga), &a.key).await, 200);
    assert_eq!(pagination(&a_list).3, 2);
    let a_all = success(&app.get("/api/v3/contacts", &a.key).await, 200);
    assert_eq!(pagination(&a_all).3, 2);
    // And B's one contact was not touched by any of it.
    assert_eq!(success(&app.get(&contact_path(&gb, &cb), &b.key).await, 200), cb);
}
