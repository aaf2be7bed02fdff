//! The OAuth 2.1 authorization server's records (contract: Authentication, point 5): clients,
//! grants (one person's consent to one client), and the codes and tokens issued from a grant.
//! Tokens are opaque random strings, only their hash stored. A refresh token is rotated on
//! every use; a second use of one (or of a code) is a replay and revokes the whole grant.
//! The HTTP side (pages, metadata, form parsing) is the gateway's.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{CredentialKind, Error, TenantId, UserId};
use serde::Serialize;
use serde_json::{Map, Value};
use time::{Duration, OffsetDateTime};
use url::Url;

use crate::keys::{MCP_PREFIX, generate, hash};
use crate::mcp_connections::{McpCaller, Person, caller_of};
use crate::schema::{oauth_clients, oauth_grants, oauth_tokens, tenants, users};
use store::Conn;

/// Access tokens start with this (an MCP credential, so REST refuses it by its prefix).
pub const ACCESS_PREFIX: &str = "svc_mcp_at_";
/// Refresh tokens start with this; they are never accepted as a bearer credential.
pub const REFRESH_PREFIX: &str = "svc_mcp_rt_";

/// An authorization code must be exchanged within this.
pub const CODE_TTL: Duration = Duration::seconds(60);
/// An access token lasts this long.
pub const ACCESS_TTL: Duration = Duration::hours(1);
/// A refresh token lasts this long; each use issues a new one for as long again.
pub const REFRESH_TTL: Duration = Duration::days(30);
/// A Client ID Metadata Document's copy is fetched again once it is this old.
pub const DOCUMENT_TTL: Duration = Duration::hours(1);

/// A refusal in RFC 6749's terms (§4.1.2.1, §5.2, RFC 7591 §3.2.2): `error` is the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    pub error: &'static str,
    pub description: String,
}

impl OAuthError {
    pub fn new(error: &'static str, description: impl Into<String>) -> Self {
        Self { error, description: description.into() }
    }

    fn invalid_grant(description: impl Into<String>) -> Self {
        Self::new("invalid_grant", description)
    }
}

/// Anything else (the database) is the server's error; the message stays in the log.
impl From<Error> for OAuthError {
    fn from(error: Error) -> Self {
        tracing::error!(error = %error.message, "oauth: server error");
        Self::new("server_error", "Something went wrong on our side.")
    }
}

impl From<diesel::result::Error> for OAuthError {
    fn from(error: diesel::result::Error) -> Self {
        Error::from(error).into()
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Serialize)]
#[diesel(table_name = oauth_clients)]
pub struct Client {
    #[serde(skip)]
    pub id: i64,
    pub client_id: String,
    pub kind: String,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub metadata: Value,
    #[serde(skip)]
    pub fetched_at: Option<OffsetDateTime>,
    #[serde(skip)]
    pub created_at: OffsetDateTime,
}

impl Client {
    /// Whether `uri` is one of the client's redirect URIs: exactly, except that a loopback
    /// IP literal's port may differ (RFC 8252 §7.3, OAuth 2.1 §8.4.2: native apps listen on
    /// whatever port is free).
    pub fn redirects_to(&self, uri: &str) -> bool {
        self.redirect_uris.iter().any(|registered| registered == uri || same_but_loopback_port(registered, uri))
    }

    /// A Client ID Metadata Document's copy that should be fetched again.
    pub fn is_stale(&self, now: OffsetDateTime) -> bool {
        self.kind == "metadata_document" && self.fetched_at.is_none_or(|at| now - at >= DOCUMENT_TTL)
    }
}

fn same_but_loopback_port(registered: &str, uri: &str) -> bool {
    let (Ok(mut a), Ok(mut b)) = (Url::parse(registered), Url::parse(uri)) else {
        return false;
    };
    let loopback_ip = |url: &Url| {
        matches!(url.host(), Some(url::Host::Ipv4(ip)) if ip.is_loopback())
            || matches!(url.host(), Some(url::Host::Ipv6(ip)) if ip.is_loopback())
    };
    if a.scheme() != "http" || !loopback_ip(&a) || !loopback_ip(&b) {
        return false;
    }
    (a.set_port(None).is_ok() && b.set_port(None).is_ok()) && a == b
}

