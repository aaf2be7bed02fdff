//! The leads tools (contract: MCP transport, "Leads server tools"), served on the `contacts`
//! server (the contract lists no `leads` server) and on `/mcp`. Each calls the method of
//! `leads::LeadService` its REST route calls, with the same permission, rules and events.
//! No tool deletes or merges leads.

use kernel::page::PageQuery;
use kernel::{Error, PageRequest, Permission, parse_id};
use leads::labels::{LabelNames, LabelWithCount, LabelsAdded, LabelsRemoved};
use leads::list::LeadFilter;
use leads::ops::{Assignment, LeadPatch, NewNote, Note};
use leads::stage::StageChange;
use leads::{Lead, LeadId, UpsertLead, Upserted};
use serde_json::{Value, json};
use store::idempotency::Answer;

use crate::scopes::Elevation;
use crate::tool::{
    Call, Effect, Tool, answer, idempotency_key, key_refusal, list_of, object, params_of, query_input, schema_of, uuid,
    with_def, with_members,
};

const SERVER: &str = "contacts";

/// The leads tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "find_leads",
            title: "Find leads",
            description: "The leads the issuer may see, newest activity first (20 a page): open ones unless status says otherwise; filter by stage, label, channel, assignee, creator, text (q) and dates, as GET /leads does.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::LEADS_VIEW),
            effect: Effect::Read,
            input: find_input,
            output: || with_def::<Lead>(schema_of::<kernel::Page<Lead>>()),
            call: |call| Box::pin(find_leads(call)),
        },
        Tool {
            name: "get_lead",
            title: "Get a lead",
            description: "One lead by its id, with the person's identities and a possible duplicate.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::LEADS_VIEW),
            effect: Effect::Read,
            input: || object(&[("lead", uuid("The lead's id."), true)]),
            output: schema_of::<Lead>,
            call: |call| Box::pin(get_lead(call)),
        },
        Tool {
            name: "list_lead_labels",
            title: "List lead labels",
            description: "The workspace's lead labels with how many leads carry each.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::LEADS_VIEW),
            effect: Effect::Read,
            input: || object(&[]),
            output: || list_of("labels", schema_of::<LabelWithCount>()),
            call: |call| Box::pin(list_lead_labels(call)),
        },
        Tool {
            name: "upsert_lead",
            title: "Create or update a lead",
            description: "Creates the lead of a person found by phone (any common form) or email, or updates the person's open lead; created says which.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::LEADS_EDIT),
            effect: Effect::Create,
            input: || with_members(schema_of::<UpsertLead>(), &[("idempotency_key", idempotency_key(), false)]),
            output: schema_of::<Upserted>,
            call: |call| Box::pin(upsert_lead(call)),
        },
        Tool {
            name: "update_lead",
            title: "Update a lead",
            description: "Changes a lead's fields (null clears), archives or restores it.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::LEADS_EDIT),
            effect: Effect::Update,
            input: || with_members(schema_of::<LeadPatch>(), &[("lead", uuid("The lead's id."), true)]),
            output: schema_of::<Lead>,
            call: |call| Box::pin(update_lead(call)),
        },
        Tool {
            name: "set_lead_stage",
            title: "Set a lead's stage",
            description: "Moves a lead to any stage, reopening included; lost and unqualified need a reason.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::LEADS_EDIT),
            effect: Effect::Update,
            input: || with_members(schema_of::<StageChange>(), &[("lead", uuid("The lead's id."), true)]),
            output: schema_of::<Lead>,
            call: |call| Box::pin(set_lead_stage(call)),
        },
        Tool {
            name: "add_lead_labels",
            title: "Label a lead",
            description: "Puts labels on a lead by name (any case); a name the workspace lacks is created.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::LEADS_EDIT),
            effect: Effect::Update,
            input: || with_members(schema_of::<LabelNames>(), &[("lead", uuid("The lead's id."), true)]),
            output: schema_of::<LabelsAdded>,
            call: |call| Box::pin(add_lead_labels(call)),
        },
        Tool {
            name: "remove_lead_labels",
            title: "Take labels off a lead",
            description: "Takes the named labels (any case) off a lead; the labels themselves stay.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::LEADS_EDIT),
            effect: Effect::Update,
            input: || with_members(schema_of::<LabelNames>(), &[("lead", uuid("The lead's id."), true)]),
            output: schema_of::<LabelsRemoved>,
            call: |call| Box::pin(remove_lead_labels(call)),
        },
        Tool {
            name: "add_lead_note",
            title: "Add a note to a lead",
            description: "Adds a note to the lead's timeline.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::LEADS_EDIT),
            effect: Effect::Create,
            input: || with_members(schema_of::<NewNote>(), &[("lead", uuid("The lead's id."), true)]),
            output: schema_of::<Note>,
            call: |call| Box::pin(add_lead_note(call)),
        },
        Tool {
            name: "assign_lead",
            title: "Assign a lead",
            description: "Assigns the lead to a user of the workspace, or to the pool with user_id null.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::LEADS_ASSIGN),
            effect: Effect::Update,
            input: || with_members(schema_of::<Assignment>(), &[("lead", uuid("The lead's id."), true)]),
            output: schema_of::<Lead>,
            call: |call| Box::pin(assign_lead(call)),
        },
    ]
}

