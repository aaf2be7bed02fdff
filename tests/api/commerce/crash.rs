//! A product sync run survives a crash (issue 14, crash recovery in seconds): the only real
//! `gateway` process is killed with SIGKILL while its worker holds a 5,000-product run, started
//! again with the default lease and heartbeat, and the run is `completed` within 60 seconds of
//! the restart, every product landed exactly once, `sync.completed` emitted once.

use std::time::{Duration, Instant};

use api_tests::{json, spawn};
use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl;
use serde_json::Value;

use super::support::*;
use crate::process::{Gateway, gateway_bin, log_path};

const PRODUCTS: usize = 5_000;

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(diesel::QueryableByName)]
struct Status {
    #[diesel(sql_type = Text)]
    status: String,
}

async fn count(pool: &store::Pool, sql: &str) -> i64 {
    let mut conn = store::connect_system(pool).await.expect("connection");
    let found: Count = diesel::sql_query(sql).get_result(&mut conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    found.n
}

async fn run_status(pool: &store::Pool, sync: i64) -> String {
    let mut conn = store::connect_system(pool).await.expect("connection");
    let found: Status = diesel::sql_query(format!("SELECT status FROM catalogue_syncs WHERE id = {sync}"))
        .get_result(&mut conn)
        .await
        .expect("the run");
    found.status
}

/// Polls (every 5 ms) until `done`, or panics after `within`.
async fn wait_until<F: Future<Output = bool>>(within: Duration, what: &str, mut done: impl FnMut() -> F) {
    let deadline = Instant::now() + within;
    while !done().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[actix_web::test]
async fn with_the_default_lease_a_sync_run_cut_off_by_sigkill_completes_within_a_minute_of_the_restart() {
    let bin = gateway_bin();
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    let url = app.db.url().to_owned();

    // No lease or heartbeat setting: the defaults are what is measured.
    let first = Gateway::start(&bin, &url, 21, &[]).await;
    let rows: Vec<Value> = (1..=PRODUCTS)
        .map(|i| json!({"sku": format!("P{i:05}"), "name": format!("Product {i}"), "price": 100 + i, "inventory": i % 7}))
        .collect();
    let client = providers::http_client().expect("client");
    let res = client
        .post(format!("{}{CATALOGUES}/{shop}/products/batch", first.url))
        .bearer_auth(&acme.key)
        .json(&json!({"mode": "upsert", "products": rows}))
        .send()
        .await
        .expect("the batch");
    assert_eq!(res.status().as_u16(), 202);
    let queued: Value = res.json().await.expect("JSON");
    let sync = queued["data"]["id"].as_i64().expect("the run's id");

    // Killed as soon as its worker holds the run (it works in one transaction, cut off).
    let held = "SELECT count(*) AS n FROM jobs WHERE name = 'commerce.sync' AND state = 'running'";
    wait_until(Duration::from_secs(60), "the worker to take the run", || async { count(&app.pool, held).await > 0 })
        .await;
    first.kill().await;
    assert_ne!(run_status(&app.pool, sync).await, "completed", "killed before the run ended");
    assert_eq!(count(&app.pool, &format!("SELECT count(*) AS n FROM products WHERE catalogue_id = {shop}")).await, 0);

    let restarted = Instant::now();
    let second = Gateway::start(&bin, &url, 22, &[]).await;
    wait_until(Duration::from_secs(60), "the run to complete within a minute of the restart", || async {
        run_status(&app.pool, sync).await == "completed"
    })
    .await;
    let took = restarted.elapsed();
    eprintln!("sync run completed {took:?} after the restart");
    assert!(took < Duration::from_secs(60), "completed {took:?} after the restart");

    // The report through the API of the new process, and every product exactly once.
    let res = client
        .get(format!("{}{CATALOGUES}/{shop}/syncs/{sync}", second.url))
        .bearer_auth(&acme.key)
        .send()
        .await
        .expect("the report");
    assert_eq!(res.status().as_u16(), 200);
    let report: Value = res.json().await.expect("JSON");
    let report = &report["data"];
    assert_eq!(report["status"], "completed", "{report}");
    for (member, expected) in
        [("received", PRODUCTS), ("created", PRODUCTS), ("updated", 0), ("rejected", 0), ("retired", 0)]
    {
        assert_eq!(report[member], json!(expected), "{member}: {report}");
    }
    let products = format!("SELECT count(*) AS n FROM products WHERE catalogue_id = {shop}");
    assert_eq!(count(&app.pool, &products).await, PRODUCTS as i64);
    let codes = format!("SELECT count(DISTINCT sku) AS n FROM products WHERE catalogue_id = {shop}");
    assert_eq!(count(&app.pool, &codes).await, PRODUCTS as i64);
    let completed =
        format!("SELECT count(*) AS n FROM events WHERE tenant_id = {} AND name = 'sync.completed'", acme.tenant.0);
    assert_eq!(count(&app.pool, &completed).await, 1, "sync.completed once");
    let left = "SELECT count(*) AS n FROM jobs WHERE name = 'commerce.sync'";
    assert_eq!(count(&app.pool, left).await, 0, "the job is done");

    second.kill().await;
    for run in [21, 22] {
        let _ = std::fs::remove_file(log_path(run));
    }
}
