//! A table's `limits.records` (data error `quota_exceeded`, 402, with quota, used and limit).

use api_tests::spawn;
use serde_json::json;

use super::support::{EDITOR, apply, assert_data_error, create, record_id, record_path, records_path};

#[actix_web::test]
async fn a_capped_table_refuses_the_record_over_its_limit_until_one_is_deleted() {
    let app = spawn().await;
    let account = app.account(EDITOR).await;
    let definition = json!({
        "group": {"slug": "ops", "name": "Operations"},
        "tables": [{"slug": "visits", "name": "Visits", "limits": {"records": 2},
                    "columns": [{"key": "place", "type": "text", "required": true}]}]
    });
    let table = apply(&app, &account, definition).await.tables[0].id;
    let first = create(&app, &account.key, table, json!({"place": "Arusha"})).await;
    create(&app, &account.key, table, json!({"place": "Moshi"})).await;

    let res = app.post(&records_path(table), &account.key, json!({"data": {"place": "Tanga"}})).await;
    assert_data_error(&res, 402, "quota_exceeded");
    let error = &res.body["error"];
    assert_eq!(
        (&error["quota"], &error["used"], &error["limit"]),
        (&json!("records"), &json!(2), &json!(2)),
        "{}",
        res.body
    );
    assert_eq!(error["retryable"], false);

    let deleted = app.delete(&record_path(table, &record_id(&first)), &account.key).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    create(&app, &account.key, table, json!({"place": "Tanga"})).await;
}
