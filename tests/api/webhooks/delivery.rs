//! Delivery of outbox events: fan-out, the body, the headers and both signatures.

use serde_json::json;

use super::support::*;
use crate::sms::sms_account;

#[actix_web::test]
async fn a_sent_sms_reaches_the_receiver_signed_with_the_event_fields() {
    let app = api_tests::spawn().await;
    let sms = sms_account(&app, &format!("{MANAGER},communications.send")).await;
    let receiver = Receiver::answering(200).await;
    let (id, secret) = register(&app, sms.key(), &receiver.url(), &["message.sent", "message.delivered"]).await;

    let res = app.post(crate::sms::SEND, sms.key(), json!({"recipient": "0712345678", "message": "Habari"})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    app.run_jobs().await;

    let requests = receiver.requests().await;
    assert_eq!(requests.len(), 1, "one message.sent (the sandbox receipt comes later)");
    let request = &requests[0];
    assert_signed(request, &secret, app.clock.now());
    let body: serde_json::Value = serde_json::from_slice(&request.body).expect("a JSON body");
    assert_eq!(body["event"], "message.sent");
    assert_eq!(header(request, "x-event"), "message.sent");
    assert_eq!(header(request, "x-event-id"), body["event_id"].as_str().expect("event_id"));
    for field in
        ["message_id", "direction", "sender", "recipient", "status", "body", "media_url", "channel_type", "timestamp"]
    {
        assert!(body.get(field).is_some(), "{field} in {body}");
    }
    assert_eq!(body["recipient"], "+255712345678");
    assert_eq!(body["status"], "sent");

    let log = app.get(&format!("{WEBHOOKS}/{id}/deliveries"), sms.key()).await;
    assert_eq!(log.status, 200, "{}", log.body);
    let item = &log.data()["items"][0];
    assert_eq!(item["state"], "delivered");
    assert_eq!(item["id"], header(request, "x-delivery-id"));
    assert_eq!(item["attempts"][0]["status"], 200);
}
