//! The OpenAPI 3.1 document generated from the code (issue 2, Gateway): version 3.1.0, every
//! route of the v3 tree, a snapshot so it never drifts unnoticed, and an offline docs page.

use api_tests::spawn;
use serde_json::Value;

/// Every operation the gateway routes, as the document should list it.
const OPERATIONS: &[(&str, &[&str])] = &[
    ("/api/v3/me", &["get"]),
    ("/api/v3/balance", &["get"]),
    ("/api/v3/contact-groups", &["get", "post"]),
    ("/api/v3/contact-groups/{group}", &["get", "patch", "delete"]),
    ("/api/v3/contact-groups/{group}/contacts", &["get", "post"]),
    ("/api/v3/contact-groups/{group}/contacts/batch", &["post"]),
    ("/api/v3/contact-groups/{group}/contacts/{contact}", &["get", "patch", "delete"]),
    ("/api/v3/contacts", &["get"]),
    ("/api/v3/contacts/{group_id}/all", &["post"]),
    ("/api/v3/contacts/{group_id}/store", &["post"]),
    ("/api/v3/contacts/{group_id}/search/{uid}", &["post"]),
    ("/api/v3/contacts/{group_id}/update/{uid}", &["patch"]),
    ("/api/v3/contacts/{group_id}/delete/{uid}", &["delete"]),
    ("/api/v3/sms/send", &["post"]),
    ("/api/v3/sms/{uid}", &["get"]),
    ("/api/v3/sms/senders", &["get"]),
    ("/api/v3/sms/campaign", &["post"]),
    ("/api/v3/sms/blacklist", &["get", "post"]),
    ("/api/v3/sms/blacklist/{number}", &["delete"]),
    ("/api/v3/campaign/{uid}/view", &["get"]),
    ("/api/v3/campaign/{uid}/resume", &["post"]),
    ("/api/v3/campaign/{uid}/cancel", &["post"]),
    ("/api/v3/messages", &["get"]),
    ("/api/v3/voice/otp", &["post"]),
    ("/api/v3/voice/messages", &["post"]),
    ("/api/v3/calls", &["get", "post"]),
    ("/api/v3/calls/{uid}", &["get"]),
    ("/api/v3/call-campaigns", &["get", "post"]),
    ("/api/v3/call-campaigns/{uid}", &["get"]),
    ("/api/v3/call-campaigns/{uid}/{action}", &["post"]),
    ("/api/v3/chat/send", &["post"]),
    ("/api/v3/chat/accounts", &["get"]),
    ("/api/v3/chat/conversations", &["get"]),
    ("/api/v3/chat/conversations/{id}", &["get"]),
    ("/api/v3/chat/{uid}", &["get"]),
    ("/api/v3/chat/templates", &["get", "post"]),
    ("/api/v3/chat/templates/sync", &["post"]),
    ("/api/v3/chat/templates/{id}", &["get", "patch", "delete"]),
    ("/api/v3/chat/templates/{id}/submit", &["post"]),
    ("/api/v3/chat/templates/{id}/refresh", &["post"]),
    ("/api/v3/chat/templates/{id}/deployments", &["post"]),
    ("/api/v3/chat/groups", &["get", "post"]),
    ("/api/v3/chat/groups/{id}", &["get", "patch", "delete"]),
    ("/api/v3/chat/groups/{id}/invites", &["post"]),
    ("/api/v3/chat/groups/{id}/invite-link/reset", &["post"]),
    ("/api/v3/chat/groups/{id}/join-requests", &["get"]),
    ("/api/v3/chat/groups/{id}/join-requests/approve", &["post"]),
    ("/api/v3/chat/groups/{id}/join-requests/reject", &["post"]),
    ("/api/v3/chat/groups/{id}/participants", &["delete"]),
    ("/api/v3/chat/groups/{id}/messages", &["post"]),
    ("/api/v3/chat/groups/{id}/pin", &["post"]),
    ("/api/v3/chat/forms", &["post"]),
    ("/api/v3/chat/forms/question-types", &["get"]),
    ("/api/v3/chat/forms/{form}", &["get", "patch"]),
    ("/api/v3/chat/forms/{form}/publish", &["post"]),
    ("/api/v3/chat/forms/{form}/send", &["post"]),
    ("/api/v3/chat/forms/{form}/answers", &["get"]),
    ("/api/v3/chat/forms/{form}/deployments", &["post"]),
    ("/api/v3/chat/forms/{form}/deployments/{waba}", &["delete"]),
    ("/api/v3/leads", &["get", "post"]),
    ("/api/v3/leads/{lead}", &["get", "patch", "delete"]),
    ("/api/v3/leads/{lead}/stage", &["post"]),
    ("/api/v3/leads/{lead}/labels", &["post", "delete"]),
    ("/api/v3/leads/{lead}/notes", &["post"]),
    ("/api/v3/leads/{lead}/assign", &["post"]),
    ("/api/v3/leads/{lead}/activities", &["get"]),
    ("/api/v3/lead-labels", &["get", "post"]),
    ("/api/v3/lead-labels/{label}", &["patch", "delete"]),
    ("/api/v3/lead-fields", &["get"]),
    ("/api/v3/catalogues", &["get", "post"]),
    ("/api/v3/catalogues/{catalogue}", &["get", "patch"]),
    ("/api/v3/catalogues/{catalogue}/products", &["get"]),
    ("/api/v3/catalogues/{catalogue}/products/batch", &["post"]),
    ("/api/v3/catalogues/{catalogue}/products/by-sku/{sku}", &["get", "put", "delete"]),
    ("/api/v3/catalogues/{catalogue}/products/by-sku/{sku}/movements", &["get"]),
    ("/api/v3/catalogues/{catalogue}/products/{product}", &["get", "put", "delete"]),
    ("/api/v3/catalogues/{catalogue}/products/{product}/movements", &["get"]),
    ("/api/v3/catalogues/{catalogue}/inventory", &["get", "post"]),
    ("/api/v3/catalogues/{catalogue}/syncs", &["get"]),
    ("/api/v3/catalogues/{catalogue}/syncs/{sync}", &["get"]),
    ("/api/v3/catalogues/{catalogue}/feeds", &["get", "post"]),
    ("/api/v3/catalogues/{catalogue}/feeds/{feed}", &["get"]),
    ("/api/v3/catalogues/{catalogue}/feeds/{feed}/run", &["post"]),
    ("/api/v3/catalogues/{catalogue}/listings", &["get"]),
    ("/api/v3/catalogues/send-product", &["post"]),
    ("/api/v3/catalogues/send-product-list", &["post"]),
    ("/api/v3/catalogues/send-catalogue", &["post"]),
    ("/api/v3/shop-links", &["post"]),
    ("/api/v3/carts", &["get"]),
    ("/api/v3/carts/{ref}", &["get"]),
    ("/api/v3/catalogues/{catalogue}/orders", &["post"]),
    ("/api/v3/catalogues/orders", &["get"]),
    ("/api/v3/catalogues/orders/{order}", &["get"]),
    ("/api/v3/catalogues/orders/{order}/status", &["put"]),
    ("/api/v3/webhooks", &["get", "post"]),
    ("/api/v3/webhooks/events", &["get"]),
    ("/api/v3/webhooks/notifications", &["get"]),
    ("/api/v3/webhooks/{webhook}", &["get", "patch", "delete"]),
    ("/api/v3/webhooks/{webhook}/test", &["post"]),
    ("/api/v3/webhooks/{webhook}/rotate-secret", &["post"]),
    ("/api/v3/webhooks/{webhook}/recover", &["post"]),
    ("/api/v3/webhooks/{webhook}/deliveries", &["get"]),
    ("/api/v3/webhooks/{webhook}/deliveries/{delivery}", &["get"]),
    ("/api/v3/webhooks/{webhook}/deliveries/{delivery}/replay", &["post"]),
    ("/api/v3/automations/events", &["get"]),
    ("/api/v3/automations/subscriptions", &["get"]),
    ("/api/v3/automations/schedules", &["get"]),
    ("/api/v3/operations", &["get"]),
    ("/api/v3/operations/{name}", &["get"]),
    ("/api/v3/operations/{name}/runs", &["post"]),
    ("/api/v3/operations/runs/{run}", &["get"]),
    ("/api/engine/tasks", &["post"]),
    ("/api/engine/runs", &["get"]),
    ("/api/engine/runs/{run_uuid}", &["get"]),
    ("/api/engine/runs/{run_uuid}/cancel", &["post"]),
    ("/api/engine/runs/{run_uuid}/approval", &["post"]),
    ("/api/engine/runs/{run_uuid}/events", &["get"]),
    ("/api/v3/payments", &["get"]),
    ("/api/v3/payments/{payment}", &["get"]),
    ("/api/v3/data/tables", &["get"]),
    ("/api/v3/data/tables/{table}/schema", &["get"]),
    ("/api/v3/data/tables/{table}/states", &["get"]),
    ("/api/v3/data/tables/{table}/records", &["get", "post"]),
    ("/api/v3/data/tables/{table}/records/{record}", &["get", "patch", "delete"]),
    ("/api/v3/data/tables/{table}/records/{record}/history", &["get"]),
    ("/api/v3/data/groups", &["get"]),
    ("/api/v3/data/groups/{group}", &["get"]),
    ("/api/v3/data/groups/{group}/overview", &["get"]),
    ("/files/{file}", &["get"]),
    ("/hooks/sms/{token}/delivery", &["post"]),
    ("/hooks/sms/{token}/inbound", &["post"]),
    ("/hooks/chat/{token}", &["get", "post"]),
    ("/hooks/voice/{token}", &["post"]),
    ("/hooks/payments/{token}", &["post"]),
];

