//! What a product body may set (`Input`), and a product's whole writable state (`Draft`) that
//! a body is applied to: a `PUT` and a sync row go through the same rules.

use kernel::Patch;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use kernel::object::Object;

use crate::rules::{MAX_PRICE, Money, Rules, Units, Whole, choice};

/// Availability values a body may set (contract: Product).
pub const AVAILABILITIES: &[&str] = &["in stock", "out of stock", "preorder", "available for order", "discontinued"];

choice! {
    /// A product's availability.
    Availability = AVAILABILITIES;
}

/// The writable state of a product.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Draft {
    pub sku: String,
    pub name: String,
    pub price: i64,
    pub sale_price: Option<i64>,
    pub description: Option<String>,
    pub currency: String,
    pub image_url: Option<String>,
    pub inventory: Option<i32>,
    pub availability: Option<String>,
    pub brand: Option<String>,
    pub category: Option<String>,
}

/// `PUT /catalogues/{catalogue}/products/...` and each row of a product batch: a member left out
/// keeps the product's value, a null clears an optional one. A new product needs `name` and
/// `price`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct ProductBody {
    /// The product's code: up to 100 characters, no `/`. A new product made by code takes the
    /// code of its path; on an existing product a new code renames it.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 100, pattern = r"^[\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[^/\u0000-\u001F\u007F-\u009F]*[\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$")]
    pub sku: Patch<String>,
    /// Alias of `sku`, read when that is not sent.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 100, pattern = r"^[\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[^/\u0000-\u001F\u007F-\u009F]*[\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$")]
    pub retailer_id: Patch<String>,
    /// Up to 200 characters; required for a new product; never null or blank.
    #[serde(default)]
    #[schema(value_type = String, max_length = 200, pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]")]
    pub name: Patch<String>,
    /// Minor units of `currency`, 0 to 10^18; required for a new product; never null.
    #[serde(default)]
    #[schema(value_type = Money)]
    pub price: Patch<Whole>,
    /// Minor units, at most the price.
    #[serde(default)]
    #[schema(value_type = Option<Money>)]
    pub sale_price: Patch<Whole>,
    /// Up to 9,999 characters.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 9999)]
    pub description: Patch<String>,
    /// ISO 4217; the shop's (or the account's) when a new product leaves it out.
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = r"^[\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*(?:[A-Za-z]{3})?[\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$")]
    pub currency: Patch<String>,
    /// An http or https URL, up to 2,048 characters.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 2048, pattern = r"^[\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*(?:https?://[\s\S]*)?$")]
    pub image_url: Patch<String>,
    /// On hand, 0 or more; null: stock is not tracked.
    #[serde(default)]
    #[schema(value_type = Option<Units>)]
    pub inventory: Patch<Whole>,
    /// `in stock`, `out of stock`, `preorder`, `available for order` or `discontinued`; null:
    /// derived from the stock.
    #[serde(default)]
    #[schema(value_type = Option<Availability>)]
    pub availability: Patch<String>,
    /// Up to 100 characters; made a brand record on first use.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 100)]
    pub brand: Patch<String>,
    /// Up to 100 characters; made a category record on first use.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 100)]
    pub category: Patch<String>,
}

