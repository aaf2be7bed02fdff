//! The WhatsApp Cloud API client against a local fake of the Graph API (wiremock on
//! 127.0.0.1), through the real reqwest client; and the webhook reader and signature check.

use std::collections::HashMap;
use std::time::Duration;

use providers::chat::{
    ChatContent, ChatEvent, ChatGateway, ChatInbound, ChatQuality, ChatStatus, ChatTemplateStatus, OutboundChat,
    ProviderAccount, ProviderPhoneNumber, ProviderTemplate, TemplateOutcome, TemplateSubmission, parse_webhook, sign,
    signature_holds,
};
use providers::cloud::{Cloud, CloudConfig};
use providers::sms::{SendError, SendOutcome};
use serde_json::{Value, json};
use wiremock::matchers::{bearer_token, method, path, query_param, query_param_is_missing};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const TOKEN: &str = "EAAG_test_access_token_0123456789";
const PHONE_NUMBER_ID: &str = "106540352242922";
const WABA_ID: &str = "102290129340398";
const MESSAGES_PATH: &str = "/v21.0/106540352242922/messages";
const TEMPLATES_PATH: &str = "/v21.0/102290129340398/message_templates";
const TEMPLATE_FIELDS: &str = "id,name,language,status,category,components,rejected_reason";
const WAMID: &str = "wamid.HBgLMjU1NzEyMzQ1Njc4FQIAERgSQzVBN0I2RTk3RjE4QkY3RjBBAA==";

fn config(base_url: String, timeout: Duration) -> CloudConfig {
    CloudConfig { base_url, version: CloudConfig::DEFAULT_VERSION.into(), access_token: TOKEN.into(), timeout }
}

fn cloud(server: &MockServer) -> Cloud {
    cloud_with_timeout(server, Duration::from_secs(5))
}

fn cloud_with_timeout(server: &MockServer, timeout: Duration) -> Cloud {
    Cloud::new(providers::http_client().expect("http client"), config(server.uri(), timeout))
}

fn accepted_answer() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "messaging_product": "whatsapp",
        "contacts": [{"input": "255712345678", "wa_id": "255712345678"}],
        "messages": [{"id": WAMID, "message_status": "accepted"}]
    }))
}

fn graph_error(status: u16, error: Value) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({ "error": error }))
}

async fn server_on(verb: &str, at: &str, response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method(verb)).and(path(at)).respond_with(response).mount(&server).await;
    server
}

fn message<'a>(content: &'a ChatContent) -> OutboundChat<'a> {
    OutboundChat {
        reference: "msg_01J9ZQ",
        phone_number_id: PHONE_NUMBER_ID,
        to: "+255712345678",
        content,
        reply_to: None,
    }
}

async fn only_request(server: &MockServer) -> Request {
    let mut requests = server.received_requests().await.expect("requests are recorded");
    assert_eq!(requests.len(), 1, "{requests:?}");
    requests.remove(0)
}

fn body_of(request: &Request) -> Value {
    serde_json::from_slice(&request.body).expect("a JSON body")
}

