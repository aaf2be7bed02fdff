//! Running an operation: the input read against the definition, the steps in order, each
//! recorded as it starts and as it ends; a failing step undoes the finished ones in reverse
//! (a compensating transaction), and the run keeps what happened. A run whose process stopped
//! is picked up by a job a minute after it started and undone the same way.
//!
//! `Idempotency-Key`: the run keeps the key and a fingerprint of its input, so a repeat within
//! 24 hours answers the first run (its outcome, success or failure) instead of running again.

use std::sync::Arc;

use diesel::OptionalExtension as _;
use diesel::sql_types::{BigInt, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, ErrorKind, Issuer, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use store::Prepare as _;
use store::idempotency::{Answer, Key, REPLAY_WINDOW};
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::{Duration, OffsetDateTime};
use utoipa::ToSchema;
use uuid::Uuid;

use super::actions::{Action, Undo};
use super::definition::{Definition, fill};
use super::find;
use crate::AutomationService;

/// A run still `running` this long after it started was interrupted: its finished steps are
/// undone by [`RecoverRun`].
pub const RECOVER_AFTER: Duration = Duration::minutes(1);

/// `POST /operations/{name}/runs`' body.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = OperationRunBody)]
pub struct RunBody {
    /// The operation's inputs by name (`GET /operations/{name}` shows their schema).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub input: Value,
}

/// A run: what it was given, each step as it ran, and how it ended.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = OperationRun)]
pub struct Run {
    pub id: Uuid,
    pub operation: String,
    /// The operation's version it followed.
    pub version: i32,
    /// `running`, `succeeded`, `compensated` (a step failed and every finished step was
    /// undone) or `failed` (a step failed and an undo failed too: a person should look).
    pub status: String,
    /// The input as the steps read it (defaults filled in).
    #[schema(value_type = Object)]
    pub input: Value,
    pub steps: Vec<StepRecord>,
    /// Why it did not succeed: `{code, message, errors, step}`.
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
    /// Who ran it: `{kind, key_id, user_id, label}` (`kind` `api_key`, `mcp_connection`,
    /// `oauth_token` or `schedule`).
    #[schema(value_type = Object)]
    pub created_by: Value,
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
    pub duration_ms: Option<i64>,
}

/// A run as stored.
#[derive(diesel::QueryableByName)]
struct Row {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    operation: String,
    #[diesel(sql_type = Integer)]
    version: i32,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Jsonb)]
    input: Value,
    #[diesel(sql_type = Jsonb)]
    steps: Value,
    #[diesel(sql_type = Nullable<Jsonb>)]
    error: Option<Value>,
    #[diesel(sql_type = Jsonb)]
    created_by: Value,
    #[diesel(sql_type = Timestamptz)]
    started_at: OffsetDateTime,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    finished_at: Option<OffsetDateTime>,
}

impl Row {
    fn view(self) -> Result<Run, Error> {
        Ok(Run {
            id: self.id,
            operation: self.operation,
            version: self.version,
            status: self.status,
            input: self.input,
            steps: serde_json::from_value(self.steps).map_err(Error::internal)?,
            error: self.error,
            created_by: self.created_by,
            started_at: self.started_at,
            duration_ms: self.finished_at.map(|at| (at - self.started_at).whole_milliseconds() as i64),
            finished_at: self.finished_at,
        })
    }
}

/// One step of a run.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(as = OperationRunStep)]
pub struct StepRecord {
    pub id: String,
    pub action: Action,
    /// `running`, `succeeded`, `failed`, `compensated` (done, then undone),
    /// `compensation_failed`, or `unknown` (the run was interrupted while it ran).
    pub status: String,
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
    pub duration_ms: Option<i64>,
    /// The action's answer (what later steps name as `{{steps.<id>...}}`).
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    /// Why it failed: `{code, message, errors}`.
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
    /// How it is undone (`{action: delete_lead | restore_stage | delete_record | cancel_order, ...}`);
    /// absent when nothing is (a message sent, a lead matched rather than made).
    #[schema(value_type = Option<Object>)]
    pub compensation: Option<Undo>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub compensated_at: Option<OffsetDateTime>,
    pub compensation_error: Option<String>,
}

