//! Publishing: the working copy becomes the next version, a flow of its own on each business
//! account the form is on (a published flow cannot change). The previous version keeps opening
//! for customers who have it for three days, then retires (its flows deprecated). Deployments
//! put the form on more accounts, publishing the live version there too.

use std::collections::BTreeMap;
use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, ErrorKind, Permission, TenantId};
use providers::ChatGateway;
use providers::chat_flows::FlowStatus;
use providers::chat_groups::GroupError;
use serde::{Deserialize, Serialize};
use serde_json::json;
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{Form, RETIRE_AFTER, Row, allowed, definition_of, published, row, view};
use crate::MessagingService;
use crate::forms::{Definition, check};
use crate::schema::{
    chat_accounts, chat_form_accounts as fa, chat_form_flows as ff, chat_form_versions as fv, chat_forms as f,
};

/// `POST /chat/forms/{form}/deployments`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct Deployments {
    /// Business accounts to put the form on (1 to 20).
    #[schema(min_items = 1, max_items = 20)]
    pub waba_ids: Option<Vec<String>>,
}

/// A publish refused by our rules or the provider's: 422 with each issue under its path.
fn issues_error(message: &str, issues: impl IntoIterator<Item = (String, String)>) -> Error {
    let mut errors: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, message) in issues {
        errors.entry(path).or_default().push(message);
    }
    let mut error = Error::fields(errors);
    error.message = message.to_owned();
    error
}

fn provider_error(error: GroupError) -> Error {
    match error {
        GroupError::Refused { reason } => {
            Error::new(ErrorKind::ProviderFailure, format!("The provider refused the form: {reason}"))
        }
        GroupError::Failed(e) => {
            Error::new(ErrorKind::ProviderFailure, format!("The provider could not be reached: {e}"))
        }
    }
}

/// The accounts a form is on, with their `waba_id` and channel's gateway.
async fn accounts_of(
    service: &MessagingService,
    conn: &mut store::Conn,
    form: &Row,
    only: Option<i64>,
) -> Result<Vec<(i64, String, Arc<dyn ChatGateway>)>, Error> {
    let mut query = fa::table
        .inner_join(chat_accounts::table)
        .filter(fa::tenant_id.eq(form.tenant_id))
        .filter(fa::form_id.eq(form.id))
        .into_boxed();
    if let Some(account) = only {
        query = query.filter(fa::account_id.eq(account));
    }
    let rows: Vec<(i64, String)> =
        query.order(fa::created_at).select((fa::account_id, chat_accounts::waba_id)).load(conn).await?;
    let mut out = Vec::new();
    for (account, waba) in rows {
        let channel = crate::chat::accounts::channel_of(conn, TenantId(form.tenant_id), account).await?;
        out.push((account, waba, service.gateways.chat(&channel)?));
    }
    Ok(out)
}

