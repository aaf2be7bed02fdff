//! Sending a form: the live version, as the provider's flow message (inside the customer's
//! 24-hour window) or an approved template with a flow button (outside it), from a number of
//! the customer's business account. The send token travels with the flow and comes back with
//! the reply.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::error::FieldErrors;
use kernel::{Caller, Error, ErrorKind, Permission};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{allowed, row};
use crate::MessagingService;
use crate::chat::ChatSendRequest;
use crate::chat::conversations::Row as ConversationRow;
use crate::chat::send::TemplateBody;
use crate::schema::{
    chat_form_accounts as fa, chat_form_flows as ff, chat_form_sends as fs, chat_templates, conversations,
};

/// Sends an hour of a throttled version (contract: Form version state, THROTTLED).
pub const THROTTLED_PER_HOUR: i64 = 10;

/// `POST /chat/forms/{form}/send`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct FormSend {
    /// The customer's number (with its country code); or `conversation_id`.
    #[schema(max_length = 191)]
    pub to: Option<String>,
    pub conversation_id: Option<i64>,
    /// The message's text above the button (at most 1,024; default: the form's name).
    #[schema(max_length = 1024)]
    pub body: Option<String>,
    /// The button's label (at most 20; default `Open`).
    #[schema(max_length = 20)]
    pub cta: Option<String>,
    /// Your reference, kept with the send and its answers (at most 128).
    #[schema(max_length = 128)]
    pub reference: Option<String>,
    /// An approved template with a flow button (`GET /chat/templates`), to reach a customer
    /// whose 24-hour window is closed.
    pub template_id: Option<i64>,
}

/// The answer of a send (202).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FormSent {
    /// The token the customer's reply carries back.
    pub send_token: String,
    /// The message's uid (`GET /chat/{uid}`).
    pub message_id: String,
    pub status: String,
    pub version: i32,
}

