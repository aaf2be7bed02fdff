//! Tenancy in the schema (docs/operations.md, "Tenancy and distribution"): read from the
//! migrated catalog, every table either is on the short list of global tables or carries
//! `tenant_id NOT NULL`, and a tenant table's primary key, unique keys and unique indexes, and
//! its foreign keys to other tenant tables, all include `tenant_id`: the rules a table must
//! follow to be distributed by tenant (Citus). A global table never points at a tenant table.
//! And every tenant table is under row-level security: enabled, forced, with the
//! `tenant_scope` policy that `svc_tenant_rls` gives it (docs/operations.md, "Row-level
//! security").

use std::collections::{BTreeMap, BTreeSet};

use store::testing::TestDb;

/// The tables that are not distributed by tenant (reference tables under Citus), each with
/// why; the same list as docs/operations.md. Keep it short: a new table carries `tenant_id`.
pub const GLOBAL_TABLES: &[(&str, &str)] = &[
    ("tenants", "the tenants themselves; every tenant table's tenant_id points here"),
    ("users", "key issuers: read with the key, by its hash, before the tenant is known"),
    ("api_keys", "credentials, looked up by their hash before the tenant is known"),
    ("mcp_connections", "MCP credentials, looked up by their hash before the tenant is known"),
    ("oauth_clients", "OAuth clients: registered or known by a metadata document, no tenant's"),
    ("oauth_grants", "OAuth consents, found through their codes and tokens before the tenant is known"),
    ("oauth_tokens", "OAuth codes and tokens, looked up by their hash before the tenant is known"),
    ("sign_ins", "consent-page sessions, looked up by their hash before the tenant is known"),
    ("channels", "provider routes, looked up by the callback token in a provider's URL before the tenant is known"),
    ("jobs", "the job queue: workers claim due jobs of every tenant"),
    ("rate_limit_hits", "keyed by the token's hash, before the key is even looked up"),
    ("service_keys", "the service's own keys, no tenant's"),
    ("workers", "heartbeats of the processes that run jobs"),
    ("__diesel_schema_migrations", "diesel's record of applied migrations"),
];

async fn client(db: &TestDb) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

