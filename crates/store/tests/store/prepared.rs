//! `store::Prepare`: a `sql_query` marked `.prepared()` is prepared once on its connection
//! and reused, where diesel would prepare it again on every call.

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl;
use store::Prepare;
use store::testing::TestDb;

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn kept(conn: &mut store::Conn, marker: &str) -> i64 {
    diesel::sql_query("SELECT count(*) AS n FROM pg_prepared_statements WHERE statement LIKE '%' || $1 || '%'")
        .bind::<Text, _>(marker)
        .get_result::<Count>(conn)
        .await
        .expect("count")
        .n
}

#[tokio::test]
async fn a_prepared_statement_is_kept_and_reused() {
    let db = TestDb::new().await;
    let pool = store::pool(db.url(), 1).expect("pool");
    let mut conn = store::connect_global(&pool).await.expect("connection");
    for n in 0..3_i64 {
        let got: Count = diesel::sql_query("SELECT $1::bigint AS n /* kept_probe */")
            .bind::<BigInt, _>(n)
            .prepared()
            .get_result(&mut conn)
            .await
            .expect("query");
        assert_eq!(got.n, n);
        let _: Count = diesel::sql_query("SELECT $1::bigint AS n /* fresh_probe */")
            .bind::<BigInt, _>(n)
            .get_result(&mut conn)
            .await
            .expect("query");
    }
    assert_eq!(kept(&mut conn, "kept_probe").await, 1, "one statement, reused");
    assert_eq!(kept(&mut conn, "fresh_probe").await, 0, "prepared per call and closed");
}
