//! Idempotency records: the first request owns the key, a repeat gets the stored response,
//! a different request with the key is refused, a repeat during the work gets a conflict.

use kernel::{ErrorKind, TenantId};
use serde_json::json;
use store::idempotency::{self, Idempotency, REPLAY_WINDOW, fingerprint};
use time::{Duration, OffsetDateTime};

use crate::common::{conn, env, start_time};

const TENANT: TenantId = TenantId(1);
const SCOPE: &str = "POST /v1/messages";

async fn begin(
    pool: &store::Pool,
    tenant: TenantId,
    scope: &str,
    key: &str,
    print: &str,
    now: OffsetDateTime,
) -> Result<Idempotency, kernel::Error> {
    idempotency::begin(&mut *conn(pool).await, tenant, scope, key, print, now).await
}

async fn complete(pool: &store::Pool, tenant: TenantId, scope: &str, key: &str, status: u16, body: serde_json::Value) {
    idempotency::complete(&mut *conn(pool).await, tenant, scope, key, status, &body).await.expect("complete");
}

async fn abandon(pool: &store::Pool, tenant: TenantId, scope: &str, key: &str) {
    idempotency::abandon(&mut *conn(pool).await, tenant, scope, key).await.expect("abandon");
}

#[test]
fn a_fingerprint_covers_every_part_and_its_boundaries() {
    let print = fingerprint(&[b"POST", b"/v1/messages", b"{}"]);
    assert_eq!(print.len(), 64);
    assert!(print.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(print, fingerprint(&[b"POST", b"/v1/messages", b"{}"]));
    assert_ne!(print, fingerprint(&[b"POST", b"/v1/messages", b"{ }"]));
    assert_ne!(fingerprint(&[b"ab", b"c"]), fingerprint(&[b"a", b"bc"]));
    assert_ne!(fingerprint(&[b"ab"]), fingerprint(&[b"ab", b""]));
}

#[tokio::test]
async fn the_first_response_is_replayed_to_the_same_request() {
    let env = env().await;
    let now = start_time();
    let print = fingerprint(&[b"request one"]);
    let body = json!({"id": "msg_1", "status": "queued"});

    assert_eq!(begin(&env.pool, TENANT, SCOPE, "k1", &print, now).await.expect("begin"), Idempotency::Started);
    complete(&env.pool, TENANT, SCOPE, "k1", 201, body.clone()).await;
    for later in [Duration::ZERO, Duration::hours(1), REPLAY_WINDOW - Duration::seconds(1)] {
        let replay = begin(&env.pool, TENANT, SCOPE, "k1", &print, now + later).await.expect("begin");
        assert_eq!(replay, Idempotency::Replay { status: 201, body: body.clone() });
    }
}

#[tokio::test]
async fn the_same_key_with_another_request_is_refused() {
    let env = env().await;
    let now = start_time();
    let print = fingerprint(&[b"request one"]);
    begin(&env.pool, TENANT, SCOPE, "k1", &print, now).await.expect("begin");
    complete(&env.pool, TENANT, SCOPE, "k1", 200, json!({"ok": true})).await;

    let error =
        begin(&env.pool, TENANT, SCOPE, "k1", &fingerprint(&[b"request two"]), now).await.expect_err("another request");
    assert_eq!(error.kind, ErrorKind::Validation);
    assert!(error.errors.contains_key("Idempotency-Key"), "{error:?}");
    // The refusal changed nothing: the first request still replays.
    let replay = begin(&env.pool, TENANT, SCOPE, "k1", &print, now).await.expect("begin");
    assert_eq!(replay, Idempotency::Replay { status: 200, body: json!({"ok": true}) });
}

#[tokio::test]
async fn a_repeat_while_the_first_is_working_is_a_conflict() {
    let env = env().await;
    let now = start_time();
    let print = fingerprint(&[b"request one"]);
    assert_eq!(begin(&env.pool, TENANT, SCOPE, "k1", &print, now).await.expect("begin"), Idempotency::Started);

    let error =
        begin(&env.pool, TENANT, SCOPE, "k1", &print, now + Duration::seconds(1)).await.expect_err("still working");
    assert_eq!(error.kind, ErrorKind::Conflict);
    let other =
        begin(&env.pool, TENANT, SCOPE, "k1", &fingerprint(&[b"request two"]), now).await.expect_err("another request");
    assert_eq!(other.kind, ErrorKind::Validation, "a different request is refused even while working");
}

#[tokio::test]
async fn a_key_is_fresh_again_after_the_replay_window() {
    let env = env().await;
    let now = start_time();
    let print = fingerprint(&[b"request one"]);
    begin(&env.pool, TENANT, SCOPE, "k1", &print, now).await.expect("begin");
    complete(&env.pool, TENANT, SCOPE, "k1", 201, json!({"n": 1})).await;

    let later = now + Duration::hours(25);
    let another = fingerprint(&[b"request two"]);
    assert_eq!(begin(&env.pool, TENANT, SCOPE, "k1", &another, later).await.expect("begin"), Idempotency::Started);
    // The new claim replaced the old record: it is in progress, then replays its own answer.
    let working = begin(&env.pool, TENANT, SCOPE, "k1", &another, later).await.expect_err("working");
    assert_eq!(working.kind, ErrorKind::Conflict);
    complete(&env.pool, TENANT, SCOPE, "k1", 202, json!({"n": 2})).await;
    let replay = begin(&env.pool, TENANT, SCOPE, "k1", &another, later).await.expect("begin");
    assert_eq!(replay, Idempotency::Replay { status: 202, body: json!({"n": 2}) });
}

#[tokio::test]
async fn the_window_ends_exactly_24_hours_after_the_claim() {
    let env = env().await;
    let now = start_time();
    let print = fingerprint(&[b"request one"]);
    begin(&env.pool, TENANT, SCOPE, "k1", &print, now).await.expect("begin");
    complete(&env.pool, TENANT, SCOPE, "k1", 200, json!(null)).await;
    let before = now + REPLAY_WINDOW - Duration::microseconds(1);
    assert!(matches!(
        begin(&env.pool, TENANT, SCOPE, "k1", &print, before).await.expect("begin"),
        Idempotency::Replay { status: 200, .. }
    ));
    assert_eq!(
        begin(&env.pool, TENANT, SCOPE, "k1", &print, now + REPLAY_WINDOW).await.expect("begin"),
        Idempotency::Started
    );
}

#[tokio::test]
async fn an_unfinished_claim_expires_too() {
    let env = env().await;
    let now = start_time();
    let print = fingerprint(&[b"request one"]);
    begin(&env.pool, TENANT, SCOPE, "k1", &print, now).await.expect("begin");
    let later = now + Duration::hours(25);
    assert_eq!(begin(&env.pool, TENANT, SCOPE, "k1", &print, later).await.expect("begin"), Idempotency::Started);
}

#[tokio::test]
async fn keys_belong_to_one_tenant_and_scope() {
    let env = env().await;
    let now = start_time();
    let print = fingerprint(&[b"request one"]);
    begin(&env.pool, TENANT, SCOPE, "k1", &print, now).await.expect("begin");
    complete(&env.pool, TENANT, SCOPE, "k1", 201, json!({"tenant": 1})).await;

    let other_tenant = begin(&env.pool, TenantId(2), SCOPE, "k1", &print, now).await.expect("begin");
    assert_eq!(other_tenant, Idempotency::Started);
    let other_scope = begin(&env.pool, TENANT, "POST /v1/contacts", "k1", &print, now).await.expect("begin");
    assert_eq!(other_scope, Idempotency::Started);

    // Completing another tenant's claim leaves the first tenant's record alone.
    complete(&env.pool, TenantId(2), SCOPE, "k1", 500, json!({"tenant": 2})).await;
    let replay = begin(&env.pool, TENANT, SCOPE, "k1", &print, now).await.expect("begin");
    assert_eq!(replay, Idempotency::Replay { status: 201, body: json!({"tenant": 1}) });
    let replay = begin(&env.pool, TenantId(2), SCOPE, "k1", &print, now).await.expect("begin");
    assert_eq!(replay, Idempotency::Replay { status: 500, body: json!({"tenant": 2}) });
}

#[tokio::test]
async fn abandon_frees_an_unfinished_key_but_not_a_completed_one() {
    let env = env().await;
    let now = start_time();
    let print = fingerprint(&[b"request one"]);
    begin(&env.pool, TENANT, SCOPE, "k1", &print, now).await.expect("begin");
    abandon(&env.pool, TENANT, SCOPE, "k1").await;
    // Reusable at once, even for a different request.
    let another = fingerprint(&[b"request two"]);
    assert_eq!(begin(&env.pool, TENANT, SCOPE, "k1", &another, now).await.expect("begin"), Idempotency::Started);

    complete(&env.pool, TENANT, SCOPE, "k1", 201, json!({"kept": true})).await;
    abandon(&env.pool, TENANT, SCOPE, "k1").await;
    let replay = begin(&env.pool, TENANT, SCOPE, "k1", &another, now).await.expect("begin");
    assert_eq!(replay, Idempotency::Replay { status: 201, body: json!({"kept": true}) });
}

/// Whether another session of the test database is waiting for a lock.
async fn someone_waits_for_a_lock(url: &str) -> bool {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect");
    let driver = tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
            &[],
        )
        .await
        .expect("pg_stat_activity");
    drop(client);
    let _ = driver.await;
    row.get::<_, i64>(0) > 0
}

