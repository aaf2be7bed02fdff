//! Tables and their schema (contract: Data table, column and record; Data tables; docs/api.md
//! "Defining tables", "Tables, schema, states"): the table list with its counts, every block of
//! the schema, the index status, per-caller masks and grants, altering a table by applying
//! again, and the definitions `apply` refuses.

use api_tests::json;
use kernel::ErrorKind;
use serde_json::Value;
use std::collections::BTreeSet;

use super::kit::*;
use super::support::*;

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("a list, got {value}"))
        .iter()
        .map(|v| v.as_str().unwrap_or_else(|| panic!("strings in {value}")).to_owned())
        .collect()
}

#[actix_web::test]
async fn the_table_list_shows_each_visible_table_with_its_counts() {
    // Proves GET /data/tables: every member of a summary, counts of columns and live records
    // (down again after a delete), name order within a group, and nothing of another tenant.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let first = create(&app, key, crm.customers, json!({"name": "Amina"})).await;
    create(&app, key, crm.customers, json!({"name": "Baraka"})).await;
    // Another tenant's tables are not listed.
    let other = crm_with(&app, EDITOR).await;
    create(&app, &other.account.key, other.customers, json!({"name": "Elsewhere"})).await;

    let listed = tables(&app, key).await;
    let slugs: Vec<&str> = listed.iter().map(|t| t["slug"].as_str().expect("slug")).collect();
    assert_eq!(slugs, ["agents", "customers"], "{listed:?}");
    let customers = &listed[1];
    assert_eq!(customers["id"], crm.customers.to_string());
    assert_eq!(customers["name"], "Customers");
    assert_eq!(customers["description"], "People who buy");
    assert_eq!(customers["icon"], "users");
    assert_eq!(customers["group"]["id"], crm.group.to_string(), "{customers}");
    assert_eq!(customers["group"]["slug"], "crm");
    assert_eq!(customers["group"]["name"], "CRM");
    assert_eq!(customers["record_count"], 2, "{customers}");
    assert_eq!(customers["column_count"], 15, "{customers}");
    time_of(&customers["updated_at"]);
    let agents = &listed[0];
    assert_eq!(agents["id"], crm.agents.to_string());
    assert_eq!(agents["record_count"], 0, "{agents}");
    assert_eq!(agents["column_count"], 1, "{agents}");
    assert!(agents.get("description").is_some_and(Value::is_null), "{agents}");
    assert!(agents.get("icon").is_some_and(Value::is_null), "{agents}");

    remove(&app, key, crm.customers, &record_id(&first)).await;
    let listed = tables(&app, key).await;
    let customers = listed.iter().find(|t| t["slug"] == "customers").expect("customers");
    assert_eq!(customers["record_count"], 1, "a deleted record is not counted: {customers}");

    // Within a group, tables come by name, whatever the order of the definition.
    apply(
        &app,
        &crm.account,
        json!({"group": {"slug": "zoo", "name": "Zoo"},
               "tables": [{"slug": "zebras", "name": "Zebras", "columns": [{"key": "name", "type": "text"}]},
                          {"slug": "antelopes", "name": "Antelopes", "columns": [{"key": "name", "type": "text"}]}]}),
    )
    .await;
    let listed = tables(&app, key).await;
    let zoo: Vec<&str> =
        listed.iter().filter(|t| t["group"]["slug"] == "zoo").map(|t| t["slug"].as_str().expect("slug")).collect();
    assert_eq!(zoo, ["antelopes", "zebras"]);
    assert_eq!(listed.len(), 4);
}

