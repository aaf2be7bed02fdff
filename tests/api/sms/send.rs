//! `POST /sms/send`.

use api_tests::{json, spawn};

use super::{SEND, sms_account};

#[actix_web::test]
async fn a_send_reaches_the_sandbox_is_billed_and_delivered_after_the_delay() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let res = app.post(SEND, acme.key(), json!({"recipient": "0712345678", "message": "Hello"})).await;
    assert_eq!(res.status, 201, "{:?}", res.body);
    let message = &res.data()["messages"][0];
    assert_eq!(message["recipient"], "+255712345678");
    assert_eq!(message["status"], "sent", "{message}");
    assert!(message["gateway_message_id"].as_str().is_some_and(|g| g.starts_with("sbx_")));
    assert_eq!(app.sandbox().count(), 1);
    let balance = app.get("/api/v3/balance", acme.key()).await;
    assert_eq!(balance.data()["balance_minor"], 100_000 - 100);
    app.advance(time::Duration::seconds(2)).await;
    let uid = message["uid"].as_str().expect("uid");
    let read = app.get(&format!("/api/v3/sms/{uid}"), acme.key()).await;
    assert_eq!(read.data()["status"], "delivered", "{:?}", read.body);
}
