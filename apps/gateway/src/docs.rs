//! The OpenAPI 3.1 document, generated from the handlers and types, served at
//! `/api-docs/openapi.json`, with a self-contained page at `/api-docs` (no CDN).

use actix_web::HttpResponse;
use serde::Serialize;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

/// The v3 success envelope.
#[derive(Serialize, ToSchema)]
pub struct Success<T> {
    /// Always `success`.
    pub status: String,
    pub data: T,
}

/// The v3 error envelope.
#[derive(Serialize, ToSchema)]
pub struct ErrorEnvelope {
    /// Always `error`.
    pub status: String,
    pub message: String,
    /// Field errors: `{field: [message]}`.
    pub errors: Option<std::collections::BTreeMap<String, Vec<String>>>,
}

/// A refusal of the data service (contract: Errors, data endpoints).
#[derive(Serialize, ToSchema)]
pub struct DataErrorEnvelope {
    pub error: DataErrorDetail,
    pub message: String,
    /// validation_error, conflict, not_found, permission_denied, quota_exceeded, not_supported,
    /// rate_limited, provider_failure or temporary_failure.
    pub code: String,
    pub errors: Option<std::collections::BTreeMap<String, Vec<String>>>,
}

/// The `error` member of a data refusal; `field`, `reason`, `quota`, `used`, `limit` and
/// `retry_after_seconds` appear where they apply.
#[derive(Serialize, ToSchema)]
pub struct DataErrorDetail {
    pub code: String,
    pub message: String,
    pub retryable: bool,
    pub field: Option<String>,
    pub reason: Option<String>,
}

