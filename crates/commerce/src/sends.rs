//! Product sends (contract: `POST /catalogues/send-product`, `send-product-list`,
//! `send-catalogue`; the Chat row of Limits): a shop's products put in front of one customer in
//! the chat, as the provider's interactive `product`, `product_list` and `catalog_message`
//! messages, or as a link to the product on the storefront page.
//!
//! A product goes out only where it is published: its listing on the platform is `synced` or
//! `drifted` (the storefront page shows `synced` only, so a storefront link needs that). The send
//! is one chat message written and dispatched by messaging (`send_chat`), inline: the answer is
//! the provider's, and a refusal is a 502 naming the provider's reason (contract: HTTP statuses),
//! the `failed` message staying on record.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Caller, Error, ErrorKind, Patch, Permission};
use messaging::chat::{ChatAccounts, ChatSendRequest};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::__dev::ComposeSchema;
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};

use crate::CatalogueId;
use crate::catalogues::Row as Shop;
use crate::publish::{CHAT, STOREFRONT, channels_of, publishes_to_chat};
use crate::rules::{Rules, choice, sent};
use crate::schema::{catalogues, product_listings, products};
use crate::service::{CommerceService, shop_of};

/// The text of a product message, a product list or a catalogue message (contract: Limits, Chat).
pub const MAX_BODY: usize = 1_024;
/// A footer.
pub const MAX_FOOTER: usize = 60;
/// A product list's header.
pub const MAX_HEADER: usize = 60;
/// Sections of a product list.
pub const MAX_SECTIONS: usize = 10;
/// A section's title.
pub const MAX_SECTION_TITLE: usize = 24;
/// Products of one product list, across its sections (the Cloud API's limit).
pub const MAX_PRODUCTS: usize = 30;
/// A product's code.
const MAX_CODE: usize = 100;
/// The customer's number, as one entry of a chat send's `recipients`.
const MAX_TO: usize = 191;
/// The business number, as a chat send's `sender_id`.
const MAX_FROM: usize = 64;
/// Listing states in which a product is on the chat catalogue.
const ON_CHAT: &[&str] = &["synced", "drifted"];
/// Listing states in which the storefront page shows a product.
const ON_STOREFRONT: &[&str] = &["synced"];

choice! {
    /// Where a product is sent from: the chat catalogue, or the storefront page (a link).
    SendPlatform = &[CHAT, STOREFRONT];
}

/// `POST /catalogues/send-product`: one product to one customer.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ProductSend {
    /// The customer's number, in any common form (read under the account's calling code).
    #[schema(
        max_length = 191,
        pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub to: String,
    /// The business number to send from: its phone number id or the number (`GET
    /// /chat/accounts`). Left out: for `chat`, a number of the business account the catalogue is
    /// connected to (the workspace default when it is one of them); for `storefront`, the
    /// workspace default.
    #[schema(max_length = 64)]
    pub from: Option<String>,
    /// `chat` (default): the provider's product message from the shop's chat catalogue;
    /// `storefront`: a text message with a link to the product on the storefront page.
    #[schema(value_type = Option<SendPlatform>)]
    pub platform: Option<String>,
    /// The shop (`GET /catalogues`).
    pub catalogue_id: i64,
    /// The product's code (`sku`).
    #[schema(
        max_length = 100,
        pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub product_retailer_id: String,
    /// The message text, up to 1,024 characters. On the storefront, the text before the link
    /// (default: the product's name).
    #[schema(max_length = 1024)]
    pub body: Option<String>,
    /// Up to 60 characters; on the storefront, a line after the link.
    #[schema(max_length = 60)]
    pub footer: Option<String>,
}

