//! The event outbox: one row per event, written in the caller's transaction.

use diesel::sql_types::{BigInt, Jsonb, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Error, TenantId};
use serde_json::json;
use store::jobs::{self, Enqueue};
use store::outbox::emit;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::common::{Record, conn, env, job_rows, start_time};

#[derive(diesel::QueryableByName, Debug, PartialEq)]
struct EventRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = BigInt)]
    tenant_id: i64,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Jsonb)]
    payload: serde_json::Value,
    #[diesel(sql_type = Timestamptz)]
    occurred_at: OffsetDateTime,
}

async fn events(pool: &store::Pool) -> Vec<EventRow> {
    diesel::sql_query("SELECT id, tenant_id, name, payload, occurred_at FROM events ORDER BY created_at, id")
        .load(&mut conn(pool).await)
        .await
        .expect("read events")
}

#[tokio::test]
async fn each_emit_stores_one_event_with_its_own_id() {
    let env = env().await;
    let at = start_time();
    let mut conn = conn(&env.pool).await;
    let payload = json!({"message": {"id": "msg_1"}});

    let first = emit(&mut conn, TenantId(3), "message.sent", payload.clone(), at).await.expect("emit");
    let later = at + Duration::seconds(1);
    let second = emit(&mut conn, TenantId(4), "message.failed", json!({"n": 2}), later).await.expect("emit");
    assert_ne!(first, second);
    assert_eq!(first.get_version_num(), 4, "random UUIDs");

    let mut stored = events(&env.pool).await;
    stored.sort_by_key(|event| event.occurred_at);
    assert_eq!(
        stored,
        vec![
            EventRow { id: first, tenant_id: 3, name: "message.sent".into(), payload, occurred_at: at },
            EventRow {
                id: second,
                tenant_id: 4,
                name: "message.failed".into(),
                payload: json!({"n": 2}),
                occurred_at: later,
            },
        ]
    );
}

#[tokio::test]
async fn an_event_of_a_rolled_back_transaction_is_never_stored() {
    let env = env().await;
    let at = start_time();
    let mut conn = conn(&env.pool).await;

    let rolled_back = conn
        .transaction(async |conn| {
            emit(conn, TenantId(3), "message.sent", json!({}), at).await?;
            jobs::enqueue(conn, &Record { n: 1 }, Enqueue::default()).await?;
            Err::<(), Error>(Error::validation("rollback"))
        })
        .await;
    assert!(rolled_back.is_err());
    assert!(events(&env.pool).await.is_empty());
    assert!(job_rows(&env.pool).await.is_empty());

    // The same work committed leaves the event and its job together.
    let id = conn
        .transaction(async |conn| {
            let id = emit(conn, TenantId(3), "message.sent", json!({}), at).await?;
            jobs::enqueue(conn, &Record { n: 1 }, Enqueue::default()).await?;
            Ok::<_, Error>(id)
        })
        .await
        .expect("commit");
    let stored = events(&env.pool).await;
    assert_eq!(stored.iter().map(|event| event.id).collect::<Vec<_>>(), vec![id]);
    assert_eq!(job_rows(&env.pool).await.len(), 1);
}

#[tokio::test]
async fn a_duplicate_event_id_is_a_unique_violation() {
    let env = env().await;
    let mut conn = conn(&env.pool).await;
    let id = Uuid::new_v4();
    let insert = "INSERT INTO events (id, tenant_id, name, payload, occurred_at)
                  VALUES ($1, 1, 'x', '{}', now())";
    diesel::sql_query(insert).bind::<SqlUuid, _>(id).execute(&mut conn).await.expect("first");
    let error = diesel::sql_query(insert).bind::<SqlUuid, _>(id).execute(&mut conn).await.expect_err("dup");
    assert!(store::is_unique_violation(&error, None));
    assert!(store::is_unique_violation(&error, Some("events_pkey")));
    assert!(!store::is_unique_violation(&error, Some("jobs_dedupe")));
    assert!(!store::is_unique_violation(&diesel::result::Error::NotFound, None));
}

#[tokio::test]
async fn read_answers_the_events_named_within_their_tenant_only() {
    let env = env().await;
    let mut conn = conn(&env.pool).await;
    let at = start_time();
    let one = emit(&mut conn, TenantId(1), "lead.created", json!({"n": 1}), at).await.expect("emit");
    let two = emit(&mut conn, TenantId(2), "lead.created", json!({"n": 2}), at).await.expect("emit");
    let mut found = store::outbox::read(&mut conn, &[(TenantId(1), one), (TenantId(2), two)]).await.expect("read");
    found.sort_by_key(|event| event.tenant_id);
    let seen: Vec<(Uuid, i64, serde_json::Value, OffsetDateTime)> =
        found.into_iter().map(|e| (e.id, e.tenant_id, e.payload, e.occurred_at)).collect();
    assert_eq!(seen, vec![(one, 1, json!({"n": 1}), at), (two, 2, json!({"n": 2}), at)]);
    // an id asked for under another tenant, or unknown, is left out
    let stray = store::outbox::read(&mut conn, &[(TenantId(2), one), (TenantId(1), Uuid::new_v4())]).await;
    assert_eq!(stray.expect("read"), vec![]);
    assert_eq!(store::outbox::read(&mut conn, &[]).await.expect("read"), vec![]);
}
