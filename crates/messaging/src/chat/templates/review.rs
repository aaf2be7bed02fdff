//! The review of templates: create, edit, submit (inline, then a job while the provider cannot
//! be reached), refresh, the 15-minute poll, the provider's webhook, sync, deployments, delete.
//! No connection is held while the provider answers; every state change and its
//! `template.status_changed` commit together.

use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, ErrorKind, Permission, TenantId};
use providers::SendError;
use providers::chat::{ChatTemplateStatus, ProviderTemplate, TemplateOutcome, TemplateSubmission};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::{Duration, OffsetDateTime};

use super::body::{self, TemplateButton, TemplateCreate, TemplatePatch};
use super::{ChatStatus, Row, Template, read, row, status_changed};
use crate::MessagingService;
use crate::channels::{self, Channel};
use crate::chat::accounts::AccountRow;
use crate::schema::{chat_accounts, chat_templates};

/// How often a template in review is looked at (contract: the 15-minute poll).
pub const POLL_EVERY: Duration = Duration::minutes(15);
/// When the queued submission of a template first looks again, should the inline one not finish.
const FALLBACK_AFTER: Duration = Duration::minutes(1);

/// Submits a template that could not reach the provider; retried with the queue's backoff.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SubmitTemplate {
    pub tenant_id: TenantId,
    pub template_id: i64,
}

impl Job for SubmitTemplate {
    const NAME: &'static str = "messaging.submit_template";
    // about a day and a half of the queue's backoff
    const MAX_ATTEMPTS: i32 = 40;
    type State = MessagingService;

    async fn run(self, state: Arc<MessagingService>, _ctx: JobContext) -> Result<(), JobError> {
        let mut conn = state.conn(self.tenant_id).await?;
        let (row, _) = row(&mut conn, self.tenant_id, self.template_id).await?;
        drop(conn);
        if !row.queued {
            return Ok(());
        }
        let after = state.submit_now(self.tenant_id, self.template_id).await?;
        if after.submission.queued {
            return Err(JobError("the chat provider could not be reached; the template stays queued".into()));
        }
        Ok(())
    }
}

/// Reads the review state of a template in review, every 15 minutes until it is judged.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PollTemplate {
    pub tenant_id: TenantId,
    pub template_id: i64,
}

impl Job for PollTemplate {
    const NAME: &'static str = "messaging.poll_template";
    type State = MessagingService;

