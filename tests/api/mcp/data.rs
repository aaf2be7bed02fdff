//! The `data` server's tools (issue 16): tables, schema, state rules, records (the list with its
//! filter tree, sort, search and keyset pages; create, patch, delete), history, groups and the
//! overview, through the official SDK's client, each answering what its REST route answers,
//! with the same permission checks, table grants, field masks and tenant scoping.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, json};
use serde_json::Value;
use uuid::Uuid;

use super::support::*;

/// Every scope the data tools need.
const DATA_SCOPES: &str = "mcp:use mcp:data mcp:write mcp:delete";
/// Reads and writes every table of the fixture but `vault` and `ledger`, masks included.
const EDITOR: &str = "data.view,data.records.edit,data.customers.pii,data.customers.close";
const TABLES: &str = "/api/v3/data/tables";

const READ_TOOLS: [&str; 8] = [
    "list_tables",
    "get_table_schema",
    "get_table_states",
    "list_records",
    "get_record",
    "get_record_history",
    "list_groups",
    "get_group_overview",
];
const DATA_TOOLS: [&str; 11] = [
    "list_tables",
    "get_table_schema",
    "get_table_states",
    "list_records",
    "get_record",
    "create_record",
    "update_record",
    "delete_record",
    "get_record_history",
    "list_groups",
    "get_group_overview",
];

/// A CRM: `agents`, `customers` (its `email` readable with `data.customers.pii` only, a strict
/// `stage` whose close needs `data.customers.close`), `vault` (read with `data.secret`) and
/// `ledger` (written with `data.special`).
fn definition() -> Value {
    json!({
        "group": {"slug": "crm", "name": "CRM", "description": "Customers and their agents"},
        "tables": [
            {"slug": "agents", "name": "Agents", "columns": [{"key": "name", "type": "text", "required": true}]},
            {"slug": "customers", "name": "Customers",
             "access": {"read": "data.view", "write": "data.records.edit",
                        "columns": {"email": {"read": "data.customers.pii"}}},
             "columns": [
                {"key": "name", "label": "Name", "type": "text", "required": true},
                {"key": "phone", "type": "phone", "unique": true},
                {"key": "email", "label": "Email", "type": "email"},
                {"key": "score", "type": "number"},
                {"key": "credit", "type": "currency", "config": {"currency": "TZS", "decimals": 0}},
                {"key": "stage", "label": "Stage", "type": "status", "required": true, "config": {
                    "states": [{"key": "new", "label": "New"}, {"key": "active"}, {"key": "closed"}],
                    "initial": ["new"], "strict": true,
                    "moves": [{"from": "new", "to": "active"},
                              {"from": "active", "to": "closed", "permission": "data.customers.close"}]}},
                {"key": "agent", "type": "relation", "config": {"table": "agents"}}]},
            {"slug": "vault", "name": "Vault", "access": {"read": "data.secret"},
             "columns": [{"key": "text", "type": "text"}]},
            {"slug": "ledger", "name": "Ledger", "access": {"write": "data.special"},
             "columns": [{"key": "text", "type": "text"}]}
        ]
    })
}

/// A tenant with the CRM, an issuer, their MCP connection and their REST key.
struct Crm {
    tenant: kernel::TenantId,
    user: kernel::UserId,
    token: String,
    key: String,
    group: Uuid,
    agents: Uuid,
    customers: Uuid,
    vault: Uuid,
    ledger: Uuid,
}

async fn crm<S, B>(app: &TestApp<S>, permissions: &str, scopes: &str) -> Crm
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let (tenant, user, token) = account(app, permissions, scopes).await;
    let key = app.key(tenant, user).await;
    let applied = app.data.apply(tenant, definition()).await.expect("apply");
    let table = |slug: &str| applied.tables.iter().find(|t| t.slug == slug).expect("table").id;
    Crm {
        tenant,
        user,
        token,
        key,
        group: applied.group.id,
        agents: table("agents"),
        customers: table("customers"),
        vault: table("vault"),
        ledger: table("ledger"),
    }
}

/// Another issuer of `crm`'s tenant with `permissions`: their connection with `scopes`, and
/// their REST key.
async fn issuer<S, B>(app: &TestApp<S>, crm: &Crm, permissions: &str, scopes: &str) -> (kernel::UserId, String, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let user = app.user(crm.tenant, permissions).await;
    let token = app.mcp_connection(crm.tenant, user, scopes).await;
    let key = app.key(crm.tenant, user).await;
    (user, token, key)
}

/// `create_record` expected to succeed: the record.
async fn create(client: &Client, table: Uuid, data: Value) -> Value {
    let made = ok(client, "create_record", json!({"table": table, "data": data})).await;
    made["record"].clone()
}

#[track_caller]
fn id_of(record: &Value) -> String {
    record["id"].as_str().unwrap_or_else(|| panic!("id in {record}")).to_owned()
}

/// REST's answer, 200 expected.
async fn rest<S, B>(app: &TestApp<S>, path: &str, key: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(path, key).await;
    assert_eq!(res.status, 200, "GET {path}: {}", res.body);
    res.body
}

