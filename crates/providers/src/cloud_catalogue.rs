//! The chat catalogue through the Cloud API's commerce (Graph API shape): catalogues on the
//! business account's `product_catalogs` edge, items written by retailer id with
//! `POST /{catalogue_id}/items_batch` and read back from `GET /{catalogue_id}/products`.
//!
//! Creating a catalogue posts its `name` to `/{waba_id}/product_catalogs`. The real API creates
//! catalogues under the business (the portfolio that owns the WhatsApp Business Account) and
//! connects them to the account with this same edge; we hold only the business account id, so
//! that is what we address, for creating and connecting alike.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::catalogue::{CatalogueError, CatalogueGateway, CatalogueItem, ItemOutcome, MAX_BATCH};
use crate::cloud::{Answer, Cloud, integer, stated_error, text};
use crate::sms::SendError;

/// The `fields` a product is read with.
const PRODUCT_FIELDS: &str =
    "retailer_id,name,description,price,sale_price,currency,availability,image_url,brand,category,inventory";
/// Retailer ids in one `products` filter; the filter travels in the query string.
const IDS_PER_READ: usize = 100;

/// A non-2xx answer: the provider's own words when it said no, a failure when it is throttling,
/// in trouble or unreadable.
fn refusal(answer: &Answer, what: &str) -> CatalogueError {
    match stated_error(answer) {
        Ok(error) => {
            let reason = error.reason_for_people();
            tracing::info!(reason, "the Cloud API refused {what}");
            CatalogueError::Refused { reason }
        }
        Err(error) => CatalogueError::Failed(error),
    }
}

/// `45000.00 TZS`: the batch API takes a price as units with two decimals and the currency.
fn price(minor: i64, currency: &str) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    let minor = minor.unsigned_abs();
    format!("{sign}{}.{:02} {currency}", minor / 100, minor % 100)
}

/// The `data` of an `UPDATE` request; members without a value are left out, not nulled.
fn item_data(item: &CatalogueItem) -> Value {
    let mut data = Map::new();
    data.insert("id".into(), json!(item.retailer_id));
    data.insert("title".into(), json!(item.name));
    if let Some(description) = &item.description {
        data.insert("description".into(), json!(description));
    }
    data.insert("price".into(), json!(price(item.price_minor, &item.currency)));
    if let Some(sale_price) = item.sale_price_minor {
        data.insert("sale_price".into(), json!(price(sale_price, &item.currency)));
    }
    data.insert("availability".into(), json!(item.availability));
    if let Some(image_link) = &item.image_url {
        data.insert("image_link".into(), json!(image_link));
    }
    if let Some(brand) = &item.brand {
        data.insert("brand".into(), json!(brand));
    }
    if let Some(category) = &item.category {
        data.insert("category".into(), json!(category));
    }
    if let Some(inventory) = item.inventory {
        data.insert("inventory".into(), json!(inventory));
    }
    Value::Object(data)
}

/// The provider's reasons, by retailer id, for the items of a batch it refused: the
/// `validation_status` entries with errors, their messages joined.
fn refusals(answer: &Value) -> HashMap<String, String> {
    let mut refused: HashMap<String, String> = HashMap::new();
    for status in answer.get("validation_status").and_then(Value::as_array).into_iter().flatten() {
        let errors = status.get("errors").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        if errors.is_empty() {
            continue;
        }
        let Some(retailer_id) = status.get("retailer_id").and_then(text) else {
            tracing::warn!(%status, "the Cloud API refused a batch item without naming it");
            continue;
        };
        let reason = errors
            .iter()
            .map(|error| error.get("message").and_then(text).unwrap_or_else(|| error.to_string()))
            .collect::<Vec<_>>()
            .join("; ");
        refused
            .entry(retailer_id)
            .and_modify(|earlier| {
                earlier.push_str("; ");
                earlier.push_str(&reason);
            })
            .or_insert(reason);
    }
    refused
}

/// Minor units, and the currency code when the text has one, of a price as the catalogue gives
/// it: `45000.00 TZS`, `TZS 45,000.00` or a bare `45000.00`.
fn read_price(price: &str) -> Option<(i64, Option<String>)> {
    let start = price.find(|c: char| c.is_ascii_digit() || c == '-')?;
    let end = price.rfind(|c: char| c.is_ascii_digit())? + 1;
    let minor = minor_units(price.get(start..end)?)?;
    let code = price[..start]
        .split_whitespace()
        .chain(price[end..].split_whitespace())
        .find(|word| word.len() == 3 && word.bytes().all(|b| b.is_ascii_uppercase()))
        .map(str::to_owned);
    Some((minor, code))
}

/// `45,000.5` as 4500050; at most two decimals, since a price is whole minor units.
fn minor_units(amount: &str) -> Option<i64> {
    let amount = amount.replace(',', "");
    let (negative, digits) = match amount.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, amount.as_str()),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || fraction.len() > 2 || !all_digits(fraction) {
        return None;
    }
    let cents: i64 = format!("{fraction:0<2}").parse().ok()?;
    let minor = whole.parse::<i64>().ok()?.checked_mul(100)?.checked_add(cents)?;
    Some(if negative { -minor } else { minor })
}