/// `POST /catalogues/send-product-list`: up to 30 products of the chat catalogue, in sections.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ProductListSend {
    /// The customer's number, in any common form.
    #[schema(
        max_length = 191,
        pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub to: String,
    /// The business number to send from (see `ProductSend`): one of the business account the
    /// catalogue is connected to.
    #[schema(max_length = 64)]
    pub from: Option<String>,
    /// The shop; it must publish to a chat catalogue.
    pub catalogue_id: i64,
    /// The list's header, up to 60 characters.
    #[schema(
        max_length = 60,
        pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub header_text: String,
    /// Up to 1,024 characters.
    #[schema(
        max_length = 1024,
        pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub body: String,
    /// Up to 60 characters.
    #[schema(max_length = 60)]
    pub footer: Option<String>,
    /// 1 to 10 sections, at most 30 products in all.
    #[schema(min_items = 1, max_items = 10)]
    pub sections: Vec<ProductSection>,
}

/// One section of a product list.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ProductSection {
    /// Up to 24 characters.
    #[schema(
        max_length = 24,
        pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub title: String,
    /// The section's products: codes, or `{product_retailer_id}` objects.
    #[schema(inline, min_items = 1, max_items = 30)]
    pub product_items: Vec<ProductItem>,
}

/// A product of a list: its code, or `{product_retailer_id}` (the provider's own shape).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ProductItem {
    Code(String),
    Item { product_retailer_id: String },
}

impl ProductItem {
    fn code(&self) -> &str {
        match self {
            Self::Code(code) | Self::Item { product_retailer_id: code } => code,
        }
    }
}

impl ComposeSchema for ProductItem {
    fn compose(_: Vec<RefOr<Schema>>) -> RefOr<Schema> {
        let code = || {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .max_length(Some(MAX_CODE))
                .pattern(Some(kernel::schema::NOT_BLANK))
        };
        OneOfBuilder::new()
            .item(code())
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Object)
                    .property("product_retailer_id", code())
                    .required("product_retailer_id"),
            )
            .into()
    }
}

impl ToSchema for ProductItem {}

/// `POST /catalogues/send-catalogue`: the whole chat catalogue, as the provider's catalogue
/// message.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct CatalogueSend {
    /// The customer's number, in any common form.
    #[schema(
        max_length = 191,
        pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub to: String,
    /// The business number to send from (see `ProductSend`).
    #[schema(max_length = 64)]
    pub from: Option<String>,
    /// The shop; left out, the account's only shop connected to a chat catalogue (422 when it
    /// has none, or several).
    pub catalogue_id: Option<i64>,
    /// Up to 1,024 characters.
    #[schema(
        max_length = 1024,
        pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub body: String,
    /// Up to 60 characters.
    #[schema(max_length = 60)]
    pub footer: Option<String>,
    /// The product whose image shows on the message (published on chat); left out, the
    /// provider shows the catalogue's first.
    #[schema(max_length = 100)]
    pub thumbnail_product_retailer_id: Option<String>,
}

/// The answer of a product send (201).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProductSent {
    /// The provider's id of the message (its `gateway_message_id`: what replies and reactions
    /// name); null only while the message is still queued.
    pub message_id: Option<String>,
    /// The message record's public id: `GET /chat/{uid}` reads it.
    pub uid: String,
    /// The message's status (`sent`, or `queued` when the provider was slow to answer).
    pub status: String,
    /// `chat` or `storefront`.
    #[schema(value_type = SendPlatform)]
    pub platform: String,
    /// The product on the storefront page (storefront sends only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

/// The members every send shares, checked.
struct Recipient {
    /// E.164.
    to: String,
    from: Option<String>,
}

/// Checks `to` and `from` into `rules`.
fn recipient(rules: &mut Rules, caller: &Caller, to: String, from: Option<String>) -> Option<Recipient> {
    let to = rules_text(rules, "to", Some(to), MAX_TO);
    let to = rules.required("to", to);
    let from = rules_text(rules, "from", from, MAX_FROM).set();
    let to = to.and_then(|to| {
        let number = messaging::recipients::normalize(&to, &caller.calling_code);
        if number.is_none() {
            rules.error("to", "The to is not a valid phone number.");
        }
        number
    })?;
    Some(Recipient { to, from })
}

/// Trimmed text of at most `max` characters; blank is left out.
fn rules_text(rules: &mut Rules, key: &str, value: Option<String>, max: usize) -> Patch<String> {
    match rules.text(key, sent(value), max) {
        Patch::Null => Patch::Absent,
        other => other,
    }
}

