//! 120 requests per minute per Bearer token as a sliding log (contract: Limits; issue 2,
//! Gateway), for the in-process and the PostgreSQL-backed limiter alike. Each scenario is a
//! function run once per limiter; time moves by the app's manual clock, never by sleeping.

use actix_web::test::TestRequest;
use api_tests::{Limiter, Resp, json, spawn_with};
use time::{Duration, OffsetDateTime};

use crate::framework::assert_error;

const ME: &str = "/api/v3/me";
const GROUPS: &str = "/api/v3/contact-groups";
const LIMIT: u32 = 120;

const MEMORY: Limiter = Limiter::Memory(LIMIT);
const POSTGRES: Limiter = Limiter::Postgres(LIMIT);

fn number(res: &Resp, name: &str) -> i64 {
    let value = res
        .header(name)
        .unwrap_or_else(|| panic!("{name} missing (status {}): {:?} {:?}", res.status, res.body, res.headers));
    value.parse().unwrap_or_else(|_| panic!("{name} is not a whole number: {value:?}"))
}

/// An accepted request, with the limit and the remaining count it reports.
fn assert_allowed(res: &Resp, remaining: u32) {
    assert_eq!(res.status, 200, "{:?}", res.body);
    assert_eq!(number(res, "x-ratelimit-limit"), i64::from(LIMIT));
    assert_eq!(number(res, "x-ratelimit-remaining"), i64::from(remaining), "remaining");
}

/// A throttled request: 429 in the v3 envelope with `Retry-After`, `X-RateLimit-Reset` (when the
/// oldest counted request ages out), the limit and nothing remaining. Returns `Retry-After`.
fn assert_throttled(res: &Resp, reset_at: OffsetDateTime) -> i64 {
    assert_error(res, 429);
    assert_eq!(res.body.as_object().map(|o| o.contains_key("data")), Some(false), "no data on a 429");
    assert_eq!(number(res, "x-ratelimit-limit"), i64::from(LIMIT));
    assert_eq!(number(res, "x-ratelimit-remaining"), 0);
    assert_eq!(number(res, "x-ratelimit-reset"), reset_at.unix_timestamp(), "X-RateLimit-Reset");
    let retry_after = number(res, "retry-after");
    assert!(retry_after > 0, "Retry-After {retry_after} is positive");
    retry_after
}

/// The 121st request of a burst is refused; the headers say truly when to come back.
async fn burst(limiter: Limiter) {
    let app = spawn_with(limiter).await;
    let account = app.account("all").await;
    let t0 = app.clock.now();
    for i in 0..LIMIT {
        let res = app.get(ME, &account.key).await;
        assert_allowed(&res, LIMIT - 1 - i);
    }
    let res = app.get(ME, &account.key).await;
    let retry_after = assert_throttled(&res, t0 + Duration::seconds(60));
    assert_eq!(retry_after, 60, "Retry-After is exactly the rest of the window");
    // The same on every v3 route family, and refusals do not push the window out.
    for path in [GROUPS, "/api/v3/balance"] {
        let res = app.get(path, &account.key).await;
        assert_throttled(&res, t0 + Duration::seconds(60));
    }

    // Still refused a second before the reset...
    app.clock.advance(Duration::seconds(59));
    let res = app.get(ME, &account.key).await;
    let retry_after = assert_throttled(&res, t0 + Duration::seconds(60));
    assert_eq!(retry_after, 1);
    // ...and waiting as Retry-After says is enough.
    app.clock.advance(Duration::seconds(retry_after));
    let res = app.get(ME, &account.key).await;
    assert_allowed(&res, LIMIT - 1);
}

#[actix_web::test]
async fn the_121st_request_of_a_burst_is_refused_in_memory() {
    burst(MEMORY).await;
}

#[actix_web::test]
async fn the_121st_request_of_a_burst_is_refused_in_postgres() {
    burst(POSTGRES).await;
}