fn header(request: &Request, name: &str) -> Option<String> {
    request.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

fn query(request: &Request) -> HashMap<String, String> {
    request.url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

/// Sends `content` to an accepting fake; the outcome and the JSON body it was sent as.
async fn sent_body(content: &ChatContent, reply_to: Option<&str>) -> (Result<SendOutcome, SendError>, Value) {
    let server = server_on("POST", MESSAGES_PATH, accepted_answer()).await;
    let outcome = cloud(&server).send(OutboundChat { reply_to, ..message(content) }).await;
    let request = only_request(&server).await;
    assert_eq!(request.method.as_str(), "POST");
    assert_eq!(request.url.path(), MESSAGES_PATH);
    assert_eq!(header(&request, "authorization"), Some(format!("Bearer {TOKEN}")));
    assert!(header(&request, "content-type").is_some_and(|c| c.starts_with("application/json")));
    (outcome, body_of(&request))
}

fn envelope(kind: &str, payload: Value) -> Value {
    json!({
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": "255712345678",
        "type": kind,
        kind: payload,
        "biz_opaque_callback_data": "msg_01J9ZQ"
    })
}

fn accepted() -> Result<SendOutcome, SendError> {
    Ok(SendOutcome::Accepted { provider_message_id: WAMID.into(), cost: None, receipts: Vec::new() })
}

#[test]
fn debug_hides_the_access_token() {
    let config = config("https://graph.facebook.com".into(), Duration::from_secs(10));
    let text = format!("{config:?}");
    assert!(!text.contains(TOKEN), "{text}");
    assert!(text.contains("<redacted>"));
    let cloud = Cloud::new(providers::http_client().expect("http client"), config);
    assert!(!format!("{cloud:?}").contains(TOKEN));
}

#[tokio::test]
async fn a_text_is_posted_as_the_cloud_api_takes_it_and_the_id_is_read() {
    let content = ChatContent::Text { body: "Habari! Your order has shipped.".into() };
    let (outcome, body) = sent_body(&content, None).await;
    assert_eq!(outcome, accepted());
    assert_eq!(body, envelope("text", json!({"body": "Habari! Your order has shipped.", "preview_url": false})));
}

#[tokio::test]
async fn a_text_with_a_link_asks_for_a_preview() {
    for link in ["See https://example.com/track/9", "old site: HTTP://example.com"] {
        let content = ChatContent::Text { body: link.into() };
        let (outcome, body) = sent_body(&content, None).await;
        assert_eq!(outcome, accepted());
        assert_eq!(body, envelope("text", json!({"body": link, "preview_url": true})));
    }
}

#[tokio::test]
async fn media_carries_its_link_and_a_caption_where_the_kind_takes_one() {
    let cases = [
        ("image", Some("The receipt"), json!({"link": "https://cdn.example.com/r.jpg", "caption": "The receipt"})),
        ("video", Some("How to"), json!({"link": "https://cdn.example.com/r.jpg", "caption": "How to"})),
        ("document", None, json!({"link": "https://cdn.example.com/r.jpg"})),
        ("document", Some("Invoice 42"), json!({"link": "https://cdn.example.com/r.jpg", "caption": "Invoice 42"})),
        ("audio", Some("ignored"), json!({"link": "https://cdn.example.com/r.jpg"})),
        ("sticker", Some("ignored"), json!({"link": "https://cdn.example.com/r.jpg"})),
    ];
    for (kind, caption, expected) in cases {
        let content = ChatContent::Media {
            kind: kind.into(),
            link: "https://cdn.example.com/r.jpg".into(),
            caption: caption.map(str::to_owned),
        };
        let (outcome, body) = sent_body(&content, None).await;
        assert_eq!(outcome, accepted(), "{kind}");
        assert_eq!(body, envelope(kind, expected), "{kind} {caption:?}");
    }
}

#[tokio::test]
async fn a_template_names_its_language_and_forwards_its_components() {
    let components = vec![json!({
        "type": "body",
        "parameters": [{"type": "text", "text": "Asha"}, {"type": "text", "text": "TZS 12,000"}]
    })];
    let content = ChatContent::Template {
        name: "order_shipped".into(),
        language: "en_US".into(),
        components: components.clone(),
    };
    let (outcome, body) = sent_body(&content, None).await;
    assert_eq!(outcome, accepted());
    assert_eq!(
        body,
        envelope("template", json!({"name": "order_shipped", "language": {"code": "en_US"}, "components": components}))
    );

    let bare = ChatContent::Template { name: "hello_world".into(), language: "sw".into(), components: vec![] };
    let (_, body) = sent_body(&bare, None).await;
    assert_eq!(body, envelope("template", json!({"name": "hello_world", "language": {"code": "sw"}})));
}

#[tokio::test]
async fn interactive_is_forwarded_as_given() {
    let interactive = json!({
        "type": "button",
        "body": {"text": "Confirm your delivery slot?"},
        "action": {"buttons": [
            {"type": "reply", "reply": {"id": "slot_am", "title": "Morning"}},
            {"type": "reply", "reply": {"id": "slot_pm", "title": "Afternoon"}}
        ]}
    });
    let content = ChatContent::Interactive { interactive: interactive.clone() };
    let (outcome, body) = sent_body(&content, None).await;
    assert_eq!(outcome, accepted());
    assert_eq!(body, envelope("interactive", interactive));
}

#[tokio::test]
async fn a_reaction_names_the_message_and_the_emoji() {
    let content = ChatContent::Reaction { message_id: "wamid.customer_1".into(), emoji: "\u{1F44D}".into() };
    let (outcome, body) = sent_body(&content, None).await;
    assert_eq!(outcome, accepted());
    assert_eq!(body, envelope("reaction", json!({"message_id": "wamid.customer_1", "emoji": "\u{1F44D}"})));
}

#[tokio::test]
async fn a_reply_carries_its_context() {
    let content = ChatContent::Text { body: "Yes, tomorrow.".into() };
    let (outcome, body) = sent_body(&content, Some("wamid.customer_question")).await;
    assert_eq!(outcome, accepted());
    let mut expected = envelope("text", json!({"body": "Yes, tomorrow.", "preview_url": false}));
    expected["context"] = json!({"message_id": "wamid.customer_question"});
    assert_eq!(body, expected);
}

async fn send_answered(response: ResponseTemplate) -> Result<SendOutcome, SendError> {
    let server = server_on("POST", MESSAGES_PATH, response).await;
    let content = ChatContent::Text { body: "hi".into() };
    cloud(&server).send(message(&content)).await
}

#[tokio::test]
async fn outside_the_window_is_refused_with_the_providers_code_and_words() {
    let outcome = send_answered(graph_error(
        400,
        json!({
            "message": "(#131047) Re-engagement message",
            "type": "OAuthException",
            "code": 131047,
            "error_data": {
                "messaging_product": "whatsapp",
                "details": "Message failed to send because more than 24 hours have passed since the customer last replied to this number."
            },
            "fbtrace_id": "AbCdEf123"
        }),
    ))
    .await;
    assert_eq!(
        outcome,
        Ok(SendOutcome::Refused {
            reason: "(#131047) Re-engagement message: Message failed to send because more than 24 hours \
                     have passed since the customer last replied to this number."
                .into()
        })
    );

    let outcome = send_answered(graph_error(
        400,
        json!({"message": "Message undeliverable", "type": "OAuthException", "code": 131026, "fbtrace_id": "x"}),
    ))
    .await;
    assert_eq!(outcome, Ok(SendOutcome::Refused { reason: "(#131026) Message undeliverable".into() }));
}

#[tokio::test]
async fn a_bad_token_is_a_refusal_that_says_why_without_the_token() {
    for status in [401, 403] {
        let outcome = send_answered(graph_error(
            status,
            json!({
                "message": "Invalid OAuth access token - Cannot parse access token",
                "type": "OAuthException",
                "code": 190,
                "fbtrace_id": "A1b2"
            }),
        ))
        .await;
        assert_eq!(
            outcome,
            Ok(SendOutcome::Refused { reason: "(#190) Invalid OAuth access token - Cannot parse access token".into() })
        );
    }
}

#[tokio::test]
async fn throttling_and_server_trouble_are_status_errors() {
    let cases = [
        (429, json!({"message": "Too many requests", "code": 80007, "type": "OAuthException"})),
        (500, json!({"message": "Something went wrong", "code": 131000, "type": "OAuthException"})),
        (503, json!({"message": "Service unavailable", "code": 131016, "type": "OAuthException"})),
        (400, json!({"message": "Application request limit reached", "code": 4, "type": "OAuthException"})),
        (400, json!({"message": "Rate limit issues", "code": 80007, "type": "OAuthException"})),
        (400, json!({"message": "Rate limit hit", "code": 130429, "type": "OAuthException"})),
        (400, json!({"message": "Spam rate limit hit", "code": 131056, "type": "OAuthException"})),
    ];
    for (status, error) in cases {
        let outcome = send_answered(graph_error(status, error.clone())).await;
        assert_eq!(outcome, Err(SendError::Status { status }), "{error}");
    }
    for status in [429, 500] {
        let outcome = send_answered(ResponseTemplate::new(status)).await;
        assert_eq!(outcome, Err(SendError::Status { status }));
    }
}

#[tokio::test]
async fn a_generic_error_code_is_a_refusal_below_500() {
    // 131000 is "something went wrong": server trouble only when HTTP says so
    let outcome = send_answered(graph_error(400, json!({"message": "Something went wrong", "code": 131000}))).await;
    assert_eq!(outcome, Ok(SendOutcome::Refused { reason: "(#131000) Something went wrong".into() }));
}

#[tokio::test]
async fn a_slow_answer_is_a_timeout() {
    let server = server_on("POST", MESSAGES_PATH, accepted_answer().set_delay(Duration::from_millis(600))).await;
    let content = ChatContent::Text { body: "hi".into() };
    let outcome = cloud_with_timeout(&server, Duration::from_millis(200)).send(message(&content)).await;
    assert_eq!(outcome, Err(SendError::Timeout));
}

#[tokio::test]
async fn unreadable_answers() {
    for response in [
        ResponseTemplate::new(200).set_body_string("<html>gateway</html>"),
        ResponseTemplate::new(200).set_body_json(json!({"messaging_product": "whatsapp", "messages": []})),
        ResponseTemplate::new(200).set_body_json(json!({"messages": [{"message_status": "accepted"}]})),
    ] {
        let outcome = send_answered(response).await;
        assert!(matches!(outcome, Err(SendError::Malformed(_))), "{outcome:?}");
    }
    for (status, response) in [
        (400, ResponseTemplate::new(400).set_body_string("<html>bad request</html>")),
        (400, ResponseTemplate::new(400).set_body_json(json!({"oops": true}))),
        (502, ResponseTemplate::new(502).set_body_string("<html>bad gateway</html>")),
        (404, ResponseTemplate::new(404)),
    ] {
        let outcome = send_answered(response).await;
        assert_eq!(outcome, Err(SendError::Status { status }));
    }
}

#[tokio::test]
async fn a_closed_port_is_a_transport_error_without_the_token() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let cloud = Cloud::new(
        providers::http_client().expect("http client"),
        config(format!("http://127.0.0.1:{port}"), Duration::from_secs(5)),
    );
    let content = ChatContent::Text { body: "hi".into() };
    let outcome = cloud.send(message(&content)).await;
    let Err(SendError::Transport(text)) = outcome else { panic!("expected Transport, got {outcome:?}") };
    assert!(!text.contains(TOKEN));
}

fn template_json(id: &str, name: &str, status: &str, rejected_reason: Option<&str>) -> Value {
    let mut template = json!({
        "id": id,
        "name": name,
        "language": "en_US",
        "status": status,
        "category": "UTILITY",
        "components": [{"type": "BODY", "text": "Hi {{1}}, your order {{2}} has shipped."}]
    });
    if let Some(reason) = rejected_reason {
        template["rejected_reason"] = json!(reason);
    }
    template
}

fn provider_template(id: &str, name: &str, status: &str, rejected_reason: Option<&str>) -> ProviderTemplate {
    ProviderTemplate {
        id: id.into(),
        name: name.into(),
        language: "en_US".into(),
        category: "UTILITY".into(),
        status: status.into(),
        components: vec![json!({"type": "BODY", "text": "Hi {{1}}, your order {{2}} has shipped."})],
        rejected_reason: rejected_reason.map(str::to_owned),
    }
}

#[tokio::test]
async fn templates_are_read_across_pages() {
    let server = MockServer::start().await;
    let next = format!("{}{TEMPLATES_PATH}?access_token={TOKEN}&limit=100&after=QVFIUmFr", server.uri());
    Mock::given(method("GET"))
        .and(path(TEMPLATES_PATH))
        .and(query_param_is_missing("after"))
        .and(bearer_token(TOKEN))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [
                template_json("1001", "order_shipped", "APPROVED", Some("NONE")),
                template_json("1002", "promo_may", "REJECTED", Some("INVALID_FORMAT")),
            ],
            "paging": {"cursors": {"before": "QVFIUmJl", "after": "QVFIUmFr"}, "next": next}
        })))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(TEMPLATES_PATH))
        .and(query_param("after", "QVFIUmFr"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [template_json("1003", "otp_code", "PENDING", None)],
            "paging": {"cursors": {"before": "QVFIUmFr", "after": "QVFIUmZz"}}
        })))
        .mount(&server)
        .await;

    let templates = cloud(&server).templates(WABA_ID).await.expect("templates");
    assert_eq!(
        templates,
        vec![
            provider_template("1001", "order_shipped", "APPROVED", None),
            provider_template("1002", "promo_may", "REJECTED", Some("INVALID_FORMAT")),
            provider_template("1003", "otp_code", "PENDING", None),
        ]
    );

    let requests = server.received_requests().await.expect("requests are recorded");
    assert_eq!(requests.len(), 2);
    let first = query(&requests[0]);
    assert_eq!(first.get("fields").map(String::as_str), Some(TEMPLATE_FIELDS));
    assert_eq!(first.get("limit").map(String::as_str), Some("100"));
    for request in &requests {
        assert_eq!(header(request, "authorization"), Some(format!("Bearer {TOKEN}")));
    }
}

