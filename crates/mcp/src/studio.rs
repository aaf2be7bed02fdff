//! The `studio` tools: in-chat forms, over `messaging::MessagingService` and the methods of the
//! `/chat/forms` routes, with their permissions (`forms.*`, the Forms module on). Publishing
//! hands a version to the provider (`mcp:publish`); sending reaches a customer (`mcp:send`);
//! creating and changing a form's working copy is `mcp:write`.

use kernel::{Error, Permission};
use messaging::chat::forms::{
    AnswerPage, AnswersQuery, Form, FormCreate, FormPatch, FormSend, FormSent, QuestionTypes,
};
use serde_json::Value;

use crate::scopes::Elevation;
use crate::tool::{Call, Effect, Tool, answer, numeric_id, params_of, query_input, schema_of, with_members};

const SERVER: &str = "studio";

/// The studio tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_form_question_types",
            title: "List form question types",
            description: "The thirteen question types a form's definition may use, each with the provider component it becomes, the data-table column its answer fits and its limits (label length, options, files, min/max), as GET /chat/forms/question-types does.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::FORMS_VIEW),
            effect: Effect::Read,
            input: || query_input(&[], Vec::new()),
            output: schema_of::<QuestionTypes>,
            call: |call| Box::pin(question_types(call)),
        },
        Tool {
            name: "create_form",
            title: "Create a form",
            description: "Creates an in-chat form on a business account (waba_id; optional with one account): name and definition {pages:[{title, questions:[{key, type, label, required, options:[{key,label}], max_files, min, max, help}]}], submit_label}, or menu_shop_id (and menu_language sw or en) for a menu form of the shop's published products. The form is saved whatever its issues; they come back in issues[] (path, code, message) and must be fixed before publish_form.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::FORMS_CREATE),
            effect: Effect::Create,
            input: schema_of::<FormCreate>,
            output: schema_of::<Form>,
            call: |call| Box::pin(create_form(call)),
        },
        Tool {
            name: "get_form",
            title: "Get a form",
            description: "One form: its working copy and issues, status (draft, published, attention), published versions and the business accounts (role home, added or available; the live version's provider status; the last error).",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::FORMS_VIEW),
            effect: Effect::Read,
            input: || query_input(&[form()], Vec::new()),
            output: schema_of::<Form>,
            call: |call| Box::pin(get_form(call)),
        },
        Tool {
            name: "update_form",
            title: "Change a form",
            description: "Changes a form's name, save_to_table or working copy (definition; a menu form's is fixed). A question published before keeps its type. Answers the form with its issues.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::FORMS_EDIT),
            effect: Effect::Update,
            input: || with_members(schema_of::<FormPatch>(), &[form()]),
            output: schema_of::<Form>,
            call: |call| Box::pin(update_form(call)),
        },
        Tool {
            name: "publish_form",
            title: "Publish a form",
            description: "Publishes the working copy as the form's next version on every business account it is on; the previous version keeps opening for customers who have it for three days. Refused with the issues (ours or the provider's) while the definition breaks a rule; a provider refusal is a temporary failure with its words.",
            server: SERVER,
            elevation: Some(Elevation::Publish),
            permission: Some(Permission::FORMS_PUBLISH),
            // each publish makes a new version: not idempotent
            effect: Effect::Create,
            input: || query_input(&[form()], Vec::new()),
            output: schema_of::<Form>,
            call: |call| Box::pin(publish_form(call)),
        },
        Tool {
            name: "send_form",
            title: "Send a form",
            description: "Sends the form's live version to a customer (to, or conversation_id) from a number of their business account: as the provider's flow message inside their 24-hour window, or with an approved template (template_id) outside it (otherwise refused with reason window_closed). body (at most 1,024) and cta (at most 20) shape the message; reference is kept with the answers. Answers the send_token and the message's uid.",
            server: SERVER,
            elevation: Some(Elevation::Send),
            permission: Some(Permission::FORMS_SEND),
            effect: Effect::Create,
            input: || with_members(schema_of::<FormSend>(), &[form()]),
            output: schema_of::<FormSent>,
            call: |call| Box::pin(send_form(call)),
        },
        Tool {
            name: "list_form_answers",
            title: "List a form's answers",
            description: "A form's answers, newest first (50 a page; before takes next_before; since an RFC 3339 time), keyed by question key (choices as keys, numbers as numbers, dates YYYY-MM-DD, agreements as booleans, uploads as file names); phone, email and upload answers only with forms.answers.export.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::FORMS_ANSWERS_VIEW),
            effect: Effect::Read,
            input: answers_input,
            output: schema_of::<AnswerPage>,
            call: |call| Box::pin(list_form_answers(call)),
        },
    ]
}

/// The form's id: the REST path's `{form}`.
fn form() -> (&'static str, Value, bool) {
    ("form", numeric_id("The form's id."), true)
}

fn answers_input() -> Value {
    query_input(&[form()], params_of::<AnswersQuery>())
}

/// The form's id as the REST path reads it: anything but a whole number names nothing.
fn form_id(call: &mut Call) -> Result<i64, Error> {
    call.take_path("form")?.parse::<i64>().map_err(|_| Error::not_found("Form"))
}

async fn question_types(call: Call) -> Result<Value, Error> {
    answer(call.domains.messaging.form_question_types(&call.caller).await?)
}

async fn create_form(mut call: Call) -> Result<Value, Error> {
    let body: FormCreate = call.body()?;
    answer(call.domains.messaging.create_form(&call.caller, body).await?)
}

async fn get_form(mut call: Call) -> Result<Value, Error> {
    let id = form_id(&mut call)?;
    answer(call.domains.messaging.form(&call.caller, id).await?)
}

async fn update_form(mut call: Call) -> Result<Value, Error> {
    let id = form_id(&mut call)?;
    let body: FormPatch = call.body()?;
    answer(call.domains.messaging.update_form(&call.caller, id, body).await?)
}

async fn publish_form(mut call: Call) -> Result<Value, Error> {
    let id = form_id(&mut call)?;
    answer(call.domains.messaging.publish_form(&call.caller, id).await?)
}

async fn send_form(mut call: Call) -> Result<Value, Error> {
    let id = form_id(&mut call)?;
    let body: FormSend = call.body()?;
    answer(call.domains.messaging.send_form(&call.caller, id, body).await?)
}

async fn list_form_answers(mut call: Call) -> Result<Value, Error> {
    // an unknown member is refused by name, as REST refuses an unknown query member; the others
    // are read as the input schema types them: `before` a number, which `Call::query`'s text
    // is not (`AnswersQuery` reads it as `i64`)
    call.query::<serde::de::IgnoredAny>(&answers_input())?;
    let id = form_id(&mut call)?;
    let query: AnswersQuery = call.body()?;
    answer(call.domains.messaging.form_answers(&call.caller, id, &query).await?)
}