    async fn run(self, state: Arc<MessagingService>, _ctx: JobContext) -> Result<(), JobError> {
        let (template, _) = match state.refresh_now(self.tenant_id, self.template_id).await {
            Ok(found) => found,
            // deleted since: nothing left to poll
            Err(e) if e.is(ErrorKind::NotFound) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        if template.chat_status.as_deref() == Some("in_review") {
            let mut conn = state.conn(self.tenant_id).await?;
            poll_later(&mut conn, self.tenant_id, self.template_id, state.clock.now()).await?;
        }
        Ok(())
    }
}

fn dedupe(kind: &str, id: i64) -> Option<String> {
    Some(format!("{kind}:{id}"))
}

async fn poll_later(conn: &mut store::Conn, tenant: TenantId, id: i64, now: OffsetDateTime) -> Result<(), Error> {
    let job = PollTemplate { tenant_id: tenant, template_id: id };
    let options = Enqueue {
        tenant_id: Some(tenant),
        run_at: Some(now + POLL_EVERY),
        dedupe_key: dedupe("poll", id),
        ..Default::default()
    };
    store::jobs::enqueue(conn, &job, options).await?;
    Ok(())
}

/// The business account a create names (`waba_id`), or the workspace's only one.
async fn account_for(conn: &mut store::Conn, tenant: TenantId, waba_id: Option<&str>) -> Result<AccountRow, Error> {
    let accounts: Vec<AccountRow> = chat_accounts::table
        .filter(chat_accounts::tenant_id.eq(tenant.0))
        .order(chat_accounts::waba_id)
        .select(AccountRow::as_select())
        .load(conn)
        .await?;
    match waba_id.map(str::trim).filter(|w| !w.is_empty()) {
        Some(waba) => accounts.into_iter().find(|a| a.waba_id == waba).ok_or_else(|| {
            Error::field("waba_id", "The waba_id is not a chat business account of this account (GET /chat/accounts).")
        }),
        None => match <[AccountRow]>::len(&accounts) {
            0 => Err(Error::validation("No chat account is configured for this account.")),
            1 => Ok(accounts.into_iter().next().ok_or_else(|| Error::internal("an account vanished"))?),
            _ => {
                let list: Vec<String> = accounts.iter().map(|a| a.waba_id.clone()).collect();
                Err(Error::field(
                    "waba_id",
                    format!("This account has several chat business accounts: name one of {}.", list.join(", ")),
                )
                .with_detail("waba_ids", list))
            }
        },
    }
}

async fn channel_of(conn: &mut store::Conn, tenant: TenantId, account: i64) -> Result<(AccountRow, Channel), Error> {
    let account: AccountRow = chat_accounts::table
        .filter(chat_accounts::tenant_id.eq(tenant.0))
        .filter(chat_accounts::id.eq(account))
        .select(AccountRow::as_select())
        .first(conn)
        .await?;
    let channel = channels::get(conn, tenant, account.channel_id).await?;
    Ok((account, channel))
}

fn submission(row: &Row) -> TemplateSubmission {
    TemplateSubmission {
        name: row.name.clone(),
        language: row.language.clone(),
        category: row.category.to_ascii_uppercase(),
        components: row.components.as_array().cloned().unwrap_or_default(),
    }
}

fn provider_failure(e: SendError) -> Error {
    Error::new(ErrorKind::ProviderFailure, format!("The chat provider: {e}"))
}

/// The flat description of stored components, for a patch of some flat fields.
fn flat_of(components: &[Value]) -> TemplateCreate {
    let mut flat = TemplateCreate::default();
    let mut samples = std::collections::BTreeMap::new();
    for component in components {
        let text = component["text"].as_str().map(str::to_owned);
        match component["type"].as_str().unwrap_or_default().to_ascii_uppercase().as_str() {
            "HEADER" => {
                let names = body::placeholders(text.as_deref().unwrap_or_default());
                for (name, sample) in
                    names.iter().zip(component["example"]["header_text"].as_array().into_iter().flatten())
                {
                    samples.insert(name.clone(), sample.clone());
                }
                flat.header_text = text;
            }
            "BODY" => {
                let names = body::placeholders(text.as_deref().unwrap_or_default());
                let given = component["example"]["body_text"][0].as_array().cloned().unwrap_or_default();
                for (name, sample) in names.iter().zip(given) {
                    samples.insert(name.clone(), sample);
                }
                flat.body = text;
            }
            "FOOTER" => flat.footer = text,
            "BUTTONS" => {
                let buttons = component["buttons"].as_array().into_iter().flatten().map(|b| {
                    let kind = match b["type"].as_str().unwrap_or_default() {
                        "URL" => "url",
                        "PHONE_NUMBER" => "phone",
                        _ => "quick reply",
                    };
                    TemplateButton {
                        kind: Some(kind.to_owned()),
                        text: b["text"].as_str().map(str::to_owned),
                        url: b["url"].as_str().map(str::to_owned),
                        phone_number: b["phone_number"].as_str().map(str::to_owned),
                        example: b["example"][0].as_str().map(str::to_owned),
                    }
                });
                flat.buttons = Some(buttons.collect());
            }
            _ => {}
        }
    }
    flat.variable_samples = Some(samples);
    flat
}

impl MessagingService {
    /// `POST /chat/templates`: saved, and (unless `submit` is false) submitted for review.
    pub async fn create_template(&self, caller: &Caller, body: TemplateCreate) -> Result<Template, Error> {
        caller.require_issuer()?;
        caller.require(Permission::TEMPLATES_MANAGE)?;
        let tenant = caller.tenant_id;
        let name = body.name.as_deref().map(str::trim).unwrap_or_default().to_owned();
        body::check_name(&name)?;
        let language = body.language.as_deref().map(str::trim).filter(|l| !l.is_empty()).unwrap_or("en").to_owned();
        if language.chars().count() > 20 {
            return Err(Error::field("language", "The language may not be greater than 20 characters."));
        }
        let Some(category) = body.category.as_deref() else {
            return Err(Error::field("category", "The category is required: utility, marketing or authentication."));
        };
        let category = body::check_category(category)?;
        let display_name = body.display_name.as_deref().map(str::trim).filter(|d| !d.is_empty()).map(str::to_owned);
        if display_name.as_deref().is_some_and(|d| d.chars().count() > 191) {
            return Err(Error::field("display_name", "The display_name may not be greater than 191 characters."));
        }
        let components = body::components(&body)?;
        let submit = body.submit.unwrap_or(true);
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        let account = account_for(&mut conn, tenant, body.waba_id.as_deref()).await?;
        let id = conn
            .transaction(async |conn| {
                let inserted = diesel::insert_into(chat_templates::table)
                    .values((
                        chat_templates::tenant_id.eq(tenant.0),
                        chat_templates::account_id.eq(account.id),
                        chat_templates::name.eq(&name),
                        chat_templates::language.eq(&language),
                        chat_templates::category.eq(&category),
                        chat_templates::display_name.eq(&display_name),
                        chat_templates::components.eq(Value::Array(components.clone())),
                        chat_templates::queued.eq(submit),
                        chat_templates::submission_message
                            .eq((!submit).then_some("Saved as a draft: submit it when it is ready.")),
                        chat_templates::created_at.eq(now),
                        chat_templates::updated_at.eq(now),
                    ))
                    .returning(chat_templates::id)
                    .get_result::<i64>(conn)
                    .await;
                let id = match inserted {
                    Err(e) if store::is_unique_violation(&e, None) => {
                        return Err(Error::conflict(format!(
                            "The business account {} already has the template {name} in {language}.",
                            account.waba_id
                        )));
                    }
                    other => other?,
                };
                if submit {
                    fallback(conn, tenant, id, now).await?;
                }
                Ok(id)
            })
            .await?;
        drop(conn);
        if submit {
            return self.submit_now(tenant, id).await;
        }
        read(&mut *self.conn(tenant).await?, tenant, id).await
    }