#[tokio::test]
async fn a_paging_link_off_the_configured_host_is_not_followed() {
    let server = MockServer::start().await;
    let elsewhere = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": []})))
        .mount(&elsewhere)
        .await;
    for next in [
        format!("{}{TEMPLATES_PATH}?after=QVFIUmFr", elsewhere.uri()),
        // The configured base as a prefix of another host's name
        format!("{}.example.invalid{TEMPLATES_PATH}?after=QVFIUmFr", server.uri()),
    ] {
        server.reset().await;
        Mock::given(method("GET"))
            .and(path(TEMPLATES_PATH))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "data": [template_json("1001", "order_shipped", "APPROVED", None)],
                "paging": {"next": next}
            })))
            .mount(&server)
            .await;
        let templates = cloud(&server).templates(WABA_ID).await.expect("templates");
        assert_eq!(templates, vec![provider_template("1001", "order_shipped", "APPROVED", None)], "{next}");
        assert_eq!(server.received_requests().await.expect("requests are recorded").len(), 1);
    }
    assert!(elsewhere.received_requests().await.expect("requests are recorded").is_empty());
}

#[tokio::test]
async fn a_template_listing_error() {
    let server = server_on("GET", TEMPLATES_PATH, ResponseTemplate::new(503)).await;
    assert_eq!(cloud(&server).templates(WABA_ID).await, Err(SendError::Status { status: 503 }));

    let server = server_on("GET", TEMPLATES_PATH, ResponseTemplate::new(200).set_body_json(json!({"nodata": 1}))).await;
    assert!(matches!(cloud(&server).templates(WABA_ID).await, Err(SendError::Malformed(_))));
}

