//! Schedules: a business event emitted, or a named operation run, on a cron expression (UTC). Made by the operator
//! (`gateway admin automation schedule`) and by MCP tools, read by keys
//! (`GET /automations/schedules`).
//!
//! Each due time is fired once: the job that fires it moves `next_run_at` on only if it still
//! names that due time, in the transaction that emits the event and queues the next firing, so
//! two workers (or a repeated job) never fire it twice.

use std::str::FromStr;
use std::sync::Arc;

use diesel::OptionalExtension as _;
use diesel::sql_types::{BigInt, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, TenantId};
use serde::{Deserialize, Serialize};
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AutomationService;
use crate::subscriptions::{SCHEDULED_PREFIX, is_word};

/// The fixed cap of `GET /automations/schedules`, and of a workspace.
pub const MAX_SCHEDULES: i64 = 100;

/// What a schedule does when due.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Emits `scheduled.<word>` with `{schedule_id, due_at}`.
    Event(String),
    /// Runs a named operation with this input.
    Operation { name: String, input: serde_json::Value },
}

/// A schedule.
#[derive(Debug, Clone, Serialize, ToSchema, diesel::QueryableByName)]
pub struct Schedule {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    /// Five fields (minute hour day-of-month month day-of-week), or six with seconds first; UTC.
    #[diesel(sql_type = Text)]
    pub cron: String,
    /// The event it emits.
    #[diesel(sql_type = Nullable<Text>)]
    pub event: Option<String>,
    /// The operation it runs, and its input.
    #[diesel(sql_type = Nullable<Text>)]
    pub operation: Option<String>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    #[schema(value_type = Option<Object>)]
    pub input: Option<serde_json::Value>,
    #[diesel(sql_type = Timestamptz)]
    #[serde(with = "time::serde::rfc3339")]
    pub next_run_at: OffsetDateTime,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_run_at: Option<OffsetDateTime>,
    #[diesel(sql_type = BigInt)]
    pub runs: i64,
    /// `operator` or `mcp`.
    #[diesel(sql_type = Text)]
    pub created_by: String,
    #[diesel(sql_type = Timestamptz)]
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// `{schedules}`: newest first, at most 100.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Schedules {
    pub schedules: Vec<Schedule>,
}

const COLUMNS: &str = "id, cron, event, operation, input, next_run_at, last_run_at, runs, created_by, created_at";

/// The first time after `after` that `cron` names (UTC); 422 naming `cron` for an expression
/// that is not one, or that never comes.
pub fn next_after(cron: &str, after: OffsetDateTime) -> Result<OffsetDateTime, Error> {
    let parsed = croner::Cron::from_str(cron.trim())
        .map_err(|e| Error::field("cron", format!("The cron expression is not valid: {e}.")))?;
    let start = chrono::DateTime::from_timestamp(after.unix_timestamp(), after.nanosecond())
        .ok_or_else(|| Error::internal("a time beyond chrono's range"))?
        .naive_utc();
    let next = parsed
        .find_next_occurrence(&start, false)
        .map_err(|e| Error::field("cron", format!("The cron expression never comes: {e}.")))?;
    let utc = next.and_utc();
    OffsetDateTime::from_unix_timestamp(utc.timestamp())
        .map_err(Error::internal)?
        .replace_nanosecond(utc.timestamp_subsec_nanos())
        .map_err(Error::internal)
}

impl AutomationService {
    pub async fn schedules(&self, caller: &Caller) -> Result<Schedules, Error> {
        Self::may_read(caller)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let schedules = diesel::sql_query(format!(
            "SELECT {COLUMNS} FROM automation_schedules WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2"
        ))
        .bind::<BigInt, _>(caller.tenant_id.0)
        .bind::<BigInt, _>(MAX_SCHEDULES)
        .load(&mut conn)
        .await?;
        Ok(Schedules { schedules })
    }

