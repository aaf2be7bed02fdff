//! The few helpers of the server-rendered pages (sign-in and consent, storefront, basket):
//! no script, no external asset but a shop's own product images, never framed.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, CACHE_CONTROL};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// The CSP source that allows exactly this inline `<style>`.
pub fn style_source(style: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, style.as_bytes());
    format!("'sha256-{}'", STANDARD.encode(digest))
}

/// A public page: `body` under `title`, styled by `style`; forms post to this origin only;
/// images may come from the shop's own links (`img-src https: http:`).
pub fn page(status: StatusCode, title: &str, style: &str, body: &str) -> HttpResponse {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta name=\"referrer\" content=\"no-referrer\"><title>{title}</title><style>{style}</style></head>\
         <body>{body}</body></html>",
        title = escape(title),
    );
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            format!(
                "default-src 'none'; img-src https: http:; style-src {}; form-action 'self'; frame-ancestors 'none'; \
                 base-uri 'none'",
                style_source(style)
            ),
        ))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((CACHE_CONTROL, "no-store"))
        .body(html)
}

/// HTML text and attribute escaping; `{` too, so no text can fill a template slot such as the
/// consent form's CSRF token.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '{' => out.push_str("&#123;"),
            c => out.push(c),
        }
    }
    out
}

/// `4500000` TZS as people read it: `TZS 45,000.00`.
pub fn money(minor: i64, currency: &str) -> String {
    let plain = kernel::money::format_minor(minor, currency);
    let (sign, plain) = plain.strip_prefix('-').map_or(("", plain.as_str()), |rest| ("-", rest));
    let (whole, fraction) = plain.split_once('.').map_or((plain, None), |(w, f)| (w, Some(f)));
    let mut grouped = String::new();
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    match fraction {
        Some(fraction) => format!("{currency} {sign}{grouped}.{fraction}"),
        None => format!("{currency} {sign}{grouped}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_groups_thousands_in_the_currency_s_digits() {
        assert_eq!(money(4_500_000, "TZS"), "TZS 45,000.00");
        assert_eq!(money(99, "TZS"), "TZS 0.99");
        assert_eq!(money(1_500_000, "UGX"), "UGX 1,500,000");
        assert_eq!(money(-123_456_789, "KES"), "KES -1,234,567.89");
    }

    #[test]
    fn escape_leaves_no_markup_and_no_slot() {
        assert_eq!(escape("<b a=\"x\">'&'{{csrf}}"), "&lt;b a=&quot;x&quot;&gt;&#39;&amp;&#39;&#123;&#123;csrf}}");
    }
}
