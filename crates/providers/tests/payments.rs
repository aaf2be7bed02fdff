//! The M-Pesa (Daraja) client against a local fake of its API (wiremock on 127.0.0.1), through
//! the real reqwest client.

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use providers::{
    MobileMoney, Mpesa, MpesaConfig, PushCallback, PushOutcome, PushRequest, PushResult, RefundOutcome, SendError,
};
use serde_json::{Value, json};
use wiremock::matchers::{basic_auth, bearer_token, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const CONSUMER_KEY: &str = "ck_test_0123";
const CONSUMER_SECRET: &str = "cs_test_secret_4567";
const SHORTCODE: &str = "174379";
const PASSKEY: &str = "bfb279f9aa9bdbcf158e97dd71a467cd2e0c893059b10f78e6b72ada1ed2c919";
const TOKEN_PATH: &str = "/oauth/v1/generate";
const PUSH_PATH: &str = "/mpesa/stkpush/v1/processrequest";
const QUERY_PATH: &str = "/mpesa/stkpushquery/v1/query";
const REVERSAL_PATH: &str = "/mpesa/reversal/v1/request";
const CALLBACK: &str = "https://shop.example.test/hooks/mpesa";
const RESULT_URL: &str = "https://shop.example.test/hooks/mpesa/reversal";

fn config(server: &MockServer, timeout: Duration) -> MpesaConfig {
    MpesaConfig {
        base_url: server.uri(),
        consumer_key: CONSUMER_KEY.into(),
        consumer_secret: CONSUMER_SECRET.into(),
        shortcode: SHORTCODE.into(),
        passkey: PASSKEY.into(),
        initiator_name: "testapi".into(),
        security_credential: "encrypted_credential==".into(),
        result_url: RESULT_URL.into(),
        timeout,
    }
}

fn mpesa(server: &MockServer) -> Mpesa {
    Mpesa::new(providers::http_client().expect("http client"), config(server, Duration::from_secs(5)))
}

fn offline() -> Mpesa {
    let config = MpesaConfig {
        base_url: "http://127.0.0.1:9".into(),
        consumer_key: CONSUMER_KEY.into(),
        consumer_secret: CONSUMER_SECRET.into(),
        shortcode: SHORTCODE.into(),
        passkey: PASSKEY.into(),
        initiator_name: "testapi".into(),
        security_credential: "c".into(),
        result_url: String::new(),
        timeout: Duration::from_secs(1),
    };
    Mpesa::new(providers::http_client().expect("http client"), config)
}

fn request(amount_minor: i64) -> PushRequest<'static> {
    PushRequest {
        reference: "PAY-20261207-000042",
        phone: "+254708374149",
        amount_minor,
        currency: "KES",
        description: "Two bags of maize flour",
        callback_url: CALLBACK,
    }
}

fn token_answer(token: &str, expires_in: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({ "access_token": token, "expires_in": expires_in }))
}

/// A server that hands out `tok_1`, valid for an hour, to our key and secret only.
async fn server_with_token() -> MockServer {
    let server = MockServer::start().await;
    mount_token(&server, token_answer("tok_1", "3599")).await;
    server
}

async fn mount_token(server: &MockServer, answer: ResponseTemplate) {
    Mock::given(method("GET"))
        .and(path(TOKEN_PATH))
        .and(query_param("grant_type", "client_credentials"))
        .and(basic_auth(CONSUMER_KEY, CONSUMER_SECRET))
        .respond_with(answer)
        .mount(server)
        .await;
}

async fn mount_post(server: &MockServer, at: &str, token: &str, answer: ResponseTemplate) {
    Mock::given(method("POST")).and(path(at)).and(bearer_token(token)).respond_with(answer).mount(server).await;
}

fn accepted_push() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "MerchantRequestID": "29115-34620561-1",
        "CheckoutRequestID": "ws_CO_191220191020363925",
        "ResponseCode": "0",
        "ResponseDescription": "Success. Request accepted for processing",
        "CustomerMessage": "Success. Request accepted for processing"
    }))
}

fn daraja_error(status: u16, code: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "requestId": "16813-1590513-1", "errorCode": code, "errorMessage": message
    }))
}

