//! Changing contacts: merge-only updates, and the batch's limits and partial success.

use contacts::{BatchRow, ContactRef, ContactUid, NewContacts};
use kernel::{ErrorKind, PageRequest};
use serde_json::json;

use crate::common::{World, by_id, input};

#[tokio::test]
async fn an_update_changes_only_the_members_sent() {
    let world = World::new().await;
    let caller = world.tenant("255").await;
    let group = world.group(&caller, "G").await;
    let body = input(json!({"PHONE": "0712000001", "name": "Asha", "city": "Arusha", "tier": "silver"}));
    let created = world.service.create_contact(&caller, by_id(&group), body).await.expect("ok");
    let uid: ContactUid = kernel::parse_id(&created.uid, "Contact").expect("uid");
    let change = input(json!({"tier": "gold", "city": null, "is_subscribed": "no", "name": null}));
    let updated =
        world.service.update_contact(&caller, by_id(&group), &ContactRef::Uid(uid), change).await.expect("ok");
    assert_eq!(updated.name, "Asha", "null on a named member keeps it");
    assert!(!updated.is_subscribed);
    assert_eq!(serde_json::Value::Object(updated.custom_field_values), json!({"tier": "gold"}), "null removes");
    assert_eq!(updated.full_phone_number, created.full_phone_number);

    let error = world
        .service
        .update_contact(
            &caller,
            by_id(&group),
            &ContactRef::Id(contacts::ContactId(created.id)),
            input(json!({"name": "x".repeat(192)})),
        )
        .await
        .expect_err("too long");
    assert!(error.errors.contains_key("name"), "{error:?}");
}

#[tokio::test]
async fn a_batch_holds_1_to_500_contacts() {
    let world = World::new().await;
    let caller = world.tenant("255").await;
    let group = world.group(&caller, "G").await;
    let rows = |n: u32| NewContacts::new((0..n).map(|i| input(json!({"PHONE": format!("0712{i:06}")}))));
    for n in [0, 501] {
        let error = world.service.batch(&caller, by_id(&group), rows(n)).await.expect_err("refused");
        assert_eq!(error.kind, ErrorKind::Validation);
        assert!(error.errors.contains_key("contacts"), "{n}: {error:?}");
    }
    let report = world.service.batch(&caller, by_id(&group), rows(500)).await.expect("500");
    assert_eq!((report.received, report.created), (500, 500));
    let page = PageRequest { page: 1, per_page: 20 };
    let listed = world.service.list_contacts(&caller, by_id(&group), Default::default(), page).await.expect("list");
    assert_eq!(listed.pagination.total, 500);
}

#[tokio::test]
async fn a_batch_lands_the_good_rows_and_reports_the_bad_ones() {
    let world = World::new().await;
    let caller = world.tenant("255").await;
    let group = world.group(&caller, "G").await;
    let existing = world
        .service
        .create_contact(&caller, by_id(&group), input(json!({"PHONE": "0712000001", "name": "Asha", "city": "Arusha"})))
        .await
        .expect("ok");
    let batch: NewContacts = serde_json::from_value(json!({"contacts": [
        {"PHONE": "712000001", "tier": "gold"},
        {"PHONE": "12345"},
        "not a contact",
        {"PHONE": "0712000002", "name": 5},
        {"PHONE": "0712000003"},
        {"PHONE": "0712-000-003", "name": "Repeated"}
    ]}))
    .expect("a batch body");
    assert!(matches!(batch.contacts[2], BatchRow(Err(_))), "a row that is not a contact waits for the report");
    let report = world.service.batch(&caller, by_id(&group), batch).await.expect("report");
    assert_eq!((report.received, report.created, report.updated, report.skipped, report.rejected), (6, 1, 2, 0, 3));
    let problems: Vec<(usize, Vec<&str>)> =
        report.problems.iter().map(|p| (p.index, p.errors.keys().map(String::as_str).collect())).collect();
    assert_eq!(problems, [(1, vec!["PHONE"]), (2, vec!["contact"]), (3, vec!["name"])]);
    assert_eq!(report.results[0].uid.as_deref(), Some(existing.uid.as_str()));
    assert_eq!(report.results[5].uid, report.results[4].uid, "a repeated number updates the row created earlier");

    let kept =
        world.service.get_contact(&caller, by_id(&group), &ContactRef::Id(contacts::ContactId(existing.id))).await;
    let kept = kept.expect("existing");
    assert_eq!(kept.name, "Asha");
    assert_eq!(serde_json::Value::Object(kept.custom_field_values), json!({"city": "Arusha", "tier": "gold"}));
}