#[actix_web::test]
async fn the_schema_describes_the_table_and_its_columns_in_order() {
    // Proves the `table` and `columns` blocks: ordered keys, types, labels (given or from the
    // key), required/unique/indexed flags, config and positions.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    create(&app, key, crm.customers, json!({"name": "Amina"})).await;
    let schema = read_schema(&app, key, crm.customers).await;

    let table = &schema["table"];
    assert_eq!(table["id"], crm.customers.to_string(), "{table}");
    assert_eq!(table["slug"], "customers");
    assert_eq!(table["name"], "Customers");
    assert_eq!(table["description"], "People who buy");
    assert_eq!(table["icon"], "users");
    assert_eq!(table["group"]["id"], crm.group.to_string(), "{table}");
    assert_eq!(table["group"]["slug"], "crm");
    assert_eq!(table["record_count"], 1);
    time_of(&table["created_at"]);
    time_of(&table["updated_at"]);

    let columns = schema["columns"].as_array().expect("columns");
    let keys: Vec<(&str, &str)> =
        columns.iter().map(|c| (c["key"].as_str().expect("key"), c["type"].as_str().expect("type"))).collect();
    assert_eq!(keys, CUSTOMER_COLUMNS, "columns in definition order with their types");
    let positions: Vec<i64> =
        columns.iter().map(|c| c["position"].as_i64().unwrap_or_else(|| panic!("position in {c}"))).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "positions increase: {positions:?}");
    for c in columns {
        for member in ["label", "required", "unique", "indexed", "index", "masked", "writable", "config"] {
            assert!(c.get(member).is_some(), "{member} in {c}");
        }
        let key = c["key"].as_str().expect("key");
        assert_eq!(c["required"], matches!(key, "name" | "stage"), "{c}");
        assert_eq!(c["unique"], key == "phone", "{c}");
        assert_eq!(c["indexed"], key == "score", "{c}");
        if key != "score" {
            assert_eq!(c["index"]["status"], "none", "{c}");
        }
    }
    assert_eq!(column(&schema, "name")["label"], "Name");
    assert_eq!(column(&schema, "phone")["label"], "Phone", "a label defaults to the key, capitalized");
    assert_eq!(column(&schema, "ref")["label"], "Ref");
    assert_eq!(column(&schema, "name")["config"]["max_length"], 120);
    assert_eq!(column(&schema, "segment")["config"]["options"], json!(["retail", "wholesale"]));
    assert_eq!(column(&schema, "agent")["config"]["table"], "agents");
    assert_eq!(column(&schema, "credit")["config"]["currency"], "TZS");
}

#[actix_web::test]
async fn the_schema_lists_types_system_columns_access_unique_sets_limits_and_actions() {
    // Proves the `types` block (operators per type as docs/api.md lists them; file and
    // multi_select do not sort), `system_columns`, `access`, `unique_sets`, `limits`,
    // `sort_index_threshold` and `actions`.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let schema = read_schema(&app, &crm.account.key, crm.customers).await;

    let types = schema["types"].as_object().unwrap_or_else(|| panic!("types in {schema}"));
    for ty in TYPES {
        let block = types.get(ty).unwrap_or_else(|| panic!("type {ty} in {schema}"));
        let operators: BTreeSet<String> = strings(&block["operators"]).into_iter().collect();
        let expected: BTreeSet<String> = advertised(ty).iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(operators, expected, "operators of {ty}");
        assert!(block["sortable"].is_boolean() && block["searchable"].is_boolean(), "{ty}: {block}");
        assert!(block.get("value").is_some(), "value of {ty}: {block}");
        assert_eq!(block["sortable"], !matches!(ty, "file" | "multi_select"), "sortable of {ty}");
        assert_eq!(block["searchable"], matches!(ty, "text" | "long_text" | "phone" | "email"), "searchable of {ty}");
    }

    let system = schema["system_columns"].as_array().unwrap_or_else(|| panic!("system_columns in {schema}"));
    let keys: Vec<&str> = system.iter().map(|c| c["key"].as_str().expect("key")).collect();
    assert_eq!(keys, ["$id", "$created_at", "$updated_at", "$source"]);
    for c in system {
        assert!(c["type"].is_string(), "{c}");
        assert!(!strings(&c["operators"]).is_empty(), "{c}");
        assert!(c["sortable"].is_boolean(), "{c}");
    }
    for key in ["$created_at", "$updated_at"] {
        let c = system.iter().find(|c| c["key"] == key).expect("time column");
        assert_eq!(c["sortable"], true, "{c}");
        let operators = strings(&c["operators"]);
        for op in ["greater_than", "less_than", "between"] {
            assert!(operators.iter().any(|o| o == op), "{key} has {op}: {c}");
        }
    }

    assert_eq!(schema["access"]["read"], "data.view", "{}", schema["access"]);
    assert_eq!(schema["access"]["write"], "data.records.edit");
    assert_eq!(schema["access"]["columns"]["email"]["read"], "data.customers.pii", "{}", schema["access"]);
    assert_eq!(schema["unique_sets"], json!([["name", "joined"]]));
    let limits = &schema["limits"];
    for (member, value) in [
        ("record_bytes", 8192),
        ("filter_leaves", 40),
        ("filter_depth", 6),
        ("search_columns", 6),
        ("page_max", 200),
        ("page_default", 50),
        ("history_page", 50),
    ] {
        assert_eq!(limits[member], value, "limits.{member}: {limits}");
    }
    assert!(limits.get("records").is_some_and(Value::is_null), "no record limit in the CRM: {limits}");
    assert_eq!(schema["sort_index_threshold"], 10000);

    let actions = schema["actions"].as_array().unwrap_or_else(|| panic!("actions in {schema}"));
    assert!(!actions.is_empty(), "{schema}");
    for a in actions {
        assert!(a["name"].is_string() && a["method"].is_string() && a["path"].is_string(), "{a}");
    }
    assert!(actions.iter().any(|a| a["method"] == "POST"), "a create action: {actions:?}");

    // The definition's limits show.
    let account = app.account(EDITOR).await;
    let applied = apply(
        &app,
        &account,
        json!({"group": {"slug": "small", "name": "Small"},
               "tables": [{"slug": "few", "name": "Few", "limits": {"records": 5}, "sort_index_threshold": 3,
                           "columns": [{"key": "first_name", "type": "text"}]}]}),
    )
    .await;
    let few = applied.tables.first().expect("table").id;
    let schema = read_schema(&app, &account.key, few).await;
    assert_eq!(schema["limits"]["records"], 5, "{}", schema["limits"]);
    assert_eq!(schema["sort_index_threshold"], 3);
    assert_eq!(column(&schema, "first_name")["label"], "First name", "underscores read as spaces");
    assert_eq!(schema["access"]["read"], "data.view", "the default read grant");
    assert_eq!(schema["access"]["write"], "data.records.edit", "the default write grant");
    assert_eq!(schema["unique_sets"], json!([]));
}