async fn requests_to(server: &MockServer, at: &str) -> Vec<wiremock::Request> {
    let all = server.received_requests().await.expect("requests are recorded");
    all.into_iter().filter(|r| r.url.path() == at).collect()
}

fn json_body(request: &wiremock::Request) -> Value {
    serde_json::from_slice(&request.body).expect("a JSON body")
}

fn header(request: &wiremock::Request, name: &str) -> Option<String> {
    request.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// Checks a request's Password against its own Timestamp, and the Timestamp against Nairobi's
/// clock (UTC+3) now.
fn assert_password_and_timestamp(body: &Value) {
    let timestamp = body["Timestamp"].as_str().expect("a Timestamp");
    assert_eq!(timestamp.len(), 14, "{timestamp}");
    assert!(timestamp.bytes().all(|b| b.is_ascii_digit()), "{timestamp}");
    let password = body["Password"].as_str().expect("a Password");
    let decoded = base64::engine::general_purpose::STANDARD.decode(password).expect("base64");
    assert_eq!(String::from_utf8(decoded).expect("text"), format!("{SHORTCODE}{PASSKEY}{timestamp}"));

    let nairobi = time::OffsetDateTime::from(SystemTime::now()).to_offset(time::macros::offset!(+3));
    let format = time::macros::format_description!("[year][month][day][hour][minute][second]");
    let sent =
        time::PrimitiveDateTime::parse(timestamp, &format).expect("YYYYMMDDHHmmss").assume_offset(nairobi.offset());
    assert!((nairobi - sent).whole_seconds().abs() < 120, "{timestamp} is not Nairobi's time now ({nairobi})");
}

// --- the token ---

#[tokio::test]
async fn the_token_is_fetched_once_and_reused_across_pushes() {
    let server = server_with_token().await;
    mount_post(&server, PUSH_PATH, "tok_1", accepted_push()).await;
    let mpesa = mpesa(&server);
    for _ in 0..2 {
        let outcome = mpesa.push(request(150_000)).await;
        assert!(matches!(outcome, Ok(PushOutcome::Accepted { .. })), "{outcome:?}");
    }
    let tokens = requests_to(&server, TOKEN_PATH).await;
    assert_eq!(tokens.len(), 1, "one token for both pushes");
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{CONSUMER_KEY}:{CONSUMER_SECRET}"));
    assert_eq!(header(&tokens[0], "authorization"), Some(format!("Basic {basic}")));
    let pushes = requests_to(&server, PUSH_PATH).await;
    assert_eq!(pushes.len(), 2);
    assert!(pushes.iter().all(|p| header(p, "authorization").as_deref() == Some("Bearer tok_1")));
}

#[tokio::test]
async fn a_token_about_to_expire_is_not_reused() {
    let server = MockServer::start().await;
    mount_token(&server, token_answer("tok_1", "30")).await;
    mount_post(&server, PUSH_PATH, "tok_1", accepted_push()).await;
    let mpesa = mpesa(&server);
    mpesa.push(request(100)).await.expect("first push");
    mpesa.push(request(100)).await.expect("second push");
    assert_eq!(requests_to(&server, TOKEN_PATH).await.len(), 2);
}

#[tokio::test]
async fn a_refused_token_is_replaced_once() {
    let server = MockServer::start().await;
    // the first token Daraja hands out, it then refuses; the second is good
    Mock::given(method("GET"))
        .and(path(TOKEN_PATH))
        .respond_with(token_answer("tok_old", "3599"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    mount_token(&server, token_answer("tok_new", "3599")).await;
    mount_post(&server, PUSH_PATH, "tok_old", ResponseTemplate::new(401)).await;
    mount_post(&server, PUSH_PATH, "tok_new", accepted_push()).await;

    let mpesa = mpesa(&server);
    let outcome = mpesa.push(request(100)).await;
    assert!(matches!(outcome, Ok(PushOutcome::Accepted { .. })), "{outcome:?}");
    assert_eq!(requests_to(&server, TOKEN_PATH).await.len(), 2);
    assert_eq!(requests_to(&server, PUSH_PATH).await.len(), 2);

    // the new token is kept
    mpesa.push(request(100)).await.expect("third push");
    assert_eq!(requests_to(&server, TOKEN_PATH).await.len(), 2);
}

#[tokio::test]
async fn darajas_invalid_token_error_is_a_refused_token_too() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(TOKEN_PATH))
        .respond_with(token_answer("tok_old", "3599"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    mount_token(&server, token_answer("tok_new", "3599")).await;
    mount_post(&server, PUSH_PATH, "tok_old", daraja_error(404, "404.001.03", "Invalid Access Token")).await;
    mount_post(&server, PUSH_PATH, "tok_new", accepted_push()).await;
    let outcome = mpesa(&server).push(request(100)).await;
    assert!(matches!(outcome, Ok(PushOutcome::Accepted { .. })), "{outcome:?}");
}

#[tokio::test]
async fn a_token_refused_twice_is_a_status_error_after_one_retry() {
    let server = server_with_token().await;
    mount_post(&server, PUSH_PATH, "tok_1", ResponseTemplate::new(401)).await;
    let outcome = mpesa(&server).push(request(100)).await;
    assert_eq!(outcome, Err(SendError::Status { status: 401 }));
    assert_eq!(requests_to(&server, PUSH_PATH).await.len(), 2, "retried once, not more");
    assert_eq!(requests_to(&server, TOKEN_PATH).await.len(), 2);
}

#[tokio::test]
async fn a_refused_key_is_a_status_error_and_an_odd_token_answer_malformed() {
    let server = MockServer::start().await;
    mount_token(&server, ResponseTemplate::new(400).set_body_json(json!({"resultCode": "999991"}))).await;
    let outcome = mpesa(&server).push(request(100)).await;
    assert_eq!(outcome, Err(SendError::Status { status: 400 }));
    assert!(requests_to(&server, PUSH_PATH).await.is_empty());

    for answer in
        [token_answer("tok", "soon"), token_answer("", "3599"), ResponseTemplate::new(200).set_body_string("<html>")]
    {
        let server = MockServer::start().await;
        mount_token(&server, answer).await;
        let outcome = mpesa(&server).push(request(100)).await;
        assert!(matches!(outcome, Err(SendError::Malformed(_))), "{outcome:?}");
    }
}

// --- push ---

#[tokio::test]
async fn the_push_body_is_darajas() {
    let server = server_with_token().await;
    mount_post(&server, PUSH_PATH, "tok_1", accepted_push()).await;
    mpesa(&server).push(request(150_000)).await.expect("push");

    let pushes = requests_to(&server, PUSH_PATH).await;
    let [push] = &pushes[..] else { panic!("one push, got {}", pushes.len()) };
    assert!(header(push, "content-type").is_some_and(|c| c.starts_with("application/json")));
    let body = json_body(push);
    assert_password_and_timestamp(&body);
    assert_eq!(body["BusinessShortCode"], json!(SHORTCODE));
    assert_eq!(body["TransactionType"], json!("CustomerPayBillOnline"));
    assert_eq!(body["Amount"], json!(1500), "whole shillings");
    assert_eq!(body["PartyA"], json!("254708374149"));
    assert_eq!(body["PartyB"], json!(SHORTCODE));
    assert_eq!(body["PhoneNumber"], json!("254708374149"));
    assert_eq!(body["CallBackURL"], json!(CALLBACK));
    assert_eq!(body["AccountReference"], json!("PAY-20261207"), "cut to 12");
    assert_eq!(body["TransactionDesc"], json!("Two bags of m"), "cut to 13");
    assert_eq!(body.as_object().map(|o| o.len()), Some(11), "{body}");
}

#[tokio::test]
async fn an_accepted_push_gives_the_checkout_request_id() {
    let server = server_with_token().await;
    mount_post(&server, PUSH_PATH, "tok_1", accepted_push()).await;
    assert_eq!(
        mpesa(&server).push(request(100)).await,
        Ok(PushOutcome::Accepted { checkout_request_id: "ws_CO_191220191020363925".into(), answer_after: None })
    );
}

#[tokio::test]
async fn a_push_with_cents_or_another_currency_is_refused_without_calling() {
    let server = server_with_token().await;
    mount_post(&server, PUSH_PATH, "tok_1", accepted_push()).await;
    let mpesa = mpesa(&server);
    let cents = mpesa.push(request(150_050)).await;
    assert!(matches!(&cents, Ok(PushOutcome::Refused { reason }) if reason.contains("whole")), "{cents:?}");
    let zero = mpesa.push(request(0)).await;
    assert!(matches!(zero, Ok(PushOutcome::Refused { .. })), "{zero:?}");
    let tzs = mpesa.push(PushRequest { currency: "TZS", ..request(100) }).await;
    assert!(matches!(&tzs, Ok(PushOutcome::Refused { reason }) if reason.contains("TZS")), "{tzs:?}");
    assert!(server.received_requests().await.expect("requests are recorded").is_empty());
}

#[tokio::test]
async fn a_nonzero_response_code_is_refused_in_darajas_words() {
    let server = server_with_token().await;
    let answer = ResponseTemplate::new(200).set_body_json(json!({
        "MerchantRequestID": "29115-34620561-1", "CheckoutRequestID": "",
        "ResponseCode": "1", "ResponseDescription": "Unable to lock subscriber", "CustomerMessage": ""
    }));
    mount_post(&server, PUSH_PATH, "tok_1", answer).await;
    assert_eq!(
        mpesa(&server).push(request(100)).await,
        Ok(PushOutcome::Refused { reason: "Unable to lock subscriber (1)".into() })
    );
}

#[tokio::test]
async fn a_400_error_is_refused_in_darajas_words() {
    let server = server_with_token().await;
    mount_post(&server, PUSH_PATH, "tok_1", daraja_error(400, "400.002.02", "Bad Request - Invalid PhoneNumber")).await;
    let outcome = mpesa(&server).push(request(100)).await;
    let Ok(PushOutcome::Refused { reason }) = outcome else { panic!("refused, got {outcome:?}") };
    assert!(reason.contains("Bad Request - Invalid PhoneNumber"), "{reason}");
    assert!(reason.contains("400.002.02"), "{reason}");
}

#[tokio::test]
async fn server_errors_are_status_errors() {
    for (status, answer) in [
        (503, ResponseTemplate::new(503).set_body_string("upstream down")),
        (500, daraja_error(500, "500.001.1001", "Unable to lock subscriber, a transaction is already in process")),
        (400, ResponseTemplate::new(400).set_body_string("not Daraja's shape")),
    ] {
        let server = server_with_token().await;
        mount_post(&server, PUSH_PATH, "tok_1", answer).await;
        let outcome = mpesa(&server).push(request(100)).await;
        assert_eq!(outcome, Err(SendError::Status { status }));
    }
}

#[tokio::test]
async fn a_slow_answer_is_a_timeout() {
    let server = server_with_token().await;
    mount_post(&server, PUSH_PATH, "tok_1", accepted_push().set_delay(Duration::from_millis(800))).await;
    let mpesa = Mpesa::new(providers::http_client().expect("http client"), config(&server, Duration::from_millis(200)));
    assert_eq!(mpesa.push(request(100)).await, Err(SendError::Timeout));
}

#[tokio::test]
async fn an_unreadable_answer_is_malformed() {
    for answer in [
        ResponseTemplate::new(200).set_body_string("<html>gateway</html>"),
        ResponseTemplate::new(200).set_body_json(json!({"ResponseCode": "0"})),
    ] {
        let server = server_with_token().await;
        mount_post(&server, PUSH_PATH, "tok_1", answer).await;
        let outcome = mpesa(&server).push(request(100)).await;
        assert!(matches!(outcome, Err(SendError::Malformed(_))), "{outcome:?}");
    }
}

#[tokio::test]
async fn a_closed_port_is_a_transport_error_without_secrets() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let config = MpesaConfig {
        base_url: format!("http://127.0.0.1:{port}"),
        ..config(&MockServer::start().await, Duration::from_secs(2))
    };
    let outcome = Mpesa::new(providers::http_client().expect("http client"), config).push(request(100)).await;
    let Err(SendError::Transport(text)) = outcome else { panic!("expected Transport, got {outcome:?}") };
    assert!(!text.contains(CONSUMER_SECRET) && !text.contains(PASSKEY), "{text}");
}

// --- query ---

fn query_answer(result_code: &str, desc: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "ResponseCode": "0",
        "ResponseDescription": "The service request has been accepted successsfully",
        "MerchantRequestID": "22205-34066-1",
        "CheckoutRequestID": "ws_CO_13012021093521236557",
        "ResultCode": result_code,
        "ResultDesc": desc
    }))
}

