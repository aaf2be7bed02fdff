//! Row-level security (docs/operations.md, "Row-level security"): the pool's connections run
//! as the service role even though `DATABASE_URL` names a superuser, and a query without a
//! tenant filter sees only the rows of the scope its connection was taken for.

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Bool, Text};
use diesel_async::RunQueryDsl;
use kernel::TenantId;
use store::testing::TestDb;
use store::{Conn, RowSecurity, SERVICE_ROLE};

#[derive(QueryableByName)]
struct Tenant {
    #[diesel(sql_type = BigInt)]
    tenant_id: i64,
}

#[derive(QueryableByName)]
struct Role {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Bool)]
    superuser: bool,
    #[diesel(sql_type = Bool)]
    bypass: bool,
}

/// Two tenants with an event each, written as the superuser `DATABASE_URL` names.
async fn two_tenants(db: &TestDb) -> (TenantId, TenantId) {
    let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    let rows = client
        .query(
            "WITH made AS (
                 INSERT INTO tenants (uid, name) VALUES (gen_random_uuid(), 'one'), (gen_random_uuid(), 'two')
                 RETURNING id)
             INSERT INTO events (id, tenant_id, name, payload, occurred_at)
                 SELECT gen_random_uuid(), id, 'probe', '{}', now() FROM made
             RETURNING tenant_id",
            &[],
        )
        .await
        .expect("seed");
    let mut ids: Vec<i64> = rows.iter().map(|row| row.get(0)).collect();
    ids.sort_unstable();
    (TenantId(ids[0]), TenantId(ids[1]))
}

/// Every event's tenant, with no tenant filter: what a query that forgot it would see.
async fn unfiltered(conn: &mut Conn) -> Vec<i64> {
    let rows: Vec<Tenant> =
        diesel::sql_query("SELECT tenant_id FROM events ORDER BY tenant_id").load(conn).await.expect("events");
    rows.into_iter().map(|row| row.tenant_id).collect()
}

async fn role(conn: &mut Conn) -> Role {
    diesel::sql_query(
        "SELECT current_user::text AS name, rolsuper AS superuser, rolbypassrls AS bypass
         FROM pg_roles WHERE rolname = current_user",
    )
    .get_result(conn)
    .await
    .expect("role")
}

#[tokio::test]
async fn a_query_without_its_tenant_filter_sees_only_its_own_tenants_rows() {
    let db = TestDb::new().await;
    let (one, two) = two_tenants(&db).await;
    // one connection, so the second checkout is the first one's connection, scope and all
    let pool = store::pool(db.url(), 1).expect("pool");

    let mut conn = store::connect(&pool, one).await.expect("connection");
    let role = role(&mut conn).await;
    assert_eq!((role.name.as_str(), role.superuser, role.bypass), (SERVICE_ROLE, false, false));
    assert_eq!(unfiltered(&mut conn).await, vec![one.0]);
    drop(conn);

    let mut conn = store::connect(&pool, two).await.expect("connection");
    assert_eq!(unfiltered(&mut conn).await, vec![two.0], "the last checkout's scope is gone");
    // a write for another tenant is refused, not silently made invisible
    let refused = diesel::sql_query(
        "INSERT INTO events (id, tenant_id, name, payload, occurred_at) VALUES (gen_random_uuid(), $1, 'x', '{}', now())",
    )
    .bind::<BigInt, _>(one.0)
    .execute(&mut conn)
    .await
    .expect_err("another tenant's row");
    assert!(refused.to_string().contains("row-level security"), "{refused}");
    // and an update without a filter reaches only the scope's rows
    let updated = diesel::sql_query("UPDATE events SET name = 'touched'").execute(&mut conn).await.expect("update");
    assert_eq!(updated, 1);
    drop(conn);

    let mut conn = store::connect_system(&pool).await.expect("connection");
    assert_eq!(unfiltered(&mut conn).await, vec![one.0, two.0], "the system scope sees every tenant");
}

#[tokio::test]
async fn a_connection_without_a_scope_sees_no_tenant_rows() {
    let db = TestDb::new().await;
    two_tenants(&db).await;
    let pool = store::pool(db.url(), 1).expect("pool");
    // a system checkout first: the connections for the global tables are apart from these
    drop(store::connect_system(&pool).await.expect("connection"));
    let mut conn = store::connect_global(&pool).await.expect("connection");
    assert_eq!(role(&mut conn).await.name, SERVICE_ROLE);
    assert_eq!(unfiltered(&mut conn).await, Vec::<i64>::new());
    // the global tables stay readable: a key is looked up before its tenant is known
    let tenants: Vec<Tenant> =
        diesel::sql_query("SELECT id AS tenant_id FROM tenants").load(&mut conn).await.expect("tenants");
    assert_eq!(tenants.len(), 2);
}

#[tokio::test]
async fn the_owner_connection_and_a_pool_without_row_security_run_as_the_url_role() {
    let db = TestDb::new().await;
    let (one, two) = two_tenants(&db).await;
    let pool = store::pool_with(db.url(), 1, RowSecurity::Off).expect("pool");
    let mut conn = store::connect(&pool, one).await.expect("connection");
    assert!(role(&mut conn).await.superuser, "the bench's side without row security");
    assert_eq!(unfiltered(&mut conn).await, vec![one.0, two.0]);

    let secured = store::pool(db.url(), 1).expect("pool");
    let mut owner = secured.owner_connection().await.expect("owner");
    assert_ne!(role(&mut owner).await.name, SERVICE_ROLE, "schema changes run as the tables' owner");
}
