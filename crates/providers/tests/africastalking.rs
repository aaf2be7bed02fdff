//! The Africa's Talking client against a local fake of its API (wiremock on 127.0.0.1),
//! through the real reqwest client.

use std::collections::HashMap;
use std::time::Duration;

use providers::{
    AfricasTalking, AfricasTalkingConfig, DeliveryReceipt, InboundSms, OutboundSms, ReceiptStatus, SendError,
    SendOutcome, SmsGateway,
};
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const API_KEY: &str = "atsk_test_key_0123456789";
const FORM: &str = "application/x-www-form-urlencoded";

fn gateway(server: &MockServer, timeout: Duration) -> AfricasTalking {
    let config =
        AfricasTalkingConfig { base_url: server.uri(), username: "sandbox".into(), api_key: API_KEY.into(), timeout };
    AfricasTalking::new(providers::http_client().expect("http client"), config)
}

fn sms<'a>(from: Option<&'a str>) -> OutboundSms<'a> {
    OutboundSms { reference: "msg_01", to: "+254711000111", from, body: "Your code is 1234 & more" }
}

fn answer(recipients: serde_json::Value) -> ResponseTemplate {
    answer_with_status(201, recipients)
}

fn answer_with_status(status: u16, recipients: serde_json::Value) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "SMSMessageData": { "Message": "Sent to 1/1 Total Cost: KES 0.8000", "Recipients": recipients }
    }))
}

async fn server_answering(response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST")).and(path("/version1/messaging")).respond_with(response).mount(&server).await;
    server
}

async fn send_with(response: ResponseTemplate) -> Result<SendOutcome, SendError> {
    let server = server_answering(response).await;
    gateway(&server, Duration::from_secs(5)).send(sms(None)).await
}

fn accepted_recipient() -> serde_json::Value {
    json!([{
        "statusCode": 101, "number": "+254711000111", "status": "Success",
        "cost": "KES 0.8000", "messageId": "ATXid_abc123"
    }])
}

#[tokio::test]
async fn an_accepted_message_posts_the_form_and_reads_the_id_and_cost() {
    let server = server_answering(answer(accepted_recipient())).await;
    let outcome = gateway(&server, Duration::from_secs(5)).send(sms(None)).await;
    assert_eq!(
        outcome,
        Ok(SendOutcome::Accepted {
            provider_message_id: "ATXid_abc123".into(),
            cost: Some("KES 0.8000".into()),
            receipts: Vec::new(),
        })
    );

    let requests = server.received_requests().await.expect("requests are recorded");
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method.as_str(), "POST");
    assert_eq!(request.url.path(), "/version1/messaging");
    let header = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!(header("apiKey").as_deref(), Some(API_KEY));
    assert_eq!(header("accept").as_deref(), Some("application/json"));
    assert!(header("content-type").is_some_and(|c| c.starts_with(FORM)));
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&request.body).expect("a form body");
    assert_eq!(form.get("username").map(String::as_str), Some("sandbox"));
    assert_eq!(form.get("to").map(String::as_str), Some("+254711000111"));
    assert_eq!(form.get("message").map(String::as_str), Some("Your code is 1234 & more"));
    assert!(!form.contains_key("from"), "no sender was given: {form:?}");
    assert_eq!(form.len(), 3);
}

#[tokio::test]
async fn a_sender_is_sent_as_from_and_200_is_also_accepted() {
    let server = server_answering(answer_with_status(200, accepted_recipient())).await;
    let outcome = gateway(&server, Duration::from_secs(5)).send(sms(Some("ACME"))).await;
    assert!(matches!(outcome, Ok(SendOutcome::Accepted { .. })), "{outcome:?}");
    let requests = server.received_requests().await.expect("requests are recorded");
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&requests[0].body).expect("a form body");
    assert_eq!(form.get("from").map(String::as_str), Some("ACME"));
}

#[tokio::test]
async fn processed_and_queued_are_accepted_and_a_zero_cost_is_none() {
    for code in [100, 102] {
        let outcome = send_with(answer(json!([{
            "statusCode": code, "number": "+254711000111", "status": "Queued", "cost": "0", "messageId": "ATXid_q"
        }])))
        .await;
        assert_eq!(
            outcome,
            Ok(SendOutcome::Accepted { provider_message_id: "ATXid_q".into(), cost: None, receipts: Vec::new() }),
            "statusCode {code}"
        );
    }
}

#[tokio::test]
async fn a_refused_recipient_names_its_status_and_code() {
    let outcome = send_with(answer(json!([{
        "statusCode": 403, "number": "+254711000111", "status": "InvalidPhoneNumber",
        "cost": "0", "messageId": "None"
    }])))
    .await;
    assert_eq!(outcome, Ok(SendOutcome::Refused { reason: "InvalidPhoneNumber (403)".into() }));
}

#[tokio::test]
async fn no_recipients_is_refused_with_the_message() {
    let outcome = send_with(
        ResponseTemplate::new(201)
            .set_body_json(json!({"SMSMessageData": {"Message": "InvalidSenderId", "Recipients": []}})),
    )
    .await;
    assert_eq!(outcome, Ok(SendOutcome::Refused { reason: "InvalidSenderId".into() }));
}