async fn query_with(answer: ResponseTemplate) -> (Result<PushResult, SendError>, MockServer) {
    let server = server_with_token().await;
    mount_post(&server, QUERY_PATH, "tok_1", answer).await;
    (mpesa(&server).query("ws_CO_13012021093521236557").await, server)
}

#[tokio::test]
async fn the_query_body_is_darajas_and_a_paid_answer_gives_the_checkout_id_as_receipt() {
    let (result, server) = query_with(query_answer("0", "The service request is processed successfully.")).await;
    assert_eq!(
        result,
        Ok(PushResult::Paid { receipt: "ws_CO_13012021093521236557".into(), amount_minor: None, phone: None })
    );
    let queries = requests_to(&server, QUERY_PATH).await;
    let body = json_body(&queries[0]);
    assert_password_and_timestamp(&body);
    assert_eq!(body["BusinessShortCode"], json!(SHORTCODE));
    assert_eq!(body["CheckoutRequestID"], json!("ws_CO_13012021093521236557"));
    assert_eq!(body.as_object().map(|o| o.len()), Some(4), "{body}");
}

#[tokio::test]
async fn query_result_codes_are_mapped() {
    let failed = |code: &str, reason: &str| PushResult::Failed { code: code.into(), reason: reason.into() };
    let cases = [
        (
            "1",
            "The balance is insufficient for the transaction.",
            failed("1", "The balance is insufficient for the transaction."),
        ),
        ("2001", "The initiator information is invalid.", failed("2001", "The initiator information is invalid.")),
        (
            "1032",
            "Request cancelled by user",
            PushResult::Cancelled { code: "1032".into(), reason: "Request cancelled by user".into() },
        ),
        (
            "1037",
            "DS timeout user cannot be reached",
            PushResult::Expired { code: "1037".into(), reason: "DS timeout user cannot be reached".into() },
        ),
        (
            "1019",
            "Transaction has expired",
            PushResult::Expired { code: "1019".into(), reason: "Transaction has expired".into() },
        ),
        (
            "1025",
            "An error occurred while sending a push request",
            failed("1025", "An error occurred while sending a push request"),
        ),
        ("4999", "The transaction is still under processing", PushResult::Pending),
    ];
    for (code, desc, expected) in cases {
        let (result, _server) = query_with(query_answer(code, desc)).await;
        assert_eq!(result, Ok(expected), "ResultCode {code}");
    }
    // a number where Daraja usually writes text reads the same
    let numeric =
        ResponseTemplate::new(200).set_body_json(json!({"ResponseCode": 0, "ResultCode": 1032, "ResultDesc": "x"}));
    assert!(matches!(query_with(numeric).await.0, Ok(PushResult::Cancelled { .. })));
}