/// The most redirect URIs a client may name.
pub const MAX_REDIRECT_URIS: usize = 10;
/// The longest client name shown on the consent page.
pub const MAX_CLIENT_NAME_CHARS: usize = 200;

/// The client metadata both registration and metadata documents carry, checked.
struct Metadata {
    client_name: String,
    redirect_uris: Vec<String>,
}

/// Reads and checks a client's metadata (RFC 7591 §2): `redirect_uris` required; public
/// clients only (`token_endpoint_auth_method` `none`); the code and refresh grants only.
fn read_metadata(metadata: &Map<String, Value>) -> Result<Metadata, OAuthError> {
    let bad = |message: String| OAuthError::new("invalid_client_metadata", message);
    let uris = match metadata.get("redirect_uris") {
        Some(Value::Array(uris)) if !uris.is_empty() => uris,
        _ => return Err(OAuthError::new("invalid_redirect_uri", "redirect_uris must list at least one URI.")),
    };
    if uris.len() > MAX_REDIRECT_URIS {
        return Err(OAuthError::new(
            "invalid_redirect_uri",
            format!("redirect_uris may list at most {MAX_REDIRECT_URIS} URIs."),
        ));
    }
    let mut redirect_uris = Vec::with_capacity(uris.len());
    for uri in uris {
        let uri = uri
            .as_str()
            .ok_or_else(|| OAuthError::new("invalid_redirect_uri", "Each redirect URI must be a string."))?;
        check_redirect_uri(uri).map_err(|why| OAuthError::new("invalid_redirect_uri", format!("{uri}: {why}")))?;
        redirect_uris.push(uri.to_owned());
    }
    let text = |field: &str| match metadata.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value.as_str())),
        Some(_) => Err(bad(format!("{field} must be a string."))),
    };
    let list = |field: &str| -> Result<Option<Vec<&str>>, OAuthError> {
        match metadata.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| item.as_str().ok_or_else(|| bad(format!("{field} must list strings."))))
                .collect::<Result<_, _>>()
                .map(Some),
            Some(_) => Err(bad(format!("{field} must be a list."))),
        }
    };
    if let Some(method) = text("token_endpoint_auth_method")?
        && method != "none"
    {
        return Err(bad(format!(
            "token_endpoint_auth_method {method:?} is not supported: clients are public and prove \
             possession with PKCE (use \"none\")."
        )));
    }
    let grants = list("grant_types")?.unwrap_or_default();
    if let Some(other) = grants.iter().find(|g| !["authorization_code", "refresh_token"].contains(g)) {
        return Err(bad(format!("grant type {other:?} is not supported (authorization_code, refresh_token).")));
    }
    let types = list("response_types")?.unwrap_or_default();
    if let Some(other) = types.iter().find(|t| **t != "code") {
        return Err(bad(format!("response type {other:?} is not supported (code).")));
    }
    let client_name = text("client_name")?.map(str::trim).unwrap_or_default();
    if client_name.chars().count() > MAX_CLIENT_NAME_CHARS {
        return Err(bad(format!("client_name may be at most {MAX_CLIENT_NAME_CHARS} characters.")));
    }
    let client_name = if client_name.is_empty() {
        // what the consent page can still show: where the browser will be sent
        Url::parse(&redirect_uris[0]).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default()
    } else {
        client_name.to_owned()
    };
    Ok(Metadata { client_name, redirect_uris })
}