/// What every authenticated route may answer before it does anything (contract: Authentication,
/// Limits), in the v3 error envelope.
#[derive(utoipa::IntoResponses)]
pub enum Refusals {
    /// Missing, malformed, unknown, revoked, expired or wrong-kind credentials.
    #[response(status = 401)]
    Unauthenticated(ErrorEnvelope),
    /// A suspended or inactive account, a missing permission, or a key without an issuer on a
    /// route it may not use.
    #[response(status = 403)]
    Forbidden(ErrorEnvelope),
    /// More than the rate limit in the last minute; see `Retry-After`.
    #[response(status = 429)]
    RateLimited(ErrorEnvelope),
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new().scheme(HttpAuthScheme::Bearer).description(Some("An account REST key")).build(),
            ),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Customer Integration API",
        version = "3.1.0",
        description = "Messaging, contacts, commerce, payments, data tables, leads and automations. Every /api/v3 route answers {status:'success', data} or {status:'error', message, errors?}. No text anywhere (a body member or name, a query value, a path segment) may hold the NUL character: in a body or a query it is a 422 naming the member, in a path a 404. A body whose schema requires no member may be left out (no bytes); it reads as {}."
    ),
    paths(
        crate::v3::account::me,
        crate::v3::account::balance,
        crate::v3::contacts::list_groups,
        crate::v3::contacts::create_group,
        crate::v3::contacts::get_group,
        crate::v3::contacts::update_group,
        crate::v3::contacts::delete_group,
        crate::v3::contacts::list_contacts,
        crate::v3::contacts::create_contact,
        crate::v3::contacts::batch,
        crate::v3::contacts::get_contact,
        crate::v3::contacts::update_contact,
        crate::v3::contacts::delete_contact,
        crate::v3::contacts::search,
        crate::v3::contacts::original_list,
        crate::v3::contacts::original_store,
        crate::v3::contacts::original_search,
        crate::v3::contacts::original_update,
        crate::v3::contacts::original_delete,
        crate::v3::messaging::send,
        crate::v3::messaging::get_message,
        crate::v3::messaging::senders,
        crate::v3::messaging::list_messages,
        crate::v3::voice::otp,
        crate::v3::voice::messages,
        crate::v3::voice::create,
        crate::v3::voice::list,
        crate::v3::voice::get,
        crate::v3::voice::create_campaign,
        crate::v3::voice::list_campaigns,
        crate::v3::voice::get_campaign,
        crate::v3::voice::campaign_action,
        crate::v3::messaging::create_campaign,
        crate::v3::messaging::view_campaign,
        crate::v3::messaging::resume_campaign,
        crate::v3::messaging::cancel_campaign,
        crate::v3::messaging::blacklist,
        crate::v3::messaging::blacklist_add,
        crate::v3::messaging::blacklist_remove,
        crate::v3::leads::upsert,
        crate::v3::leads::get,
        crate::v3::leads::stage,
        crate::v3::lead_labels::list_labels,
        crate::v3::lead_labels::create_label,
        crate::v3::lead_labels::update_label,
        crate::v3::lead_labels::delete_label,
        crate::v3::lead_labels::add_labels,
        crate::v3::lead_labels::remove_labels,
        crate::v3::lead_labels::fields,
        crate::v3::leads::list,
        crate::v3::leads::update,
        crate::v3::leads::delete,
        crate::v3::leads::add_note,
        crate::v3::leads::assign,
        crate::v3::leads::activities,
        crate::v3::catalogues::list,
        crate::v3::catalogues::create,
        crate::v3::catalogues::get,
        crate::v3::catalogues::update,
        crate::v3::catalogues::products,
        crate::v3::catalogues::put_by_sku,
        crate::v3::catalogues::get_by_sku,
        crate::v3::catalogues::delete_by_sku,
        crate::v3::catalogues::movements_by_sku,
        crate::v3::catalogues::put_by_id,
        crate::v3::catalogues::get_by_id,
        crate::v3::catalogues::delete_by_id,
        crate::v3::catalogues::movements_by_id,
        crate::v3::catalogues::batch,
        crate::v3::catalogues::syncs,
        crate::v3::catalogues::sync,
        crate::v3::catalogues::push_inventory,
        crate::v3::catalogues::inventory,
        crate::v3::catalogues::create_feed,
        crate::v3::catalogues::feeds,
        crate::v3::catalogues::get_feed,
        crate::v3::catalogues::run_feed,
        crate::v3::catalogues::listings,
        crate::v3::carts::create_link,
        crate::v3::carts::list,
        crate::v3::carts::get,
        crate::v3::orders::create,
        crate::v3::orders::list,
        crate::v3::orders::get,
        crate::v3::orders::set_status,
        crate::v3::sends::send_product,
        crate::v3::sends::send_product_list,
        crate::v3::sends::send_catalogue,
        crate::v3::webhooks::events,
        crate::v3::webhooks::create,
        crate::v3::webhooks::list,
        crate::v3::webhooks::get,
        crate::v3::webhooks::update,
        crate::v3::webhooks::delete,
        crate::v3::webhooks::test,
        crate::v3::webhooks::rotate_secret,
        crate::v3::webhooks::deliveries,
        crate::v3::webhooks::delivery,
        crate::v3::webhooks::replay,
        crate::v3::webhooks::recover,
        crate::v3::webhooks::notifications,
        crate::v3::automations::events,
        crate::v3::automations::subscriptions,
        crate::v3::automations::schedules,
        crate::v3::operations::list,
        crate::v3::operations::get,
        crate::v3::operations::run,
        crate::v3::operations::get_run,
        crate::engine::submit,
        crate::engine::list,
        crate::engine::get,
        crate::engine::cancel,
        crate::engine::approve,
        crate::engine::events,
        crate::v3::payments::list,
        crate::v3::payments::get,
        crate::v3::data::tables,
        crate::v3::data::schema,
        crate::v3::data::states,
        crate::v3::data::list,
        crate::v3::data::create,
        crate::v3::data::get,
        crate::v3::data::update,
        crate::v3::data::delete,
        crate::v3::data::history,
        crate::v3::data::groups,
        crate::v3::data::group,
        crate::v3::data::overview,
        crate::v3::data::download,
        crate::v3::chat::send,
        crate::v3::chat::get_message,
        crate::v3::chat::accounts,
        crate::v3::chat::conversations,
        crate::v3::chat::conversation,
        crate::v3::chat::templates,
        crate::v3::chat::template,
        crate::v3::chat::create_template,
        crate::v3::chat::update_template,
        crate::v3::chat::delete_template,
        crate::v3::chat::submit_template,
        crate::v3::chat::refresh_template,
        crate::v3::chat::sync_templates,
        crate::v3::chat::deploy_template,
        crate::v3::groups::create,
        crate::v3::groups::list,
        crate::v3::groups::get,
        crate::v3::groups::update,
        crate::v3::groups::delete,
        crate::v3::groups::invite,
        crate::v3::groups::reset_link,
        crate::v3::groups::join_requests,
        crate::v3::groups::approve,
        crate::v3::groups::reject,
        crate::v3::groups::remove_participants,
        crate::v3::groups::message,
        crate::v3::groups::pin,
        crate::v3::forms::question_types,
        crate::v3::forms::create,
        crate::v3::forms::get,
        crate::v3::forms::update,
        crate::v3::forms::publish,
        crate::v3::forms::send,
        crate::v3::forms::answers,
        crate::v3::forms::deploy,
        crate::v3::forms::undeploy,
        crate::hooks::delivery,
        crate::hooks::voice,
        crate::hooks::inbound,
        crate::hooks::chat_challenge,
        crate::hooks::chat_delivery,
        crate::hooks::payment_result,
    ),
    components(schemas(ErrorEnvelope, DataErrorEnvelope, DataErrorDetail)),
    modifiers(&BearerAuth, &CrossMemberRules, &Refusable, &EmptyBodies)
)]
pub struct ApiDoc;

