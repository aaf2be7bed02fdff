//! A run as callers see it, and what they do to one: submit, read, list, cancel, approve.

use std::time::Duration;

use diesel::OptionalExtension as _;
use diesel::sql_types::{Array, BigInt, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use kernel::{Caller, CredentialKind, Error, Issuer, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use store::Prepare as _;
use store::idempotency::{Answer, Key, Request};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::advance::Advance;
use crate::task::{Approval, Checked, Mode, TaskBody};
use crate::{AgentService, RunId};

/// Statuses a run ends in.
pub const ENDED: [&str; 4] = ["completed", "failed", "cancelled", "expired"];

/// A run: its task, its status, what it produced, what it used, and (read one by one) its steps.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(as = AgentRun)]
pub struct Run {
    /// Always `agent_run`.
    pub object: String,
    pub run_uuid: Uuid,
    /// `queued`, `running`, `requires_action` (a tool call waits for a person's approval),
    /// `completed`, `failed`, `cancelled` or `expired` (an approval never came).
    pub status: String,
    pub instructions: String,
    #[schema(schema_with = crate::task::kept_input_schema)]
    pub input: Value,
    /// The tools it may call (the names given, resolved to tools).
    pub tools: Vec<String>,
    pub require_approval: Vec<String>,
    pub model: String,
    #[schema(value_type = Object)]
    pub limits: Value,
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub mode: String,
    /// The model's final text, once `completed`.
    pub output: Option<String>,
    /// Why it did not complete: `{code, message}` (`step_limit`, `time_limit`, `spend_limit`,
    /// `insufficient_balance`, `model_unavailable`, `model_refused`, `credential_refused`,
    /// `cancelled`, `expired`, `interrupted`).
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
    /// The tool call that waits for approval, while `requires_action`: `{type:
    /// "approve_tool_call", step, tool, arguments, expires_at}`.
    #[schema(value_type = Option<Object>)]
    pub required_action: Option<Value>,
    pub usage: Usage,
    /// Each model turn and tool call, in order (absent from lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<Step>>,
    /// Who submitted it: `{kind, key_id, user_id, label}`.
    #[schema(value_type = Object)]
    pub created_by: Value,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
}

/// What a run used, and what it cost.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(as = AgentRunUsage)]
pub struct Usage {
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub model_turns: i64,
    pub tool_calls: i64,
    /// Minor units of `currency`, taken from the wallet step by step.
    pub cost_minor: i64,
    /// The cost in major units, for display.
    pub cost: String,
    pub currency: String,
}

/// One step: a model turn or a tool call.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(as = AgentRunStep)]
pub struct Step {
    /// 1, 2, ... in the order they started.
    pub seq: i32,
    /// `model_turn` or `tool_call`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `running`, `completed`, `failed` (a tool refused the call, or the model could not
    /// answer), `interrupted` (its process stopped while it ran; not repeated),
    /// `awaiting_approval`, `approved` or `denied`.
    pub status: String,
    /// The model of a turn, the tool of a call.
    pub name: String,
    /// A call's id as the model gave it.
    pub call_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub arguments: Option<Value>,
    /// A turn's text, a call's result.
    #[schema(schema_with = any_json)]
    pub output: Option<Value>,
    /// A turn's tool calls: `[{id, name, arguments}]`.
    #[schema(value_type = Option<Vec<Object>>)]
    pub tool_calls: Option<Value>,
    /// `{code, message, ...}`: what the model was told when a call was refused.
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cost_minor: i64,
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
    pub duration_ms: Option<i64>,
}

/// A step's `output`: text (a model turn's) or any JSON (a tool call's result), or null.
fn any_json() -> utoipa::openapi::schema::Schema {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::AnyValue)
        .description(Some("A turn's text, a call's result."))
        .into()
}

/// `GET /api/engine/runs` query.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunQuery {
    /// Only runs in this status.
    #[param(pattern = "^(queued|running|requires_action|completed|failed|cancelled|expired)$")]
    pub status: Option<String>,
    /// The `next_before` of the previous page (a `run_uuid`).
    #[param(value_type = Option<uuid::Uuid>)]
    pub before: Option<String>,
    /// Runs per page (default 20, cap 100: more reads as 100, less than 1 as 20).
    #[param(value_type = Option<i64>)]
    pub limit: Option<String>,
    /// Only runs whose `metadata` holds this key with `metadata_value` (both or neither).
    pub metadata_key: Option<String>,
    pub metadata_value: Option<String>,
}