#[tokio::test]
async fn a_query_while_the_payer_has_not_answered_is_pending() {
    let (result, _server) = query_with(daraja_error(500, "500.001.1001", "The transaction is being processed")).await;
    assert_eq!(result, Ok(PushResult::Pending));
}

#[tokio::test]
async fn other_query_errors_are_errors_not_results() {
    let (result, _server) = query_with(daraja_error(500, "500.003.02", "System is busy")).await;
    assert_eq!(result, Err(SendError::Status { status: 500 }));
    let (result, _server) =
        query_with(daraja_error(400, "400.002.02", "Bad Request - Invalid CheckoutRequestID")).await;
    assert_eq!(result, Err(SendError::Status { status: 400 }));
    let without_result =
        ResponseTemplate::new(200).set_body_json(json!({"ResponseCode": "1", "ResponseDescription": "failed"}));
    let (result, _server) = query_with(without_result).await;
    assert!(matches!(result, Err(SendError::Malformed(_))), "{result:?}");
}

// --- reversal ---

fn reversal_answer(code: &str, description: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "OriginatorConversationID": "f1e2-4b95-a71d-b30d3cdbb7a7735297",
        "ConversationID": "AG_20210706_20106e9209f64bebd05b",
        "ResponseCode": code,
        "ResponseDescription": description
    }))
}

