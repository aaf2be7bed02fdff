//! Framework failures in the v3 error envelope (contract: Errors; issue 2, Gateway): unknown
//! routes, wrong methods, malformed or mistyped JSON, bodies too large or of another media
//! type; and the operations endpoints `/health`, `/ready` and `/metrics`.

use actix_web::test::TestRequest;
use api_tests::{Resp, json, spawn};
use serde_json::Value;

const GROUPS: &str = "/api/v3/contact-groups";

/// `{status:'error', message, errors?}` with `status`, as JSON; `errors`, when present, is
/// `{field: [message, ...]}`.
pub fn assert_error(res: &Resp, status: u16) {
    assert_eq!(res.status, status, "status; body {:?}", res.body);
    assert!(
        res.header("content-type").is_some_and(|v| v.starts_with("application/json")),
        "a JSON error body, got content-type {:?}: {:?}",
        res.header("content-type"),
        res.body
    );
    assert_eq!(res.body["status"], "error", "{:?}", res.body);
    assert!(res.body["message"].as_str().is_some_and(|m| !m.trim().is_empty()), "a message: {:?}", res.body);
    if let Some(errors) = res.body.get("errors") {
        let errors = errors.as_object().unwrap_or_else(|| panic!("errors is an object: {:?}", res.body));
        for (field, messages) in errors {
            let messages = messages.as_array().unwrap_or_else(|| panic!("errors.{field} is a list: {:?}", res.body));
            assert!(!messages.is_empty(), "errors.{field} is not empty");
            assert!(messages.iter().all(Value::is_string), "errors.{field} holds strings: {:?}", res.body);
        }
    }
    assert!(res.header("x-request-id").is_some_and(|v| !v.is_empty()), "X-Request-Id on every response");
}

/// The field errors of a 422, `errors.<field>`, as a list of messages.
fn field_errors<'a>(res: &'a Resp, field: &str) -> &'a Vec<Value> {
    res.body["errors"][field].as_array().unwrap_or_else(|| panic!("errors.{field} in {:?}", res.body))
}

fn bearer(key: &str) -> (&'static str, String) {
    ("Authorization", format!("Bearer {key}"))
}

#[actix_web::test]
async fn an_unknown_route_is_a_404_envelope() {
    let app = spawn().await;
    let account = app.account("all").await;
    for path in ["/api/v3/nope", "/nope", "/api/v3/contact-groups/1/contacts/2/extra", "/api/v4/me"] {
        let res = app.get(path, &account.key).await;
        assert_error(&res, 404);
        let res = app.request("GET", path, None, None).await;
        assert_error(&res, 404);
    }
    let res = app.post("/api/v3/nope", &account.key, json!({})).await;
    assert_error(&res, 404);
}

#[actix_web::test]
async fn a_wrong_method_is_a_405_envelope() {
    let app = spawn().await;
    let account = app.account("all").await;
    for (method, path) in [
        ("PUT", "/api/v3/me"),
        ("POST", "/api/v3/balance"),
        ("DELETE", GROUPS),
        ("PUT", "/api/v3/contact-groups/1"),
        // A GET to an original (POST) contact path is not equivalent.
        ("GET", "/api/v3/contacts/1/store"),
        ("GET", "/api/v3/contacts/1/all"),
        ("GET", "/api/v3/contacts/1/search/ctc_x"),
        ("GET", "/api/v3/contacts/1/update/ctc_x"),
        ("GET", "/api/v3/contacts/1/delete/ctc_x"),
    ] {
        let res = app.request(method, path, Some(&account.key), None).await;
        assert_error(&res, 405);
    }
}

#[actix_web::test]
async fn a_405_names_the_allowed_methods() {
    let app = spawn().await;
    let account = app.account("all").await;
    for (method, path, allowed) in [
        ("PUT", "/api/v3/me", "GET, HEAD"),
        ("TRACE", "/api/v3/leads/x", "GET, HEAD, PATCH, DELETE"),
        ("PUT", GROUPS, "GET, HEAD, POST"),
        ("GET", "/api/v3/contacts/1/store", "POST"),
        // outside /api/v3: the signed file links, the provider callbacks, the operations routes
        ("TRACE", "/files/x", "GET, HEAD"),
        ("GET", "/hooks/sms/x/delivery", "POST"),
        ("POST", "/health", "GET, HEAD"),
        ("DELETE", "/api-docs/openapi.json", "GET, HEAD"),
    ] {
        let res = app.request(method, path, Some(&account.key), None).await;
        assert_error(&res, 405);
        assert_eq!(res.header("allow"), Some(allowed), "{method} {path}");
    }
}

