//! The real `gateway serve`, given a superuser's `DATABASE_URL`, works as the service role
//! (docs/operations.md, "Row-level security"): take a privilege from that role and the
//! gateway loses it too, which a superuser's connection never would.

use api_tests::spawn;
use serde_json::Value;

use crate::process::{Gateway, gateway_bin};

#[tokio::test]
async fn the_gateway_runs_as_the_service_role_under_a_superusers_url() {
    let app = spawn().await;
    let acme = app.account("all").await;
    // the test's database URL names the cluster's superuser
    let gateway = Gateway::start(&gateway_bin(), app.db.url(), 81, &[]).await;
    let (admin, connection) = tokio_postgres::connect(app.db.url(), tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    let superuser: bool =
        admin.query_one("SELECT rolsuper FROM pg_roles WHERE rolname = current_user", &[]).await.expect("role").get(0);
    assert!(superuser, "the gateway's DATABASE_URL names a superuser");

    let client = reqwest::Client::new();
    let me = async || {
        let res = client.get(format!("{}/api/v3/me", gateway.url)).bearer_auth(&acme.key).send().await.expect("/me");
        let status = res.status().as_u16();
        (status, res.json::<Value>().await.unwrap_or(Value::Null))
    };
    assert_eq!(me().await.0, 200);

    // without the service role's right to read accounts, /me cannot be answered (the key
    // itself is in the gateway's key cache by now)
    admin.batch_execute("REVOKE SELECT ON tenants FROM svc_app").await.expect("revoke");
    let (status, body) = me().await;
    assert_eq!(status, 500, "the account's read ran as svc_app and was refused: {body}");
    assert!(body["request_id"].is_string(), "{body}");

    admin.batch_execute("GRANT SELECT ON tenants TO svc_app").await.expect("grant");
    assert_eq!(me().await.0, 200);
}
