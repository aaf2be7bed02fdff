//! The `account` tools (who am I, the balance) and the `overview` tool (counts per domain),
//! both servers opened by `mcp:overview`. `who_am_i` and `get_balance` are what `GET /me` and
//! `GET /balance` answer, over the same functions and a connection scoped to the caller's
//! tenant; like those routes (contract: Authentication, "profile, balance: tenant credential
//! only") they need no permission. `workspace_overview` counts only through the domain
//! services' own list calls, each under its REST route's permission; a count the issuer may
//! not see is `null` and named in `hidden`, never a refusal of the whole answer.

use accounts::profile::Me;
use accounts::wallet::Balance;
use kernel::page::MAX_PER_PAGE;
use kernel::{Caller, Error, ErrorKind, PageRequest, Permission};
use serde_json::{Map, Value, json};

use crate::Domains;
use crate::tool::{Call, Effect, Tool, answer, object, schema_of};

/// The counts of `workspace_overview`, in its answer's order: the name, the permission of the
/// REST list it comes from, and what it counts.
const COUNTS: &[(&str, Permission, &str)] = &[
    ("contact_groups", Permission::CONTACTS_VIEW, "Contact groups (GET /contact-groups)."),
    ("contacts", Permission::CONTACTS_VIEW, "Contacts across every group (GET /contacts)."),
    ("open_leads", Permission::LEADS_VIEW, "Open leads the issuer may see (GET /leads)."),
    ("messages", Permission::MESSAGES_VIEW, "Messages, inbound and outbound (GET /messages)."),
    ("shops", Permission::CATALOGUE_VIEW, "Shops (GET /catalogues)."),
    ("products", Permission::CATALOGUE_VIEW, "Products on the shelves of every shop (each shop's products_count)."),
    ("orders", Permission::CATALOGUE_VIEW, "Orders of every shop (GET /catalogues/orders)."),
    ("data_tables", Permission::DATA_VIEW, "Data tables the issuer may read (GET /data/tables)."),
];

/// The `account` and `overview` tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "who_am_i",
            title: "Who am I",
            description: "The account (tenant) this connection belongs to, the connection itself (key), its issuer and the permissions it may use now, as GET /me answers.",
            server: "account",
            elevation: None,
            permission: None,
            effect: Effect::Read,
            input: || object(&[]),
            output: schema_of::<Me>,
            call: |call| Box::pin(who_am_i(call)),
        },
        Tool {
            name: "get_balance",
            title: "Get the balance",
            description: "The wallet: balance in minor units and for display, currency and billing mode, as GET /balance answers.",
            server: "account",
            elevation: None,
            permission: None,
            effect: Effect::Read,
            input: || object(&[]),
            output: schema_of::<Balance>,
            call: |call| Box::pin(get_balance(call)),
        },
        Tool {
            name: "workspace_overview",
            title: "Workspace overview",
            description: "How many contact groups, contacts, open leads, messages, shops, products, orders and data tables the workspace holds, as far as the issuer may see: a count the issuer lacks the permission for is null and named in hidden with that permission.",
            server: "overview",
            elevation: None,
            permission: None,
            effect: Effect::Read,
            input: || object(&[]),
            output: overview_output,
            call: |call| Box::pin(workspace_overview(call)),
        },
    ]
}

fn overview_output() -> Value {
    let counts: Vec<(&str, Value, bool)> = COUNTS
        .iter()
        .map(|(name, _, description)| (*name, json!({"type": ["integer", "null"], "description": description}), true))
        .collect();
    let hidden = object(&[
        ("count", json!({"type": "string", "description": "The count left out."}), true),
        ("permission", json!({"type": "string", "description": "The permission it needs."}), true),
        (
            "message",
            json!({"type": "string", "description": "Why the service refused it though the permission is held."}),
            false,
        ),
    ]);
    object(&[
        ("counts", object(&counts), true),
        (
            "hidden",
            json!({"type": "array", "items": hidden, "description": "The counts the issuer may not see."}),
            true,
        ),
    ])
}

async fn who_am_i(call: Call) -> Result<Value, Error> {
    let mut conn = store::connect(&call.domains.pool, call.caller.tenant_id).await?;
    answer(accounts::profile::me(&mut conn, &call.caller).await?)
}

async fn get_balance(call: Call) -> Result<Value, Error> {
    let mut conn = store::connect(&call.domains.pool, call.caller.tenant_id).await?;
    let wallet = accounts::wallet::get(&mut conn, call.caller.tenant_id).await?;
    answer(Balance::from(wallet))
}

async fn workspace_overview(call: Call) -> Result<Value, Error> {
    let mut counts = Map::new();
    let mut hidden = Vec::new();
    for (name, permission, _) in COUNTS {
        let counted = if call.caller.allows(permission.0) {
            match count(&call.domains, &call.caller, name).await {
                Ok(n) => Ok(n),
                // a rule of the service beyond the permission (a module switched off)
                Err(e) if e.kind == ErrorKind::Forbidden => Err(Some(e.message.clone())),
                Err(e) => return Err(e),
            }
        } else {
            Err(None)
        };
        match counted {
            Ok(n) => counts.insert((*name).to_owned(), json!(n)),
            Err(refusal) => {
                let mut entry = json!({"count": name, "permission": permission.0});
                if let Some(message) = refusal {
                    entry["message"] = json!(message);
                }
                hidden.push(entry);
                counts.insert((*name).to_owned(), Value::Null)
            }
        };
    }
    Ok(json!({"counts": counts, "hidden": hidden}))
}

/// One count, through the service method of its REST list: the total of a one-row page.
async fn count(domains: &Domains, caller: &Caller, name: &str) -> Result<i64, Error> {
    let one = PageRequest::new(1, 1);
    Ok(match name {
        "contact_groups" => domains.contacts.list_groups(caller, one).await?.pagination.total,
        "contacts" => domains.contacts.search_contacts(caller, None, None, one).await?.pagination.total,
        "open_leads" => domains.leads.list(caller, &Default::default(), one).await?.pagination.total,
        "messages" => domains.messaging.messages(caller, &Default::default(), one).await?.pagination.total,
        "shops" => domains.commerce.list_catalogues(caller, one).await?.pagination.total,
        "orders" => domains.commerce.list_orders(caller, &Default::default(), one).await?.pagination.total,
        "products" => {
            // the shelf of every shop: what each shop's product list totals
            let mut total = 0;
            let mut page = 1;
            loop {
                let shops = domains.commerce.list_catalogues(caller, PageRequest::new(page, MAX_PER_PAGE)).await?;
                total += shops.items.iter().map(|shop| shop.products_count).sum::<i64>();
                if !shops.pagination.has_more_pages {
                    break total;
                }
                page += 1;
            }
        }
        "data_tables" => i64::try_from(domains.data.tables(caller).await?.tables.len()).unwrap_or(i64::MAX),
        other => return Err(Error::internal(format!("no count named {other}"))),
    })
}
