//! In-chat forms through the Cloud API's Flows API (Graph API shape): a flow is made on the
//! business account with `POST /{waba_id}/flows`, given its Flow JSON as a multipart upload to
//! `POST /{flow_id}/assets` (whose answer lists the JSON's validation errors), published with
//! `POST /{flow_id}/publish` and retired with `POST /{flow_id}/deprecate`.
//!
//! Status changes arrive on the `flows` webhook field as the event `FLOW_STATUS_CHANGE`; the
//! field's other events (an endpoint's error rate, latency or availability, customers' error
//! rate, a Flow JSON version about to expire) are kept in `ignored` as `flows.EVENT`. They are
//! read here for `cloud::parse_webhook`.

use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::chat::{ChatEvent, ChatWebhook};
use crate::chat_flows::{FlowError, FlowStatus, FlowValidation};
use crate::cloud::{Answer, Cloud, integer, member, stated_error, text};
use crate::sms::{CallbackError, SendError};

/// The category every flow is made with: a flow needs at least one, it only labels the flow, and
/// the service's forms fit none of the others (sign-up, appointment booking, survey...) better.
const CATEGORY: &str = "OTHER";
/// The asset type of a Flow JSON upload, and the name the Flows API wants it under.
const ASSET_TYPE: &str = "FLOW_JSON";
const ASSET_NAME: &str = "flow.json";
/// The one event of the `flows` field this service acts on.
const STATUS_CHANGE: &str = "FLOW_STATUS_CHANGE";

/// A non-2xx answer: the provider's own words when it said no, a failure when it is throttling,
/// in trouble or unreadable.
fn refusal(answer: &Answer, what: &str) -> FlowError {
    match stated_error(answer) {
        Ok(error) => {
            let reason = error.reason_for_people();
            tracing::info!(reason, "the Cloud API refused {what}");
            FlowError::Refused { reason }
        }
        Err(error) => FlowError::Failed(error),
    }
}

fn malformed(what: &str, missing: &str) -> FlowError {
    FlowError::Failed(SendError::Malformed(format!("{what} answered without {missing}")))
}

/// The documented `{"success": true}`; anything else is an answer it cannot take for a yes.
fn succeeded(answer: &Answer, what: &str) -> Result<(), FlowError> {
    match answer.json(what)?.get("success") {
        Some(Value::Bool(true)) => Ok(()),
        _ => Err(malformed(what, "success")),
    }
}

/// Where a validation error applies: `line 46, column 17`, from the error itself or, in the
/// newer shape, its first `pointers[]` entry.
fn position(entry: &Value) -> Option<String> {
    fn located(at: &Value) -> Option<(i64, &Value)> {
        at.get("line_start").and_then(integer).map(|line| (line, at))
    }
    let (line, at) = located(entry).or_else(|| entry.pointer("/pointers/0").and_then(located))?;
    Some(match at.get("column_start").and_then(integer) {
        Some(column) => format!("line {line}, column {column}"),
        None => format!("line {line}"),
    })
}

/// One of an upload answer's `validation_errors` in one line, `error (error_type): message
/// (line N, column M)`, e.g. `INVALID_PROPERTY (JSON_SCHEMA_ERROR): The property "x" cannot be
/// specified at "$root/screens/0/layout" (line 46, column 17)`.
/// An entry it cannot read is kept as the provider wrote it: an error dropped would pass an
/// invalid flow for a valid one.
pub(crate) fn validation_line(entry: &Value) -> String {
    let field = |key: &str| entry.get(key).and_then(text);
    let kind = match (field("error"), field("error_type")) {
        (Some(error), Some(error_type)) if error != error_type => Some(format!("{error} ({error_type})")),
        (Some(one), _) | (None, Some(one)) => Some(one),
        (None, None) => None,
    };
    let words = match (kind, field("message")) {
        (Some(kind), Some(message)) => format!("{kind}: {message}"),
        (Some(only), None) | (None, Some(only)) => only,
        (None, None) => return text(entry).unwrap_or_else(|| entry.to_string()),
    };
    match position(entry) {
        Some(at) => format!("{words} ({at})"),
        None => words,
    }
}