#[actix_web::test]
async fn an_indexed_column_shows_building_until_the_job_runs_then_ready() {
    // Proves index.status: `building` right after apply, `ready` once data.build_index ran.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let before = read_schema(&app, key, crm.customers).await;
    assert_eq!(column(&before, "score")["index"]["status"], "building", "{}", column(&before, "score"));
    assert!(app.run_jobs().await > 0, "the build job ran");
    let after = read_schema(&app, key, crm.customers).await;
    assert_eq!(column(&after, "score")["index"]["status"], "ready", "{}", column(&after, "score"));
    assert_eq!(column(&after, "name")["index"]["status"], "none");
}

#[actix_web::test]
async fn masks_and_grants_follow_the_caller() {
    // Proves the per-caller parts: `masked` for a caller without data.customers.pii, `can` and
    // `writable` false for a viewer, true for an editor.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let viewer_user = app.user(crm.account.tenant, VIEWER).await;
    let viewer = app.key(crm.account.tenant, viewer_user).await;

    let editor = read_schema(&app, &crm.account.key, crm.customers).await;
    assert_eq!(column(&editor, "email")["masked"], false);
    assert_eq!(column(&editor, "name")["masked"], false);
    assert_eq!(column(&editor, "name")["writable"], true);
    assert_eq!(editor["can"], json!({"read": true, "create": true, "update": true, "delete": true}));

    let viewed = read_schema(&app, &viewer, crm.customers).await;
    assert_eq!(column(&viewed, "email")["masked"], true, "{}", column(&viewed, "email"));
    assert_eq!(column(&viewed, "name")["masked"], false);
    assert_eq!(column(&viewed, "name")["writable"], false);
    assert_eq!(viewed["can"], json!({"read": true, "create": false, "update": false, "delete": false}));

    // Granting the PII permission unmasks.
    app.set_permissions(viewer_user, "data.view,data.customers.pii").await;
    let viewed = read_schema(&app, &viewer, crm.customers).await;
    assert_eq!(column(&viewed, "email")["masked"], false);
}