/// Makes, fills and publishes one version's flow on one account; records what happened there.
async fn publish_on(
    service: &MessagingService,
    form: &Row,
    version: i32,
    definition: &Definition,
    (account, waba, gateway): &(i64, String, Arc<dyn ChatGateway>),
) -> Result<String, Error> {
    let name = format!("{} v{version} #{}", form.name, form.id);
    let flow_json = crate::forms::flow_json::flow_json(definition);
    let outcome: Result<String, Error> = async {
        let flow = gateway.create_flow(waba, &name).await.map_err(provider_error)?;
        let problems = gateway.upload_flow_json(&flow, &flow_json).await.map_err(provider_error)?;
        if !problems.is_empty() {
            return Err(issues_error(
                "The provider refused the form's definition.",
                problems.into_iter().map(|p| ("definition".to_owned(), p)),
            ));
        }
        gateway.publish_flow(&flow).await.map_err(provider_error)?;
        Ok(flow)
    }
    .await;
    let mut conn = service.conn(TenantId(form.tenant_id)).await?;
    let (flow, status, error) = match &outcome {
        Ok(flow) => (Some(flow.clone()), Some("PUBLISHED"), None),
        // the provider's own words where it gave them (its validation errors), not just ours
        Err(e) => {
            let words: Vec<&str> = e.errors.values().flatten().map(String::as_str).collect();
            let error =
                if words.is_empty() { e.message.clone() } else { format!("{} {}", e.message, words.join("; ")) };
            (None, None, Some(error))
        }
    };
    diesel::insert_into(ff::table)
        .values((
            ff::tenant_id.eq(form.tenant_id),
            ff::form_id.eq(form.id),
            ff::version.eq(version),
            ff::account_id.eq(account),
            ff::flow_id.eq(&flow),
            ff::live_status.eq(status),
            ff::error.eq(&error),
            ff::updated_at.eq(service.clock.now()),
        ))
        .on_conflict((ff::form_id, ff::version, ff::account_id, ff::tenant_id))
        .do_update()
        .set((
            ff::flow_id.eq(&flow),
            ff::live_status.eq(status),
            ff::error.eq(&error),
            ff::updated_at.eq(service.clock.now()),
        ))
        .execute(&mut conn)
        .await?;
    outcome
}

/// Emits `form.status_changed`: the live version's provider status moved on an account
/// (`PUBLISHED` on a publish, `THROTTLED`, `BLOCKED`... by webhook); `form.status` says what it
/// made of the form (`attention` while blocked anywhere).
pub(crate) async fn status_changed(
    conn: &mut store::Conn,
    form: &Row,
    previous: Option<&str>,
    status: &str,
    now: OffsetDateTime,
) -> Result<(), Error> {
    let payload = json!({
        "form": { "id": form.id, "name": form.name, "status": form.status },
        "version": form.version,
        "previous_status": previous,
        "status": status,
    });
    store::outbox::emit(conn, TenantId(form.tenant_id), "form.status_changed", payload, now).await?;
    Ok(())
}

/// Retires a version: its flows are deprecated on every account.
#[derive(Debug, Serialize, Deserialize)]
pub struct RetireVersion {
    pub form_id: i64,
    pub version: i32,
}

impl Job for RetireVersion {
    const NAME: &'static str = "chat.form_retire";
    type State = MessagingService;

    async fn run(self, service: Arc<MessagingService>, ctx: JobContext) -> Result<(), JobError> {
        service.retire_version(ctx.tenant()?, self.form_id, self.version).await?;
        Ok(())
    }
}

impl MessagingService {
    /// Deprecates a version's flows on every account (the [`RetireVersion`] job).
    async fn retire_version(&self, tenant: TenantId, form: i64, version: i32) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let flows: Vec<(i64, String)> = ff::table
            .filter(ff::tenant_id.eq(tenant.0))
            .filter(ff::form_id.eq(form))
            .filter(ff::version.eq(version))
            .filter(ff::flow_id.is_not_null())
            .filter(ff::live_status.is_distinct_from("DEPRECATED"))
            .select((ff::account_id, ff::flow_id.assume_not_null()))
            .load(&mut conn)
            .await?;
        for (account, flow) in flows {
            let channel = crate::chat::accounts::channel_of(&mut conn, tenant, account).await?;
            self.gateways.chat(&channel)?.deprecate_flow(&flow).await.map_err(provider_error)?;
            diesel::update(ff::table.filter(ff::tenant_id.eq(tenant.0)).filter(ff::flow_id.eq(&flow)))
                .set((ff::live_status.eq("DEPRECATED"), ff::updated_at.eq(self.clock.now())))
                .execute(&mut conn)
                .await?;
        }
        Ok(())
    }
}

