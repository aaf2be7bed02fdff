//! The OAuth 2.1 authorization server MCP clients sign in through (contract: Authentication,
//! point 5; docs/mcp.md, "OAuth"):
//! - discovery: RFC 8414 metadata at `/.well-known/oauth-authorization-server`, and RFC 9728
//!   protected-resource metadata at `/.well-known/oauth-protected-resource` plus its path forms
//!   for `/mcp` and every `/mcp/v1/{server}`;
//! - clients: RFC 7591 registration at `/oauth/register`, or a Client ID Metadata Document (an
//!   https `client_id`, fetched through the webhooks' address guard);
//! - `/oauth/authorize`: the sign-in and consent page (authorization code, PKCE S256 only,
//!   exact redirect URIs, RFC 8707 `resource`, RFC 9207 `iss`);
//! - `/oauth/token` (code exchange and rotating refresh) and `/oauth/revoke` (RFC 7009).
//!
//! The records and their rules are `accounts::oauth` and `accounts::sign_in`; this is HTTP.

mod documents;
mod page;

pub use documents::Documents;

use std::collections::HashMap;

use accounts::oauth::{self, Client, OAuthError};
use actix_web::http::header::{self, CACHE_CONTROL, LOCATION, PRAGMA};
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use kernel::{Error, ErrorKind};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::AppState;
use page::{Form, Page};

pub fn configure(cfg: &mut web::ServiceConfig) {
    // what browser-based clients call cross-origin answer their preflight too
    let open = |path: &str| web::resource(path).route(web::method(Method::OPTIONS).to(preflight));
    cfg.service(open("/.well-known/oauth-authorization-server").route(web::get().to(server_metadata)))
        .service(open("/.well-known/oauth-protected-resource").route(web::get().to(resource_metadata)))
        .service(open("/.well-known/oauth-protected-resource/{path:.*}").route(web::get().to(resource_metadata)))
        .service(open("/oauth/register").route(web::post().to(register)))
        .service(web::resource("/oauth/authorize").route(web::get().to(authorize)).route(web::post().to(decide)))
        .service(web::resource("/oauth/login").route(web::post().to(sign_in)))
        .service(open("/oauth/token").route(web::post().to(token)))
        .service(open("/oauth/revoke").route(web::post().to(revoke)));
}

/// CORS preflight of the endpoints any origin may call (no cookie is involved there).
async fn preflight() -> HttpResponse {
    HttpResponse::NoContent()
        .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
        .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, OPTIONS"))
        .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, "Authorization, Content-Type, MCP-Protocol-Version"))
        .insert_header((header::ACCESS_CONTROL_MAX_AGE, "86400"))
        .finish()
}

/// The issuer: the public URL without a trailing slash.
fn issuer(state: &AppState) -> &str {
    state.public_url.trim_end_matches('/')
}

/// RFC 8414 §2.
async fn server_metadata(state: web::Data<AppState>) -> HttpResponse {
    let base = issuer(&state);
    public_json(
        StatusCode::OK,
        &json!({
            "issuer": base,
            "authorization_endpoint": format!("{base}/oauth/authorize"),
            "token_endpoint": format!("{base}/oauth/token"),
            "registration_endpoint": format!("{base}/oauth/register"),
            "revocation_endpoint": format!("{base}/oauth/revoke"),
            "scopes_supported": ::mcp::scopes::all(),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": true,
            "client_id_metadata_document_supported": true,
            "service_documentation": format!("{base}/api-docs"),
        }),
    )
}

/// RFC 9728 §3: the document of the resource whose path follows the well-known prefix: the
/// whole service (no path), every MCP server (`/mcp`) or one (`/mcp/v1/{server}`).
async fn resource_metadata(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let path = req.match_info().get("path").map(|p| format!("/{}", p.trim_end_matches('/'))).unwrap_or_default();
    let scopes: Vec<String> = match path.as_str() {
        "" | "/mcp" => ::mcp::scopes::all(),
        _ => match ::mcp::SERVERS.iter().find(|s| s.path == path) {
            Some(server) => ::mcp::scopes::for_server(server),
            None => return crate::ops::not_found().await,
        },
    };
    let base = issuer(&state);
    public_json(
        StatusCode::OK,
        &json!({
            "resource": format!("{base}{path}"),
            "authorization_servers": [base],
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "MCP servers",
            "resource_documentation": format!("{base}/api-docs/mcp.json"),
        }),
    )
}

