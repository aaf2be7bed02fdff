//! Numbers: the tenant's calling code for national numbers, one contact per number and group.

use kernel::ErrorKind;
use serde_json::json;

use crate::common::{World, by_id, input};

#[tokio::test]
async fn a_national_number_takes_the_tenants_calling_code() {
    let world = World::new().await;
    let kenya = world.tenant("254").await;
    let group = world.group(&kenya, "G").await;
    let contact =
        world.service.create_contact(&kenya, by_id(&group), input(json!({"PHONE": "0712345678"}))).await.expect("ok");
    assert_eq!(
        (contact.country_code.as_str(), contact.phone_number.as_str(), contact.full_phone_number.as_str()),
        ("254", "712345678", "254712345678")
    );
    assert_eq!(contact.name, "254712345678", "named after the number");
    // An explicit code wins over the tenant's.
    let body = input(json!({"PHONE": "0712345678", "country_code": 255}));
    let tz = world.service.create_contact(&kenya, by_id(&group), body).await.expect("ok");
    assert_eq!(tz.full_phone_number, "255712345678");

    let tanzania = world.tenant("255").await;
    let group = world.group(&tanzania, "G").await;
    let body = input(json!({"phone_number": 712345678}));
    let contact = world.service.create_contact(&tanzania, by_id(&group), body).await.expect("ok");
    assert_eq!(contact.full_phone_number, "255712345678");
}

#[tokio::test]
async fn a_number_is_in_a_group_once() {
    let world = World::new().await;
    let caller = world.tenant("255").await;
    let group = world.group(&caller, "G").await;
    let first =
        world.service.create_contact(&caller, by_id(&group), input(json!({"PHONE": "0712345678"}))).await.expect("ok");
    let body = input(json!({"phone_number": "712 345 678", "name": "Twin"}));
    let error = world.service.create_contact(&caller, by_id(&group), body).await.expect_err("duplicate");
    assert_eq!(error.kind, ErrorKind::Conflict, "a unique value taken");
    assert!(error.errors.contains_key("phone_number"), "named on the key it came from: {error:?}");
    assert_eq!(error.details.get("contact_uid"), Some(&json!(first.uid)));

    // Moving another contact onto the number is refused the same way.
    let other =
        world.service.create_contact(&caller, by_id(&group), input(json!({"PHONE": "0712345679"}))).await.expect("ok");
    let change = input(json!({"PHONE": "0712345678"}));
    let error = world
        .service
        .update_contact(&caller, by_id(&group), &contacts::ContactRef::Uid(uid(&other.uid)), change)
        .await
        .expect_err("duplicate");
    assert!(error.errors.contains_key("PHONE"), "{error:?}");

    // Another group holds its own contact for the number.
    let second = world.group(&caller, "Second").await;
    let twin =
        world.service.create_contact(&caller, by_id(&second), input(json!({"PHONE": "0712345678"}))).await.expect("ok");
    assert_ne!(twin.uid, first.uid);
}

#[tokio::test]
async fn a_contact_without_a_valid_number_is_refused_on_its_key() {
    let world = World::new().await;
    let caller = world.tenant("255").await;
    let group = world.group(&caller, "G").await;
    for (body, field) in [
        (json!({"name": "No number"}), "PHONE"),
        (json!({"PHONE": "12345"}), "PHONE"),
        (json!({"phone_number": "12345"}), "phone_number"),
        (json!({"PHONE": "0712345678", "country_code": "abc"}), "country_code"),
    ] {
        let error = world.service.create_contact(&caller, by_id(&group), input(body.clone())).await.expect_err("bad");
        assert!(error.errors.contains_key(field), "{body}: {error:?}");
    }
    assert_eq!(world.service.get_group(&caller, by_id(&group)).await.expect("group").contacts_count, 0);
}

fn uid(raw: &str) -> contacts::ContactUid {
    kernel::parse_id(raw, "Contact").expect("a ctc_ uid")
}