#[tokio::test]
async fn a_template_is_read_by_id_and_a_gone_one_is_none() {
    let server = server_on(
        "GET",
        "/v21.0/1001",
        ResponseTemplate::new(200).set_body_json(template_json("1001", "order_shipped", "PAUSED", Some("NONE"))),
    )
    .await;
    assert_eq!(
        cloud(&server).template("1001").await,
        Ok(Some(provider_template("1001", "order_shipped", "PAUSED", None)))
    );
    let request = only_request(&server).await;
    assert_eq!(query(&request).get("fields").map(String::as_str), Some(TEMPLATE_FIELDS));

    let server = server_on("GET", "/v21.0/1001", ResponseTemplate::new(404)).await;
    assert_eq!(cloud(&server).template("1001").await, Ok(None));

    let server = server_on(
        "GET",
        "/v21.0/1001",
        graph_error(
            400,
            json!({
                "message": "Unsupported get request. Object with ID '1001' does not exist",
                "type": "GraphMethodException",
                "code": 100,
                "error_subcode": 33
            }),
        ),
    )
    .await;
    assert_eq!(cloud(&server).template("1001").await, Ok(None));

    let server = server_on("GET", "/v21.0/1001", ResponseTemplate::new(500)).await;
    assert_eq!(cloud(&server).template("1001").await, Err(SendError::Status { status: 500 }));
}

fn submission() -> TemplateSubmission {
    TemplateSubmission {
        name: "order_shipped".into(),
        language: "en_US".into(),
        category: "UTILITY".into(),
        components: vec![json!({
            "type": "BODY",
            "text": "Hi {{1}}, your order {{2}} has shipped.",
            "example": {"body_text": [["Asha", "A-1042"]]}
        })],
    }
}

#[tokio::test]
async fn a_template_submission_is_accepted() {
    let server = server_on(
        "POST",
        TEMPLATES_PATH,
        ResponseTemplate::new(200)
            .set_body_json(json!({"id": "594425479261596", "status": "PENDING", "category": "UTILITY"})),
    )
    .await;
    let outcome = cloud(&server).create_template(WABA_ID, &submission()).await;
    assert_eq!(outcome, Ok(TemplateOutcome::Accepted { id: "594425479261596".into(), status: "PENDING".into() }));
    let request = only_request(&server).await;
    assert_eq!(header(&request, "authorization"), Some(format!("Bearer {TOKEN}")));
    let template = submission();
    assert_eq!(
        body_of(&request),
        json!({
            "name": template.name,
            "language": template.language,
            "category": template.category,
            "components": template.components
        })
    );
}

#[tokio::test]
async fn a_template_submission_is_rejected_with_the_human_explanation() {
    let server = server_on(
        "POST",
        TEMPLATES_PATH,
        graph_error(
            400,
            json!({
                "message": "Invalid parameter",
                "type": "OAuthException",
                "code": 100,
                "error_subcode": 2388024,
                "is_transient": false,
                "error_user_title": "Message template already exists",
                "error_user_msg": "There is already English (US) content for this template. You can create a new template and try again.",
                "fbtrace_id": "Ab1"
            }),
        ),
    )
    .await;
    let outcome = cloud(&server).create_template(WABA_ID, &submission()).await;
    assert_eq!(
        outcome,
        Ok(TemplateOutcome::Rejected {
            reason: "(#100) Invalid parameter: There is already English (US) content for this template. You can \
                     create a new template and try again."
                .into()
        })
    );

    let server = server_on(
        "POST",
        TEMPLATES_PATH,
        graph_error(
            400,
            json!({"message": "Invalid parameter", "code": 100, "error_data": {"details": "name must be lowercase"}}),
        ),
    )
    .await;
    let outcome = cloud(&server).create_template(WABA_ID, &submission()).await;
    assert_eq!(
        outcome,
        Ok(TemplateOutcome::Rejected { reason: "(#100) Invalid parameter: name must be lowercase".into() })
    );
}

