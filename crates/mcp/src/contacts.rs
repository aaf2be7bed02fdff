//! The contacts tools (on `contacts` and `/mcp`): groups, contacts, search, create and update,
//! over `contacts::ContactService`. Each calls the service method its REST route calls
//! (`apps/gateway/src/v3/contacts.rs`), with the same permission, rules and messages. Ids are
//! the members `group` (numeric id or UUID) and `contact` (`ctc_` uid or numeric id), read as
//! the REST path reads them: a malformed id is the resource's `not_found`. No tool deletes a
//! group or a contact, renames or deactivates a group, or imports a batch.

use contacts::{
    Contact, ContactCreate, ContactFilter, ContactGroup, ContactInput, ContactRef, ContactSearch, GroupRef, NewGroup,
};
use kernel::page::PageQuery;
use kernel::{Error, Page, PageRequest, Permission, parse_id};
use serde_json::{Value, json};

use crate::scopes::Elevation;
use crate::tool::{Call, Effect, Tool, answer, object, params_of, query_input, schema_of, with_def, with_members};

const SERVER: &str = "contacts";

/// The contacts tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_contact_groups",
            title: "List contact groups",
            description: "The workspace's contact groups, newest first (25 a page), each with its contacts_count, subscribed_count and custom field definitions, as GET /contact-groups answers.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CONTACTS_VIEW),
            effect: Effect::Read,
            input: list_groups_input,
            output: || with_def::<ContactGroup>(schema_of::<Page<ContactGroup>>()),
            call: |call| Box::pin(list_contact_groups(call)),
        },
        Tool {
            name: "get_contact_group",
            title: "Get a contact group",
            description: "One contact group by its numeric id or UUID, with its counts and custom field definitions.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CONTACTS_VIEW),
            effect: Effect::Read,
            input: || object(&[("group", group_id(), true)]),
            output: schema_of::<ContactGroup>,
            call: |call| Box::pin(get_contact_group(call)),
        },
        Tool {
            name: "create_contact_group",
            title: "Create a contact group",
            description: "Creates a contact group with its custom field definitions ({key, label, type} or just the key; keys use letters, digits, _, . and -; duplicates refused).",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::CONTACTS_CREATE),
            effect: Effect::Create,
            input: schema_of::<NewGroup>,
            output: schema_of::<ContactGroup>,
            call: |call| Box::pin(create_contact_group(call)),
        },
        Tool {
            name: "list_contacts",
            title: "List a group's contacts",
            description: "A page of one group's contacts, newest first (20 a page); search matches the name, the national number or the full number without punctuation; subscribed filters on is_subscribed.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CONTACTS_VIEW),
            effect: Effect::Read,
            input: list_contacts_input,
            output: || with_def::<Contact>(schema_of::<Page<Contact>>()),
            call: |call| Box::pin(list_contacts(call)),
        },
        Tool {
            name: "search_contacts",
            title: "Search contacts",
            description: "Searches contacts across every group (q matches the name or the number), or in one group (group_id), newest first (20 a page), as GET /contacts does.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CONTACTS_VIEW),
            effect: Effect::Read,
            input: search_input,
            output: || with_def::<Contact>(schema_of::<Page<Contact>>()),
            call: |call| Box::pin(search_contacts(call)),
        },
        Tool {
            name: "get_contact",
            title: "Get a contact",
            description: "One contact of a group, by its ctc_ uid or numeric id (a contact is found only within its own group).",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CONTACTS_VIEW),
            effect: Effect::Read,
            input: || object(&[("group", group_id(), true), ("contact", contact_id(), true)]),
            output: schema_of::<Contact>,
            call: |call| Box::pin(get_contact(call)),
        },
        Tool {
            name: "create_contact",
            title: "Create a contact",
            description: "Adds a contact to a group: PHONE (or phone_number) read in country_code, else the account's calling code; name (or NAME, or FIRST_NAME and LAST_NAME; else named after the number); is_subscribed (default true); every other member is a custom field. A number already in the group is a conflict naming the contact that has it.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::CONTACTS_CREATE),
            effect: Effect::Create,
            input: || with_members(schema_of::<ContactCreate>(), &[("group", group_id(), true)]),
            output: schema_of::<Contact>,
            call: |call| Box::pin(create_contact(call)),
        },
        Tool {
            name: "update_contact",
            title: "Update a contact",
            description: "Changes only the members sent: custom fields merge and a custom field sent as null is removed; PHONE is needed only to change the number.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::CONTACTS_EDIT),
            effect: Effect::Update,
            input: || {
                with_members(
                    schema_of::<ContactInput>(),
                    &[("group", group_id(), true), ("contact", contact_id(), true)],
                )
            },
            output: schema_of::<Contact>,
            call: |call| Box::pin(update_contact(call)),
        },
    ]
}