/// `{object: "list", data, has_more, next_before}`, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AgentRunList)]
pub struct RunList {
    pub object: String,
    pub data: Vec<Run>,
    pub has_more: bool,
    pub next_before: Option<Uuid>,
}

pub const DEFAULT_LIMIT: i64 = 20;
pub const MAX_LIMIT: i64 = 100;
pub const STATUSES: [&str; 7] = ["queued", "running", "requires_action", "completed", "failed", "cancelled", "expired"];

const COLUMNS: &str =
    "id, tenant_id, status, instructions, input, tools, require_approval, model, max_steps, max_seconds,
    max_spend_minor, metadata, mode, output, error, input_tokens, output_tokens, tool_calls, cost_minor, currency,
    created_by, credential, credential_id, scopes, created_at, started_at, waited_ms, finished_at, expires_at,
    (SELECT count(*) FROM agent_steps s WHERE s.tenant_id = r.tenant_id AND s.run_id = r.id AND s.kind = 'model_turn')
        AS model_turns";

#[derive(diesel::QueryableByName)]
pub(crate) struct Row {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = BigInt)]
    pub tenant_id: i64,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Text)]
    pub instructions: String,
    #[diesel(sql_type = Jsonb)]
    pub input: Value,
    #[diesel(sql_type = Array<Text>)]
    pub tools: Vec<String>,
    #[diesel(sql_type = Array<Text>)]
    pub require_approval: Vec<String>,
    #[diesel(sql_type = Text)]
    pub model: String,
    #[diesel(sql_type = Integer)]
    pub max_steps: i32,
    #[diesel(sql_type = Integer)]
    pub max_seconds: i32,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub max_spend_minor: Option<i64>,
    #[diesel(sql_type = Jsonb)]
    pub metadata: Value,
    #[diesel(sql_type = Text)]
    pub mode: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub output: Option<String>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub error: Option<Value>,
    #[diesel(sql_type = BigInt)]
    pub input_tokens: i64,
    #[diesel(sql_type = BigInt)]
    pub output_tokens: i64,
    #[diesel(sql_type = Integer)]
    pub tool_calls: i32,
    #[diesel(sql_type = BigInt)]
    pub cost_minor: i64,
    #[diesel(sql_type = Text)]
    pub currency: String,
    #[diesel(sql_type = Jsonb)]
    pub created_by: Value,
    #[diesel(sql_type = Text)]
    pub credential: String,
    #[diesel(sql_type = BigInt)]
    pub credential_id: i64,
    #[diesel(sql_type = Nullable<Array<Text>>)]
    pub scopes: Option<Vec<String>>,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: OffsetDateTime,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub started_at: Option<OffsetDateTime>,
    #[diesel(sql_type = BigInt)]
    pub waited_ms: i64,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub finished_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub expires_at: Option<OffsetDateTime>,
    #[diesel(sql_type = BigInt)]
    pub model_turns: i64,
}