#[tokio::test]
async fn a_template_submission_meeting_trouble_is_a_status_error() {
    for (status, response) in [
        (429, graph_error(429, json!({"message": "Too many calls", "code": 80008}))),
        (500, ResponseTemplate::new(500).set_body_string("oops")),
        (400, ResponseTemplate::new(400).set_body_string("<html>")),
    ] {
        let server = server_on("POST", TEMPLATES_PATH, response).await;
        assert_eq!(cloud(&server).create_template(WABA_ID, &submission()).await, Err(SendError::Status { status }));
    }
    let server =
        server_on("POST", TEMPLATES_PATH, ResponseTemplate::new(200).set_body_json(json!({"status": "PENDING"}))).await;
    assert!(matches!(cloud(&server).create_template(WABA_ID, &submission()).await, Err(SendError::Malformed(_))));
}

#[tokio::test]
async fn a_template_edit_posts_components_and_category() {
    let server =
        server_on("POST", "/v21.0/594425479261596", ResponseTemplate::new(200).set_body_json(json!({"success": true})))
            .await;
    let outcome = cloud(&server).edit_template("594425479261596", &submission()).await;
    assert_eq!(outcome, Ok(TemplateOutcome::Accepted { id: "594425479261596".into(), status: "PENDING".into() }));
    let request = only_request(&server).await;
    assert_eq!(header(&request, "authorization"), Some(format!("Bearer {TOKEN}")));
    assert_eq!(body_of(&request), json!({"components": submission().components, "category": "UTILITY"}));

    let server = server_on(
        "POST",
        "/v21.0/594425479261596",
        graph_error(
            400,
            json!({
                "message": "Invalid parameter",
                "code": 100,
                "error_subcode": 2388025,
                "error_user_title": "Template can't be edited",
                "error_user_msg": "Approved templates can be edited up to 10 times in a 30 day window."
            }),
        ),
    )
    .await;
    let outcome = cloud(&server).edit_template("594425479261596", &submission()).await;
    assert_eq!(
        outcome,
        Ok(TemplateOutcome::Rejected {
            reason: "(#100) Invalid parameter: Approved templates can be edited up to 10 times in a 30 day window."
                .into()
        })
    );

    let server = server_on("POST", "/v21.0/594425479261596", ResponseTemplate::new(503)).await;
    assert_eq!(
        cloud(&server).edit_template("594425479261596", &submission()).await,
        Err(SendError::Status { status: 503 })
    );
}

#[tokio::test]
async fn a_template_delete_names_the_template_and_its_id() {
    let server =
        server_on("DELETE", TEMPLATES_PATH, ResponseTemplate::new(200).set_body_json(json!({"success": true}))).await;
    assert_eq!(cloud(&server).delete_template(WABA_ID, "order_shipped", Some("1001")).await, Ok(()));
    let request = only_request(&server).await;
    assert_eq!(header(&request, "authorization"), Some(format!("Bearer {TOKEN}")));
    let params = query(&request);
    assert_eq!(params.get("name").map(String::as_str), Some("order_shipped"));
    assert_eq!(params.get("hsm_id").map(String::as_str), Some("1001"));
    assert_eq!(params.len(), 2);

    server.reset().await;
    Mock::given(method("DELETE"))
        .and(path(TEMPLATES_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"success": true})))
        .mount(&server)
        .await;
    assert_eq!(cloud(&server).delete_template(WABA_ID, "order_shipped", None).await, Ok(()));
    let params = query(&only_request(&server).await);
    assert_eq!(params.get("name").map(String::as_str), Some("order_shipped"));
    assert!(!params.contains_key("hsm_id"), "{params:?}");
}

#[tokio::test]
async fn deleting_a_template_the_provider_no_longer_has_is_fine() {
    for response in [
        graph_error(
            400,
            json!({
                "message": "Invalid parameter",
                "code": 100,
                "error_subcode": 2593002,
                "error_user_title": "Message template not found",
                "error_user_msg": "The message template couldn't be found."
            }),
        ),
        ResponseTemplate::new(404),
    ] {
        let server = server_on("DELETE", TEMPLATES_PATH, response).await;
        assert_eq!(cloud(&server).delete_template(WABA_ID, "gone", Some("9")).await, Ok(()));
    }
}

#[tokio::test]
async fn a_template_delete_failing() {
    let server = server_on(
        "DELETE",
        TEMPLATES_PATH,
        graph_error(400, json!({"message": "Permissions error", "code": 200, "type": "OAuthException"})),
    )
    .await;
    assert_eq!(
        cloud(&server).delete_template(WABA_ID, "order_shipped", None).await,
        Err(SendError::Malformed("(#200) Permissions error".into()))
    );
    for status in [429, 500] {
        let server = server_on("DELETE", TEMPLATES_PATH, graph_error(status, json!({"message": "x", "code": 2}))).await;
        assert_eq!(
            cloud(&server).delete_template(WABA_ID, "order_shipped", None).await,
            Err(SendError::Status { status })
        );
    }
    let server =
        server_on("DELETE", TEMPLATES_PATH, ResponseTemplate::new(200).set_body_json(json!({"success": false}))).await;
    assert!(matches!(cloud(&server).delete_template(WABA_ID, "x", None).await, Err(SendError::Malformed(_))));
}