impl MessagingService {
    /// `POST /chat/forms/{form}/publish`: 422 with the issues (ours, or the provider's about
    /// the definition); 502 when the provider refuses or cannot be reached. Nothing is
    /// published unless every account the form is on took the version.
    pub async fn publish_form(&self, caller: &Caller, id: i64) -> Result<Form, Error> {
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        allowed(&mut conn, caller, Permission::FORMS_PUBLISH).await?;
        let form = row(&mut conn, tenant, id).await?;
        let definition = definition_of(&form.definition)?;
        let issues = check(&definition, published(&mut conn, &form).await?.as_ref());
        if !issues.is_empty() {
            return Err(issues_error(
                "The form cannot be published: fix its issues first.",
                issues.into_iter().map(|i| (i.path, i.message)),
            ));
        }
        let version = form.version + 1;
        let accounts = accounts_of(self, &mut conn, &form, None).await?;
        drop(conn);
        for account in &accounts {
            publish_on(self, &form, version, &definition, account).await?;
        }
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        let definition = serde_json::to_value(&definition).map_err(Error::internal)?;
        let form = conn
            .transaction::<_, Error, _>(async |conn| {
                if form.version > 0 {
                    diesel::update(fv::table.filter(fv::tenant_id.eq(tenant.0)).filter(fv::form_id.eq(form.id)))
                        .filter(fv::version.eq(form.version))
                        .set(fv::retires_at.eq(now + RETIRE_AFTER))
                        .execute(conn)
                        .await?;
                    let job = RetireVersion { form_id: form.id, version: form.version };
                    let at =
                        Enqueue { tenant_id: Some(tenant), run_at: Some(now + RETIRE_AFTER), ..Default::default() };
                    store::jobs::enqueue(conn, &job, at).await?;
                }
                diesel::insert_into(fv::table)
                    .values((
                        fv::tenant_id.eq(tenant.0),
                        fv::form_id.eq(form.id),
                        fv::version.eq(version),
                        fv::definition.eq(&definition),
                        fv::published_at.eq(now),
                    ))
                    .execute(conn)
                    .await?;
                let changed: Row = diesel::update(f::table.filter(f::tenant_id.eq(tenant.0)).find(form.id))
                    .set((f::version.eq(version), f::status.eq("published"), f::updated_at.eq(now)))
                    .returning(Row::as_returning())
                    .get_result(conn)
                    .await?;
                status_changed(conn, &changed, None, "PUBLISHED", now).await?;
                Ok(changed)
            })
            .await?;
        view(&mut conn, form).await
    }

    /// `POST /chat/forms/{form}/deployments`: puts the form on more business accounts (the
    /// live version published there at once).
    pub async fn deploy_form(&self, caller: &Caller, id: i64, body: Deployments) -> Result<Form, Error> {
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        allowed(&mut conn, caller, Permission::FORMS_PUBLISH).await?;
        let form = row(&mut conn, tenant, id).await?;
        let wanted = body.waba_ids.unwrap_or_default();
        if wanted.is_empty() || wanted.len() > 20 {
            return Err(Error::field("waba_ids", "The waba_ids must have 1 to 20 business accounts."));
        }
        let mut added = Vec::new();
        for waba in &wanted {
            let (account, _) = super::account_of(&mut conn, tenant, Some(waba))
                .await
                .map_err(|_| Error::field("waba_ids", format!("{waba} is not a business account of this account.")))?;
            let new = diesel::insert_into(fa::table)
                .values((
                    fa::tenant_id.eq(tenant.0),
                    fa::form_id.eq(form.id),
                    fa::account_id.eq(account),
                    fa::role.eq("added"),
                    fa::created_at.eq(self.clock.now()),
                ))
                .on_conflict_do_nothing()
                .execute(&mut conn)
                .await?;
            if new > 0 {
                added.push(account);
            }
        }
        if let Some(definition) = published(&mut conn, &form).await? {
            for account in added {
                let on = accounts_of(self, &mut conn, &form, Some(account)).await?;
                for target in &on {
                    // a failure is kept on the account (`accounts[].error`); the others go on
                    let _ = publish_on(self, &form, form.version, &definition, target).await;
                }
            }
        }
        view(&mut conn, form).await
    }

