//! The data admin commands (docs/api.md "Defining tables"): `gateway admin data-table apply
//! --tenant T FILE` creates or alters a group and its tables, seen through HTTP afterwards;
//! `gateway admin data-file add --tenant T PATH [--name N] [--mime-type M]` stores a file and
//! prints its id, usable as a `file` value. Run like tests/api/admin_cli.rs runs commands.

use api_tests::json;
use gateway::cli::admin::{AdminCommand, DataFileCommand, DataTableCommand};
use kernel::ErrorKind;
use serde_json::Value;
use std::path::PathBuf;
use uuid::Uuid;

use super::files::{assert_served, contract, fetch};
use super::kit::*;
use super::support::*;
use crate::admin_cli::{admin, admin_json};

/// A file of this test under the system's temporary directory.
fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("data-admin-{}", Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("scratch file");
    path
}

fn table_apply(tenant: i64, file: PathBuf) -> AdminCommand {
    AdminCommand::DataTable(DataTableCommand::Apply { tenant, file })
}

fn file_add(tenant: i64, path: PathBuf, name: Option<&str>, mime_type: Option<&str>) -> AdminCommand {
    AdminCommand::DataFile(DataFileCommand::Add {
        tenant,
        path,
        name: name.map(str::to_owned),
        mime_type: mime_type.map(str::to_owned),
    })
}

/// The one UUID a plain command prints.
#[track_caller]
fn printed_id(out: &str) -> Uuid {
    assert_eq!(out.trim().lines().count(), 1, "one value: {out:?}");
    Uuid::parse_str(out.trim()).unwrap_or_else(|_| panic!("a UUID, got {out:?}"))
}

#[actix_web::test]
async fn data_table_apply_creates_the_tables_seen_through_http() {
    // Proves the command: it prints the group id, the tables are then listed and usable over
    // HTTP, --json prints the group with its tables' ids, applying a changed file alters the
    // table, and a bad file is refused with nothing created.
    let app = roomy().await;
    let url = app.db.url();
    let account = app.account(EDITOR).await;
    let tenant = account.tenant.0;

    // A bad file first: refused, nothing made.
    let mut bad = crm();
    bad["tables"][0]["columns"][0]["type"] = json!("colour");
    let err = admin(url, table_apply(tenant, scratch("bad.json", bad.to_string().as_bytes())))
        .await
        .expect_err("an unknown type is refused");
    assert_eq!(err.kind, ErrorKind::Validation, "{err:?}");
    admin(url, table_apply(tenant, scratch("broken.json", b"{\"group\": ")))
        .await
        .expect_err("a file that is not JSON is refused");
    admin(url, table_apply(tenant, std::env::temp_dir().join(format!("missing-{}.json", Uuid::new_v4()))))
        .await
        .expect_err("a missing file is refused");
    assert!(tables(&app, &account.key).await.is_empty());

    let path = scratch("crm.json", serde_json::to_string_pretty(&crm()).expect("JSON").as_bytes());
    let group = printed_id(&admin(url, table_apply(tenant, path.clone())).await.expect("data-table apply"));
    let listed = tables(&app, &account.key).await;
    let slugs: Vec<&str> = listed.iter().map(|t| t["slug"].as_str().expect("slug")).collect();
    assert_eq!(slugs, ["agents", "customers"], "{listed:?}");
    assert!(listed.iter().all(|t| t["group"]["id"] == group.to_string()), "the printed group: {listed:?}");
    let customers: Uuid = listed[1]["id"].as_str().expect("id").parse().expect("a UUID");
    let record = create(&app, &account.key, customers, json!({"name": "Amina", "score": 40})).await;

    // --json: the same group (found by slug), with its tables' ids.
    let out = admin_json(url, table_apply(tenant, path)).await;
    let json_group =
        out["group"]["id"].as_str().or_else(|| out["id"].as_str()).unwrap_or_else(|| panic!("group id in {out}"));
    assert_eq!(json_group, group.to_string(), "{out}");
    let printed: Vec<(&str, &str)> = out["tables"]
        .as_array()
        .unwrap_or_else(|| panic!("tables in {out}"))
        .iter()
        .map(|t| (t["slug"].as_str().expect("slug"), t["id"].as_str().expect("id")))
        .collect();
    let over_http: Vec<(&str, &str)> =
        listed.iter().map(|t| (t["slug"].as_str().expect("slug"), t["id"].as_str().expect("id"))).collect();
    assert_eq!(printed, over_http, "{out}");

    // A changed file alters the table; the record keeps its data.
    let mut changed = crm();
    changed["tables"][1]["columns"].as_array_mut().expect("columns").push(json!({"key": "website", "type": "text"}));
    admin(url, table_apply(tenant, scratch("crm.json", changed.to_string().as_bytes()))).await.expect("apply again");
    let schema = read_schema(&app, &account.key, customers).await;
    assert_eq!(column(&schema, "website")["type"], "text");
    let again = read(&app, &account.key, customers, &record_id(&record)).await;
    assert_eq!(again["data"]["name"], "Amina");
    assert_eq!(again["data"]["score"].as_f64(), Some(40.0), "{again}");

    // Jobs the apply queued build the index.
    app.run_jobs().await;
    let schema = read_schema(&app, &account.key, customers).await;
    assert_eq!(column(&schema, "score")["index"]["status"], "ready");
}

