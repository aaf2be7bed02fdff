//! The per-test database harness and the migrations it runs.

use diesel_async::RunQueryDsl;
use store::testing::{TestDb, with_database};

use crate::common::conn;

fn admin_url() -> String {
    std::env::var("DATABASE_URL").expect("DATABASE_URL")
}

fn database_name(url: &str) -> String {
    let path = url.split('?').next().expect("url");
    path.rsplit('/').next().expect("database").to_owned()
}

async fn database_exists(name: &str) -> bool {
    let (client, connection) =
        tokio_postgres::connect(&admin_url(), tokio_postgres::NoTls).await.expect("connect to DATABASE_URL");
    let driver = tokio::spawn(connection);
    let row = client.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name]).await.expect("pg_database");
    drop(client);
    let _ = driver.await;
    row.is_some()
}

async fn event_count(db: &TestDb) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    let count: Count = diesel::sql_query("SELECT count(*) AS count FROM events")
        .get_result(&mut conn(&db.pool()).await)
        .await
        .expect("count");
    count.count
}

#[tokio::test]
async fn every_test_database_is_its_own() {
    let one = TestDb::new().await;
    let two = TestDb::new().await;
    assert_ne!(one.url(), two.url());
    assert_ne!(database_name(one.url()), database_name(two.url()));

    diesel::sql_query(
        "INSERT INTO events (id, tenant_id, name, payload, occurred_at)
         VALUES (gen_random_uuid(), 1, 'x', '{}', now())",
    )
    .execute(&mut conn(&one.pool()).await)
    .await
    .expect("insert");
    assert_eq!(event_count(&one).await, 1);
    assert_eq!(event_count(&two).await, 0, "rows of one test never show in another");
}

#[tokio::test]
async fn a_test_database_is_dropped_with_its_handle() {
    let db = TestDb::new().await;
    let name = database_name(db.url());
    assert!(name.starts_with("test_"), "{name}");
    // Even with a connection still open, the database goes.
    let pool = db.pool();
    let open = conn(&pool).await;
    assert!(database_exists(&name).await);
    drop(db);
    assert!(!database_exists(&name).await, "{name} is still there");
    drop(open);
}

#[tokio::test]
async fn a_test_database_is_fully_migrated() {
    let db = TestDb::new().await;
    assert_eq!(store::migrate::run(db.url()).await.expect("migrate"), 0, "nothing left to run");
}

#[test]
fn with_database_swaps_only_the_database() {
    assert_eq!(with_database("postgres://u:p@host:5432/postgres", "test_1"), "postgres://u:p@host:5432/test_1");
    assert_eq!(
        with_database("postgres://u@host/postgres?sslmode=disable&application_name=x", "test_1"),
        "postgres://u@host/test_1?sslmode=disable&application_name=x"
    );
    assert_eq!(with_database("postgres://host", "test_1"), "postgres://host/test_1");
    assert_eq!(with_database("postgres://host/", "test_1"), "postgres://host/test_1");
    assert_eq!(with_database("postgres://host?sslmode=disable", "t"), "postgres://host/t?sslmode=disable");
}
