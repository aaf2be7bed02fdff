//! Tenant isolation and permissions: another tenant's group or contact is not found, and a
//! key does only what its issuer may.

use contacts::{ContactId, ContactRef, GroupPatch, NewContacts};
use kernel::{ErrorKind, Permission};
use serde_json::json;

use crate::common::{World, by_id, input, with_only};

#[tokio::test]
async fn another_tenants_group_and_contacts_are_not_found() {
    let world = World::new().await;
    let owner = world.tenant("255").await;
    let stranger = world.tenant("255").await;
    let group = world.group(&owner, "Private").await;
    let contact =
        world.service.create_contact(&owner, by_id(&group), input(json!({"PHONE": "0712000001"}))).await.expect("ok");
    let contact_ref = ContactRef::Id(ContactId(contact.id));

    let service = &world.service;
    not_found(service.get_group(&stranger, by_id(&group)).await, "get group");
    not_found(service.get_group(&stranger, contacts::GroupRef::Uid(group.uid)).await, "get group by uid");
    not_found(service.update_group(&stranger, by_id(&group), GroupPatch::default()).await, "update group");
    not_found(service.delete_group(&stranger, by_id(&group), true).await, "delete group");
    not_found(service.get_contact(&stranger, by_id(&group), &contact_ref).await, "get contact");
    not_found(service.update_contact(&stranger, by_id(&group), &contact_ref, input(json!({}))).await, "update contact");
    not_found(service.delete_contact(&stranger, by_id(&group), &contact_ref).await, "delete contact");
    not_found(
        service.create_contact(&stranger, by_id(&group), input(json!({"PHONE": "0712000002"}))).await,
        "create contact",
    );
    let batch = NewContacts::new([input(json!({"PHONE": "0712000003"}))]);
    not_found(service.batch(&stranger, by_id(&group), batch).await, "batch");

    // The stranger's own group does not reach the owner's contact either.
    let theirs = world.group(&stranger, "Theirs").await;
    not_found(service.get_contact(&stranger, by_id(&theirs), &contact_ref).await, "contact through another group");
    let page = kernel::PageRequest { page: 1, per_page: 20 };
    let found = service.search_contacts(&stranger, None, None, page).await.expect("search");
    assert_eq!(found.pagination.total, 0, "search sees only the caller's contacts");

    // Nothing changed for the owner.
    assert_eq!(service.get_group(&owner, by_id(&group)).await.expect("kept").contacts_count, 1);
}

#[track_caller]
fn not_found<T>(result: Result<T, kernel::Error>, what: &str) {
    let error = result.map(|_| ()).expect_err(what);
    assert_eq!(error.kind, ErrorKind::NotFound, "{what}: {error:?}");
}

#[tokio::test]
async fn a_key_does_only_what_its_issuer_may() {
    let world = World::new().await;
    let owner = world.tenant("255").await;
    let group = world.group(&owner, "G").await;
    let viewer = with_only(&owner, &[Permission::CONTACTS_VIEW.as_str()]);
    assert_eq!(world.service.get_group(&viewer, by_id(&group)).await.expect("may view").id, group.id);
    let error = world
        .service
        .create_contact(&viewer, by_id(&group), input(json!({"PHONE": "0712000001"})))
        .await
        .expect_err("may not create");
    assert_eq!(error.kind, ErrorKind::Forbidden);
    let error = world.service.delete_group(&viewer, by_id(&group), true).await.expect_err("may not delete");
    assert_eq!(error.kind, ErrorKind::Forbidden);
    let importer = with_only(&owner, &[Permission::CONTACTS_IMPORT.as_str()]);
    let batch = NewContacts::new([input(json!({"PHONE": "0712000001"}))]);
    assert_eq!(world.service.batch(&importer, by_id(&group), batch).await.expect("may import").created, 1);
}