impl Row {
    pub(crate) fn view(self, steps: Option<Vec<Step>>) -> Run {
        let required_action = (self.status == "requires_action")
            .then(|| {
                let step = steps.as_ref()?.iter().rev().find(|s| s.status == "awaiting_approval")?;
                Some(json!({
                    "type": "approve_tool_call",
                    "step": step.seq,
                    "call_id": step.call_id,
                    "tool": step.name,
                    "arguments": step.arguments,
                    "expires_at": self.expires_at.and_then(|at| at.format(&time::format_description::well_known::Rfc3339).ok()),
                }))
            })
            .flatten();
        Run {
            object: "agent_run".into(),
            run_uuid: self.id,
            status: self.status,
            instructions: self.instructions,
            input: self.input,
            tools: self.tools,
            require_approval: self.require_approval,
            model: self.model,
            limits: json!({
                "max_steps": self.max_steps,
                "max_seconds": self.max_seconds,
                "max_spend_minor": self.max_spend_minor,
            }),
            metadata: self.metadata,
            mode: self.mode,
            output: self.output,
            error: self.error,
            required_action,
            usage: Usage {
                input_tokens: self.input_tokens,
                output_tokens: self.output_tokens,
                model_turns: self.model_turns,
                tool_calls: i64::from(self.tool_calls),
                cost: kernel::money::format_minor(self.cost_minor, &self.currency),
                cost_minor: self.cost_minor,
                currency: self.currency,
            },
            steps,
            created_by: self.created_by,
            created_at: self.created_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
        }
    }
}

#[derive(diesel::QueryableByName)]
pub(crate) struct StepRow {
    #[diesel(sql_type = Integer)]
    pub seq: i32,
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub call_id: Option<String>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub arguments: Option<Value>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub output: Option<Value>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub tool_calls: Option<Value>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub error: Option<Value>,
    #[diesel(sql_type = BigInt)]
    pub input_tokens: i64,
    #[diesel(sql_type = BigInt)]
    pub output_tokens: i64,
    #[diesel(sql_type = BigInt)]
    pub cost_minor: i64,
    #[diesel(sql_type = Timestamptz)]
    pub started_at: OffsetDateTime,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub finished_at: Option<OffsetDateTime>,
}

impl From<StepRow> for Step {
    fn from(row: StepRow) -> Self {
        Self {
            duration_ms: row.finished_at.map(|at| (at - row.started_at).whole_milliseconds() as i64),
            seq: row.seq,
            kind: row.kind,
            status: row.status,
            name: row.name,
            call_id: row.call_id,
            arguments: row.arguments,
            output: row.output,
            tool_calls: row.tool_calls,
            error: row.error,
            input_tokens: row.input_tokens,
            output_tokens: row.output_tokens,
            cost_minor: row.cost_minor,
            started_at: row.started_at,
            finished_at: row.finished_at,
        }
    }
}

/// The run `id` as stored, or none (another tenant's included).
pub(crate) async fn row(conn: &mut store::Conn, tenant: TenantId, id: Uuid) -> Result<Option<Row>, Error> {
    Ok(diesel::sql_query(format!("SELECT {COLUMNS} FROM agent_runs r WHERE tenant_id = $1 AND id = $2"))
        .bind::<BigInt, _>(tenant.0)
        .bind::<SqlUuid, _>(id)
        .prepared()
        .get_result(conn)
        .await
        .optional()?)
}

/// A run's steps from `after` on, in order.
pub(crate) async fn steps(conn: &mut store::Conn, tenant: TenantId, id: Uuid, after: i32) -> Result<Vec<Step>, Error> {
    let rows: Vec<StepRow> = diesel::sql_query(
        "SELECT seq, kind, status, name, call_id, arguments, output, tool_calls, error, input_tokens, output_tokens,
             cost_minor, started_at, finished_at
         FROM agent_steps WHERE tenant_id = $1 AND run_id = $2 AND seq > $3 ORDER BY seq",
    )
    .bind::<BigInt, _>(tenant.0)
    .bind::<SqlUuid, _>(id)
    .bind::<Integer, _>(after)
    .prepared()
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(Step::from).collect())
}

/// Who submitted a run, as it records them.
fn created_by(caller: &Caller) -> Value {
    let user = match &caller.issuer {
        Issuer::User { id, .. } if id.0 != 0 => Some(id.0),
        _ => None,
    };
    let key = (caller.key_id.0 != 0).then_some(caller.key_id.0);
    json!({"kind": caller.credential.as_str(), "key_id": key, "user_id": user, "label": caller.key_name})
}