/// A product of the shop found by its code, with its listing on the platform asked about.
struct Found {
    id: i64,
    name: String,
    /// The listing's state and problem; `None` when the product has no listing there.
    listing: Option<(String, Option<String>)>,
}

/// Why `code` cannot be sent on `platform` (`None`: it can).
fn unpublished(code: &str, found: Option<&Found>, platform: &str, states: &[&str]) -> Option<String> {
    let Some(found) = found else {
        return Some(format!("The product {code} is not in this catalogue."));
    };
    match &found.listing {
        Some((state, _)) if states.contains(&state.as_str()) => None,
        Some((state, problem)) => Some(match problem {
            Some(problem) => format!("The product {code} is not published on {platform} ({state}: {problem})."),
            None => format!("The product {code} is not published on {platform} ({state})."),
        }),
        None => Some(format!("The product {code} is not published on {platform}.")),
    }
}

/// The shelf products of `shop` named by `codes`, with their listings on `platform`.
async fn products_of(
    conn: &mut store::Conn,
    shop: &Shop,
    codes: &[&str],
    platform: &str,
) -> Result<HashMap<String, Found>, Error> {
    let rows: Vec<(i64, String, String)> = products::table
        .filter(products::tenant_id.eq(shop.tenant_id))
        .filter(products::catalogue_id.eq(shop.id))
        .filter(products::retired_at.is_null())
        .filter(products::sku.eq_any(codes))
        .select((products::id, products::sku, products::name))
        .load(conn)
        .await?;
    let ids: Vec<i64> = rows.iter().map(|(id, _, _)| *id).collect();
    let listings: Vec<(i64, String, Option<String>)> = product_listings::table
        .filter(product_listings::tenant_id.eq(shop.tenant_id))
        .filter(product_listings::platform.eq(platform))
        .filter(product_listings::product_id.eq_any(&ids))
        .select((product_listings::product_id, product_listings::state, product_listings::problem))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, sku, name)| {
            let listing =
                listings.iter().find(|l| l.0 == id).map(|(_, state, problem)| (state.clone(), problem.clone()));
            (sku, Found { id, name, listing })
        })
        .collect())
}

/// The provider catalogue of a shop that publishes to chat; 422 on `field` otherwise.
fn chat_catalogue<'a>(shop: &'a Shop, field: &str) -> Result<&'a str, Error> {
    match (&shop.meta_catalogue_id, publishes_to_chat(shop)) {
        (Some(catalogue), true) => Ok(catalogue),
        _ => Err(Error::field(
            field,
            format!(
                "The catalogue {} does not publish to a chat catalogue: connect it to a business account with \
                 chat among its channels.",
                shop.id
            ),
        )),
    }
}

/// The business number (its phone number id) a send from the shop's chat catalogue goes from:
/// `from` when given, which must be a number of the business account the catalogue is
/// connected to (the provider sends a catalogue's products only from its own account's numbers);
/// else the workspace default when it is one of that account's, else that account's first.
fn sender_for(accounts: &ChatAccounts, shop: &Shop, from: Option<&str>, calling_code: &str) -> Result<String, Error> {
    let owner = shop.waba_id.as_deref();
    let own = |waba: &str| owner.is_none_or(|o| o == waba);
    let numbers = accounts.items.iter().flat_map(|a| a.phone_numbers.iter().map(move |n| (a.waba_id.as_str(), n)));
    if let Some(from) = from {
        let as_number = messaging::recipients::normalize(from, calling_code);
        let Some((waba, number)) =
            numbers.clone().find(|(_, n)| n.id == from || Some(&n.phone_number) == as_number.as_ref())
        else {
            return Err(Error::field(
                "from",
                "The from is not a chat phone number of this account: pass a phone number id or the number from \
                 GET /chat/accounts.",
            ));
        };
        if !own(waba) {
            return Err(Error::field(
                "from",
                format!(
                    "The from number belongs to the business account {waba}, but the catalogue is connected to {}: \
                     send from one of that account's numbers.",
                    owner.unwrap_or_default()
                ),
            ));
        }
        return Ok(number.id.clone());
    }
    let default = accounts.default_phone_number_id.as_deref();
    let mut own_numbers = numbers.filter(|(waba, _)| own(waba)).map(|(_, n)| n);
    let first = own_numbers.clone().next();
    own_numbers.find(|n| Some(n.id.as_str()) == default).or(first).map(|n| n.id.clone()).ok_or_else(|| {
        Error::field("from", "The business account the catalogue is connected to has no phone number to send from.")
    })
}

