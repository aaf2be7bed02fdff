use api_tests::{json, spawn};

#[actix_web::test]
async fn me_answers_the_account_of_the_key() {
    let app = spawn().await;
    let account = app.account("all").await;
    let res = app.get("/api/v3/me", &account.key).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    assert_eq!(res.body["status"], "success");
    assert_eq!(res.data()["id"], json!(account.tenant.0));
    assert_eq!(res.data()["name"], "Acme");
    assert_eq!(res.header("x-ratelimit-limit"), Some("120"));
    assert_eq!(res.header("x-ratelimit-remaining"), Some("119"));
    assert!(res.header("x-request-id").is_some());
}