/// A redirect URI a code may be sent to: absolute, no fragment, and https, or http to a
/// loopback address (native apps), or a private-use scheme in reverse-domain form (RFC 8252 §7.1).
pub fn check_redirect_uri(uri: &str) -> Result<Url, &'static str> {
    let url = Url::parse(uri).map_err(|_| "not an absolute URI")?;
    if url.fragment().is_some() {
        return Err("a redirect URI must not have a fragment");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("a redirect URI must not carry credentials");
    }
    match url.scheme() {
        "https" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        "http" => Err("plain http is allowed only to a loopback address (127.0.0.1, [::1] or localhost)"),
        "javascript" | "data" | "file" | "vbscript" => Err("this scheme cannot be a redirect URI"),
        scheme if scheme.contains('.') => Ok(url),
        _ => Err("use https, http to a loopback address, or a reverse-domain private-use scheme"),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// RFC 7591 registration: a new public client, `client_id` `svc_client_<random>`. The answer
/// is the metadata as registered, with `client_id`, `client_id_issued_at` and the defaults.
pub async fn register(
    conn: &mut Conn,
    mut metadata: Map<String, Value>,
    now: OffsetDateTime,
) -> Result<Value, OAuthError> {
    let checked = read_metadata(&metadata)?;
    let client_id = format!("svc_client_{}", &generate()?[..32]);
    metadata.insert("client_id".into(), client_id.clone().into());
    metadata.insert("client_id_issued_at".into(), now.unix_timestamp().into());
    metadata.insert("client_name".into(), checked.client_name.clone().into());
    metadata.insert("token_endpoint_auth_method".into(), "none".into());
    metadata.entry("grant_types").or_insert_with(|| serde_json::json!(["authorization_code", "refresh_token"]));
    metadata.entry("response_types").or_insert_with(|| serde_json::json!(["code"]));
    let answer = Value::Object(metadata);
    diesel::insert_into(oauth_clients::table)
        .values((
            oauth_clients::client_id.eq(&client_id),
            oauth_clients::kind.eq("registered"),
            oauth_clients::client_name.eq(&checked.client_name),
            oauth_clients::redirect_uris.eq(&checked.redirect_uris),
            oauth_clients::metadata.eq(&answer),
        ))
        .execute(conn)
        .await?;
    Ok(answer)
}

/// The client `client_id` names, registered or a document's stored copy.
pub async fn client(conn: &mut Conn, client_id: &str) -> Result<Option<Client>, Error> {
    Ok(oauth_clients::table
        .filter(oauth_clients::client_id.eq(client_id))
        .select(Client::as_select())
        .first(conn)
        .await
        .optional()?)
}

/// Keeps a freshly fetched Client ID Metadata Document: its `client_id` must be the URL it was
/// fetched from, and it carries the same metadata a registration does.
pub async fn save_document(
    conn: &mut Conn,
    url: &str,
    document: &Value,
    now: OffsetDateTime,
) -> Result<Client, OAuthError> {
    let bad = |message: &str| OAuthError::new("invalid_client", format!("The client's metadata document {message}."));
    let fields = document.as_object().ok_or_else(|| bad("is not a JSON object"))?;
    if fields.get("client_id").and_then(Value::as_str) != Some(url) {
        return Err(bad("must name its own URL as client_id"));
    }
    let checked = read_metadata(fields).map_err(|e| bad(&format!("is not usable: {}", e.description)))?;
    Ok(diesel::insert_into(oauth_clients::table)
        .values((
            oauth_clients::client_id.eq(url),
            oauth_clients::kind.eq("metadata_document"),
            oauth_clients::client_name.eq(&checked.client_name),
            oauth_clients::redirect_uris.eq(&checked.redirect_uris),
            oauth_clients::metadata.eq(document),
            oauth_clients::fetched_at.eq(now),
        ))
        .on_conflict(oauth_clients::client_id)
        .do_update()
        .set((
            oauth_clients::client_name.eq(&checked.client_name),
            oauth_clients::redirect_uris.eq(&checked.redirect_uris),
            oauth_clients::metadata.eq(document),
            oauth_clients::fetched_at.eq(now),
        ))
        .returning(Client::as_returning())
        .get_result(conn)
        .await?)
}

/// What a person consented to, ready to become a grant and its code.
#[derive(Debug, Clone)]
pub struct Consent {
    pub client: i64,
    pub tenant: TenantId,
    pub user: UserId,
    pub scopes: Vec<String>,
    pub resource: String,
    pub redirect_uri: String,
    pub code_challenge: String,
}

/// Records the grant and answers its authorization code (valid for [`CODE_TTL`], once).
pub async fn issue_code(conn: &mut Conn, consent: Consent, now: OffsetDateTime) -> Result<String, Error> {
    let grant: i64 = diesel::insert_into(oauth_grants::table)
        .values((
            oauth_grants::client_id.eq(consent.client),
            oauth_grants::tenant_id.eq(consent.tenant.0),
            oauth_grants::user_id.eq(consent.user.0),
            oauth_grants::scopes.eq(&consent.scopes),
            oauth_grants::resource.eq(&consent.resource),
            oauth_grants::redirect_uri.eq(&consent.redirect_uri),
            oauth_grants::code_challenge.eq(&consent.code_challenge),
        ))
        .returning(oauth_grants::id)
        .get_result(conn)
        .await?;
    let code = generate()?;
    insert_token(conn, grant, "code", &code, None, now + CODE_TTL).await?;
    Ok(code)
}

async fn insert_token(
    conn: &mut Conn,
    grant: i64,
    kind: &str,
    token: &str,
    scopes: Option<&[String]>,
    expires_at: OffsetDateTime,
) -> Result<(), Error> {
    diesel::insert_into(oauth_tokens::table)
        .values((
            oauth_tokens::grant_id.eq(grant),
            oauth_tokens::kind.eq(kind),
            oauth_tokens::token_hash.eq(hash(token)),
            oauth_tokens::scopes.eq(scopes),
            oauth_tokens::expires_at.eq(expires_at),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// The token endpoint's answer (RFC 6749 §5.1).
#[derive(Debug, Clone, Serialize)]
pub struct Tokens {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
    pub refresh_token: String,
    pub scope: String,
}

/// The grant row a code or refresh token belongs to.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = oauth_grants)]
struct Grant {
    id: i64,
    client_id: i64,
    scopes: Vec<String>,
    resource: String,
    redirect_uri: String,
    code_challenge: String,
    revoked_at: Option<OffsetDateTime>,
}

/// The code exchange (RFC 6749 §4.1.3 with PKCE, RFC 7636 §4.6).
#[derive(Debug, Clone, Default)]
pub struct Exchange<'a> {
    pub client_id: &'a str,
    pub code: &'a str,
    pub redirect_uri: Option<&'a str>,
    pub code_verifier: &'a str,
    pub resource: Option<&'a str>,
}

/// Exchanges a code for the first access and refresh tokens. The code is spent by the first
/// attempt whatever its outcome; a second attempt revokes everything issued from it.
pub async fn exchange(conn: &mut Conn, request: Exchange<'_>, now: OffsetDateTime) -> Result<Tokens, OAuthError> {
    let (grant, expires_at) = spend(conn, "code", request.code, request.client_id, now).await?;
    let client: Client = oauth_clients::table.find(grant.client_id).select(Client::as_select()).first(conn).await?;
    if expires_at <= now {
        return Err(OAuthError::invalid_grant("The authorization code has expired."));
    }
    // RFC 6749 §4.1.3: the same redirect_uri as the authorization request
    if request.redirect_uri.is_some_and(|uri| uri != grant.redirect_uri)
        || (request.redirect_uri.is_none() && client.redirect_uris.len() > 1)
    {
        return Err(OAuthError::invalid_grant("redirect_uri does not match the authorization request."));
    }
    if !pkce_matches(request.code_verifier, &grant.code_challenge) {
        return Err(OAuthError::invalid_grant("The code_verifier does not match the code_challenge."));
    }
    check_resource(&grant, request.resource)?;
    issue_tokens(conn, &grant, &grant.scopes, now).await
}

/// A refresh (RFC 6749 §6): the token is rotated; `scope`, when given, may only narrow the grant.
#[derive(Debug, Clone, Default)]
pub struct Refresh<'a> {
    pub client_id: &'a str,
    pub refresh_token: &'a str,
    pub scope: Option<Vec<String>>,
    pub resource: Option<&'a str>,
}

pub async fn refresh(conn: &mut Conn, request: Refresh<'_>, now: OffsetDateTime) -> Result<Tokens, OAuthError> {
    let token = request.refresh_token.strip_prefix(REFRESH_PREFIX).unwrap_or_default();
    let (grant, expires_at) = spend(conn, "refresh", token, request.client_id, now).await?;
    if expires_at <= now {
        return Err(OAuthError::invalid_grant("The refresh token has expired: sign in again."));
    }
    check_resource(&grant, request.resource)?;
    let scopes = match request.scope {
        Some(asked) => {
            if let Some(extra) = asked.iter().find(|s| !grant.scopes.contains(s)) {
                return Err(OAuthError::new(
                    "invalid_scope",
                    format!("{extra} was not granted; a refresh can only narrow the scopes."),
                ));
            }
            asked
        }
        None => grant.scopes.clone(),
    };
    issue_tokens(conn, &grant, &scopes, now).await
}

/// Marks a code or refresh token of `client_id` used and answers its grant. Another client's
/// token is refused and left as it was. A token used before is a replay (RFC 9700 §4.14.2,
/// OAuth 2.1 §4.3.1): its whole grant is revoked.
async fn spend(
    conn: &mut Conn,
    kind: &str,
    token: &str,
    client_id: &str,
    now: OffsetDateTime,
) -> Result<(Grant, OffsetDateTime), OAuthError> {
    let unknown = || OAuthError::invalid_grant(format!("Unknown, used or revoked {}.", noun(kind)));
    if token.is_empty() {
        return Err(unknown());
    }
    let grants_of_client = oauth_grants::table
        .inner_join(oauth_clients::table)
        .filter(oauth_clients::client_id.eq(client_id))
        .select(oauth_grants::id);
    let spent: Option<(i64, OffsetDateTime)> = diesel::update(
        oauth_tokens::table
            .filter(oauth_tokens::token_hash.eq(hash(token)))
            .filter(oauth_tokens::kind.eq(kind))
            .filter(oauth_tokens::used_at.is_null())
            .filter(oauth_tokens::revoked_at.is_null())
            .filter(oauth_tokens::grant_id.eq_any(grants_of_client)),
    )
    .set(oauth_tokens::used_at.eq(now))
    .returning((oauth_tokens::grant_id, oauth_tokens::expires_at))
    .get_result(conn)
    .await
    .optional()?;
    let Some((grant_id, expires_at)) = spent else {
        let found: Option<(i64, Option<OffsetDateTime>, String)> = oauth_tokens::table
            .inner_join(oauth_grants::table.inner_join(oauth_clients::table))
            .filter(oauth_tokens::token_hash.eq(hash(token)))
            .filter(oauth_tokens::kind.eq(kind))
            .select((oauth_tokens::grant_id, oauth_tokens::used_at, oauth_clients::client_id))
            .first(conn)
            .await
            .optional()?;
        match found {
            Some((_, _, owner)) if owner != client_id => {
                return Err(OAuthError::invalid_grant(format!("The {} was issued to another client.", noun(kind))));
            }
            Some((grant, Some(_), _)) => {
                revoke_grant(conn, grant, now).await?;
                tracing::warn!(grant, kind, "oauth: a used {} came back; the grant is revoked", noun(kind));
            }
            _ => {}
        }
        return Err(unknown());
    };
    let grant: Grant = oauth_grants::table.find(grant_id).select(Grant::as_select()).first(conn).await?;
    if grant.revoked_at.is_some() {
        return Err(unknown());
    }
    Ok((grant, expires_at))
}

fn noun(kind: &str) -> &'static str {
    if kind == "code" { "authorization code" } else { "refresh token" }
}

/// RFC 8707: a `resource` named at the token endpoint must be the one consented to.
fn check_resource(grant: &Grant, asked: Option<&str>) -> Result<(), OAuthError> {
    match asked {
        Some(resource) if resource.trim_end_matches('/') != grant.resource => {
            Err(OAuthError::new("invalid_target", format!("The grant is for {}, not {resource}.", grant.resource)))
        }
        _ => Ok(()),
    }
}

/// BASE64URL(SHA256(verifier)) == challenge, with the verifier of RFC 7636's alphabet and length.
pub fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    // the challenge is no secret (it travelled in the authorization URL): a plain comparison
    well_formed && URL_SAFE_NO_PAD.encode(digest) == challenge
}