/// Two requests with one key at the same moment: the loser must be told "in progress"
/// (409), not "not found". The first claim commits while the second waits on its row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_repeat_is_a_conflict() {
    use diesel_async::AsyncConnection;
    let env = env().await;
    let now = start_time();
    let print = fingerprint(&[b"request one"]);
    let url = env.db.url().to_owned();
    let pool = env.pool.clone();

    let mut first = conn(&env.pool).await;
    let second = first
        .transaction(async |conn| {
            let started = idempotency::begin(conn, TENANT, SCOPE, "k1", &print, now).await?;
            assert_eq!(started, Idempotency::Started);
            let print = print.clone();
            let second = tokio::spawn(async move { begin(&pool, TENANT, SCOPE, "k1", &print, now).await });
            crate::common::eventually("the repeat to wait for the claim", || someone_waits_for_a_lock(&url)).await;
            Ok::<_, kernel::Error>(second)
        })
        .await
        .expect("commit");
    let error = second.await.expect("join").expect_err("in progress");
    assert_eq!(error.kind, ErrorKind::Conflict, "{error:?}");
}

/// A caller of tenant 1 with no recorded issuer (what the keys of `once` are scoped by).
fn caller() -> kernel::Caller {
    kernel::Caller {
        tenant_id: TENANT,
        calling_code: "255".into(),
        key_id: kernel::ApiKeyId(1),
        key_name: "test".into(),
        credential: kernel::CredentialKind::RestKey,
        issuer: kernel::Issuer::Legacy,
    }
}

