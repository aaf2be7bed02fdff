//! The sign-in and consent page: server-rendered HTML with no external asset and no script.
//! Every answer refuses framing (`frame-ancestors 'none'`, `X-Frame-Options: DENY`), is never
//! cached, and sends forms only to this service (and, from the consent form, on to the
//! client's redirect URI). Forms carry a CSRF token that must equal the one in a cookie only
//! this origin can set (double submit); cookies are `__Host-`, `Secure`, `HttpOnly` and
//! `SameSite`.

use std::collections::HashMap;
use std::sync::OnceLock;

use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::StatusCode;
use actix_web::http::header::{self, CACHE_CONTROL};
use actix_web::{HttpRequest, HttpResponse};

use super::{Authorization, AuthorizeParams};
use crate::http::html::escape;

const SESSION_COOKIE: &str = "__Host-svc_session";
const CSRF_COOKIE: &str = "__Host-svc_csrf";
/// Where the form's CSRF token goes; escaped text can never contain it (`{` is escaped).
const CSRF_SLOT: &str = "{{csrf}}";

const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1b1b1f}\
h1{font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem}input[type=email],input[type=password]{width:100%;padding:.5rem;box-sizing:border-box}\
button{margin:1rem .5rem 0 0;padding:.5rem 1.2rem;font-size:1rem}.notice{background:#fdecea;padding:.6rem;border-radius:4px}\
.muted{color:#5c5c66}li{margin:.2rem 0}.no{text-decoration:line-through;color:#8a8a93}";

/// A page to answer with.
pub struct Page {
    status: StatusCode,
    title: String,
    body: String,
    /// Where the page's forms may send the browser beyond this origin (the consent form's
    /// redirect URI): a CSP `form-action` source.
    also_to: Option<String>,
}

impl Page {
    pub fn error(status: StatusCode, message: &str) -> Self {
        let body = format!(
            "<h1>This request cannot go on</h1><p class=\"notice\">{}</p>\
             <p class=\"muted\">Go back to the application that sent you here and start again.</p>",
            escape(message)
        );
        Self { status, title: "Authorization failed".into(), body, also_to: None }
    }

    pub fn sign_in(authorization: &Authorization, notice: Option<&str>) -> Self {
        let notice =
            notice.map(|n| format!("<p class=\"notice\" role=\"alert\">{}</p>", escape(n))).unwrap_or_default();
        let body = format!(
            "<h1>Sign in</h1>{intro}{notice}\
             <form method=\"post\" action=\"/oauth/login\">{hidden}\
             <label for=\"email\">Email</label><input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"username\" required autofocus>\
             <label for=\"password\">Password</label><input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required>\
             <button type=\"submit\">Sign in</button></form>",
            intro = who_asks(authorization),
            hidden = hidden(&authorization.query),
        );
        Self { status: StatusCode::OK, title: "Sign in".into(), body, also_to: None }
    }

    pub fn consent(authorization: &Authorization, user: &accounts::User, granted: &::mcp::Grant) -> Self {
        let asked = authorization.asked.scopes();
        let items: String = asked
            .iter()
            .map(|scope| {
                let (class, note) =
                    if granted.holds(scope) { ("", "") } else { (" class=\"no\"", " (not yours to give)") };
                format!(
                    "<li{class}><code>{}</code>: {}{note}</li>",
                    escape(scope),
                    escape(&::mcp::scopes::describe(scope))
                )
            })
            .collect();
        let withheld = asked.iter().filter(|s| !granted.holds(s)).count();
        let summary = if withheld == 0 {
            "It will be granted everything it asks for.".to_owned()
        } else {
            format!(
                "It will be granted {} of the {} scopes it asks for: you cannot do the rest yourself.",
                asked.len() - withheld,
                asked.len()
            )
        };
        let body = format!(
            "<h1>Allow access?</h1>{intro}\
             <p>Signed in as <strong>{name}</strong>.</p>\
             <p>It asks to:</p><ul>{items}</ul><p>{summary} It acts with your permissions, as they are \
             each time it calls, for <code>{resource}</code>.</p>\
             <form method=\"post\" action=\"/oauth/authorize\">{hidden}\
             <button type=\"submit\" name=\"decision\" value=\"approve\">Allow</button>\
             <button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>",
            intro = who_asks(authorization),
            name = escape(&user.name),
            resource = escape(&authorization.resource),
            hidden = hidden(&authorization.query),
        );
        Self {
            status: StatusCode::OK,
            title: "Allow access?".into(),
            body,
            also_to: form_source(&authorization.redirect_uri),
        }
    }

    pub fn status(self, status: StatusCode) -> Self {
        Self { status, ..self }
    }

    /// The page, with its forms' CSRF token (the cookie's, or a new one set here).
    pub fn render(self, req: &HttpRequest) -> HttpResponse {
        let existing = req.cookie(CSRF_COOKIE).map(|c| c.value().to_owned()).filter(|v| v.len() >= 32);
        let csrf = existing.clone().unwrap_or_else(random_token);
        let html = format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
             <meta name=\"referrer\" content=\"no-referrer\"><title>{title}</title><style>{STYLE}</style></head>\
             <body>{body}</body></html>",
            title = escape(&self.title),
            body = self.body.replace(CSRF_SLOT, &csrf),
        );
        let form_action = match &self.also_to {
            Some(source) => format!("'self' {source}"),
            None => "'self'".to_owned(),
        };
        let mut response = HttpResponse::build(self.status);
        response
            .content_type("text/html; charset=utf-8")
            .insert_header((
                header::CONTENT_SECURITY_POLICY,
                format!(
                    "default-src 'none'; style-src {}; form-action {form_action}; frame-ancestors 'none'; base-uri 'none'",
                    style_hash()
                ),
            ))
            .insert_header((header::X_FRAME_OPTIONS, "DENY"))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .insert_header((header::REFERRER_POLICY, "no-referrer"))
            .insert_header((CACHE_CONTROL, "no-store"));
        if existing.is_none() {
            response.cookie(cookie(CSRF_COOKIE, csrf, SameSite::Strict, None));
        }
        response.body(html)
    }
}

/// Who asks, as the page shows it: the client's own name (unverified) and where the browser
/// will be sent, which is what a person can check.
fn who_asks(authorization: &Authorization) -> String {
    let host = url_host(&authorization.redirect_uri);
    format!(
        "<p><strong>{name}</strong> <span class=\"muted\">(its own name for itself; it will send you back to \
         <strong>{host}</strong>)</span> asks to use your workspace through its MCP servers.</p>",
        name = escape(&authorization.client.client_name),
        host = escape(&host),
    )
}

fn url_host(uri: &str) -> String {
    let rest = uri.split_once("://").map_or(uri, |(_, rest)| rest);
    rest.split(['/', '?', '#']).next().unwrap_or(rest).to_owned()
}

/// The CSP source for a redirect URI: its origin, or its private-use scheme.
fn form_source(redirect_uri: &str) -> Option<String> {
    match redirect_uri.split_once("://") {
        Some((scheme, _)) if scheme == "http" || scheme == "https" => {
            Some(format!("{scheme}://{}", url_host(redirect_uri)))
        }
        _ => redirect_uri.split_once(':').map(|(scheme, _)| format!("{scheme}:")),
    }
}

fn hidden(query: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"request\" value=\"{}\"><input type=\"hidden\" name=\"csrf\" value=\"{CSRF_SLOT}\">",
        escape(query)
    )
}

