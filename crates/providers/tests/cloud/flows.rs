//! In-chat forms through the Cloud API's Flows API, against the same local fake of the Graph
//! API: each call's method, path, token and body (the Flow JSON as a multipart file), the
//! validation errors read, the provider's refusals and troubles, and the `flows` webhook field.

use providers::chat_flows::{FlowError, FlowStatus};

use super::*;

const FLOW_ID: &str = "1097420589034000";
const FLOWS_PATH: &str = "/v21.0/102290129340398/flows";
const ASSETS_PATH: &str = "/v21.0/1097420589034000/assets";
const PUBLISH_PATH: &str = "/v21.0/1097420589034000/publish";
const DEPRECATE_PATH: &str = "/v21.0/1097420589034000/deprecate";

fn ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

fn refused(reason: &str) -> FlowError {
    FlowError::Refused { reason: reason.into() }
}

fn flow_json() -> Value {
    json!({
        "version": "7.1",
        "screens": [{
            "id": "ORDER",
            "title": "Your order",
            "terminal": true,
            "data": {},
            "layout": {"type": "SingleColumnLayout", "children": [
                {"type": "TextInput", "name": "size", "label": "Size"},
                {"type": "Footer", "label": "Send",
                 "on-click-action": {"name": "complete", "payload": {"size": "${form.size}"}}}
            ]}
        }]
    })
}

/// The one request a fake saw: its method and path, that it came as the account.
async fn the_request(server: &MockServer, verb: &str, at: &str) -> Request {
    let request = only_request(server).await;
    assert_eq!(request.method.as_str(), verb);
    assert_eq!(request.url.path(), at);
    assert!(request.url.query().is_none(), "{}", request.url);
    assert_eq!(header(&request, "authorization"), Some(format!("Bearer {TOKEN}")));
    request
}

/// One part of a `multipart/form-data` body.
#[derive(Debug)]
struct FormPart {
    name: String,
    file_name: Option<String>,
    content_type: Option<String>,
    body: Vec<u8>,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// A header's `key="value"` parameter.
fn parameter(header: &str, key: &str) -> Option<String> {
    let start = header.find(&format!("{key}=\""))? + key.len() + 2;
    let length = header[start..].find('"')?;
    Some(header[start..start + length].to_owned())
}

/// The parts of a multipart request, read by its boundary, in order.
fn form_parts(request: &Request) -> Vec<FormPart> {
    let content_type = header(request, "content-type").expect("a content type");
    let boundary = content_type
        .strip_prefix("multipart/form-data; boundary=")
        .unwrap_or_else(|| panic!("a multipart form, not {content_type}"));
    let delimiter = format!("--{boundary}").into_bytes();
    let mut rest = request.body.as_slice();
    let mut parts = Vec::new();
    let start = find(rest, &delimiter).expect("a first boundary");
    rest = &rest[start + delimiter.len()..];
    while !rest.starts_with(b"--") {
        rest = rest.strip_prefix(b"\r\n").expect("a line break after the boundary");
        let end = find(rest, &delimiter).expect("a closing boundary");
        let part = rest[..end].strip_suffix(b"\r\n").expect("a line break before the boundary");
        let split = find(part, b"\r\n\r\n").expect("headers then a body");
        let headers = String::from_utf8(part[..split].to_vec()).expect("text headers");
        let header_value = |name: &str| {
            headers.split("\r\n").find_map(|line| {
                let (key, value) = line.split_once(':')?;
                key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
            })
        };
        let disposition = header_value("content-disposition").expect("a content disposition");
        parts.push(FormPart {
            name: parameter(&disposition, "name").expect("a part name"),
            file_name: parameter(&disposition, "filename"),
            content_type: header_value("content-type"),
            body: part[split + 4..].to_vec(),
        });
        rest = &rest[end + delimiter.len()..];
    }
    parts
}

fn text_part(parts: &[FormPart], name: &str) -> String {
    let part = parts.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("a {name} part in {parts:?}"));
    assert_eq!((&part.file_name, &part.content_type), (&None, &None), "{name} is a plain field");
    String::from_utf8(part.body.clone()).expect("text")
}