async fn issue_tokens(
    conn: &mut Conn,
    grant: &Grant,
    scopes: &[String],
    now: OffsetDateTime,
) -> Result<Tokens, OAuthError> {
    // what the grant no longer needs goes as it grows: tokens a day past their expiry (a used
    // refresh token stays until then, for reuse detection)
    diesel::delete(
        oauth_tokens::table
            .filter(oauth_tokens::grant_id.eq(grant.id))
            .filter(oauth_tokens::expires_at.lt(now - Duration::days(1))),
    )
    .execute(conn)
    .await?;
    let (access, refresh) = (generate()?, generate()?);
    insert_token(conn, grant.id, "access", &access, Some(scopes), now + ACCESS_TTL).await?;
    insert_token(conn, grant.id, "refresh", &refresh, Some(&grant.scopes), now + REFRESH_TTL).await?;
    Ok(Tokens {
        access_token: format!("{ACCESS_PREFIX}{access}"),
        token_type: "Bearer",
        expires_in: ACCESS_TTL.whole_seconds(),
        refresh_token: format!("{REFRESH_PREFIX}{refresh}"),
        scope: scopes.join(" "),
    })
}

async fn revoke_grant(conn: &mut Conn, grant: i64, now: OffsetDateTime) -> Result<(), Error> {
    diesel::update(oauth_grants::table.find(grant).filter(oauth_grants::revoked_at.is_null()))
        .set(oauth_grants::revoked_at.eq(now))
        .execute(conn)
        .await?;
    Ok(())
}