/// `find_leads` reads the members of `GET /leads`' query: its page and its filters.
fn find_input() -> Value {
    query_input(&[], [params_of::<PageQuery>(), params_of::<LeadFilter>()].concat())
}

fn lead_id(call: &mut Call) -> Result<LeadId, Error> {
    parse_id::<LeadId>(&call.take_text("lead")?, "Lead")
}

async fn find_leads(call: Call) -> Result<Value, Error> {
    let members = find_input();
    let page: PageQuery = call.query(&members)?;
    let filter: LeadFilter = call.query(&members)?;
    let page = PageRequest::parse(&page, leads::list::PER_PAGE)?;
    answer(call.domains.leads.list(&call.caller, &filter, page).await?)
}

async fn get_lead(mut call: Call) -> Result<Value, Error> {
    let id = lead_id(&mut call)?;
    answer(call.domains.leads.get(&call.caller, id).await?)
}

async fn list_lead_labels(call: Call) -> Result<Value, Error> {
    answer(json!({"labels": call.domains.leads.labels(&call.caller).await?}))
}

async fn upsert_lead(mut call: Call) -> Result<Value, Error> {
    let key = call.take_idempotency_key()?;
    let body: UpsertLead = call.body()?;
    match call.domains.leads.upsert(&call.caller, body, key).await.map_err(key_refusal)? {
        Answer::Done(upserted) => answer(upserted),
        Answer::Replay(first) => Ok(first),
    }
}

async fn update_lead(mut call: Call) -> Result<Value, Error> {
    let id = lead_id(&mut call)?;
    let patch: LeadPatch = call.body()?;
    answer(call.domains.leads.update(&call.caller, id, patch).await?)
}

async fn set_lead_stage(mut call: Call) -> Result<Value, Error> {
    let id = lead_id(&mut call)?;
    let change: StageChange = call.body()?;
    answer(call.domains.leads.set_stage(&call.caller, id, change).await?)
}

async fn add_lead_labels(mut call: Call) -> Result<Value, Error> {
    let id = lead_id(&mut call)?;
    let names: LabelNames = call.body()?;
    answer(call.domains.leads.add_lead_labels(&call.caller, id, names).await?)
}

async fn remove_lead_labels(mut call: Call) -> Result<Value, Error> {
    let id = lead_id(&mut call)?;
    let names: LabelNames = call.body()?;
    answer(call.domains.leads.remove_lead_labels(&call.caller, id, names).await?)
}

async fn add_lead_note(mut call: Call) -> Result<Value, Error> {
    let id = lead_id(&mut call)?;
    let note: NewNote = call.body()?;
    let note: Note = call.domains.leads.add_note(&call.caller, id, note).await?;
    answer(note)
}

async fn assign_lead(mut call: Call) -> Result<Value, Error> {
    let id = lead_id(&mut call)?;
    let assignment: Assignment = call.body()?;
    answer(call.domains.leads.assign(&call.caller, id, assignment).await?)
}