const HTTP_METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

#[actix_web::test]
async fn the_document_is_openapi_3_1_with_version_3_1_0_and_every_route() {
    let app = spawn().await;
    let res = app.request("GET", "/api-docs/openapi.json", None, None).await;
    assert_eq!(res.status, 200);
    assert!(res.header("content-type").is_some_and(|v| v.starts_with("application/json")), "{:?}", res.headers);
    let doc = &res.body;
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")), "openapi {:?}", doc["openapi"]);
    assert_eq!(doc["info"]["version"], "3.1.0");

    let paths = doc["paths"].as_object().expect("paths");
    for (path, methods) in OPERATIONS {
        let item = paths.get(*path).unwrap_or_else(|| panic!("{path} is not documented"));
        for method in *methods {
            assert!(item.get(*method).is_some(), "{} {path} is not documented", method.to_uppercase());
        }
    }
    // And nothing is documented that the gateway does not route.
    for (path, item) in paths {
        let routed = OPERATIONS.iter().find(|(p, _)| p == path).unwrap_or_else(|| panic!("{path} is not routed"));
        for method in HTTP_METHODS.iter().filter(|m| item.get(**m).is_some()) {
            assert!(routed.1.contains(method), "{} {path} is documented but not routed", method.to_uppercase());
        }
    }
    // The bearer scheme is declared.
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
}