#[actix_web::test]
async fn malformed_json_is_a_422_naming_the_body() {
    let app = spawn().await;
    let account = app.account("all").await;
    let req = TestRequest::post()
        .uri(GROUPS)
        .insert_header(bearer(&account.key))
        .insert_header(("Content-Type", "application/json"))
        .set_payload(r#"{"name": "Customers","#);
    let res = app.send(req).await;
    assert_error(&res, 422);
    assert!(!field_errors(&res, "body").is_empty());
}

#[actix_web::test]
async fn an_empty_body_reads_as_an_empty_object_and_a_body_of_spaces_is_malformed() {
    let app = spawn().await;
    let account = app.account("all").await;
    let post = |payload: &'static str| {
        TestRequest::post()
            .uri(GROUPS)
            .insert_header(bearer(&account.key))
            .insert_header(("Content-Type", "application/json"))
            .set_payload(payload)
    };
    // No bytes: `{}`, so the missing member is named.
    let res = app.send(post("")).await;
    assert_error(&res, 422);
    assert!(!field_errors(&res, "name").is_empty(), "{:?}", res.body);
    // Spaces are no JSON document (as the description's parsers read it).
    let res = app.send(post(" \t\n")).await;
    assert_error(&res, 422);
    assert!(!field_errors(&res, "body").is_empty(), "{:?}", res.body);
}

#[actix_web::test]
async fn a_wrong_type_is_a_422_naming_the_field() {
    let app = spawn().await;
    let account = app.account("all").await;
    let res = app.post(GROUPS, &account.key, json!({"name": 5})).await;
    assert_error(&res, 422);
    assert!(!field_errors(&res, "name").is_empty());
    // Nothing was created.
    let list = app.get(GROUPS, &account.key).await;
    assert_eq!(list.status, 200, "{:?}", list.body);
    assert_eq!(list.data()["pagination"]["total"], 0);
}