/// The rules across a body's members that its derived schema cannot state, each added by the
/// domain that owns the body to the body's own component.
struct CrossMemberRules;

impl Modify for CrossMemberRules {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        commerce::add_rules(components);
        leads::doc::add_rules(components);
        webhooks::doc::add_rules(components);
    }
}

/// The statuses any operation may answer before or beside what it does, documented on every
/// operation that can meet them (a handler documents its own where it says more): a 404 for a
/// path id that names nothing of the caller's, a 422 for a query or body its reader refuses
/// (on a keyed operation, a query member it does not read: `http::auth`), and a 413 or 415 for a body too large or not JSON. Each in its route family's envelope.
struct Refusable;

impl Modify for Refusable {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::path::ParameterIn;
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
        for (path, item) in openapi.paths.paths.iter_mut() {
            let envelope =
                if crate::http::data::is_native_family(path) { "DataErrorEnvelope" } else { "ErrorEnvelope" };
            let response = |description: &str| {
                ResponseBuilder::new()
                    .description(description)
                    .content(
                        "application/json",
                        ContentBuilder::new().schema(Some(Ref::from_schema_name(envelope))).build(),
                    )
                    .build()
            };
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.options,
                &mut item.head,
                &mut item.patch,
                &mut item.trace,
            ];
            for operation in operations.into_iter().flatten() {
                let parameters = operation.parameters.as_deref().unwrap_or_default();
                let in_path = parameters.iter().any(|p| p.parameter_in == ParameterIn::Path);
                let in_query = parameters.iter().any(|p| p.parameter_in == ParameterIn::Query);
                let has_body = operation.request_body.is_some();
                // a keyed operation refuses a query member it does not read
                let keyed = operation.security.as_ref().is_some_and(|s| !s.is_empty());
                let responses = &mut operation.responses.responses;
                let mut add = |status: &str, description: &str| {
                    responses.entry(status.to_owned()).or_insert_with(|| response(description).into());
                };
                if in_path {
                    add("404", "Nothing of the caller's has this id (a malformed id included).");
                }
                if in_query || has_body || keyed {
                    add(
                        "422",
                        "The query or the body is refused (a query member it does not read too); `errors` names each field.",
                    );
                }
                if has_body {
                    add("413", "The body is larger than the limit.");
                    add("415", "The body is declared as something other than JSON.");
                }
            }
        }
    }
}

/// The body reader takes an empty body as `{}` (`http::json`), so a body whose schema requires
/// no member may be left out: its request body is described as optional. (`CrossMemberRules`
/// runs first, so a rule such as "one of these members" counts.)
struct EmptyBodies;