#[tokio::test]
async fn a_slow_answer_is_a_timeout() {
    let server = server_answering(answer(accepted_recipient()).set_delay(Duration::from_millis(600))).await;
    let outcome = gateway(&server, Duration::from_millis(200)).send(sms(None)).await;
    assert_eq!(outcome, Err(SendError::Timeout));
}

#[tokio::test]
async fn http_errors_are_status_errors_without_the_key() {
    for status in [401, 500, 503] {
        let outcome =
            send_with(ResponseTemplate::new(status).set_body_string("The supplied authentication is invalid")).await;
        assert_eq!(outcome, Err(SendError::Status { status }));
        let text = outcome.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(!text.contains(API_KEY));
    }
}

#[tokio::test]
async fn an_unreadable_answer_is_malformed() {
    for response in [
        ResponseTemplate::new(201).set_body_string("<html>gateway</html>"),
        ResponseTemplate::new(201).set_body_json(json!({"status": "ok"})),
        ResponseTemplate::new(201).set_body_json(json!({"SMSMessageData": {"Recipients": [{"statusCode": "x"}]}})),
    ] {
        let outcome = send_with(response).await;
        assert!(matches!(outcome, Err(SendError::Malformed(_))), "{outcome:?}");
    }
}

#[tokio::test]
async fn a_closed_port_is_a_transport_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let config = AfricasTalkingConfig {
        base_url: format!("http://127.0.0.1:{port}"),
        ..AfricasTalkingConfig::new("sandbox", API_KEY)
    };
    let gateway = AfricasTalking::new(providers::http_client().expect("http client"), config);
    let outcome = gateway.send(sms(None)).await;
    let Err(SendError::Transport(text)) = outcome else { panic!("expected Transport, got {outcome:?}") };
    assert!(!text.contains(API_KEY));
}

#[tokio::test]
async fn status_is_always_pending() {
    let server = MockServer::start().await;
    let outcome = gateway(&server, Duration::from_secs(1)).status("ATXid_abc123").await;
    assert_eq!(outcome, Ok(ReceiptStatus::Pending));
    assert!(server.received_requests().await.expect("requests are recorded").is_empty());
}

fn offline() -> AfricasTalking {
    let config = AfricasTalkingConfig::new("sandbox", API_KEY);
    AfricasTalking::new(providers::http_client().expect("http client"), config)
}

#[test]
fn delivery_reports_are_read() {
    let at = offline();
    let success = at
        .parse_receipt(FORM, b"id=ATXid_1&status=Success&phoneNumber=%2B254711000111&networkCode=63902&retryCount=0")
        .expect("success report");
    assert_eq!(
        success,
        DeliveryReceipt {
            provider_message_id: "ATXid_1".into(),
            status: ReceiptStatus::Delivered,
            provider_status: "Success".into(),
        }
    );

    let failed = at
        .parse_receipt(FORM, b"id=ATXid_2&status=Failed&failureReason=InsufficientCredit&retryCount=2")
        .expect("failed report");
    assert_eq!(failed.status, ReceiptStatus::Failed { reason: "InsufficientCredit".into() });
    assert_eq!(failed.provider_status, "Failed");

    let expired = at.parse_receipt(FORM, b"id=ATXid_3&status=Expired").expect("expired report");
    assert_eq!(expired.status, ReceiptStatus::Failed { reason: "Expired".into() });

    let buffered = at.parse_receipt(FORM, b"id=ATXid_4&status=Buffered&networkCode=63902").expect("buffered");
    assert_eq!(buffered.status, ReceiptStatus::Pending);
    assert_eq!(buffered.provider_status, "Buffered");

    let json_body = br#"{"id":"ATXid_5","status":"Rejected","failureReason":"DeliveryFailure","retryCount":0}"#;
    let rejected = at.parse_receipt("application/json", json_body).expect("json report");
    assert_eq!(rejected.status, ReceiptStatus::Failed { reason: "DeliveryFailure".into() });
}

#[test]
fn a_delivery_report_without_id_or_status_is_refused() {
    let at = offline();
    assert!(at.parse_receipt(FORM, b"status=Success&phoneNumber=%2B254711000111").is_err());
    assert!(at.parse_receipt(FORM, b"id=ATXid_1").is_err());
    assert!(at.parse_receipt("application/json", b"id=ATXid_1&status=Success").is_err());
}

#[test]
fn incoming_messages_are_read() {
    let at = offline();
    let body = b"date=2026-01-05T10%3A00%3A00Z&from=%2B254711000111&id=in_1&linkId=lnk_9&text=Hello+there%21&to=22384&networkCode=63902";
    assert_eq!(
        at.parse_inbound(FORM, body).expect("incoming message"),
        InboundSms {
            provider_message_id: Some("in_1".into()),
            from: "+254711000111".into(),
            to: "22384".into(),
            text: "Hello there!".into(),
        }
    );

    let empty = at.parse_inbound(FORM, b"from=%2B254711000111&to=22384&id=in_2").expect("no text");
    assert_eq!(empty.text, "");
}

#[test]
fn an_incoming_message_without_from_or_to_is_refused() {
    let at = offline();
    assert!(at.parse_inbound(FORM, b"to=22384&text=hi").is_err());
    assert!(at.parse_inbound(FORM, b"from=%2B254711000111&text=hi").is_err());
    assert!(at.parse_inbound("application/json", b"{not json").is_err());
}