/// Every authenticated response carries the limit and the remaining count, counting down,
/// whatever its status.
async fn headers_on_every_authenticated_response(limiter: Limiter) {
    let app = spawn_with(limiter).await;
    let account = app.account("all").await;
    let viewer = app.account("contacts.view").await;
    let legacy = app.legacy_key(account.tenant).await;

    let mut remaining = LIMIT;
    let mut next = |res: &Resp| {
        remaining -= 1;
        assert_eq!(number(res, "x-ratelimit-limit"), i64::from(LIMIT), "{} {:?}", res.status, res.body);
        assert_eq!(number(res, "x-ratelimit-remaining"), i64::from(remaining), "{} {:?}", res.status, res.body);
    };
    let res = app.get(ME, &account.key).await;
    assert_eq!(res.status, 200);
    next(&res);
    let res = app.get("/api/v3/balance", &account.key).await;
    assert_eq!(res.status, 200);
    next(&res);
    let res = app.get(GROUPS, &account.key).await;
    assert_eq!(res.status, 200);
    next(&res);
    let res = app.post(GROUPS, &account.key, json!({"name": "Customers"})).await;
    assert_eq!(res.status, 201);
    next(&res);
    let res = app.get(&format!("{GROUPS}/999999"), &account.key).await;
    assert_error(&res, 404);
    next(&res);
    let res = app.post(GROUPS, &account.key, json!({"name": ""})).await;
    assert_error(&res, 422);
    next(&res);

    // Refusals after authentication count against their own key.
    let res = app.post(GROUPS, &viewer.key, json!({"name": "Nope"})).await;
    assert_error(&res, 403);
    assert_eq!(number(&res, "x-ratelimit-remaining"), i64::from(LIMIT - 1));
    let res = app.get(GROUPS, &legacy).await;
    assert_error(&res, 403);
    assert_eq!(number(&res, "x-ratelimit-remaining"), i64::from(LIMIT - 1));

    // A body the JSON extractor refuses is still an authenticated response.
    let res = app.post(GROUPS, &account.key, json!({"name": 5})).await;
    assert_error(&res, 422);
    next(&res);
    let res = app.get(ME, &account.key).await;
    next(&res);
}

#[actix_web::test]
async fn headers_on_every_authenticated_response_in_memory() {
    headers_on_every_authenticated_response(MEMORY).await;
}

#[actix_web::test]
async fn headers_on_every_authenticated_response_in_postgres() {
    headers_on_every_authenticated_response(POSTGRES).await;
}

/// 119 requests late in one minute followed by 2 just after it still refuses the second:
/// a fixed window (aligned to the clock's minutes or to the first request) or a token bucket
/// would let both through.
async fn sliding_window(limiter: Limiter) {
    let app = spawn_with(limiter).await;
    let account = app.account("all").await;
    // Start on a minute boundary, so a window aligned to the clock's minutes would reset at +60 s.
    let second = i64::from(app.clock.now().second());
    app.clock.advance(Duration::seconds((60 - second) % 60));
    let t0 = app.clock.now();
    assert_eq!(t0.second(), 0);

    assert_allowed(&app.get(ME, &account.key).await, LIMIT - 1);
    app.clock.advance(Duration::seconds(59));
    for i in 0..LIMIT - 1 {
        assert_allowed(&app.get(ME, &account.key).await, LIMIT - 2 - i);
    }
    assert_throttled(&app.get(ME, &account.key).await, t0 + Duration::seconds(60));

    // t0 + 61 s: the request at t0 aged out, the 119 at t0 + 59 s did not.
    app.clock.advance(Duration::seconds(2));
    assert_allowed(&app.get(ME, &account.key).await, 0);
    let res = app.get(ME, &account.key).await;
    assert_throttled(&res, t0 + Duration::seconds(59 + 60));
}

#[actix_web::test]
async fn a_sliding_window_refuses_what_a_fixed_window_would_allow_in_memory() {
    sliding_window(MEMORY).await;
}

