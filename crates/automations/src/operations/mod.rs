//! Named operations (contract: "Operations: one write operation that runs a named operation
//! defined by the workspace"): definitions applied by the operator
//! (`gateway admin operation apply`), listed and described to keys and MCP clients, and run
//! through `POST /operations/{name}/runs` ([`run`]).
//!
//! Reading and running need `operations.run` from a known, active issuer; each step then
//! needs what its own REST route needs (the run acts as its caller).

pub mod actions;
pub mod definition;
pub mod run;

use diesel::OptionalExtension as _;
use diesel::sql_types::{BigInt, Integer, Jsonb, Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Permission, TenantId};
use serde::Serialize;
use serde_json::Value;
use store::Prepare as _;
use time::OffsetDateTime;
use utoipa::ToSchema;

pub use actions::{Action, Steps};
pub use definition::Definition;
pub use run::{Run, RunBody, StepRecord};

use crate::AutomationService;

/// Most operations a workspace defines.
pub const MAX_OPERATIONS: i64 = 100;
/// Names a path segment of the run routes takes (`/operations/runs/{run}`).
const RESERVED: &[&str] = &["runs"];

/// An operation as reads show it: its definition, version and the JSON Schema of its input.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Operation {
    pub name: String,
    pub description: Option<String>,
    /// 1 when first applied, one more for each change.
    pub version: i32,
    /// The input a run takes (`POST /operations/{name}/runs` `{"input": {...}}`), as JSON Schema.
    #[schema(value_type = Object)]
    pub input_schema: Value,
    /// The definition as applied: inputs and steps.
    pub definition: Definition,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// What `apply` did.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Applied {
    pub name: String,
    pub version: i32,
    /// `created`, `updated` or `unchanged`.
    pub outcome: &'static str,
}

#[derive(diesel::QueryableByName)]
pub(crate) struct Stored {
    #[diesel(sql_type = Integer)]
    pub(crate) version: i32,
    #[diesel(sql_type = Jsonb)]
    pub(crate) definition: Value,
    #[diesel(sql_type = Timestamptz)]
    created_at: OffsetDateTime,
    #[diesel(sql_type = Timestamptz)]
    updated_at: OffsetDateTime,
}

impl Stored {
    fn view(self) -> Result<Operation, Error> {
        let definition: Definition = serde_json::from_value(self.definition).map_err(Error::internal)?;
        Ok(Operation {
            name: definition.name.clone(),
            description: definition.description.clone(),
            version: self.version,
            input_schema: definition.input_schema(),
            definition,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

impl AutomationService {
    /// Reads and runs of operations: `operations.run`, from a known, active issuer.
    pub(crate) fn may_operate(caller: &Caller) -> Result<(), Error> {
        caller.require_issuer()?;
        caller.require(Permission::OPERATIONS_RUN)
    }

    /// `gateway admin operation apply`: a definition file checked whole and stored under its
    /// name, a new version when it changed. 422 naming each problem; 409 past 100 operations.
    pub async fn apply_operation(&self, tenant: TenantId, file: Value) -> Result<Applied, Error> {
        let definition = Definition::parse(file)?;
        if RESERVED.contains(&definition.name.as_str()) {
            return Err(Error::field("name", format!("{:?} is reserved.", definition.name)));
        }
        let stored = serde_json::to_value(&definition).map_err(Error::internal)?;
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        conn.transaction::<_, Error, _>(async |conn| {
            #[derive(diesel::QueryableByName)]
            struct Old {
                #[diesel(sql_type = Integer)]
                version: i32,
                #[diesel(sql_type = Jsonb)]
                definition: Value,
            }
            let old: Option<Old> = diesel::sql_query(
                "SELECT version, definition FROM operations WHERE tenant_id = $1 AND name = $2 FOR UPDATE",
            )
            .bind::<BigInt, _>(tenant.0)
            .bind::<Text, _>(&definition.name)
            .get_result(conn)
            .await
            .optional()?;
            let name = definition.name.clone();
            match old {
                Some(old) if old.definition == stored => Ok(Applied { name, version: old.version, outcome: "unchanged" }),
                Some(old) => {
                    diesel::sql_query(
                        "UPDATE operations SET version = $3, definition = $4, updated_at = $5
                         WHERE tenant_id = $1 AND name = $2",
                    )
                    .bind::<BigInt, _>(tenant.0)
                    .bind::<Text, _>(&name)
                    .bind::<Integer, _>(old.version + 1)
                    .bind::<Jsonb, _>(&stored)
                    .bind::<Timestamptz, _>(now)
                    .execute(conn)
                    .await?;
                    Ok(Applied { name, version: old.version + 1, outcome: "updated" })
                }
                None => {
                    let made = diesel::sql_query(
                        "INSERT INTO operations (tenant_id, name, version, definition, created_at, updated_at)
                         SELECT $1, $2, 1, $3, $4, $4
                         WHERE (SELECT count(*) FROM operations WHERE tenant_id = $1) < $5
                         ON CONFLICT DO NOTHING",
                    )
                    .bind::<BigInt, _>(tenant.0)
                    .bind::<Text, _>(&name)
                    .bind::<Jsonb, _>(&stored)
                    .bind::<Timestamptz, _>(now)
                    .bind::<BigInt, _>(MAX_OPERATIONS)
                    .execute(conn)
                    .await?;
                    if made == 0 {
                        return Err(Error::conflict(format!(
                            "A workspace defines at most {MAX_OPERATIONS} operations (or {name} was applied at the same moment: apply it again)."
                        )));
                    }
                    Ok(Applied { name, version: 1, outcome: "created" })
                }
            }
        })
        .await
    }

    /// `gateway admin operation remove`: the definition removed (its runs stay readable).
    pub async fn remove_operation(&self, tenant: TenantId, name: &str) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let removed = diesel::sql_query("DELETE FROM operations WHERE tenant_id = $1 AND name = $2")
            .bind::<BigInt, _>(tenant.0)
            .bind::<Text, _>(name.trim())
            .execute(&mut conn)
            .await?;
        if removed == 0 {
            return Err(Error::not_found("Operation"));
        }
        Ok(())
    }

    /// `GET /operations`: every operation of the workspace, by name (at most 100).
    pub async fn operations(&self, caller: &Caller) -> Result<Vec<Operation>, Error> {
        Self::may_operate(caller)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let stored: Vec<Stored> = diesel::sql_query(
            "SELECT version, definition, created_at, updated_at FROM operations WHERE tenant_id = $1 ORDER BY name",
        )
        .bind::<BigInt, _>(caller.tenant_id.0)
        .load(&mut conn)
        .await?;
        stored.into_iter().map(Stored::view).collect()
    }

    /// `GET /operations/{name}`: one operation with its input's schema; 404 for a name the
    /// workspace does not define.
    pub async fn operation(&self, caller: &Caller, name: &str) -> Result<Operation, Error> {
        Self::may_operate(caller)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        find(&mut conn, caller.tenant_id, name).await?.view()
    }
}

/// The stored operation `name` of `tenant`, or 404.
pub(crate) async fn find(conn: &mut store::Conn, tenant: TenantId, name: &str) -> Result<Stored, Error> {
    diesel::sql_query(
        "SELECT version, definition, created_at, updated_at FROM operations WHERE tenant_id = $1 AND name = $2",
    )
    .bind::<BigInt, _>(tenant.0)
    .bind::<Text, _>(name.trim())
    .prepared()
    .get_result(conn)
    .await
    .optional()?
    .ok_or_else(|| Error::not_found("Operation"))
}