impl AgentService {
    /// `POST /api/engine/tasks`: the run, queued (202), or in `sync` mode as it stands once it
    /// ended or the wait passed (200). 422 naming each bad member; 402 when a prepaid wallet
    /// cannot pay for a start. `scopes`: an MCP client's grant, which bounds the run's tools too.
    pub async fn submit(
        &self,
        caller: &Caller,
        body: TaskBody,
        key: Option<Key>,
        scopes: Option<Vec<String>>,
    ) -> Result<Answer<Run>, Error> {
        Self::may_run(caller)?;
        let fingerprint = serde_json::to_value(&body).map_err(Error::internal)?;
        let toolbox = self.toolbox()?;
        let task =
            body.check(|names| toolbox.select(names).map(|specs| specs.into_iter().map(|spec| spec.name).collect()))?;
        let mode = task.mode;
        let tenant = caller.tenant_id;
        let request = key.map(|key| Request::new(caller, "agents.submit", key, &fingerprint)).transpose()?;
        let mut conn = self.conn(tenant).await?;
        let now = self.clock.now();
        let id = Uuid::now_v7();
        let answer = store::idempotency::once(&mut conn, now, request, async |conn| {
            self.insert(conn, caller, &task, id, now, scopes).await?;
            Ok(row(conn, tenant, id).await?.ok_or_else(|| Error::internal("a run just made"))?.view(None))
        })
        .await?;
        let Answer::Done(run) = answer else { return Ok(answer) };
        drop(conn);
        if mode == Mode::Sync {
            return self.wait(tenant, run.run_uuid, self.config.sync_wait).await.map(Answer::Done);
        }
        Ok(Answer::Done(run))
    }