impl Cloud {
    /// Sends a flow call as the account; the 2xx answer, or why not.
    async fn flow_call(&self, request: reqwest::RequestBuilder, what: &str) -> Result<Answer, FlowError> {
        let answer = self.call(request).await?;
        if !answer.is_success() {
            return Err(refusal(&answer, what));
        }
        Ok(answer)
    }

    pub(crate) async fn flows_create(&self, waba_id: &str, name: &str) -> Result<String, FlowError> {
        let what = "the flow creation";
        let body = json!({ "name": name, "categories": [CATEGORY] });
        let url = self.endpoint(&[waba_id, "flows"], &[])?;
        let answer = self.flow_call(self.client.post(url).json(&body), what).await?;
        let flow_id = answer.json(what)?.get("id").and_then(text).ok_or_else(|| malformed(what, "an id"))?;
        tracing::info!(waba_id, flow_id, "the Cloud API made a flow");
        Ok(flow_id)
    }

    /// The JSON goes up pretty-printed, so that the lines and columns the validation errors
    /// name point somewhere a person can find.
    pub(crate) async fn flows_upload_json(
        &self,
        flow_id: &str,
        flow_json: &Value,
    ) -> Result<FlowValidation, FlowError> {
        let what = "the Flow JSON upload";
        let file = serde_json::to_vec_pretty(flow_json)
            .map_err(|e| SendError::Malformed(format!("the Flow JSON cannot be written: {e}")))?;
        let file = Part::bytes(file)
            .file_name(ASSET_NAME)
            .mime_str("application/json")
            .map_err(|e| SendError::Malformed(format!("the Flow JSON part: {e}")))?;
        let form = Form::new().part("file", file).text("name", ASSET_NAME).text("asset_type", ASSET_TYPE);
        let url = self.endpoint(&[flow_id, "assets"], &[])?;
        let answer = self.flow_call(self.client.post(url).multipart(form), what).await?;
        let body = answer.json(what)?;
        let validation: FlowValidation = match body.get("validation_errors") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(errors)) => errors.iter().map(validation_line).collect(),
            Some(other) => vec![validation_line(other)],
        };
        // Taken with validation errors is still taken (`success` stays true); a `false` without
        // any says nothing of what went wrong
        if validation.is_empty() && body.get("success") != Some(&Value::Bool(true)) {
            return Err(malformed(what, "success"));
        }
        tracing::info!(flow_id, validation_errors = validation.len(), "the Cloud API took a Flow JSON");
        Ok(validation)
    }

    pub(crate) async fn flows_publish(&self, flow_id: &str) -> Result<(), FlowError> {
        let what = "the flow publication";
        let url = self.endpoint(&[flow_id, "publish"], &[])?;
        succeeded(&self.flow_call(self.client.post(url), what).await?, what)?;
        tracing::info!(flow_id, "the Cloud API published a flow");
        Ok(())
    }

    pub(crate) async fn flows_deprecate(&self, flow_id: &str) -> Result<(), FlowError> {
        let what = "the flow deprecation";
        let url = self.endpoint(&[flow_id, "deprecate"], &[])?;
        succeeded(&self.flow_call(self.client.post(url), what).await?, what)?;
        tracing::info!(flow_id, "the Cloud API deprecated a flow");
        Ok(())
    }
}

/// One change of the `flows` webhook field (`{"event": ..., "flow_id": ..., "message": ...}`,
/// without metadata): a status change becomes a [`ChatEvent::Flow`], any other event is kept in
/// `ignored` as `flows.EVENT`.
pub(crate) fn read_flow_change(value: &Value, at: &str, webhook: &mut ChatWebhook) -> Result<(), CallbackError> {
    let event = member(value, "event", at)?;
    if event != STATUS_CHANGE {
        let flow_id = value.get("flow_id").and_then(text);
        let message = value.get("message").and_then(text);
        tracing::info!(event, flow_id, message, "a flows event this service does not act on");
        webhook.ignored.push(format!("flows.{event}"));
        return Ok(());
    }
    webhook.events.push(ChatEvent::Flow(FlowStatus {
        flow_id: member(value, "flow_id", at)?,
        new_status: member(value, "new_status", at)?,
        old_status: value.get("old_status").and_then(text),
    }));
    Ok(())
}
