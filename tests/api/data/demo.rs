//! The demo tenant's CRM (`gateway admin demo`, run by `cargo xtask run`): a group with a
//! status column and a relation, seeded once however often the demo runs.

use api_tests::spawn;
use gateway::cli::admin::AdminCommand;
use serde_json::Value;

use super::support::{TABLES, assert_status, list_path, states_path};
use crate::admin_cli::admin_json;

#[actix_web::test]
async fn the_demo_has_a_small_crm_seeded_once() {
    let app = spawn().await;
    let url = app.db.url();
    let first = admin_json(url, AdminCommand::Demo { key: None }).await;
    let key = first["key"].as_str().expect("key").to_owned();
    admin_json(url, AdminCommand::Demo { key: Some(key.clone()) }).await;

    let res = app.get(TABLES, &key).await;
    assert_status(&res, 200);
    let tables = res.body["tables"].as_array().expect("tables");
    let count = |slug: &str| tables.iter().find(|t| t["slug"] == slug).map(|t| t["record_count"].clone());
    assert_eq!(count("agents"), Some(Value::from(1)), "{}", res.body);
    assert_eq!(count("customers"), Some(Value::from(3)), "seeded once: {}", res.body);
    let customers: uuid::Uuid = tables
        .iter()
        .find(|t| t["slug"] == "customers")
        .and_then(|t| t["id"].as_str()?.parse().ok())
        .expect("customers id");

    // the relation shows the agent's name; the status column starts every customer as `new`
    let page = app.get(&list_path(customers, &[("sort", "score")]), &key).await;
    assert_status(&page, 200);
    let best = &page.body["records"][0];
    assert_eq!(best["data"]["name"], "Amina Juma", "{}", page.body);
    assert_eq!(best["titles"]["agent"], "Neema Mushi", "{best}");
    assert_eq!(best["data"]["stage"], "new", "{best}");
    assert_eq!(best["source"], "admin", "{best}");
    let states = app.get(&states_path(customers), &key).await;
    assert_status(&states, 200);
    assert_eq!(states.body["fields"][0]["key"], "stage", "{}", states.body);
}
