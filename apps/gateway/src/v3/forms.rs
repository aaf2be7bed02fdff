//! In-chat forms (contract: Forms). Every rule lives in `messaging::chat::forms`; these
//! handlers parse and wrap.

use actix_web::{HttpResponse, web};
use messaging::chat::forms::publish::Deployments;
use messaging::chat::forms::{
    AnswerPage, AnswersQuery, Form, FormCreate, FormPatch, FormSend, FormSent, QuestionTypes,
};

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::envelope::with_status;
use crate::http::{ApiError, Auth, Json, created, ok};

fn form_id(path: &str) -> Result<i64, ApiError> {
    Ok(path.parse::<i64>().map_err(|_| kernel::Error::not_found("Form"))?)
}

/// The thirteen question types, with the provider component each becomes, the data-table
/// column its answer fits and its limits.
#[utoipa::path(get, path = "/api/v3/chat/forms/question-types", operation_id = "chat_form_question_types",
    tag = "Chat forms", responses((status = 200, body = Success<QuestionTypes>), Refusals), security(("bearer" = [])))]
pub async fn question_types(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.form_question_types(&auth.0).await?))
}

/// Create a form (saved whatever its issues, which come back with it), or a menu form of a
/// shop's published products.
#[utoipa::path(post, path = "/api/v3/chat/forms", operation_id = "chat_create_form", tag = "Chat forms",
    request_body = FormCreate,
    responses((status = 201, body = Success<Form>),
        (status = 422, body = ErrorEnvelope, description = "validation; unknown business account or shop"),
        Refusals), security(("bearer" = [])))]
pub async fn create(auth: Auth, state: web::Data<AppState>, body: Json<FormCreate>) -> Result<HttpResponse, ApiError> {
    Ok(created(state.messaging.create_form(&auth.0, body.0).await?))
}

/// One form with its versions and business accounts.
#[utoipa::path(get, path = "/api/v3/chat/forms/{form}", operation_id = "chat_form", tag = "Chat forms",
    params(("form" = i64, Path)),
    responses((status = 200, body = Success<Form>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.form(&auth.0, form_id(&path)?).await?))
}

/// Change the name, settings or working copy (a menu form's definition is fixed: 409).
#[utoipa::path(patch, path = "/api/v3/chat/forms/{form}", operation_id = "chat_update_form", tag = "Chat forms",
    params(("form" = i64, Path)), request_body = FormPatch,
    responses((status = 200, body = Success<Form>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "a menu form's definition"),
        (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn update(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<FormPatch>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.update_form(&auth.0, form_id(&path)?, body.0).await?))
}

/// Publish the working copy as the next version on every account the form is on.
#[utoipa::path(post, path = "/api/v3/chat/forms/{form}/publish", operation_id = "chat_publish_form", tag = "Chat forms",
    params(("form" = i64, Path)),
    responses((status = 200, body = Success<Form>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope, description = "the form's issues, ours or the provider's"),
        (status = 502, body = ErrorEnvelope, description = "the provider refused or could not be reached"),
        Refusals), security(("bearer" = [])))]
pub async fn publish(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.publish_form(&auth.0, form_id(&path)?).await?))
}

/// Send the live version to a customer: 202 with the send token and the message's id.
#[utoipa::path(post, path = "/api/v3/chat/forms/{form}/send", operation_id = "chat_send_form", tag = "Chat forms",
    params(("form" = i64, Path)), request_body = FormSend,
    responses((status = 202, body = Success<FormSent>), (status = 404, body = ErrorEnvelope),
        (status = 402, body = ErrorEnvelope, description = "the prepaid balance cannot pay for the message"),
        (status = 409, body = ErrorEnvelope, description = "outside the 24-hour window without an approved template; not published"),
        (status = 422, body = ErrorEnvelope, description = "validation; `other_account`: the form is not on the customer's account"),
        (status = 429, body = ErrorEnvelope, description = "a throttled version's ten sends an hour"),
        Refusals), security(("bearer" = [])))]
pub async fn send(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<FormSend>,
) -> Result<HttpResponse, ApiError> {
    let sent = state.messaging.send_form(&auth.0, form_id(&path)?, body.0).await?;
    Ok(with_status(actix_web::http::StatusCode::ACCEPTED, sent))
}

/// Answers, newest first (50 a page; `before` takes `next_before`).
#[utoipa::path(get, path = "/api/v3/chat/forms/{form}/answers", operation_id = "chat_form_answers", tag = "Chat forms",
    params(("form" = i64, Path), AnswersQuery),
    responses((status = 200, body = Success<AnswerPage>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn answers(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    query: web::Query<AnswersQuery>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.form_answers(&auth.0, form_id(&path)?, &query).await?))
}

/// Put the form on more business accounts (the live version published there).
#[utoipa::path(post, path = "/api/v3/chat/forms/{form}/deployments", operation_id = "chat_deploy_form", tag = "Chat forms",
    params(("form" = i64, Path)), request_body = Deployments,
    responses((status = 200, body = Success<Form>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn deploy(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<Deployments>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.deploy_form(&auth.0, form_id(&path)?, body.0).await?))
}

/// Take the form off an added business account.
#[utoipa::path(delete, path = "/api/v3/chat/forms/{form}/deployments/{waba}", operation_id = "chat_undeploy_form",
    tag = "Chat forms", params(("form" = i64, Path), ("waba" = String, Path)),
    responses((status = 200, body = Success<Form>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "the form's home account"),
        (status = 502, body = ErrorEnvelope, description = "the provider refused"), Refusals),
    security(("bearer" = [])))]
pub async fn undeploy(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (form, waba) = path.into_inner();
    Ok(ok(state.messaging.undeploy_form(&auth.0, form_id(&form)?, &waba).await?))
}
