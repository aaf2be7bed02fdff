//! Chat groups through the Cloud API's Groups API (Graph API shape): a group is asked for with
//! `POST /{phone_number_id}/groups` and confirmed later by the `group_lifecycle_update` webhook;
//! its settings, invite link, join requests and participants are edges of the group id; group
//! messages and pins go through `/{phone_number_id}/messages` with `recipient_type: group`.
//!
//! The four group webhook fields (`group_lifecycle_update`, `group_participants_update`,
//! `group_settings_update`, `group_status_update`) carry a `groups[]` array of updates, each
//! named by its `type`; they are read here for `cloud::parse_webhook`.

use serde_json::{Map, Value, json};

use crate::chat::{ChatEvent, ChatWebhook};
use crate::chat_groups::{
    GroupError, GroupPin, GroupRequested, GroupUpdate, JoinRequest, NewGroup, OutboundGroupMessage,
};
use crate::cloud::{Answer, Cloud, GraphError, coded, integer, items, member, message_object, stated_error, text};
use crate::sms::{CallbackError, SendError, SendOutcome};

/// Participants one remove request may name (the Groups API's limit).
const PARTICIPANTS_PER_REMOVE: usize = 8;
/// Graph's "invalid parameter" and the subcode it adds when the object does not exist.
const INVALID_PARAMETER: i64 = 100;
const NO_SUCH_OBJECT: i64 = 33;
/// The reason given when the provider failed something without saying why.
const UNSAID: &str = "the provider did not say why";

/// A non-2xx answer: the provider's own words when it said no, a failure when it is throttling,
/// in trouble or unreadable.
fn refusal(answer: &Answer, what: &str) -> GroupError {
    match stated_error(answer) {
        Ok(error) => refused(&error, what),
        Err(error) => GroupError::Failed(error),
    }
}

fn refused(error: &GraphError, what: &str) -> GroupError {
    let reason = error.reason_for_people();
    tracing::info!(reason, "the Cloud API refused {what}");
    GroupError::Refused { reason }
}

/// Whether a refusal says the object is gone: Graph's "does not exist" (code 100, subcode 33).
fn names_no_such_object(error: &GraphError) -> bool {
    (error.code == Some(INVALID_PARAMETER) && error.subcode == Some(NO_SUCH_OBJECT))
        || error.reason.to_ascii_lowercase().contains("does not exist")
}

/// A 2xx body that may say `{"success": false}`; anything else is a yes (these answers are not
/// documented beyond that).
fn confirmed(answer: &Answer, what: &str) -> Result<(), GroupError> {
    let said_no = answer.json(what).ok().is_some_and(|body| body.get("success") == Some(&Value::Bool(false)));
    if said_no {
        return Err(SendError::Malformed(format!("{what} answered without success")).into());
    }
    Ok(())
}

/// One provider error object (of a webhook or a partial answer) in one line:
/// `(#code) message: details`.
fn error_line(error: &Value) -> Option<String> {
    let code = error.get("code").and_then(integer);
    let words = error.get("message").and_then(text).or_else(|| error.get("title").and_then(text));
    let details = error.pointer("/error_data/details").and_then(text);
    let mut line = match (code, words) {
        (code, Some(words)) => coded(code, &words),
        (Some(code), None) => format!("(#{code})"),
        (None, None) => return details,
    };
    if let Some(details) = details.filter(|details| !line.contains(details.as_str())) {
        line.push_str(": ");
        line.push_str(&details);
    }
    Some(line)
}

/// The lines of an `errors[]` array, joined; `None` when it says nothing.
fn error_words(errors: &[Value]) -> Option<String> {
    let lines: Vec<String> = errors.iter().filter_map(error_line).collect();
    (!lines.is_empty()).then(|| lines.join("; "))
}