#[tokio::test]
async fn an_accepted_reversal_posts_darajas_body_and_gives_the_conversation_id() {
    let server = server_with_token().await;
    mount_post(&server, REVERSAL_PATH, "tok_1", reversal_answer("0", "Accept the service request successfully.")).await;
    let outcome = mpesa(&server).refund("NLJ7RT61SV", 50_000, "REF-20261207-000007").await;
    assert_eq!(outcome, Ok(RefundOutcome::Accepted { provider_reference: "AG_20210706_20106e9209f64bebd05b".into() }));

    let reversals = requests_to(&server, REVERSAL_PATH).await;
    let body = json_body(&reversals[0]);
    assert_eq!(body["Initiator"], json!("testapi"));
    assert_eq!(body["SecurityCredential"], json!("encrypted_credential=="));
    assert_eq!(body["CommandID"], json!("TransactionReversal"));
    assert_eq!(body["TransactionID"], json!("NLJ7RT61SV"));
    assert_eq!(body["Amount"], json!(500));
    assert_eq!(body["ReceiverParty"], json!(SHORTCODE));
    assert_eq!(body["RecieverIdentifierType"], json!("11"));
    assert_eq!(body["ResultURL"], json!(RESULT_URL));
    assert_eq!(body["QueueTimeOutURL"], json!(RESULT_URL));
    assert_eq!(body["Occasion"], json!("REF-20261207-000007"));
    assert!(body["Remarks"].as_str().is_some_and(|r| !r.is_empty() && r.len() <= 100), "{body}");
}