#[actix_web::test]
async fn a_body_over_the_limit_is_a_413_envelope() {
    let app = spawn().await;
    let account = app.account("all").await;
    let name = "a".repeat(4 * 1024 * 1024);
    let body = format!(r#"{{"name": "{name}"}}"#);
    assert!(body.len() > 4 * 1024 * 1024);
    let req = TestRequest::post()
        .uri(GROUPS)
        .insert_header(bearer(&account.key))
        .insert_header(("Content-Type", "application/json"))
        .set_payload(body);
    let res = app.send(req).await;
    assert_error(&res, 413);
}

#[actix_web::test]
async fn a_body_of_another_media_type_is_a_415_envelope() {
    let app = spawn().await;
    let account = app.account("all").await;
    let req = TestRequest::post()
        .uri(GROUPS)
        .insert_header(bearer(&account.key))
        .insert_header(("Content-Type", "text/plain"))
        .set_payload(r#"{"name": "Customers"}"#);
    let res = app.send(req).await;
    assert_error(&res, 415);
    let list = app.get(GROUPS, &account.key).await;
    assert_eq!(list.data()["pagination"]["total"], 0, "nothing created: {:?}", list.body);
}

#[actix_web::test]
async fn health_and_ready_answer_200() {
    let app = spawn().await;
    let res = app.request("GET", "/health", None, None).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    let res = app.request("GET", "/ready", None, None).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
}

#[actix_web::test]
async fn metrics_are_prometheus_text_with_routes_queue_and_pool() {
    let app = spawn().await;
    let account = app.account("all").await;
    assert_eq!(app.get("/api/v3/me", &account.key).await.status, 200);
    let res = app.request("GET", "/metrics", None, None).await;
    assert_eq!(res.status, 200);
    assert!(res.header("content-type").is_some_and(|v| v.starts_with("text/plain")), "{:?}", res.headers);
    let text = res.body.as_str().expect("metrics are text");
    for name in ["http_requests_total", "http_request_duration_seconds", "job_queue_jobs", "db_pool_connections"] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    // Requests are labelled by route pattern and status.
    let me = text
        .lines()
        .find(|l| l.starts_with("http_requests_total{") && l.contains(r#"route="/api/v3/me""#))
        .unwrap_or_else(|| panic!("no http_requests_total for /api/v3/me in:\n{text}"));
    assert!(me.contains(r#"status="200""#), "{me}");
    assert!(me.contains(r#"method="GET""#), "{me}");
    assert!(
        text.lines().any(|l| l.starts_with("http_request_duration_seconds_bucket{") && l.contains("/api/v3/me")),
        "a latency histogram for /api/v3/me:\n{text}"
    );
}

/// The webhook backlog is visible: a delivery to a receiver that is down waits for its retry,
/// and `/metrics` counts it and how long the oldest due one has waited.
#[actix_web::test]
async fn metrics_show_the_webhook_deliveries_waiting() {
    let app = spawn().await;
    let account = app.account("all").await;
    let gauge = |text: &str, name: &str| -> f64 {
        let line =
            text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name}:\n{text}"));
        line.rsplit(' ').next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{line}"))
    };
    let text = app.request("GET", "/metrics", None, None).await.body.as_str().expect("text").to_owned();
    assert_eq!(gauge(&text, "webhook_deliveries_pending"), 0.0);

    // a receiver nothing listens on; the event waits for its second attempt
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/in", listener.local_addr().expect("addr"));
    drop(listener);
    let res =
        app.post("/api/v3/webhooks", &account.key, serde_json::json!({"url": url, "events": ["lead.created"]})).await;
    assert_eq!(res.status, 201, "{:?}", res.body);
    let mut conn = app.conn().await;
    store::outbox::emit(&mut conn, account.tenant, "lead.created", serde_json::json!({"lead": {}}), app.clock.now())
        .await
        .expect("emit");
    app.run_jobs().await;
    app.clock.advance(time::Duration::minutes(10));
    let text = app.request("GET", "/metrics", None, None).await.body.as_str().expect("text").to_owned();
    assert_eq!(gauge(&text, "webhook_deliveries_pending"), 1.0);
    // due after about a minute, so it has waited about nine
    let age = gauge(&text, "webhook_oldest_due_age_seconds");
    assert!((500.0..=540.0).contains(&age), "{age}");
}

#[actix_web::test]
async fn a_nul_character_anywhere_in_a_body_is_a_422_naming_its_field() {
    // PostgreSQL text cannot hold NUL: every body reader refuses `\u0000` with 422 naming the
    // field, before any service or the database sees it (a product batch row once reached
    // the database and answered 500).
    let app = spawn().await;
    let account = app.account("all").await;
    let shop = app.post("/api/v3/catalogues", &account.key, json!({"name": "Duka"})).await;
    assert_eq!(shop.status, 201, "{:?}", shop.body);
    let batch = format!("/api/v3/catalogues/{}/products/batch", shop.data()["id"]);
    let cases = [
        (GROUPS, json!({"name": "Cus\u{0}tomers"}), "name"),
        (
            batch.as_str(),
            json!({"products": [{"sku": "A", "name": "Tea", "price": 1}, {"sku": "B\u{0}", "name": "Tea"}]}),
            "products[1].sku",
        ),
        (
            "/api/v3/leads",
            json!({"phone": "0712345678", "custom_fields": {"note\u{0}": "x"}}),
            "custom_fields.note\\u0000",
        ),
    ];
    for (path, body, field) in cases {
        let res = app.post(path, &account.key, body).await;
        assert_error(&res, 422);
        assert!(!field_errors(&res, field).is_empty(), "{path}: {:?}", res.body);
    }
    let list = app.get(GROUPS, &account.key).await;
    assert_eq!(list.data()["pagination"]["total"], 0, "nothing created: {:?}", list.body);
    let runs = app.get(&format!("/api/v3/catalogues/{}/syncs", shop.data()["id"]), &account.key).await;
    assert_eq!(runs.data()["pagination"]["total"], 0, "no run: {:?}", runs.body);
    // the data routes answer in their own envelope
    let res = app
        .post(
            &format!("/api/v3/data/tables/{}/records", uuid::Uuid::new_v4()),
            &account.key,
            json!({"data": {"name": "\u{0}"}}),
        )
        .await;
    assert_eq!(res.status, 422, "{:?}", res.body);
    assert_eq!(res.body["error"]["code"], "validation_error", "{:?}", res.body);
}

#[actix_web::test]
async fn a_query_its_reader_refuses_is_a_422_naming_the_member() {
    let app = spawn().await;
    let account = app.account("all").await;
    let res = app.request("GET", "/api/v3/contact-groups?page=1&page=2", Some(&account.key), None).await;
    assert_error(&res, 422);
    assert!(!field_errors(&res, "page").is_empty(), "{:?}", res.body);
    // every paging member is read, the one a `limit` outranks and an empty one included
    for (query, member) in [("limit=5&per_page=false", "per_page"), ("page=", "page"), ("limit=1e3", "limit")] {
        let res = app.request("GET", &format!("{GROUPS}?{query}"), Some(&account.key), None).await;
        assert_error(&res, 422);
        assert!(!field_errors(&res, member).is_empty(), "{query}: {:?}", res.body);
    }
}

#[actix_web::test]
async fn a_body_that_requires_nothing_may_be_left_out_and_is_described_so() {
    let app = spawn().await;
    let account = app.account("all").await;
    let group = app.post(GROUPS, &account.key, json!({"name": "Left alone"})).await;
    let path = format!("{GROUPS}/{}", group.body["data"]["uid"].as_str().expect("uid"));
    let res = app.request("PATCH", &path, Some(&account.key), None).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    assert_eq!(res.body["data"]["name"], "Left alone");
    let doc = app.request("GET", "/api-docs/openapi.json", None, None).await.body;
    let body = |path: &str, method: &str| doc["paths"][path][method]["requestBody"]["required"].clone();
    assert_eq!(body("/api/v3/contact-groups/{group}", "patch"), json!(false), "every member optional");
    assert_eq!(body("/api/v3/contact-groups", "post"), json!(true), "`name` is required");
}

#[actix_web::test]
async fn a_nul_character_in_the_query_is_a_422_and_in_the_path_a_404_never_a_500() {
    let app = spawn().await;
    let account = app.account("all").await;
    let shop = app.request("POST", "/api/v3/catalogues", Some(&account.key), Some(json!({"name": "Duka"}))).await;
    let shop = shop.data()["id"].as_i64().expect("shop id");
    for (path, field) in [
        (format!("/api/v3/catalogues/{shop}/inventory?sku[]=a&sku[]=%00x"), "sku[]"),
        ("/api/v3/leads?q=a%00".to_owned(), "q"),
    ] {
        let res = app.request("GET", &path, Some(&account.key), None).await;
        assert_error(&res, 422);
        assert!(!field_errors(&res, field).is_empty(), "{path}: {:?}", res.body);
    }
    let path = format!("/api/v3/catalogues/{shop}/products/by-sku/A%00B");
    assert_error(&app.request("GET", &path, Some(&account.key), None).await, 404);
}

#[actix_web::test]
async fn a_query_member_without_a_name_is_a_422() {
    // Found by the fuzz run's stateful phase: `?=1` passed every reader unseen.
    let app = spawn().await;
    let account = app.account("all").await;
    for path in ["/api/v3/contact-groups?=1", "/api/v3/leads?q=a&=x"] {
        let res = app.request("GET", path, Some(&account.key), None).await;
        assert_error(&res, 422);
        assert!(!field_errors(&res, "query").is_empty(), "{path}: {:?}", res.body);
    }
    let res = app.request("GET", "/api/v3/data/tables/x/records?=1", Some(&account.key), None).await;
    assert_eq!((res.status, &res.body["code"]), (422, &json!("validation_error")), "{:?}", res.body);
}

#[actix_web::test]
async fn a_query_member_the_operation_does_not_read_is_a_422_naming_it() {
    // Found by the fuzz run's stateful phase: `GET /contacts?stauts=x` answered every contact.
    let app = spawn().await;
    let account = app.account("all").await;
    for (path, member) in [
        ("/api/v3/contacts?q=a&stauts=sent", "stauts"),
        ("/api/v3/contact-groups?page=1&sort=name", "sort"),
        ("/api/v3/me?verbose=1", "verbose"),
        ("/api/v3/catalogues/1/inventory?skus=A", "skus"),
    ] {
        let res = app.request("GET", path, Some(&account.key), None).await;
        assert_error(&res, 422);
        assert!(!field_errors(&res, member).is_empty(), "{path}: {:?}", res.body);
    }
    let res = app.request("GET", "/api/v3/contacts?q=a&page=1", Some(&account.key), None).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    // the message says what the endpoint does read
    let res = app.request("GET", "/api/v3/webhooks?pgae=2", Some(&account.key), None).await;
    let said: Vec<&str> = field_errors(&res, "pgae").iter().filter_map(Value::as_str).collect();
    let said = said.join(" ");
    assert!(said.contains("page, limit, per_page"), "{said}");
    // a list member is read under its bare name too, and the data routes keep their envelope
    let res = app.request("GET", "/api/v3/catalogues/1/inventory?sku=A&sku%5B%5D=B", Some(&account.key), None).await;
    assert_eq!(res.status, 404, "the shop, not the members: {:?}", res.body);
    let res = app.request("GET", "/api/v3/data/tables/x/records?colour=red", Some(&account.key), None).await;
    assert_eq!((res.status, &res.body["code"]), (422, &json!("validation_error")), "{:?}", res.body);
}

#[actix_web::test]
async fn a_refusal_before_any_handler_keeps_the_data_routes_envelope() {
    let app = spawn().await;
    let account = app.account("all").await;
    for (path, status, code) in [
        ("/api/v3/data/tables/x/records?q=a%00", 422, "validation_error"),
        ("/api/v3/data/tables/a%00b/records", 404, "not_found"),
    ] {
        let res = app.request("GET", path, Some(&account.key), None).await;
        assert_eq!(res.status, status, "{path}: {:?}", res.body);
        assert_eq!(res.body["code"], code, "{path}: {:?}", res.body);
        assert_eq!(res.body["error"]["code"], code, "{path}: {:?}", res.body);
    }
}