/// The `group` member: what the REST path holds, or the number itself.
fn group_id() -> Value {
    json!({"type": ["string", "integer"], "description": "The contact group's numeric id or UUID."})
}

/// The `contact` member.
fn contact_id() -> Value {
    json!({"type": ["string", "integer"], "description": "The contact's ctc_ uid or numeric id, within the group."})
}

/// `list_contact_groups` reads `GET /contact-groups`' paging.
fn list_groups_input() -> Value {
    query_input(&[], params_of::<PageQuery>())
}

/// `list_contacts` reads the group and `GET /contact-groups/{group}/contacts`' query.
fn list_contacts_input() -> Value {
    let mut params = params_of::<ContactFilter>();
    params.extend(params_of::<PageQuery>());
    let mut schema = query_input(&[("group", group_id(), true)], params);
    // as a query string carries it, or a boolean (its text is read)
    if let Some(subscribed) = schema["properties"].get_mut("subscribed") {
        let description = subscribed.as_object_mut().and_then(|o| o.remove("description")).unwrap_or(Value::Null);
        *subscribed = json!({"description": description, "oneOf": [{"type": "boolean"}, subscribed.clone()]});
    }
    schema
}

/// `search_contacts` reads `GET /contacts`' query: `q`, `group_id` and the paging.
fn search_input() -> Value {
    let mut params = params_of::<ContactSearch>();
    params.extend(params_of::<PageQuery>());
    let mut schema = query_input(&[], params);
    // the id as text, or the number itself
    if let Some(group) = schema["properties"].get_mut("group_id") {
        group["type"] = json!(["string", "integer"]);
    }
    schema
}

fn group(call: &mut Call) -> Result<GroupRef, Error> {
    parse_id(&call.take_path("group")?, "Contact group")
}

fn contact(call: &mut Call) -> Result<ContactRef, Error> {
    parse_id(&call.take_path("contact")?, "Contact")
}

async fn list_contact_groups(call: Call) -> Result<Value, Error> {
    let page: PageQuery = call.query(&list_groups_input())?;
    let page = PageRequest::parse(&page, contacts::GROUPS_PER_PAGE)?;
    answer(call.domains.contacts.list_groups(&call.caller, page).await?)
}

async fn get_contact_group(mut call: Call) -> Result<Value, Error> {
    let group = group(&mut call)?;
    answer(call.domains.contacts.get_group(&call.caller, group).await?)
}

async fn create_contact_group(mut call: Call) -> Result<Value, Error> {
    let body: NewGroup = call.body()?;
    answer(call.domains.contacts.create_group(&call.caller, body).await?)
}

async fn list_contacts(mut call: Call) -> Result<Value, Error> {
    let group = group(&mut call)?;
    let members = list_contacts_input();
    let filter: ContactFilter = call.query(&members)?;
    let page: PageQuery = call.query(&members)?;
    let page = PageRequest::parse(&page, contacts::contact::DEFAULT_PER_PAGE)?;
    answer(call.domains.contacts.list_contacts(&call.caller, group, filter.parse()?, page).await?)
}

async fn search_contacts(call: Call) -> Result<Value, Error> {
    let members = search_input();
    let search: ContactSearch = call.query(&members)?;
    let page: PageQuery = call.query(&members)?;
    let page = PageRequest::parse(&page, contacts::contact::DEFAULT_PER_PAGE)?;
    // as GET /contacts reads it: an empty group_id is no group
    let group = search
        .group_id
        .as_deref()
        .filter(|g| !g.trim().is_empty())
        .map(|g| parse_id::<GroupRef>(g, "Contact group"))
        .transpose()?;
    answer(call.domains.contacts.search_contacts(&call.caller, search.q, group, page).await?)
}

async fn get_contact(mut call: Call) -> Result<Value, Error> {
    let group = group(&mut call)?;
    let contact = contact(&mut call)?;
    answer(call.domains.contacts.get_contact(&call.caller, group, &contact).await?)
}

async fn create_contact(mut call: Call) -> Result<Value, Error> {
    let group = group(&mut call)?;
    let body: ContactCreate = call.body()?;
    answer(call.domains.contacts.create_contact(&call.caller, group, body.0).await?)
}

async fn update_contact(mut call: Call) -> Result<Value, Error> {
    let group = group(&mut call)?;
    let contact = contact(&mut call)?;
    let body: ContactInput = call.body()?;
    answer(call.domains.contacts.update_contact(&call.caller, group, &contact, body).await?)
}