#[tokio::test]
async fn the_account_is_read_with_its_phone_numbers() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/v21.0/{WABA_ID}")))
        .and(query_param("fields", "id,name"))
        .and(bearer_token(TOKEN))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": WABA_ID, "name": "Duka la Asha"})))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/v21.0/{WABA_ID}/phone_numbers")))
        .and(query_param("fields", "id,display_phone_number,verified_name,quality_rating,messaging_limit_tier"))
        .and(bearer_token(TOKEN))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [
                {
                    "id": PHONE_NUMBER_ID,
                    "display_phone_number": "+255 712 345 678",
                    "verified_name": "Duka la Asha",
                    "quality_rating": "GREEN",
                    "messaging_limit_tier": "TIER_1K"
                },
                {"id": "106540352242923", "display_phone_number": "+255 712 000 111", "quality_rating": "UNKNOWN"}
            ],
            "paging": {"cursors": {"before": "a", "after": "b"}}
        })))
        .mount(&server)
        .await;

    let account = cloud(&server).account(WABA_ID).await;
    assert_eq!(
        account,
        Ok(ProviderAccount {
            id: WABA_ID.into(),
            name: Some("Duka la Asha".into()),
            phone_numbers: vec![
                ProviderPhoneNumber {
                    id: PHONE_NUMBER_ID.into(),
                    display_phone_number: "+255 712 345 678".into(),
                    verified_name: Some("Duka la Asha".into()),
                    quality_rating: Some("GREEN".into()),
                    messaging_limit_tier: Some("TIER_1K".into()),
                },
                ProviderPhoneNumber {
                    id: "106540352242923".into(),
                    display_phone_number: "+255 712 000 111".into(),
                    verified_name: None,
                    quality_rating: Some("UNKNOWN".into()),
                    messaging_limit_tier: None,
                },
            ],
        })
    );
    assert_eq!(server.received_requests().await.expect("requests are recorded").len(), 2);
}

#[tokio::test]
async fn an_account_read_with_a_bad_token() {
    let server = server_on(
        "GET",
        &format!("/v21.0/{WABA_ID}"),
        graph_error(401, json!({"message": "Error validating access token", "code": 190, "type": "OAuthException"})),
    )
    .await;
    assert_eq!(
        cloud(&server).account(WABA_ID).await,
        Err(SendError::Malformed("(#190) Error validating access token".into()))
    );
}

// ---- webhooks -------------------------------------------------------------------------------

fn delivery(changes: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "object": "whatsapp_business_account",
        "entry": [{"id": WABA_ID, "changes": changes}]
    }))
    .expect("json")
}

fn metadata() -> Value {
    json!({"display_phone_number": "15550783881", "phone_number_id": PHONE_NUMBER_ID})
}

#[test]
fn statuses_are_read_with_their_errors() {
    let body = delivery(json!([{
        "field": "messages",
        "value": {
            "messaging_product": "whatsapp",
            "metadata": metadata(),
            "statuses": [
                {
                    "id": "wamid.sent_1", "status": "sent", "timestamp": "1750263773", "recipient_id": "255712345678",
                    "conversation": {"id": "c1", "origin": {"type": "utility"}},
                    "pricing": {"billable": true, "pricing_model": "PMP", "category": "utility"}
                },
                {"id": "wamid.sent_1", "status": "delivered", "timestamp": "1750263774",
                 "recipient_id": "255712345678"},
                {"id": "wamid.sent_1", "status": "read", "timestamp": "1750263790", "recipient_id": "255712345678"},
                {
                    "id": "wamid.sent_2", "status": "failed", "timestamp": "1750263800", "recipient_id": "255712000111",
                    "errors": [{
                        "code": 131026,
                        "title": "Message undeliverable",
                        "message": "Message undeliverable",
                        "error_data": {"details": "Message Undeliverable."}
                    }]
                },
                {
                    "id": "wamid.sent_3", "status": "failed", "recipient_id": "255712000222",
                    "errors": [{
                        "code": 131049,
                        "message": "This message was not delivered to maintain healthy ecosystem engagement."
                    }]
                }
            ]
        }
    }]));
    let webhook = parse_webhook(&body).expect("a delivery");
    let status = |id: &str, status: &str, recipient: &str, error: Option<&str>| {
        ChatEvent::Status(ChatStatus {
            phone_number_id: PHONE_NUMBER_ID.into(),
            provider_message_id: id.into(),
            status: status.into(),
            recipient_id: Some(recipient.into()),
            error: error.map(str::to_owned),
        })
    };
    assert_eq!(
        webhook.events,
        vec![
            status("wamid.sent_1", "sent", "255712345678", None),
            status("wamid.sent_1", "delivered", "255712345678", None),
            status("wamid.sent_1", "read", "255712345678", None),
            status(
                "wamid.sent_2",
                "failed",
                "255712000111",
                Some("(#131026) Message undeliverable: Message Undeliverable.")
            ),
            status(
                "wamid.sent_3",
                "failed",
                "255712000222",
                Some("(#131049) This message was not delivered to maintain healthy ecosystem engagement.")
            ),
        ]
    );
    assert!(webhook.ignored.is_empty());
}

fn inbound(id: &str, kind: &str, text: Option<&str>, raw: &Value) -> ChatInbound {
    ChatInbound {
        phone_number_id: PHONE_NUMBER_ID.into(),
        display_phone_number: "15550783881".into(),
        provider_message_id: id.into(),
        customer: "255712345678".into(),
        profile_name: Some("Asha M".into()),
        kind: kind.into(),
        text: text.map(str::to_owned),
        media: None,
        reply_to: None,
        group_id: None,
        raw: raw.clone(),
    }
}

