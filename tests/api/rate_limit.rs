//! 120 requests per minute per Bearer token as a sliding log (contract: Limits; issue 2,
//! Gateway), for the in-process and the PostgreSQL-backed limiter alike. Each scenario is a
//! function run once per limiter; time moves by the app's manual clock, never by sleeping.
//! The PostgreSQL limiter's leases are also checked across two gateways sharing one database.

use actix_web::test::TestRequest;
use api_tests::{Limiter, Resp, json, spawn_with};
use gateway::http::rate_limit::PostgresLimiter;
use store::testing::TestDb;
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

/// Two gateways on one database: two PostgreSQL limiters on one pool share the log, each
/// spending leases of permits in its own process.
fn two_gateways(db: &TestDb, limit: u32) -> [PostgresLimiter; 2] {
    [PostgresLimiter::new(limit, db.pool()), PostgresLimiter::new(limit, db.pool())]
}

/// Accepted times, sorted: never more than `LIMIT` in any rolling 60 seconds.
fn assert_never_over_the_limit(accepted: &[OffsetDateTime]) {
    for (i, at) in accepted.iter().enumerate() {
        let in_window = accepted[..=i].iter().filter(|t| **t > *at - Duration::seconds(60)).count();
        assert!(in_window <= LIMIT as usize, "{in_window} accepted in the minute up to {at}");
    }
}

/// A burst split between two gateways gets exactly the limit, however the leases fall; then,
/// with requests landing on either gateway at uneven times, never more than the limit in any
/// rolling minute, and (the documented tolerance) at most a few refused early.
#[actix_web::test]
async fn the_limit_holds_across_two_gateways_sharing_one_database() {
    let db = TestDb::new().await;
    let gateways = two_gateways(&db, LIMIT);
    let key = [9u8; 32];
    let t0 = OffsetDateTime::now_utc().replace_nanosecond(0).expect("valid time");

    let mut accepted = Vec::new();
    for i in 0..2 * LIMIT as usize {
        let decision = gateways[i % 2].check(&key, t0).await.expect("checked");
        if decision.allowed {
            accepted.push(t0);
        } else {
            assert_eq!(decision.remaining, 0);
            assert_eq!(decision.reset, (t0 + Duration::seconds(60)).unix_timestamp());
        }
    }
    assert_eq!(accepted.len(), LIMIT as usize, "a burst over two gateways");

    // Ten minutes at about 5 requests a second (2.5 times the limit), each on either gateway.
    let mut now = t0 + Duration::seconds(60);
    let mut seed: u64 = 15;
    let mut steady = Vec::new();
    while now < t0 + Duration::minutes(11) {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        now += Duration::milliseconds(((seed >> 33) % 400) as i64);
        let gateway = &gateways[((seed >> 20) & 1) as usize];
        if gateway.check(&key, now).await.expect("checked").allowed {
            steady.push(now);
        }
    }
    accepted.extend(&steady);
    assert_never_over_the_limit(&accepted);
    // The limit is used, not only respected: at most one grain and one lease's worth short.
    assert!(steady.len() >= 10 * LIMIT as usize - 30, "{} accepted in 10 minutes", steady.len());
}

#[derive(diesel::QueryableByName, Debug, PartialEq)]
struct LogRow {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    permits: i32,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    leased: bool,
}

async fn log_rows(db: &TestDb) -> Vec<LogRow> {
    use diesel_async::RunQueryDsl;
    let mut conn = store::connect_system(&db.pool()).await.expect("connection");
    diesel::sql_query("SELECT permits, lease IS NOT NULL AS leased FROM rate_limit_hits ORDER BY at")
        .load(&mut conn)
        .await
        .expect("the log")
}

/// Far from its limit, a token costs one statement per lease, not one row per request: 100
/// requests write one lease of 256 permits; once the lease ends, the next statement settles
/// it with the 100 permits spent (at one time here) and takes a new lease.
#[actix_web::test]
async fn a_gateway_takes_permits_in_leases() {
    let db = TestDb::new().await;
    let [gateway, _] = two_gateways(&db, 1_000_000);
    let key = [3u8; 32];
    let t0 = OffsetDateTime::now_utc().replace_nanosecond(0).expect("valid time");
    for i in 0..100 {
        let decision = gateway.check(&key, t0).await.expect("checked");
        assert!(decision.allowed);
        assert_eq!(decision.remaining, 1_000_000 - 1 - i);
    }
    assert_eq!(log_rows(&db).await, [LogRow { permits: 256, leased: true }]);

    assert!(gateway.check(&key, t0 + Duration::seconds(2)).await.expect("checked").allowed);
    assert_eq!(log_rows(&db).await, [LogRow { permits: 100, leased: false }, LogRow { permits: 256, leased: true }]);
}