    /// `PATCH /chat/templates/{id}`: a content or category change goes to review as an edit;
    /// while a review is ongoing it is held here and goes out on the next submit.
    pub async fn update_template(&self, caller: &Caller, id: i64, patch: TemplatePatch) -> Result<Template, Error> {
        caller.require_issuer()?;
        caller.require(Permission::TEMPLATES_MANAGE)?;
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        let (current, waba) = row(&mut conn, tenant, id).await?;
        let mut errors = kernel::error::FieldErrors::new();
        if patch.name.as_deref().is_some_and(|n| n.trim() != current.name) {
            errors.add("name", "The name cannot change: create another template.");
        }
        if patch.language.as_deref().is_some_and(|l| l.trim() != current.language) {
            errors.add("language", "The language cannot change: create the template in the other language.");
        }
        if patch.waba_id.as_deref().is_some_and(|w| w.trim() != waba) {
            errors.add("waba_id", "The business account cannot change: use POST .../deployments.");
        }
        errors.finish()?;
        let category =
            patch.category.as_deref().map(body::check_category).transpose()?.unwrap_or(current.category.clone());
        let components = if patch.components.is_some() {
            body::components(&patch)?
        } else if body::describes_content(&patch) {
            // a flat patch rebuilds the components from the stored ones with its fields over them
            let mut flat = flat_of(current.components.as_array().map(Vec::as_slice).unwrap_or_default());
            let mut samples = flat.variable_samples.take().unwrap_or_default();
            samples.extend(patch.variable_samples.clone().unwrap_or_default());
            flat.variable_samples = Some(samples);
            flat.body = patch.body.clone().or(flat.body);
            flat.header_text = patch.header_text.clone().or(flat.header_text);
            flat.footer = patch.footer.clone().or(flat.footer);
            flat.buttons = patch.buttons.clone().or(flat.buttons);
            body::components(&flat)?
        } else {
            current.components.as_array().cloned().unwrap_or_default()
        };
        let display_name = match &patch.display_name {
            Some(d) if d.chars().count() > 191 => {
                return Err(Error::field("display_name", "The display_name may not be greater than 191 characters."));
            }
            Some(d) => Some(d.trim().to_owned()).filter(|d| !d.is_empty()),
            None => current.display_name.clone(),
        };
        let changed = Value::Array(components.clone()) != current.components || category != current.category;
        let draft = current.chat_status.is_none() && !current.queued;
        let hold = changed && current.in_review();
        let resubmit = changed && !draft && !hold;
        conn.transaction(async |conn| {
            diesel::update(chat_templates::table.find(id))
                .set((
                    chat_templates::category.eq(&category),
                    chat_templates::components.eq(Value::Array(components.clone())),
                    chat_templates::display_name.eq(&display_name),
                    chat_templates::pending_edit.eq(current.pending_edit || hold),
                    chat_templates::queued.eq(current.queued || resubmit),
                    chat_templates::updated_at.eq(now),
                ))
                .execute(conn)
                .await?;
            if resubmit {
                fallback(conn, tenant, id, now).await?;
            }
            Ok::<_, Error>(())
        })
        .await?;
        drop(conn);
        if resubmit {
            return self.submit_now(tenant, id).await;
        }
        read(&mut *self.conn(tenant).await?, tenant, id).await
    }