#[test]
fn customer_messages_are_read_with_their_text_media_and_context() {
    let messages = json!([
        {
            "from": "255712345678", "id": "wamid.in_text", "timestamp": "1750263800", "type": "text",
            "text": {"body": "Habari, is my order ready?"}
        },
        {
            "from": "255712345678", "id": "wamid.in_image", "timestamp": "1750263801", "type": "image",
            "image": {"caption": "This one", "mime_type": "image/jpeg", "sha256": "abc=", "id": "1479537139650973"}
        },
        {
            "from": "255712345678", "id": "wamid.in_button", "timestamp": "1750263802", "type": "interactive",
            "context": {"from": "15550783881", "id": "wamid.out_question"},
            "interactive": {"type": "button_reply", "button_reply": {"id": "slot_am", "title": "Morning"}}
        },
        {
            "from": "255712345678", "id": "wamid.in_list", "timestamp": "1750263803", "type": "interactive",
            "interactive": {"type": "list_reply", "list_reply": {"id": "size_m", "title": "Medium", "description": "M"}}
        },
        {
            "from": "255712345678", "id": "wamid.in_reaction", "timestamp": "1750263804", "type": "reaction",
            "reaction": {"message_id": "wamid.out_question", "emoji": "\u{2764}\u{FE0F}"}
        },
        {
            "from": "255712345678", "id": "wamid.in_order", "timestamp": "1750263805", "type": "order",
            "order": {
                "catalog_id": "cat1",
                "text": "",
                "product_items": [
                    {"product_retailer_id": "sku1", "quantity": 2, "item_price": 5000, "currency": "TZS"}
                ]
            }
        },
        {
            "from": "255712345678", "id": "wamid.in_location", "timestamp": "1750263806", "type": "location",
            "location": {"latitude": -6.8, "longitude": 39.28, "name": "Kariakoo Market", "address": "Dar es Salaam"}
        },
        {
            "from": "255712345678", "id": "wamid.in_pin", "timestamp": "1750263807", "type": "location",
            "location": {"latitude": -6.8, "longitude": 39.28}
        },
        {
            "from": "255712345678", "id": "wamid.in_quick", "timestamp": "1750263808", "type": "button",
            "button": {"payload": "STOP", "text": "Stop promotions"}
        },
        {
            "from": "255712999000", "id": "wamid.in_voice", "timestamp": "1750263809", "type": "audio",
            "audio": {"mime_type": "audio/ogg; codecs=opus", "sha256": "x", "id": "2222", "voice": true}
        }
    ]);
    let body = delivery(json!([{
        "field": "messages",
        "value": {
            "messaging_product": "whatsapp",
            "metadata": metadata(),
            "contacts": [{"profile": {"name": "Asha M"}, "wa_id": "255712345678"}],
            "messages": messages
        }
    }]));
    let webhook = parse_webhook(&body).expect("a delivery");
    let raw = |i: usize| messages[i].clone();
    let mut expected = vec![
        inbound("wamid.in_text", "text", Some("Habari, is my order ready?"), &raw(0)),
        ChatInbound {
            media: Some(("1479537139650973".into(), Some("image/jpeg".into()))),
            ..inbound("wamid.in_image", "image", Some("This one"), &raw(1))
        },
        ChatInbound {
            reply_to: Some("wamid.out_question".into()),
            ..inbound("wamid.in_button", "interactive", Some("Morning"), &raw(2))
        },
        inbound("wamid.in_list", "interactive", Some("Medium"), &raw(3)),
        inbound("wamid.in_reaction", "reaction", Some("\u{2764}\u{FE0F}"), &raw(4)),
        inbound("wamid.in_order", "order", None, &raw(5)),
        inbound("wamid.in_location", "location", Some("Kariakoo Market, Dar es Salaam"), &raw(6)),
        inbound("wamid.in_pin", "location", None, &raw(7)),
        inbound("wamid.in_quick", "button", Some("Stop promotions"), &raw(8)),
        ChatInbound {
            customer: "255712999000".into(),
            profile_name: None,
            media: Some(("2222".into(), Some("audio/ogg; codecs=opus".into()))),
            ..inbound("wamid.in_voice", "audio", None, &raw(9))
        },
    ];
    assert_eq!(webhook.events.len(), expected.len());
    for (event, expected) in webhook.events.into_iter().zip(expected.drain(..)) {
        assert_eq!(event, ChatEvent::Inbound(expected));
    }
}

