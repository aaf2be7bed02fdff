//! Deliveries in flight survive a crash (issue 14, crash recovery in seconds): the only real
//! `gateway` process is killed with SIGKILL while attempts are under way at a slow receiver,
//! started again with the default lease, and every delivery is `delivered` within 60 seconds
//! of the restart. An attempt the receiver answered but the dead process never recorded is sent
//! again (at least once, as documented) with the same `X-Delivery-Id`, so the receiver can
//! tell.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use diesel::sql_types::BigInt;
use diesel_async::RunQueryDsl;
use serde_json::json;
use wiremock::ResponseTemplate;

use super::support::*;
use crate::process::{Gateway, gateway_bin, log_path};

const EVENTS: usize = 200;

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn count(pool: &store::Pool, sql: &str) -> i64 {
    let mut conn = store::connect_system(pool).await.expect("connection");
    let found: Count = diesel::sql_query(sql).get_result(&mut conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    found.n
}

#[actix_web::test]
async fn with_the_default_lease_deliveries_in_flight_at_sigkill_are_delivered_within_a_minute_of_the_restart() {
    let bin = gateway_bin();
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    // a slow receiver: attempts stay in flight long enough to be cut off
    let receiver = Receiver::with(ResponseTemplate::new(200).set_delay(Duration::from_millis(400))).await;
    let (webhook, _) = register(&app, &acme.key, &receiver.url(), &["message.sent"]).await;
    let mut events = BTreeSet::new();
    for i in 0..EVENTS {
        events.insert(emit(&app, acme.tenant, "message.sent", json!({"message_id": format!("msg_{i}")})).await);
    }
    let url = app.db.url().to_owned();
    let pending =
        format!("SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = {webhook} AND state <> 'delivered'");
    assert_eq!(count(&app.pool, &pending).await, EVENTS as i64);

    // No lease setting: the defaults are what is measured.
    const SETTINGS: &[(&str, &str)] = &[("SVC_WEBHOOKS_ALLOW_LOOPBACK", "1")];
    let first = Gateway::start(&bin, &url, 31, SETTINGS).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while receiver.requests().await.len() < 40 {
        assert!(Instant::now() < deadline, "the receiver never got 40 attempts");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    first.kill().await;
    let claimed = format!(
        "SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = {webhook} AND state = 'pending'
           AND locked_by IS NOT NULL"
    );
    let cut_off = count(&app.pool, &claimed).await;
    eprintln!("killed with {cut_off} deliveries claimed and not recorded");
    assert!(cut_off > 0, "attempts were in flight at the kill");

    let restarted = Instant::now();
    let second = Gateway::start(&bin, &url, 32, SETTINGS).await;
    let deadline = restarted + Duration::from_secs(60);
    while count(&app.pool, &pending).await > 0 {
        assert!(Instant::now() < deadline, "deliveries still pending a minute after the restart");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = restarted.elapsed();
    eprintln!("every delivery delivered {took:?} after the restart");

    // Every event reached the receiver; a repeat is the same delivery, never a new one.
    let mut by_event: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for request in receiver.requests().await {
        by_event
            .entry(header(&request, "x-event-id").to_owned())
            .or_default()
            .insert(header(&request, "x-delivery-id").to_owned());
    }
    let expected: BTreeSet<String> = events.iter().map(|e| e.to_string()).collect();
    assert_eq!(by_event.keys().cloned().collect::<BTreeSet<_>>(), expected, "every event, once each at least");
    assert!(by_event.values().all(|ids| ids.len() == 1), "one delivery id per event");
    let failed =
        format!("SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = {webhook} AND state <> 'delivered'");
    assert_eq!(count(&app.pool, &failed).await, 0);

    second.kill().await;
    for run in [31, 32] {
        let _ = std::fs::remove_file(log_path(run));
    }
}