/// Equal, in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn style_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| crate::http::html::style_source(STYLE))
}

fn random_token() -> String {
    let mut bytes = [0u8; 32];
    // without randomness no page can be safe: an empty token matches no cookie
    if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).is_err() {
        return String::new();
    }
    hex::encode(bytes)
}

fn cookie(name: &'static str, value: String, same_site: SameSite, max_age: Option<time::Duration>) -> Cookie<'static> {
    let mut cookie = Cookie::build(name, value).path("/").secure(true).http_only(true).same_site(same_site);
    if let Some(age) = max_age {
        cookie = cookie.max_age(age);
    }
    cookie.finish()
}

pub fn session_cookie(req: &HttpRequest) -> Option<String> {
    req.cookie(SESSION_COOKIE).map(|c| c.value().to_owned()).filter(|v| !v.is_empty())
}

pub fn set_session_cookie(response: &mut HttpResponse, session: &str, ttl: time::Duration) {
    let cookie = cookie(SESSION_COOKIE, session.to_owned(), SameSite::Lax, Some(ttl));
    if let Err(error) = response.add_cookie(&cookie) {
        tracing::error!(%error, "oauth: cannot set the session cookie");
    }
}

/// A posted form of the page, its CSRF token checked.
pub struct Form(HashMap<String, String>);

impl Form {
    pub fn read(req: &HttpRequest, body: &[u8]) -> Result<Self, Page> {
        let fields: HashMap<String, String> = serde_urlencoded::from_bytes(body)
            .map_err(|_| Page::error(StatusCode::BAD_REQUEST, "The form is malformed."))?;
        let cookie = req.cookie(CSRF_COOKIE).map(|c| c.value().to_owned()).unwrap_or_default();
        let sent = fields.get("csrf").map(String::as_str).unwrap_or_default();
        if cookie.len() < 32 || !same(cookie.as_bytes(), sent.as_bytes()) {
            return Err(Page::error(
                StatusCode::FORBIDDEN,
                "This form has expired or did not come from this page. Open the sign-in link again.",
            ));
        }
        Ok(Self(fields))
    }

    pub fn get(&self, name: &str) -> &str {
        self.0.get(name).map(String::as_str).unwrap_or_default()
    }

    /// The authorization request the form carries.
    pub fn request(&self) -> AuthorizeParams {
        serde_urlencoded::from_str(self.get("request")).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cannot_break_out_of_the_markup_or_fill_the_csrf_slot() {
        assert_eq!(escape("<b a=\"x\">'{{csrf}}'&"), "&lt;b a=&quot;x&quot;&gt;&#39;&#123;&#123;csrf}}&#39;&amp;");
    }

    #[test]
    fn a_redirect_uri_becomes_a_form_action_source() {
        assert_eq!(form_source("https://app.example:8443/cb?x=1").as_deref(), Some("https://app.example:8443"));
        assert_eq!(form_source("http://127.0.0.1:5000/cb").as_deref(), Some("http://127.0.0.1:5000"));
        assert_eq!(form_source("com.example.app:/cb").as_deref(), Some("com.example.app:"));
    }
}
