//! The menu form (contract: Forms, "Menu forms"): three fixed screens built from up to 20
//! published products: quantities, a note, a confirmation. Its answer is read back into an
//! order of SKUs and quantities; prices are never read from it, the service sets them.
//!
//! Screen 1 holds one optional `number` question per product (0 to [`QUANTITY_MAX`]), keyed
//! by [`quantity_key`] of its SKU, labelled with the product's name (cut to 20 characters,
//! the number input's limit) and helped by its full name and price. Screen 2 holds the
//! optional `note` (long text), screen 3 the required `confirm` (agreement). Labels are in
//! Swahili for `sw` and English for any other language.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::definition::{Definition, HELP_MAX, Issue, KEY_MAX, Page, Question};
use super::question_types::SHORT_LABEL_MAX;

/// Products shown on one menu; more are left off.
pub const MENU_PRODUCTS_MAX: usize = 20;
/// The most of one product a menu order takes (our choice: catches typos like 1000).
pub const QUANTITY_MAX: u32 = 99;
/// The key of the note question.
pub const NOTE_KEY: &str = "note";
/// The key of the confirmation question.
pub const CONFIRM_KEY: &str = "confirm";

/// A published product as the menu shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MenuProduct {
    pub sku: String,
    pub name: String,
    /// Shown to the customer only; whole hundredths of `currency`.
    pub price_minor: i64,
    pub currency: String,
}

/// What a menu answer orders: `(sku, quantity)` in menu order, and the customer's note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MenuOrder {
    pub items: Vec<(String, u32)>,
    pub note: Option<String>,
}

/// The fixed words of the menu in one language.
struct Words {
    products: &'static str,
    note_title: &'static str,
    note_label: &'static str,
    confirm_title: &'static str,
    confirm_label: &'static str,
    submit: &'static str,
}

const SWAHILI: Words = Words {
    products: "Chagua bidhaa",
    note_title: "Maelezo",
    note_label: "Maelezo ya ziada (si lazima)",
    confirm_title: "Thibitisha",
    confirm_label: "Nathibitisha oda yangu",
    submit: "Tuma oda",
};

const ENGLISH: Words = Words {
    products: "Choose products",
    note_title: "Note",
    note_label: "Anything to add? (optional)",
    confirm_title: "Confirm",
    confirm_label: "I confirm my order",
    submit: "Place order",
};

/// The menu's definition for `products` (the first 20 distinct SKUs) in `language`.
pub fn menu_definition(products: &[MenuProduct], language: &str) -> Definition {
    let words = if language == "sw" { &SWAHILI } else { &ENGLISH };
    let quantities = shown(products).map(quantity_question).collect();
    let note = Question {
        key: NOTE_KEY.into(),
        kind: "long_text".into(),
        label: words.note_label.into(),
        ..Default::default()
    };
    let confirm = Question {
        key: CONFIRM_KEY.into(),
        kind: "agreement".into(),
        label: words.confirm_label.into(),
        required: true,
        ..Default::default()
    };
    Definition {
        pages: vec![
            Page { title: words.products.into(), questions: quantities },
            Page { title: words.note_title.into(), questions: vec![note] },
            Page { title: words.confirm_title.into(), questions: vec![confirm] },
        ],
        submit_label: Some(words.submit.into()),
    }
}

/// Reads a menu answer (as [`read_answers`](super::answers::read_answers) gives it) back
/// into an order. Only products of `products` count; at least one must be picked and the
/// order confirmed.
pub fn menu_order(products: &[MenuProduct], answers: &Map<String, Value>) -> Result<MenuOrder, Issue> {
    if answers.get(CONFIRM_KEY) != Some(&Value::Bool(true)) {
        return Err(Issue::new(CONFIRM_KEY, "required", "The order was not confirmed."));
    }
    let mut items = Vec::new();
    for product in shown(products) {
        let key = quantity_key(&product.sku);
        let Some(value) = answers.get(&key) else { continue };
        let quantity = quantity(value).ok_or_else(|| {
            Issue::new(&key, "out_of_range", format!("A quantity is a whole number from 0 to {QUANTITY_MAX}."))
        })?;
        if quantity > 0 {
            items.push((product.sku.clone(), quantity));
        }
    }
    if items.is_empty() {
        return Err(Issue::new("items", "required", "No product was picked."));
    }
    let note = answers.get(NOTE_KEY).and_then(Value::as_str).map(str::trim).filter(|n| !n.is_empty());
    Ok(MenuOrder { items, note: note.map(str::to_owned) })
}