/// `text` percent-encoded for a URL's fragment (letters, digits and `-._~` kept).
fn fragment(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => encoded.push(byte as char),
            other => encoded.push_str(&format!("%{other:02X}")),
        }
    }
    encoded
}

fn no_chat_account() -> Error {
    Error::validation("No chat account is configured for this account.")
}

impl CommerceService {
    /// The caller's permissions and chat accounts; 422 without a chat account.
    async fn sending(&self, caller: &Caller, conn: &mut store::Conn) -> Result<ChatAccounts, Error> {
        caller.require(Permission::SEND)?;
        caller.require(Permission::CATALOGUE_VIEW)?;
        let accounts = messaging::chat::accounts::list(conn, caller.tenant_id).await?;
        if self.messaging.is_none() || accounts.items.is_empty() {
            return Err(no_chat_account());
        }
        Ok(accounts)
    }

    /// Sends one chat message and answers its record; a message the provider refused is a 502
    /// naming the provider's reason (the `failed` record stays, its uid in the error).
    async fn send_one(
        &self,
        caller: &Caller,
        request: ChatSendRequest,
        platform: &str,
        link: Option<String>,
    ) -> Result<ProductSent, Error> {
        let messaging = self.messaging.as_ref().ok_or_else(no_chat_account)?;
        let sent = messaging.send_chat(caller, request).await.map_err(|mut error| {
            // the members of these bodies, not a chat send's
            for (theirs, ours) in [("sender_id", "from"), ("recipient", "to")] {
                if let Some(messages) = error.errors.remove(theirs) {
                    error.errors.insert(ours.to_owned(), messages);
                }
            }
            error
        })?;
        let message = sent.messages.into_iter().next().ok_or_else(|| Error::internal("a chat send wrote nothing"))?;
        if message.status == "failed" {
            let reason = message.error_message.unwrap_or_else(|| "no reason given".to_owned());
            return Err(Error::new(
                ErrorKind::ProviderFailure,
                format!("The chat provider refused the message: {reason}"),
            )
            .with_detail("provider_reason", reason)
            .with_detail("message_uid", message.uid));
        }
        Ok(ProductSent {
            message_id: message.gateway_message_id,
            uid: message.uid,
            status: message.status,
            platform: platform.to_owned(),
            link,
        })
    }

