//! OAuth 2.1 for MCP clients (issue 16, Credentials): discovery, registration and metadata
//! documents, the sign-in and consent page over HTTP (its browser side is `consent_page`),
//! PKCE, the code exchange, refresh rotation with reuse detection, revocation, resources, and
//! the tokens driving the official SDK's client against the tools.

use std::collections::BTreeMap;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Listening, TestApp, json};
use base64::Engine;
use serde_json::Value;

use super::support::{MANAGER, call, connect, initialize, ok, post, refused, tool_names};

/// The public URL the test app is configured with: the issuer, and the resources' origin.
pub(crate) const BASE: &str = "http://127.0.0.1:8080";
pub(crate) const PASSWORD: &str = "correct horse battery staple";
/// A native client's loopback redirect URI (nothing needs to listen: the test reads `Location`).
const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// A browser as the page sees one: cookies kept per name, redirects not followed.
pub(crate) struct Browser {
    http: reqwest::Client,
    base: String,
    cookies: BTreeMap<String, String>,
}

impl Browser {
    pub(crate) fn new(server: &Listening) -> Self {
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        Self { http, base: server.url.clone(), cookies: BTreeMap::new() }
    }

    fn keep_cookies(&mut self, res: &reqwest::Response) {
        for set in res.headers().get_all("set-cookie") {
            let set = set.to_str().expect("ascii");
            let (name, value) = set.split(';').next().and_then(|pair| pair.split_once('=')).expect("name=value");
            self.cookies.insert(name.to_owned(), value.to_owned());
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }

    pub(crate) async fn get(&mut self, path: &str) -> (reqwest::StatusCode, reqwest::header::HeaderMap, String) {
        let res = self.http.get(format!("{}{path}", self.base)).header("cookie", self.cookie_header()).send().await;
        self.answer(res.expect("GET")).await
    }

    pub(crate) async fn post(
        &mut self,
        path: &str,
        fields: &[(&str, &str)],
    ) -> (reqwest::StatusCode, reqwest::header::HeaderMap, String) {
        let res = self
            .http
            .post(format!("{}{path}", self.base))
            .header("cookie", self.cookie_header())
            .form(fields)
            .send()
            .await;
        self.answer(res.expect("POST")).await
    }

    /// Posts the sign-in form with the page's `request` and `csrf`.
    pub(crate) async fn sign_in(
        &mut self,
        email: &str,
        password: &str,
        request: &str,
        csrf: &str,
    ) -> (reqwest::StatusCode, reqwest::header::HeaderMap, String) {
        self.post("/oauth/login", &[("email", email), ("password", password), ("request", request), ("csrf", csrf)])
            .await
    }

    async fn answer(&mut self, res: reqwest::Response) -> (reqwest::StatusCode, reqwest::header::HeaderMap, String) {
        self.keep_cookies(&res);
        let (status, headers) = (res.status(), res.headers().clone());
        (status, headers, res.text().await.expect("body"))
    }
}

/// The value of the page's form field `name` (the hidden `request` and `csrf`).
pub(crate) fn field(html: &str, name: &str) -> String {
    let start = html.find(&format!("name=\"{name}\" value=\"")).unwrap_or_else(|| panic!("no field {name} in {html}"));
    let rest = &html[start + name.len() + 15..];
    let value = &rest[..rest.find('"').expect("closing quote")];
    value
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#123;", "{")
        .replace("&amp;", "&")
}

fn location(headers: &reqwest::header::HeaderMap) -> String {
    headers["location"].to_str().expect("location").to_owned()
}

/// The query parameters of a redirect.
fn query_of(url: &str) -> BTreeMap<String, String> {
    serde_urlencoded::from_str(url.split_once('?').map_or("", |(_, q)| q)).expect("query")
}

/// A PKCE pair: a verifier and its S256 challenge.
pub(crate) fn pkce(seed: &str) -> (String, String) {
    let seed: String = seed.chars().filter(char::is_ascii_alphanumeric).collect();
    let verifier = format!("{seed:-<43}");
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    (verifier, base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest))
}

/// RFC 7591 registration of a native client.
pub(crate) async fn register(server: &Listening, redirect: &str) -> String {
    let res = reqwest::Client::new()
        .post(format!("{}/oauth/register", server.url))
        .json(
            &json!({"client_name": "Claude (test)", "redirect_uris": [redirect], "token_endpoint_auth_method": "none"}),
        )
        .send()
        .await
        .expect("register");
    assert_eq!(res.status(), 201);
    let body: Value = res.json().await.expect("json");
    body["client_id"].as_str().expect("client_id").to_owned()
}

/// A user of a new tenant holding `permissions`, who signs in with `email` and [`PASSWORD`].
pub(crate) async fn person<S, B>(app: &TestApp<S>, permissions: &str, email: &str) -> (kernel::TenantId, kernel::UserId)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let tenant = app.tenant("Acme").await;
    let user = app.user(tenant, permissions).await;
    accounts::sign_in::set_login(&mut *app.conn().await, tenant, user, email, PASSWORD).await.expect("set login");
    (tenant, user)
}