#[actix_web::test]
async fn every_documented_operation_is_served() {
    let app = spawn().await;
    let account = app.account("all").await;
    let doc = app.request("GET", "/api-docs/openapi.json", None, None).await.body;
    let paths = doc["paths"].as_object().expect("paths");
    for (path, item) in paths {
        let concrete = path
            .replace("{group}", "1")
            .replace("{group_id}", "1")
            .replace("{contact}", "ctc_missing")
            .replace("{uid}", "ctc_missing")
            .replace("{webhook}", "1")
            .replace("{lead}", "00000000-0000-0000-0000-000000000000")
            .replace("{label}", "1")
            .replace("{delivery}", "00000000-0000-0000-0000-000000000000");
        for method in HTTP_METHODS.iter().filter(|m| item.get(**m).is_some()) {
            let res = app.request(&method.to_uppercase(), &concrete, Some(&account.key), None).await;
            assert_ne!(res.status, 405, "{method} {path}: {:?}", res.body);
            // A missing resource says what is missing; an unrouted path says only "Not found.".
            assert_ne!(res.body["message"], "Not found.", "{method} {path} is not routed: {:?}", res.body);
        }
    }
}

#[actix_web::test]
async fn every_path_parameter_is_in_its_path_and_every_query_parameter_is_not() {
    let app = spawn().await;
    let doc = app.request("GET", "/api-docs/openapi.json", None, None).await.body;
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in HTTP_METHODS.iter().filter(|m| item.get(**m).is_some()) {
            for parameter in item[*method]["parameters"].as_array().into_iter().flatten() {
                let name = parameter["name"].as_str().expect("name");
                let in_template = path.contains(&format!("{{{name}}}"));
                let in_path = parameter["in"] == "path";
                assert_eq!(in_path, in_template, "{method} {path}: parameter {name} is `in: {}`", parameter["in"]);
            }
        }
    }
}