/// A product of the `products` listing.
fn catalogue_item(value: &Value) -> Result<CatalogueItem, SendError> {
    let optional = |key: &str| value.get(key).and_then(text);
    let retailer_id =
        optional("retailer_id").ok_or_else(|| SendError::Malformed("a product without retailer_id".into()))?;
    let required =
        |key: &str| optional(key).ok_or_else(|| SendError::Malformed(format!("product {retailer_id}: no {key}")));
    let read = |key: &str, price: &str| {
        read_price(price)
            .ok_or_else(|| SendError::Malformed(format!("product {retailer_id}: the {key} {price:?} is not a price")))
    };
    let (price_minor, code) = read("price", &required("price")?)?;
    let sale_price_minor = optional("sale_price").map(|sale_price| read("sale_price", &sale_price)).transpose()?;
    let currency = optional("currency").or(code).ok_or_else(|| {
        SendError::Malformed(format!("product {retailer_id}: no currency, in the price or beside it"))
    })?;
    let inventory = match value.get("inventory") {
        None | Some(Value::Null) => None,
        Some(inventory) => Some(integer(inventory).and_then(|n| i32::try_from(n).ok()).ok_or_else(|| {
            SendError::Malformed(format!("product {retailer_id}: the inventory {inventory} is not a count"))
        })?),
    };
    Ok(CatalogueItem {
        name: required("name")?,
        description: optional("description"),
        price_minor,
        sale_price_minor: sale_price_minor.map(|(minor, _)| minor),
        currency,
        // Left empty rather than failing the read: a drift check then sees it differ and rewrites it
        availability: optional("availability").unwrap_or_default(),
        image_url: optional("image_url"),
        brand: optional("brand"),
        category: optional("category"),
        inventory,
        retailer_id,
    })
}

impl Cloud {
    /// Posts a JSON body as the account; the answer of a 2xx.
    async fn post_json(&self, segments: &[&str], body: &Value, what: &str) -> Result<Value, CatalogueError> {
        let url = self.endpoint(segments, &[])?;
        let answer = self.call(self.client.post(url).json(body)).await?;
        if !answer.is_success() {
            return Err(refusal(&answer, what));
        }
        Ok(answer.json(what)?)
    }
}

#[async_trait::async_trait]
impl CatalogueGateway for Cloud {
    async fn create_catalogue(&self, waba_id: &str, name: &str) -> Result<String, CatalogueError> {
        let body = json!({ "name": name });
        let answer = self.post_json(&[waba_id, "product_catalogs"], &body, "the catalogue creation").await?;
        let id = answer
            .get("id")
            .and_then(text)
            .ok_or_else(|| SendError::Malformed("a catalogue created without an id".into()))?;
        tracing::info!(waba_id, catalogue_id = id, "the Cloud API created a catalogue");
        Ok(id)
    }

    async fn connect_catalogue(&self, waba_id: &str, catalogue_id: &str) -> Result<(), CatalogueError> {
        let body = json!({ "catalog_id": catalogue_id });
        let answer = self.post_json(&[waba_id, "product_catalogs"], &body, "the catalogue connection").await?;
        if answer.get("success") != Some(&Value::Bool(true)) {
            return Err(SendError::Malformed("a catalogue connection answered without success".into()).into());
        }
        Ok(())
    }

    async fn upsert_items(
        &self,
        catalogue_id: &str,
        items: &[CatalogueItem],
    ) -> Result<Vec<ItemOutcome>, CatalogueError> {
        let mut outcomes = Vec::with_capacity(items.len());
        for chunk in items.chunks(MAX_BATCH) {
            let requests: Vec<Value> =
                chunk.iter().map(|item| json!({ "method": "UPDATE", "data": item_data(item) })).collect();
            let body = json!({ "item_type": "PRODUCT_ITEM", "allow_upsert": true, "requests": requests });
            let answer = self.post_json(&[catalogue_id, "items_batch"], &body, "the item upsert").await?;
            let refused = refusals(&answer);
            tracing::debug!(catalogue_id, items = chunk.len(), refused = refused.len(), "upserted catalogue items");
            outcomes.extend(chunk.iter().map(|item| match refused.get(&item.retailer_id) {
                Some(reason) => ItemOutcome::Refused { reason: reason.clone() },
                None => ItemOutcome::Accepted,
            }));
        }
        Ok(outcomes)
    }

    async fn delete_items(&self, catalogue_id: &str, retailer_ids: &[String]) -> Result<(), CatalogueError> {
        for chunk in retailer_ids.chunks(MAX_BATCH) {
            let requests: Vec<Value> =
                chunk.iter().map(|id| json!({ "method": "DELETE", "data": { "id": id } })).collect();
            let body = json!({ "item_type": "PRODUCT_ITEM", "requests": requests });
            // Its validation errors name items the catalogue lacks, which is what a delete wants
            self.post_json(&[catalogue_id, "items_batch"], &body, "the item delete").await?;
            tracing::debug!(catalogue_id, items = chunk.len(), "deleted catalogue items");
        }
        Ok(())
    }

    async fn items(&self, catalogue_id: &str, retailer_ids: &[String]) -> Result<Vec<CatalogueItem>, CatalogueError> {
        let mut seen = HashSet::new();
        let unique: Vec<&str> = retailer_ids.iter().map(String::as_str).filter(|id| seen.insert(*id)).collect();
        let mut found = Vec::new();
        for chunk in unique.chunks(IDS_PER_READ) {
            let filter = json!({ "retailer_id": { "is_any": chunk } }).to_string();
            let url = self.endpoint(&[catalogue_id, "products"], &[("fields", PRODUCT_FIELDS), ("filter", &filter)])?;
            // `list` reads a refusal as the provider's words in a Malformed failure, as every
            // Cloud API read does
            for product in self.list(url, "the product listing").await? {
                // Only what was asked, should the provider widen the filter
                let asked = product.get("retailer_id").and_then(text).is_some_and(|id| chunk.contains(&id.as_str()));
                if asked {
                    found.push(catalogue_item(&product)?);
                }
            }
        }
        Ok(found)
    }
}