    /// Records the run and queues its first step, together; 402 first when a prepaid wallet
    /// holds less than a start needs.
    async fn insert(
        &self,
        conn: &mut store::Conn,
        caller: &Caller,
        task: &Checked,
        id: Uuid,
        now: OffsetDateTime,
        scopes: Option<Vec<String>>,
    ) -> Result<(), Error> {
        let tenant = caller.tenant_id;
        let wallet = accounts::wallet::get(conn, tenant).await?;
        let floor = self.config.minimum_balance_minor;
        if wallet.billing_mode == "prepaid" && wallet.balance_minor < floor {
            let currency = &wallet.currency;
            return Err(Error::payment_required(format!(
                "Insufficient balance: a run needs at least {} {currency} and the balance is {} {currency}.",
                kernel::money::format_minor(floor, currency),
                kernel::money::format_minor(wallet.balance_minor, currency),
            ))
            .with_reason("insufficient_balance")
            .with_detail("cost_minor", floor)
            .with_detail("balance_minor", wallet.balance_minor)
            .with_detail("currency", wallet.currency.clone()));
        }
        let model = task.model.clone().unwrap_or_else(|| self.models.default_model().to_owned());
        diesel::sql_query(
            "INSERT INTO agent_runs (id, tenant_id, status, instructions, input, tools, require_approval, model,
                 max_steps, max_seconds, max_spend_minor, metadata, mode, currency, created_by, credential,
                 credential_id, scopes, created_at)
             VALUES ($1, $2, 'queued', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<BigInt, _>(tenant.0)
        .bind::<Text, _>(&task.instructions)
        .bind::<Jsonb, _>(&task.input)
        .bind::<Array<Text>, _>(&task.tools)
        .bind::<Array<Text>, _>(&task.require_approval)
        .bind::<Text, _>(&model)
        .bind::<Integer, _>(task.max_steps)
        .bind::<Integer, _>(task.max_seconds)
        .bind::<Nullable<BigInt>, _>(task.max_spend_minor)
        .bind::<Jsonb, _>(Value::Object(task.metadata.clone()))
        .bind::<Text, _>(task.mode.as_str())
        .bind::<Text, _>(&wallet.currency)
        .bind::<Jsonb, _>(created_by(caller))
        .bind::<Text, _>(caller.credential.as_str())
        .bind::<BigInt, _>(caller.key_id.0)
        .bind::<Nullable<Array<Text>>, _>(scopes)
        .bind::<Timestamptz, _>(now)
        .prepared()
        .execute(conn)
        .await?;
        Advance::queue(conn, tenant, id).await
    }

    /// Polls run `id` until it is no longer queued or running, or `wait` passes.
    async fn wait(&self, tenant: TenantId, id: Uuid, wait: Duration) -> Result<Run, Error> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let run = self.read(tenant, id).await?;
            let moving = run.status == "queued" || run.status == "running";
            if !moving || tokio::time::Instant::now() >= deadline {
                return Ok(run);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The run with its steps.
    pub(crate) async fn read(&self, tenant: TenantId, id: Uuid) -> Result<Run, Error> {
        let mut conn = self.conn(tenant).await?;
        let row = row(&mut conn, tenant, id).await?.ok_or_else(|| Error::not_found("Run"))?;
        let steps = steps(&mut conn, tenant, id, 0).await?;
        Ok(row.view(Some(steps)))
    }

    /// `GET /api/engine/runs/{run_uuid}`.
    pub async fn run(&self, caller: &Caller, id: RunId) -> Result<Run, Error> {
        Self::may_run(caller)?;
        self.read(caller.tenant_id, id.0).await
    }

    /// The steps of run `id` after step `after`, and the run as it stands: what the events
    /// stream follows.
    pub async fn progress(&self, caller: &Caller, id: RunId, after: i32) -> Result<(Run, Vec<Step>), Error> {
        Self::may_run(caller)?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let row = row(&mut conn, tenant, id.0).await?.ok_or_else(|| Error::not_found("Run"))?;
        let steps = steps(&mut conn, tenant, id.0, after).await?;
        Ok((row.view(None), steps))
    }

    /// `GET /api/engine/runs`: newest first, paged with `before`.
    pub async fn runs(&self, caller: &Caller, query: &RunQuery) -> Result<RunList, Error> {
        Self::may_run(caller)?;
        let limit = match query.limit.as_deref().map(str::trim) {
            None | Some("") => DEFAULT_LIMIT,
            // as the event log reads it: past the cap is the cap, below one the default
            Some(raw) => match raw.parse::<i64>() {
                Ok(n) if n > 0 => n.min(MAX_LIMIT),
                Ok(_) => DEFAULT_LIMIT,
                Err(_) => return Err(Error::field("limit", "The limit must be an integer.")),
            },
        };
        if let Some(status) = query.status.as_deref().filter(|s| !STATUSES.contains(s)) {
            return Err(Error::field(
                "status",
                format!("{status} is not a run status: one of {}.", STATUSES.join(", ")),
            ));
        }
        let before = match query.before.as_deref() {
            None => None,
            Some(raw) => {
                Some(Uuid::parse_str(raw.trim()).map_err(|_| Error::field("before", "A run_uuid from next_before."))?)
            }
        };
        let metadata = match (&query.metadata_key, &query.metadata_value) {
            (None, None) => None,
            (Some(key), Some(value)) => Some(json!({ key: value })),
            _ => return Err(Error::field("metadata_key", "metadata_key and metadata_value go together.")),
        };
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let rows: Vec<Row> = diesel::sql_query(format!(
            "SELECT {COLUMNS} FROM agent_runs r
             WHERE tenant_id = $1 AND ($2::text IS NULL OR status = $2)
               AND ($3::jsonb IS NULL OR metadata @> $3)
               AND ($4::uuid IS NULL OR (created_at, id) < (SELECT created_at, id FROM agent_runs
                                                             WHERE tenant_id = $1 AND id = $4))
             ORDER BY created_at DESC, id DESC LIMIT $5"
        ))
        .bind::<BigInt, _>(tenant.0)
        .bind::<Nullable<Text>, _>(query.status.as_deref())
        .bind::<Nullable<Jsonb>, _>(metadata)
        .bind::<Nullable<SqlUuid>, _>(before)
        .bind::<BigInt, _>(limit + 1)
        .load(&mut conn)
        .await?;
        let has_more = rows.len() as i64 > limit;
        let data: Vec<Run> = rows.into_iter().take(limit as usize).map(|row| row.view(None)).collect();
        let next_before = if has_more { data.last().map(|run| run.run_uuid) } else { None };
        Ok(RunList { object: "list".into(), data, has_more, next_before })
    }

    /// `POST /api/engine/runs/{run_uuid}/cancel`: a run not yet ended ends `cancelled` now; a
    /// step under way finishes and is recorded, and nothing after it starts. 409 for a run
    /// that already ended.
    pub async fn cancel(&self, caller: &Caller, id: RunId) -> Result<Run, Error> {
        Self::may_run(caller)?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let now = self.clock.now();
        let ended = diesel::sql_query(
            "UPDATE agent_runs SET status = 'cancelled', finished_at = $3, expires_at = NULL,
                 error = jsonb_build_object('code', 'cancelled', 'message', 'The run was cancelled.')
             WHERE tenant_id = $1 AND id = $2 AND status IN ('queued', 'running', 'requires_action')",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<SqlUuid, _>(id.0)
        .bind::<Timestamptz, _>(now)
        .execute(&mut conn)
        .await?;
        drop(conn);
        let run = self.read(tenant, id.0).await?;
        if ended == 0 {
            return Err(Error::conflict(format!("The run already ended: it is {}.", run.status))
                .with_detail("run", serde_json::to_value(&run).map_err(Error::internal)?));
        }
        Ok(run)
    }

    /// `POST /api/engine/runs/{run_uuid}/approval`: runs the tool call the run waits on, or
    /// tells the model it was denied; the run goes on either way. 409 unless `requires_action`.
    pub async fn approve(&self, caller: &Caller, id: RunId, answer: Approval) -> Result<Run, Error> {
        Self::may_run(caller)?;
        let reason = answer.reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty());
        if reason.as_ref().is_some_and(|r| r.chars().count() > 500) {
            return Err(Error::field("reason", "The reason may not be longer than 500 characters."));
        }
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let now = self.clock.now();
        let denied = json!({
            "code": "denied",
            "message": match &reason {
                Some(reason) => format!("A person denied this call: {reason}"),
                None => "A person denied this call.".to_owned(),
            },
        });
        let answered = diesel::sql_query(
            "WITH waiting AS (
                 SELECT started_at FROM agent_steps
                 WHERE tenant_id = $1 AND run_id = $2 AND status = 'awaiting_approval'),
             run AS (
                 UPDATE agent_runs SET status = 'running', expires_at = NULL,
                     waited_ms = waited_ms + coalesce(
                         (SELECT (extract(epoch FROM $5 - started_at) * 1000)::bigint FROM waiting), 0)
                 WHERE tenant_id = $1 AND id = $2 AND status = 'requires_action' RETURNING id)
             UPDATE agent_steps SET status = CASE WHEN $3 THEN 'approved' ELSE 'denied' END,
                 error = CASE WHEN $3 THEN NULL ELSE $4 END,
                 finished_at = CASE WHEN $3 THEN NULL ELSE $5 END
             WHERE tenant_id = $1 AND run_id IN (SELECT id FROM run) AND status = 'awaiting_approval'",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<SqlUuid, _>(id.0)
        .bind::<diesel::sql_types::Bool, _>(answer.approve)
        .bind::<Jsonb, _>(denied)
        .bind::<Timestamptz, _>(now)
        .execute(&mut conn)
        .await?;
        if answered == 0 {
            drop(conn);
            let run = self.read(tenant, id.0).await?;
            return Err(Error::conflict(format!("The run waits for no approval: it is {}.", run.status)));
        }
        Advance::queue(&mut conn, tenant, id.0).await?;
        drop(conn);
        self.read(tenant, id.0).await
    }
}

/// The credential kind a run recorded, read back.
pub(crate) fn credential_kind(stored: &str) -> Option<CredentialKind> {
    [CredentialKind::RestKey, CredentialKind::McpConnection, CredentialKind::OAuthToken]
        .into_iter()
        .find(|kind| kind.as_str() == stored)
}

/// What a run's events and answers say of an error kept on it.
pub(crate) fn stored_error(code: &str, message: impl Into<String>) -> Value {
    let mut error = Map::new();
    error.insert("code".into(), code.into());
    error.insert("message".into(), message.into().into());
    Value::Object(error)
}