/// RFC 7009 revocation: an access token ends alone; a refresh token ends its whole grant.
/// Unknown tokens, and tokens of another client than `client_id` names, change nothing: the
/// answer is the same either way (§2.2).
pub async fn revoke(conn: &mut Conn, token: &str, client_id: Option<&str>, now: OffsetDateTime) -> Result<(), Error> {
    let (kind, secret) = if let Some(secret) = token.strip_prefix(ACCESS_PREFIX) {
        ("access", secret)
    } else if let Some(secret) = token.strip_prefix(REFRESH_PREFIX) {
        ("refresh", secret)
    } else {
        return Ok(());
    };
    let found: Option<(i64, i64, String)> = oauth_tokens::table
        .inner_join(oauth_grants::table.inner_join(oauth_clients::table))
        .filter(oauth_tokens::token_hash.eq(hash(secret)))
        .filter(oauth_tokens::kind.eq(kind))
        .select((oauth_tokens::id, oauth_grants::id, oauth_clients::client_id))
        .first(conn)
        .await
        .optional()?;
    let Some((token_id, grant, owner)) = found else {
        return Ok(());
    };
    if client_id.is_some_and(|asking| asking != owner) {
        return Ok(());
    }
    if kind == "refresh" {
        return revoke_grant(conn, grant, now).await;
    }
    diesel::update(oauth_tokens::table.find(token_id).filter(oauth_tokens::revoked_at.is_null()))
        .set(oauth_tokens::revoked_at.eq(now))
        .execute(conn)
        .await?;
    Ok(())
}