#[tokio::test]
async fn refused_reversals_say_why() {
    let server = server_with_token().await;
    mount_post(&server, REVERSAL_PATH, "tok_1", reversal_answer("2001", "The initiator information is invalid.")).await;
    assert_eq!(
        mpesa(&server).refund("NLJ7RT61SV", 100, "REF-1").await,
        Ok(RefundOutcome::Refused { reason: "The initiator information is invalid. (2001)".into() })
    );

    let server = server_with_token().await;
    mount_post(&server, REVERSAL_PATH, "tok_1", daraja_error(400, "400.002.02", "Bad Request - Invalid Amount")).await;
    let outcome = mpesa(&server).refund("NLJ7RT61SV", 100, "REF-1").await;
    assert!(
        matches!(&outcome, Ok(RefundOutcome::Refused { reason }) if reason.contains("Invalid Amount")),
        "{outcome:?}"
    );

    let server = server_with_token().await;
    mount_post(&server, REVERSAL_PATH, "tok_1", ResponseTemplate::new(502)).await;
    assert_eq!(mpesa(&server).refund("NLJ7RT61SV", 100, "REF-1").await, Err(SendError::Status { status: 502 }));
}

#[tokio::test]
async fn a_reversal_with_cents_is_refused_without_calling() {
    let server = server_with_token().await;
    let outcome = mpesa(&server).refund("NLJ7RT61SV", 150, "REF-1").await;
    assert!(matches!(&outcome, Ok(RefundOutcome::Refused { reason }) if reason.contains("whole")), "{outcome:?}");
    assert!(server.received_requests().await.expect("requests are recorded").is_empty());
}