    /// `POST /chat/templates/{id}/submit`: a draft, a rejected template, one still pending, or an
    /// edit held during a review goes to the provider; 409 when there is nothing to submit.
    pub async fn submit_template(&self, caller: &Caller, id: i64) -> Result<Template, Error> {
        caller.require_issuer()?;
        caller.require(Permission::TEMPLATES_MANAGE)?;
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        let (current, _) = row(&mut conn, tenant, id).await?;
        if current.status != "active" {
            return Err(Error::conflict("The template is archived: create it again."));
        }
        let due = current.pending_edit
            || current.queued
            || matches!(current.chat_status.as_deref(), None | Some("rejected" | "pending"));
        if !due {
            return Err(Error::conflict(format!(
                "Nothing to submit: the template is {} and has no change waiting.",
                current.chat_status.as_deref().unwrap_or("a draft")
            )));
        }
        conn.transaction(async |conn| {
            diesel::update(chat_templates::table.find(id))
                .set((chat_templates::queued.eq(true), chat_templates::updated_at.eq(now)))
                .execute(conn)
                .await?;
            fallback(conn, tenant, id, now).await
        })
        .await?;
        drop(conn);
        self.submit_now(tenant, id).await
    }

    /// Sends a queued template to the provider (a create, or an edit once it has the provider's
    /// id) and records the answer.
    pub(crate) async fn submit_now(&self, tenant: TenantId, id: i64) -> Result<Template, Error> {
        let (current, account, channel) = {
            let mut conn = self.conn(tenant).await?;
            let (current, _) = row(&mut conn, tenant, id).await?;
            let (account, channel) = channel_of(&mut conn, tenant, current.account_id).await?;
            (current, account, channel)
        };
        let gateway = self.gateways.chat(&channel)?;
        let sent = submission(&current);
        let answer = match &current.chat_template_id {
            Some(provider_id) => gateway.edit_template(provider_id, &sent).await,
            None => {
                // a submission whose answer was lost may have reached the provider: adopt it
                match gateway.templates(&account.waba_id).await {
                    Ok(known) => {
                        match known.into_iter().find(|t| t.name == current.name && t.language == current.language) {
                            Some(found) => Ok(TemplateOutcome::Accepted { id: found.id, status: found.status }),
                            None => gateway.create_template(&account.waba_id, &sent).await,
                        }
                    }
                    Err(e) => Err(e),
                }
            }
        };
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        conn.transaction(async |conn| {
            let (before, waba) = row(conn, tenant, id).await?;
            let update = diesel::update(chat_templates::table.find(id));
            let after: Row = match &answer {
                Ok(TemplateOutcome::Accepted { id: provider_id, status }) => {
                    let status = ChatStatus::of_provider(status).unwrap_or(ChatStatus::InReview);
                    update
                        .set((
                            chat_templates::chat_template_id.eq(provider_id),
                            chat_templates::chat_status.eq(status.as_str()),
                            chat_templates::rejection_reason.eq(None::<String>),
                            chat_templates::submitted.eq(true),
                            chat_templates::queued.eq(false),
                            chat_templates::pending_edit.eq(false),
                            chat_templates::submission_message.eq("Submitted for review."),
                            chat_templates::updated_at.eq(now),
                        ))
                        .returning(Row::as_returning())
                        .get_result(conn)
                        .await?
                }
                Ok(TemplateOutcome::Rejected { reason }) => {
                    update
                        .set((
                            chat_templates::chat_status.eq(ChatStatus::Rejected.as_str()),
                            chat_templates::rejection_reason.eq(reason),
                            chat_templates::submitted.eq(true),
                            chat_templates::queued.eq(false),
                            chat_templates::pending_edit.eq(false),
                            chat_templates::submission_message
                                .eq("Rejected by the provider: fix it, then POST .../submit."),
                            chat_templates::updated_at.eq(now),
                        ))
                        .returning(Row::as_returning())
                        .get_result(conn)
                        .await?
                }
                Err(error) => {
                    tracing::warn!(template = id, %error, "a template could not reach the chat provider; queued");
                    update
                        .set((
                            chat_templates::chat_status.eq(ChatStatus::Pending.as_str()),
                            chat_templates::queued.eq(true),
                            chat_templates::submission_message.eq(format!(
                                "The chat provider could not be reached ({error}); the submission is retried automatically."
                            )),
                            chat_templates::updated_at.eq(now),
                        ))
                        .returning(Row::as_returning())
                        .get_result(conn)
                        .await?
                }
            };
            status_changed(conn, &before, &after, &waba, now).await?;
            if after.chat_status.as_deref() == Some("in_review") {
                poll_later(conn, tenant, id, now).await?;
            }
            Ok::<_, Error>(())
        })
        .await?;
        read(&mut conn, tenant, id).await
    }