    /// `DELETE /chat/forms/{form}/deployments/{waba}`: takes the form off an added account
    /// (its flows deprecated); the home account cannot be removed (409).
    pub async fn undeploy_form(&self, caller: &Caller, id: i64, waba: &str) -> Result<Form, Error> {
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        allowed(&mut conn, caller, Permission::FORMS_PUBLISH).await?;
        let form = row(&mut conn, tenant, id).await?;
        let (account, _) =
            super::account_of(&mut conn, tenant, Some(waba)).await.map_err(|_| Error::not_found("Business account"))?;
        if account == form.account_id {
            return Err(Error::conflict("The form was made on this business account: it cannot be removed from it."));
        }
        let flows: Vec<String> = ff::table
            .filter(ff::tenant_id.eq(tenant.0))
            .filter(ff::form_id.eq(form.id))
            .filter(ff::account_id.eq(account))
            .filter(ff::flow_id.is_not_null())
            .select(ff::flow_id.assume_not_null())
            .load(&mut conn)
            .await?;
        let channel = crate::chat::accounts::channel_of(&mut conn, tenant, account).await?;
        let gateway = self.gateways.chat(&channel)?;
        for flow in flows {
            gateway.deprecate_flow(&flow).await.map_err(provider_error)?;
        }
        diesel::delete(
            fa::table
                .filter(fa::tenant_id.eq(tenant.0))
                .filter(fa::form_id.eq(form.id))
                .filter(fa::account_id.eq(account)),
        )
        .execute(&mut conn)
        .await?;
        diesel::delete(
            ff::table
                .filter(ff::tenant_id.eq(tenant.0))
                .filter(ff::form_id.eq(form.id))
                .filter(ff::account_id.eq(account)),
        )
        .execute(&mut conn)
        .await?;
        view(&mut conn, form).await
    }
}

/// A flow's status from the provider's webhook: kept on its account's version; a change of the
/// live version's is `form.status_changed`, and a blocked one puts the form in `attention` until
/// it is lifted.
pub(crate) async fn flow_status(
    conn: &mut store::Conn,
    tenant: TenantId,
    status: &FlowStatus,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let found: Option<(i64, i32)> = ff::table
        .filter(ff::tenant_id.eq(tenant.0))
        .filter(ff::flow_id.eq(&status.flow_id))
        .select((ff::form_id, ff::version))
        .first(conn)
        .await
        .optional()?;
    let Some((form_id, version)) = found else { return Ok(false) };
    conn.transaction::<_, Error, _>(async |conn| {
        diesel::update(ff::table.filter(ff::tenant_id.eq(tenant.0)).filter(ff::flow_id.eq(&status.flow_id)))
            .set((ff::live_status.eq(&status.new_status), ff::updated_at.eq(now)))
            .execute(conn)
            .await?;
        let form = row(conn, tenant, form_id).await?;
        if version != form.version {
            return Ok(());
        }
        let blocked: i64 = ff::table
            .filter(ff::tenant_id.eq(tenant.0))
            .filter(ff::form_id.eq(form_id))
            .filter(ff::version.eq(version))
            .filter(ff::live_status.eq("BLOCKED"))
            .count()
            .get_result(conn)
            .await?;
        let wanted = if blocked > 0 { "attention" } else { "published" };
        let form = if wanted != form.status {
            diesel::update(f::table.filter(f::tenant_id.eq(tenant.0)).find(form_id))
                .set((f::status.eq(wanted), f::updated_at.eq(now)))
                .returning(Row::as_returning())
                .get_result(conn)
                .await?
        } else {
            form
        };
        let previous = status.old_status.as_deref();
        if previous != Some(status.new_status.as_str()) {
            status_changed(conn, &form, previous, &status.new_status, now).await?;
        }
        Ok(())
    })
    .await?;
    Ok(true)
}