/// The authorization URL's path and query.
pub(crate) fn authorize_path(client_id: &str, challenge: &str, scope: &str, extra: &[(&str, &str)]) -> String {
    let mut params = vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
        ("state", "xyz-state"),
        ("scope", scope),
        ("resource", "http://127.0.0.1:8080/mcp"),
    ];
    params.retain(|(k, _)| !extra.iter().any(|(e, _)| e == k));
    params.extend_from_slice(extra);
    format!("/oauth/authorize?{}", serde_urlencoded::to_string(&params).expect("query"))
}

/// Signs in on the page and approves: the code the client receives.
async fn consent(browser: &mut Browser, path: &str, email: &str) -> String {
    let (status, _, page) = browser.get(path).await;
    assert_eq!(status, 200, "{page}");
    let (request, csrf) = (field(&page, "request"), field(&page, "csrf"));
    let (status, headers, _) = browser.sign_in(email, PASSWORD, &request, &csrf).await;
    assert_eq!(status, 303);
    let (status, _, page) = browser.get(&location(&headers)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Allow access?"), "{page}");
    let (request, csrf) = (field(&page, "request"), field(&page, "csrf"));
    let (status, headers, _) =
        browser.post("/oauth/authorize", &[("decision", "approve"), ("request", &request), ("csrf", &csrf)]).await;
    assert_eq!(status, 303);
    let back = query_of(&location(&headers));
    assert_eq!(back["state"], "xyz-state");
    assert_eq!(back["iss"], BASE, "RFC 9207");
    back["code"].clone()
}

async fn token(server: &Listening, fields: &[(&str, &str)]) -> (u16, Value) {
    let res =
        reqwest::Client::new().post(format!("{}/oauth/token", server.url)).form(fields).send().await.expect("token");
    let status = res.status().as_u16();
    assert_eq!(res.headers()["cache-control"], "no-store");
    (status, res.json().await.expect("json"))
}

async fn exchange(server: &Listening, client_id: &str, code: &str, verifier: &str) -> (u16, Value) {
    token(
        server,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", client_id),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
            ("resource", "http://127.0.0.1:8080/mcp"),
        ],
    )
    .await
}

async fn refresh(server: &Listening, client_id: &str, refresh_token: &str) -> (u16, Value) {
    token(server, &[("grant_type", "refresh_token"), ("client_id", client_id), ("refresh_token", refresh_token)]).await
}