#[actix_web::test]
async fn applying_again_alters_the_table_and_keeps_its_records() {
    // Proves altering by slug: same ids, an added column shows and takes values, a removed one
    // is no longer read or written, old records keep their data, and a table left out of the
    // file is not deleted.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let old = create(&app, key, crm.customers, json!({"name": "Amina", "notes": "Pays on time", "score": 80})).await;

    let mut definition = super::support::crm();
    let defined = definition["tables"].as_array_mut().expect("tables");
    defined.retain(|t| t["slug"] == "customers");
    let columns = defined[0]["columns"].as_array_mut().expect("columns");
    columns.retain(|c| c["key"] != "notes");
    columns.push(json!({"key": "first_contact", "type": "date"}));
    let applied = apply(&app, &crm.account, definition).await;
    assert_eq!(applied.group.id, crm.group, "the group is found by slug");
    assert_eq!(applied.tables.len(), 1);
    assert_eq!(applied.tables[0].id, crm.customers, "the table is found by slug");

    let schema = read_schema(&app, key, crm.customers).await;
    let keys: Vec<&str> =
        schema["columns"].as_array().expect("columns").iter().filter_map(|c| c["key"].as_str()).collect();
    assert!(keys.contains(&"first_contact") && !keys.contains(&"notes"), "{keys:?}");
    assert_eq!(keys.last(), Some(&"first_contact"));
    assert_eq!(column(&schema, "first_contact")["label"], "First contact");
    assert_eq!(column(&schema, "first_contact")["type"], "date");

    let record = read(&app, key, crm.customers, &record_id(&old)).await;
    assert_eq!(record["data"]["name"], "Amina", "{record}");
    assert_eq!(record["data"]["score"].as_f64(), Some(80.0), "{record}");
    assert!(record["data"].get("first_contact").is_some_and(Value::is_null), "{record}");
    assert!(record["data"].get("notes").is_none(), "a removed column is not read: {record}");
    let record = update(&app, key, crm.customers, &record_id(&old), json!({"first_contact": "2026-11-02"})).await;
    assert_eq!(record["data"]["first_contact"], "2026-11-02");
    let res = app.patch(&record_path(crm.customers, &record_id(&old)), key, json!({"data": {"notes": "x"}})).await;
    assert_data_error(&res, 422, "validation_error");

    let listed = tables(&app, key).await;
    assert!(listed.iter().any(|t| t["id"] == crm.agents.to_string()), "agents kept: {listed:?}");
    let customers = listed.iter().find(|t| t["slug"] == "customers").expect("customers");
    assert_eq!(customers["column_count"], 15);
}

#[actix_web::test]
async fn making_a_column_unique_over_shared_values_fails_and_changes_nothing() {
    // Proves that an apply making a column unique while live records share a value fails, and
    // that nothing of that apply is kept (neither the flag nor an added column); with distinct
    // values the same apply succeeds and the column is then enforced.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    create(&app, key, crm.customers, json!({"name": "Amina", "email": "shared@example.com"})).await;
    let second = create(&app, key, crm.customers, json!({"name": "Baraka", "email": "Shared@Example.com"})).await;

    let mut definition = super::support::crm();
    let columns = definition["tables"][1]["columns"].as_array_mut().expect("columns");
    for c in columns.iter_mut() {
        if c["key"] == "email" {
            c["unique"] = json!(true);
        }
    }
    columns.push(json!({"key": "website", "type": "text"}));
    let err = app.data.apply(crm.account.tenant, definition.clone()).await.expect_err("shared values refuse unique");
    assert!(matches!(err.kind, ErrorKind::Validation | ErrorKind::Conflict), "{err:?}");

    let schema = read_schema(&app, key, crm.customers).await;
    assert_eq!(column(&schema, "email")["unique"], false, "nothing changed");
    let keys: Vec<&str> =
        schema["columns"].as_array().expect("columns").iter().filter_map(|c| c["key"].as_str()).collect();
    assert!(!keys.contains(&"website"), "nothing changed: {keys:?}");
    let third = create(&app, key, crm.customers, json!({"name": "Chausiku", "email": "shared@example.com"})).await;

    // Once the values are distinct, the same apply goes through and is enforced.
    remove(&app, key, crm.customers, &record_id(&third)).await;
    update(&app, key, crm.customers, &record_id(&second), json!({"email": "baraka@example.com"})).await;
    app.data.apply(crm.account.tenant, definition).await.expect("distinct values may become unique");
    let schema = read_schema(&app, key, crm.customers).await;
    assert_eq!(column(&schema, "email")["unique"], true);
    let res = app
        .post(&records_path(crm.customers), key, json!({"data": {"name": "Dup", "email": "SHARED@example.com"}}))
        .await;
    assert_data_error(&res, 409, "conflict");
}