#[tokio::test]
async fn a_flow_is_made_on_the_account_and_its_id_read() {
    let server = server_on("POST", FLOWS_PATH, ok(json!({"id": FLOW_ID}))).await;
    assert_eq!(cloud(&server).create_flow(WABA_ID, "Duka la Asha: order v3").await, Ok(FLOW_ID.to_owned()));
    let request = the_request(&server, "POST", FLOWS_PATH).await;
    assert!(header(&request, "content-type").is_some_and(|c| c.starts_with("application/json")));
    assert_eq!(body_of(&request), json!({"name": "Duka la Asha: order v3", "categories": ["OTHER"]}));

    // An id the provider writes as a number is read as text
    let server = server_on("POST", FLOWS_PATH, ok(json!({"id": 1_097_420_589_034_001_u64}))).await;
    assert_eq!(cloud(&server).create_flow(WABA_ID, "x").await, Ok("1097420589034001".to_owned()));

    for answer in [ok(json!({"success": true})), ResponseTemplate::new(200).set_body_string("<html>ok</html>")] {
        let server = server_on("POST", FLOWS_PATH, answer).await;
        let outcome = cloud(&server).create_flow(WABA_ID, "x").await;
        assert!(matches!(outcome, Err(FlowError::Failed(SendError::Malformed(_)))), "{outcome:?}");
    }
}

#[tokio::test]
async fn the_flow_json_goes_up_as_a_multipart_file_and_a_valid_one_has_no_validation_errors() {
    let server = server_on("POST", ASSETS_PATH, ok(json!({"success": true, "validation_errors": []}))).await;
    assert_eq!(cloud(&server).upload_flow_json(FLOW_ID, &flow_json()).await, Ok(vec![]));
    let request = the_request(&server, "POST", ASSETS_PATH).await;
    let parts = form_parts(&request);
    let names: Vec<&str> = parts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["file", "name", "asset_type"]);
    let file = &parts[0];
    assert_eq!(file.file_name.as_deref(), Some("flow.json"));
    assert_eq!(file.content_type.as_deref(), Some("application/json"));
    assert_eq!(serde_json::from_slice::<Value>(&file.body).expect("the Flow JSON"), flow_json());
    // pretty-printed, so that the validation errors' lines point somewhere
    assert_eq!(file.body, serde_json::to_vec_pretty(&flow_json()).expect("json"));
    assert_eq!(text_part(&parts, "name"), "flow.json");
    assert_eq!(text_part(&parts, "asset_type"), "FLOW_JSON");

    // No validation_errors at all is none
    let server = server_on("POST", ASSETS_PATH, ok(json!({"success": true}))).await;
    assert_eq!(cloud(&server).upload_flow_json(FLOW_ID, &flow_json()).await, Ok(vec![]));

    for answer in [ok(json!({"success": false})), ok(json!({})), ResponseTemplate::new(200)] {
        let server = server_on("POST", ASSETS_PATH, answer).await;
        let outcome = cloud(&server).upload_flow_json(FLOW_ID, &flow_json()).await;
        assert!(matches!(outcome, Err(FlowError::Failed(SendError::Malformed(_)))), "{outcome:?}");
    }
}

#[tokio::test]
async fn validation_errors_are_read_one_line_each_with_where_they_apply() {
    let server = server_on(
        "POST",
        ASSETS_PATH,
        ok(json!({
            "success": true,
            "validation_errors": [
                {
                    "error": "INVALID_PROPERTY",
                    "error_type": "JSON_SCHEMA_ERROR",
                    "message": "The property \"initial-text\" cannot be specified at \
                                \"$root/screens/0/layout/children/2/children/0\".",
                    "line_start": 46, "line_end": 46, "column_start": 17, "column_end": 30
                },
                {
                    "error": "MISSING_REQUIRED_PROPERTY",
                    "error_type": "FLOW_JSON_ERROR",
                    "message": "Required property 'version' is missing.",
                    "pointers": [{"line_start": 1, "line_end": 1, "column_start": 1, "column_end": 2, "path": "$root"}]
                },
                {"error_type": "FLOW_JSON_ERROR", "message": "Screen ORDER is not reachable.", "line_start": "12"},
                {"message": "Footer is required on a terminal screen."},
                "A string the provider wrote",
                {"unknown": "shape"}
            ]
        })),
    )
    .await;
    let validation = cloud(&server).upload_flow_json(FLOW_ID, &flow_json()).await.expect("taken");
    assert_eq!(
        validation,
        [
            "INVALID_PROPERTY (JSON_SCHEMA_ERROR): The property \"initial-text\" cannot be specified at \
             \"$root/screens/0/layout/children/2/children/0\". (line 46, column 17)",
            "MISSING_REQUIRED_PROPERTY (FLOW_JSON_ERROR): Required property 'version' is missing. (line 1, column 1)",
            "FLOW_JSON_ERROR: Screen ORDER is not reachable. (line 12)",
            "Footer is required on a terminal screen.",
            "A string the provider wrote",
            "{\"unknown\":\"shape\"}",
        ]
    );

    // Errors without a success flag are still the provider's answer
    let server = server_on("POST", ASSETS_PATH, ok(json!({"validation_errors": [{"message": "Bad"}]}))).await;
    assert_eq!(cloud(&server).upload_flow_json(FLOW_ID, &flow_json()).await, Ok(vec!["Bad".to_owned()]));
}