#[tokio::test]
async fn without_a_result_url_reversal_results_go_to_the_push_callback() {
    let server = server_with_token().await;
    mount_post(&server, PUSH_PATH, "tok_1", accepted_push()).await;
    mount_post(&server, REVERSAL_PATH, "tok_1", reversal_answer("0", "Accepted")).await;
    let config = MpesaConfig { result_url: String::new(), ..config(&server, Duration::from_secs(5)) };
    let mpesa = Mpesa::new(providers::http_client().expect("http client"), config);

    let before = mpesa.refund("NLJ7RT61SV", 100, "REF-1").await;
    assert!(matches!(before, Ok(RefundOutcome::Refused { .. })), "nowhere to send the result: {before:?}");
    assert!(requests_to(&server, REVERSAL_PATH).await.is_empty());

    mpesa.push(request(100)).await.expect("push");
    let after = mpesa.refund("NLJ7RT61SV", 100, "REF-1").await;
    assert!(matches!(after, Ok(RefundOutcome::Accepted { .. })), "{after:?}");
    let body = json_body(&requests_to(&server, REVERSAL_PATH).await[0]);
    assert_eq!(body["ResultURL"], json!(CALLBACK));
    assert_eq!(body["QueueTimeOutURL"], json!(CALLBACK));
}

// --- callbacks ---

const PAID_CALLBACK: &str = r#"{"Body":{"stkCallback":{"MerchantRequestID":"29115-34620561-1","CheckoutRequestID":"ws_CO_191220191020363925","ResultCode":0,"ResultDesc":"The service request is processed successfully.","CallbackMetadata":{"Item":[{"Name":"Amount","Value":1.00},{"Name":"MpesaReceiptNumber","Value":"NLJ7RT61SV"},{"Name":"Balance"},{"Name":"TransactionDate","Value":20191219102115},{"Name":"PhoneNumber","Value":254708374149}]}}}}"#;

#[test]
fn a_paid_callback_gives_the_receipt_amount_and_number() {
    assert_eq!(
        offline().parse_callback(PAID_CALLBACK.as_bytes()),
        Ok(PushCallback {
            checkout_request_id: "ws_CO_191220191020363925".into(),
            result: PushResult::Paid {
                receipt: "NLJ7RT61SV".into(),
                amount_minor: Some(100),
                phone: Some("254708374149".into()),
            },
        })
    );
    let larger = PAID_CALLBACK.replace(r#""Value":1.00"#, r#""Value":1499.5"#);
    let callback = offline().parse_callback(larger.as_bytes()).expect("callback");
    assert!(matches!(callback.result, PushResult::Paid { amount_minor: Some(149_950), .. }), "{callback:?}");
}

#[test]
fn a_cancelled_callback_is_cancelled() {
    let body = br#"{"Body":{"stkCallback":{"MerchantRequestID":"8555-67195-1","CheckoutRequestID":"ws_CO_27072017151044001","ResultCode":1032,"ResultDesc":"[STK_CB - ]Request cancelled by user"}}}"#;
    assert_eq!(
        offline().parse_callback(body),
        Ok(PushCallback {
            checkout_request_id: "ws_CO_27072017151044001".into(),
            result: PushResult::Cancelled {
                code: "1032".into(),
                reason: "[STK_CB - ]Request cancelled by user".into()
            },
        })
    );
    let expired = String::from_utf8_lossy(body).replace("1032", "1037");
    assert!(matches!(offline().parse_callback(expired.as_bytes()).map(|c| c.result), Ok(PushResult::Expired { .. })));
}

#[test]
fn malformed_callbacks_are_refused() {
    let without_receipt = PAID_CALLBACK.replace("MpesaReceiptNumber", "Receipt");
    let bad_amount = PAID_CALLBACK.replace(r#""Value":1.00"#, r#""Value":"lots""#);
    let without_id = PAID_CALLBACK.replace("ws_CO_191220191020363925", "");
    let code_object = PAID_CALLBACK.replace(r#""ResultCode":0"#, r#""ResultCode":{}"#);
    for body in [
        "not json",
        "{}",
        r#"{"Body":{}}"#,
        r#"{"Body":{"stkCallback":{"CheckoutRequestID":"ws_CO_1"}}}"#,
        without_receipt.as_str(),
        bad_amount.as_str(),
        without_id.as_str(),
        code_object.as_str(),
    ] {
        assert!(offline().parse_callback(body.as_bytes()).is_err(), "{body}");
    }
}
