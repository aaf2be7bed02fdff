//! In-chat forms (contract: Forms, Form version state): a form's working copy, checked by the
//! rules of [`crate::forms`]; its published versions, each a provider flow on every business
//! account the form is on ([`publish`]); sends that hand a customer the form ([`send`]); and the
//! answers their replies carry back ([`answers`]). Every route needs the Forms module on.

pub mod answers;
pub mod publish;
pub mod send;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::error::FieldErrors;
use kernel::{Caller, Error, Permission, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::MessagingService;
use crate::forms::{Definition, Issue, QUESTION_TYPES, QuestionType, check};
use crate::schema::{
    chat_accounts, chat_form_accounts as fa, chat_form_flows as ff, chat_form_versions as fv, chat_forms as f,
};

pub use answers::{AnswerPage, AnswersQuery, FormAnswer};
pub use send::{FormSend, FormSent};

/// A form's name.
pub const MAX_NAME: usize = 120;
/// How long a version keeps opening for customers who have it once the next is published.
pub const RETIRE_AFTER: time::Duration = time::Duration::days(3);

/// A form as the API shows it: the working copy, its published versions and accounts.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Form {
    pub id: i64,
    pub name: String,
    /// `draft` (never published), `published`, or `attention` (the provider blocked the live
    /// version on an account).
    pub status: String,
    /// The latest published version (0 before the first publish).
    pub version: i32,
    /// The working copy: what the next publish makes the next version.
    #[schema(value_type = Object)]
    pub definition: Value,
    /// The working copy's issues (empty when it can be published).
    #[schema(value_type = Vec<Object>)]
    pub issues: Vec<Issue>,
    /// The business account the form was made on.
    pub waba_id: String,
    /// A menu form's shop (its definition is the shop's products, fixed).
    pub menu_shop_id: Option<i64>,
    pub menu_language: Option<String>,
    /// The data table (slug) each answer is saved to.
    pub save_to_table: Option<String>,
    pub versions: Vec<FormVersion>,
    pub accounts: Vec<FormAccount>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
}

/// A published version.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FormVersion {
    pub version: i32,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub published_at: OffsetDateTime,
    /// When it stops opening (three days after the next version was published).
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub retires_at: Option<OffsetDateTime>,
}

/// A business account of the tenant and the form on it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FormAccount {
    pub waba_id: String,
    /// `home` (made on it), `added` (a deployment) or `available` (not on it).
    pub role: String,
    /// The provider's status of the live version there: `PUBLISHED`, `THROTTLED`, `BLOCKED`...
    pub live_status: Option<String>,
    /// Why the last publish there failed.
    pub error: Option<String>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = f, check_for_backend(diesel::pg::Pg))]
pub(crate) struct Row {
    pub id: i64,
    pub tenant_id: i64,
    pub name: String,
    pub account_id: i64,
    pub definition: Value,
    pub status: String,
    pub version: i32,
    pub menu_shop_id: Option<i64>,
    pub menu_language: Option<String>,
    pub save_to_table: Option<String>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

/// `POST /chat/forms`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct FormCreate {
    /// Required, at most 120 characters.
    #[schema(max_length = 120, required = true)]
    pub name: Option<String>,
    /// `{pages:[{title, questions:[{key, type, label, required, options, max_files, min, max,
    /// help}]}], submit_label}`; left out for a menu form.
    #[schema(value_type = Option<Object>)]
    pub definition: Option<Value>,
    /// The business account the form is made on (optional with one account).
    #[schema(max_length = 64)]
    pub waba_id: Option<String>,
    /// More business accounts to deploy it to.
    #[schema(max_items = 20)]
    pub accounts: Option<Vec<String>>,
    /// Makes a menu form of this shop's published products.
    pub menu_shop_id: Option<i64>,
    /// `sw` (default) or `en`, for a menu form.
    #[schema(max_length = 2)]
    pub menu_language: Option<String>,
    /// A data table's slug each answer is saved to.
    #[schema(max_length = 64)]
    pub save_to_table: Option<String>,
}