/// Revokes `user`'s live grants (only `client_id`'s, when given): the operator's way to end
/// what a person allowed. Answers how many.
pub async fn revoke_grants(
    conn: &mut Conn,
    user: UserId,
    client_id: Option<&str>,
    now: OffsetDateTime,
) -> Result<usize, Error> {
    let mut grants = oauth_grants::table
        .inner_join(oauth_clients::table)
        .filter(oauth_grants::user_id.eq(user.0))
        .filter(oauth_grants::revoked_at.is_null())
        .select(oauth_grants::id)
        .into_boxed();
    if let Some(client_id) = client_id {
        grants = grants.filter(oauth_clients::client_id.eq(client_id));
    }
    let ids: Vec<i64> = grants.load(conn).await?;
    Ok(diesel::update(oauth_grants::table.filter(oauth_grants::id.eq_any(&ids)))
        .set(oauth_grants::revoked_at.eq(now))
        .execute(conn)
        .await?)
}

/// Turns an access token into its caller, as [`crate::mcp_connections::authenticate`] does a
/// connection: 401 for an unknown, expired or revoked token (or grant); 403 for an account
/// that is not active or a deactivated person. `resource` is the grant's, for the gateway to
/// check against the path asked (RFC 8707).
pub async fn authenticate(conn: &mut Conn, token: &str, now: OffsetDateTime) -> Result<McpCaller, Error> {
    let secret = token.strip_prefix(ACCESS_PREFIX).unwrap_or_default();
    type Row = (
        (Option<Vec<String>>, OffsetDateTime, Option<OffsetDateTime>),
        (i64, i64, String, Option<OffsetDateTime>),
        String,
        (String, String),
        Person,
    );
    let row: Option<Row> = oauth_tokens::table
        .inner_join(
            oauth_grants::table.inner_join(oauth_clients::table).inner_join(tenants::table).inner_join(users::table),
        )
        .filter(oauth_tokens::token_hash.eq(hash(secret)))
        .filter(oauth_tokens::kind.eq("access"))
        .select((
            (oauth_tokens::scopes, oauth_tokens::expires_at, oauth_tokens::revoked_at),
            (oauth_grants::id, oauth_grants::tenant_id, oauth_grants::resource, oauth_grants::revoked_at),
            oauth_clients::client_name,
            (tenants::status, tenants::default_country_code),
            (users::id, users::name, users::active, users::all_permissions, users::permissions),
        ))
        .first(conn)
        .await
        .optional()?;
    let Some((
        (scopes, expires_at, revoked_at),
        (grant, tenant_id, resource, grant_revoked),
        client_name,
        tenant,
        user,
    )) = row
    else {
        return Err(Error::unauthenticated("Invalid access token."));
    };
    if revoked_at.is_some() || grant_revoked.is_some() {
        return Err(Error::unauthenticated("This access token has been revoked."));
    }
    if expires_at <= now {
        return Err(Error::unauthenticated("This access token has expired; use the refresh token."));
    }
    let (tenant_status, calling_code) = tenant;
    let caller =
        caller_of(CredentialKind::OAuthToken, (grant, client_name), (tenant_id, tenant_status, calling_code), user)?;
    // one rate-limit budget per grant, however often its tokens are refreshed
    let rate_key = hash(&format!("{MCP_PREFIX}grant:{grant}"));
    Ok(McpCaller { caller, scopes: scopes.unwrap_or_default(), resource: Some(resource), rate_key })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_is_s256_of_a_well_formed_verifier() {
        // RFC 7636 Appendix B
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert!(pkce_matches(verifier, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        assert!(!pkce_matches(verifier, verifier), "plain is refused");
        assert!(!pkce_matches("short", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
    }

    #[test]
    fn redirect_uris_are_https_loopback_or_private_use() {
        assert!(check_redirect_uri("https://claude.ai/api/mcp/auth_callback").is_ok());
        assert!(check_redirect_uri("http://127.0.0.1:33418/callback").is_ok());
        assert!(check_redirect_uri("http://localhost/cb").is_ok());
        assert!(check_redirect_uri("com.example.app:/oauth").is_ok());
        assert!(check_redirect_uri("http://example.com/cb").is_err());
        assert!(check_redirect_uri("https://example.com/cb#frag").is_err());
        assert!(check_redirect_uri("javascript:alert(1)").is_err());
        assert!(check_redirect_uri("/relative").is_err());
    }

    #[test]
    fn only_a_loopback_ip_redirect_may_change_its_port() {
        let client = |uri: &str| Client {
            id: 1,
            client_id: "c".into(),
            kind: "registered".into(),
            client_name: "c".into(),
            redirect_uris: vec![uri.into()],
            metadata: Value::Null,
            fetched_at: None,
            created_at: OffsetDateTime::UNIX_EPOCH,
        };
        assert!(client("http://127.0.0.1:1000/cb").redirects_to("http://127.0.0.1:2000/cb"));
        assert!(client("http://[::1]/cb").redirects_to("http://[::1]:2000/cb"));
        assert!(!client("http://127.0.0.1:1000/cb").redirects_to("http://127.0.0.1:2000/other"));
        assert!(!client("https://app.example/cb").redirects_to("https://app.example:8443/cb"));
        assert!(!client("https://app.example/cb").redirects_to("https://app.example/cb/"));
    }
}