fn errors_of(value: &Value) -> &[Value] {
    value.get("errors").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// The entries of a partial answer's `failed_*` list, as (the id the provider names, its words).
/// An entry may be an object naming its id under one of `id_keys`, or the bare id.
fn failures(answer: &Value, list: &str, id_keys: &[&str]) -> Vec<(String, String)> {
    let mut failed = Vec::new();
    for entry in answer.get(list).and_then(Value::as_array).into_iter().flatten() {
        let id = match entry {
            Value::Object(_) => id_keys.iter().find_map(|key| entry.get(*key).and_then(text)),
            other => text(other),
        };
        let Some(id) = id else {
            tracing::warn!(%entry, "the Cloud API reported a failure in {list} without naming it");
            continue;
        };
        let reason = error_words(errors_of(entry))
            .or_else(|| error_words(errors_of(answer)))
            .unwrap_or_else(|| UNSAID.to_owned());
        failed.push((id, reason));
    }
    failed
}

fn digits(s: &str) -> String {
    s.chars().filter(char::is_ascii_digit).collect()
}

impl Cloud {
    /// Sends a JSON body with `verb` to `segments`; the 2xx answer, or why not.
    async fn group_call(
        &self,
        verb: reqwest::Method,
        segments: &[&str],
        body: Option<&Value>,
        what: &str,
    ) -> Result<Answer, GroupError> {
        let url = self.endpoint(segments, &[])?;
        let mut request = self.client.request(verb, url);
        if let Some(body) = body {
            request = request.json(body);
        }
        let answer = self.call(request).await?;
        if !answer.is_success() {
            return Err(refusal(&answer, what));
        }
        Ok(answer)
    }

    /// An `invite_link` answer.
    fn invite_link_of(answer: &Answer, what: &str) -> Result<String, GroupError> {
        let body = answer.json(what)?;
        body.get("invite_link")
            .and_then(text)
            .ok_or_else(|| GroupError::Failed(SendError::Malformed(format!("{what} answered without an invite_link"))))
    }

    pub(crate) async fn groups_create(&self, group: NewGroup<'_>) -> Result<GroupRequested, GroupError> {
        let mut body = Map::new();
        body.insert("messaging_product".into(), json!("whatsapp"));
        body.insert("subject".into(), json!(group.subject));
        if let Some(description) = group.description {
            body.insert("description".into(), json!(description));
        }
        body.insert("join_approval_mode".into(), json!(group.join_approval_mode));
        let what = "the group creation";
        let answer = self
            .group_call(reqwest::Method::POST, &[group.phone_number_id, "groups"], Some(&Value::Object(body)), what)
            .await?;
        let request_id = answer
            .json(what)?
            .get("request_id")
            .and_then(text)
            .ok_or_else(|| SendError::Malformed("a group creation taken without a request_id".into()))?;
        tracing::info!(phone_number_id = group.phone_number_id, request_id, "the Cloud API took a group creation");
        Ok(GroupRequested { request_id, scheduled: None })
    }

    /// Nothing to change is not a call.
    pub(crate) async fn groups_update(
        &self,
        group_id: &str,
        subject: Option<&str>,
        description: Option<&str>,
    ) -> Result<(), GroupError> {
        if subject.is_none() && description.is_none() {
            return Ok(());
        }
        let mut body = Map::new();
        body.insert("messaging_product".into(), json!("whatsapp"));
        if let Some(subject) = subject {
            body.insert("subject".into(), json!(subject));
        }
        if let Some(description) = description {
            body.insert("description".into(), json!(description));
        }
        let what = "the group settings update";
        let answer = self.group_call(reqwest::Method::POST, &[group_id], Some(&Value::Object(body)), what).await?;
        confirmed(&answer, what)
    }

    pub(crate) async fn groups_delete(&self, group_id: &str) -> Result<(), GroupError> {
        let what = "the group delete";
        let url = self.endpoint(&[group_id], &[])?;
        let answer = self.call(self.client.delete(url)).await?;
        if answer.is_success() {
            return confirmed(&answer, what);
        }
        if answer.status == 404 {
            return Ok(());
        }
        match stated_error(&answer)? {
            error if names_no_such_object(&error) => {
                tracing::debug!(group_id, reason = error.reason, "the group to delete is already gone");
                Ok(())
            }
            error => Err(refused(&error, what)),
        }
    }

    pub(crate) async fn groups_invite_link(&self, group_id: &str) -> Result<String, GroupError> {
        let what = "the invite link read";
        let answer = self.group_call(reqwest::Method::GET, &[group_id, "invite_link"], None, what).await?;
        Cloud::invite_link_of(&answer, what)
    }

    pub(crate) async fn groups_reset_invite_link(&self, group_id: &str) -> Result<String, GroupError> {
        let what = "the invite link reset";
        let body = json!({ "messaging_product": "whatsapp" });
        let answer = self.group_call(reqwest::Method::POST, &[group_id, "invite_link"], Some(&body), what).await?;
        Cloud::invite_link_of(&answer, what)
    }

    /// Approving posts the ids, rejecting deletes them; the answer's `failed_join_requests`
    /// are the refusals. No ids is not a call.
    pub(crate) async fn groups_answer_join_requests(
        &self,
        group_id: &str,
        join_request_ids: &[String],
        approve: bool,
    ) -> Result<Vec<(String, String)>, GroupError> {
        if join_request_ids.is_empty() {
            return Ok(Vec::new());
        }
        let (verb, what) = if approve {
            (reqwest::Method::POST, "the join request approval")
        } else {
            (reqwest::Method::DELETE, "the join request rejection")
        };
        let body = json!({ "messaging_product": "whatsapp", "join_requests": join_request_ids });
        let answer = self.group_call(verb, &[group_id, "join_requests"], Some(&body), what).await?;
        let failed = failures(&answer.json(what)?, "failed_join_requests", &["join_request_id", "id"]);
        tracing::debug!(group_id, asked = join_request_ids.len(), refused = failed.len(), "answered join requests");
        Ok(failed)
    }

    /// At most eight participants a request; the answer's `failed_participants` are the
    /// refusals, named by the id we gave. No ids is not a call.
    pub(crate) async fn groups_remove_participants(
        &self,
        group_id: &str,
        wa_ids: &[String],
    ) -> Result<Vec<(String, String)>, GroupError> {
        let what = "the participant removal";
        let mut refused = Vec::new();
        for chunk in wa_ids.chunks(PARTICIPANTS_PER_REMOVE) {
            let participants: Vec<Value> = chunk.iter().map(|wa_id| json!({ "user": wa_id })).collect();
            let body = json!({ "messaging_product": "whatsapp", "participants": participants });
            let answer =
                self.group_call(reqwest::Method::DELETE, &[group_id, "participants"], Some(&body), what).await?;
            // The answer is not documented; a 2xx without a JSON body is a removal without refusals
            let Ok(answer) = answer.json(what) else { continue };
            for (named, reason) in failures(&answer, "failed_participants", &["input", "user", "wa_id"]) {
                // Named as we gave it, should the provider reformat the number
                let ours = chunk
                    .iter()
                    .find(|wa_id| **wa_id == named || (!digits(wa_id).is_empty() && digits(wa_id) == digits(&named)))
                    .cloned()
                    .unwrap_or(named);
                refused.push((ours, reason));
            }
        }
        tracing::debug!(group_id, asked = wa_ids.len(), refused = refused.len(), "removed group participants");
        Ok(refused)
    }

    pub(crate) async fn groups_send(&self, message: OutboundGroupMessage<'_>) -> Result<SendOutcome, SendError> {
        let reference = message.reference;
        tracing::debug!(reference, kind = message.content.kind(), "sending a group message through the Cloud API");
        let body = message_object("group", message.group_id, message.content, None, reference);
        self.post_message(message.phone_number_id, &body, reference).await
    }

    pub(crate) async fn groups_pin(&self, pin: GroupPin<'_>) -> Result<(), GroupError> {
        let mut object = Map::new();
        object.insert("type".into(), json!(if pin.pin { "pin" } else { "unpin" }));
        object.insert("message_id".into(), json!(pin.message_id));
        if let Some(days) = pin.expiration_days.filter(|_| pin.pin) {
            object.insert("expiration_days".into(), json!(days));
        }
        let body = json!({
            "messaging_product": "whatsapp",
            "recipient_type": "group",
            "to": pin.group_id,
            "type": "pin",
            "pin": Value::Object(object),
        });
        let what = if pin.pin { "the pin" } else { "the unpin" };
        let answer =
            self.group_call(reqwest::Method::POST, &[pin.phone_number_id, "messages"], Some(&body), what).await?;
        confirmed(&answer, what)
    }
}

/// One change of a group webhook field: each of its `groups[]` updates becomes a
/// [`ChatEvent::Group`]; a `type` this service does not act on (or a failure report it has no
/// event for) is kept in `ignored` as `field.type`.
pub(crate) fn read_group_change(
    field: &str,
    value: &Value,
    at: &str,
    webhook: &mut ChatWebhook,
) -> Result<(), CallbackError> {
    let metadata = value.get("metadata").ok_or_else(|| CallbackError(format!("{at}: no metadata")))?;
    let phone_number_id = member(metadata, "phone_number_id", &format!("{at}.metadata"))?;
    for (g, group) in items(value, "groups", at)?.iter().enumerate() {
        let at = format!("{at}.groups[{g}]");
        let kind = member(group, "type", &at)?;
        match read_group(field, &kind, value, group, &at)? {
            Some(update) => webhook.events.push(ChatEvent::Group { phone_number_id: phone_number_id.clone(), update }),
            None => webhook.ignored.push(format!("{field}.{kind}")),
        }
    }
    Ok(())
}

/// A participant as an update lists it: `wa_id`, else the `input` we gave, else the bare id.
fn participant(entry: &Value) -> Option<String> {
    match entry {
        Value::Object(_) => ["wa_id", "input", "user"].iter().find_map(|key| entry.get(*key).and_then(text)),
        other => text(other),
    }
}

fn participants(group: &Value, key: &str, at: &str) -> Result<Vec<String>, CallbackError> {
    Ok(items(group, key, at)?.iter().filter_map(participant).collect())
}

/// A subject or description the update applied: `{"text": ..., "update_successful": true}`
/// (or, leniently, the bare text).
fn applied_setting(group: &Value, key: &str) -> Option<String> {
    match group.get(key)? {
        Value::Object(setting) => {
            if setting.get("update_successful") == Some(&Value::Bool(false)) {
                let reason = error_words(errors_of(&Value::Object(setting.clone())));
                tracing::info!(setting = key, reason, "the Cloud API did not apply a group setting");
                return None;
            }
            setting.get("text").and_then(text)
        }
        other => text(other),
    }
}

fn read_group(
    field: &str,
    kind: &str,
    value: &Value,
    group: &Value,
    at: &str,
) -> Result<Option<GroupUpdate>, CallbackError> {
    let group_id = || member(group, "group_id", at);
    let update = match (field, kind) {
        ("group_lifecycle_update", "group_create") => {
            let request_id = member(group, "request_id", at)?;
            let errors = items(group, "errors", at)?;
            if errors.is_empty() {
                GroupUpdate::Created {
                    request_id,
                    group_id: group_id()?,
                    invite_link: group.get("invite_link").and_then(text),
                }
            } else {
                GroupUpdate::CreateFailed {
                    request_id,
                    reason: error_words(errors).unwrap_or_else(|| UNSAID.to_owned()),
                }
            }
        }
        ("group_lifecycle_update", "group_delete") => {
            let errors = items(group, "errors", at)?;
            if !errors.is_empty() {
                let reason = error_words(errors);
                tracing::warn!(group_id = group_id().ok(), reason, "the Cloud API reports a failed group delete");
                return Ok(None);
            }
            GroupUpdate::Deleted { group_id: group_id()? }
        }
        ("group_participants_update", "group_participants_add") => {
            let mut wa_ids = participants(group, "added_participants", at)?;
            if wa_ids.is_empty() {
                wa_ids.extend(group.get("wa_id").and_then(text));
            }
            if wa_ids.is_empty() {
                return Ok(None);
            }
            GroupUpdate::Joined { group_id: group_id()?, wa_ids }
        }
        ("group_participants_update", "group_participants_remove") => {
            let wa_ids = participants(group, "removed_participants", at)?;
            let failed = items(group, "failed_participants", at)?;
            if !failed.is_empty() {
                let reason = error_words(errors_of(group));
                tracing::info!(failed = failed.len(), reason, "the Cloud API could not remove some participants");
            }
            if wa_ids.is_empty() {
                return Ok(None);
            }
            // Documented on the update (some samples show it beside it); a leave carries
            // `participant`. Without it, a removal the business asked for carries its request id.
            let initiated_by = group.get("initiated_by").or_else(|| value.get("initiated_by")).and_then(text);
            let removed = match initiated_by.as_deref() {
                Some(by) => by == "business",
                None => group.get("request_id").and_then(text).is_some(),
            };
            GroupUpdate::Left { group_id: group_id()?, wa_ids, removed }
        }
        ("group_participants_update", "group_join_request_created") => GroupUpdate::JoinRequested {
            group_id: group_id()?,
            request: JoinRequest {
                join_request_id: member(group, "join_request_id", at)?,
                wa_id: member(group, "wa_id", at)?,
            },
        },
        ("group_participants_update", "group_join_request_revoked") => GroupUpdate::JoinRequestRevoked {
            group_id: group_id()?,
            join_request_id: member(group, "join_request_id", at)?,
        },
        ("group_settings_update", "group_settings_update") => {
            let subject = applied_setting(group, "group_subject");
            let description = applied_setting(group, "group_description");
            if subject.is_none() && description.is_none() {
                return Ok(None);
            }
            GroupUpdate::Settings { group_id: group_id()?, subject, description }
        }
        ("group_status_update", "group_suspend") => GroupUpdate::Suspended { group_id: group_id()? },
        ("group_status_update", "group_suspend_cleared") => GroupUpdate::SuspensionCleared { group_id: group_id()? },
        _ => return Ok(None),
    };
    Ok(Some(update))
}