/// The resources a token may be asked for: the service, `/mcp` or one server; `None` for
/// anything else. The answer is the canonical form, without a trailing slash.
pub fn canonical_resource(public_url: &str, asked: &str) -> Option<String> {
    let base = public_url.trim_end_matches('/');
    let path = asked.trim_end_matches('/').strip_prefix(base)?;
    let known = path.is_empty() || path == "/mcp" || ::mcp::SERVERS.iter().any(|s| s.path == path);
    known.then(|| format!("{base}{path}"))
}

/// RFC 7591 §3: a public client; 201 with its metadata and `client_id`.
async fn register(state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    let metadata = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(metadata)) => metadata,
        _ => {
            return refusal(&OAuthError::new(
                "invalid_client_metadata",
                "The body must be a JSON object of client metadata.",
            ));
        }
    };
    let now = state.clock.now();
    let registered = async {
        let mut conn = store::connect_global(&state.pool).await.map_err(OAuthError::from)?;
        oauth::register(&mut conn, metadata, now).await
    };
    match registered.await {
        Ok(client) => public_json(StatusCode::CREATED, &client),
        Err(error) => refusal(&error),
    }
}

/// The parameters of an authorization request (RFC 6749 §4.1.1, RFC 7636, RFC 8707).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct AuthorizeParams {
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub state: Option<String>,
    pub scope: Option<String>,
    pub resource: Option<String>,
}

/// A checked authorization request.
pub struct Authorization {
    pub client: Client,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub asked: ::mcp::Grant,
    pub resource: String,
    pub code_challenge: String,
    /// The request as it came, carried by the page's forms.
    pub query: String,
}

/// Why an authorization request is refused: shown on the page when the client or its redirect
/// URI cannot be trusted (RFC 6749 §4.1.2.1), sent back to the client otherwise.
pub enum Refused {
    Page(String),
    Redirect(String),
}

/// Checks a request in the order RFC 6749 §4.1.2.1 asks: the client and its redirect URI
/// first (their faults are shown, never redirected), then the rest (sent back to the client).
async fn check(state: &AppState, params: AuthorizeParams) -> Result<Authorization, Refused> {
    let client_id = params.client_id.as_deref().filter(|c| !c.is_empty());
    let client_id = client_id.ok_or_else(|| Refused::Page("The request names no client (client_id).".into()))?;
    let client = client(state, client_id).await.map_err(Refused::Page)?;
    let redirect_uri = match params.redirect_uri.as_deref() {
        Some(uri) if client.redirects_to(uri) => uri.to_owned(),
        Some(uri) => return Err(Refused::Page(format!("{uri} is not a redirect URI of this client."))),
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => return Err(Refused::Page("The request must name one of the client's redirect URIs.".into())),
    };
    let back = |error: &str, description: &str| {
        Refused::Redirect(redirect(
            &redirect_uri,
            &[
                ("error", error),
                ("error_description", description),
                ("state", params.state.as_deref().unwrap_or_default()),
                ("iss", issuer(state)),
            ],
        ))
    };
    if params.response_type.as_deref() != Some("code") {
        return Err(back("unsupported_response_type", "Only response_type=code is supported."));
    }
    let challenge = params.code_challenge.as_deref().unwrap_or_default();
    if params.code_challenge_method.as_deref() != Some("S256") {
        return Err(back(
            "invalid_request",
            "PKCE is required with code_challenge_method=S256; plain is not supported.",
        ));
    }
    if challenge.len() != 43 || !challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(back(
            "invalid_request",
            "code_challenge must be the 43-character BASE64URL SHA-256 of the verifier.",
        ));
    }
    let asked = match params.scope.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        // every call needs the base grant: it is added, never refused for its absence
        Some(scope) => ::mcp::Grant::parse(&format!("{} {scope}", ::mcp::scopes::USE)).map_err(|e| {
            back("invalid_scope", &e.errors.values().flatten().next().cloned().unwrap_or_else(|| e.message.clone()))
        })?,
        None => ::mcp::Grant::default_request(),
    };
    let resource = match params.resource.as_deref() {
        Some(asked) => canonical_resource(&state.public_url, asked).ok_or_else(|| {
            back("invalid_target", &format!("{asked} is not a resource of this server: use {}/mcp.", issuer(state)))
        })?,
        None => format!("{}/mcp", issuer(state)),
    };
    let query = serde_urlencoded::to_string(&params).unwrap_or_default();
    Ok(Authorization {
        client,
        redirect_uri,
        state: params.state,
        asked,
        resource,
        code_challenge: challenge.to_owned(),
        query,
    })
}

