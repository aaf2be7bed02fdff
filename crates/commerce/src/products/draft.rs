//! What a product body may set (`Input`), and a product's whole writable state (`Draft`) that
//! a body is applied to: a `PUT` and a sync row go through the same rules.

use serde_json::{Map, Value};

use crate::fields::{Body, Member};

/// Availability values a body may set (contract: Product).
pub const AVAILABILITIES: &[&str] = &["in stock", "out of stock", "preorder", "available for order", "discontinued"];
const MAX_PRICE: i64 = 1_000_000_000_000_000;

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

/// A refused body or row: the field and why.
pub(crate) type Problem = (&'static str, String);

/// The members a body sent; absent ones leave the product as it is.
#[derive(Debug, Clone)]
pub(crate) struct Input {
    pub sku: Member<String>,
    name: Member<String>,
    price: Member<i64>,
    sale_price: Member<i64>,
    description: Member<String>,
    currency: Member<String>,
    image_url: Member<String>,
    pub inventory: Member<i64>,
    availability: Member<&'static str>,
    brand: Member<String>,
    category: Member<String>,
}

impl Input {
    /// Reads a body; field errors are left in `body.errors`.
    pub fn read(body: &mut Body<'_>) -> Self {
        // contract: `retailer_id` is an alias of `sku`; `sku` wins when both are sent
        let sku = body.sku();
        if let Member::Set(code) = &sku
            && (code.contains('/') || code.chars().any(char::is_control))
        {
            body.error("sku", "The sku may not contain '/' or control characters.");
        }
        let image_url = body.text("image_url", 2_048);
        if let Member::Set(url) = &image_url
            && !(url.starts_with("https://") || url.starts_with("http://"))
        {
            body.error("image_url", "The image_url must be an http or https URL.");
        }
        Self {
            sku,
            name: body.text("name", 200),
            price: body.int("price", 0, MAX_PRICE),
            sale_price: body.int("sale_price", 0, MAX_PRICE),
            description: body.text("description", 9_999),
            currency: body.currency("currency"),
            image_url,
            inventory: body.int("inventory", 0, i32::MAX.into()),
            availability: body.one_of("availability", AVAILABILITIES),
            brand: body.text("brand", 100),
            category: body.text("category", 100),
        }
    }

    /// Reads one object (a batch row): the input, or the first problem.
    pub fn read_object(object: &Map<String, Value>) -> Result<Self, String> {
        let mut body = Body::new(object);
        let input = Self::read(&mut body);
        match body.first_error() {
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
            Member::Set(name) => draft.name = name.clone(),
            Member::Null => return Err(("name", "The name may not be empty.".to_owned())),
            Member::Absent => {}
        }
        match self.price {
            Member::Set(price) => draft.price = price,
            Member::Null => return Err(("price", "The price may not be null.".to_owned())),
            Member::Absent => {}
        }
        if let Member::Set(currency) = &self.currency {
            draft.currency = currency.clone();
        }
        if let Member::Set(sku) = &self.sku {
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
        Input::read_object(body.as_object().expect("object")).expect("valid")
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
        assert_eq!(input(json!({"retailer_id": "R-1"})).sku, Member::Set("R-1".to_owned()));
        assert_eq!(input(json!({"sku": "S", "retailer_id": "R"})).sku, Member::Set("S".to_owned()));
        for bad in [
            json!({"sku": "a/b"}),
            json!({"price": -1}),
            json!({"availability": "soon"}),
            json!({"image_url": "ftp://x"}),
        ] {
            assert!(Input::read_object(bad.as_object().expect("object")).is_err(), "{bad}");
        }
    }
}
