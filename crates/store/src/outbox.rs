//! The event outbox: domains write events in the same transaction as the change that caused
//! them (house rule 5); the webhooks fan-out turns them into deliveries.

use diesel::sql_types::{BigInt, Jsonb, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use kernel::TenantId;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::Conn;
use crate::Prepare;

/// Records one event; its id is stable across every delivery, retry and replay.
pub async fn emit(
    conn: &mut Conn,
    tenant: TenantId,
    name: &str,
    payload: serde_json::Value,
    occurred_at: OffsetDateTime,
) -> Result<Uuid, kernel::Error> {
    let id = Uuid::new_v4();
    diesel::sql_query("INSERT INTO events (id, tenant_id, name, payload, occurred_at) VALUES ($1, $2, $3, $4, $5)")
        .bind::<SqlUuid, _>(id)
        .bind::<BigInt, _>(tenant.0)
        .bind::<Text, _>(name)
        .bind::<Jsonb, _>(payload)
        .bind::<Timestamptz, _>(occurred_at)
        .prepared()
        .execute(conn)
        .await?;
    Ok(id)
}

/// Records many events in one statement (a dispatch chunk's `message.sent` events).
pub async fn emit_many(
    conn: &mut Conn,
    events: Vec<(TenantId, String, serde_json::Value)>,
    occurred_at: OffsetDateTime,
) -> Result<(), kernel::Error> {
    if events.is_empty() {
        return Ok(());
    }
    let mut tenants = Vec::with_capacity(events.len());
    let mut names = Vec::with_capacity(events.len());
    let mut payloads = Vec::with_capacity(events.len());
    for (tenant, name, payload) in events {
        tenants.push(tenant.0);
        names.push(name);
        payloads.push(payload);
    }
    diesel::sql_query(
        "INSERT INTO events (id, tenant_id, name, payload, occurred_at)
         SELECT gen_random_uuid(), t, n, p, $4 FROM unnest($1::bigint[], $2::text[], $3::jsonb[]) AS e(t, n, p)",
    )
    .bind::<diesel::sql_types::Array<BigInt>, _>(tenants)
    .bind::<diesel::sql_types::Array<Text>, _>(names)
    .bind::<diesel::sql_types::Array<Jsonb>, _>(payloads)
    .bind::<Timestamptz, _>(occurred_at)
    .prepared()
    .execute(conn)
    .await?;
    Ok(())
}

/// An event as the outbox keeps it.
#[derive(diesel::QueryableByName, Debug, Clone, PartialEq)]
pub struct StoredEvent {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = BigInt)]
    pub tenant_id: i64,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Jsonb)]
    pub payload: serde_json::Value,
    #[diesel(sql_type = Timestamptz)]
    pub occurred_at: OffsetDateTime,
}

/// The events named by `(tenant, id)`, in no particular order; an unknown one is left out.
pub async fn read(conn: &mut Conn, keys: &[(TenantId, Uuid)]) -> Result<Vec<StoredEvent>, kernel::Error> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let (tenants, ids): (Vec<i64>, Vec<Uuid>) = keys.iter().map(|(tenant, id)| (tenant.0, *id)).unzip();
    Ok(diesel::sql_query(
        "SELECT e.id, e.tenant_id, e.name, e.payload, e.occurred_at
         FROM unnest($1::bigint[], $2::uuid[]) AS k (tenant_id, id)
         JOIN events e ON e.tenant_id = k.tenant_id AND e.id = k.id",
    )
    .bind::<diesel::sql_types::Array<BigInt>, _>(tenants)
    .bind::<diesel::sql_types::Array<SqlUuid>, _>(ids)
    .prepared()
    .get_results(conn)
    .await?)
}
