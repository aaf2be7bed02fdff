//! Billing of sends (issue 3, Billing; docs/api.md "Segments and billing"): price per segment from
//! the rate card, one debit per send, 402 with nothing written when a prepaid wallet cannot pay,
//! refunds of refused messages, and `GET /balance`.

use api_tests::{json, spawn};

use super::support::{
    balance, e164, events, ledger, message_rows, sandbox_channel, send, set_rate, status_of, str_of, tz,
};
use super::{SEND, sms_account};

const START_BALANCE: i64 = 100_000;

fn credit() -> (String, i64) {
    ("credit".to_owned(), START_BALANCE)
}

#[actix_web::test]
async fn a_send_the_prepaid_wallet_cannot_pay_is_402_and_writes_nothing() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    set_rate(&app.pool, acme.tenant(), None, 60_000).await;
    // Two payable messages (120,000) and an invalid number that would have been a free record.
    let body = json!({"recipient": format!("{} {} nonsense", tz("0011"), tz("0012")), "message": "Hi"});
    let res = app.post(SEND, acme.key(), body).await;
    crate::framework::assert_error(&res, 402);
    assert_eq!(res.body["cost_minor"], 120_000, "{}", res.body);
    assert_eq!(res.body["balance_minor"], START_BALANCE, "{}", res.body);

    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 0, "no message, not even the invalid one");
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE);
    assert_eq!(ledger(&app.pool, acme.tenant()).await, [credit()], "no debit");
    assert!(events(&app.pool, acme.tenant()).await.is_empty(), "no event");
    assert_eq!(app.sandbox().calls(), 0);
    app.run_jobs().await;
    app.advance(time::Duration::minutes(10)).await;
    assert_eq!(app.sandbox().calls(), 0, "nothing was queued either");
    let list = app.get("/api/v3/messages", acme.key()).await;
    assert_eq!(list.data()["pagination"]["total"], 0, "{}", list.body);
}

#[actix_web::test]
async fn a_large_send_the_wallet_cannot_pay_is_402_too() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    set_rate(&app.pool, acme.tenant(), None, 10_000).await;
    let recipients: Vec<String> = (11..22).map(|n| tz(&format!("00{n}"))).collect();
    let res = app.post(SEND, acme.key(), json!({"recipients": recipients})).await;
    crate::framework::assert_error(&res, 402);
    app.run_jobs().await;
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 0);
    assert_eq!(app.sandbox().calls(), 0);
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE);
}

#[actix_web::test]
async fn a_send_costing_exactly_the_balance_goes_through_and_the_next_is_402() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    set_rate(&app.pool, acme.tenant(), None, 50_000).await;
    let messages = send(&app, acme.key(), json!({"recipient": format!("{},{}", tz("0011"), tz("0012"))})).await;
    assert_eq!(messages.len(), 2);
    assert_eq!(balance(&app, acme.key()).await, 0);
    let res = app.post(SEND, acme.key(), json!({"recipient": tz("0013")})).await;
    crate::framework::assert_error(&res, 402);
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 2);
    assert_eq!(balance(&app, acme.key()).await, 0);
}

#[actix_web::test]
async fn an_empty_wallet_can_still_write_free_records() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let res = app.post("/api/v3/sms/blacklist", acme.key(), json!({"numbers": [tz("0021")]})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    set_rate(&app.pool, acme.tenant(), None, 1_000_000).await;
    // Opted-out and invalid numbers cost nothing: no 402.
    let messages = send(&app, acme.key(), json!({"recipient": format!("{} 999", tz("0021"))})).await;
    assert_eq!(messages.iter().map(|m| m["status"].clone()).collect::<Vec<_>>(), [json!("failed"), json!("failed")]);
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE);
}

#[actix_web::test]
async fn a_send_is_debited_once_for_all_its_messages() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    // Two GSM-7 segments each.
    let text = "x".repeat(200);
    let messages =
        send(&app, acme.key(), json!({"recipients": [tz("0011"), tz("0012"), tz("0013")], "message": text})).await;
    assert!(messages.iter().all(|m| m["price_minor"] == 200), "{messages:?}");
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 600);
    assert_eq!(ledger(&app.pool, acme.tenant()).await, [credit(), ("debit".to_owned(), 600)]);
}

#[actix_web::test]
async fn a_queued_send_is_debited_when_accepted() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let recipients: Vec<String> = (11..19).map(|n| tz(&format!("00{n}"))).collect();
    let messages = send(&app, acme.key(), json!({"recipients": recipients})).await;
    assert!(messages.iter().all(|m| m["status"] == "queued"), "{messages:?}");
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 800);
    app.run_jobs().await;
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 800, "dispatch charges nothing more");
    assert_eq!(ledger(&app.pool, acme.tenant()).await, [credit(), ("debit".to_owned(), 800)]);
}

#[actix_web::test]
async fn a_refused_message_is_refunded_with_a_refund_entry() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": format!("{} {}", tz("0011"), tz("0001"))})).await;
    assert_eq!(messages[1]["recipient"], e164("0001"));
    assert_eq!(messages[1]["status"], "failed");
    // The record keeps what it was priced at; the wallet gets it back.
    assert_eq!(messages[1]["price_minor"], 100);
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 100);
    assert_eq!(
        ledger(&app.pool, acme.tenant()).await,
        [credit(), ("debit".to_owned(), 200), ("refund".to_owned(), 100)]
    );
    // Jobs running later change nothing: no second refund.
    app.advance(time::Duration::seconds(301)).await;
    app.advance(time::Duration::seconds(3601)).await;
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 100);
    assert_eq!(ledger(&app.pool, acme.tenant()).await.len(), 3);
}