#[test]
fn echoes_template_reviews_and_quality_changes_are_read_and_other_fields_ignored() {
    let echo = json!({
        "from": "15550783881", "to": "255712345678", "id": "wamid.echo_1", "timestamp": "1750263810",
        "type": "text", "text": {"body": "Sent from the phone app"}
    });
    let body = serde_json::to_vec(&json!({
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": WABA_ID,
                "changes": [
                    {"field": "smb_message_echoes", "value": {
                        "messaging_product": "whatsapp", "metadata": metadata(), "message_echoes": [echo]
                    }},
                    {"field": "message_template_status_update", "value": {
                        "event": "APPROVED", "message_template_id": 594425479261596_u64,
                        "message_template_name": "order_shipped", "message_template_language": "en_US", "reason": "NONE"
                    }},
                    {"field": "message_template_status_update", "value": {
                        "event": "REJECTED", "message_template_id": "594425479261597",
                        "message_template_name": "promo_may", "message_template_language": "sw",
                        "reason": "INVALID_FORMAT"
                    }},
                    {"field": "account_update", "value": {"event": "VERIFIED_ACCOUNT"}}
                ]
            },
            {
                "id": WABA_ID,
                "changes": [
                    {"field": "phone_number_quality_update", "value": {
                        "display_phone_number": "15550783881", "event": "UPGRADE", "current_limit": "TIER_10K"
                    }},
                    {"field": "phone_number_quality_update", "value": {
                        "display_phone_number": "15550783881", "event": "FLAGGED"
                    }},
                    {"field": "template_category_update", "value": {}}
                ]
            }
        ]
    }))
    .expect("json");
    let webhook = parse_webhook(&body).expect("a delivery");
    assert_eq!(
        webhook.events,
        vec![
            ChatEvent::Echo(ChatInbound {
                phone_number_id: PHONE_NUMBER_ID.into(),
                display_phone_number: "15550783881".into(),
                provider_message_id: "wamid.echo_1".into(),
                customer: "255712345678".into(),
                profile_name: None,
                kind: "text".into(),
                text: Some("Sent from the phone app".into()),
                media: None,
                reply_to: None,
                group_id: None,
                raw: echo,
            }),
            ChatEvent::TemplateStatus(ChatTemplateStatus {
                waba_id: WABA_ID.into(),
                template_id: "594425479261596".into(),
                name: "order_shipped".into(),
                language: "en_US".into(),
                event: "APPROVED".into(),
                reason: None,
            }),
            ChatEvent::TemplateStatus(ChatTemplateStatus {
                waba_id: WABA_ID.into(),
                template_id: "594425479261597".into(),
                name: "promo_may".into(),
                language: "sw".into(),
                event: "REJECTED".into(),
                reason: Some("INVALID_FORMAT".into()),
            }),
            ChatEvent::Quality(ChatQuality {
                display_phone_number: "15550783881".into(),
                event: "UPGRADE".into(),
                current_limit: Some("TIER_10K".into()),
            }),
            ChatEvent::Quality(ChatQuality {
                display_phone_number: "15550783881".into(),
                event: "FLAGGED".into(),
                current_limit: None,
            }),
        ]
    );
    assert_eq!(webhook.ignored, vec!["account_update".to_owned(), "template_category_update".to_owned()]);
}

#[test]
fn deliveries_that_are_not_the_cloud_apis_are_refused() {
    for body in [
        b"not json".to_vec(),
        br#"{"object":"page","entry":[]}"#.to_vec(),
        br#"{"entry":[]}"#.to_vec(),
        br#"{"object":"whatsapp_business_account"}"#.to_vec(),
        br#"{"object":"whatsapp_business_account","entry":{}}"#.to_vec(),
    ] {
        assert!(parse_webhook(&body).is_err(), "{}", String::from_utf8_lossy(&body));
    }
    let empty = parse_webhook(br#"{"object":"whatsapp_business_account","entry":[]}"#).expect("an empty delivery");
    assert!(empty.events.is_empty() && empty.ignored.is_empty());
}

#[test]
fn a_malformed_item_is_refused_by_name() {
    let value = |value: Value| json!({"field": "messages", "value": value});
    let cases = [
        (value(json!({"metadata": metadata(), "statuses": [{"status": "sent"}]})), "statuses[0]: no id"),
        (value(json!({"metadata": metadata(), "statuses": [{"id": "w"}]})), "statuses[0]: no status"),
        (value(json!({"metadata": metadata(), "statuses": {}})), "statuses is not an array"),
        (value(json!({"statuses": []})), "value: no metadata"),
        (value(json!({"metadata": metadata(), "messages": [{"id": "w", "type": "text"}]})), "messages[0]: no from"),
        (value(json!({"metadata": metadata(), "messages": [{"from": "1", "type": "text"}]})), "messages[0]: no id"),
        (
            value(
                json!({"metadata": metadata(), "messages": [{"id": "w", "from": "1", "type": "image", "image": {}}]}),
            ),
            "messages[0].image: no id",
        ),
        (
            json!({"field": "smb_message_echoes", "value": {
                "metadata": metadata(), "message_echoes": [{"id": "w", "from": "1", "type": "text"}]
            }}),
            "message_echoes[0]: no to",
        ),
        (
            json!({"field": "message_template_status_update", "value": {"event": "APPROVED"}}),
            "value: no message_template_id",
        ),
        (
            json!({"field": "phone_number_quality_update", "value": {"event": "FLAGGED"}}),
            "value: no display_phone_number",
        ),
        (json!({"field": "messages"}), "messages without a value object"),
        (json!({"value": {}}), "changes[0]: no field"),
    ];
    for (change, named) in cases {
        let error = parse_webhook(&delivery(json!([change]))).expect_err("malformed");
        assert!(error.0.contains(named), "{error} should name {named}");
    }
}

#[test]
fn signatures_round_trip() {
    let body = delivery(json!([{"field": "account_update", "value": {}}]));
    let header = sign("app_secret_1", &body);
    assert!(header.starts_with("sha256="));
    assert_eq!(header.len(), "sha256=".len() + 64);
    assert!(signature_holds("app_secret_1", &body, Some(&header)));

    assert!(!signature_holds("app_secret_2", &body, Some(&header)), "a wrong secret");
    let mut tampered = body.clone();
    tampered.extend_from_slice(b" ");
    assert!(!signature_holds("app_secret_1", &tampered, Some(&header)), "a tampered body");
    assert!(!signature_holds("app_secret_1", &body, None), "no header");
    let bare = header.trim_start_matches("sha256=");
    assert!(!signature_holds("app_secret_1", &body, Some(bare)), "no sha256= prefix");
    assert!(!signature_holds("app_secret_1", &body, Some("sha256=not-hex")), "not hex");
}

#[path = "cloud/catalogue.rs"]
mod catalogue;

#[path = "cloud/groups.rs"]
mod groups;

#[path = "cloud/flows.rs"]
mod flows;