fn request(key: &str, body: serde_json::Value) -> Option<idempotency::Request> {
    let key = idempotency::Key::parse(key).expect("a valid key").expect("not blank");
    Some(idempotency::Request::new(&caller(), "test.create", key, &body).expect("request"))
}

/// Counts the rows `work` writes, so a test sees whether the work ran and committed.
async fn count_jobs(pool: &store::Pool) -> i64 {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let n: N =
        diesel::sql_query("SELECT count(*) AS n FROM jobs").get_result(&mut *conn(pool).await).await.expect("count");
    n.n
}

/// The work of these tests: one row written in the work's transaction.
async fn write_a_row(conn: &mut store::Conn, fail: bool) -> Result<i64, kernel::Error> {
    use diesel_async::RunQueryDsl;
    diesel::sql_query("INSERT INTO jobs (name, payload, run_at, max_attempts) VALUES ('probe', '{}', now(), 1)")
        .execute(conn)
        .await?;
    if fail {
        return Err(kernel::Error::validation("refused after writing"));
    }
    Ok(7)
}

#[test]
fn keys_are_trimmed_text_of_at_most_255_characters() {
    assert_eq!(idempotency::Key::parse("  ").expect("blank"), None);
    assert_eq!(idempotency::Key::parse(" k1 ").expect("k1").map(|k| k.as_str().to_owned()), Some("k1".to_owned()));
    assert!(idempotency::Key::parse(&"é".repeat(255)).expect("255 characters").is_some());
    let error = idempotency::Key::parse(&"k".repeat(256)).expect_err("too long");
    assert!(error.errors.contains_key("Idempotency-Key"), "{error:?}");
    assert!(idempotency::Key::parse("a\0b").is_err());
}