    /// A new schedule of `tenant`, its first firing queued. 422 naming `cron` for a bad
    /// expression, `event` for a name other than `scheduled.<word>`, `operation` for one the
    /// workspace has not defined, `input.<name>` for an input the operation would refuse;
    /// 409 past 100 schedules.
    pub async fn schedule(
        &self,
        tenant: TenantId,
        cron: &str,
        target: Target,
        created_by: &str,
    ) -> Result<Schedule, Error> {
        let now = self.clock.now();
        let next = next_after(cron, now)?;
        let mut conn = self.conn(tenant).await?;
        let (event, operation, input): (Option<String>, Option<String>, Option<serde_json::Value>) = match target {
            Target::Event(name) => {
                let name = name.trim().to_lowercase();
                if !name.strip_prefix(SCHEDULED_PREFIX).is_some_and(is_word) {
                    return Err(Error::field(
                        "event",
                        "A schedule emits `scheduled.<word>` (lowercase letters, digits, underscores).",
                    ));
                }
                (Some(name), None, None)
            }
            // the operation must exist, and the input must read against it now
            Target::Operation { name, input } => {
                let name = name.trim().to_owned();
                let stored = crate::operations::find(&mut conn, tenant, &name).await.map_err(|_| {
                    Error::field("operation", format!("This workspace defines no operation named {name:?}."))
                })?;
                let definition: crate::operations::Definition =
                    serde_json::from_value(stored.definition).map_err(Error::internal)?;
                let calling_code = accounts::tenants::get(&mut conn, tenant).await?.default_country_code;
                definition.read_input(&input, &calling_code)?;
                (None, Some(name), Some(input))
            }
        };
        conn.transaction::<_, Error, _>(async |conn| {
            let made: Option<Schedule> = diesel::sql_query(format!(
                "INSERT INTO automation_schedules (id, tenant_id, cron, event, operation, input, next_run_at, created_by,
                     created_at, updated_at)
                 SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $9
                 WHERE (SELECT count(*) FROM automation_schedules WHERE tenant_id = $2) < $10
                 RETURNING {COLUMNS}"
            ))
            .bind::<SqlUuid, _>(Uuid::now_v7())
            .bind::<BigInt, _>(tenant.0)
            .bind::<Text, _>(cron.trim())
            .bind::<Nullable<Text>, _>(event)
            .bind::<Nullable<Text>, _>(operation)
            .bind::<Nullable<Jsonb>, _>(input)
            .bind::<Timestamptz, _>(next)
            .bind::<Text, _>(created_by)
            .bind::<Timestamptz, _>(now)
            .bind::<BigInt, _>(MAX_SCHEDULES)
            .get_result(conn)
            .await
            .optional()?;
            let made =
                made.ok_or_else(|| Error::conflict(format!("A workspace keeps at most {MAX_SCHEDULES} schedules.")))?;
            queue(conn, tenant, made.id, next).await?;
            Ok(made)
        })
        .await
    }

    /// Removes a schedule (404 for none of `tenant`'s); a firing already queued finds nothing.
    pub async fn unschedule(&self, tenant: TenantId, id: Uuid) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let removed = diesel::sql_query("DELETE FROM automation_schedules WHERE tenant_id = $1 AND id = $2")
            .bind::<BigInt, _>(tenant.0)
            .bind::<SqlUuid, _>(id)
            .execute(&mut conn)
            .await?;
        if removed == 0 {
            return Err(Error::not_found("Schedule"));
        }
        Ok(())
    }

    /// Fires the schedule's due time `due`, once.
    async fn fire(&self, tenant: TenantId, id: Uuid, due: OffsetDateTime) -> Result<(), Error> {
        let now = self.clock.now();
        if due > now {
            // early (a clock behind the one that queued it): come back when due
            let mut conn = self.conn(tenant).await?;
            return queue(&mut conn, tenant, id, due).await;
        }
        let mut conn = self.conn(tenant).await?;
        conn.transaction::<_, Error, _>(async |conn| {
            #[derive(diesel::QueryableByName)]
            struct Due {
                #[diesel(sql_type = Text)]
                cron: String,
                #[diesel(sql_type = Nullable<Text>)]
                event: Option<String>,
                #[diesel(sql_type = Nullable<Text>)]
                operation: Option<String>,
                #[diesel(sql_type = Nullable<Jsonb>)]
                input: Option<serde_json::Value>,
            }
            let row: Option<Due> = diesel::sql_query(
                "SELECT cron, event, operation, input FROM automation_schedules
                 WHERE tenant_id = $1 AND id = $2 AND next_run_at = $3 FOR UPDATE",
            )
            .bind::<BigInt, _>(tenant.0)
            .bind::<SqlUuid, _>(id)
            .bind::<Timestamptz, _>(due)
            .get_result(conn)
            .await
            .optional()?;
            // fired already (by another worker, or this job again), or removed
            let Some(row) = row else { return Ok(()) };
            // the next due time after now: times missed while nothing ran are not made up
            let next = next_after(&row.cron, now.max(due))?;
            diesel::sql_query(
                "UPDATE automation_schedules SET next_run_at = $3, last_run_at = $4, runs = runs + 1, updated_at = $5
                 WHERE tenant_id = $1 AND id = $2",
            )
            .bind::<BigInt, _>(tenant.0)
            .bind::<SqlUuid, _>(id)
            .bind::<Timestamptz, _>(next)
            .bind::<Timestamptz, _>(due)
            .bind::<Timestamptz, _>(now)
            .execute(conn)
            .await?;
            if let Some(event) = row.event {
                let due_at = due.format(&time::format_description::well_known::Rfc3339).map_err(Error::internal)?;
                let payload = serde_json::json!({"schedule_id": id, "due_at": due_at});
                store::outbox::emit(conn, tenant, &event, payload, now).await?;
            }
            // an operation runs outside this transaction, in a job of its own
            if let Some(operation) = row.operation {
                let input = row.input.unwrap_or_else(|| serde_json::json!({}));
                let run = crate::operations::run::RunScheduled { schedule: id, operation, input, due };
                let options = Enqueue { tenant_id: Some(tenant), ..Enqueue::default() };
                store::jobs::enqueue(conn, &run, options).await?;
            }
            queue(conn, tenant, id, next).await
        })
        .await
    }
}