    /// `POST /catalogues/send-product`: on `chat`, the provider's product message (the product
    /// published on the shop's chat catalogue, else 422); on `storefront`, a text message with
    /// the link to the product on the storefront page (the product shown there, else 422), the
    /// link in the answer too.
    pub async fn send_product(&self, caller: &Caller, body: ProductSend) -> Result<ProductSent, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let accounts = self.sending(caller, &mut conn).await?;
        let mut rules = Rules::new();
        let recipient = recipient(&mut rules, caller, body.to, body.from);
        let platform = match rules.one_of("platform", sent(body.platform), &[CHAT, STOREFRONT]) {
            Patch::Set(platform) => platform,
            _ => CHAT,
        };
        let code = rules_text(&mut rules, "product_retailer_id", Some(body.product_retailer_id), MAX_CODE);
        let code = rules.required("product_retailer_id", code);
        let text = rules_text(&mut rules, "body", body.body, MAX_BODY).set();
        let footer = rules_text(&mut rules, "footer", body.footer, MAX_FOOTER).set();
        rules.finish()?;
        let (Some(recipient), Some(code)) = (recipient, code) else {
            return Err(Error::validation("The given data was invalid."));
        };
        let shop = shop_of(&mut conn, caller.tenant_id, CatalogueId(body.catalogue_id)).await?;
        if platform == STOREFRONT {
            return self.send_storefront_link(caller, conn, &shop, recipient, &code, text, footer).await;
        }
        let catalogue = chat_catalogue(&shop, "catalogue_id")?.to_owned();
        let found = products_of(&mut conn, &shop, &[&code], CHAT).await?;
        if let Some(why) = unpublished(&code, found.get(&code), CHAT, ON_CHAT) {
            return Err(Error::field("product_retailer_id", why));
        }
        let from = sender_for(&accounts, &shop, recipient.from.as_deref(), &caller.calling_code)?;
        drop(conn);
        let mut interactive = Map::new();
        interactive.insert("type".into(), "product".into());
        if let Some(text) = text {
            interactive.insert("body".into(), json!({ "text": text }));
        }
        if let Some(footer) = footer {
            interactive.insert("footer".into(), json!({ "text": footer }));
        }
        interactive.insert("action".into(), json!({ "catalog_id": catalogue, "product_retailer_id": code }));
        self.send_one(caller, interactive_send(recipient.to, from, Value::Object(interactive)), CHAT, None).await
    }

    /// The storefront's product link, sent as text: `body` (or the product's name), the link,
    /// then `footer`.
    #[allow(clippy::too_many_arguments)]
    async fn send_storefront_link(
        &self,
        caller: &Caller,
        mut conn: store::PooledConn,
        shop: &Shop,
        recipient: Recipient,
        code: &str,
        text: Option<String>,
        footer: Option<String>,
    ) -> Result<ProductSent, Error> {
        let token = match &shop.storefront_token {
            Some(token) if channels_of(shop).iter().any(|c| c == STOREFRONT) => token.clone(),
            _ => {
                return Err(Error::field(
                    "platform",
                    format!("The catalogue {} has no storefront: add storefront to its channels.", shop.id),
                ));
            }
        };
        let found = products_of(&mut conn, shop, &[code], STOREFRONT).await?;
        let product = found.get(code);
        if let Some(why) = unpublished(code, product, STOREFRONT, ON_STOREFRONT) {
            return Err(Error::field("product_retailer_id", why));
        }
        let Some(product) = product else { return Err(Error::internal("a published product went missing")) };
        let page = storefront_page(&mut conn, shop, product).await?;
        drop(conn);
        let mut link = crate::storefront::url(&self.public_url, &token);
        if page > 1 {
            link.push_str(&format!("?page={page}"));
        }
        link.push('#');
        link.push_str(&fragment(code));
        let mut lines = vec![text.unwrap_or_else(|| product.name.clone()), link.clone()];
        lines.extend(footer);
        let request = ChatSendRequest {
            recipient: Some(recipient.to),
            sender_id: recipient.from,
            message_type: Some("text".to_owned()),
            message: Some(lines.join("\n")),
            ..ChatSendRequest::default()
        };
        self.send_one(caller, request, STOREFRONT, Some(link)).await
    }

    /// `POST /catalogues/send-product-list`: the provider's product list; every product
    /// published on the shop's chat catalogue (422 naming each one that is not), at most 30.
    pub async fn send_product_list(&self, caller: &Caller, body: ProductListSend) -> Result<ProductSent, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let accounts = self.sending(caller, &mut conn).await?;
        let mut rules = Rules::new();
        let recipient = recipient(&mut rules, caller, body.to, body.from);
        let header = rules_text(&mut rules, "header_text", Some(body.header_text), MAX_HEADER);
        let header = rules.required("header_text", header);
        let text = rules_text(&mut rules, "body", Some(body.body), MAX_BODY);
        let text = rules.required("body", text);
        let footer = rules_text(&mut rules, "footer", body.footer, MAX_FOOTER).set();
        let sections = rules.rows("sections", &body.sections, MAX_SECTIONS, |rules, section| {
            let title = rules_text(rules, "title", Some(section.title.clone()), MAX_SECTION_TITLE);
            let title = rules.required("title", title);
            let items = rules.rows("product_items", &section.product_items, MAX_PRODUCTS, |rules, item| {
                let code = rules_text(rules, "product_retailer_id", Some(item.code().to_owned()), MAX_CODE);
                rules.required("product_retailer_id", code)
            });
            Some((title?, items))
        });
        let total: usize = body.sections.iter().map(|s| s.product_items.len()).sum();
        if total > MAX_PRODUCTS {
            rules.error(
                "sections",
                format!(
                    "A product list holds at most {MAX_PRODUCTS} products in all its sections; this one has {total}."
                ),
            );
        }
        rules.finish()?;
        let (Some(recipient), Some(header), Some(text)) = (recipient, header, text) else {
            return Err(Error::validation("The given data was invalid."));
        };
        let shop = shop_of(&mut conn, caller.tenant_id, CatalogueId(body.catalogue_id)).await?;
        let catalogue = chat_catalogue(&shop, "catalogue_id")?.to_owned();
        let codes: Vec<&str> = sections.iter().flat_map(|(_, items)| items.iter().map(String::as_str)).collect();
        let found = products_of(&mut conn, &shop, &codes, CHAT).await?;
        let mut missing = kernel::error::FieldErrors::new();
        let mut named = Vec::new();
        for (s, (_, items)) in sections.iter().enumerate() {
            for (i, code) in items.iter().enumerate() {
                if let Some(why) = unpublished(code, found.get(code), CHAT, ON_CHAT) {
                    missing.add(format!("sections[{s}].product_items[{i}]"), why);
                    if !named.contains(code) {
                        named.push(code.clone());
                    }
                }
            }
        }
        if let Err(mut error) = missing.finish() {
            error.message = format!("Not published on the chat catalogue: {}.", named.join(", "));
            return Err(error.with_detail("unpublished", named));
        }
        let from = sender_for(&accounts, &shop, recipient.from.as_deref(), &caller.calling_code)?;
        drop(conn);
        let sections: Vec<Value> = sections
            .into_iter()
            .map(|(title, items)| {
                let items: Vec<Value> = items.into_iter().map(|code| json!({ "product_retailer_id": code })).collect();
                json!({ "title": title, "product_items": items })
            })
            .collect();
        let mut interactive = Map::new();
        interactive.insert("type".into(), "product_list".into());
        interactive.insert("header".into(), json!({ "type": "text", "text": header }));
        interactive.insert("body".into(), json!({ "text": text }));
        if let Some(footer) = footer {
            interactive.insert("footer".into(), json!({ "text": footer }));
        }
        interactive.insert("action".into(), json!({ "catalog_id": catalogue, "sections": sections }));
        self.send_one(caller, interactive_send(recipient.to, from, Value::Object(interactive)), CHAT, None).await
    }

    /// `POST /catalogues/send-catalogue`: the provider's catalogue message for the shop's chat
    /// catalogue (the named shop, or the account's only one that publishes to chat).
    pub async fn send_catalogue(&self, caller: &Caller, body: CatalogueSend) -> Result<ProductSent, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let accounts = self.sending(caller, &mut conn).await?;
        let mut rules = Rules::new();
        let recipient = recipient(&mut rules, caller, body.to, body.from);
        let text = rules_text(&mut rules, "body", Some(body.body), MAX_BODY);
        let text = rules.required("body", text);
        let footer = rules_text(&mut rules, "footer", body.footer, MAX_FOOTER).set();
        let thumbnail =
            rules_text(&mut rules, "thumbnail_product_retailer_id", body.thumbnail_product_retailer_id, MAX_CODE).set();
        rules.finish()?;
        let (Some(recipient), Some(text)) = (recipient, text) else {
            return Err(Error::validation("The given data was invalid."));
        };
        let shop = match body.catalogue_id {
            Some(id) => shop_of(&mut conn, caller.tenant_id, CatalogueId(id)).await?,
            None => only_chat_shop(&mut conn, caller).await?,
        };
        chat_catalogue(&shop, "catalogue_id")?;
        if let Some(code) = &thumbnail {
            let found = products_of(&mut conn, &shop, &[code], CHAT).await?;
            if let Some(why) = unpublished(code, found.get(code), CHAT, ON_CHAT) {
                return Err(Error::field("thumbnail_product_retailer_id", why));
            }
        }
        let from = sender_for(&accounts, &shop, recipient.from.as_deref(), &caller.calling_code)?;
        drop(conn);
        let mut action = Map::new();
        action.insert("name".into(), "catalog_message".into());
        if let Some(code) = thumbnail {
            action.insert("parameters".into(), json!({ "thumbnail_product_retailer_id": code }));
        }
        let mut interactive = Map::new();
        interactive.insert("type".into(), "catalog_message".into());
        interactive.insert("body".into(), json!({ "text": text }));
        if let Some(footer) = footer {
            interactive.insert("footer".into(), json!({ "text": footer }));
        }
        interactive.insert("action".into(), Value::Object(action));
        self.send_one(caller, interactive_send(recipient.to, from, Value::Object(interactive)), CHAT, None).await
    }
}

