//! Searches under row-level security (`store::search`; docs/operations.md, "Searches under
//! row-level security"): as the service role in a tenant's scope, the searches' conditions are
//! index conditions, which they can only be when they are leakproof; and migrations run by a
//! role that is no superuser still give every search its answer.

use diesel::QueryableByName;
use diesel::sql_types::{Nullable, Text};
use diesel_async::RunQueryDsl;
use kernel::TenantId;
use store::Conn;
use store::testing::{TestDb, with_database};

#[derive(QueryableByName)]
struct Line {
    #[diesel(sql_type = Text)]
    #[diesel(column_name = "QUERY PLAN")]
    line: String,
}

#[derive(QueryableByName)]
struct Value {
    #[diesel(sql_type = Nullable<Text>)]
    value: Option<String>,
}

/// The plan of `query`, with scans of the whole table priced out of reach: a search that can
/// use its index then does.
async fn plan(conn: &mut Conn, query: &str) -> String {
    diesel::sql_query("SET enable_seqscan = off").execute(conn).await.expect("set");
    let lines: Vec<Line> = diesel::sql_query(format!("EXPLAIN {query}")).load(conn).await.expect("explain");
    diesel::sql_query("RESET enable_seqscan").execute(conn).await.expect("reset");
    lines.into_iter().map(|l| l.line).collect::<Vec<_>>().join("\n")
}

async fn text(conn: &mut Conn, query: &str) -> Option<String> {
    diesel::sql_query(query).get_result::<Value>(conn).await.expect("value").value
}

#[tokio::test]
async fn searches_use_their_trigram_indexes_in_a_tenant_scope() {
    let db = TestDb::new().await;
    let pool = db.pool();
    let mut conn = store::connect(&pool, TenantId(1)).await.expect("connection");

    let contacts = plan(&mut conn, "SELECT id FROM contacts WHERE contacts.name ~~~* '%asha%'").await;
    assert!(contacts.contains("Index Scan on contacts_name_trgm"), "{contacts}");
    let numbers = plan(&mut conn, "SELECT id FROM contacts WHERE contacts.full_phone_number ~~~ '%71234%'").await;
    assert!(numbers.contains("Index Scan on contacts_full_phone_trgm"), "{numbers}");
    let leads =
        plan(&mut conn, "SELECT id FROM leads WHERE svc_words(name, company, phone, email) ~~~* '%acme%'").await;
    assert!(leads.contains("Index Scan on leads_search"), "{leads}");

    // a data table's search index, as the data-tables crate builds it, and no other index
    // on the table's records to choose instead
    let mut owner = pool.owner_connection().await.expect("owner");
    diesel::sql_query("DROP INDEX data_records_created, data_records_updated").execute(&mut owner).await.expect("drop");
    let opclass = store::search::trigram_opclass(&mut owner).await.expect("opclass");
    assert_eq!(opclass, "svc_trgm_ops", "the tests' migrations run as a superuser");
    diesel::sql_query(format!(
        "CREATE INDEX probe_search ON data_records USING gin (svc_record_text(data, '{{name,city}}') {opclass})
         WHERE table_id = '00000000-0000-0000-0000-000000000001' AND deleted_at IS NULL"
    ))
    .execute(&mut owner)
    .await
    .expect("index");
    let records = plan(
        &mut conn,
        "SELECT id FROM data_records WHERE table_id = '00000000-0000-0000-0000-000000000001' AND deleted_at IS NULL
         AND svc_record_text(data, '{name,city}') ~~~ '%amina%'",
    )
    .await;
    assert!(records.contains("Index Scan on probe_search"), "{records}");

    // a data table's filter on an indexed column (its jsonb comparisons declared leakproof)
    diesel::sql_query(
        "CREATE INDEX probe_score ON data_records (((data->'score')), id)
         WHERE table_id = '00000000-0000-0000-0000-000000000001' AND deleted_at IS NULL",
    )
    .execute(&mut owner)
    .await
    .expect("index");
    let filtered = plan(
        &mut conn,
        "SELECT id FROM data_records WHERE table_id = '00000000-0000-0000-0000-000000000001' AND deleted_at IS NULL
         AND data->'score' > '50'::jsonb AND data->'segment' = '\"retail\"'::jsonb",
    )
    .await;
    assert!(filtered.contains("Index Cond: ((data -> 'score'::text) > '50'::jsonb)"), "{filtered}");
}