    /// `POST /chat/templates/{id}/refresh` (view permission): the provider's state now;
    /// `found_on_chat` is false when the provider does not have it.
    pub async fn refresh_template(&self, caller: &Caller, id: i64) -> Result<(Template, bool), Error> {
        caller.require_issuer()?;
        caller.require(Permission::TEMPLATES_VIEW)?;
        // the template is the caller's before the provider is asked
        read(&mut *self.conn(caller.tenant_id).await?, caller.tenant_id, id).await?;
        self.refresh_now(caller.tenant_id, id).await
    }

    pub(crate) async fn refresh_now(&self, tenant: TenantId, id: i64) -> Result<(Template, bool), Error> {
        let (current, account, channel) = {
            let mut conn = self.conn(tenant).await?;
            let (current, _) = row(&mut conn, tenant, id).await?;
            let (account, channel) = channel_of(&mut conn, tenant, current.account_id).await?;
            (current, account, channel)
        };
        let gateway = self.gateways.chat(&channel)?;
        let found = match &current.chat_template_id {
            Some(provider_id) => gateway.template(provider_id).await.map_err(provider_failure)?,
            None => gateway
                .templates(&account.waba_id)
                .await
                .map_err(provider_failure)?
                .into_iter()
                .find(|t| t.name == current.name && t.language == current.language),
        };
        let mut conn = self.conn(tenant).await?;
        if let Some(found) = &found {
            let now = self.clock.now();
            conn.transaction(async |conn| adopt(conn, tenant, id, found, now).await.map(|_| ())).await?;
        }
        Ok((read(&mut conn, tenant, id).await?, found.is_some()))
    }