/// The client `client_id` names: a registered one, or a metadata document's, fetched when
/// unknown or older than [`oauth::DOCUMENT_TTL`].
async fn client(state: &AppState, client_id: &str) -> Result<Client, String> {
    let now = state.clock.now();
    let connect = async || store::connect_global(&state.pool).await.map_err(|e| server_error(&e));
    let known = oauth::client(&mut *connect().await?, client_id).await.map_err(|e| server_error(&e))?;
    let is_document = client_id.starts_with("https://") || client_id.starts_with("http://");
    match known {
        Some(client) if !client.is_stale(now) => Ok(client),
        _ if is_document => {
            // fetched holding no connection: another server may take seconds to answer
            let document = state.client_documents.fetch(client_id).await?;
            oauth::save_document(&mut *connect().await?, client_id, &document, now).await.map_err(|e| e.description)
        }
        _ => Err(format!("Unknown client {client_id:?}: register it first (RFC 7591) at /oauth/register.")),
    }
}

fn server_error(error: &Error) -> String {
    tracing::error!(error = %error.message, "oauth: server error");
    "Something went wrong on our side; try again.".into()
}

/// `redirect_uri` with `params` added to its query (empty values left out).
fn redirect(redirect_uri: &str, params: &[(&str, &str)]) -> String {
    let params: Vec<_> = params.iter().filter(|(_, v)| !v.is_empty()).collect();
    let query = serde_urlencoded::to_string(params).unwrap_or_default();
    let joiner = if redirect_uri.contains('?') { '&' } else { '?' };
    format!("{redirect_uri}{joiner}{query}")
}

/// `GET /oauth/authorize`: the sign-in page, or the consent page once signed in.
async fn authorize(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let params = web::Query::<AuthorizeParams>::from_query(req.query_string()).map(|q| q.into_inner());
    let Ok(params) = params else {
        return Page::error(StatusCode::BAD_REQUEST, "The authorization request is malformed.").render(&req);
    };
    respond(&state, &req, params, None).await
}

/// The page a checked request shows: consent to a signed-in person, sign-in to anyone else.
async fn respond(state: &AppState, req: &HttpRequest, params: AuthorizeParams, notice: Option<Notice>) -> HttpResponse {
    let authorization = match check(state, params).await {
        Ok(authorization) => authorization,
        Err(Refused::Page(message)) => return Page::error(StatusCode::BAD_REQUEST, &message).render(req),
        Err(Refused::Redirect(location)) => return see_other(&location),
    };
    match signed_in(state, req).await {
        Ok(Some(user)) => {
            let granted = state.mcp.grantable(&authorization.asked, &user.permissions());
            Page::consent(&authorization, &user, &granted).render(req)
        }
        Ok(None) => {
            let (status, message) = notice.map_or((StatusCode::OK, None), |n| (n.status, Some(n.message)));
            Page::sign_in(&authorization, message.as_deref()).status(status).render(req)
        }
        Err(error) => Page::error(StatusCode::INTERNAL_SERVER_ERROR, &server_error(&error)).render(req),
    }
}

/// A sign-in refusal shown above the form.
struct Notice {
    status: StatusCode,
    message: String,
}

/// The person the session cookie names, if it is still good.
async fn signed_in(state: &AppState, req: &HttpRequest) -> Result<Option<accounts::User>, Error> {
    let Some(token) = page::session_cookie(req) else {
        return Ok(None);
    };
    let mut conn = store::connect_global(&state.pool).await?;
    Ok(accounts::sign_in::session(&mut conn, &token, state.clock.now()).await?.map(|s| s.user))
}