#[actix_web::test]
async fn data_file_add_prints_an_id_usable_as_a_file_value() {
    // Proves the command: it prints the file's id; set on a record, the descriptor carries the
    // given name, mime type and size, and its URL serves the bytes; without --name and
    // --mime-type the file is stored too; another tenant cannot use it; a missing path fails.
    let app = roomy().await;
    let url = app.db.url();
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let tenant = crm.account.tenant.0;
    let bytes = b"%PDF-1.4 scanned contract";

    let path = scratch("scan.pdf", bytes);
    let out = admin(url, file_add(tenant, path, Some("Signed contract.pdf"), Some("application/pdf")))
        .await
        .expect("data-file add");
    let file = printed_id(&out);
    let record = create(&app, key, crm.customers, json!({"name": "Amina", "contract": file.to_string()})).await;
    let d = &contract(&record)[0];
    assert_eq!(d["id"], file.to_string(), "{d}");
    assert_eq!(d["name"], "Signed contract.pdf");
    assert_eq!(d["mime_type"], "application/pdf");
    assert_eq!(d["size"], bytes.len());
    assert_served(&fetch(&app, &d["url"]).await, "application/pdf", bytes);

    // Without a name or a mime type.
    let text = b"plain notes";
    let plain = printed_id(&admin(url, file_add(tenant, scratch("notes.txt", text), None, None)).await.expect("add"));
    assert_ne!(plain, file);
    let record = create(&app, key, crm.customers, json!({"name": "Baraka", "contract": plain.to_string()})).await;
    let d = &contract(&record)[0];
    assert_eq!(d["size"], text.len(), "{d}");
    assert!(d["name"].as_str().is_some_and(|n| !n.is_empty()), "a name: {d}");
    assert!(d["mime_type"].as_str().is_some_and(|m| !m.is_empty()), "a mime type: {d}");
    let served = fetch(&app, &d["url"]).await;
    assert_status(&served, 200);
    assert_eq!(served.body, Value::String("plain notes".to_owned()));

    // Another tenant cannot use it.
    let other = crm_with(&app, EDITOR).await;
    let res = app
        .post(
            &records_path(other.customers),
            &other.account.key,
            json!({"data": {"name": "X", "contract": file.to_string()}}),
        )
        .await;
    assert_data_error(&res, 422, "validation_error");

    admin(url, file_add(tenant, std::env::temp_dir().join(format!("missing-{}.pdf", Uuid::new_v4())), None, None))
        .await
        .expect_err("a missing path is refused");
}
