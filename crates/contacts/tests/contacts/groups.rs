//! Group rules: names, custom field definitions, patches, and the delete rule.

use contacts::{FieldInput, GroupPatch, GroupRef, NewGroup};
use kernel::{ErrorKind, Patch};
use serde_json::json;

use crate::common::{World, by_id, input};

#[tokio::test]
async fn a_group_name_is_required_and_at_most_191_characters() {
    let world = World::new().await;
    let caller = world.tenant("255").await;
    for name in ["", "   ", &"x".repeat(192)] {
        let error = world
            .service
            .create_group(&caller, NewGroup { name: name.into(), custom_fields: None })
            .await
            .expect_err("refused");
        assert_eq!(error.kind, ErrorKind::Validation);
        assert!(error.errors.contains_key("name"), "{error:?}");
    }
    let longest = world.group(&caller, &"é".repeat(191)).await;
    assert_eq!(longest.name.chars().count(), 191);
}

#[tokio::test]
async fn custom_field_definitions_are_checked_all_at_once() {
    let world = World::new().await;
    let caller = world.tenant("255").await;
    let fields: Vec<FieldInput> =
        serde_json::from_value(json!(["city", {"key": "bad key"}, {"key": "city"}, {"key": "n", "type": "colour"}]))
            .expect("definitions");
    let error = world
        .service
        .create_group(&caller, NewGroup { name: "G".into(), custom_fields: Some(fields) })
        .await
        .expect_err("refused");
    let fields: Vec<&str> = error.errors.keys().map(String::as_str).collect();
    assert_eq!(fields, ["custom_fields[1].key", "custom_fields[2].key", "custom_fields[3].type"]);

    let fields =
        serde_json::from_value(json!(["city", {"key": "tier", "label": "Tier", "type": "number"}])).expect("ok");
    let group = world
        .service
        .create_group(&caller, NewGroup { name: "G".into(), custom_fields: Some(fields) })
        .await
        .expect("ok");
    assert_eq!(
        serde_json::to_value(&group.custom_fields).expect("json"),
        json!([{"key": "city", "label": "city", "type": "text"}, {"key": "tier", "label": "Tier", "type": "number"}])
    );
}

#[tokio::test]
async fn a_patch_changes_only_what_is_sent_and_null_removes_the_definitions() {
    let world = World::new().await;
    let caller = world.tenant("255").await;
    let fields = serde_json::from_value(json!(["city"])).expect("ok");
    let group = world
        .service
        .create_group(&caller, NewGroup { name: "Old".into(), custom_fields: Some(fields) })
        .await
        .expect("ok");
    let patch = GroupPatch { name: Some("New".into()), ..GroupPatch::default() };
    let renamed = world.service.update_group(&caller, by_id(&group), patch).await.expect("renamed");
    assert_eq!((renamed.name.as_str(), renamed.status.as_str()), ("New", "active"));
    assert_eq!(renamed.custom_fields, group.custom_fields, "kept when left out");

    let patch = GroupPatch { status: Some("archived".into()), ..GroupPatch::default() };
    let error = world.service.update_group(&caller, by_id(&group), patch).await.expect_err("refused");
    assert!(error.errors.contains_key("status"), "{error:?}");

    let patch = GroupPatch { status: Some("inactive".into()), custom_fields: Patch::Null, ..GroupPatch::default() };
    let changed = world.service.update_group(&caller, GroupRef::Uid(group.uid), patch).await.expect("changed");
    assert_eq!(changed.status, "inactive");
    assert!(changed.custom_fields.is_empty(), "null removes the definitions");
}

#[tokio::test]
async fn a_group_with_contacts_is_deleted_only_with_force() {
    let world = World::new().await;
    let caller = world.tenant("255").await;
    let group = world.group(&caller, "G").await;
    world.service.create_contact(&caller, by_id(&group), input(json!({"PHONE": "0712000001"}))).await.expect("ok");

    let error = world.service.delete_group(&caller, by_id(&group), false).await.expect_err("not empty");
    assert_eq!(error.kind, ErrorKind::Conflict);
    assert_eq!(error.details.get("count"), Some(&json!(1)), "{error:?}");
    assert_eq!(world.service.get_group(&caller, by_id(&group)).await.expect("still there").contacts_count, 1);

    let deleted = world.service.delete_group(&caller, by_id(&group), true).await.expect("forced");
    assert_eq!((deleted.deleted, deleted.contacts_deleted), (true, 1));
    let error = world.service.get_group(&caller, by_id(&group)).await.expect_err("gone");
    assert_eq!(error.kind, ErrorKind::NotFound);

    let empty = world.group(&caller, "Empty").await;
    assert_eq!(world.service.delete_group(&caller, by_id(&empty), false).await.expect("empty").contacts_deleted, 0);
}