impl Modify for EmptyBodies {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{RefOr, Required, schema::Schema};
        let components = openapi.components.clone().unwrap_or_default();
        let requires_nothing = |schema: &RefOr<Schema>| {
            let schema = match schema {
                RefOr::Ref(reference) => {
                    let name = reference.ref_location.rsplit('/').next().unwrap_or_default();
                    components.schemas.get(name)
                }
                inline => Some(inline),
            };
            // `{}` is valid: no member required, directly or through a rule across members
            let across = |object: &utoipa::openapi::schema::Object| {
                object
                    .extensions
                    .as_ref()
                    .is_some_and(|e| ["anyOf", "oneOf", "allOf"].iter().any(|k| e.contains_key(*k)))
            };
            matches!(schema, Some(RefOr::T(Schema::Object(object))) if object.required.is_empty() && !across(object))
        };
        for item in openapi.paths.paths.values_mut() {
            for operation in [&mut item.put, &mut item.post, &mut item.patch, &mut item.delete].into_iter().flatten() {
                let Some(body) = operation.request_body.as_mut() else { continue };
                let json = body.content.get("application/json").and_then(|content| content.schema.as_ref());
                if json.is_some_and(requires_nothing) {
                    body.required = Some(Required::False);
                }
            }
        }
    }
}

pub fn openapi_json() -> String {
    ApiDoc::openapi().to_pretty_json().unwrap_or_else(|_| "{}".to_owned())
}

/// The methods the description lists for a route pattern (`/api/v3/leads/{lead}`), as an
/// `Allow` header's value: a 405 names them (RFC 9110).
pub fn allowed_methods(pattern: &str) -> Option<&'static str> {
    static ALLOWED: std::sync::LazyLock<std::collections::HashMap<String, String>> = std::sync::LazyLock::new(|| {
        let document = ApiDoc::openapi();
        document
            .paths
            .paths
            .iter()
            .map(|(path, item)| {
                let methods = [
                    ("GET", item.get.is_some()),
                    ("HEAD", item.get.is_some() || item.head.is_some()),
                    ("POST", item.post.is_some()),
                    ("PUT", item.put.is_some()),
                    ("PATCH", item.patch.is_some()),
                    ("DELETE", item.delete.is_some()),
                ];
                let allowed: Vec<&str> = methods.iter().filter(|(_, on)| *on).map(|(m, _)| *m).collect();
                (path.clone(), allowed.join(", "))
            })
            .collect()
    });
    ALLOWED.get(pattern).map(String::as_str).or_else(|| UNDESCRIBED_GETS.contains(&pattern).then_some("GET, HEAD"))
}

/// The query members the description declares for an operation (`GET` and
/// `/api/v3/leads/{lead}`); `None` for a route it does not describe. A member declared as a
/// list (`sku[]`) is read under its bare name too.
pub fn query_members(method: &str, pattern: &str) -> Option<&'static [String]> {
    type Members = std::collections::HashMap<(String, String), Vec<String>>;
    static MEMBERS: std::sync::LazyLock<Members> = std::sync::LazyLock::new(|| {
        let document = ApiDoc::openapi();
        let mut members = Members::new();
        for (path, item) in &document.paths.paths {
            let operations = [
                ("GET", &item.get),
                ("POST", &item.post),
                ("PUT", &item.put),
                ("PATCH", &item.patch),
                ("DELETE", &item.delete),
            ];
            for (method, operation) in operations {
                let Some(operation) = operation else { continue };
                let mut names = Vec::new();
                for parameter in operation.parameters.iter().flatten() {
                    if matches!(parameter.parameter_in, utoipa::openapi::path::ParameterIn::Query) {
                        names.extend(parameter.name.strip_suffix("[]").map(str::to_owned));
                        names.push(parameter.name.clone());
                    }
                }
                members.insert((method.to_owned(), path.clone()), names);
            }
        }
        members
    });
    let method = if method == "HEAD" { "GET" } else { method };
    MEMBERS.get(&(method.to_owned(), pattern.to_owned())).map(Vec::as_slice)
}

/// The routes outside the description (operations, the description itself): each answers GET.
pub const UNDESCRIBED_GETS: &[&str] = &["/health", "/ready", "/metrics", "/api-docs", "/api-docs/openapi.json"];

pub async fn openapi() -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(openapi_json())
}

/// A small page that renders the document with no outside scripts, so it works offline.
pub async fn page() -> HttpResponse {
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(include_str!("docs.html"))
}
