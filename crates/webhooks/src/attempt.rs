//! One signed POST to a receiver, and what its answer means for the next one.

use std::time::Instant;

use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use time::OffsetDateTime;

use crate::catalogue::Retry;
use crate::{guard, signing};

/// The waits between attempts of an event that is retried (contract: Events, Delivery).
pub const SCHEDULE: [time::Duration; 5] = [
    time::Duration::minutes(1),
    time::Duration::minutes(5),
    time::Duration::minutes(30),
    time::Duration::hours(2),
    time::Duration::hours(6),
];
/// Up to this share is added to each wait, so receivers that failed together do not all come
/// back in the same second.
pub const JITTER: f64 = 0.10;
/// A receiver's `Retry-After` is honoured when longer than the schedule, up to this.
pub const MAX_RETRY_AFTER: time::Duration = time::Duration::hours(6);

/// Where one attempt goes and how it is signed. Its `Debug` leaves out the secret and the
/// header values.
#[derive(Clone)]
pub struct Target {
    pub url: String,
    pub secret: String,
    /// Custom headers, already opened.
    pub headers: Vec<(String, String)>,
    /// An http endpoint from before 26 September 2026 that was never re-pointed.
    pub legacy_http: bool,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.url)
            .field("headers", &self.headers.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .field("legacy_http", &self.legacy_http)
            .finish_non_exhaustive()
    }
}

/// What is sent: the same bytes on every attempt; the signature is computed afresh.
#[derive(Debug, Clone)]
pub struct Delivery<'a> {
    pub delivery_id: &'a str,
    pub event: &'a str,
    pub event_id: &'a str,
    pub body: &'a [u8],
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: Option<u16>,
    pub duration_ms: i32,
    pub error: Option<String>,
    pub response_excerpt: Option<String>,
    pub retry_after: Option<time::Duration>,
    /// The address guard refused the target: nothing was sent.
    pub refused: bool,
}

impl Outcome {
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }

    /// An attempt that was not made for a reason of ours (retried like a failed connection).
    pub fn unsent(error: String) -> Self {
        Self {
            status: None,
            duration_ms: 0,
            error: Some(error),
            response_excerpt: None,
            retry_after: None,
            refused: false,
        }
    }

    /// How a failed attempt reads in a pause reason: "answered with HTTP 503", "timed out"...
    pub fn describe(&self) -> String {
        match (self.status, &self.error) {
            (Some(status), _) => format!("answered with HTTP {status}"),
            (None, Some(error)) => error.clone(),
            (None, None) => "got no answer".to_owned(),
        }
    }

    /// 5xx, 408, 425, 429, a redirect (never followed), a timeout or a connection that failed.
    /// Other 4xx, and targets the guard refuses, are not tried again.
    pub fn retryable(&self) -> bool {
        match self.status {
            Some(s) => (500..600).contains(&s) || (300..400).contains(&s) || matches!(s, 408 | 425 | 429),
            None => !self.refused,
        }
    }
}

/// What follows an attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    Delivered,
    RetryAfter(time::Duration),
    Failed,
}

/// `attempt` is 1 for the first. `jitter` is in [0, 1): the share of [`JITTER`] to add.
pub fn next(retry: Retry, attempt: i32, outcome: &Outcome, jitter: f64) -> Next {
    if outcome.succeeded() {
        return Next::Delivered;
    }
    if retry == Retry::Once || !outcome.retryable() {
        return Next::Failed;
    }
    let Some(wait) = usize::try_from(attempt - 1).ok().and_then(|i| SCHEDULE.get(i)) else {
        return Next::Failed;
    };
    let wait = *wait + *wait * (JITTER * jitter.clamp(0.0, 1.0));
    match outcome.retry_after {
        Some(asked) if asked > wait => Next::RetryAfter(asked.min(MAX_RETRY_AFTER)),
        _ => Next::RetryAfter(wait),
    }
}

/// `Retry-After` as seconds or an HTTP date.
pub fn parse_retry_after(value: &str, now: OffsetDateTime) -> Option<time::Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u32>() {
        return Some(time::Duration::seconds(seconds.into()));
    }
    let at = OffsetDateTime::parse(value, &time::format_description::well_known::Rfc2822).ok()?;
    Some((at - now).max(time::Duration::ZERO))
}

