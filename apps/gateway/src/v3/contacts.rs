//! Contact groups and contacts (contract: Contact groups and contacts), including the five
//! original `/contacts/{group_id}/...` paths that keys from before the permission model keep.
//! Every rule lives in `contacts::ContactService`; these handlers parse and wrap.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::Deserialize;

use contacts::{
    BatchReport, Contact, ContactCreate, ContactFilter, ContactGroup, ContactInput, ContactRef, ContactSearch,
    DeletedGroup, GroupPatch, GroupRef, ListBody, NewContacts, NewGroup,
};
use kernel::page::PageQuery;
use kernel::{Page, PageRequest};

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::envelope::with_status;
use crate::http::{ApiError, Auth, Json, created, ok};

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ForceQuery {
    /// `true` deletes a group that still has contacts.
    pub force: Option<String>,
}

fn group(raw: &str) -> Result<GroupRef, ApiError> {
    Ok(kernel::parse_id(raw, "Contact group")?)
}

fn contact(raw: &str) -> Result<ContactRef, ApiError> {
    Ok(kernel::parse_id(raw, "Contact")?)
}

/// List the account's contact groups (25 per page by default).
#[utoipa::path(get, path = "/api/v3/contact-groups", tag = "Contacts", params(PageQuery),
    responses((status = 200, body = Success<Page<ContactGroup>>), (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn list_groups(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, contacts::GROUPS_PER_PAGE)?;
    Ok(ok(state.contacts.list_groups(&auth.0, page).await?))
}

/// Create a contact group with its custom field definitions.
#[utoipa::path(post, path = "/api/v3/contact-groups", tag = "Contacts", request_body = NewGroup,
    responses((status = 201, body = Success<ContactGroup>), (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn create_group(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<NewGroup>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.contacts.create_group(&auth.0, body.0).await?))
}

/// Read one group, by numeric id or UUID.
#[utoipa::path(get, path = "/api/v3/contact-groups/{group}", tag = "Contacts",
    params(("group" = String, Path, description = "numeric id or UUID")),
    responses((status = 200, body = Success<ContactGroup>), (status = 404, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn get_group(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.contacts.get_group(&auth.0, group(&path)?).await?))
}

/// Rename, deactivate, or replace the custom field definitions.
#[utoipa::path(patch, path = "/api/v3/contact-groups/{group}", tag = "Contacts", request_body = GroupPatch,
    params(("group" = String, Path, description = "numeric id or UUID")),
    responses((status = 200, body = Success<ContactGroup>), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn update_group(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<GroupPatch>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.contacts.update_group(&auth.0, group(&path)?, body.0).await?))
}

