//! Advancing a run, one step at a time, as a job: each step is recorded `running` (committed)
//! before it starts and with its outcome once it ends, so a run whose process stopped resumes
//! at its last finished step and the step that was under way is marked `interrupted`, never
//! executed again. Before every step the run's status, its limits and its credential (as it is
//! now) are read again: a cancel, a revoked key or a lost permission stops it at the next step.

use std::sync::Arc;

use diesel::sql_types::{BigInt, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{ApiKeyId, CredentialKind, Error, ErrorKind, TenantId};
use providers::{ModelError, ModelMessage, ToolCall, Turn, TurnRequest};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use store::Prepare as _;
use store::jobs::{Enqueue, Job, JobContext, JobError};
use uuid::Uuid;

use crate::AgentService;
use crate::run::{Row, Step, credential_kind, row, steps, stored_error};
use crate::toolbox::Runner;

/// Advances run `run` until it ends or waits for an approval.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Advance {
    pub run: Uuid,
}

impl Advance {
    /// Queues the run's next steps, inside the caller's transaction.
    pub(crate) async fn queue(conn: &mut store::Conn, tenant: TenantId, run: Uuid) -> Result<(), Error> {
        let options = Enqueue { tenant_id: Some(tenant), ..Enqueue::default() };
        store::jobs::enqueue(conn, &Advance { run }, options).await.map(drop)
    }
}

impl Job for Advance {
    const NAME: &'static str = "agents.advance";
    type State = AgentService;

    async fn run(self, service: Arc<AgentService>, ctx: JobContext) -> Result<(), JobError> {
        Ok(service.advance(ctx.tenant()?, self.run).await?)
    }
}

/// Ends run `run` `expired` if it still waits for the approval it waited for when queued.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Expire {
    pub run: Uuid,
}

impl Job for Expire {
    const NAME: &'static str = "agents.expire";
    type State = AgentService;

