//! The `content` tools: the chat (WhatsApp) message templates, over
//! `messaging::MessagingService`, each calling the method its REST route calls
//! (`GET /chat/templates`, `GET /chat/templates/{id}`, `POST /chat/templates`,
//! `POST /chat/templates/{id}/submit`, `POST /chat/templates/{id}/refresh`). Reads and the
//! refresh need `communications.templates.view`, creating and submitting
//! `communications.templates.manage`, as on REST (the service checks them). Creating and
//! submitting hand the template to the provider for review, the step from a draft to something
//! sendable to customers: they need `mcp:publish`.

use kernel::{Error, Permission};
use messaging::chat::{Template, TemplateCreate, TemplateFilter};
use serde_json::{Value, json};

use crate::scopes::Elevation;
use crate::tool::{Call, Effect, Tool, answer, list_of, numeric_id, object, params_of, query_input, schema_of};

const SERVER: &str = "content";

/// The content tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_templates",
            title: "List message templates",
            description: "The account's chat (WhatsApp) message templates, by name, language and business account (not paged), as GET /chat/templates does: each with its review state (chat_status: in_review, approved, rejected with rejection_reason, pending, paused, disabled; null for a draft), sendable (approved and active: send_chat_template may use it), variables (the placeholders) and components. updated_since (ISO 8601 with an offset or Z) reads only the templates changed since then.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::TEMPLATES_VIEW),
            effect: Effect::Read,
            input: list_input,
            output: || list_of("items", schema_of::<Template>()),
            call: |call| Box::pin(list_templates(call)),
        },
        Tool {
            name: "get_template",
            title: "Get a message template",
            description: "One chat message template by its id, as GET /chat/templates/{id} answers it: its review state, rejection_reason, submission (submitted, queued, message), pending_edit, variables, components and deployments on the workspace's other business accounts.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::TEMPLATES_VIEW),
            effect: Effect::Read,
            input: || object(&[template()]),
            output: schema_of::<Template>,
            call: |call| Box::pin(get_template(call)),
        },
        Tool {
            name: "create_template",
            title: "Create a message template",
            description: "Creates a chat message template and submits it to the provider for review, as POST /chat/templates does: name (lowercase letters, digits and underscores; never slugged), language (default en), category (utility, marketing or authentication), and the content: body (with {{1}}, {{2}}... placeholders), header_text, footer, buttons and variable_samples (a sample per placeholder), or the provider's own components (which win). waba_id names the business account when there are several. The answer is the template whatever the review says: in_review, rejected with its reason, or pending and queued (retried) when the provider cannot be reached. submit false saves a draft, sent later with submit_template. The same name and language on the same account again is a conflict.",
            server: SERVER,
            elevation: Some(Elevation::Publish),
            permission: Some(Permission::TEMPLATES_MANAGE),
            effect: Effect::Create,
            input: schema_of::<TemplateCreate>,
            output: schema_of::<Template>,
            call: |call| Box::pin(create_template(call)),
        },
        Tool {
            name: "submit_template",
            title: "Submit a message template",
            description: "Submits (or resubmits) a chat message template to the provider for review, as POST /chat/templates/{id}/submit does: a draft, a rejected or pending template, or an edit held during a review; anything else (already in review or judged with nothing new, archived) is a conflict: nothing to submit. Answers the template with its new review state.",
            server: SERVER,
            elevation: Some(Elevation::Publish),
            permission: Some(Permission::TEMPLATES_MANAGE),
            effect: Effect::Update,
            input: || object(&[template()]),
            output: schema_of::<Template>,
            call: |call| Box::pin(submit_template(call)),
        },
        Tool {
            name: "refresh_template",
            title: "Refresh a message template's review",
            description: "Reads a chat message template's review state from the provider now, as POST /chat/templates/{id}/refresh does (the service also reads it every 15 minutes while it is in review): answers the template, brought up to date, with refresh.found_on_chat false when the provider does not have it (nothing changes then). A provider failure is refused as provider_failure (retryable) and changes nothing.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::TEMPLATES_VIEW),
            effect: Effect::Read,
            input: || object(&[template()]),
            output: refreshed_output,
            call: |call| Box::pin(refresh_template(call)),
        },
    ]
}

/// The template's id: the REST path's `{id}`.
fn template() -> (&'static str, Value, bool) {
    ("template", numeric_id("The template's id."), true)
}

/// `GET /chat/templates`' query: `updated_since`.
fn list_input() -> Value {
    query_input(&[], params_of::<TemplateFilter>())
}

/// The refresh's answer: the template's members with `refresh` beside them (REST flattens the
/// template in, which its derived schema would write as an `allOf`; the same members written as
/// one object).
fn refreshed_output() -> Value {
    let mut schema = schema_of::<Template>();
    schema["properties"]["refresh"] = object(&[(
        "found_on_chat",
        json!({"type": "boolean", "description": "False when the provider does not have the template."}),
        true,
    )]);
    if let Some(required) = schema["required"].as_array_mut() {
        required.push(json!("refresh"));
    }
    schema["description"] = json!("The template as the provider has it now, and what the refresh found.");
    schema
}

/// The template's id as the REST path reads it: anything but a whole number names nothing.
fn template_id(call: &mut Call) -> Result<i64, Error> {
    call.take_path("template")?.parse::<i64>().map_err(|_| Error::not_found("Template"))
}

async fn list_templates(call: Call) -> Result<Value, Error> {
    let filter: TemplateFilter = call.query(&list_input())?;
    let items = call.domains.messaging.templates(&call.caller, &filter).await?;
    Ok(json!({"items": answer(items)?}))
}

async fn get_template(mut call: Call) -> Result<Value, Error> {
    let id = template_id(&mut call)?;
    answer(call.domains.messaging.template(&call.caller, id).await?)
}

async fn create_template(mut call: Call) -> Result<Value, Error> {
    let body: TemplateCreate = call.body()?;
    answer(call.domains.messaging.create_template(&call.caller, body).await?)
}

async fn submit_template(mut call: Call) -> Result<Value, Error> {
    let id = template_id(&mut call)?;
    answer(call.domains.messaging.submit_template(&call.caller, id).await?)
}

async fn refresh_template(mut call: Call) -> Result<Value, Error> {
    let id = template_id(&mut call)?;
    let (template, found_on_chat) = call.domains.messaging.refresh_template(&call.caller, id).await?;
    let mut refreshed = answer(template)?;
    refreshed["refresh"] = json!({"found_on_chat": found_on_chat});
    Ok(refreshed)
}

#[cfg(test)]
mod tests {
    use kernel::caller::Permissions;

    use crate::Grant;

    /// Consent grants `mcp:posts` to a person who may read templates, and `mcp:publish` only to
    /// one who may also manage them.
    #[test]
    fn publishing_templates_is_granted_to_template_managers_only() {
        let tools = crate::all_tools();
        let asked = Grant::parse("mcp:use mcp:posts mcp:publish").expect("grant");
        let viewer = Permissions::Only(["communications.templates.view".to_owned()].into());
        assert_eq!(crate::grantable(&tools, &asked, &viewer).scopes(), ["mcp:posts", "mcp:use"]);
        let manager = Permissions::Only(
            ["communications.templates.view".to_owned(), "communications.templates.manage".to_owned()].into(),
        );
        assert_eq!(crate::grantable(&tools, &asked, &manager).scopes(), ["mcp:posts", "mcp:publish", "mcp:use"]);
        let leads_viewer = Permissions::Only(["leads.view".to_owned()].into());
        assert_eq!(crate::grantable(&tools, &asked, &leads_viewer).scopes(), ["mcp:use"]);
    }
}