/// `PATCH /chat/forms/{form}`: the name, settings and the working copy.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct FormPatch {
    #[schema(max_length = 120)]
    pub name: Option<String>,
    /// The working copy (409 for a menu form).
    #[schema(value_type = Option<Object>)]
    pub definition: Option<Value>,
    /// A data table's slug; an empty string stops saving.
    #[schema(max_length = 64)]
    pub save_to_table: Option<String>,
}

/// The question types (`GET /chat/forms/question-types`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QuestionTypes {
    #[schema(value_type = Vec<Object>)]
    pub items: &'static [QuestionType],
}

/// Reads a definition as sent: a shape that is not a definition is one issue.
pub(crate) fn definition_of(value: &Value) -> Result<Definition, Error> {
    serde_json::from_value(value.clone())
        .map_err(|e| Error::field("definition", format!("The definition is not a form definition: {e}")))
}

/// The module switch and a permission.
pub(crate) async fn allowed(conn: &mut store::Conn, caller: &Caller, permission: Permission) -> Result<(), Error> {
    caller.require(permission)?;
    if !accounts::modules::is_enabled(conn, caller.tenant_id, accounts::modules::Module::Forms).await? {
        return Err(Error::forbidden("The Forms module is switched off for this account."));
    }
    Ok(())
}

/// The tenant's business account by `waba_id`, or its only one.
pub(crate) async fn account_of(
    conn: &mut store::Conn,
    tenant: TenantId,
    waba_id: Option<&str>,
) -> Result<(i64, String), Error> {
    let accounts: Vec<(i64, String)> = chat_accounts::table
        .filter(chat_accounts::tenant_id.eq(tenant.0))
        .order(chat_accounts::id)
        .select((chat_accounts::id, chat_accounts::waba_id))
        .load(conn)
        .await?;
    match waba_id.map(str::trim).filter(|w| !w.is_empty()) {
        _ if accounts.is_empty() => Err(Error::validation("No chat account is configured for this account.")),
        Some(wanted) => accounts.into_iter().find(|(_, w)| w == wanted).ok_or_else(|| {
            Error::field("waba_id", "The waba_id is not a business account of this account (GET /chat/accounts).")
        }),
        None if accounts.len() > 1 => Err(Error::field(
            "waba_id",
            "This account has several business accounts: name one with waba_id (GET /chat/accounts).",
        )),
        None => Ok(accounts.into_iter().next().expect("one")),
    }
}