#[tokio::test]
async fn once_runs_the_work_once_and_replays_its_answer_whatever_the_member_order() {
    let env = env().await;
    let now = start_time();
    let mut c = conn(&env.pool).await;
    let first = idempotency::once(&mut c, now, request("k1", json!({"a": 1, "b": [{"x": 1, "y": 2}]})), async |conn| {
        write_a_row(conn, false).await
    })
    .await
    .expect("first");
    assert_eq!(first, idempotency::Answer::Done(7));
    let again = idempotency::once(&mut c, now, request("k1", json!({"b": [{"y": 2, "x": 1}], "a": 1})), async |conn| {
        write_a_row(conn, false).await
    })
    .await
    .expect("again");
    assert_eq!(again, idempotency::Answer::Replay(json!(7)));
    assert_eq!(count_jobs(&env.pool).await, 1, "the work ran once");

    let changed =
        idempotency::once(&mut c, now, request("k1", json!({"a": 2})), async |conn| write_a_row(conn, false).await)
            .await
            .expect_err("another body");
    assert_eq!(changed.kind, ErrorKind::Validation);
    let unkeyed = idempotency::once(&mut c, now, None, async |conn| write_a_row(conn, false).await).await;
    assert_eq!(unkeyed.expect("no key"), idempotency::Answer::Done(7));
    assert_eq!(count_jobs(&env.pool).await, 2, "no key: the work just runs");
}

#[tokio::test]
async fn refused_work_leaves_nothing_behind_and_frees_the_key() {
    let env = env().await;
    let now = start_time();
    let mut c = conn(&env.pool).await;
    let refused =
        idempotency::once(&mut c, now, request("k1", json!({})), async |conn| write_a_row(conn, true).await).await;
    assert_eq!(refused.expect_err("refused").kind, ErrorKind::Validation);
    assert_eq!(count_jobs(&env.pool).await, 0, "the refused work's writes were rolled back with it");
    let corrected = idempotency::once(&mut c, now, request("k1", json!({"fixed": true})), async |conn| {
        write_a_row(conn, false).await
    })
    .await;
    assert_eq!(corrected.expect("corrected"), idempotency::Answer::Done(7));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_whose_work_never_finished_is_taken_over_after_its_lease_and_commits_once() {
    // A request still working (or whose process died before its commit) holds its key: a
    // repeat is 409; after the lease the repeat does the work itself, and the first, if it
    // was alive after all, can no longer commit.
    let env = env().await;
    let now = start_time();
    let body = json!({"n": 1});
    let started = std::sync::Arc::new(tokio::sync::Notify::new());
    let go_on = std::sync::Arc::new(tokio::sync::Notify::new());
    let first = {
        let (pool, body, started, go_on) = (env.pool.clone(), body.clone(), started.clone(), go_on.clone());
        tokio::spawn(async move {
            let mut c = conn(&pool).await;
            idempotency::once(&mut c, now, request("k1", body), async |conn| {
                let row = write_a_row(conn, false).await;
                started.notify_one();
                go_on.notified().await;
                row
            })
            .await
        })
    };
    started.notified().await;
    let mut c = conn(&env.pool).await;
    let repeat = async |at| {
        idempotency::once(&mut *conn(&env.pool).await, at, request("k1", body.clone()), async |conn| {
            write_a_row(conn, false).await
        })
        .await
    };
    let busy = repeat(now + Duration::seconds(5)).await.expect_err("in flight");
    assert_eq!(busy.kind, ErrorKind::Conflict);
    let taken = repeat(now + idempotency::IN_FLIGHT_LEASE).await.expect("taken over");
    assert_eq!(taken, idempotency::Answer::Done(7));

    go_on.notify_one();
    let late = first.await.expect("join").expect_err("the first lost its claim");
    assert_eq!(late.kind, ErrorKind::Conflict);
    assert_eq!(count_jobs(&env.pool).await, 1, "the work committed once");
    let replay = idempotency::once(&mut c, now + idempotency::IN_FLIGHT_LEASE, request("k1", body), async |conn| {
        write_a_row(conn, false).await
    })
    .await
    .expect("replay");
    assert_eq!(replay, idempotency::Answer::Replay(json!(7)));
}