/// `POST /oauth/login`: email and password; back to the request's page, signed in.
async fn sign_in(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let form = match Form::read(&req, &body) {
        Ok(form) => form,
        Err(page) => return page.render(&req),
    };
    let params = form.request();
    let now = state.clock.now();
    let outcome = async {
        let mut conn = store::connect_global(&state.pool).await?;
        accounts::sign_in::sign_in(&mut conn, form.get("email"), form.get("password"), now).await
    };
    match outcome.await {
        Ok(signed_in) => {
            let location = format!("/oauth/authorize?{}", serde_urlencoded::to_string(&params).unwrap_or_default());
            let mut response = see_other(&location);
            if let Some(session) = signed_in.session {
                page::set_session_cookie(&mut response, &session, accounts::sign_in::SESSION_TTL);
            }
            response
        }
        Err(error) => {
            let status = crate::http::envelope::status_of(error.kind);
            let message = if error.kind == ErrorKind::Internal { server_error(&error) } else { error.message.clone() };
            let mut response = respond(&state, &req, params, Some(Notice { status, message })).await;
            if let Some(seconds) = error.details.get("retry_after").and_then(Value::as_i64)
                && let Ok(value) = header::HeaderValue::from_str(&seconds.to_string())
            {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            response
        }
    }
}

/// `POST /oauth/authorize`: the signed-in person approves or denies; either way the browser
/// goes back to the client (RFC 6749 §4.1.2), with `iss` (RFC 9207).
async fn decide(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let form = match Form::read(&req, &body) {
        Ok(form) => form,
        Err(page) => return page.render(&req),
    };
    let authorization = match check(&state, form.request()).await {
        Ok(authorization) => authorization,
        Err(Refused::Page(message)) => return Page::error(StatusCode::BAD_REQUEST, &message).render(&req),
        Err(Refused::Redirect(location)) => return see_other(&location),
    };
    let user = match signed_in(&state, &req).await {
        Ok(Some(user)) => user,
        Ok(None) => return Page::sign_in(&authorization, Some("Sign in again to continue.")).render(&req),
        Err(error) => return Page::error(StatusCode::INTERNAL_SERVER_ERROR, &server_error(&error)).render(&req),
    };
    let state_param = authorization.state.as_deref().unwrap_or_default();
    if form.get("decision") != "approve" {
        return see_other(&redirect(
            &authorization.redirect_uri,
            &[
                ("error", "access_denied"),
                ("error_description", "The person declined."),
                ("state", state_param),
                ("iss", issuer(&state)),
            ],
        ));
    }
    let granted = state.mcp.grantable(&authorization.asked, &user.permissions());
    let consent = oauth::Consent {
        client: authorization.client.id,
        tenant: kernel::TenantId(user.tenant_id),
        user: kernel::UserId(user.id),
        scopes: granted.scopes(),
        resource: authorization.resource.clone(),
        redirect_uri: authorization.redirect_uri.clone(),
        code_challenge: authorization.code_challenge.clone(),
    };
    let issued = async {
        let mut conn = store::connect_global(&state.pool).await?;
        oauth::issue_code(&mut conn, consent, state.clock.now()).await
    };
    match issued.await {
        Ok(code) => see_other(&redirect(
            &authorization.redirect_uri,
            &[("code", &code), ("state", state_param), ("iss", issuer(&state))],
        )),
        Err(error) => Page::error(StatusCode::INTERNAL_SERVER_ERROR, &server_error(&error)).render(&req),
    }
}

/// `POST /oauth/token` (form-encoded): `authorization_code` or `refresh_token`.
async fn token(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let form = match token_form(&req, &body) {
        Ok(form) => form,
        Err(error) => return refusal(&error),
    };
    let get = |name: &str| form.get(name).map(String::as_str).filter(|v| !v.is_empty());
    let need = |name: &'static str| {
        get(name).ok_or_else(|| OAuthError::new("invalid_request", format!("{name} is required.")))
    };
    let now = state.clock.now();
    let answer = async {
        let mut conn = store::connect_global(&state.pool).await.map_err(OAuthError::from)?;
        match get("grant_type") {
            Some("authorization_code") => {
                let exchange = oauth::Exchange {
                    client_id: need("client_id")?,
                    code: need("code")?,
                    redirect_uri: get("redirect_uri"),
                    code_verifier: need("code_verifier")?,
                    resource: get("resource"),
                };
                oauth::exchange(&mut conn, exchange, now).await
            }
            Some("refresh_token") => {
                let scope = get("scope").map(|s| s.split_whitespace().map(str::to_owned).collect());
                let refresh = oauth::Refresh {
                    client_id: need("client_id")?,
                    refresh_token: need("refresh_token")?,
                    scope,
                    resource: get("resource"),
                };
                oauth::refresh(&mut conn, refresh, now).await
            }
            Some(other) => {
                Err(OAuthError::new("unsupported_grant_type", format!("grant_type {other:?} is not supported.")))
            }
            None => Err(OAuthError::new("invalid_request", "grant_type is required.")),
        }
    };
    match answer.await {
        Ok(tokens) => public_json(StatusCode::OK, &tokens),
        Err(error) => refusal(&error),
    }
}