/// Delete a group and its contacts; a non-empty group needs `?force=true` (else 409 with `count`).
#[utoipa::path(delete, path = "/api/v3/contact-groups/{group}", tag = "Contacts",
    params(("group" = String, Path, description = "numeric id or UUID"), ForceQuery),
    responses((status = 200, body = Success<DeletedGroup>), (status = 404, body = ErrorEnvelope), (status = 409, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn delete_group(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    query: web::Query<ForceQuery>,
) -> Result<HttpResponse, ApiError> {
    let force = matches!(query.force.as_deref().map(str::trim), Some("true" | "1"));
    Ok(ok(state.contacts.delete_group(&auth.0, group(&path)?, force).await?))
}

/// List a group's contacts (20 per page by default), newest first.
#[utoipa::path(get, path = "/api/v3/contact-groups/{group}/contacts", tag = "Contacts",
    params(("group" = String, Path, description = "numeric id or UUID"), ContactFilter, PageQuery),
    responses((status = 200, body = Success<Page<Contact>>), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn list_contacts(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    filter: web::Query<ContactFilter>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, contacts::contact::DEFAULT_PER_PAGE)?;
    Ok(ok(state.contacts.list_contacts(&auth.0, group(&path)?, filter.parse()?, page).await?))
}

/// Create a contact (the contract's contact body: `PHONE`, `country_code`, names, custom fields).
#[utoipa::path(post, path = "/api/v3/contact-groups/{group}/contacts", tag = "Contacts", request_body = ContactCreate,
    params(("group" = String, Path, description = "numeric id or UUID")),
    responses((status = 201, body = Success<Contact>), (status = 404, body = ErrorEnvelope), (status = 409, body = ErrorEnvelope, description = "The number is already in the group: `errors` names the field, `contact_uid` the contact that has it."), (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn create_contact(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<ContactCreate>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.contacts.create_contact(&auth.0, group(&path)?, body.0.0).await?))
}

/// Create or update up to 500 contacts; 207 when any row was rejected.
#[utoipa::path(post, path = "/api/v3/contact-groups/{group}/contacts/batch", operation_id = "batch_contacts", tag = "Contacts", request_body = NewContacts,
    params(("group" = String, Path, description = "numeric id or UUID")),
    responses((status = 200, body = Success<BatchReport>), (status = 207, body = Success<BatchReport>), (status = 404, body = ErrorEnvelope), (status = 409, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn batch(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<NewContacts>,
) -> Result<HttpResponse, ApiError> {
    let report = state.contacts.batch(&auth.0, group(&path)?, body.0).await?;
    let status = if report.rejected > 0 { StatusCode::MULTI_STATUS } else { StatusCode::OK };
    Ok(with_status(status, report))
}

/// Read one contact of the group, by `ctc_` uid or numeric id.
#[utoipa::path(get, path = "/api/v3/contact-groups/{group}/contacts/{contact}", tag = "Contacts",
    params(("group" = String, Path), ("contact" = String, Path, description = "ctc_ uid or numeric id")),
    responses((status = 200, body = Success<Contact>), (status = 404, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn get_contact(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (g, c) = path.into_inner();
    Ok(ok(state.contacts.get_contact(&auth.0, group(&g)?, &contact(&c)?).await?))
}

/// Change only the keys sent; custom fields merge, null removes one.
#[utoipa::path(patch, path = "/api/v3/contact-groups/{group}/contacts/{contact}", tag = "Contacts", request_body = ContactInput,
    params(("group" = String, Path), ("contact" = String, Path, description = "ctc_ uid or numeric id")),
    responses((status = 200, body = Success<Contact>), (status = 404, body = ErrorEnvelope), (status = 409, body = ErrorEnvelope, description = "The number is already in the group: `errors` names the field, `contact_uid` the contact that has it."), (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn update_contact(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Json<ContactInput>,
) -> Result<HttpResponse, ApiError> {
    let (g, c) = path.into_inner();
    Ok(ok(state.contacts.update_contact(&auth.0, group(&g)?, &contact(&c)?, body.0).await?))
}

/// Delete a contact; answers the deleted contact.
#[utoipa::path(delete, path = "/api/v3/contact-groups/{group}/contacts/{contact}", tag = "Contacts",
    params(("group" = String, Path), ("contact" = String, Path, description = "ctc_ uid or numeric id")),
    responses((status = 200, body = Success<Contact>), (status = 404, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn delete_contact(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (g, c) = path.into_inner();
    Ok(ok(state.contacts.delete_contact(&auth.0, group(&g)?, &contact(&c)?).await?))
}

/// Search contacts across every group (`q`), or in one (`group_id`).
#[utoipa::path(get, path = "/api/v3/contacts", tag = "Contacts", params(ContactSearch, PageQuery),
    responses((status = 200, body = Success<Page<Contact>>), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn search(
    auth: Auth,
    state: web::Data<AppState>,
    query: web::Query<ContactSearch>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, contacts::contact::DEFAULT_PER_PAGE)?;
    let group = query.group_id.as_deref().filter(|g| !g.trim().is_empty()).map(group).transpose()?;
    Ok(ok(state.contacts.search_contacts(&auth.0, query.q.clone(), group, page).await?))
}

// --- the original paths (same behaviour and records) -----------------------------------------

/// Original list: `POST /contacts/{group_id}/all`; filters and paging from the query or the body.
#[utoipa::path(post, path = "/api/v3/contacts/{group_id}/all", tag = "Contacts (original paths)",
    params(("group_id" = String, Path), ContactFilter, PageQuery), request_body = ListBody,
    responses((status = 200, body = Success<Page<Contact>>), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn original_list(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    filter: web::Query<ContactFilter>,
    page: web::Query<PageQuery>,
    body: Json<ListBody>,
) -> Result<HttpResponse, ApiError> {
    let (filter, page) = body.0.read(&filter, &page)?;
    Ok(ok(state.contacts.list_contacts(&auth.0, group(&path)?, filter, page).await?))
}

/// Original create: `POST /contacts/{group_id}/store`.
#[utoipa::path(post, path = "/api/v3/contacts/{group_id}/store", tag = "Contacts (original paths)",
    params(("group_id" = String, Path)), request_body = ContactCreate,
    responses((status = 201, body = Success<Contact>), (status = 404, body = ErrorEnvelope), (status = 409, body = ErrorEnvelope, description = "The number is already in the group: `errors` names the field, `contact_uid` the contact that has it."), (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn original_store(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<ContactCreate>,
) -> Result<HttpResponse, ApiError> {
    create_contact(auth, state, path, body).await
}

/// Original read: `POST /contacts/{group_id}/search/{uid}`.
#[utoipa::path(post, path = "/api/v3/contacts/{group_id}/search/{uid}", tag = "Contacts (original paths)",
    params(("group_id" = String, Path), ("uid" = String, Path)),
    responses((status = 200, body = Success<Contact>), (status = 404, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn original_search(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    get_contact(auth, state, path).await
}

/// Original update: `PATCH /contacts/{group_id}/update/{uid}`.
#[utoipa::path(patch, path = "/api/v3/contacts/{group_id}/update/{uid}", tag = "Contacts (original paths)",
    params(("group_id" = String, Path), ("uid" = String, Path)), request_body = ContactInput,
    responses((status = 200, body = Success<Contact>), (status = 404, body = ErrorEnvelope), (status = 409, body = ErrorEnvelope, description = "The number is already in the group: `errors` names the field, `contact_uid` the contact that has it."), (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn original_update(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Json<ContactInput>,
) -> Result<HttpResponse, ApiError> {
    update_contact(auth, state, path, body).await
}

/// Original delete: `DELETE /contacts/{group_id}/delete/{uid}`.
#[utoipa::path(delete, path = "/api/v3/contacts/{group_id}/delete/{uid}", tag = "Contacts (original paths)",
    params(("group_id" = String, Path), ("uid" = String, Path)),
    responses((status = 200, body = Success<Contact>), (status = 404, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn original_delete(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    delete_contact(auth, state, path).await
}