#[actix_web::test]
async fn apply_refuses_invalid_definitions_as_validation_errors() {
    // Proves the definition checks of docs/api.md: unknown type, bad slugs and keys, a
    // relation to a missing table, a select without options, a unique column of a type that
    // cannot be, a permission name outside data.*; none of them creates anything.
    let app = roomy().await;
    let account = app.account(EDITOR).await;
    let table = |slug: &str, columns: Value| json!({"group": {"slug": "g", "name": "G"}, "tables": [{"slug": slug, "name": "T", "columns": columns}]});
    let mut with_access = table("things", json!([{"key": "name", "type": "text"}]));
    with_access["tables"][0]["access"] = json!({"read": "customers.everything"});
    let long_slug = format!("a{}", "b".repeat(63));
    let cases = [
        ("unknown type", table("things", json!([{"key": "colour", "type": "colour"}]))),
        ("upper-case slug", table("Things", json!([{"key": "name", "type": "text"}]))),
        ("slug with a space", table("my things", json!([{"key": "name", "type": "text"}]))),
        ("slug starting with a digit", table("1things", json!([{"key": "name", "type": "text"}]))),
        ("slug of 64 characters", table(&long_slug, json!([{"key": "name", "type": "text"}]))),
        ("bad column key", table("things", json!([{"key": "First Name", "type": "text"}]))),
        ("column key starting with $", table("things", json!([{"key": "$name", "type": "text"}]))),
        (
            "relation to a missing table",
            table("things", json!([{"key": "owner", "type": "relation", "config": {"table": "nobody"}}])),
        ),
        ("relation without a table", table("things", json!([{"key": "owner", "type": "relation"}]))),
        ("select without options", table("things", json!([{"key": "size", "type": "select"}]))),
        (
            "multi_select without options",
            table("things", json!([{"key": "sizes", "type": "multi_select", "config": {}}])),
        ),
        ("unique boolean", table("things", json!([{"key": "flag", "type": "boolean", "unique": true}]))),
        ("unique file", table("things", json!([{"key": "scan", "type": "file", "unique": true}]))),
        ("unique auto_number", table("things", json!([{"key": "no", "type": "auto_number", "unique": true}]))),
        ("unique long_text", table("things", json!([{"key": "memo", "type": "long_text", "unique": true}]))),
        (
            "unique multi_select",
            table(
                "things",
                json!([{"key": "tags", "type": "multi_select", "unique": true, "config": {"options": ["a"]}}]),
            ),
        ),
        ("permission outside data.*", with_access),
        (
            "bad group slug",
            json!({"group": {"slug": "Bad Group", "name": "G"},
                                  "tables": [{"slug": "things", "name": "T", "columns": [{"key": "name", "type": "text"}]}]}),
        ),
    ];
    let mut failures = Vec::new();
    for (what, definition) in cases {
        match app.data.apply(account.tenant, definition).await {
            Ok(applied) => failures.push(format!("{what}: applied {:?}", applied.group.slug)),
            Err(err) if err.kind != ErrorKind::Validation => failures.push(format!("{what}: {err:?}")),
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(tables(&app, &account.key).await.is_empty(), "nothing was created");
    let res = app.get(GROUPS, &account.key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["groups"], json!([]), "{}", res.body);

    // The same file with the mistake fixed applies.
    let longest = format!("a{}", "b".repeat(62));
    let good = table(&longest, json!([{"key": "size", "type": "select", "config": {"options": ["s", "m"]}}]));
    app.data.apply(account.tenant, good).await.expect("a valid definition applies");
    let listed = tables(&app, &account.key).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["slug"], longest, "a slug of 63 characters");
}

#[actix_web::test]
async fn a_table_slug_is_one_tenants_across_groups() {
    // Proves "Tables of one tenant have distinct slugs across groups": a second group naming a
    // table `customers` is refused and changes nothing; another tenant may use the slug.
    let app = roomy().await;
    let crm = crm_with(&app, EDITOR).await;
    let other = json!({"group": {"slug": "sales", "name": "Sales"},
                       "tables": [{"slug": "customers", "name": "Buyers", "columns": [{"key": "name", "type": "text"}]}]});
    let err = app.data.apply(crm.account.tenant, other.clone()).await.expect_err("a slug of another group is refused");
    assert!(matches!(err.kind, ErrorKind::Validation | ErrorKind::Conflict), "{err:?}");
    let listed = tables(&app, &crm.account.key).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    let customers = listed.iter().find(|t| t["slug"] == "customers").expect("customers");
    assert_eq!(customers["group"]["slug"], "crm");
    assert_eq!(customers["name"], "Customers");
    let res = app.get(GROUPS, &crm.account.key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["groups"].as_array().map(Vec::len), Some(1), "no group was made: {}", res.body);

    let elsewhere = app.account(EDITOR).await;
    app.data.apply(elsewhere.tenant, other).await.expect("another tenant may use the slug");
}