/// A token or revocation request's form (RFC 6749 §3.2: `application/x-www-form-urlencoded`).
fn token_form(req: &HttpRequest, body: &[u8]) -> Result<HashMap<String, String>, OAuthError> {
    let form_encoded = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if !form_encoded {
        return Err(OAuthError::new("invalid_request", "Send the parameters as application/x-www-form-urlencoded."));
    }
    serde_urlencoded::from_bytes(body).map_err(|_| OAuthError::new("invalid_request", "The form is malformed."))
}

/// `POST /oauth/revoke` (RFC 7009): 200 whether or not the token was known.
async fn revoke(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let form = match token_form(&req, &body) {
        Ok(form) => form,
        Err(error) => return refusal(&error),
    };
    let Some(token) = form.get("token").filter(|t| !t.is_empty()) else {
        return refusal(&OAuthError::new("invalid_request", "token is required."));
    };
    let revoked = async {
        let mut conn = store::connect_global(&state.pool).await?;
        oauth::revoke(&mut conn, token, form.get("client_id").map(String::as_str), state.clock.now()).await
    };
    match revoked.await {
        Ok(()) => public_json(StatusCode::OK, &json!({})),
        Err(error) => refusal(&OAuthError::from(error)),
    }
}

/// An OAuth error answer (RFC 6749 §5.2): 400, 401 for `invalid_client`, 500 for the server's.
fn refusal(error: &OAuthError) -> HttpResponse {
    let status = match error.error {
        "invalid_client" => StatusCode::UNAUTHORIZED,
        "server_error" => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    };
    public_json(status, &json!({"error": error.error, "error_description": error.description}))
}

/// JSON any origin may read (no cookie is involved: browser-based MCP clients call these),
/// never cached (RFC 6749 §5.1).
fn public_json(status: StatusCode, body: &impl Serialize) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((CACHE_CONTROL, "no-store"))
        .insert_header((PRAGMA, "no-cache"))
        .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
        .json(body)
}

fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther().insert_header((LOCATION, location)).insert_header((CACHE_CONTROL, "no-store")).finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_are_the_service_mcp_or_one_server() {
        let base = "https://api.example.com";
        assert_eq!(
            canonical_resource(base, "https://api.example.com/mcp/").as_deref(),
            Some("https://api.example.com/mcp")
        );
        assert_eq!(canonical_resource(base, "https://api.example.com").as_deref(), Some("https://api.example.com"));
        assert!(canonical_resource(base, "https://api.example.com/mcp/v1/contacts").is_some());
        assert_eq!(canonical_resource(base, "https://api.example.com/mcp/v1/nope"), None);
        assert_eq!(canonical_resource(base, "https://evil.example.com/mcp"), None);
        assert_eq!(canonical_resource(base, "https://api.example.com.evil/mcp"), None);
    }

    #[test]
    fn redirects_keep_the_client_s_own_query() {
        assert_eq!(
            redirect("https://a.example/cb?x=1", &[("code", "c d"), ("state", "")]),
            "https://a.example/cb?x=1&code=c+d"
        );
    }
}