const COLUMNS: &str = "id, operation, version, status, input, steps, error, created_by, started_at, finished_at";

/// Who ran it, as the run records it.
fn created_by(caller: &Caller, kind: Option<&str>) -> Value {
    let user = match &caller.issuer {
        Issuer::User { id, .. } if id.0 != 0 => Some(id.0),
        _ => None,
    };
    let key = (caller.key_id.0 != 0).then_some(caller.key_id.0);
    json!({"kind": kind.unwrap_or(caller.credential.as_str()), "key_id": key, "user_id": user, "label": caller.key_name})
}

/// An error as a run keeps it.
fn stored(error: &Error, step: Option<&str>) -> Value {
    let message = if error.is(ErrorKind::Internal) { "Something went wrong on our side." } else { &error.message };
    json!({"code": error.kind.code(), "message": message, "errors": error.errors, "step": step})
}

/// The kind of a kept error's code (the inverse of `ErrorKind::code`).
fn kind_of(code: &str) -> ErrorKind {
    match code {
        "validation_error" => ErrorKind::Validation,
        "conflict" => ErrorKind::Conflict,
        "not_found" => ErrorKind::NotFound,
        "permission_denied" => ErrorKind::Forbidden,
        "quota_exceeded" => ErrorKind::PaymentRequired,
        "not_supported" => ErrorKind::NotSupported,
        "rate_limited" => ErrorKind::RateLimited,
        "provider_failure" => ErrorKind::ProviderFailure,
        "temporary_failure" => ErrorKind::Unavailable,
        _ => ErrorKind::Internal,
    }
}

impl Run {
    /// A finished run as its answer: itself when it succeeded, else the failing step's error
    /// (its status, code and message, `reason: step_failed`) carrying the run.
    pub fn outcome(self) -> Result<Run, Error> {
        let Some(error) = self.error.clone().filter(|_| self.status != "succeeded") else { return Ok(self) };
        let code = error["code"].as_str().unwrap_or_default();
        let step = error["step"].as_str().unwrap_or("?");
        let message = format!(
            "Step {step} of {} failed: {} {}",
            self.operation,
            error["message"].as_str().unwrap_or_default(),
            if self.status == "compensated" {
                "The steps before it were undone."
            } else {
                "Undoing the steps before it failed too: see the run."
            }
        );
        let mut refusal = Error::new(kind_of(code), message).with_reason("step_failed");
        if let Some(errors) = error["errors"].as_object() {
            for (field, messages) in errors {
                for m in messages.as_array().into_iter().flatten() {
                    refusal = refusal.with_field(format!("steps.{step}.{field}"), m.as_str().unwrap_or_default());
                }
            }
        }
        Err(refusal.with_detail("run", serde_json::to_value(&self).map_err(Error::internal)?))
    }
}

impl AutomationService {
    /// `POST /operations/{name}/runs`: runs the operation as `caller`. 404 for a name the
    /// workspace does not define; 422 naming `input.<name>` for a bad input (no run is made);
    /// then the run (201), or the failing step's error with the run, its finished steps undone.
    pub async fn run_operation(
        &self,
        caller: &Caller,
        name: &str,
        body: RunBody,
        key: Option<Key>,
    ) -> Result<Answer<Run>, Error> {
        Self::may_operate(caller)?;
        self.start(caller, name, body.input, key, None).await
    }

    /// `GET /operations/runs/{run}`.
    pub async fn operation_run(&self, caller: &Caller, id: Uuid) -> Result<Run, Error> {
        Self::may_operate(caller)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        load(&mut conn, caller.tenant_id, id).await?.ok_or_else(|| Error::not_found("Run"))
    }