/// The headers of one attempt, signed at `now`.
pub fn headers(target: &Target, delivery: &Delivery<'_>, now: OffsetDateTime) -> Result<HeaderMap, String> {
    let timestamp = now.unix_timestamp();
    let signature = signing::sign(&target.secret, delivery.delivery_id, timestamp, delivery.body);
    let mut map = HeaderMap::with_capacity(8 + target.headers.len());
    // custom headers first: the service's own cannot be shadowed (names are checked on the
    // way in, and inserting ours after would replace them anyway)
    for (name, value) in &target.headers {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("header {name}: {e}"))?;
        let value = HeaderValue::from_str(value).map_err(|e| format!("header {name}: {e}"))?;
        map.insert(name, value);
    }
    let mut set = |name: &'static str, value: &str| -> Result<(), String> {
        map.insert(name, HeaderValue::from_str(value).map_err(|e| format!("header {name}: {e}"))?);
        Ok(())
    };
    set("content-type", "application/json")?;
    set("x-signature", &signature.v1)?;
    set("x-signature-v2", &signature.v2)?;
    set("x-timestamp", &timestamp.to_string())?;
    set("x-delivery-id", delivery.delivery_id)?;
    set("x-event", delivery.event)?;
    set("x-event-id", delivery.event_id)?;
    Ok(map)
}

/// Sends one attempt: checks the target first (an address literal never reaches the resolver),
/// then posts through the guarded client and reads at most `excerpt_limit` bytes of the answer.
pub async fn send(
    client: &reqwest::Client,
    policy: &guard::Policy,
    target: &Target,
    delivery: &Delivery<'_>,
    now: OffsetDateTime,
    excerpt_limit: usize,
) -> Outcome {
    let started = Instant::now();
    let elapsed = |started: Instant| i32::try_from(started.elapsed().as_millis()).unwrap_or(i32::MAX);
    let failed = |error: String, refused: bool| Outcome {
        status: None,
        duration_ms: elapsed(started),
        error: Some(error),
        response_excerpt: None,
        retry_after: None,
        refused,
    };
    let url = match Url::parse(&target.url) {
        Ok(url) => url,
        Err(e) => return failed(format!("the url cannot be read: {e}"), true),
    };
    if let Err(refusal) = guard::check_attempt(&url, policy, target.legacy_http) {
        return failed(format!("refused: {refusal}"), true);
    }
    let headers = match headers(target, delivery, now) {
        Ok(headers) => headers,
        Err(e) => return failed(e, true),
    };
    let sent = client.post(url).headers(headers).body(delivery.body.to_vec()).send().await;
    match sent {
        Ok(response) => {
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, now));
            let excerpt = match guard::read_excerpt(response, excerpt_limit).await {
                Ok(excerpt) => excerpt,
                // a receiver that trickles its answer has not answered in time
                Err(_) => return failed(format!("timed out reading the answer (HTTP {status})"), false),
            };
            Outcome {
                status: Some(status),
                duration_ms: elapsed(started),
                error: None,
                response_excerpt: Some(excerpt),
                retry_after,
                refused: false,
            }
        }
        Err(error) => match guard::refusal_of(&error) {
            Some(refusal) => failed(format!("refused: {refusal}"), true),
            None if error.is_timeout() => failed("timed out".to_owned(), false),
            None if error.is_connect() => failed(format!("could not connect: {}", root_cause(&error)), false),
            None => failed(format!("request failed: {}", root_cause(&error)), false),
        },
    }
}

fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// Fractions of [`JITTER`], from the system's randomness.
pub fn jitter() -> f64 {
    use ring::rand::SecureRandom;
    let mut bytes = [0_u8; 2];
    match ring::rand::SystemRandom::new().fill(&mut bytes) {
        Ok(()) => f64::from(u16::from_be_bytes(bytes)) / f64::from(u16::MAX),
        Err(_) => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn answered(status: u16) -> Outcome {
        Outcome {
            status: Some(status),
            duration_ms: 3,
            error: None,
            response_excerpt: None,
            retry_after: None,
            refused: false,
        }
    }

    #[test]
    fn the_schedule_is_one_five_thirty_minutes_two_six_hours_then_failed() {
        let expected = [60, 300, 1_800, 7_200, 21_600];
        for (i, seconds) in expected.into_iter().enumerate() {
            let attempt = i as i32 + 1;
            assert_eq!(
                next(Retry::Schedule, attempt, &answered(503), 0.0),
                Next::RetryAfter(time::Duration::seconds(seconds))
            );
            // at most ten percent later
            assert_eq!(
                next(Retry::Schedule, attempt, &answered(503), 1.0),
                Next::RetryAfter(time::Duration::seconds(seconds) * 1.1)
            );
        }
        assert_eq!(next(Retry::Schedule, 6, &answered(503), 0.0), Next::Failed);
    }

    #[test]
    fn which_answers_are_retried() {
        for status in [500, 502, 503, 504, 408, 425, 429, 301, 302, 307] {
            assert!(matches!(next(Retry::Schedule, 1, &answered(status), 0.0), Next::RetryAfter(_)), "{status}");
        }
        for status in [400, 401, 403, 404, 410, 422] {
            assert_eq!(next(Retry::Schedule, 1, &answered(status), 0.0), Next::Failed, "{status}");
        }
        for status in [200, 201, 204, 299] {
            assert_eq!(next(Retry::Schedule, 1, &answered(status), 0.0), Next::Delivered, "{status}");
        }
        let timeout = Outcome { status: None, error: Some("timed out".into()), ..answered(0) };
        assert!(matches!(next(Retry::Schedule, 2, &timeout, 0.0), Next::RetryAfter(_)));
        let refused = Outcome { refused: true, ..timeout.clone() };
        assert_eq!(next(Retry::Schedule, 1, &refused, 0.0), Next::Failed);
        // message callbacks: one attempt
        assert_eq!(next(Retry::Once, 1, &answered(503), 0.0), Next::Failed);
        assert_eq!(next(Retry::Once, 1, &answered(200), 0.0), Next::Delivered);
    }

    #[test]
    fn a_longer_retry_after_wins_up_to_six_hours() {
        let asked = |d: time::Duration| Outcome { retry_after: Some(d), ..answered(429) };
        assert_eq!(
            next(Retry::Schedule, 1, &asked(time::Duration::minutes(10)), 0.0),
            Next::RetryAfter(time::Duration::minutes(10))
        );
        assert_eq!(
            next(Retry::Schedule, 1, &asked(time::Duration::days(3)), 0.0),
            Next::RetryAfter(time::Duration::hours(6))
        );
        // shorter than the schedule: the schedule
        assert_eq!(
            next(Retry::Schedule, 2, &asked(time::Duration::seconds(5)), 0.0),
            Next::RetryAfter(time::Duration::minutes(5))
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = datetime!(2026-11-26 10:00 UTC);
        assert_eq!(parse_retry_after("120", now), Some(time::Duration::minutes(2)));
        assert_eq!(parse_retry_after("Thu, 26 Nov 2026 10:30:00 GMT", now), Some(time::Duration::minutes(30)));
        assert_eq!(parse_retry_after("Thu, 26 Nov 2026 09:30:00 GMT", now), Some(time::Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
    }

    /// The attempt itself refuses loopback in every spelling when the policy does, before any
    /// connection: a listener on this machine proves nothing arrived.
    #[tokio::test]
    async fn an_attempt_at_a_forbidden_target_sends_nothing_and_is_not_retried() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let deny = guard::Policy { allow_loopback: false };
        let client = guard::client(deny, std::time::Duration::from_secs(2)).expect("client");
        let delivery = Delivery { delivery_id: "d-1", event: "lead.created", event_id: "e-1", body: b"{}" };
        for url in [
            format!("http://127.0.0.1:{port}/"),
            format!("https://127.1:{port}/"),
            format!("https://0x7f000001:{port}/"),
            format!("https://2130706433:{port}/"),
            format!("https://[::ffff:127.0.0.1]:{port}/"),
            format!("https://localhost:{port}/"),
            // legacy http endpoints get no exemption from the address rules
            format!("http://127.0.0.1:{port}/"),
        ] {
            let target = Target { url: url.clone(), secret: "s".into(), headers: vec![], legacy_http: true };
            let outcome = send(&client, &deny, &target, &delivery, datetime!(2026-11-26 10:00 UTC), 100).await;
            assert!(outcome.refused, "{url}: {outcome:?}");
            assert_eq!(outcome.status, None);
            assert!(outcome.error.as_deref().is_some_and(|e| e.starts_with("refused")), "{url}: {outcome:?}");
            assert_eq!(next(Retry::Schedule, 1, &outcome, 0.0), Next::Failed, "{url}");
        }
        let accepted = tokio::time::timeout(std::time::Duration::from_millis(200), listener.accept()).await;
        assert!(accepted.is_err(), "a connection arrived");
    }

    #[test]
    fn headers_carry_both_signatures_and_the_ids() {
        let target = Target {
            url: "https://example.com".into(),
            secret: "whsec_test".into(),
            headers: vec![("Authorization".into(), "Bearer t".into())],
            legacy_http: false,
        };
        let delivery = Delivery { delivery_id: "d-1", event: "message.sent", event_id: "e-1", body: b"{\"a\":1}" };
        let now = datetime!(2026-11-26 10:00 UTC);
        let map = headers(&target, &delivery, now).expect("headers");
        let expected = signing::sign("whsec_test", "d-1", now.unix_timestamp(), b"{\"a\":1}");
        assert_eq!(map["x-signature"], expected.v1.as_str());
        assert_eq!(map["x-signature-v2"], expected.v2.as_str());
        assert_eq!(map["x-timestamp"], now.unix_timestamp().to_string().as_str());
        assert_eq!(map["x-delivery-id"], "d-1");
        assert_eq!(map["x-event"], "message.sent");
        assert_eq!(map["x-event-id"], "e-1");
        assert_eq!(map["content-type"], "application/json");
        assert_eq!(map["authorization"], "Bearer t");
    }
}