/// A form of the tenant; 404 for another tenant's.
pub(crate) async fn row(conn: &mut store::Conn, tenant: TenantId, id: i64) -> Result<Row, Error> {
    f::table
        .filter(f::tenant_id.eq(tenant.0))
        .find(id)
        .select(Row::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Form"))
}

/// The latest published version's definition.
pub(crate) async fn published(conn: &mut store::Conn, form: &Row) -> Result<Option<Definition>, Error> {
    if form.version == 0 {
        return Ok(None);
    }
    let value: Value = fv::table
        .filter(fv::tenant_id.eq(form.tenant_id))
        .filter(fv::form_id.eq(form.id))
        .filter(fv::version.eq(form.version))
        .select(fv::definition)
        .first(conn)
        .await?;
    Ok(serde_json::from_value(value).ok())
}

/// The form as the API shows it.
pub(crate) async fn view(conn: &mut store::Conn, form: Row) -> Result<Form, Error> {
    let tenant = form.tenant_id;
    let issues = match serde_json::from_value::<Definition>(form.definition.clone()) {
        Ok(definition) => check(&definition, published(conn, &form).await?.as_ref()),
        Err(e) => vec![Issue::new("definition", "invalid", format!("The definition is not a form definition: {e}"))],
    };
    let versions: Vec<(i32, OffsetDateTime, Option<OffsetDateTime>)> = fv::table
        .filter(fv::tenant_id.eq(tenant))
        .filter(fv::form_id.eq(form.id))
        .order(fv::version.desc())
        .select((fv::version, fv::published_at, fv::retires_at))
        .load(conn)
        .await?;
    let all: Vec<(i64, String)> = chat_accounts::table
        .filter(chat_accounts::tenant_id.eq(tenant))
        .order(chat_accounts::id)
        .select((chat_accounts::id, chat_accounts::waba_id))
        .load(conn)
        .await?;
    let on: Vec<(i64, String)> = fa::table
        .filter(fa::tenant_id.eq(tenant))
        .filter(fa::form_id.eq(form.id))
        .select((fa::account_id, fa::role))
        .load(conn)
        .await?;
    let flows: Vec<(i64, i32, Option<String>, Option<String>)> = ff::table
        .filter(ff::tenant_id.eq(tenant))
        .filter(ff::form_id.eq(form.id))
        .order(ff::version.desc())
        .select((ff::account_id, ff::version, ff::live_status, ff::error))
        .load(conn)
        .await?;
    let home = all.iter().find(|(id, _)| *id == form.account_id).map(|(_, w)| w.clone()).unwrap_or_default();
    let accounts = all
        .into_iter()
        .map(|(id, waba_id)| {
            let role = on.iter().find(|(a, _)| *a == id).map_or("available", |(_, r)| r.as_str()).to_owned();
            // the live version's status there, and the newest error
            let live = flows.iter().find(|(a, v, _, _)| *a == id && *v == form.version).and_then(|f| f.2.clone());
            let error = flows.iter().find(|(a, _, _, _)| *a == id).and_then(|f| f.3.clone());
            FormAccount { waba_id, role, live_status: live, error }
        })
        .collect();
    Ok(Form {
        id: form.id,
        name: form.name,
        status: form.status,
        version: form.version,
        definition: form.definition,
        issues,
        waba_id: home,
        menu_shop_id: form.menu_shop_id,
        menu_language: form.menu_language,
        save_to_table: form.save_to_table,
        versions: versions
            .into_iter()
            .map(|(version, published_at, retires_at)| FormVersion { version, published_at, retires_at })
            .collect(),
        accounts,
        created_at: form.created_at,
        updated_at: form.updated_at,
    })
}

fn text(errors: &mut FieldErrors, field: &str, value: Option<&str>, max: usize) -> Option<String> {
    crate::chat::groups::text(errors, field, value, max)
}

impl MessagingService {
    /// `GET /chat/forms/question-types`.
    pub async fn form_question_types(&self, caller: &Caller) -> Result<QuestionTypes, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        allowed(&mut conn, caller, Permission::FORMS_VIEW).await?;
        Ok(QuestionTypes { items: QUESTION_TYPES })
    }

    /// `POST /chat/forms`: saved whatever its issues (they come back with it); a menu form's
    /// definition is made from its shop's published products.
    pub async fn create_form(&self, caller: &Caller, body: FormCreate) -> Result<Form, Error> {
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        allowed(&mut conn, caller, Permission::FORMS_CREATE).await?;
        let mut errors = FieldErrors::new();
        let name = text(&mut errors, "name", body.name.as_deref(), MAX_NAME);
        if name.is_none() {
            errors.add("name", "The name is required.");
        }
        let table = text(&mut errors, "save_to_table", body.save_to_table.as_deref(), 64);
        let language = match body.menu_language.as_deref().map(str::trim) {
            None | Some("") => body.menu_shop_id.map(|_| "sw".to_owned()),
            Some(l @ ("sw" | "en")) => Some(l.to_owned()),
            Some(_) => {
                errors.add("menu_language", "The menu_language must be sw or en.");
                None
            }
        };
        let definition = match (&body.definition, body.menu_shop_id) {
            (Some(_), Some(_)) => {
                errors.add("definition", "A menu form's definition is made from its shop: send one or the other.");
                None
            }
            (Some(value), None) => Some(definition_of(value)?),
            (None, Some(_)) => None,
            (None, None) => {
                errors.add("definition", "The definition is required (or menu_shop_id for a menu form).");
                None
            }
        };
        errors.finish()?;
        let (home, _) = account_of(&mut conn, tenant, body.waba_id.as_deref()).await?;
        let mut added: Vec<i64> = Vec::new();
        for waba in body.accounts.unwrap_or_default() {
            let (account, _) = account_of(&mut conn, tenant, Some(&waba))
                .await
                .map_err(|_| Error::field("accounts", format!("{waba} is not a business account of this account.")))?;
            if account != home && !added.contains(&account) {
                added.push(account);
            }
        }
        let definition = match (definition, body.menu_shop_id) {
            (Some(definition), _) => definition,
            (None, Some(shop)) => {
                let products = self.menu_products(tenant, shop).await?;
                crate::forms::menu_definition(&products, language.as_deref().unwrap_or("sw"))
            }
            (None, None) => unreachable!("checked"),
        };
        let definition = serde_json::to_value(&definition).map_err(Error::internal)?;
        let now = self.clock.now();
        let form: Row = conn
            .transaction::<_, Error, _>(async |conn| {
                let form: Row = diesel::insert_into(f::table)
                    .values((
                        f::tenant_id.eq(tenant.0),
                        f::name.eq(name.expect("checked")),
                        f::account_id.eq(home),
                        f::definition.eq(&definition),
                        f::status.eq("draft"),
                        f::menu_shop_id.eq(body.menu_shop_id),
                        f::menu_language.eq(&language),
                        f::save_to_table.eq(&table),
                        f::created_at.eq(now),
                        f::updated_at.eq(now),
                    ))
                    .returning(Row::as_returning())
                    .get_result(conn)
                    .await?;
                let rows: Vec<_> = std::iter::once((home, "home"))
                    .chain(added.iter().map(|a| (*a, "added")))
                    .map(|(account, role)| {
                        (
                            fa::tenant_id.eq(tenant.0),
                            fa::form_id.eq(form.id),
                            fa::account_id.eq(account),
                            fa::role.eq(role),
                            fa::created_at.eq(now),
                        )
                    })
                    .collect();
                diesel::insert_into(fa::table).values(rows).execute(conn).await?;
                Ok(form)
            })
            .await?;
        view(&mut conn, form).await
    }

    /// `GET /chat/forms/{form}`.
    pub async fn form(&self, caller: &Caller, id: i64) -> Result<Form, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        allowed(&mut conn, caller, Permission::FORMS_VIEW).await?;
        let form = row(&mut conn, caller.tenant_id, id).await?;
        view(&mut conn, form).await
    }

    /// `PATCH /chat/forms/{form}`: a menu form's definition is fixed (409).
    pub async fn update_form(&self, caller: &Caller, id: i64, patch: FormPatch) -> Result<Form, Error> {
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        allowed(&mut conn, caller, Permission::FORMS_EDIT).await?;
        let form = row(&mut conn, tenant, id).await?;
        let mut errors = FieldErrors::new();
        let name = text(&mut errors, "name", patch.name.as_deref(), MAX_NAME);
        if patch.name.is_some() && name.is_none() {
            errors.add("name", "The name may not be blank.");
        }
        let table = patch.save_to_table.as_deref().map(|t| text(&mut errors, "save_to_table", Some(t), 64));
        errors.finish()?;
        let definition = match &patch.definition {
            Some(_) if form.menu_shop_id.is_some() => {
                return Err(Error::conflict("A menu form's definition is made from its shop and cannot change."));
            }
            Some(value) => Some(serde_json::to_value(definition_of(value)?).map_err(Error::internal)?),
            None => None,
        };
        let now = self.clock.now();
        let changed: Row = diesel::update(f::table.filter(f::tenant_id.eq(tenant.0)).find(id))
            .set((
                f::name.eq(name.unwrap_or(form.name)),
                f::definition.eq(definition.unwrap_or(form.definition)),
                f::save_to_table.eq(table.unwrap_or(form.save_to_table)),
                f::updated_at.eq(now),
            ))
            .returning(Row::as_returning())
            .get_result(&mut conn)
            .await?;
        view(&mut conn, changed).await
    }
}