fn interactive_send(to: String, from: String, interactive: Value) -> ChatSendRequest {
    ChatSendRequest {
        recipient: Some(to),
        sender_id: Some(from),
        message_type: Some("interactive".to_owned()),
        interactive: Some(interactive),
        ..ChatSendRequest::default()
    }
}

/// The account's only shop that publishes to a chat catalogue (422 on `catalogue_id` when it
/// has none, or several).
async fn only_chat_shop(conn: &mut store::Conn, caller: &Caller) -> Result<Shop, Error> {
    let shops: Vec<Shop> = catalogues::table
        .filter(catalogues::tenant_id.eq(caller.tenant_id.0).and(catalogues::is_connected_to_waba))
        .order(catalogues::id)
        .select(Shop::as_select())
        .load(conn)
        .await?;
    let mut shops: Vec<Shop> = shops.into_iter().filter(publishes_to_chat).collect();
    match shops.len() {
        1 => Ok(shops.remove(0)),
        0 => Err(Error::field("catalogue_id", "No catalogue of this account publishes to a chat catalogue.")),
        _ => {
            let ids: Vec<String> = shops.iter().map(|s| s.id.to_string()).collect();
            Err(Error::field(
                "catalogue_id",
                format!(
                    "Several catalogues publish to a chat catalogue ({}): name one with catalogue_id.",
                    ids.join(", ")
                ),
            ))
        }
    }
}

