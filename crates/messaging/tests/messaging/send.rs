//! Sending: recipient limits, the tenant's calling code, and the prepaid balance.

use kernel::ErrorKind;
use messaging::SendRequest;
use messaging::send::MAX_RECIPIENTS;

use crate::common::{env, tenant};

fn to(recipient: &str) -> SendRequest {
    SendRequest { recipient: Some(recipient.into()), message: Some("Hello".into()), ..Default::default() }
}

#[tokio::test]
async fn a_send_names_at_least_one_and_at_most_ten_thousand_numbers() {
    let env = env().await;
    let caller = tenant(&env, "255", 100_000).await;

    let none = env.service.send(&caller, to(" ,; ")).await.expect_err("no recipient");
    assert_eq!(none.kind, ErrorKind::Validation);
    assert_eq!(none.errors["recipient"], ["At least one recipient is required."]);

    let many: Vec<String> = (0..=MAX_RECIPIENTS).map(|i| format!("+2557{:08}", i)).collect();
    let req = SendRequest { recipients: Some(many), message: Some("Hi".into()), ..Default::default() };
    let error = env.service.send(&caller, req).await.expect_err("too many");
    assert_eq!(error.kind, ErrorKind::Validation);
    assert_eq!(error.errors["recipients"], ["A send may name at most 10000 numbers; use a campaign for more."]);

    let invalid = env.service.send(&caller, to("12, abc")).await.expect_err("no valid number");
    assert_eq!(invalid.errors["recipient"], ["No recipient is a valid phone number."]);
}

#[tokio::test]
async fn national_numbers_take_the_tenants_calling_code() {
    let env = env().await;
    let kenya = tenant(&env, "254", 100_000).await;
    let sent = env.service.send(&kenya, to("0712345678")).await.expect("send");
    assert_eq!(sent.messages.len(), 1);
    assert_eq!(sent.messages[0].recipient, "+254712345678");

    let tanzania = tenant(&env, "255", 100_000).await;
    let sent = env.service.send(&tanzania, to("0712345678")).await.expect("send");
    assert_eq!(sent.messages[0].recipient, "+255712345678");
}

#[tokio::test]
async fn a_prepaid_balance_that_cannot_pay_refuses_the_whole_send() {
    let env = env().await;
    // one shilling (100 minor) per segment: two numbers cost 200
    let caller = tenant(&env, "255", 150).await;
    let error = env.service.send(&caller, to("0712345678, 0712345679")).await.expect_err("402");
    assert_eq!(error.kind, ErrorKind::PaymentRequired);
    let page = kernel::PageRequest { page: 1, per_page: 20 };
    let written = env.service.messages(&caller, &Default::default(), page).await.expect("list");
    assert_eq!(written.pagination.total, 0, "nothing is written when the send is refused");

    let one = env.service.send(&caller, to("0712345678")).await.expect("one is affordable");
    assert_eq!(one.messages.len(), 1);
}