/// A refused body or row: the field and why.
pub(crate) type Problem = (&'static str, String);

/// The members a body sent; absent ones leave the product as it is.
#[derive(Debug, Clone)]
pub(crate) struct Input {
    pub sku: Patch<String>,
    name: Patch<String>,
    price: Patch<i64>,
    sale_price: Patch<i64>,
    description: Patch<String>,
    currency: Patch<String>,
    image_url: Patch<String>,
    pub inventory: Patch<i64>,
    availability: Patch<&'static str>,
    brand: Patch<String>,
    category: Patch<String>,
}

impl Input {
    /// Checks a body; field errors are left in `rules`.
    pub fn read(body: ProductBody, rules: &mut Rules) -> Self {
        // contract: `retailer_id` is an alias of `sku`; `sku` wins when both are sent
        let sku = rules.product_sku(body.sku, body.retailer_id);
        let image_url = rules.text("image_url", body.image_url, 2_048);
        if let Patch::Set(url) = &image_url
            && !(url.starts_with("https://") || url.starts_with("http://"))
        {
            rules.error("image_url", "The image_url must be an http or https URL.");
        }
        Self {
            sku,
            name: rules.text("name", body.name, 200),
            price: rules.int("price", body.price, 0, MAX_PRICE),
            sale_price: rules.int("sale_price", body.sale_price, 0, MAX_PRICE),
            description: rules.text("description", body.description, 9_999),
            currency: rules.currency("currency", body.currency),
            image_url,
            inventory: rules.int("inventory", body.inventory, 0, i32::MAX.into()),
            availability: rules.one_of("availability", body.availability, AVAILABILITIES),
            brand: rules.text("brand", body.brand, 100),
            category: rules.text("category", body.category, 100),
        }
    }

    /// Reads one batch row: the input, or the first problem (a wrong type included).
    pub fn read_row(row: &Value) -> Result<Self, String> {
        let Object(body): Object<ProductBody> = serde_path_to_error::deserialize(row).map_err(|e| {
            let message = e.inner().to_string();
            format!("The {} field is invalid: {message}.", e.path())
        })?;
        let mut rules = Rules::new();
        let input = Self::read(body, &mut rules);
        match rules.first_error() {
            None => Ok(input),
            Some(problem) => Err(problem),
        }
    }

    /// A new product from this body: `name` and `price` are required (contract: Product rules).
    pub fn create(&self, sku: String, currency: &str) -> Result<Draft, Problem> {
        let name = self.name.clone().set().ok_or(("name", "The name field is required.".to_owned()))?;
        let price = self.price.clone().set().ok_or(("price", "The price field is required.".to_owned()))?;
        let draft = Draft {
            sku,
            name,
            price,
            sale_price: None,
            description: None,
            currency: currency.to_owned(),
            image_url: None,
            inventory: None,
            availability: None,
            brand: None,
            category: None,
        };
        self.apply(draft)
    }

    /// `draft` with the members this body sent (a null clears an optional one).
    pub fn apply(&self, mut draft: Draft) -> Result<Draft, Problem> {
        match &self.name {
            Patch::Set(name) => draft.name = name.clone(),
            Patch::Null => return Err(("name", "The name may not be empty.".to_owned())),
            Patch::Absent => {}
        }
        match self.price {
            Patch::Set(price) => draft.price = price,
            Patch::Null => return Err(("price", "The price may not be null.".to_owned())),
            Patch::Absent => {}
        }
        if let Patch::Set(currency) = &self.currency {
            draft.currency = currency.clone();
        }
        if let Patch::Set(sku) = &self.sku {
            draft.sku = sku.clone();
        }
        if let Some(v) = self.sale_price.clone().change() {
            draft.sale_price = v;
        }
        if let Some(v) = self.description.clone().change() {
            draft.description = v;
        }
        if let Some(v) = self.image_url.clone().change() {
            draft.image_url = v;
        }
        if let Some(v) = self.inventory.clone().change() {
            draft.inventory = v.map(|n| n as i32);
        }
        if let Some(v) = self.availability.clone().change() {
            draft.availability = v.map(str::to_owned);
        }
        if let Some(v) = self.brand.clone().change() {
            draft.brand = v;
        }
        if let Some(v) = self.category.clone().change() {
            draft.category = v;
        }
        if draft.sale_price.is_some_and(|sale| sale > draft.price) {
            return Err(("sale_price", "The sale_price may not be greater than the price.".to_owned()));
        }
        Ok(draft)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn input(body: Value) -> Input {
        Input::read_row(&body).expect("valid")
    }

    #[test]
    fn a_body_changes_only_what_it_sends_and_null_clears() {
        let made = input(json!({"name": "Kahawa", "price": 1800, "sale_price": 1500, "brand": "Kili"}))
            .create("K-1".into(), "TZS")
            .expect("created");
        let changed = input(json!({"sale_price": null, "inventory": 4})).apply(made.clone()).expect("applied");
        assert_eq!((changed.sale_price, changed.inventory), (None, Some(4)));
        assert_eq!((changed.name.as_str(), changed.brand.as_deref()), ("Kahawa", Some("Kili")));
    }

    #[test]
    fn creating_needs_a_name_and_a_price_and_a_sale_price_stays_below_the_price() {
        assert_eq!(input(json!({"price": 10})).create("A".into(), "TZS").map_err(|e| e.0), Err("name"));
        assert_eq!(input(json!({"name": "A"})).create("A".into(), "TZS").map_err(|e| e.0), Err("price"));
        let sale = input(json!({"name": "A", "price": 10, "sale_price": 11})).create("A".into(), "TZS");
        assert_eq!(sale.map_err(|e| e.0), Err("sale_price"));
    }

    #[test]
    fn retailer_id_stands_for_sku_and_bad_values_are_refused() {
        assert_eq!(input(json!({"retailer_id": "R-1"})).sku, Patch::Set("R-1".to_owned()));
        assert_eq!(input(json!({"sku": "S", "retailer_id": "R"})).sku, Patch::Set("S".to_owned()));
        for bad in [
            json!({"sku": "a/b"}),
            json!({"sku": "S", "retailer_id": "R\u{84}"}),
            json!({"retailer_id": format!("{}R", "\u{85}".repeat(100))}),
            json!({"price": -1}),
            json!({"availability": "soon"}),
            json!({"image_url": "ftp://x"}),
            json!({"price": true}),
        ] {
            assert!(Input::read_row(&bad).is_err(), "{bad}");
        }
    }
}