/// OpenAPI requires it, clients generated from the document name their methods by it, and
/// schemathesis's stateful phase resolves the links it infers by it (two `list`s sent it from a
/// table's records to the webhooks).
#[actix_web::test]
async fn every_operation_id_is_unique() {
    let app = spawn().await;
    let doc = app.request("GET", "/api-docs/openapi.json", None, None).await.body;
    let mut seen = std::collections::BTreeMap::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in HTTP_METHODS.iter().filter(|m| item.get(**m).is_some()) {
            let id = item[*method]["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path} has no id"));
            let operation = format!("{} {path}", method.to_uppercase());
            if let Some(other) = seen.insert(id.to_owned(), operation.clone()) {
                panic!("operationId {id} names both {other} and {operation}");
            }
        }
    }
}

#[actix_web::test]
async fn the_document_matches_its_snapshot() {
    let app = spawn().await;
    let res = app.request("GET", "/api-docs/openapi.json", None, None).await;
    assert_eq!(res.status, 200);
    let doc: Value = res.body;
    // Sorted, so the snapshot does not depend on whether serde_json preserves key order (a
    // feature another crate of the build may switch on).
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("openapi", doc);
    });
}

/// Every `src=` and `href=` value, and `url(...)` in styles, of an HTML page.
fn references(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    let lower = html.to_ascii_lowercase();
    for marker in ["src=", "href=", "url(", "@import"] {
        let mut from = 0;
        while let Some(at) = lower[from..].find(marker) {
            let start = from + at + marker.len();
            let rest = html[start..].trim_start_matches(['"', '\'', ' ']);
            let end = rest.find(['"', '\'', ')', ' ', '>']).unwrap_or(rest.len());
            found.push(rest[..end].to_owned());
            from = start;
        }
    }
    found
}

#[actix_web::test]
async fn the_docs_page_works_offline() {
    let app = spawn().await;
    let res = app.request("GET", "/api-docs", None, None).await;
    assert_eq!(res.status, 200);
    assert!(res.header("content-type").is_some_and(|v| v.starts_with("text/html")), "{:?}", res.headers);
    let html = res.body.as_str().expect("an HTML page");
    assert!(html.contains("/api-docs/openapi.json"), "the page reads the document from this server");
    for reference in references(html) {
        let r = reference.to_ascii_lowercase();
        assert!(
            !(r.starts_with("http:") || r.starts_with("https:") || r.starts_with("//")),
            "the page loads {reference} from elsewhere"
        );
    }
    let lower = html.to_ascii_lowercase();
    for cdn in ["cdn.", "unpkg.com", "jsdelivr", "cdnjs", "googleapis"] {
        assert!(!lower.contains(cdn), "the page mentions {cdn}");
    }
}