    /// Reads the input, records the run (or answers the one its key names), then runs it.
    pub(crate) async fn start(
        &self,
        caller: &Caller,
        name: &str,
        input: Value,
        key: Option<Key>,
        kind: Option<&str>,
    ) -> Result<Answer<Run>, Error> {
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let stored = find(&mut conn, tenant, name).await?;
        let version = stored.version;
        let definition: Definition = serde_json::from_value(stored.definition).map_err(Error::internal)?;
        let input = definition.read_input(&input, &caller.calling_code)?;
        let fingerprint =
            store::idempotency::fingerprint(&[store::idempotency::canonical(Value::Object(input.clone()))
                .to_string()
                .as_bytes()]);
        // a key is its issuer's own, as `store::idempotency` keys are
        let key = key.map(|key| match &caller.issuer {
            Issuer::User { id, .. } => format!("user:{}|{}", id.0, key.as_str()),
            Issuer::Legacy => format!("legacy|{}", key.as_str()),
            Issuer::Unknown => format!("unknown|{}", key.as_str()),
        });
        let now = self.clock.now();
        let id = Uuid::now_v7();
        let made = conn
            .transaction::<_, Error, _>(async |conn| {
                if let Some(key) = &key {
                    // a key's first run answers for 24 hours; after that the key is free again
                    diesel::sql_query(
                        "UPDATE operation_runs SET idempotency_key = NULL
                         WHERE tenant_id = $1 AND operation = $2 AND idempotency_key = $3 AND started_at <= $4",
                    )
                    .bind::<BigInt, _>(tenant.0)
                    .bind::<Text, _>(&definition.name)
                    .bind::<Text, _>(key)
                    .bind::<Timestamptz, _>(now - REPLAY_WINDOW)
                    .execute(conn)
                    .await?;
                }
                let made = diesel::sql_query(
                    "INSERT INTO operation_runs (id, tenant_id, operation, version, status, input, steps, created_by,
                         idempotency_key, fingerprint, started_at)
                     VALUES ($1, $2, $3, $4, 'running', $5, '[]', $6, $7, $8, $9)
                     ON CONFLICT DO NOTHING",
                )
                .bind::<SqlUuid, _>(id)
                .bind::<BigInt, _>(tenant.0)
                .bind::<Text, _>(&definition.name)
                .bind::<Integer, _>(version)
                .bind::<Jsonb, _>(Value::Object(input.clone()))
                .bind::<Jsonb, _>(created_by(caller, kind))
                .bind::<Nullable<Text>, _>(key.as_deref())
                .bind::<Text, _>(&fingerprint)
                .bind::<Timestamptz, _>(now)
                .prepared()
                .execute(conn)
                .await?;
                if made == 1 {
                    let options =
                        Enqueue { tenant_id: Some(tenant), run_at: Some(now + RECOVER_AFTER), ..Enqueue::default() };
                    store::jobs::enqueue(conn, &RecoverRun { run: id }, options).await?;
                }
                Ok(made == 1)
            })
            .await?;
        if !made {
            let run = self.replay(&mut conn, tenant, &definition.name, key, &fingerprint).await?;
            return Ok(Answer::Replay(serde_json::to_value(run).map_err(Error::internal)?));
        }
        drop(conn);
        self.follow(caller, id, &definition, input).await?.outcome().map(Answer::Done)
    }

    /// The run a key already names, when it succeeded; the failing step's error when it did
    /// not; 409 while it is still running; 422 when it was given another input.
    async fn replay(
        &self,
        conn: &mut store::Conn,
        tenant: TenantId,
        operation: &str,
        key: Option<String>,
        fingerprint: &str,
    ) -> Result<Run, Error> {
        let key = key.ok_or_else(|| Error::internal("a run id taken twice"))?;
        #[derive(diesel::QueryableByName)]
        struct Keyed {
            #[diesel(sql_type = SqlUuid)]
            id: Uuid,
            #[diesel(sql_type = Nullable<Text>)]
            fingerprint: Option<String>,
        }
        let keyed: Keyed = diesel::sql_query(
            "SELECT id, fingerprint FROM operation_runs WHERE tenant_id = $1 AND operation = $2 AND idempotency_key = $3",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<Text, _>(operation)
        .bind::<Text, _>(&key)
        .get_result(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::conflict("A run with this Idempotency-Key is being made; retry shortly."))?;
        if keyed.fingerprint.as_deref() != Some(fingerprint) {
            return Err(Error::validation(
                "This Idempotency-Key was already used with a different request; use a new key.",
            )
            .with_field("Idempotency-Key", "The key was already used with a different request."));
        }
        let run = load(conn, tenant, keyed.id).await?.ok_or_else(|| Error::not_found("Run"))?;
        if run.status == "running" {
            return Err(Error::conflict(
                "A request with this Idempotency-Key is still being processed; retry shortly.",
            ));
        }
        run.outcome()
    }

    /// Runs the steps of run `id`, recording each; on a failure, undoes the finished ones.
    async fn follow(
        &self,
        caller: &Caller,
        id: Uuid,
        definition: &Definition,
        input: Map<String, Value>,
    ) -> Result<Run, Error> {
        let tenant = caller.tenant_id;
        let steps = self.steps()?;
        let mut records: Vec<StepRecord> = Vec::with_capacity(definition.steps.len());
        let mut results = Map::new();
        let mut failure = None;
        for spec in &definition.steps {
            let started = self.clock.now();
            records.push(StepRecord {
                id: spec.id.clone(),
                action: spec.action,
                status: "running".into(),
                started_at: started,
                finished_at: None,
                duration_ms: None,
                result: None,
                error: None,
                compensation: None,
                compensated_at: None,
                compensation_error: None,
            });
            if !self.record(tenant, id, &records, None, None).await? {
                // taken over as interrupted: the recovery owns the run now
                return self.load_run(tenant, id).await;
            }
            let args = fill(&spec.args, &input, &results);
            let done = spec.action.run(steps, caller, args).await;
            let finished = self.clock.now();
            let record = records.last_mut().ok_or_else(|| Error::internal("no step"))?;
            record.finished_at = Some(finished);
            record.duration_ms = Some((finished - started).whole_milliseconds() as i64);
            match done {
                Ok(done) => {
                    record.status = "succeeded".into();
                    record.compensation = done.undo;
                    results.insert(spec.id.clone(), done.result.clone());
                    record.result = Some(done.result);
                }
                Err(error) => {
                    if error.is(ErrorKind::Internal) {
                        tracing::error!(run = %id, step = %spec.id, %error, "an operation's step failed");
                    }
                    record.status = "failed".into();
                    record.error = Some(stored(&error, None));
                    failure = Some(stored(&error, Some(&spec.id)));
                    break;
                }
            }
        }
        let status = match &failure {
            None => "succeeded",
            Some(_) => self.compensate(tenant, &mut records).await,
        };
        self.record(tenant, id, &records, Some(status), failure).await?;
        self.load_run(tenant, id).await
    }

    /// Undoes the finished steps in reverse, as the workspace's operator: `compensated` when
    /// each was undone (or had nothing to undo), `failed` when one could not be.
    async fn compensate(&self, tenant: TenantId, records: &mut [StepRecord]) -> &'static str {
        let Ok(steps) = self.steps() else { return "failed" };
        let operator = Caller::operator(tenant, "");
        let mut status = "compensated";
        for record in records.iter_mut().rev().filter(|r| r.status == "succeeded") {
            let Some(undo) = &record.compensation else { continue };
            match undo.run(steps, &operator).await {
                Ok(()) => {
                    record.status = "compensated".into();
                    record.compensated_at = Some(self.clock.now());
                }
                Err(error) => {
                    tracing::error!(step = %record.id, %error, "undoing an operation's step failed");
                    record.status = "compensation_failed".into();
                    record.compensation_error = Some(error.message.clone());
                    status = "failed";
                }
            }
        }
        status
    }

    /// Writes the steps (and, when it ends, the outcome) of a run still `running`; false when
    /// it no longer is.
    async fn record(
        &self,
        tenant: TenantId,
        id: Uuid,
        records: &[StepRecord],
        status: Option<&str>,
        error: Option<Value>,
    ) -> Result<bool, Error> {
        let mut conn = self.conn(tenant).await?;
        let steps = serde_json::to_value(records).map_err(Error::internal)?;
        let now = self.clock.now();
        let changed = diesel::sql_query(
            "UPDATE operation_runs SET steps = $3, status = coalesce($4, status), error = coalesce($5, error),
                 finished_at = CASE WHEN $4 IS NULL THEN NULL ELSE $6 END
             WHERE tenant_id = $1 AND id = $2 AND status = 'running'",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<SqlUuid, _>(id)
        .bind::<Jsonb, _>(steps)
        .bind::<Nullable<Text>, _>(status)
        .bind::<Nullable<Jsonb>, _>(error)
        .bind::<Timestamptz, _>(now)
        .prepared()
        .execute(&mut conn)
        .await?;
        Ok(changed == 1)
    }

    async fn load_run(&self, tenant: TenantId, id: Uuid) -> Result<Run, Error> {
        let mut conn = self.conn(tenant).await?;
        load(&mut conn, tenant, id).await?.ok_or_else(|| Error::not_found("Run"))
    }

    /// A run interrupted while `running`: the step that was running is `unknown` (its effect
    /// may or may not have happened), the finished ones are undone.
    async fn recover(&self, tenant: TenantId, id: Uuid) -> Result<(), Error> {
        let Some(run) = self.load_run(tenant, id).await.ok().filter(|run| run.status == "running") else {
            return Ok(());
        };
        let mut records = run.steps;
        let step = records.iter().rev().find(|r| r.status == "running").map(|r| r.id.clone());
        for record in records.iter_mut().filter(|r| r.status == "running") {
            record.status = "unknown".into();
        }
        let status = self.compensate(tenant, &mut records).await;
        let error = json!({
            "code": "temporary_failure",
            "message": "The run was interrupted (its process stopped) before it finished.",
            "errors": {},
            "step": step,
        });
        self.record(tenant, id, &records, Some(status), Some(error)).await?;
        Ok(())
    }
}