async fn queue(conn: &mut store::Conn, tenant: TenantId, id: Uuid, at: OffsetDateTime) -> Result<(), Error> {
    let options = Enqueue { tenant_id: Some(tenant), run_at: Some(at), ..Enqueue::default() };
    store::jobs::enqueue(conn, &FireSchedule { schedule: id, due: at }, options).await?;
    Ok(())
}

/// Fires one due time of one schedule.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FireSchedule {
    pub schedule: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub due: OffsetDateTime,
}

impl Job for FireSchedule {
    const NAME: &'static str = "automations.fire_schedule";
    type State = AutomationService;

    async fn run(self, service: Arc<AutomationService>, ctx: JobContext) -> Result<(), JobError> {
        Ok(service.fire(ctx.tenant()?, self.schedule, self.due).await?)
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::next_after;

    #[test]
    fn cron_expressions_name_their_next_time_in_utc() {
        let at = datetime!(2026-12-07 08:59:30 UTC);
        assert_eq!(next_after("0 9 * * *", at).ok(), Some(datetime!(2026-12-07 09:00:00 UTC)));
        assert_eq!(next_after("*/15 * * * *", at).ok(), Some(datetime!(2026-12-07 09:00:00 UTC)));
        assert_eq!(next_after("30 * * * * *", at).ok(), Some(datetime!(2026-12-07 09:00:30 UTC)), "seconds first");
        assert_eq!(
            next_after("0 9 * * MON", at).ok(),
            Some(datetime!(2026-12-07 09:00:00 UTC)),
            "7 Dec 2026 is a Monday"
        );
        assert_eq!(
            next_after("0 9 * * *", datetime!(2026-12-07 09:00:00 UTC)).ok(),
            Some(datetime!(2026-12-08 09:00:00 UTC)),
            "strictly after"
        );
        for bad in ["", "every day", "61 * * * *", "* * * *"] {
            assert!(next_after(bad, at).is_err(), "{bad:?}");
        }
    }
}