/// The question key of a product's quantity: `qty_` and the SKU with ASCII letters and
/// digits kept and every other character written `_<hex code>_` (so `ACME-00012` is
/// `qty_ACME_2d_00012`), which maps distinct SKUs to distinct keys. A SKU too long for
/// that uses `sku_` and a hash of the SKU instead.
pub fn quantity_key(sku: &str) -> String {
    let mut key = String::from("qty_");
    for c in sku.chars() {
        if c.is_ascii_alphanumeric() {
            key.push(c);
        } else {
            key.push_str(&format!("_{:x}_", u32::from(c)));
        }
    }
    if key.len() <= KEY_MAX { key } else { format!("sku_{:016x}", fnv1a(sku)) }
}

/// FNV-1a, 64 bits: stable across builds and platforms, unlike the std hasher.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

/// The products a menu shows: the first 20 distinct SKUs.
fn shown(products: &[MenuProduct]) -> impl Iterator<Item = &MenuProduct> {
    let mut seen = HashSet::new();
    products.iter().filter(move |p| seen.insert(p.sku.as_str())).take(MENU_PRODUCTS_MAX)
}

fn quantity_question(product: &MenuProduct) -> Question {
    let price = price(product.price_minor, &product.currency);
    Question {
        key: quantity_key(&product.sku),
        kind: "number".into(),
        label: clip(&product.name, SHORT_LABEL_MAX),
        min: Some(0.0),
        max: Some(f64::from(QUANTITY_MAX)),
        help: Some(clip(&format!("{} · {price}", product.name), HELP_MAX)),
        ..Default::default()
    }
}

fn quantity(value: &Value) -> Option<u32> {
    value.as_u64().and_then(|n| u32::try_from(n).ok()).filter(|n| *n <= QUANTITY_MAX)
}

/// `TZS 1,500.00`: every currency has 100 minor units (contract: Payments).
fn price(minor: i64, currency: &str) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    let (major, cents) = (minor.unsigned_abs() / 100, minor.unsigned_abs() % 100);
    let digits = major.to_string();
    let mut grouped = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    format!("{currency} {sign}{grouped}.{cents:02}")
}