#[tokio::test]
async fn a_flow_is_published_and_deprecated_by_a_bare_post() {
    for (at, publish) in [(PUBLISH_PATH, true), (DEPRECATE_PATH, false)] {
        let server = server_on("POST", at, ok(json!({"success": true}))).await;
        let cloud = cloud(&server);
        let outcome = if publish { cloud.publish_flow(FLOW_ID).await } else { cloud.deprecate_flow(FLOW_ID).await };
        assert_eq!(outcome, Ok(()));
        let request = the_request(&server, "POST", at).await;
        assert!(request.body.is_empty(), "{at} takes no body");

        for answer in [ok(json!({"success": false})), ok(json!({"id": FLOW_ID})), ResponseTemplate::new(200)] {
            let server = server_on("POST", at, answer).await;
            let cloud = super::cloud(&server);
            let outcome = if publish { cloud.publish_flow(FLOW_ID).await } else { cloud.deprecate_flow(FLOW_ID).await };
            assert!(matches!(outcome, Err(FlowError::Failed(SendError::Malformed(_)))), "{at}: {outcome:?}");
        }
    }
}

#[tokio::test]
async fn a_refusal_carries_the_providers_code_and_words() {
    let server = server_on(
        "POST",
        FLOWS_PATH,
        graph_error(
            400,
            json!({
                "message": "Invalid parameter",
                "type": "OAuthException",
                "code": 100,
                "error_subcode": 4016019,
                "is_transient": false,
                "error_user_title": "Flow name is not unique",
                "error_user_msg": "Flow name is not unique within the WhatsApp Business Account.",
                "fbtrace_id": "AbC"
            }),
        ),
    )
    .await;
    let outcome = cloud(&server).create_flow(WABA_ID, "Duka la Asha: order v3").await;
    let words = "(#100) Invalid parameter: Flow name is not unique within the WhatsApp Business Account.";
    assert_eq!(outcome, Err(refused(words)));
    assert_eq!(outcome.expect_err("refused").to_string(), words);

    let server = server_on(
        "POST",
        PUBLISH_PATH,
        graph_error(
            400,
            json!({
                "message": "(#139002) Publishing Flow in invalid state",
                "type": "OAuthException",
                "code": 139002,
                "error_user_msg": "The Flow has validation errors and cannot be published.",
            }),
        ),
    )
    .await;
    assert_eq!(
        cloud(&server).publish_flow(FLOW_ID).await,
        Err(refused(
            "(#139002) Publishing Flow in invalid state: The Flow has validation errors and cannot be published."
        ))
    );

    let server = server_on(
        "POST",
        ASSETS_PATH,
        graph_error(403, json!({"message": "Invalid OAuth access token", "type": "OAuthException", "code": 190})),
    )
    .await;
    assert_eq!(
        cloud(&server).upload_flow_json(FLOW_ID, &flow_json()).await,
        Err(refused("(#190) Invalid OAuth access token"))
    );

    let server = server_on(
        "POST",
        DEPRECATE_PATH,
        graph_error(
            400,
            json!({
                "message": "Flow is not published",
                "code": 139003,
                "error_data": {"details": "Only a published Flow can be deprecated"}
            }),
        ),
    )
    .await;
    assert_eq!(
        cloud(&server).deprecate_flow(FLOW_ID).await,
        Err(refused("(#139003) Flow is not published: Only a published Flow can be deprecated"))
    );
}

#[tokio::test]
async fn throttling_server_trouble_silence_and_slowness_are_failures() {
    let cases = [
        (500, graph_error(500, json!({"message": "An unknown error occurred", "code": 1}))),
        (503, ResponseTemplate::new(503).set_body_string("<html>unavailable</html>")),
        (429, graph_error(429, json!({"message": "Too many requests", "code": 80007}))),
        (400, graph_error(400, json!({"message": "Application request limit reached", "code": 4}))),
        (400, ResponseTemplate::new(400).set_body_string("<html>bad request</html>")),
    ];
    for (status, response) in cases {
        let server = server_on("POST", FLOWS_PATH, response).await;
        let outcome = cloud(&server).create_flow(WABA_ID, "x").await;
        assert_eq!(outcome, Err(FlowError::Failed(SendError::Status { status })));
    }
    for at in [ASSETS_PATH, PUBLISH_PATH, DEPRECATE_PATH] {
        let server = server_on("POST", at, ResponseTemplate::new(502)).await;
        let cloud = cloud(&server);
        let failed = FlowError::Failed(SendError::Status { status: 502 });
        let outcome = match at {
            ASSETS_PATH => cloud.upload_flow_json(FLOW_ID, &flow_json()).await.map(drop),
            PUBLISH_PATH => cloud.publish_flow(FLOW_ID).await,
            _ => cloud.deprecate_flow(FLOW_ID).await,
        };
        assert_eq!(outcome, Err(failed), "{at}");
    }

    let slow = ok(json!({"success": true})).set_delay(Duration::from_millis(600));
    let server = server_on("POST", PUBLISH_PATH, slow).await;
    let outcome = cloud_with_timeout(&server, Duration::from_millis(200)).publish_flow(FLOW_ID).await;
    assert_eq!(outcome, Err(FlowError::Failed(SendError::Timeout)));

    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let closed = Cloud::new(
        providers::http_client().expect("http client"),
        config(format!("http://127.0.0.1:{port}"), Duration::from_secs(5)),
    );
    let outcome = closed.upload_flow_json(FLOW_ID, &flow_json()).await;
    let Err(FlowError::Failed(SendError::Transport(text))) = outcome else {
        panic!("expected Transport, got {outcome:?}")
    };
    assert!(!text.contains(TOKEN));
}