/// Registration, sign-in and consent, and the exchange: the tokens.
pub(crate) async fn tokens(server: &Listening, email: &str, scope: &str, extra: &[(&str, &str)]) -> (String, Value) {
    let client_id = register(server, REDIRECT).await;
    let (verifier, challenge) = pkce(email);
    let mut browser = Browser::new(server);
    let code = consent(&mut browser, &authorize_path(&client_id, &challenge, scope, extra), email).await;
    let (status, tokens) = exchange(server, &client_id, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    (client_id, tokens)
}

fn text(value: &Value, member: &str) -> String {
    value[member].as_str().unwrap_or_else(|| panic!("{member} in {value}")).to_owned()
}

#[actix_web::test]
async fn discovery_documents_describe_the_server_and_each_resource() {
    let app = api_tests::spawn().await;
    let server = app.listen();
    let http = reqwest::Client::new();
    let get = |path: &str| http.get(format!("{}{path}", server.url)).send();

    let metadata: Value =
        get("/.well-known/oauth-authorization-server").await.expect("get").json().await.expect("json");
    assert_eq!(metadata["issuer"], BASE);
    assert_eq!(metadata["authorization_endpoint"], format!("{BASE}/oauth/authorize"));
    assert_eq!(metadata["token_endpoint"], format!("{BASE}/oauth/token"));
    assert_eq!(metadata["registration_endpoint"], format!("{BASE}/oauth/register"));
    assert_eq!(metadata["revocation_endpoint"], format!("{BASE}/oauth/revoke"));
    assert_eq!(metadata["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(metadata["client_id_metadata_document_supported"], true);
    assert_eq!(metadata["authorization_response_iss_parameter_supported"], true);
    // browser-based clients may read it, and ask first
    let preflight = http
        .request(reqwest::Method::OPTIONS, format!("{}/oauth/register", server.url))
        .header("origin", "https://inspector.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type")
        .send()
        .await
        .expect("preflight");
    assert_eq!(preflight.status(), 204);
    assert_eq!(preflight.headers()["access-control-allow-origin"], "*");
    assert!(preflight.headers()["access-control-allow-headers"].to_str().expect("ascii").contains("Content-Type"));
    let scopes = metadata["scopes_supported"].as_array().expect("scopes");
    for scope in ["mcp:use", "mcp:contacts", "mcp:groups", "mcp:send", "mcp:approve"] {
        assert!(scopes.contains(&json!(scope)), "{scope}");
    }

    for (path, resource) in [
        ("", BASE.to_owned()),
        ("/mcp", format!("{BASE}/mcp")),
        ("/mcp/v1/contacts", format!("{BASE}/mcp/v1/contacts")),
    ] {
        let res = get(&format!("/.well-known/oauth-protected-resource{path}")).await.expect("get");
        assert_eq!(res.status(), 200, "{path}");
        let document: Value = res.json().await.expect("json");
        assert_eq!(document["resource"], resource);
        assert_eq!(document["authorization_servers"], json!([BASE]));
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
    }
    let contacts: Value =
        get("/.well-known/oauth-protected-resource/mcp/v1/contacts").await.expect("get").json().await.expect("json");
    assert!(contacts["scopes_supported"].as_array().expect("scopes").contains(&json!("mcp:contacts")));
    assert!(!contacts["scopes_supported"].as_array().expect("scopes").contains(&json!("mcp:data")));
    let res = get("/.well-known/oauth-protected-resource/mcp/v1/nope").await.expect("get");
    assert_eq!(res.status(), 404);
}

#[actix_web::test]
async fn registration_takes_public_clients_with_safe_redirect_uris() {
    let app = api_tests::spawn().await;
    let server = app.listen();
    let register =
        |body: Value| reqwest::Client::new().post(format!("{}/oauth/register", server.url)).json(&body).send();

    let res = register(json!({"client_name": "Cursor", "redirect_uris": ["https://cursor.example/cb", REDIRECT]}))
        .await
        .expect("register");
    assert_eq!(res.status(), 201);
    let client: Value = res.json().await.expect("json");
    assert!(text(&client, "client_id").starts_with("svc_client_"));
    assert_eq!(client["token_endpoint_auth_method"], "none");
    assert_eq!(client["grant_types"], json!(["authorization_code", "refresh_token"]));
    assert_eq!(client["redirect_uris"], json!(["https://cursor.example/cb", REDIRECT]));
    assert!(client["client_id_issued_at"].is_i64());

    for (body, error) in [
        (json!({"redirect_uris": ["http://cursor.example/cb"]}), "invalid_redirect_uri"),
        (json!({"redirect_uris": ["https://cursor.example/cb#x"]}), "invalid_redirect_uri"),
        (json!({"redirect_uris": []}), "invalid_redirect_uri"),
        (json!({"client_name": "x"}), "invalid_redirect_uri"),
        (
            json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"}),
            "invalid_client_metadata",
        ),
        (json!({"redirect_uris": [REDIRECT], "grant_types": ["implicit"]}), "invalid_client_metadata"),
        (json!({"redirect_uris": [REDIRECT], "client_name": 5}), "invalid_client_metadata"),
        (json!(["not", "an", "object"]), "invalid_client_metadata"),
    ] {
        let res = register(body.clone()).await.expect("register");
        assert_eq!(res.status(), 400, "{body}");
        let refusal: Value = res.json().await.expect("json");
        assert_eq!(refusal["error"], error, "{body}: {refusal}");
        assert!(refusal["error_description"].as_str().is_some_and(|d| !d.is_empty()));
    }
}

/// The whole flow a client such as Claude runs: registration, sign-in and consent, the PKCE
/// exchange, tools through the SDK with the access token, a refresh, and a replayed refresh
/// token revoking everything.
#[actix_web::test]
async fn a_client_signs_in_calls_tools_refreshes_and_a_replayed_refresh_token_ends_the_grant() {
    let app = api_tests::spawn().await;
    let server = app.listen();
    let (tenant, _) = person(&app, MANAGER, "amina@duka.example").await;
    let (client_id, first) = tokens(&server, "amina@duka.example", "mcp:contacts mcp:write", &[]).await;
    assert_eq!(first["token_type"], "Bearer");
    assert_eq!(first["expires_in"], 3600);
    assert_eq!(first["scope"], "mcp:contacts mcp:use mcp:write");
    let access = text(&first, "access_token");
    assert!(access.starts_with("svc_mcp_at_"));

    let client = connect(&server, "/mcp/v1/contacts", &access).await;
    assert!(tool_names(&client).await.contains(&"upsert_lead".to_owned()));
    let upserted = ok(&client, "upsert_lead", json!({"name": "Amina Juma", "phone": "0712000001"})).await;
    let lead = text(&upserted["lead"], "id");
    // the lead is the consenting person's tenant's
    let rows = api_tests::sql_rows(&app.pool, "SELECT tenant_id FROM leads").await;
    assert_eq!(rows[0]["tenant_id"], tenant.0);
    // an access token is no REST key
    assert_eq!(app.get("/api/v3/me", &access).await.status, 401);

    // refresh: a new pair; the refresh token is rotated
    let (status, second) = refresh(&server, &client_id, &text(&first, "refresh_token")).await;
    assert_eq!(status, 200, "{second}");
    assert_ne!(second["refresh_token"], first["refresh_token"]);
    assert_ne!(second["access_token"], first["access_token"]);
    let client = connect(&server, "/mcp", &text(&second, "access_token")).await;
    assert_eq!(ok(&client, "get_lead", json!({"lead": lead})).await["id"], lead.as_str());
    // another client may not use it, nor spend it
    let other = register(&server, REDIRECT).await;
    let (status, refusal) = refresh(&server, &other, &text(&second, "refresh_token")).await;
    assert_eq!((status, refusal["error"].as_str()), (400, Some("invalid_grant")));
    assert!(text(&refusal, "error_description").contains("another client"), "{refusal}");
    let unspent = api_tests::sql_rows(
        &app.pool,
        "SELECT count(*) AS n FROM oauth_tokens WHERE kind = 'refresh' AND used_at IS NULL",
    )
    .await;
    assert_eq!(unspent[0]["n"], 1, "the newest refresh token is still unused");

    // the first refresh token again: a replay, so the whole grant ends
    let (status, refusal) = refresh(&server, &client_id, &text(&first, "refresh_token")).await;
    assert_eq!((status, refusal["error"].as_str()), (400, Some("invalid_grant")));
    let res = post(&server, "/mcp", Some(&text(&second, "access_token")), initialize()).await;
    assert_eq!(res.status(), 401);
    let (status, _) = refresh(&server, &client_id, &text(&second, "refresh_token")).await;
    assert_eq!(status, 400, "the newest refresh token ended with its grant");
}

#[actix_web::test]
async fn consent_grants_only_what_the_person_may_do_and_every_call_checks_again() {
    let app = api_tests::spawn().await;
    let server = app.listen();
    let (tenant, user) = person(&app, "leads.view", "juma@duka.example").await;
    let colleague = app.user(tenant, "all").await;
    let key = app.key(tenant, colleague).await;
    let lead = crate::leads::support::create(&app, &key, json!({"name": "Neema", "phone": "0712000002"})).await;
    let lead = text(&lead, "id");

    // the consent page says what will really be granted
    let client_id = register(&server, REDIRECT).await;
    let (verifier, challenge) = pkce("juma");
    let mut browser = Browser::new(&server);
    let (_, _, page) = browser.get(&authorize_path(&client_id, &challenge, "mcp:contacts mcp:write", &[])).await;
    let (request, csrf) = (field(&page, "request"), field(&page, "csrf"));
    let (_, headers, _) = browser.sign_in("juma@duka.example", PASSWORD, &request, &csrf).await;
    let (_, _, page) = browser.get(&location(&headers)).await;
    assert!(page.contains("It will be granted 2 of the 3 scopes"), "{page}");
    assert!(page.contains("Claude (test)") && page.contains("127.0.0.1:9"), "client name and redirect host: {page}");
    let (request, csrf) = (field(&page, "request"), field(&page, "csrf"));
    let (_, headers, _) =
        browser.post("/oauth/authorize", &[("decision", "approve"), ("request", &request), ("csrf", &csrf)]).await;
    let code = query_of(&location(&headers))["code"].clone();
    let (_, tokens) = exchange(&server, &client_id, &code, &verifier).await;
    assert_eq!(tokens["scope"], "mcp:contacts mcp:use");

    let client = connect(&server, "/mcp/v1/contacts", &text(&tokens, "access_token")).await;
    assert!(!tool_names(&client).await.contains(&"upsert_lead".to_owned()));
    let error = refused(&client, "upsert_lead", json!({"name": "x", "phone": "0712000003"})).await;
    assert_eq!(error["reason"], "insufficient_scope");
    assert_eq!(ok(&client, "get_lead", json!({"lead": lead})).await["id"], lead.as_str());
    // the person loses leads.view: the very next call is refused
    app.set_permissions(user, "contacts.view").await;
    let result = call(&client, "get_lead", json!({"lead": lead})).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
}

#[actix_web::test]
async fn pkce_redirects_and_codes_are_strict() {
    let app = api_tests::spawn().await;
    let server = app.listen();
    person(&app, MANAGER, "neema@duka.example").await;
    let client_id = register(&server, REDIRECT).await;
    let (verifier, challenge) = pkce("neema");
    let mut browser = Browser::new(&server);

    // the client and redirect URI cannot be trusted: a page, never a redirect
    for extra in [
        vec![("redirect_uri", "http://127.0.0.1:9/elsewhere")],
        vec![("redirect_uri", "https://evil.example/callback")],
        vec![("client_id", "svc_client_unknown")],
    ] {
        let (status, headers, page) =
            browser.get(&authorize_path(&client_id, &challenge, "mcp:contacts", &extra)).await;
        assert_eq!(status, 400, "{extra:?}");
        assert!(headers.get("location").is_none());
        assert!(page.contains("cannot go on"), "{page}");
    }
    // the rest goes back to the client with the error, the state and the issuer
    for (extra, error) in [
        (vec![("code_challenge_method", "plain")], "invalid_request"),
        (vec![("code_challenge", "")], "invalid_request"),
        (vec![("response_type", "token")], "unsupported_response_type"),
        (vec![("scope", "mcp:everything")], "invalid_scope"),
        (vec![("resource", "https://elsewhere.example/mcp")], "invalid_target"),
    ] {
        let (status, headers, _) = browser.get(&authorize_path(&client_id, &challenge, "mcp:contacts", &extra)).await;
        assert_eq!(status, 303, "{extra:?}");
        let back = query_of(&location(&headers));
        assert!(location(&headers).starts_with(REDIRECT));
        assert_eq!(
            (back["error"].as_str(), back["state"].as_str(), back["iss"].as_str()),
            (error, "xyz-state", BASE),
            "{extra:?}"
        );
    }
    // a loopback redirect URI may name another port (RFC 8252 §7.3)
    let other_port =
        authorize_path(&client_id, &challenge, "mcp:contacts", &[("redirect_uri", "http://127.0.0.1:5555/callback")]);
    assert_eq!(browser.get(&other_port).await.0, 200);

    // a wrong verifier spends the code
    let code =
        consent(&mut browser, &authorize_path(&client_id, &challenge, "mcp:contacts", &[]), "neema@duka.example").await;
    let (status, refusal) = exchange(&server, &client_id, &code, &pkce("someone else").0).await;
    assert_eq!((status, refusal["error"].as_str()), (400, Some("invalid_grant")));
    assert_eq!(exchange(&server, &client_id, &code, &verifier).await.0, 400);

    // a code used twice revokes what the first use issued
    let code =
        consent(&mut browser, &authorize_path(&client_id, &challenge, "mcp:contacts", &[]), "neema@duka.example").await;
    let (status, tokens) = exchange(&server, &client_id, &code, &verifier).await;
    assert_eq!(status, 200);
    assert_eq!(post(&server, "/mcp", Some(&text(&tokens, "access_token")), initialize()).await.status(), 200);
    assert_eq!(exchange(&server, &client_id, &code, &verifier).await.0, 400);
    assert_eq!(post(&server, "/mcp", Some(&text(&tokens, "access_token")), initialize()).await.status(), 401);

    // a code lasts a minute
    let code =
        consent(&mut browser, &authorize_path(&client_id, &challenge, "mcp:contacts", &[]), "neema@duka.example").await;
    app.clock.advance(time::Duration::seconds(61));
    let (status, refusal) = exchange(&server, &client_id, &code, &verifier).await;
    assert_eq!((status, refusal["error"].as_str()), (400, Some("invalid_grant")));
    // the token endpoint takes forms only, and the two grant types
    let res = reqwest::Client::new()
        .post(format!("{}/oauth/token", server.url))
        .json(&json!({"grant_type": "authorization_code"}))
        .send()
        .await
        .expect("token");
    assert_eq!(res.status(), 400);
    let (status, refusal) = token(&server, &[("grant_type", "password")]).await;
    assert_eq!((status, refusal["error"].as_str()), (400, Some("unsupported_grant_type")));
}

#[actix_web::test]
async fn a_token_serves_only_its_resource_and_lasts_an_hour() {
    let app = api_tests::spawn().await;
    let server = app.listen();
    person(&app, MANAGER, "asha@duka.example").await;
    let contacts_only = [("resource", "http://127.0.0.1:8080/mcp/v1/contacts")];
    let client_id = register(&server, REDIRECT).await;
    let (verifier, challenge) = pkce("asha");
    let mut browser = Browser::new(&server);
    let code = consent(
        &mut browser,
        &authorize_path(&client_id, &challenge, "mcp:contacts mcp:data", &contacts_only),
        "asha@duka.example",
    )
    .await;
    // the token endpoint's resource must be the consented one
    let (status, refusal) = exchange(&server, &client_id, &code, &verifier).await;
    assert_eq!((status, refusal["error"].as_str()), (400, Some("invalid_target")));
    let code = consent(
        &mut browser,
        &authorize_path(&client_id, &challenge, "mcp:contacts mcp:data", &contacts_only),
        "asha@duka.example",
    )
    .await;
    let (status, tokens) = token(
        &server,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", &client_id),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", &verifier),
        ],
    )
    .await;
    assert_eq!(status, 200, "{tokens}");
    let access = text(&tokens, "access_token");
    assert_eq!(post(&server, "/mcp/v1/contacts", Some(&access), initialize()).await.status(), 200);
    for path in ["/mcp/v1/data", "/mcp"] {
        let res = post(&server, path, Some(&access), initialize()).await;
        assert_eq!(res.status(), 401, "{path}");
    }
    app.clock.advance(time::Duration::minutes(61));
    let res = post(&server, "/mcp/v1/contacts", Some(&access), initialize()).await;
    assert_eq!(res.status(), 401);
    let body: Value = res.json().await.expect("json");
    assert!(body["error_description"].as_str().is_some_and(|d| d.contains("expired")), "{body}");
    // the refresh token still works, and says it is no access token when sent as one
    assert_eq!(
        post(&server, "/mcp/v1/contacts", Some(&text(&tokens, "refresh_token")), initialize()).await.status(),
        401
    );
    let (status, second) = refresh(&server, &client_id, &text(&tokens, "refresh_token")).await;
    assert_eq!(status, 200);

    // a day after they expire, a grant's old tokens go with its next refresh; the used refresh
    // token stays until its own expiry, so a replay is still caught
    app.clock.advance(time::Duration::hours(26));
    let (status, third) = refresh(&server, &client_id, &text(&second, "refresh_token")).await;
    assert_eq!(status, 200);
    let kinds = api_tests::sql_rows(
        &app.pool,
        "SELECT kind, count(*) AS n FROM oauth_tokens WHERE grant_id = (SELECT max(id) FROM oauth_grants)
         GROUP BY kind ORDER BY kind",
    )
    .await;
    assert_eq!(kinds, [json!({"kind": "access", "n": 1}), json!({"kind": "refresh", "n": 3})]);
    let (status, _) = refresh(&server, &client_id, &text(&tokens, "refresh_token")).await;
    assert_eq!(status, 400);
    assert_eq!(
        post(&server, "/mcp/v1/contacts", Some(&text(&third, "access_token")), initialize()).await.status(),
        401
    );
}

#[actix_web::test]
async fn revocation_ends_an_access_token_or_a_whole_grant() {
    let app = api_tests::spawn().await;
    let server = app.listen();
    person(&app, MANAGER, "baraka@duka.example").await;
    let (client_id, tokens) = tokens(&server, "baraka@duka.example", "mcp:contacts", &[]).await;
    let revoke = |token: String| {
        reqwest::Client::new()
            .post(format!("{}/oauth/revoke", server.url))
            .form(&[("token", token.as_str()), ("client_id", client_id.as_str())])
            .send()
    };
    let access = text(&tokens, "access_token");
    assert_eq!(
        revoke("svc_mcp_at_unknown".into()).await.expect("revoke").status(),
        200,
        "unknown tokens too (RFC 7009 §2.2)"
    );
    assert_eq!(revoke(access.clone()).await.expect("revoke").status(), 200);
    assert_eq!(post(&server, "/mcp", Some(&access), initialize()).await.status(), 401);
    // the refresh token survives an access token's revocation, and its own ends the grant
    let (status, second) = refresh(&server, &client_id, &text(&tokens, "refresh_token")).await;
    assert_eq!(status, 200);
    assert_eq!(revoke(text(&second, "refresh_token")).await.expect("revoke").status(), 200);
    assert_eq!(post(&server, "/mcp", Some(&text(&second, "access_token")), initialize()).await.status(), 401);
}

#[actix_web::test]
async fn the_page_checks_csrf_refuses_framing_and_slows_down_failures() {
    let app = api_tests::spawn().await;
    let server = app.listen();
    person(&app, MANAGER, "zawadi@duka.example").await;
    let client_id = register(&server, REDIRECT).await;
    let path = authorize_path(&client_id, &pkce("zawadi").1, "mcp:contacts", &[]);
    let mut browser = Browser::new(&server);
    let (status, headers, page) = browser.get(&path).await;
    assert_eq!(status, 200);
    assert_eq!(headers["x-frame-options"], "DENY");
    let policy = headers["content-security-policy"].to_str().expect("csp");
    assert!(policy.contains("frame-ancestors 'none'") && policy.contains("default-src 'none'"), "{policy}");
    assert_eq!(headers["cache-control"], "no-store");
    let cookie = headers["set-cookie"].to_str().expect("cookie");
    assert!(cookie.starts_with("__Host-svc_csrf="), "{cookie}");
    for flag in ["Secure", "HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(flag), "{flag} in {cookie}");
    }
    let (request, csrf) = (field(&page, "request"), field(&page, "csrf"));
    // a form without the cookie's token is refused
    let (status, _, page) = browser.sign_in("zawadi@duka.example", PASSWORD, &request, "forged").await;
    assert_eq!(status, 403, "{page}");
    // wrong passwords: five are answered, then each attempt waits, the right password included
    for _ in 0..5 {
        let (status, _, page) = browser.sign_in("zawadi@duka.example", "wrong password", &request, &csrf).await;
        assert_eq!(status, 401);
        assert!(page.contains("Wrong email or password."), "{page}");
    }
    let (status, headers, page) = browser.sign_in("zawadi@duka.example", PASSWORD, &request, &csrf).await;
    assert_eq!(status, 429, "{page}");
    assert_eq!(headers["retry-after"], "30");
    // an unknown email gets the same answer as a wrong password
    let (status, _, page) = browser.sign_in("nobody@duka.example", PASSWORD, &request, &csrf).await;
    assert_eq!(status, 401);
    assert!(page.contains("Wrong email or password."));
    app.clock.advance(time::Duration::seconds(31));
    let (status, headers, _) = browser.sign_in("zawadi@duka.example", PASSWORD, &request, &csrf).await;
    assert_eq!(status, 303);
    let session = headers["set-cookie"].to_str().expect("cookie");
    assert!(
        session.starts_with("__Host-svc_session=") && session.contains("HttpOnly") && session.contains("SameSite=Lax"),
        "{session}"
    );
    // the consent form without its token is refused too
    let (_, _, page) = browser.get(&location(&headers)).await;
    let request = field(&page, "request");
    let (status, _, _) =
        browser.post("/oauth/authorize", &[("decision", "approve"), ("request", &request), ("csrf", "")]).await;
    assert_eq!(status, 403);
    // denying sends the person back with access_denied
    let (status, headers, _) = browser
        .post("/oauth/authorize", &[("decision", "deny"), ("request", &request), ("csrf", &field(&page, "csrf"))])
        .await;
    assert_eq!(status, 303);
    assert_eq!(query_of(&location(&headers))["error"], "access_denied");
}

#[actix_web::test]
async fn a_client_id_metadata_document_is_fetched_through_the_address_guard() {
    let app = api_tests::spawn().await;
    let server = app.listen();
    person(&app, MANAGER, "imani@duka.example").await;
    let documents = wiremock::MockServer::start().await;
    let client_id = format!("{}/oauth/client.json", documents.uri());
    wiremock::Mock::given(wiremock::matchers::path("/oauth/client.json"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(json!({
            "client_id": client_id, "client_name": "VS Code (document)", "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none"})))
        .expect(1)
        .mount(&documents)
        .await;
    let wrong = format!("{}/oauth/other.json", documents.uri());
    wiremock::Mock::given(wiremock::matchers::path("/oauth/other.json"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(json!({
            "client_id": "https://elsewhere.example/client.json", "redirect_uris": [REDIRECT]})))
        .mount(&documents)
        .await;

    let (verifier, challenge) = pkce("imani");
    let mut browser = Browser::new(&server);
    let (status, _, page) = browser.get(&authorize_path(&client_id, &challenge, "mcp:contacts", &[])).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("VS Code (document)"), "{page}");
    // the whole flow with it; its copy is kept for an hour (the mock expects one fetch)
    let code =
        consent(&mut browser, &authorize_path(&client_id, &challenge, "mcp:contacts", &[]), "imani@duka.example").await;
    let (status, tokens) = exchange(&server, &client_id, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");

    // a document naming another client_id, and addresses the guard refuses, are error pages
    for (id, says) in [
        (wrong.as_str(), "must name its own URL"),
        ("http://10.0.0.7/client.json", "private network address"),
        ("http://169.254.169.254/latest/meta-data", "link-local"),
    ] {
        let (status, _, page) = browser.get(&authorize_path(id, &challenge, "mcp:contacts", &[])).await;
        assert_eq!(status, 400, "{id}");
        assert!(page.contains(says) && !page.contains("webhook"), "{id}: {page}");
    }
}

/// The official SDK's own OAuth client (`rmcp`'s `auth`) against the service: it discovers
/// the protected resource and the authorization server from the MCP URL, registers itself,
/// sends the person to the page with PKCE and a resource, checks `iss`, exchanges the code,
/// calls tools with the token and refreshes it.
#[actix_web::test]
async fn the_sdk_s_oauth_client_discovers_registers_signs_in_calls_and_refreshes() {
    use rmcp::transport::auth::{AuthClient, AuthorizationRequest, OAuthState};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let app = api_tests::spawn_public().await;
    let server = app.listen();
    person(&app, MANAGER, "rehema@duka.example").await;
    let mcp_url = format!("{}/mcp/v1/contacts", server.url);

    let mut oauth = OAuthState::new(mcp_url.as_str(), None).await.expect("an OAuth client");
    let request = AuthorizationRequest::new(REDIRECT).with_client_name("rmcp test client").with_scopes([
        "mcp:use",
        "mcp:contacts",
        "mcp:write",
    ]);
    oauth.start_authorization(request).await.expect("discovery and registration");
    let url = oauth.get_authorization_url().await.expect("the authorization URL");
    let asked = query_of(&url);
    assert_eq!(asked["code_challenge_method"], "S256");
    assert_eq!(asked["resource"], mcp_url, "RFC 8707: the MCP server's own URL");

    // the person signs in and allows it (the page's HTTP, as in the tests above)
    let mut browser = Browser::new(&server);
    let path = url.strip_prefix(&server.url).expect("the page is this service's");
    let (status, _, page) = browser.get(path).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("rmcp test client"), "{page}");
    let (status, headers, _) =
        browser.sign_in("rehema@duka.example", PASSWORD, &field(&page, "request"), &field(&page, "csrf")).await;
    assert_eq!(status, 303);
    let (_, _, page) = browser.get(&location(&headers)).await;
    let (status, headers, _) = browser
        .post(
            "/oauth/authorize",
            &[("decision", "approve"), ("request", &field(&page, "request")), ("csrf", &field(&page, "csrf"))],
        )
        .await;
    assert_eq!(status, 303);

    // the client takes the callback (checking state and iss) and exchanges the code
    oauth.handle_callback_url(&location(&headers)).await.expect("the code exchange");
    let manager = oauth.into_authorization_manager().expect("an authorized manager");
    let token = manager.get_access_token().await.expect("an access token");
    assert!(token.starts_with("svc_mcp_at_"), "{token}");
    let refreshed = manager.refresh_token().await.expect("a refresh");
    let renewed = manager.get_access_token().await.expect("the renewed token");
    assert_ne!(renewed, token, "{refreshed:?}");

    let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
        AuthClient::new(reqwest::Client::new(), manager),
        StreamableHttpClientTransportConfig::with_uri(mcp_url.as_str()),
    );
    let client = rmcp::ServiceExt::serve(
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::default(),
            rmcp::model::Implementation::new("svc-tests", "0.0.0"),
        ),
        transport,
    )
    .await
    .expect("the MCP handshake with the OAuth token");
    let upserted = ok(&client, "upsert_lead", json!({"name": "Rehema", "phone": "0712000009"})).await;
    assert_eq!(upserted["created"], true);
    // the first access token still works until its hour is up
    assert_eq!(post(&server, "/mcp/v1/contacts", Some(&token), initialize()).await.status(), 200);
}