    /// `DELETE /chat/templates/{id}`: removed from the provider (this language), the row
    /// archived; `permanent` deletes the row too.
    pub async fn delete_template(&self, caller: &Caller, id: i64, permanent: bool) -> Result<Option<Template>, Error> {
        caller.require_issuer()?;
        caller.require(Permission::TEMPLATES_MANAGE)?;
        let tenant = caller.tenant_id;
        let (current, account, channel) = {
            let mut conn = self.conn(tenant).await?;
            let (current, _) = row(&mut conn, tenant, id).await?;
            let (account, channel) = channel_of(&mut conn, tenant, current.account_id).await?;
            (current, account, channel)
        };
        if current.submitted || current.chat_template_id.is_some() {
            let gateway = self.gateways.chat(&channel)?;
            gateway
                .delete_template(&account.waba_id, &current.name, current.chat_template_id.as_deref())
                .await
                .map_err(provider_failure)?;
        }
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        if permanent {
            diesel::delete(chat_templates::table.find(id).filter(chat_templates::tenant_id.eq(tenant.0)))
                .execute(&mut conn)
                .await?;
            return Ok(None);
        }
        diesel::update(chat_templates::table.find(id))
            .set((
                chat_templates::status.eq("archived"),
                chat_templates::queued.eq(false),
                chat_templates::updated_at.eq(now),
            ))
            .execute(&mut conn)
            .await?;
        Ok(Some(read(&mut conn, tenant, id).await?))
    }

    /// `POST /chat/templates/sync`: the provider's templates of one account (or every account)
    /// imported or brought up to date.
    pub async fn sync_templates(&self, caller: &Caller, waba_id: Option<&str>) -> Result<SyncReport, Error> {
        caller.require_issuer()?;
        caller.require(Permission::TEMPLATES_MANAGE)?;
        let tenant = caller.tenant_id;
        let accounts: Vec<AccountRow> = {
            let mut conn = self.conn(tenant).await?;
            match waba_id.map(str::trim).filter(|w| !w.is_empty()) {
                Some(waba) => vec![account_for(&mut conn, tenant, Some(waba)).await?],
                None => {
                    chat_accounts::table
                        .filter(chat_accounts::tenant_id.eq(tenant.0))
                        .order(chat_accounts::waba_id)
                        .select(AccountRow::as_select())
                        .load(&mut conn)
                        .await?
                }
            }
        };
        let mut report = SyncReport::default();
        for account in accounts {
            let channel = channels::get(&mut *self.conn(tenant).await?, tenant, account.channel_id).await?;
            let listed = match self.gateways.chat(&channel) {
                Ok(gateway) => gateway.templates(&account.waba_id).await.map_err(provider_failure),
                Err(e) => Err(e),
            };
            let listed = match listed {
                Ok(listed) => listed,
                Err(e) => {
                    report.errors.push(SyncError { waba_id: account.waba_id.clone(), message: e.message.clone() });
                    continue;
                }
            };
            let now = self.clock.now();
            let mut conn = self.conn(tenant).await?;
            for template in listed {
                let outcome = conn.transaction(async |conn| import(conn, tenant, &account, &template, now).await).await;
                match outcome {
                    Ok(Imported::New) => report.imported += 1,
                    Ok(Imported::Updated { status }) => {
                        report.updated += 1;
                        report.statuses_updated += usize::from(status);
                    }
                    Ok(Imported::Same) => {}
                    Err(e) => report.errors.push(SyncError {
                        waba_id: account.waba_id.clone(),
                        message: format!("{} ({}): {}", template.name, template.language, e.message),
                    }),
                }
            }
        }
        Ok(report)
    }