#[actix_web::test]
async fn a_sliding_window_refuses_what_a_fixed_window_would_allow_in_postgres() {
    sliding_window(POSTGRES).await;
}

/// Capacity comes back exactly as old requests age out.
async fn capacity_returns(limiter: Limiter) {
    let app = spawn_with(limiter).await;
    let account = app.account("all").await;
    let t0 = app.clock.now();
    for i in 0..60 {
        assert_allowed(&app.get(ME, &account.key).await, LIMIT - 1 - i);
    }
    app.clock.advance(Duration::seconds(30));
    for i in 0..60 {
        assert_allowed(&app.get(ME, &account.key).await, 59 - i);
    }
    app.clock.advance(Duration::seconds(29));
    assert_throttled(&app.get(ME, &account.key).await, t0 + Duration::seconds(60));

    // t0 + 60 s: the first 60 aged out; the 60 from t0 + 30 s still count.
    app.clock.advance(Duration::seconds(1));
    for i in 0..60 {
        assert_allowed(&app.get(ME, &account.key).await, 59 - i);
    }
    assert_throttled(&app.get(ME, &account.key).await, t0 + Duration::seconds(90));

    // t0 + 121 s: everything has aged out; the full limit is back.
    app.clock.advance(Duration::seconds(61));
    assert_allowed(&app.get(ME, &account.key).await, LIMIT - 1);
}

#[actix_web::test]
async fn capacity_returns_as_old_requests_age_out_in_memory() {
    capacity_returns(MEMORY).await;
}

#[actix_web::test]
async fn capacity_returns_as_old_requests_age_out_in_postgres() {
    capacity_returns(POSTGRES).await;
}

/// The limit is per token: another key of the same tenant (and of the same issuer) has its own.
async fn per_token(limiter: Limiter) {
    let app = spawn_with(limiter).await;
    let account = app.account("all").await;
    let second = app.key(account.tenant, account.user).await;
    let other = app.account("all").await;
    for i in 0..LIMIT {
        assert_allowed(&app.get(ME, &account.key).await, LIMIT - 1 - i);
    }
    assert_throttled(&app.get(ME, &account.key).await, app.clock.now() + Duration::seconds(60));
    assert_allowed(&app.get(ME, &second).await, LIMIT - 1);
    assert_allowed(&app.get(ME, &other.key).await, LIMIT - 1);
    assert_allowed(&app.get(ME, &second).await, LIMIT - 2);
}

#[actix_web::test]
async fn limits_are_per_token_in_memory() {
    per_token(MEMORY).await;
}

#[actix_web::test]
async fn limits_are_per_token_in_postgres() {
    per_token(POSTGRES).await;
}

/// Requests that do not authenticate are not counted: not against a key sent the wrong way,
/// and an unknown token is never throttled into a 429 instead of its 401.
async fn unauthenticated_not_counted(limiter: Limiter) {
    let app = spawn_with(limiter).await;
    let account = app.account("all").await;
    for _ in 0..5 {
        let req = TestRequest::get().uri(ME).insert_header(("Authorization", format!("Token {}", account.key)));
        assert_error(&app.send(req).await, 401);
        let res = app.request("GET", &format!("{ME}?api_key={}", account.key), None, None).await;
        assert_error(&res, 401);
        assert_error(&app.request("GET", ME, None, None).await, 401);
    }
    assert_allowed(&app.get(ME, &account.key).await, LIMIT - 1);

    let unknown = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    for _ in 0..=LIMIT {
        assert_error(&app.get(ME, &unknown).await, 401);
    }
    assert_allowed(&app.get(ME, &account.key).await, LIMIT - 2);
}

#[actix_web::test]
async fn unauthenticated_requests_are_not_counted_in_memory() {
    unauthenticated_not_counted(MEMORY).await;
}

#[actix_web::test]
async fn unauthenticated_requests_are_not_counted_in_postgres() {
    unauthenticated_not_counted(POSTGRES).await;
}