/// A grant's access tokens share one rate limit: refreshing does not buy more requests.
#[actix_web::test]
async fn the_rate_limit_counts_per_grant_and_answers_429_with_retry_after() {
    let app = api_tests::spawn().await;
    let server = app.listen_limited(3);
    person(&app, MANAGER, "tumaini@duka.example").await;
    let (client_id, first) = tokens(&server, "tumaini@duka.example", "mcp:contacts", &[]).await;
    let (_, second) = refresh(&server, &client_id, &text(&first, "refresh_token")).await;
    for token in [&first, &first, &second] {
        assert_eq!(post(&server, "/mcp", Some(&text(token, "access_token")), initialize()).await.status(), 200);
    }
    let res = post(&server, "/mcp", Some(&text(&second, "access_token")), initialize()).await;
    assert_eq!(res.status(), 429);
    assert!(res.headers()["retry-after"].to_str().expect("ascii").parse::<u64>().is_ok_and(|s| s > 0));
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"], "rate_limited");
    // another person's grant has its own budget
    person(&app, MANAGER, "other@duka.example").await;
    let (_, other) = tokens(&server, "other@duka.example", "mcp:contacts", &[]).await;
    assert_eq!(post(&server, "/mcp", Some(&text(&other, "access_token")), initialize()).await.status(), 200);
}