impl MessagingService {
    /// `POST /chat/forms/{form}/send`: 202 once the message is queued or sent.
    pub async fn send_form(&self, caller: &Caller, id: i64, body: FormSend) -> Result<FormSent, Error> {
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        allowed(&mut conn, caller, Permission::FORMS_SEND).await?;
        let mut errors = FieldErrors::new();
        let text = crate::chat::groups::text(&mut errors, "body", body.body.as_deref(), 1_024);
        let cta = crate::chat::groups::text(&mut errors, "cta", body.cta.as_deref(), 20);
        let reference = crate::chat::groups::text(&mut errors, "reference", body.reference.as_deref(), 128);
        errors.finish()?;
        let form = row(&mut conn, tenant, id).await?;
        if form.version == 0 {
            return Err(Error::conflict("The form is not published yet: publish it first."));
        }
        // the customer's conversation: by id, or their newest by number
        let mut query = conversations::table.filter(conversations::tenant_id.eq(tenant.0)).into_boxed();
        query = match (body.conversation_id, body.to.as_deref()) {
            (Some(conversation), _) => query.filter(conversations::id.eq(conversation)),
            (None, Some(to)) => {
                let number = crate::recipients::normalize(to, &caller.calling_code)
                    .ok_or_else(|| Error::field("to", "The to is not a valid phone number."))?;
                query.filter(conversations::customer.eq(number))
            }
            (None, None) => return Err(Error::field("to", "Name the customer: to or conversation_id.")),
        };
        let conversation: ConversationRow = query
            .order(conversations::last_inbound_at.desc().nulls_last())
            .select(ConversationRow::as_select())
            .first(&mut conn)
            .await
            .optional()?
            .ok_or_else(|| match body.conversation_id {
                Some(_) => Error::not_found("Conversation"),
                None => Error::conflict("The customer has never written: only an approved template can reach them, and it needs their conversation.")
                    .with_reason("window_closed"),
            })?;
        // the form must be live on the customer's business account
        let on_account: i64 = fa::table
            .filter(fa::tenant_id.eq(tenant.0))
            .filter(fa::form_id.eq(form.id))
            .filter(fa::account_id.eq(conversation.account_id))
            .count()
            .get_result(&mut conn)
            .await?;
        let flow: Option<(Option<String>, Option<String>)> = ff::table
            .filter(ff::tenant_id.eq(tenant.0))
            .filter(ff::form_id.eq(form.id))
            .filter(ff::version.eq(form.version))
            .filter(ff::account_id.eq(conversation.account_id))
            .select((ff::flow_id, ff::live_status))
            .first(&mut conn)
            .await
            .optional()?;
        let (Some((Some(flow_id), status)), true) = (flow, on_account > 0) else {
            return Err(Error::field(
                "to",
                "The form is not on the customer's business account: deploy it there (POST .../deployments).",
            )
            .with_reason("other_account"));
        };
        match status.as_deref() {
            Some("BLOCKED") => {
                return Err(Error::conflict("The provider blocked this form on the customer's account."));
            }
            Some("THROTTLED") => {
                let hour_ago = self.clock.now() - time::Duration::hours(1);
                let recent: i64 = fs::table
                    .filter(fs::tenant_id.eq(tenant.0))
                    .filter(fs::form_id.eq(form.id))
                    .filter(fs::account_id.eq(conversation.account_id))
                    .filter(fs::created_at.gt(hour_ago))
                    .count()
                    .get_result(&mut conn)
                    .await?;
                if recent >= THROTTLED_PER_HOUR {
                    return Err(Error::new(
                        ErrorKind::RateLimited,
                        "The provider throttles this form: at most 10 sends an hour. Try again later.",
                    ));
                }
            }
            _ => {}
        }
        let open = conversation.window_expires_at.is_some_and(|at| at > self.clock.now());
        let token = format!("ft_{}", uuid::Uuid::new_v4().simple());
        let mut request = ChatSendRequest {
            recipient: Some(conversation.customer.clone()),
            sender_id: Some(conversation.phone_number_id.clone()),
            ..Default::default()
        };
        match (open, body.template_id) {
            (_, Some(template)) => {
                let found: Option<(String, String, String, Option<String>, i64)> = chat_templates::table
                    .filter(chat_templates::tenant_id.eq(tenant.0))
                    .filter(chat_templates::id.eq(template))
                    .select((
                        chat_templates::name,
                        chat_templates::language,
                        chat_templates::status,
                        chat_templates::chat_status,
                        chat_templates::account_id,
                    ))
                    .first(&mut conn)
                    .await
                    .optional()?;
                let Some((name, language, state, review, account)) = found else {
                    return Err(Error::field("template_id", "The template_id is not a template of this account."));
                };
                if state != "active" || review.as_deref() != Some("approved") || account != conversation.account_id {
                    return Err(Error::field(
                        "template_id",
                        "The template must be approved and on the customer's business account.",
                    ));
                }
                let button = json!({ "type": "button", "sub_type": "flow", "index": "0",
                    "parameters": [{ "type": "action", "action": { "flow_token": token } }] });
                request.message_type = Some("template".into());
                request.template =
                    Some(TemplateBody { name: Some(name), language: Some(language), components: Some(vec![button]) });
            }
            (false, None) => {
                return Err(Error::conflict(
                    "The customer's 24-hour window is closed: send the form with an approved template (template_id).",
                )
                .with_reason("window_closed"));
            }
            (true, None) => {
                let interactive = json!({
                    "type": "flow",
                    "body": { "text": text.clone().unwrap_or_else(|| form.name.clone()) },
                    "action": { "name": "flow", "parameters": {
                        "flow_message_version": "3",
                        "flow_token": token,
                        "flow_id": flow_id,
                        "flow_cta": cta.clone().unwrap_or_else(|| "Open".to_owned()),
                        "flow_action": "navigate",
                        "flow_action_payload": { "screen": crate::forms::flow_json::screen_id(0) },
                    }},
                });
                request.message_type = Some("interactive".into());
                request.interactive = Some(interactive);
            }
        }
        diesel::insert_into(fs::table)
            .values((
                fs::token.eq(&token),
                fs::tenant_id.eq(tenant.0),
                fs::form_id.eq(form.id),
                fs::version.eq(form.version),
                fs::account_id.eq(conversation.account_id),
                fs::conversation_id.eq(conversation.id),
                fs::reference.eq(&reference),
                // the answer's `source`: the way the form was sent
                fs::source.eq(match caller.credential {
                    kernel::CredentialKind::RestKey => "api",
                    kernel::CredentialKind::McpConnection | kernel::CredentialKind::OAuthToken => "mcp",
                }),
                fs::created_at.eq(self.clock.now()),
            ))
            .execute(&mut conn)
            .await?;
        drop(conn);
        let sent = self.send_chat(caller, request).await?;
        let message =
            sent.messages.into_iter().next().ok_or_else(|| Error::internal("a form send without its message"))?;
        let mut conn = self.conn(tenant).await?;
        diesel::update(fs::table.filter(fs::tenant_id.eq(tenant.0)).filter(fs::token.eq(&token)))
            .set(fs::message_uid.eq(&message.uid))
            .execute(&mut conn)
            .await?;
        Ok(FormSent { send_token: token, message_id: message.uid, status: message.status, version: form.version })
    }
}