    /// `POST /chat/templates/{id}/deployments`: the template on other business accounts, each a
    /// row of its own submitted for its own review.
    pub async fn deploy_template(&self, caller: &Caller, id: i64, waba_ids: &[String]) -> Result<Deployed, Error> {
        caller.require_issuer()?;
        caller.require(Permission::TEMPLATES_MANAGE)?;
        if waba_ids.is_empty() {
            return Err(Error::field("waba_ids", "Name at least one business account."));
        }
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        let (source, _) = row(&mut conn, tenant, id).await?;
        let mut created = Vec::new();
        let mut errors = Vec::new();
        for waba in waba_ids {
            let account = match account_for(&mut conn, tenant, Some(waba)).await {
                Ok(account) => account,
                Err(e) => {
                    errors.push(SyncError { waba_id: waba.clone(), message: e.message.clone() });
                    continue;
                }
            };
            let inserted = conn
                .transaction(async |conn| {
                    let inserted = diesel::insert_into(chat_templates::table)
                        .values((
                            chat_templates::tenant_id.eq(tenant.0),
                            chat_templates::account_id.eq(account.id),
                            chat_templates::name.eq(&source.name),
                            chat_templates::language.eq(&source.language),
                            chat_templates::category.eq(&source.category),
                            chat_templates::display_name.eq(&source.display_name),
                            chat_templates::components.eq(&source.components),
                            chat_templates::queued.eq(true),
                            chat_templates::created_at.eq(now),
                            chat_templates::updated_at.eq(now),
                        ))
                        .returning(chat_templates::id)
                        .get_result::<i64>(conn)
                        .await;
                    let copy = match inserted {
                        Err(e) if store::is_unique_violation(&e, None) => {
                            return Err(Error::conflict("The account already has this template in this language."));
                        }
                        other => other?,
                    };
                    fallback(conn, tenant, copy, now).await?;
                    Ok(copy)
                })
                .await;
            match inserted {
                Ok(copy) => created.push(copy),
                Err(e) => errors.push(SyncError { waba_id: waba.clone(), message: e.message.clone() }),
            }
        }
        drop(conn);
        let mut deployments = Vec::new();
        for copy in created {
            deployments.push(self.submit_now(tenant, copy).await?);
        }
        Ok(Deployed { deployments, errors })
    }
}

/// Queues the submission of `id` as the fallback of the inline attempt that follows.
async fn fallback(conn: &mut store::Conn, tenant: TenantId, id: i64, now: OffsetDateTime) -> Result<(), Error> {
    let job = SubmitTemplate { tenant_id: tenant, template_id: id };
    let options = Enqueue {
        tenant_id: Some(tenant),
        run_at: Some(now + FALLBACK_AFTER),
        dedupe_key: dedupe("submit", id),
        ..Default::default()
    };
    store::jobs::enqueue(conn, &job, options).await?;
    Ok(())
}

/// Takes the provider's state of a template it has; answers the row as it now is.
async fn adopt(
    conn: &mut store::Conn,
    tenant: TenantId,
    id: i64,
    found: &ProviderTemplate,
    now: OffsetDateTime,
) -> Result<Row, Error> {
    let (before, waba) = row(conn, tenant, id).await?;
    let status = ChatStatus::of_provider(&found.status).map(ChatStatus::as_str).or(before.chat_status.as_deref());
    let after: Row = diesel::update(chat_templates::table.find(id))
        .set((
            chat_templates::chat_template_id.eq(&found.id),
            chat_templates::chat_status.eq(status),
            chat_templates::rejection_reason.eq(&found.rejected_reason),
            chat_templates::submitted.eq(true),
            chat_templates::updated_at.eq(now),
        ))
        .returning(Row::as_returning())
        .get_result(conn)
        .await?;
    status_changed(conn, &before, &after, &waba, now).await?;
    Ok(after)
}

enum Imported {
    New,
    Updated { status: bool },
    Same,
}

/// One template of the provider's list, imported or brought up to date.
async fn import(
    conn: &mut store::Conn,
    tenant: TenantId,
    account: &AccountRow,
    template: &ProviderTemplate,
    now: OffsetDateTime,
) -> Result<Imported, Error> {
    let existing: Option<i64> = chat_templates::table
        .filter(chat_templates::tenant_id.eq(tenant.0))
        .filter(chat_templates::account_id.eq(account.id))
        .filter(chat_templates::name.eq(&template.name))
        .filter(chat_templates::language.eq(&template.language))
        .select(chat_templates::id)
        .first(conn)
        .await
        .optional()?;
    let category = body::check_category(&template.category).unwrap_or_else(|_| "utility".to_owned());
    let Some(id) = existing else {
        body::check_name(&template.name)?;
        diesel::insert_into(chat_templates::table)
            .values((
                chat_templates::tenant_id.eq(tenant.0),
                chat_templates::account_id.eq(account.id),
                chat_templates::name.eq(&template.name),
                chat_templates::language.eq(&template.language),
                chat_templates::category.eq(&category),
                chat_templates::components.eq(Value::Array(template.components.clone())),
                chat_templates::chat_status.eq(ChatStatus::of_provider(&template.status).map(ChatStatus::as_str)),
                chat_templates::rejection_reason.eq(&template.rejected_reason),
                chat_templates::chat_template_id.eq(&template.id),
                chat_templates::submitted.eq(true),
                chat_templates::submission_message.eq("Imported from the provider."),
                chat_templates::created_at.eq(now),
                chat_templates::updated_at.eq(now),
            ))
            .execute(conn)
            .await?;
        return Ok(Imported::New);
    };
    let (before, _) = row(conn, tenant, id).await?;
    let content = before.components != Value::Array(template.components.clone()) || before.category != category;
    // an edit held here waits for its submit: the provider's older content does not replace it
    if content && !before.pending_edit {
        diesel::update(chat_templates::table.find(id))
            .set((
                chat_templates::components.eq(Value::Array(template.components.clone())),
                chat_templates::category.eq(&category),
                chat_templates::updated_at.eq(now),
            ))
            .execute(conn)
            .await?;
    }
    let after = adopt(conn, tenant, id, template, now).await?;
    let status = after.chat_status != before.chat_status;
    Ok(if content || status { Imported::Updated { status } } else { Imported::Same })
}

/// The provider's webhook said a template's review moved (`message_template_status_update`).
/// Answers whether a template of the account was found.
pub(crate) async fn provider_status(
    conn: &mut store::Conn,
    account: &AccountRow,
    update: &ChatTemplateStatus,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let tenant = TenantId(account.tenant_id);
    let found: Option<i64> = chat_templates::table
        .filter(chat_templates::tenant_id.eq(tenant.0))
        .filter(chat_templates::account_id.eq(account.id))
        .filter(
            chat_templates::chat_template_id
                .eq(&update.template_id)
                .or(chat_templates::name.eq(&update.name).and(chat_templates::language.eq(&update.language))),
        )
        .select(chat_templates::id)
        .first(conn)
        .await
        .optional()?;
    let Some(id) = found else { return Ok(false) };
    let Some(status) = ChatStatus::of_provider(&update.event) else { return Ok(true) };
    let (before, waba) = row(conn, tenant, id).await?;
    let reason = match status {
        ChatStatus::Rejected => update.reason.clone(),
        _ => None,
    };
    let after: Row = diesel::update(chat_templates::table.find(id))
        .set((
            chat_templates::chat_status.eq(status.as_str()),
            chat_templates::rejection_reason.eq(reason),
            chat_templates::chat_template_id.eq(&update.template_id),
            chat_templates::submitted.eq(true),
            chat_templates::updated_at.eq(now),
        ))
        .returning(Row::as_returning())
        .get_result(conn)
        .await?;
    status_changed(conn, &before, &after, &waba, now).await?;
    Ok(true)
}

/// `POST /chat/templates/sync`.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct SyncReport {
    pub imported: usize,
    pub updated: usize,
    pub statuses_updated: usize,
    pub errors: Vec<SyncError>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SyncError {
    pub waba_id: String,
    pub message: String,
}

/// `POST /chat/templates/{id}/deployments`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Deployed {
    /// The new templates, one per account, as their submission left them.
    pub deployments: Vec<Template>,
    /// Accounts that got none, and why.
    pub errors: Vec<SyncError>,
}