/// `gateway admin oauth revoke --user U [--client C]`: an operator ends what a person allowed.
#[actix_web::test]
async fn an_operator_revokes_a_person_s_grants() {
    use gateway::cli::admin::{AdminCommand, OauthCommand};
    let app = api_tests::spawn().await;
    let server = app.listen();
    let (_, user) = person(&app, MANAGER, "upendo@duka.example").await;
    let (client_id, tokens) = tokens(&server, "upendo@duka.example", "mcp:contacts", &[]).await;
    let revoke = |client: Option<&str>| {
        crate::admin_cli::admin(
            app.db.url(),
            AdminCommand::Oauth(OauthCommand::Revoke { user: user.0, client: client.map(str::to_owned) }),
        )
    };
    assert_eq!(revoke(Some("svc_client_someone_else")).await.expect("revoke").trim(), "0");
    assert_eq!(post(&server, "/mcp", Some(&text(&tokens, "access_token")), initialize()).await.status(), 200);
    assert_eq!(revoke(Some(&client_id)).await.expect("revoke").trim(), "1");
    assert_eq!(post(&server, "/mcp", Some(&text(&tokens, "access_token")), initialize()).await.status(), 401);
    let (status, refusal) = refresh(&server, &client_id, &text(&tokens, "refresh_token")).await;
    assert_eq!((status, refusal["error"].as_str()), (400, Some("invalid_grant")));
    assert_eq!(revoke(None).await.expect("revoke").trim(), "0", "nothing live is left");
}