async fn load(conn: &mut store::Conn, tenant: TenantId, id: Uuid) -> Result<Option<Run>, Error> {
    let row: Option<Row> =
        diesel::sql_query(format!("SELECT {COLUMNS} FROM operation_runs WHERE tenant_id = $1 AND id = $2"))
            .bind::<BigInt, _>(tenant.0)
            .bind::<SqlUuid, _>(id)
            .prepared()
            .get_result(conn)
            .await
            .optional()?;
    row.map(Row::view).transpose()
}

/// Undoes a run still `running` a minute after it started (its process stopped).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecoverRun {
    pub run: Uuid,
}

impl Job for RecoverRun {
    const NAME: &'static str = "operations.recover";
    type State = AutomationService;

    async fn run(self, service: Arc<AutomationService>, ctx: JobContext) -> Result<(), JobError> {
        Ok(service.recover(ctx.tenant()?, self.run).await?)
    }
}

/// A schedule's due run of an operation, as the workspace's operator; the key
/// `schedule:<id>:<due>` makes a repeated job answer the first run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunScheduled {
    pub schedule: Uuid,
    pub operation: String,
    pub input: Value,
    #[serde(with = "time::serde::rfc3339")]
    pub due: OffsetDateTime,
}

impl Job for RunScheduled {
    const NAME: &'static str = "operations.run_scheduled";
    type State = AutomationService;

    async fn run(self, service: Arc<AutomationService>, ctx: JobContext) -> Result<(), JobError> {
        let tenant = ctx.tenant()?;
        // the steps read national numbers in the account's calling code
        let calling_code = {
            let mut conn = store::connect(&service.pool, tenant).await?;
            accounts::tenants::get(&mut conn, tenant).await?.default_country_code
        };
        let operator = Caller::operator(tenant, calling_code);
        let key = Key::parse(&format!("schedule:{}:{}", self.schedule, self.due.unix_timestamp()))?;
        match service.start(&operator, &self.operation, self.input, key, Some("schedule")).await {
            // a run that failed is recorded and undone: nothing to retry
            Err(e) if e.reason.as_deref() == Some("step_failed") => Ok(()),
            // the operation removed or its inputs changed since: nothing to run
            Err(e) if e.is(ErrorKind::NotFound) || e.is(ErrorKind::Validation) => {
                tracing::warn!(schedule = %self.schedule, error = %e, "a scheduled operation did not run");
                Ok(())
            }
            other => other.map(drop).map_err(Into::into),
        }
    }
}