/// The storefront page (1-based) that shows `product`: the page lists the shelf's storefront
/// products by name, then id, [`crate::storefront::PER_PAGE`] a page.
async fn storefront_page(conn: &mut store::Conn, shop: &Shop, product: &Found) -> Result<i64, Error> {
    let listed = product_listings::table
        .filter(product_listings::tenant_id.eq(shop.tenant_id))
        .filter(product_listings::platform.eq(STOREFRONT))
        .filter(product_listings::state.eq_any(ON_STOREFRONT))
        .select(product_listings::product_id);
    let before: i64 = products::table
        .filter(products::tenant_id.eq(shop.tenant_id))
        .filter(products::catalogue_id.eq(shop.id))
        .filter(products::retired_at.is_null())
        .filter(products::id.eq_any(listed))
        .filter(products::name.lt(&product.name).or(products::name.eq(&product.name).and(products::id.lt(product.id))))
        .count()
        .get_result(conn)
        .await?;
    Ok(before / crate::storefront::PER_PAGE + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fragment_keeps_plain_codes_and_encodes_the_rest() {
        assert_eq!(fragment("KAHAWA-1_a.b~"), "KAHAWA-1_a.b~");
        assert_eq!(fragment("A B#%"), "A%20B%23%25");
        assert_eq!(fragment("é"), "%C3%A9");
    }

    #[test]
    fn a_product_item_reads_as_a_code_or_an_object() {
        let items: Vec<ProductItem> =
            serde_json::from_str(r#"["A-1", {"product_retailer_id": "B-2"}]"#).expect("items");
        assert_eq!(items.iter().map(ProductItem::code).collect::<Vec<_>>(), ["A-1", "B-2"]);
        assert!(serde_json::from_str::<ProductItem>("{}").is_err());
        assert!(serde_json::from_str::<ProductItem>("12").is_err());
    }
}