/// At most `max` characters, an ellipsis marking a cut.
fn clip(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max { text.to_owned() } else { text.chars().take(max - 1).chain(['…']).collect() }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::forms::answers::read_answers;
    use crate::forms::definition::{check, valid_key};

    fn product(sku: &str, name: &str, price_minor: i64) -> MenuProduct {
        MenuProduct { sku: sku.into(), name: name.into(), price_minor, currency: "TZS".into() }
    }

    fn menu() -> Vec<MenuProduct> {
        vec![
            product("CHAI-00001", "Chai ya tangawizi na maziwa", 150_000),
            product("MANDAZI-00002", "Mandazi", 50_000),
            product("kahawa_3", "Kahawa", 1_234_567_800),
        ]
    }

    #[test]
    fn three_screens_that_pass_the_checks() {
        let definition = menu_definition(&menu(), "en");
        assert_eq!(check(&definition, None), vec![]);
        let titles: Vec<&str> = definition.pages.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(titles, ["Choose products", "Note", "Confirm"]);
        assert_eq!(definition.submit_label(), "Place order");

        let chai = &definition.pages[0].questions[0];
        assert_eq!(chai.key, "qty_CHAI_2d_00001");
        assert_eq!(chai.kind, "number");
        assert_eq!(chai.label, "Chai ya tangawizi n…");
        assert_eq!(chai.label.chars().count(), 20);
        assert_eq!(chai.help.as_deref(), Some("Chai ya tangawizi na maziwa · TZS 1,500.00"));
        assert!(!chai.required);
        assert_eq!(definition.pages[0].questions[2].help.as_deref(), Some("Kahawa · TZS 12,345,678.00"));

        let note = &definition.pages[1].questions[0];
        assert_eq!((note.key.as_str(), note.kind.as_str(), note.required), ("note", "long_text", false));
        let confirm = &definition.pages[2].questions[0];
        assert_eq!((confirm.key.as_str(), confirm.kind.as_str(), confirm.required), ("confirm", "agreement", true));
    }

    #[test]
    fn swahili_words() {
        let definition = menu_definition(&menu(), "sw");
        assert_eq!(check(&definition, None), vec![]);
        let titles: Vec<&str> = definition.pages.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(titles, ["Chagua bidhaa", "Maelezo", "Thibitisha"]);
        assert_eq!(definition.submit_label(), "Tuma oda");
    }

    #[test]
    fn twenty_distinct_products_at_most() {
        let many: Vec<MenuProduct> = (0..25).map(|i| product(&format!("P-{i}"), &format!("Item {i}"), 100)).collect();
        let twenty = menu_definition(&many[..20], "en");
        assert_eq!(twenty.pages[0].questions.len(), 20);
        assert_eq!(check(&twenty, None), vec![]);
        let cut = menu_definition(&many, "en");
        assert_eq!(cut.pages[0].questions.len(), 20);
        assert_eq!(cut.pages[0].questions[19].key, quantity_key("P-19"));

        let twice = vec![product("A", "One", 100), product("A", "Again", 200)];
        let definition = menu_definition(&twice, "en");
        assert_eq!(definition.pages[0].questions.len(), 1);
        assert_eq!(definition.pages[0].questions[0].label, "One");
    }

    #[test]
    fn quantity_keys_are_valid_and_distinct() {
        let skus = ["A-1", "A_1", "A1", "a1", "Ä1", "A 1", "A--1", "A-2d-1", "ACME-00012", &"X".repeat(100)];
        let keys: Vec<String> = skus.iter().map(|s| quantity_key(s)).collect();
        for key in &keys {
            assert!(valid_key(key) && key.len() <= KEY_MAX, "{key}");
        }
        assert_eq!(keys.iter().collect::<HashSet<_>>().len(), keys.len());
        assert_eq!(keys[8], "qty_ACME_2d_00012");
        assert!(keys[9].starts_with("sku_"));
        assert_eq!(quantity_key(&"X".repeat(100)), keys[9]);
    }

    #[test]
    fn round_trip_from_the_providers_reply() {
        let products = menu();
        let definition = menu_definition(&products, "sw");
        let reply = json!({
            "flow_token": "tok",
            "qty_CHAI_2d_00001": "2",
            "qty_MANDAZI_2d_00002": "0",
            "qty_kahawa_5f_3": "1",
            "note": "  Bila sukari ",
            "confirm": "true",
            // a price in the reply is ignored: the service prices the order
            "price": "1"
        });
        let answers = read_answers(&definition, &reply).expect("answers");
        let order = menu_order(&products, &answers).expect("order");
        assert_eq!(
            order,
            MenuOrder {
                items: vec![("CHAI-00001".into(), 2), ("kahawa_3".into(), 1)],
                note: Some("Bila sukari".into())
            }
        );
    }

    #[test]
    fn quantities_past_the_bound_arrive_as_issues() {
        let products = menu();
        let definition = menu_definition(&products, "en");
        let at = json!({"qty_CHAI_2d_00001": "99", "confirm": true});
        let answers = read_answers(&definition, &at).expect("answers");
        assert_eq!(menu_order(&products, &answers).expect("order").items, [("CHAI-00001".into(), 99)]);
        for past in ["100", "-1"] {
            let reply = json!({"qty_CHAI_2d_00001": past, "confirm": true});
            let issues = read_answers(&definition, &reply).expect_err("issues");
            assert_eq!(issues[0].code, "out_of_range", "{past}");
        }
    }

    #[test]
    fn an_order_needs_a_product_and_a_confirmation() {
        let products = menu();
        let answers = |value: Value| match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        };
        let nothing = answers(json!({"qty_CHAI_2d_00001": 0, "confirm": true}));
        assert_eq!(menu_order(&products, &nothing).map_err(|i| i.path), Err("items".into()));
        let unconfirmed = answers(json!({"qty_CHAI_2d_00001": 1, "confirm": false}));
        assert_eq!(menu_order(&products, &unconfirmed).map_err(|i| i.path), Err("confirm".into()));
        let half = answers(json!({"qty_CHAI_2d_00001": 1.5, "confirm": true}));
        assert_eq!(menu_order(&products, &half).map_err(|i| i.code), Err("out_of_range".into()));
        // a product no longer on the menu is left out; no note is None
        let gone = answers(json!({"qty_GONE": 3, "qty_MANDAZI_2d_00002": 4, "confirm": true}));
        let order = menu_order(&products, &gone).expect("order");
        assert_eq!(order, MenuOrder { items: vec![("MANDAZI-00002".into(), 4)], note: None });
        // a confirm the customer never ticked fails reading, before any order is built
        let definition = menu_definition(&products, "en");
        let issues = read_answers(&definition, &json!({"qty_CHAI_2d_00001": "1"})).expect_err("issues");
        assert_eq!((issues[0].path.as_str(), issues[0].code.as_str()), ("confirm", "required"));
    }

    #[test]
    fn prices_read_in_major_units() {
        assert_eq!(price(0, "TZS"), "TZS 0.00");
        assert_eq!(price(5, "USD"), "USD 0.05");
        assert_eq!(price(100_000, "TZS"), "TZS 1,000.00");
        assert_eq!(price(4_500_000, "TZS"), "TZS 45,000.00");
        assert_eq!(price(-12_345, "KES"), "KES -123.45");
    }
}