#[tokio::test]
async fn the_search_texts_join_the_fields_lower_cased() {
    let db = TestDb::new().await;
    let mut conn = store::connect_system(&db.pool()).await.expect("connection");
    let record = "SELECT svc_record_text('{\"name\": \"Amina J\", \"score\": 5, \"city\": null}', '{name,phone,score}') AS value";
    assert_eq!(text(&mut conn, record).await.as_deref(), Some("amina j  5"));
    let words = "SELECT svc_words('Acme', NULL, '0712') AS value";
    assert_eq!(text(&mut conn, words).await.as_deref(), Some("Acme  0712"));
    let like = "SELECT (('50% off' ~~~ '50\\% %') AND ('ASHA' ~~~* '%sha') AND NOT ('asha' ~~~ 'ASHA'))::text AS value";
    assert_eq!(text(&mut conn, like).await.as_deref(), Some("true"));
}

#[tokio::test]
async fn the_estimate_is_the_planners_row_count() {
    let db = TestDb::new().await;
    let mut conn = store::connect_system(&db.pool()).await.expect("connection");
    let query = diesel::sql_query("SELECT g FROM generate_series(1, 1234) AS g");
    let estimate = store::search::estimate(&mut conn, query).await.expect("estimate");
    assert_eq!(estimate, 1234);
}

/// Migrations run by a role that may not declare LEAKPROOF nor make an operator class: the
/// same operators answer the same, as plain SQL over the stock trigram indexes.
#[tokio::test]
async fn migrations_without_a_superuser_keep_every_search_answering() {
    let db = TestDb::new().await;
    let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    let role = format!("migrator_{}", std::process::id());
    let database = format!("plain_{}", uuid::Uuid::new_v4().simple());
    client
        .batch_execute(&format!(
            "DO $$ BEGIN CREATE ROLE {role} LOGIN NOSUPERUSER CREATEROLE;
             EXCEPTION WHEN duplicate_object THEN NULL; END $$"
        ))
        .await
        .expect("role");
    client
        .batch_execute(&format!("CREATE DATABASE {database} OWNER {role} TEMPLATE template0"))
        .await
        .expect("database");
    let superuser_url = with_database(db.url(), &database);
    let url = superuser_url.replacen("postgres@", &format!("{role}@"), 1);
    store::migrate::run(&url).await.expect("migrations as a plain role");

    let pool = store::pool(&url, 1).expect("pool");
    let mut conn = store::connect_system(&pool).await.expect("connection");
    let leakproof = "SELECT string_agg(proname || '=' || proleakproof, ',' ORDER BY proname) AS value FROM pg_proc
                     WHERE proname IN ('svc_like', 'svc_ilike', 'svc_record_text', 'svc_words')";
    assert_eq!(
        text(&mut conn, leakproof).await.as_deref(),
        Some("svc_ilike=false,svc_like=false,svc_record_text=false,svc_words=false")
    );
    assert_eq!(store::search::trigram_opclass(&mut conn).await.expect("opclass"), "gin_trgm_ops");
    let like =
        "SELECT (('Asha Juma' ~~~* '%ASHA%') AND svc_record_text('{\"n\": \"X\"}', '{n}') ~~~ 'x')::text AS value";
    assert_eq!(text(&mut conn, like).await.as_deref(), Some("true"));
    drop(conn);
    drop(pool);
    client.batch_execute(&format!("DROP DATABASE {database} WITH (FORCE)")).await.expect("drop");
}