/// Every rule a table breaks, one line each; empty when the schema can be distributed by tenant.
async fn violations(client: &tokio_postgres::Client) -> Vec<String> {
    let global: BTreeSet<&str> = GLOBAL_TABLES.iter().map(|(name, _)| *name).collect();
    let mut found = Vec::new();

    // table -> tenant_id's column number and whether it is NOT NULL
    let tables = client
        .query(
            "SELECT c.relname::text, a.attnum, a.attnotnull
             FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
             LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
             WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
             ORDER BY 1",
            &[],
        )
        .await
        .expect("tables");
    let mut tenant_column: BTreeMap<String, i16> = BTreeMap::new();
    for row in tables {
        let table: String = row.get(0);
        let column: Option<i16> = row.get(1);
        let not_null: Option<bool> = row.get(2);
        if global.contains(table.as_str()) {
            continue;
        }
        match (column, not_null) {
            (Some(column), Some(true)) => {
                tenant_column.insert(table, column);
            }
            (Some(_), _) => found.push(format!("{table}: tenant_id may be null")),
            (None, _) => found.push(format!("{table}: no tenant_id and not a global table")),
        }
    }

    // primary keys, unique constraints and unique indexes (expression or partial ones too)
    let unique = client
        .query(
            "SELECT t.relname::text, i.relname::text, x.indkey::int2[]
             FROM pg_index x
             JOIN pg_class t ON t.oid = x.indrelid
             JOIN pg_class i ON i.oid = x.indexrelid
             JOIN pg_namespace n ON n.oid = t.relnamespace
             WHERE n.nspname = 'public' AND x.indisunique
             ORDER BY 1, 2",
            &[],
        )
        .await
        .expect("unique indexes");
    for row in unique {
        let table: String = row.get(0);
        let index: String = row.get(1);
        let columns: Vec<i16> = row.get(2);
        if let Some(tenant) = tenant_column.get(&table)
            && !columns.contains(tenant)
        {
            found.push(format!("{table}: unique index {index} leaves tenant_id out"));
        }
    }

    // foreign keys: between tenant tables they pair tenant_id with tenant_id; a global table
    // never points at a tenant table
    let foreign = client
        .query(
            "SELECT t.relname::text, f.relname::text, c.conname::text, c.conkey, c.confkey
             FROM pg_constraint c
             JOIN pg_class t ON t.oid = c.conrelid
             JOIN pg_class f ON f.oid = c.confrelid
             JOIN pg_namespace n ON n.oid = t.relnamespace
             WHERE n.nspname = 'public' AND c.contype = 'f'
             ORDER BY 1, 3",
            &[],
        )
        .await
        .expect("foreign keys");
    for row in foreign {
        let table: String = row.get(0);
        let target: String = row.get(1);
        let name: String = row.get(2);
        let from: Vec<i16> = row.get(3);
        let to: Vec<i16> = row.get(4);
        match (tenant_column.get(&table), tenant_column.get(&target)) {
            (Some(own), Some(theirs)) => {
                let paired = from.iter().zip(&to).any(|(f, t)| f == own && t == theirs);
                if !paired {
                    found.push(format!("{table}: foreign key {name} to {target} leaves tenant_id out"));
                }
            }
            (None, Some(_)) if global.contains(table.as_str()) => {
                found.push(format!("{table}: global table with foreign key {name} to tenant table {target}"));
            }
            _ => {}
        }
    }

    // row-level security: enabled, forced (the owner too), and the policy on tenant_id that
    // svc_tenant_rls writes, for reads and for what writes leave behind
    let secured = client
        .query(
            "SELECT c.relname::text, c.relrowsecurity, c.relforcerowsecurity,
                    pg_get_expr(p.polqual, c.oid), pg_get_expr(p.polwithcheck, c.oid), p.polcmd::text
             FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
             LEFT JOIN pg_policy p ON p.polrelid = c.oid AND p.polname = 'tenant_scope'
             WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')",
            &[],
        )
        .await
        .expect("row security");
    let expected =
        "((tenant_id = ( SELECT svc_tenant() AS svc_tenant)) OR ( SELECT svc_system_scope() AS svc_system_scope))";
    for row in secured {
        let table: String = row.get(0);
        if !tenant_column.contains_key(&table) {
            continue;
        }
        let (enabled, forced): (bool, bool) = (row.get(1), row.get(2));
        let (using, check, command): (Option<String>, Option<String>, Option<String>) =
            (row.get(3), row.get(4), row.get(5));
        if !enabled || !forced {
            found.push(format!("{table}: row-level security not enabled and forced"));
        }
        if using.as_deref() != Some(expected) || check.as_deref() != Some(expected) || command.as_deref() != Some("*") {
            found.push(format!("{table}: no tenant_scope policy (SELECT svc_tenant_rls('{table}'))"));
        }
    }

    // the service role reads and writes every table (a table made by another role than the
    // migrations' would miss the default privileges)
    let ungranted = client
        .query(
            "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
               AND NOT (SELECT bool_and(has_table_privilege('svc_app', c.oid, p))
                        FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']) AS p)
             ORDER BY 1",
            &[],
        )
        .await
        .expect("privileges");
    for row in ungranted {
        let table: String = row.get(0);
        found.push(format!("{table}: the service role svc_app may not read and write it"));
    }
    found
}

#[tokio::test]
async fn every_table_is_global_or_distributable_by_tenant() {
    let db = TestDb::new().await;
    let client = client(&db).await;
    let found = violations(&client).await;
    assert!(found.is_empty(), "the schema cannot be distributed by tenant:\n{}", found.join("\n"));
}

#[tokio::test]
async fn the_check_sees_each_kind_of_violation() {
    let db = TestDb::new().await;
    let client = client(&db).await;
    client
        .batch_execute(
            "CREATE TABLE tenancy_probe_parent (id BIGINT PRIMARY KEY, tenant_id BIGINT NOT NULL);
             CREATE TABLE tenancy_probe_child (
                 id BIGINT NOT NULL, tenant_id BIGINT NOT NULL, code TEXT NOT NULL,
                 parent_id BIGINT REFERENCES tenancy_probe_parent (id),
                 PRIMARY KEY (tenant_id, id));
             CREATE UNIQUE INDEX tenancy_probe_code ON tenancy_probe_child (lower(code));
             CREATE TABLE tenancy_probe_orphan (id BIGINT PRIMARY KEY);
             CREATE TABLE tenancy_probe_nullable (tenant_id BIGINT, id BIGINT, PRIMARY KEY (id));
             ALTER TABLE service_keys ADD COLUMN probe BIGINT, ADD COLUMN probe_tenant BIGINT,
                 ADD FOREIGN KEY (probe_tenant, probe) REFERENCES tenancy_probe_child (tenant_id, id);
             CREATE TABLE tenancy_probe_forced (tenant_id BIGINT NOT NULL, id BIGINT, PRIMARY KEY (tenant_id, id));
             ALTER TABLE tenancy_probe_forced ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
             CREATE POLICY tenant_scope ON tenancy_probe_forced USING (true);
             CREATE TABLE tenancy_probe_secured (tenant_id BIGINT NOT NULL, id BIGINT, PRIMARY KEY (tenant_id, id));
             SELECT svc_tenant_rls('tenancy_probe_secured');
             REVOKE UPDATE ON tenancy_probe_secured FROM svc_app;",
        )
        .await
        .expect("probe tables");
    let found = violations(&client).await;
    for expected in [
        "tenancy_probe_parent: unique index tenancy_probe_parent_pkey leaves tenant_id out",
        "tenancy_probe_child: unique index tenancy_probe_code leaves tenant_id out",
        "tenancy_probe_child: foreign key tenancy_probe_child_parent_id_fkey to tenancy_probe_parent leaves tenant_id out",
        "tenancy_probe_orphan: no tenant_id and not a global table",
        "tenancy_probe_nullable: tenant_id may be null",
        "service_keys: global table with foreign key service_keys_probe_tenant_probe_fkey to tenant table tenancy_probe_child",
        "tenancy_probe_child: row-level security not enabled and forced",
        "tenancy_probe_child: no tenant_scope policy (SELECT svc_tenant_rls('tenancy_probe_child'))",
        "tenancy_probe_forced: no tenant_scope policy (SELECT svc_tenant_rls('tenancy_probe_forced'))",
    ] {
        assert!(found.iter().any(|line| line == expected), "missed {expected:?} in {found:#?}");
    }
    let secured: Vec<&String> = found.iter().filter(|line| line.starts_with("tenancy_probe_secured")).collect();
    assert_eq!(secured, ["tenancy_probe_secured: the service role svc_app may not read and write it"], "{found:#?}");
}