fn flows_change(value: Value) -> Value {
    json!({"field": "flows", "value": value})
}

#[test]
fn status_changes_are_read_and_other_flow_events_ignored() {
    let reply = json!({
        "context": {"from": "15550783881", "id": "wamid.flow_sent"},
        "from": "255712345678", "id": "wamid.flow_reply", "timestamp": "1750263900", "type": "interactive",
        "interactive": {"type": "nfm_reply", "nfm_reply": {
            "name": "flow", "body": "Sent", "response_json": "{\"flow_token\": \"ft_1\", \"size\": \"M\"}"
        }}
    });
    let body = delivery(json!([
        flows_change(json!({
            "event": "FLOW_STATUS_CHANGE",
            "message": "Flow Duka la Asha: order v3 changed status from DRAFT to PUBLISHED",
            "flow_id": FLOW_ID,
            "old_status": "DRAFT",
            "new_status": "PUBLISHED"
        })),
        flows_change(json!({
            "event": "ENDPOINT_ERROR_RATE",
            "message": "Flow Duka la Asha: order v3 has reached 10% error rate",
            "flow_id": FLOW_ID,
            "error_rate": 10,
            "threshold": 10,
            "alert_state": "ACTIVATED",
            "errors": [{"error_type": "TIMEOUT", "error_rate": 10, "error_count": 5}]
        })),
        flows_change(json!({"event": "CLIENT_ERROR_RATE", "flow_id": FLOW_ID, "error_rate": 5.5})),
        flows_change(json!({
            "event": "FLOW_STATUS_CHANGE", "flow_id": 1_097_420_589_034_001_u64, "new_status": "BLOCKED"
        })),
        {"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": metadata(),
            "contacts": [{"profile": {"name": "Asha M"}, "wa_id": "255712345678"}],
            "messages": [reply]
        }}
    ]));
    let header = sign("app_secret_1", &body);
    assert!(signature_holds("app_secret_1", &body, Some(&header)));

    let webhook = parse_webhook(&body).expect("a delivery");
    assert_eq!(
        webhook.events,
        vec![
            ChatEvent::Flow(FlowStatus {
                flow_id: FLOW_ID.into(),
                new_status: "PUBLISHED".into(),
                old_status: Some("DRAFT".into())
            }),
            ChatEvent::Flow(FlowStatus {
                flow_id: "1097420589034001".into(),
                new_status: "BLOCKED".into(),
                old_status: None
            }),
            // a form's answer is a customer message like any other, read by the messaging crate
            ChatEvent::Inbound(ChatInbound {
                reply_to: Some("wamid.flow_sent".into()),
                ..inbound("wamid.flow_reply", "interactive", None, &reply)
            }),
        ]
    );
    assert_eq!(webhook.ignored, vec!["flows.ENDPOINT_ERROR_RATE".to_owned(), "flows.CLIENT_ERROR_RATE".to_owned()]);
}

#[test]
fn a_malformed_flows_change_is_refused_by_name() {
    let cases = [
        (flows_change(json!({"flow_id": FLOW_ID, "new_status": "PUBLISHED"})), "changes[0].value: no event"),
        (flows_change(json!({"event": "FLOW_STATUS_CHANGE", "new_status": "PUBLISHED"})), "value: no flow_id"),
        (
            flows_change(json!({"event": "FLOW_STATUS_CHANGE", "flow_id": FLOW_ID, "old_status": "DRAFT"})),
            "no new_status",
        ),
        (flows_change(json!({"event": "FLOW_STATUS_CHANGE", "flow_id": FLOW_ID, "new_status": ""})), "no new_status"),
        (json!({"field": "flows"}), "flows without a value object"),
        (json!({"field": "flows", "value": []}), "flows without a value object"),
    ];
    for (change, named) in cases {
        let error = parse_webhook(&delivery(json!([change]))).expect_err("malformed");
        assert!(error.0.contains(named), "{error} should name {named}");
    }
}