#[actix_web::test]
async fn a_refused_message_of_a_queued_send_is_refunded_by_the_job() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let mut recipients: Vec<String> = (11..17).map(|n| tz(&format!("00{n}"))).collect();
    recipients.push(tz("0001"));
    send(&app, acme.key(), json!({"recipients": recipients})).await;
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 700);
    app.run_jobs().await;
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 600);
    assert_eq!(ledger(&app.pool, acme.tenant()).await.last(), Some(&("refund".to_owned(), 100)));
}

/// docs/api.md: "a failed delivery receipt is not refunded (the provider charged for the attempt)".
#[actix_web::test]
async fn a_failed_delivery_receipt_is_not_refunded() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0003")})).await;
    app.advance(time::Duration::seconds(2)).await;
    assert_eq!(status_of(&app, acme.key(), &messages[0]).await, "failed");
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 100);
    assert!(ledger(&app.pool, acme.tenant()).await.iter().all(|(kind, _)| kind != "refund"));
}

#[actix_web::test]
async fn the_longest_matching_prefix_sets_the_price_then_the_account_default() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await; // default (no prefix) 100
    set_rate(&app.pool, acme.tenant(), Some("255"), 300).await;
    set_rate(&app.pool, acme.tenant(), Some("+2557"), 500).await;
    let cases = [(tz("0011"), e164("0011"), 500), ("0652340011".to_owned(), "+255652340011".to_owned(), 300)];
    let mut spent = 0;
    for (input, number, price) in cases.iter().cloned().chain([("+254712345678".into(), "+254712345678".into(), 100)]) {
        let messages = send(&app, acme.key(), json!({"recipient": input, "message": "Hi"})).await;
        assert_eq!((messages[0]["recipient"].clone(), messages[0]["status"].clone()), (json!(number), json!("sent")));
        assert_eq!(messages[0]["price_minor"], price, "{number}");
        spent += price;
    }
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - spent);
    // Several numbers of one send are each priced by their own prefix, then debited together.
    let messages = send(
        &app,
        acme.key(),
        json!({"recipient": format!("{} 0652340012 +254712345679", tz("0012")), "message": "Hi"}),
    )
    .await;
    let prices: Vec<_> = messages.iter().map(|m| m["price_minor"].clone()).collect();
    assert_eq!(prices, [json!(500), json!(300), json!(100)]);
    assert_eq!(ledger(&app.pool, acme.tenant()).await.last(), Some(&("debit".to_owned(), 900)));
    // Two segments double each price.
    let messages = send(&app, acme.key(), json!({"recipient": tz("0013"), "message": "y".repeat(161)})).await;
    assert_eq!(messages[0]["price_minor"], 1000);
}

#[actix_web::test]
async fn an_account_without_rates_pays_the_service_default() {
    let app = spawn().await;
    let account = app.account("all").await;
    sandbox_channel(&app.pool, account.tenant, "main", None).await;
    let mut conn = app.conn().await;
    accounts::wallet::credit(&mut conn, account.tenant, 10_000, None).await.expect("credit");
    drop(conn);
    let messages = send(&app, &account.key, json!({"recipient": format!("{} {}", tz("0011"), tz("0012"))})).await;
    assert!(messages.iter().all(|m| m["price_minor"] == 2_000), "{messages:?}");
    assert_eq!(balance(&app, &account.key).await, 6_000);
    // A prefix rate applies to its numbers only; others still pay the service default.
    set_rate(&app.pool, account.tenant, Some("254"), 700).await;
    let messages = send(&app, &account.key, json!({"recipient": format!("+254712345678 {}", tz("0013"))})).await;
    let prices: Vec<_> = messages.iter().map(|m| m["price_minor"].clone()).collect();
    assert_eq!(prices, [json!(700), json!(2_000)]);
    assert_eq!(balance(&app, &account.key).await, 3_300);
}

#[actix_web::test]
async fn the_balance_follows_every_debit_and_refund() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let res = app.get("/api/v3/balance", acme.key()).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(
        (res.data()["balance_minor"].clone(), res.data()["currency"].clone()),
        (json!(START_BALANCE), json!("TZS"))
    );
    send(&app, acme.key(), json!({"recipient": tz("0011")})).await;
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 100);
    send(&app, acme.key(), json!({"recipient": tz("0001")})).await;
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 100);
    send(&app, acme.key(), json!({"recipient": format!("{} {}", tz("0012"), tz("0001"))})).await;
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 200);
    let ledger = ledger(&app.pool, acme.tenant()).await;
    let net: i64 = ledger.iter().map(|(k, a)| if k == "debit" { -a } else { *a }).sum();
    assert_eq!(net, balance(&app, acme.key()).await, "the ledger explains the balance: {ledger:?}");
    let refused = send(&app, acme.key(), json!({"recipient": tz("0001")})).await;
    assert!(str_of(&refused[0], "error_message").to_lowercase().contains("refused"));
}

/// docs/api.md: "Postpaid wallets may go below zero."
#[actix_web::test]
async fn a_postpaid_wallet_may_go_below_zero() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    api_tests::sql_exec(
        &app.pool,
        &format!("UPDATE wallets SET billing_mode = 'postpaid' WHERE tenant_id = {}", acme.tenant().0),
    )
    .await;
    set_rate(&app.pool, acme.tenant(), None, 60_000).await;
    let messages = send(&app, acme.key(), json!({"recipient": format!("{} {}", tz("0011"), tz("0012"))})).await;
    assert_eq!(messages.len(), 2);
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 120_000);
}