fn with_query(path: &str, query: &[(&str, &str)]) -> String {
    format!("{path}?{}", serde_urlencoded::to_string(query).expect("query"))
}

#[track_caller]
fn names(page: &Value) -> Vec<String> {
    page["records"]
        .as_array()
        .unwrap_or_else(|| panic!("records in {page}"))
        .iter()
        .map(|r| r["data"]["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[actix_web::test]
async fn the_data_server_lists_its_tools_with_their_scopes_and_hints() {
    let app = api_tests::spawn().await;
    let crm = crm(&app, EDITOR, DATA_SCOPES).await;
    let server = app.listen();

    let data = connect(&server, "/mcp/v1/data", &crm.token).await;
    let info = data.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("svc-data"));
    assert_eq!(tool_names(&data).await, sorted(&DATA_TOOLS));
    let tools = data.list_all_tools().await.expect("tools");
    let tool = |name: &str| tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name}")).clone();
    let hints = |name: &str| {
        let annotations = tool(name).annotations.unwrap_or_else(|| panic!("annotations of {name}"));
        (annotations.read_only_hint, annotations.destructive_hint, annotations.idempotent_hint)
    };
    assert_eq!(hints("delete_record"), (Some(false), Some(true), Some(true)));
    assert_eq!(hints("create_record"), (Some(false), Some(false), Some(false)));
    assert_eq!(hints("update_record"), (Some(false), Some(false), Some(true)));
    for name in READ_TOOLS {
        assert_eq!(hints(name), (Some(true), Some(false), Some(true)), "{name}");
        assert!(tool(name).output_schema.is_some(), "{name}");
    }
    // ids are members; the record routes' body is `data`; the REST route takes no
    // Idempotency-Key, so neither does the tool
    assert_eq!(tool("get_record").input_schema["required"], json!(["table", "record"]));
    let create = tool("create_record").input_schema;
    assert_eq!(create["required"], json!(["table", "data"]));
    assert!(create["properties"].get("idempotency_key").is_none(), "{create:?}");
    let list = tool("list_records").input_schema;
    let mut members: Vec<&str> =
        list["properties"].as_object().expect("properties").keys().map(String::as_str).collect();
    members.sort_unstable();
    assert_eq!(members, ["cursor", "dir", "filter", "limit", "q", "sort", "table", "with_count"]);
    assert_eq!(list["properties"]["filter"]["$ref"], "#/$defs/Condition");
    assert_eq!(tool("get_group_overview").input_schema["required"], json!(["group"]));

    // on `/mcp` beside the other servers' tools, and on no other server
    let all = connect(&server, "/mcp", &crm.token).await;
    let listed = tool_names(&all).await;
    assert!(DATA_TOOLS.iter().all(|name| listed.contains(&(*name).to_owned())), "{listed:?}");
    let contacts = connect(&server, "/mcp/v1/contacts", &crm.token).await;
    assert!(tool_names(&contacts).await.is_empty());
}

#[actix_web::test]
async fn tables_schema_and_state_rules_answer_what_rest_answers() {
    let app = api_tests::spawn().await;
    let crm = crm(&app, EDITOR, DATA_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/data", &crm.token).await;
    create(&client, crm.customers, json!({"name": "Amina"})).await;

    let tables = ok(&client, "list_tables", json!({})).await;
    let slugs: Vec<&str> =
        tables["tables"].as_array().expect("tables").iter().filter_map(|t| t["slug"].as_str()).collect();
    assert_eq!(slugs, ["agents", "customers", "ledger"], "the vault is hidden: {tables}");
    let customers =
        tables["tables"].as_array().and_then(|t| t.iter().find(|t| t["slug"] == "customers")).expect("customers");
    assert_eq!((customers["id"].clone(), customers["record_count"].clone()), (json!(crm.customers), json!(1)));
    assert_eq!(customers["group"]["slug"], "crm");
    assert_eq!(tables, rest(&app, TABLES, &crm.key).await);

    let schema = ok(&client, "get_table_schema", json!({"table": crm.customers})).await;
    let keys: Vec<&str> =
        schema["columns"].as_array().expect("columns").iter().filter_map(|c| c["key"].as_str()).collect();
    assert_eq!(keys, ["name", "phone", "email", "score", "credit", "stage", "agent"]);
    assert_eq!(schema["table"]["record_count"], 1);
    assert_eq!(schema["can"], json!({"read": true, "create": true, "update": true, "delete": true}));
    assert_eq!(schema, rest(&app, &format!("{TABLES}/{}/schema", crm.customers), &crm.key).await);

    let states = ok(&client, "get_table_states", json!({"table": crm.customers})).await;
    let stage = &states["fields"][0];
    assert_eq!(
        (stage["key"].clone(), stage["strict"].clone(), stage["initial"].clone()),
        (json!("stage"), json!(true), json!(["new"]))
    );
    assert_eq!(
        stage["moves"][1],
        json!({"from": "active", "to": "closed", "permission": "data.customers.close", "allowed": true})
    );
    assert_eq!(states, rest(&app, &format!("{TABLES}/{}/states", crm.customers), &crm.key).await);
    // the state rules of this issuer: without data.customers.close the close is not allowed
    let (_, token, key) = issuer(&app, &crm, "data.view,data.records.edit", DATA_SCOPES).await;
    let other = connect(&server, "/mcp/v1/data", &token).await;
    let states = ok(&other, "get_table_states", json!({"table": crm.customers})).await;
    assert_eq!(
        states["fields"][0]["moves"]
            .as_array()
            .expect("moves")
            .iter()
            .map(|m| m["allowed"].clone())
            .collect::<Vec<_>>(),
        [json!(true), json!(false)]
    );
    assert_eq!(states, rest(&app, &format!("{TABLES}/{}/states", crm.customers), &key).await);
    // a table without status columns has no fields
    assert_eq!(ok(&client, "get_table_states", json!({"table": crm.agents})).await, json!({"fields": []}));
}

#[actix_web::test]
async fn records_are_created_read_updated_deleted_and_their_history_kept() {
    let app = api_tests::spawn().await;
    let crm = crm(&app, EDITOR, DATA_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/data", &crm.token).await;
    let agent = create(&client, crm.agents, json!({"name": "Baraka"})).await;

    let made = create(
        &client,
        crm.customers,
        json!({"name": "Amina Juma", "phone": "0712 345 678", "email": "amina@example.com", "agent": id_of(&agent)}),
    )
    .await;
    let id = id_of(&made);
    assert_eq!(made["data"]["phone"], "+255712345678", "read by its type: {made}");
    assert_eq!(made["data"]["stage"], "new", "the initial state: {made}");
    assert_eq!(made["titles"]["agent"], "Baraka", "{made}");
    assert_eq!((made["title"].clone(), made["masked"].clone()), (json!("Amina Juma"), json!([])));
    assert_eq!(made["source"], "mcp", "written through an MCP tool: {made}");
    let path = format!("{TABLES}/{}/records/{id}", crm.customers);
    assert_eq!(rest(&app, &path, &crm.key).await["record"], made, "REST reads what the tool wrote");

    let read = ok(&client, "get_record", json!({"table": crm.customers, "record": id})).await;
    assert_eq!(read, json!({"record": made}));

    // PATCH's merge: named keys change, null clears, a status moves under its rules
    app.clock.advance(time::Duration::minutes(1));
    let changed = ok(
        &client,
        "update_record",
        json!({"table": crm.customers, "record": id, "data": {"stage": "active", "email": null, "score": 82.5}}),
    )
    .await;
    let record = &changed["record"];
    assert_eq!((record["data"]["stage"].clone(), record["data"]["email"].clone()), (json!("active"), Value::Null));
    assert_eq!((record["data"]["score"].clone(), record["data"]["name"].clone()), (json!(82.5), json!("Amina Juma")));
    assert_ne!(record["updated_at"], made["updated_at"]);
    assert_eq!(rest(&app, &path, &crm.key).await["record"], *record);

    let deleted = ok(&client, "delete_record", json!({"table": crm.customers, "record": id})).await;
    assert_eq!(deleted, json!({"ok": true, "deleted": 1}));
    assert_eq!(app.get(&path, &crm.key).await.status, 404);
    assert_code(&refused(&client, "delete_record", json!({"table": crm.customers, "record": id})).await, "not_found");
    assert_code(&refused(&client, "get_record", json!({"table": crm.customers, "record": id})).await, "not_found");

    // the history, readable after deletion, names the connection as the actor
    let history = ok(&client, "get_record_history", json!({"table": crm.customers, "record": id})).await;
    let actions: Vec<&str> =
        history["entries"].as_array().expect("entries").iter().filter_map(|e| e["action"].as_str()).collect();
    assert_eq!(actions, ["deleted", "updated", "created"], "{history}");
    let updated = &history["entries"][1];
    assert_eq!((updated["actor"]["kind"].clone(), updated["source"].clone()), (json!("mcp_connection"), json!("mcp")));
    assert_eq!(updated["actor"]["name"], "Test connection", "{updated}");
    let stage = updated["changes"].as_array().and_then(|c| c.iter().find(|c| c["column"] == "stage")).expect("stage");
    assert_eq!(*stage, json!({"column": "stage", "label": "Stage", "from": "new", "to": "active"}));
    assert_eq!(history, rest(&app, &format!("{path}/history"), &crm.key).await);
    // its pages: `limit` and `before` as REST reads them
    let first = ok(&client, "get_record_history", json!({"table": crm.customers, "record": id, "limit": 2})).await;
    assert_eq!((first["entries"].as_array().map(Vec::len), first["has_more"].clone()), (Some(2), json!(true)));
    let next = ok(
        &client,
        "get_record_history",
        json!({"table": crm.customers, "record": id, "before": first["next_before"]}),
    )
    .await;
    assert_eq!(
        next["entries"].as_array().map(|e| e.iter().map(|e| e["action"].clone()).collect::<Vec<_>>()),
        Some(vec![json!("created")])
    );
    assert_eq!(
        next,
        rest(&app, &with_query(&format!("{path}/history"), &[("before", &first["next_before"].to_string())]), &crm.key)
            .await
    );
}

#[actix_web::test]
async fn list_records_reads_the_filter_tree_search_sort_and_keyset_pages_of_rest() {
    let app = api_tests::spawn().await;
    let crm = crm(&app, EDITOR, DATA_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/data", &crm.token).await;
    for (name, score, stage) in [
        ("Amina", Some(30), "active"),
        ("Baraka", Some(10), "new"),
        ("Chausiku", None, "active"),
        ("Dotto", Some(20), "active"),
    ] {
        let made = create(&client, crm.customers, json!({"name": name, "score": score})).await;
        if stage == "active" {
            ok(
                &client,
                "update_record",
                json!({"table": crm.customers, "record": id_of(&made), "data": {"stage": "active"}}),
            )
            .await;
        }
        app.clock.advance(time::Duration::seconds(1));
    }
    let records = format!("{TABLES}/{}/records", crm.customers);

    // no arguments: newest created first, the default page, no count
    let all = ok(&client, "list_records", json!({"table": crm.customers})).await;
    assert_eq!(names(&all), ["Dotto", "Chausiku", "Baraka", "Amina"]);
    assert_eq!(
        (all["has_more"].clone(), all["count"].clone(), all["next_cursor"].clone()),
        (json!(false), Value::Null, Value::Null)
    );
    assert_eq!(all, rest(&app, &records, &crm.key).await);

    // the filter tree as a JSON object, the same tree REST reads from its query string
    let tree = json!({"all": [{"column": "stage", "op": "equals", "value": "active"},
                              {"any": [{"column": "score", "op": "greater_than", "value": 25}, {"column": "score", "op": "is_empty"}]}]});
    let filtered =
        ok(&client, "list_records", json!({"table": crm.customers, "filter": tree, "with_count": true})).await;
    assert_eq!(
        (names(&filtered), filtered["count"].clone()),
        (vec!["Chausiku".to_owned(), "Amina".to_owned()], json!(2))
    );
    assert_eq!(
        filtered,
        rest(&app, &with_query(&records, &[("filter", &tree.to_string()), ("with_count", "1")]), &crm.key).await
    );
    assert_eq!(
        names(&ok(&client, "list_records", json!({"table": crm.customers, "filter": {}})).await).len(),
        4,
        "{{}} selects all"
    );

    // q searches the text columns, any case
    let found = ok(&client, "list_records", json!({"table": crm.customers, "q": "bArAk"})).await;
    assert_eq!(names(&found), ["Baraka"]);

    // sort by a column ascending, empty values last, in keyset pages behind the cursor
    let page =
        |cursor: Value| json!({"table": crm.customers, "sort": "score", "dir": "asc", "limit": 2, "cursor": cursor});
    let first = ok(&client, "list_records", page(Value::Null)).await;
    assert_eq!(
        (names(&first), first["has_more"].clone()),
        (vec!["Baraka".to_owned(), "Dotto".to_owned()], json!(true))
    );
    let cursor = first["next_cursor"].as_str().expect("a cursor").to_owned();
    assert_eq!(
        first,
        rest(&app, &with_query(&records, &[("sort", "score"), ("dir", "asc"), ("limit", "2")]), &crm.key).await
    );
    let second = ok(&client, "list_records", page(json!(cursor))).await;
    assert_eq!(
        (names(&second), second["has_more"].clone()),
        (vec!["Amina".to_owned(), "Chausiku".to_owned()], json!(false))
    );
    let rest_second = with_query(&records, &[("sort", "score"), ("dir", "asc"), ("limit", "2"), ("cursor", &cursor)]);
    assert_eq!(second, rest(&app, &rest_second, &crm.key).await, "the tool's cursor is REST's");
    // a cursor of another query restarts at the first page
    let elsewhere =
        ok(&client, "list_records", json!({"table": crm.customers, "sort": "score", "limit": 2, "cursor": cursor}))
            .await;
    assert_eq!(names(&elsewhere), ["Amina", "Dotto"]);
    // limit is clamped as on REST
    assert_eq!(names(&ok(&client, "list_records", json!({"table": crm.customers, "limit": 0})).await).len(), 1);
}

#[actix_web::test]
async fn refusals_name_the_field_or_say_not_found() {
    let app = api_tests::spawn().await;
    let crm = crm(&app, EDITOR, DATA_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/data", &crm.token).await;
    let made = create(&client, crm.customers, json!({"name": "Amina", "phone": "0712000001"})).await;
    let id = id_of(&made);
    let table = crm.customers;

    // the body, read as REST reads it
    assert_field(&refused(&client, "create_record", json!({"table": table})).await, "data");
    assert_field(
        &refused(&client, "create_record", json!({"table": table, "data": {"name": "X", "colour": "red"}})).await,
        "colour",
    );
    assert_field(
        &refused(&client, "create_record", json!({"table": table, "data": {"phone": "0712000009"}})).await,
        "name",
    );
    assert_field(
        &refused(&client, "create_record", json!({"table": table, "data": {"name": "X", "score": "many"}})).await,
        "score",
    );
    assert_field(
        &refused(&client, "create_record", json!({"table": table, "data": {"name": "X", "stage": "active"}})).await,
        "stage",
    );
    assert_field(
        &refused(&client, "update_record", json!({"table": table, "record": id, "data": {"name": null}})).await,
        "name",
    );
    assert_field(&refused(&client, "update_record", json!({"table": table, "record": id, "data": 7})).await, "data");
    // the state rules: a strict status moves only as declared
    let error =
        refused(&client, "update_record", json!({"table": table, "record": id, "data": {"stage": "closed"}})).await;
    assert_code(&error, "conflict");
    assert_eq!(error["field"], "stage", "{error}");
    // a unique value taken by another record
    let error =
        refused(&client, "create_record", json!({"table": table, "data": {"name": "Y", "phone": "+255712000001"}}))
            .await;
    assert_code(&error, "conflict");
    assert!(error["errors"]["phone"].is_array(), "{error}");

    // the query members
    assert_field(
        &refused(
            &client,
            "list_records",
            json!({"table": table, "filter": {"column": "name", "op": "like", "value": "A"}}),
        )
        .await,
        "filter",
    );
    assert_field(&refused(&client, "list_records", json!({"table": table, "filter": "{not json"})).await, "filter");
    assert_field(&refused(&client, "list_records", json!({"table": table, "dir": "up"})).await, "dir");
    assert_field(&refused(&client, "list_records", json!({"table": table, "sort": "colour"})).await, "sort");
    assert_field(&refused(&client, "list_records", json!({"table": table, "limit": "many"})).await, "limit");
    assert_field(&refused(&client, "list_records", json!({"table": table, "colour": "red"})).await, "colour");
    assert_field(
        &refused(&client, "get_record_history", json!({"table": table, "record": id, "before": "x"})).await,
        "before",
    );
    assert_field(
        &refused(&client, "get_group_overview", json!({"group": crm.group, "range": "last_year"})).await,
        "range",
    );
    assert_field(
        &refused(
            &client,
            "get_group_overview",
            json!({"group": crm.group, "range": {"from": "2026-11-05", "to": "2026-11-01"}}),
        )
        .await,
        "range",
    );

    // ids: missing is a field error, unknown or malformed is not found
    assert_field(&refused(&client, "get_record", json!({"record": id})).await, "table");
    assert_field(&refused(&client, "get_record", json!({"table": table})).await, "record");
    assert_field(&refused(&client, "get_group_overview", json!({})).await, "group");
    let unknown = Uuid::new_v4();
    for (tool, args) in [
        ("get_table_schema", json!({"table": unknown})),
        ("get_table_states", json!({"table": "not-a-uuid"})),
        ("list_records", json!({"table": unknown})),
        ("create_record", json!({"table": unknown, "data": {"name": "X"}})),
        ("get_record", json!({"table": table, "record": unknown})),
        ("update_record", json!({"table": table, "record": unknown, "data": {"name": "X"}})),
        ("delete_record", json!({"table": table, "record": unknown})),
        ("get_record_history", json!({"table": table, "record": unknown})),
        ("get_record", json!({"table": crm.agents, "record": id})),
        ("get_group_overview", json!({"group": unknown})),
    ] {
        assert_code(&refused(&client, tool, args).await, "not_found");
    }
    // nothing was written by the refusals
    assert_eq!(ok(&client, "list_records", json!({"table": table, "with_count": true})).await["count"], 1);
}

#[actix_web::test]
async fn the_write_and_delete_elevations_open_the_writing_tools() {
    let app = api_tests::spawn().await;
    let crm = crm(&app, EDITOR, "mcp:use mcp:data").await;
    let writer = app.mcp_connection(crm.tenant, crm.user, "mcp:use mcp:data mcp:write").await;
    let elsewhere = app.mcp_connection(crm.tenant, crm.user, "mcp:use mcp:contacts mcp:write mcp:delete").await;
    let server = app.listen();

    // reading only: the reading tools, and a write refused for the scope
    let reader = connect(&server, "/mcp/v1/data", &crm.token).await;
    assert_eq!(tool_names(&reader).await, sorted(&READ_TOOLS));
    let error = refused(&reader, "create_record", json!({"table": crm.customers, "data": {"name": "Amina"}})).await;
    assert_eq!(
        (error["code"].clone(), error["reason"].clone()),
        (json!("permission_denied"), json!("insufficient_scope"))
    );
    assert_eq!(error["missing_scopes"], json!(["mcp:write"]));

    // mcp:write opens create and update, not delete
    let client = connect(&server, "/mcp/v1/data", &writer).await;
    let mut expected: Vec<&str> = READ_TOOLS.to_vec();
    expected.extend(["create_record", "update_record"]);
    assert_eq!(tool_names(&client).await, sorted(&expected));
    let id = id_of(&create(&client, crm.customers, json!({"name": "Amina"})).await);
    let error = refused(&client, "delete_record", json!({"table": crm.customers, "record": id})).await;
    assert_eq!(
        (error["code"].clone(), error["reason"].clone()),
        (json!("permission_denied"), json!("insufficient_scope"))
    );
    assert_eq!(error["missing_scopes"], json!(["mcp:delete"]));
    assert_eq!(app.get(&format!("{TABLES}/{}/records/{id}", crm.customers), &crm.key).await.status, 200, "not deleted");
    assert_eq!(
        refused(&reader, "update_record", json!({"table": crm.customers, "record": id, "data": {"name": "B"}})).await["missing_scopes"],
        json!(["mcp:write"])
    );

    // elevations without mcp:data open nothing here
    let client = connect(&server, "/mcp/v1/data", &elsewhere).await;
    assert!(tool_names(&client).await.is_empty());
    let error = refused(&client, "delete_record", json!({"table": crm.customers, "record": id})).await;
    assert_eq!(error["missing_scopes"], json!(["mcp:data"]), "{error}");
    assert_eq!(refused(&client, "list_tables", json!({})).await["missing_scopes"], json!(["mcp:data"]));
}

#[actix_web::test]
async fn the_issuers_permissions_and_table_grants_decide_as_on_rest() {
    let app = api_tests::spawn().await;
    let crm = crm(&app, EDITOR, DATA_SCOPES).await;
    let server = app.listen();
    let owner = connect(&server, "/mcp/v1/data", &crm.token).await;
    let id = id_of(&create(&owner, crm.customers, json!({"name": "Amina"})).await);

    // without data.records.edit: the writing tools are not listed, and a call is refused by the
    // service, as REST refuses it
    let (user, token, key) = issuer(&app, &crm, "data.view,data.customers.pii", DATA_SCOPES).await;
    let viewer = connect(&server, "/mcp/v1/data", &token).await;
    assert_eq!(tool_names(&viewer).await, sorted(&READ_TOOLS));
    for (tool, args) in [
        ("create_record", json!({"table": crm.customers, "data": {"name": "Baraka"}})),
        ("update_record", json!({"table": crm.customers, "record": id, "data": {"name": "Baraka"}})),
        ("delete_record", json!({"table": crm.customers, "record": id})),
    ] {
        let error = refused(&viewer, tool, args).await;
        assert_code(&error, "permission_denied");
        assert!(error.get("missing_scopes").is_none(), "the person, not the grant: {error}");
    }
    let res = app.post(&format!("{TABLES}/{}/records", crm.customers), &key, json!({"data": {"name": "Baraka"}})).await;
    assert_eq!((res.status, res.body["code"].clone()), (403, json!("permission_denied")));
    assert_eq!(
        ok(&viewer, "get_record", json!({"table": crm.customers, "record": id})).await["record"]["data"]["name"],
        "Amina"
    );

    // granted now, usable at the next call; taken away, refused at the next call
    app.set_permissions(user, "data.view,data.records.edit").await;
    assert!(tool_names(&viewer).await.contains(&"update_record".to_owned()));
    ok(&viewer, "update_record", json!({"table": crm.customers, "record": id, "data": {"name": "Amina J."}})).await;
    // the state rules' own permission: closing needs data.customers.close
    ok(&viewer, "update_record", json!({"table": crm.customers, "record": id, "data": {"stage": "active"}})).await;
    let error =
        refused(&viewer, "update_record", json!({"table": crm.customers, "record": id, "data": {"stage": "closed"}}))
            .await;
    assert_code(&error, "permission_denied");
    app.set_permissions(user, "communications.send").await;
    assert!(tool_names(&viewer).await.is_empty(), "no data.view, no data tool");
    assert_code(&refused(&viewer, "list_tables", json!({})).await, "permission_denied");
    assert_code(
        &refused(&viewer, "get_record", json!({"table": crm.customers, "record": id})).await,
        "permission_denied",
    );

    // a table's grants: the vault is hidden (not found), the ledger written with data.special only
    assert_code(&refused(&owner, "get_table_schema", json!({"table": crm.vault})).await, "not_found");
    assert_code(&refused(&owner, "list_records", json!({"table": crm.vault})).await, "not_found");
    assert_code(
        &refused(&owner, "create_record", json!({"table": crm.vault, "data": {"text": "x"}})).await,
        "not_found",
    );
    assert_code(
        &refused(&owner, "create_record", json!({"table": crm.ledger, "data": {"text": "x"}})).await,
        "permission_denied",
    );
    let schema = ok(&owner, "get_table_schema", json!({"table": crm.ledger})).await;
    assert_eq!(schema["can"]["create"], false, "{schema}");
    let (_, special, _) = issuer(&app, &crm, "data.view,data.records.edit,data.special,data.secret", DATA_SCOPES).await;
    let special = connect(&server, "/mcp/v1/data", &special).await;
    assert_eq!(create(&special, crm.ledger, json!({"text": "x"})).await["data"]["text"], "x");
    assert_eq!(create(&special, crm.vault, json!({"text": "y"})).await["data"]["text"], "y");
}

#[actix_web::test]
async fn field_masks_apply_through_mcp_as_through_rest() {
    let app = api_tests::spawn().await;
    let crm = crm(&app, EDITOR, DATA_SCOPES).await;
    let server = app.listen();
    let owner = connect(&server, "/mcp/v1/data", &crm.token).await;
    let made = create(&owner, crm.customers, json!({"name": "Amina", "email": "amina@example.com"})).await;
    let id = id_of(&made);
    assert_eq!(made["data"]["email"], "amina@example.com");
    ok(&owner, "update_record", json!({"table": crm.customers, "record": id, "data": {"email": "a.juma@example.com"}}))
        .await;

    // an issuer without data.customers.pii
    let (_, token, key) = issuer(&app, &crm, "data.view,data.records.edit", DATA_SCOPES).await;
    let masked = connect(&server, "/mcp/v1/data", &token).await;
    let path = format!("{TABLES}/{}/records/{id}", crm.customers);
    let read = ok(&masked, "get_record", json!({"table": crm.customers, "record": id})).await;
    assert_eq!(
        (read["record"]["data"]["email"].clone(), read["record"]["masked"].clone()),
        (Value::Null, json!(["email"]))
    );
    assert_eq!(read["record"]["data"]["name"], "Amina");
    assert_eq!(read, rest(&app, &path, &key).await);
    let page = ok(&masked, "list_records", json!({"table": crm.customers})).await;
    assert_eq!(
        (page["records"][0]["data"]["email"].clone(), page["records"][0]["masked"].clone()),
        (Value::Null, json!(["email"]))
    );
    let schema = ok(&masked, "get_table_schema", json!({"table": crm.customers})).await;
    let email = schema["columns"].as_array().and_then(|c| c.iter().find(|c| c["key"] == "email")).expect("email");
    assert_eq!((email["masked"].clone(), email["writable"].clone()), (json!(true), json!(false)));
    // the history keeps the change and hides its values
    let history = ok(&masked, "get_record_history", json!({"table": crm.customers, "record": id})).await;
    let change = history["entries"][0]["changes"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["column"] == "email"))
        .expect("change");
    assert_eq!(*change, json!({"column": "email", "label": "Email", "from": null, "to": null, "masked": true}));
    assert_eq!(history, rest(&app, &format!("{path}/history"), &key).await);

    // a masked column cannot be written, filtered, sorted or searched, as on REST
    let filter = json!({"column": "email", "op": "contains", "value": "amina"});
    for (tool, args) in [
        ("update_record", json!({"table": crm.customers, "record": id, "data": {"email": "x@example.com"}})),
        ("create_record", json!({"table": crm.customers, "data": {"name": "B", "email": "b@example.com"}})),
        ("list_records", json!({"table": crm.customers, "filter": filter})),
        ("list_records", json!({"table": crm.customers, "sort": "email"})),
        ("list_records", json!({"table": crm.customers, "q": "amina"})),
    ] {
        assert_code(&refused(&masked, tool, args).await, "permission_denied");
    }
    let res = app
        .get(&with_query(&format!("{TABLES}/{}/records", crm.customers), &[("filter", &filter.to_string())]), &key)
        .await;
    assert_eq!((res.status, res.body["code"].clone()), (403, json!("permission_denied")));
    // a write of other columns answers with the column still masked, and keeps its value
    let changed =
        ok(&masked, "update_record", json!({"table": crm.customers, "record": id, "data": {"score": 5}})).await;
    assert_eq!(
        (changed["record"]["data"]["email"].clone(), changed["record"]["masked"].clone()),
        (Value::Null, json!(["email"]))
    );
    let kept = ok(&owner, "get_record", json!({"table": crm.customers, "record": id})).await;
    assert_eq!(kept["record"]["data"]["email"], "a.juma@example.com");
}

#[actix_web::test]
async fn groups_and_their_overview_answer_what_rest_answers() {
    let app = api_tests::spawn().await;
    let crm = crm(&app, EDITOR, DATA_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/data", &crm.token).await;
    let agent = id_of(&create(&client, crm.agents, json!({"name": "Baraka"})).await);
    create(&client, crm.customers, json!({"name": "Amina", "credit": 1500, "agent": agent})).await;
    create(&client, crm.customers, json!({"name": "Chausiku", "credit": 2500})).await;

    let groups = ok(&client, "list_groups", json!({})).await;
    assert_eq!(groups["groups"].as_array().map(Vec::len), Some(1), "{groups}");
    let group = &groups["groups"][0];
    assert_eq!((group["id"].clone(), group["slug"].clone()), (json!(crm.group), json!("crm")));
    assert_eq!(group["table_count"], 3, "agents, customers and ledger; the vault is hidden: {group}");
    assert_eq!(groups, rest(&app, "/api/v3/data/groups", &crm.key).await);

    let overview_path = format!("/api/v3/data/groups/{}/overview", crm.group);
    let overview = ok(&client, "get_group_overview", json!({"group": crm.group})).await;
    assert_eq!(overview["range"]["name"], "last_30_days", "the default: {overview}");
    assert_eq!(overview["totals"]["records"], 3, "{overview}");
    let credit =
        overview["amounts"].as_array().and_then(|a| a.iter().find(|a| a["column"] == "credit")).expect("credit");
    assert_eq!(credit["total"], 4000, "{credit}");
    let agent =
        overview["relationships"].as_array().and_then(|r| r.iter().find(|r| r["column"] == "agent")).expect("agent");
    assert_eq!((agent["linked"].clone(), agent["unlinked"].clone()), (json!(1), json!(1)));
    assert_eq!(overview, rest(&app, &overview_path, &crm.key).await);

    // a named range, a JSON object range, and from/to, each read as REST reads them
    let all_time = ok(&client, "get_group_overview", json!({"group": crm.group, "range": "all_time"})).await;
    assert_eq!(all_time["range"]["name"], "all_time");
    assert_eq!(all_time, rest(&app, &with_query(&overview_path, &[("range", "all_time")]), &crm.key).await);
    let today = app.clock.now().date().to_string();
    let object = json!({"from": today, "to": today});
    let custom = ok(&client, "get_group_overview", json!({"group": crm.group, "range": object})).await;
    assert_eq!((custom["range"]["name"].clone(), custom["totals"]["created"].clone()), (json!("custom"), json!(3)));
    assert_eq!(custom, rest(&app, &with_query(&overview_path, &[("range", &object.to_string())]), &crm.key).await);
    let bounded =
        ok(&client, "get_group_overview", json!({"group": crm.group, "from": "2000-01-01", "to": "2000-01-31"})).await;
    assert_eq!(bounded["totals"]["created"], 0, "{bounded}");
    assert_eq!(
        bounded,
        rest(&app, &with_query(&overview_path, &[("from", "2000-01-01"), ("to", "2000-01-31")]), &crm.key).await
    );
}

#[actix_web::test]
async fn another_tenants_tables_records_and_groups_are_not_found_through_every_tool() {
    let app = api_tests::spawn().await;
    let owner = crm(&app, EDITOR, DATA_SCOPES).await;
    let stranger = crm(&app, EDITOR, DATA_SCOPES).await;
    let server = app.listen();
    let owners = connect(&server, "/mcp/v1/data", &owner.token).await;
    let record = id_of(&create(&owners, owner.customers, json!({"name": "Amina"})).await);
    let theirs = connect(&server, "/mcp", &stranger.token).await;
    let own = id_of(&create(&theirs, stranger.customers, json!({"name": "Mine"})).await);

    let (table, group) = (owner.customers, owner.group);
    let mut wrong = Vec::new();
    for (tool, args) in [
        ("get_table_schema", json!({"table": table})),
        ("get_table_states", json!({"table": table})),
        ("list_records", json!({"table": table})),
        ("get_record", json!({"table": table, "record": record})),
        ("create_record", json!({"table": table, "data": {"name": "Mine"}})),
        ("update_record", json!({"table": table, "record": record, "data": {"name": "Mine"}})),
        ("delete_record", json!({"table": table, "record": record})),
        ("get_record_history", json!({"table": table, "record": record})),
        ("get_group_overview", json!({"group": group})),
        // the stranger's own table, the owner's record
        ("get_record", json!({"table": stranger.customers, "record": record})),
        ("update_record", json!({"table": stranger.customers, "record": record, "data": {"name": "Mine"}})),
        ("delete_record", json!({"table": stranger.customers, "record": record})),
        ("get_record_history", json!({"table": stranger.customers, "record": record})),
    ] {
        let error = refused(&theirs, tool, args.clone()).await;
        if error["code"] != "not_found" {
            wrong.push(format!("{tool} {args}: {error}"));
        }
    }
    assert!(wrong.is_empty(), "expected not_found:\n{}", wrong.join("\n"));

    // the lists show the stranger's own
    let tables = ok(&theirs, "list_tables", json!({})).await;
    assert!(tables["tables"].as_array().expect("tables").iter().all(|t| t["id"] != json!(table)), "{tables}");
    let groups = ok(&theirs, "list_groups", json!({})).await;
    assert_eq!(
        groups["groups"].as_array().map(|g| g.iter().map(|g| g["id"].clone()).collect::<Vec<_>>()),
        Some(vec![json!(stranger.group)])
    );
    let page = ok(&theirs, "list_records", json!({"table": stranger.customers})).await;
    assert_eq!(
        page["records"].as_array().map(|r| r.iter().map(|r| r["id"].clone()).collect::<Vec<_>>()),
        Some(vec![json!(own)])
    );
    // and the owner's record is as it was
    let kept = rest(&app, &format!("{TABLES}/{table}/records/{record}"), &owner.key).await;
    assert_eq!(kept["record"]["data"]["name"], "Amina");
    let history = ok(&owners, "get_record_history", json!({"table": table, "record": record})).await;
    assert_eq!(history["entries"].as_array().map(Vec::len), Some(1), "{history}");
}