    async fn run(self, service: Arc<AgentService>, ctx: JobContext) -> Result<(), JobError> {
        let tenant = ctx.tenant()?;
        let mut conn = service.conn(tenant).await?;
        let now = service.clock.now();
        diesel::sql_query(
            "UPDATE agent_runs SET status = 'expired', finished_at = $3, expires_at = NULL,
                 error = jsonb_build_object('code', 'expired', 'message', 'No one approved the tool call in time.')
             WHERE tenant_id = $1 AND id = $2 AND status = 'requires_action' AND expires_at <= $3",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<SqlUuid, _>(self.run)
        .bind::<Timestamptz, _>(now)
        .execute(&mut conn)
        .await
        .map_err(Error::from)?;
        Ok(())
    }
}

/// What a run does next.
#[derive(Debug, PartialEq)]
enum Plan {
    /// Ask the model.
    Turn,
    /// Run a call the last turn asked for (`approved`: its step, already approved).
    Call { call: ToolCall, approved: Option<i32> },
    /// The last turn asked for nothing: its text is the output.
    Done(Option<String>),
}

/// The next thing to do, from the steps so far: the last finished turn's calls in order, each
/// once; then another turn; a turn that called nothing ends the run.
fn plan(steps: &[Step]) -> Plan {
    let Some(turn) = steps.iter().rev().find(|s| s.kind == "model_turn" && s.status == "completed") else {
        return Plan::Turn;
    };
    let calls: Vec<ToolCall> =
        turn.tool_calls.clone().and_then(|calls| serde_json::from_value(calls).ok()).unwrap_or_default();
    if calls.is_empty() {
        return Plan::Done(turn.output.as_ref().and_then(Value::as_str).map(str::to_owned));
    }
    for call in calls {
        let done = steps.iter().find(|s| s.seq > turn.seq && s.call_id.as_deref() == Some(&call.id));
        match done {
            None => return Plan::Call { call, approved: None },
            Some(step) if step.status == "approved" => return Plan::Call { call, approved: Some(step.seq) },
            Some(_) => {}
        }
    }
    Plan::Turn
}

/// The conversation so far, as the model reads it: the instructions, the input, then each
/// finished turn followed by the answers to its calls.
fn conversation(run: &Row, steps: &[Step]) -> Vec<ModelMessage> {
    let input = match &run.input {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let mut messages =
        vec![ModelMessage::System { content: run.instructions.clone() }, ModelMessage::User { content: input }];
    for turn in steps.iter().filter(|s| s.kind == "model_turn" && s.status == "completed") {
        let calls: Vec<ToolCall> =
            turn.tool_calls.clone().and_then(|calls| serde_json::from_value(calls).ok()).unwrap_or_default();
        let content = turn.output.as_ref().and_then(Value::as_str).map(str::to_owned);
        messages.push(ModelMessage::Assistant { content, tool_calls: calls.clone() });
        for call in calls {
            let answer = steps.iter().find(|s| s.seq > turn.seq && s.call_id.as_deref() == Some(&call.id));
            let content = match answer {
                Some(step) if step.status == "completed" => step.output.clone().unwrap_or(Value::Null).to_string(),
                Some(step) => json!({"error": step.error}).to_string(),
                None => continue,
            };
            messages.push(ModelMessage::Tool { tool_call_id: call.id, content });
        }
    }
    messages
}

/// Whether to go on with the run.
enum Next {
    Again,
    Stop,
}

impl AgentService {
    pub(crate) async fn advance(&self, tenant: TenantId, id: Uuid) -> Result<(), Error> {
        while let Next::Again = self.step(tenant, id).await? {}
        Ok(())
    }

    /// One step of the run, or its end.
    async fn step(&self, tenant: TenantId, id: Uuid) -> Result<Next, Error> {
        let mut conn = self.conn(tenant).await?;
        let Some(run) = row(&mut conn, tenant, id).await? else { return Ok(Next::Stop) };
        let now = self.clock.now();
        match run.status.as_str() {
            "queued" => {
                diesel::sql_query(
                    "UPDATE agent_runs SET status = 'running', started_at = $3
                     WHERE tenant_id = $1 AND id = $2 AND status = 'queued'",
                )
                .bind::<BigInt, _>(tenant.0)
                .bind::<SqlUuid, _>(id)
                .bind::<Timestamptz, _>(now)
                .prepared()
                .execute(&mut conn)
                .await?;
                return Ok(Next::Again);
            }
            "running" => {}
            _ => return Ok(Next::Stop),
        }
        let steps = steps(&mut conn, tenant, id, 0).await?;
        if let Some(step) = steps.iter().find(|s| s.status == "running") {
            // its process stopped while it ran: what it did is unknown, and it is not repeated
            let error = stored_error(
                "interrupted",
                "The run stopped while this step ran; it was not repeated, and whether it took effect is unknown.",
            );
            self.finish(&mut conn, tenant, id, step.seq, "interrupted", None, Some(error)).await?;
            return Ok(Next::Again);
        }
        // the time limit counts the run's own time, not its waits for a person's approval
        let elapsed = now - run.started_at.unwrap_or(now) - time::Duration::milliseconds(run.waited_ms);
        let limit = time::Duration::seconds(i64::from(run.max_seconds));
        if elapsed >= limit {
            let message = format!("The run reached its time limit of {} seconds.", run.max_seconds);
            return self.end(&mut conn, &run, "failed", None, Some(stored_error("time_limit", message))).await;
        }
        if let Some(max) = run.max_spend_minor.filter(|max| run.cost_minor >= *max) {
            let message = format!(
                "The run reached its spend limit of {} {}.",
                kernel::money::format_minor(max, &run.currency),
                run.currency
            );
            return self.end(&mut conn, &run, "failed", None, Some(stored_error("spend_limit", message))).await;
        }
        let runner = match self.runner(&run).await {
            Ok(runner) => runner,
            Err(e) if e.is(ErrorKind::Unauthenticated) || e.is(ErrorKind::Forbidden) => {
                let error =
                    stored_error("credential_refused", format!("The run's credential was refused: {}", e.message));
                return self.end(&mut conn, &run, "failed", None, Some(error)).await;
            }
            Err(e) => return Err(e),
        };
        let new_step = |steps: &[Step]| steps.len() as i32 >= run.max_steps;
        match plan(&steps) {
            Plan::Done(output) => self.end(&mut conn, &run, "completed", output, None).await,
            Plan::Turn if new_step(&steps) => self.step_limit(&mut conn, &run).await,
            Plan::Call { approved: None, .. } if new_step(&steps) => self.step_limit(&mut conn, &run).await,
            Plan::Turn => {
                let seq = steps.len() as i32 + 1;
                self.begin(&mut conn, tenant, id, seq, "model_turn", &run.model, None, None, "running").await?;
                drop(conn);
                self.turn(&run, &steps, seq, elapsed).await
            }
            Plan::Call { call, approved } => {
                let waits = run.require_approval.contains(&call.name);
                let seq = match approved {
                    Some(seq) => {
                        self.restart(&mut conn, tenant, id, seq).await?;
                        seq
                    }
                    None if waits => return self.park(&mut conn, &run, steps.len() as i32 + 1, &call).await,
                    None => {
                        let seq = steps.len() as i32 + 1;
                        let args = Some(&call.arguments);
                        self.begin(
                            &mut conn,
                            tenant,
                            id,
                            seq,
                            "tool_call",
                            &call.name,
                            Some(&call.id),
                            args,
                            "running",
                        )
                        .await?;
                        seq
                    }
                };
                drop(conn);
                self.call(&run, &runner, seq, call).await
            }
        }
    }

    /// The credential that submitted the run, as it is now.
    async fn runner(&self, run: &Row) -> Result<Runner, Error> {
        let tenant = TenantId(run.tenant_id);
        let kind = credential_kind(&run.credential).ok_or_else(|| Error::internal("a run's credential kind"))?;
        let mut conn = store::connect_global(&self.pool).await?;
        let caller = match kind {
            CredentialKind::RestKey => {
                accounts::keys::current(&mut conn, ApiKeyId(run.credential_id), self.clock.now()).await?
            }
            kind => accounts::mcp_connections::current(&mut conn, kind, run.credential_id).await?,
        };
        if caller.tenant_id != tenant {
            return Err(Error::internal("a run's credential is another tenant's"));
        }
        caller.require_issuer()?;
        Ok(Runner { caller, scopes: run.scopes.clone() })
    }

    /// Records a step as started (committed before it runs).
    #[allow(clippy::too_many_arguments)]
    async fn begin(
        &self,
        conn: &mut store::Conn,
        tenant: TenantId,
        run: Uuid,
        seq: i32,
        kind: &str,
        name: &str,
        call_id: Option<&str>,
        arguments: Option<&Value>,
        status: &str,
    ) -> Result<(), Error> {
        diesel::sql_query(
            "INSERT INTO agent_steps (tenant_id, run_id, seq, kind, status, name, call_id, arguments, started_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<SqlUuid, _>(run)
        .bind::<Integer, _>(seq)
        .bind::<Text, _>(kind)
        .bind::<Text, _>(status)
        .bind::<Text, _>(name)
        .bind::<Nullable<Text>, _>(call_id)
        .bind::<Nullable<Jsonb>, _>(arguments)
        .bind::<Timestamptz, _>(self.clock.now())
        .prepared()
        .execute(conn)
        .await?;
        Ok(())
    }

    /// An approved call's step, started.
    async fn restart(&self, conn: &mut store::Conn, tenant: TenantId, run: Uuid, seq: i32) -> Result<(), Error> {
        diesel::sql_query(
            "UPDATE agent_steps SET status = 'running', started_at = $4
             WHERE tenant_id = $1 AND run_id = $2 AND seq = $3 AND status = 'approved'",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<SqlUuid, _>(run)
        .bind::<Integer, _>(seq)
        .bind::<Timestamptz, _>(self.clock.now())
        .execute(conn)
        .await?;
        Ok(())
    }

    /// Records a step's end (its output or error) and, for a step that ends running, nothing
    /// else: usage is [`AgentService::charge`]'s.
    #[allow(clippy::too_many_arguments)]
    async fn finish(
        &self,
        conn: &mut store::Conn,
        tenant: TenantId,
        run: Uuid,
        seq: i32,
        status: &str,
        output: Option<Value>,
        error: Option<Value>,
    ) -> Result<(), Error> {
        diesel::sql_query(
            "UPDATE agent_steps SET status = $4, output = $5, error = $6, finished_at = $7
             WHERE tenant_id = $1 AND run_id = $2 AND seq = $3",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<SqlUuid, _>(run)
        .bind::<Integer, _>(seq)
        .bind::<Text, _>(status)
        .bind::<Nullable<Jsonb>, _>(output)
        .bind::<Nullable<Jsonb>, _>(error)
        .bind::<Timestamptz, _>(self.clock.now())
        .prepared()
        .execute(conn)
        .await?;
        Ok(())
    }

    /// Takes a step's price from the wallet and adds its usage to the run's, together: false
    /// when a prepaid wallet could not pay (then nothing is taken and the step is free).
    async fn charge(
        &self,
        conn: &mut store::Conn,
        run: &Row,
        seq: i32,
        tokens: (i64, i64),
        tool_calls: i32,
        cost: i64,
    ) -> Result<bool, Error> {
        let tenant = TenantId(run.tenant_id);
        let paid = accounts::wallet::debit(conn, tenant, cost, &format!("agent run {}", run.id)).await?.is_ok();
        let cost = if paid { cost } else { 0 };
        diesel::sql_query(
            "WITH step AS (
                 UPDATE agent_steps SET input_tokens = $4, output_tokens = $5, cost_minor = $7
                 WHERE tenant_id = $1 AND run_id = $2 AND seq = $3)
             UPDATE agent_runs SET input_tokens = input_tokens + $4, output_tokens = output_tokens + $5,
                 tool_calls = tool_calls + $6, cost_minor = cost_minor + $7
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<SqlUuid, _>(run.id)
        .bind::<Integer, _>(seq)
        .bind::<BigInt, _>(tokens.0)
        .bind::<BigInt, _>(tokens.1)
        .bind::<Integer, _>(tool_calls)
        .bind::<BigInt, _>(cost)
        .prepared()
        .execute(conn)
        .await?;
        Ok(paid)
    }

    /// One model turn: the conversation so far and the run's tools, within the time it has
    /// left; recorded and charged as it ends. A turn that calls nothing ends the run.
    async fn turn(&self, run: &Row, steps: &[Step], seq: i32, elapsed: time::Duration) -> Result<Next, Error> {
        let tenant = TenantId(run.tenant_id);
        let messages = conversation(run, steps);
        let tools = self.toolbox()?.select(&run.tools).map_err(|_| Error::internal("a run's tool went away"))?;
        let left = time::Duration::seconds(i64::from(run.max_seconds)) - elapsed;
        let left = std::time::Duration::try_from(left).unwrap_or_default();
        let request = TurnRequest { model: &run.model, messages: &messages, tools: &tools };
        let answer = tokio::time::timeout(left, self.models.turn(request)).await;
        let mut conn = self.conn(tenant).await?;
        let turn: Turn = match answer {
            Ok(Ok(turn)) => turn,
            failed => {
                let error = match failed {
                    Err(_) => stored_error(
                        "time_limit",
                        format!("The run reached its time limit of {} seconds during a model turn.", run.max_seconds),
                    ),
                    Ok(Err(ModelError::Unavailable(why))) => stored_error("model_unavailable", why),
                    Ok(Err(ModelError::Refused(why))) => stored_error("model_refused", why),
                    Ok(Ok(_)) => return Err(Error::internal("a turn both answered and failed")),
                };
                self.finish(&mut conn, tenant, run.id, seq, "failed", None, Some(error.clone())).await?;
                return self.end(&mut conn, run, "failed", None, Some(error)).await;
            }
        };
        let cost = self.config.rates.turn(turn.usage);
        let calls = serde_json::to_value(&turn.tool_calls).map_err(Error::internal)?;
        let text = turn.text.clone();
        let paid = conn
            .transaction::<_, Error, _>(async |conn| {
                diesel::sql_query(
                    "UPDATE agent_steps SET status = 'completed', output = $4, tool_calls = $5, name = $6,
                         finished_at = $7
                     WHERE tenant_id = $1 AND run_id = $2 AND seq = $3",
                )
                .bind::<BigInt, _>(tenant.0)
                .bind::<SqlUuid, _>(run.id)
                .bind::<Integer, _>(seq)
                .bind::<Nullable<Jsonb>, _>(text.clone().map(Value::String))
                .bind::<Jsonb, _>(&calls)
                .bind::<Text, _>(if turn.model.is_empty() { &run.model } else { &turn.model })
                .bind::<Timestamptz, _>(self.clock.now())
                .prepared()
                .execute(conn)
                .await?;
                self.charge(conn, run, seq, (turn.usage.input_tokens, turn.usage.output_tokens), 0, cost).await
            })
            .await?;
        if !paid {
            return self.unpaid(&mut conn, run).await;
        }
        if turn.tool_calls.is_empty() {
            return self.end(&mut conn, run, "completed", text, None).await;
        }
        Ok(Next::Again)
    }

    /// One tool call, as the run's credential; its answer or refusal is what the model reads
    /// next. A tool the run was not given is refused like any other call.
    async fn call(&self, run: &Row, runner: &Runner, seq: i32, call: ToolCall) -> Result<Next, Error> {
        let tenant = TenantId(run.tenant_id);
        let done = if run.tools.contains(&call.name) {
            self.toolbox()?.call(runner, &call.name, call.arguments).await
        } else {
            Err(Error::not_found(format!("Tool {} (this run may call: {})", call.name, run.tools.join(", "))))
        };
        let (status, output, error) = match done {
            Ok(result) => ("completed", Some(result), None),
            Err(e) => {
                if e.is(ErrorKind::Internal) {
                    tracing::error!(run = %run.id, tool = %call.name, error = %e, "an agent run's tool call failed");
                }
                ("failed", None, Some(refusal(&e)))
            }
        };
        let mut conn = self.conn(tenant).await?;
        let cost = self.config.rates.tool_call_minor;
        let paid = conn
            .transaction::<_, Error, _>(async |conn| {
                self.finish(conn, tenant, run.id, seq, status, output, error).await?;
                self.charge(conn, run, seq, (0, 0), 1, cost).await
            })
            .await?;
        if !paid {
            return self.unpaid(&mut conn, run).await;
        }
        Ok(Next::Again)
    }

    /// A call that waits for a person: recorded `awaiting_approval`, the run `requires_action`
    /// until an answer or its expiry.
    async fn park(&self, conn: &mut store::Conn, run: &Row, seq: i32, call: &ToolCall) -> Result<Next, Error> {
        let tenant = TenantId(run.tenant_id);
        let now = self.clock.now();
        let expires = now + self.config.approval_ttl;
        conn.transaction::<_, Error, _>(async |conn| {
            let args = Some(&call.arguments);
            self.begin(conn, tenant, run.id, seq, "tool_call", &call.name, Some(&call.id), args, "awaiting_approval")
                .await?;
            diesel::sql_query(
                "UPDATE agent_runs SET status = 'requires_action', expires_at = $3
                 WHERE tenant_id = $1 AND id = $2 AND status = 'running'",
            )
            .bind::<BigInt, _>(tenant.0)
            .bind::<SqlUuid, _>(run.id)
            .bind::<Timestamptz, _>(expires)
            .execute(conn)
            .await?;
            let options = Enqueue { tenant_id: Some(tenant), run_at: Some(expires), ..Enqueue::default() };
            store::jobs::enqueue(conn, &Expire { run: run.id }, options).await?;
            Ok(())
        })
        .await?;
        Ok(Next::Stop)
    }

    async fn step_limit(&self, conn: &mut store::Conn, run: &Row) -> Result<Next, Error> {
        let message = format!("The run reached its limit of {} steps.", run.max_steps);
        self.end(conn, run, "failed", None, Some(stored_error("step_limit", message))).await
    }

    async fn unpaid(&self, conn: &mut store::Conn, run: &Row) -> Result<Next, Error> {
        let message = "The wallet's balance cannot pay for the run's next step; top it up and submit the task again.";
        self.end(conn, run, "failed", None, Some(stored_error("insufficient_balance", message))).await
    }

    /// Ends a running run with its outcome and emits `run.completed` or `run.failed`, together;
    /// a run cancelled meanwhile stays cancelled.
    async fn end(
        &self,
        conn: &mut store::Conn,
        run: &Row,
        status: &str,
        output: Option<String>,
        error: Option<Value>,
    ) -> Result<Next, Error> {
        let tenant = TenantId(run.tenant_id);
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let ended = diesel::sql_query(
                "UPDATE agent_runs SET status = $3, output = $4, error = $5, finished_at = $6
                 WHERE tenant_id = $1 AND id = $2 AND status = 'running'",
            )
            .bind::<BigInt, _>(tenant.0)
            .bind::<SqlUuid, _>(run.id)
            .bind::<Text, _>(status)
            .bind::<Nullable<Text>, _>(output)
            .bind::<Nullable<Jsonb>, _>(error)
            .bind::<Timestamptz, _>(now)
            .prepared()
            .execute(conn)
            .await?;
            if ended == 1 {
                let event = if status == "completed" { "run.completed" } else { "run.failed" };
                let ended = row(conn, tenant, run.id).await?.ok_or_else(|| Error::internal("a run just ended"))?;
                let view = ended.view(None);
                let payload = json!({
                    "run_uuid": view.run_uuid,
                    "status": view.status,
                    "output": view.output,
                    "error": view.error,
                    "usage": view.usage,
                    "metadata": view.metadata,
                    "created_at": view.created_at,
                    "finished_at": view.finished_at,
                });
                store::outbox::emit(conn, tenant, event, payload, now).await?;
            }
            Ok(())
        })
        .await?;
        Ok(Next::Stop)
    }
}

/// A tool's refusal as the run keeps it and the model reads it: the code, message, field
/// errors and reason an MCP client would see (an internal cause is not shown).
fn refusal(error: &Error) -> Value {
    if error.is(ErrorKind::Internal) {
        return stored_error("internal_error", "The tool failed on our side.");
    }
    let mut body = stored_error(error.kind.code(), error.message.clone());
    if !error.errors.is_empty() {
        body["errors"] = json!(error.errors);
    }
    if let Some(reason) = &error.reason {
        body["reason"] = reason.clone().into();
    }
    // what the refusal details (the scopes a grant misses...), as an MCP client reads them
    for (key, value) in &error.details {
        if let Some(members) = body.as_object_mut() {
            members.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use time::OffsetDateTime;

    use super::*;

    fn step(seq: i32, kind: &str, status: &str, call_id: Option<&str>, tool_calls: Option<Value>) -> Step {
        Step {
            seq,
            kind: kind.into(),
            status: status.into(),
            name: "x".into(),
            call_id: call_id.map(str::to_owned),
            arguments: None,
            output: Some(json!("text")),
            tool_calls,
            error: None,
            input_tokens: 0,
            output_tokens: 0,
            cost_minor: 0,
            started_at: OffsetDateTime::UNIX_EPOCH,
            finished_at: None,
            duration_ms: None,
        }
    }

    fn calls(ids: &[&str]) -> Option<Value> {
        Some(Value::Array(ids.iter().map(|id| json!({"id": id, "name": "find_leads", "arguments": {}})).collect()))
    }

    #[test]
    fn each_call_of_the_last_turn_runs_once_then_the_model_is_asked_again() {
        assert_eq!(plan(&[]), Plan::Turn);
        let turn = step(1, "model_turn", "completed", None, calls(&["a", "b"]));
        let next = |steps: &[Step]| match plan(steps) {
            Plan::Call { call, approved } => format!("{}{approved:?}", call.id),
            other => format!("{other:?}"),
        };
        assert_eq!(next(std::slice::from_ref(&turn)), "aNone");
        let a = step(2, "tool_call", "interrupted", Some("a"), None);
        assert_eq!(next(&[turn.clone(), a.clone()]), "bNone", "an interrupted call is not run again");
        let b = step(3, "tool_call", "approved", Some("b"), None);
        assert_eq!(next(&[turn.clone(), a.clone(), b]), "bSome(3)");
        let b = step(3, "tool_call", "denied", Some("b"), None);
        assert_eq!(plan(&[turn.clone(), a.clone(), b.clone()]), Plan::Turn);
        // an interrupted turn is asked again as a new step
        let lost = step(4, "model_turn", "interrupted", None, None);
        assert_eq!(plan(&[turn, a, b, lost]), Plan::Turn);
        let last = step(5, "model_turn", "completed", None, Some(json!([])));
        assert_eq!(plan(&[last]), Plan::Done(Some("text".into())));
    }
}
