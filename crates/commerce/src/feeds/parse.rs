//! Reading a feed file (CSV or JSON) into batch rows.
//!
//! A feed is a merchant's own product file; each product becomes one batch row shaped like
//! [`ProductBody`](crate::products::ProductBody), and the sync run's ingest checks every row, so
//! this reader only refuses what makes the whole file unreadable and leaves a bad value in its
//! row for the ingest to reject with its reason. The documented choices:
//!
//! - **Format** ([`format_of`]): the content type first (`text/csv`, `application/csv`,
//!   `text/tab-separated-values`, `application/json`, `text/json`), then the extension of the
//!   URL's path (`.csv`, `.tsv`, `.json`), then the first non-blank byte (`[` or `{` is JSON),
//!   else CSV.
//! - **Mapping** ([`Mapping`]): a JSON object from product fields (`sku`, `name`, `price`,
//!   `sale_price`, `description`, `currency`, `image_url`, `inventory`, `availability`, `brand`,
//!   `category`) to the feed's column names; an unknown field or a value that is no column name
//!   is an error naming it. A field not mapped is read from a column of its own name, else from
//!   the usual Meta and Google feed columns: `sku` from `id` or `retailer_id`, `name` from
//!   `title`, `image_url` from `image_link`, `inventory` from `quantity_to_sell_on_facebook` or
//!   `quantity`, `category` from `product_type` or `google_product_category`. A mapped field is
//!   read from its mapped column only. Columns no field reads are left out.
//! - **CSV**: the first row names the columns (trimmed, matched without case); comma-separated,
//!   tab-separated for [`Format::Tsv`], or `;` when the header line has more `;` than `,`. A
//!   UTF-8 BOM is skipped, a blank cell is left out of its row (not null: the product keeps its
//!   value) and a row of blank cells is skipped.
//! - **JSON**: an array of products, or an object holding one under `products`, `items` or
//!   `data`. Members are found like CSV columns (an exact name first, then without case); a
//!   blank string is left out as a blank cell is, a null is kept (it clears, as in the API), a
//!   number in a text field becomes its text (feeds often write ids as numbers), and an element
//!   that is no object is passed on unchanged for the ingest to reject.
//! - **Values**: `price` and `sale_price` as an integer (a JSON integer or digits) are minor
//!   units, as in the API; a decimal (`450.00`, or a JSON number with a fraction) or a value
//!   carrying a currency code (`45000.00 TZS`, `TZS 45,000.00`) is major units, and so are
//!   digits with thousands commas (`45,000`: written for people), made minor units exactly
//!   (x100); more than two decimals, or anything else
//!   unreadable, stays as written so the ingest rejects it. A code in the price fills `currency`
//!   when the row has none. `inventory` as integer text becomes a number, else stays as written.
//!   `availability` is lower-cased with `_` read as a space (`in_stock` is `in stock`).
//!   Everything else stays a string.
//! - **Whole-feed errors** (a reason for people): not UTF-8, not valid JSON, JSON with no product
//!   array, a CSV without a header, no rows, more than [`MAX_ROWS`] rows.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One batch (contract Limits: batch 5,000 products): a feed is synced as a single batch.
pub(crate) const MAX_ROWS: usize = 5_000;

/// How a feed file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Comma-separated, or `;` when the header line says so.
    Csv,
    /// Tab-separated: its own variant because the delimiter comes from the content type or the
    /// extension, which [`rows`] does not see.
    Tsv,
    Json,
}

/// The product fields a row may carry, in the order rows are written.
const FIELDS: [&str; 11] = [
    "sku",
    "name",
    "price",
    "sale_price",
    "description",
    "currency",
    "image_url",
    "inventory",
    "availability",
    "brand",
    "category",
];

/// The usual Meta and Google product feed columns for a field, after its own name.
fn aliases(field: &str) -> &'static [&'static str] {
    match field {
        "sku" => &["id", "retailer_id"],
        "name" => &["title"],
        "image_url" => &["image_link"],
        "inventory" => &["quantity_to_sell_on_facebook", "quantity"],
        "category" => &["product_type", "google_product_category"],
        _ => &[],
    }
}

/// Which format a fetched feed is: the content type, else the URL path's extension, else the
/// first non-blank byte of the body.
pub(crate) fn format_of(content_type: Option<&str>, url: &str, body: &[u8]) -> Format {
    let media = content_type.and_then(|t| t.split(';').next()).map(|t| t.trim().to_ascii_lowercase());
    match media.as_deref() {
        Some("text/csv" | "application/csv") => return Format::Csv,
        Some("text/tab-separated-values") => return Format::Tsv,
        Some("application/json" | "text/json") => return Format::Json,
        _ => {}
    }
    match extension(url).as_deref() {
        Some("csv") => return Format::Csv,
        Some("tsv") => return Format::Tsv,
        Some("json") => return Format::Json,
        _ => {}
    }
    let body = body.strip_prefix(BOM.as_bytes()).unwrap_or(body);
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[' | b'{') => Format::Json,
        _ => Format::Csv,
    }
}

const BOM: &str = "\u{feff}";

/// The lower-cased extension of the last segment of a URL's path (not of its host).
fn extension(url: &str) -> Option<String> {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let path = match url.split_once("://") {
        Some((_, rest)) => rest.split_once('/').map(|(_, path)| path)?,
        None => url,
    };
    let name = path.rsplit('/').next().unwrap_or_default();
    name.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase())
}

/// Product field -> the feed's column (CSV) or member (JSON) name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Mapping(BTreeMap<&'static str, String>);

impl Mapping {
    /// A feed's mapping as configured; none (or null) maps nothing.
    pub(crate) fn read(value: Option<&Value>) -> Result<Mapping, String> {
        let object = match value {
            None | Some(Value::Null) => return Ok(Mapping::default()),
            Some(Value::Object(object)) => object,
            Some(_) => {
                return Err("The mapping must be an object from product fields to the feed's column names.".into());
            }
        };
        let unknown: Vec<&str> = object.keys().map(String::as_str).filter(|k| !FIELDS.contains(k)).collect();
        if !unknown.is_empty() {
            return Err(format!(
                "The mapping names fields that are not product fields: {}. Product fields are {}.",
                unknown.join(", "),
                FIELDS.join(", ")
            ));
        }
        let mut mapping = BTreeMap::new();
        let mut bad = Vec::new();
        for field in FIELDS {
            match object.get(field) {
                Some(Value::String(column)) if !column.trim().is_empty() => {
                    mapping.insert(field, column.trim().to_owned());
                }
                Some(_) => bad.push(field),
                None => {}
            }
        }
        if !bad.is_empty() {
            return Err(format!("The mapping of {} must be a column name (a non-blank string).", bad.join(", ")));
        }
        Ok(Mapping(mapping))
    }

    /// The names a field is read from, the first one found wins: the mapped column alone, else
    /// the field's own name and its aliases.
    fn names(&self, field: &'static str) -> Vec<&str> {
        match self.0.get(field) {
            Some(column) => vec![column.as_str()],
            None => std::iter::once(field).chain(aliases(field).iter().copied()).collect(),
        }
    }
}

/// The batch rows of a feed file, or why the whole file cannot be read.
pub(crate) fn rows(body: &[u8], format: Format, mapping: &Mapping) -> Result<Vec<Value>, String> {
    let text = std::str::from_utf8(body)
        .map_err(|e| format!("The feed is not UTF-8 text (byte {} is not); save it as UTF-8.", e.valid_up_to() + 1))?;
    let text = text.strip_prefix(BOM).unwrap_or(text);
    let rows = match format {
        Format::Csv => csv_rows(text, delimiter(text), mapping)?,
        Format::Tsv => csv_rows(text, b'\t', mapping)?,
        Format::Json => json_rows(text, mapping)?,
    };
    if rows.is_empty() {
        return Err("The feed has no products.".into());
    }
    Ok(rows)
}

fn too_many() -> String {
    format!("The feed has more than {MAX_ROWS} products, the most one sync takes; split it into smaller feeds.")
}

/// `;` when the header line has more of them than commas (spreadsheets in comma-decimal locales
/// write that), else a comma.
fn delimiter(text: &str) -> u8 {
    let header = text.lines().find(|line| !line.trim().is_empty()).unwrap_or_default();
    let count = |c: char| header.matches(c).count();
    if count(';') > count(',') { b';' } else { b',' }
}

fn csv_rows(text: &str, delimiter: u8, mapping: &Mapping) -> Result<Vec<Value>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(delimiter)
        // a short or long row is read as far as it goes; its cells still line up with the header
        .flexible(true)
        .from_reader(text.as_bytes());
    let unreadable = |e: csv::Error| match e.position() {
        Some(at) => format!("The feed's CSV cannot be read at line {}: {e}.", at.line()),
        None => format!("The feed's CSV cannot be read: {e}."),
    };
    let mut records = reader.records();
    let header = match records.next() {
        Some(header) => header.map_err(unreadable)?,
        None => return Err(no_header()),
    };
    if header.iter().all(|name| name.trim().is_empty()) {
        return Err(no_header());
    }
    // each field's column: the first header name that matches, in the order of `names`
    let columns: Vec<(&'static str, usize)> = FIELDS
        .iter()
        .filter_map(|&field| {
            let column = mapping
                .names(field)
                .iter()
                .find_map(|name| header.iter().position(|heading| heading.trim().eq_ignore_ascii_case(name.trim())))?;
            Some((field, column))
        })
        .collect();
    let mut rows = Vec::new();
    for record in records {
        let record = record.map_err(unreadable)?;
        if record.iter().all(|cell| cell.trim().is_empty()) {
            continue;
        }
        if rows.len() == MAX_ROWS {
            return Err(too_many());
        }
        let cells = columns.iter().filter_map(|&(field, column)| {
            let cell = record.get(column)?;
            Some((field, Value::String(cell.to_owned())))
        });
        rows.push(row(cells));
    }
    Ok(rows)
}

fn no_header() -> String {
    "The feed has no header row: its first line must name the columns.".into()
}

fn json_rows(text: &str, mapping: &Mapping) -> Result<Vec<Value>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("The feed is not valid JSON: {e}."))?;
    let products = match value {
        Value::Array(products) => products,
        Value::Object(mut object) => {
            match ["products", "items", "data"].iter().find_map(|key| object.remove(*key).filter(Value::is_array)) {
                Some(Value::Array(products)) => products,
                _ => return Err(no_array()),
            }
        }
        _ => return Err(no_array()),
    };
    if products.len() > MAX_ROWS {
        return Err(too_many());
    }
    Ok(products
        .into_iter()
        .map(|product| match product {
            Value::Object(object) => row(FIELDS.iter().filter_map(|&field| {
                let value = mapping.names(field).iter().find_map(|name| member(&object, name))?;
                Some((field, value.clone()))
            })),
            other => other,
        })
        .collect())
}

fn no_array() -> String {
    "The feed's JSON holds no list of products: send an array of products, or an object with one under \
     products, items or data."
        .into()
}

/// A member by its exact name, else by its name without case and surrounding spaces.
fn member<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    object.get(name).or_else(|| {
        let name = name.trim();
        object.iter().find(|(key, _)| key.trim().eq_ignore_ascii_case(name)).map(|(_, value)| value)
    })
}

/// A batch row from the values found for each field, read as the module comment says.
fn row(values: impl Iterator<Item = (&'static str, Value)>) -> Value {
    let mut row = Map::new();
    let mut code = None;
    for (field, value) in values {
        if value.as_str().is_some_and(|text| text.trim().is_empty()) {
            continue;
        }
        let value = match field {
            "price" | "sale_price" => match minor_units(&value) {
                Some((minor, found)) => {
                    code = code.or(found);
                    Value::from(minor)
                }
                None => value,
            },
            "inventory" => match &value {
                Value::String(text) => text.trim().parse::<i64>().map(Value::from).unwrap_or(value),
                _ => value,
            },
            "availability" => match &value {
                Value::String(text) => Value::String(text.to_lowercase().replace('_', " ")),
                _ => value,
            },
            _ => match &value {
                Value::Number(n) => Value::String(n.to_string()),
                _ => value,
            },
        };
        row.insert(field.to_owned(), value);
    }
    if let Some(code) = code
        && row.get("currency").is_none_or(Value::is_null)
    {
        row.insert("currency".to_owned(), Value::String(code));
    }
    Value::Object(row)
}

/// A price in minor units and the currency code it was written with, or `None` when it is not
/// readable (the value is then kept as written for the ingest to reject).
fn minor_units(value: &Value) -> Option<(i64, Option<String>)> {
    match value {
        Value::Number(n) if n.is_i64() || n.is_u64() => None, // already minor units, kept as sent
        Value::Number(n) => major(&n.to_string()).map(|minor| (minor, None)),
        Value::String(text) => {
            let text = text.trim();
            if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
                return text.parse().ok().map(|minor| (minor, None));
            }
            let (number, code) = split_code(text);
            major(number).map(|minor| (minor, code))
        }
        _ => None,
    }
}

/// The number and the three-letter code of `45000.00 TZS` or `TZS 45,000.00`.
fn split_code(text: &str) -> (&str, Option<String>) {
    let letters = |s: &[u8]| s.len() == 3 && s.iter().all(u8::is_ascii_alphabetic);
    let bytes = text.as_bytes();
    // the code stands apart from the number: `TZSX 5` or `5 XTZS` is no code
    let apart = |b: Option<&u8>| b.is_some_and(|b| !b.is_ascii_alphabetic());
    if bytes.len() > 3 && letters(&bytes[..3]) && apart(bytes.get(3)) {
        return (text[3..].trim(), Some(text[..3].to_ascii_uppercase()));
    }
    let end = bytes.len().saturating_sub(3);
    if end > 0 && letters(&bytes[end..]) && apart(bytes.get(end - 1)) {
        return (text[..end].trim(), Some(text[end..].to_ascii_uppercase()));
    }
    (text, None)
}

/// Major units (`45,000.50`) as minor units, exactly: at most two decimals, commas only between
/// groups of three digits.
fn major(number: &str) -> Option<i64> {
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (number, None),
    };
    let mut groups = whole.split(',');
    let first = groups.next()?;
    let grouped = whole.contains(',');
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(first) || (grouped && first.len() > 3) {
        return None;
    }
    let mut units: i64 = first.parse().ok()?;
    for group in groups {
        if !(digits(group) && group.len() == 3) {
            return None;
        }
        units = units.checked_mul(1_000)?.checked_add(group.parse().ok()?)?;
    }
    let cents: i64 = match fraction {
        None => 0,
        Some(f) if digits(f) && f.len() == 1 => f.parse::<i64>().ok()? * 10,
        Some(f) if digits(f) && f.len() == 2 => f.parse().ok()?,
        Some(_) => return None,
    };
    units.checked_mul(100)?.checked_add(cents)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::products::Input;

    fn csv(text: &str) -> Vec<Value> {
        rows(text.as_bytes(), Format::Csv, &Mapping::default()).expect("readable")
    }

    fn json_feed(feed: Value, mapping: &Mapping) -> Vec<Value> {
        rows(feed.to_string().as_bytes(), Format::Json, mapping).expect("readable")
    }

    fn mapping(value: Value) -> Mapping {
        Mapping::read(Some(&value)).expect("a mapping")
    }

    fn refused(body: &[u8], format: Format) -> String {
        rows(body, format, &Mapping::default()).expect_err("refused")
    }

    /// The price and currency a one-row CSV reads to.
    fn price(cell: &str) -> (Option<Value>, Option<Value>) {
        let row = &csv(&format!("sku;price\nA;{cell}\n"))[0];
        (row.get("price").cloned(), row.get("currency").cloned())
    }

    #[test]
    fn the_content_type_decides_first() {
        let json = b"[]";
        assert_eq!(format_of(Some("text/csv; charset=utf-8"), "https://x.test/f.json", json), Format::Csv);
        assert_eq!(format_of(Some("Application/CSV"), "https://x.test/f", json), Format::Csv);
        assert_eq!(format_of(Some("text/tab-separated-values"), "https://x.test/f.csv", b""), Format::Tsv);
        assert_eq!(format_of(Some("application/json"), "https://x.test/f.csv", b"a,b"), Format::Json);
        assert_eq!(format_of(Some("text/json;charset=UTF-8"), "https://x.test/f.csv", b"a,b"), Format::Json);
    }

    #[test]
    fn then_the_extension_of_the_url_path() {
        let csv = b"{";
        assert_eq!(format_of(Some("text/plain"), "https://x.test/feeds/f.CSV?v=1.json", csv), Format::Csv);
        assert_eq!(format_of(None, "https://x.test/f.tsv#top", csv), Format::Tsv);
        assert_eq!(format_of(Some("application/octet-stream"), "https://x.test/f.json", b"a,b"), Format::Json);
        // a host is no file name
        assert_eq!(format_of(None, "https://feed.csv", csv), Format::Json);
        assert_eq!(format_of(None, "https://x.test/f.xml", csv), Format::Json);
    }

    #[test]
    fn then_the_first_non_blank_byte_else_csv() {
        assert_eq!(format_of(None, "https://x.test/feed", b" \n\t[{}]"), Format::Json);
        assert_eq!(format_of(None, "https://x.test/feed", "\u{feff}{\"items\": []}".as_bytes()), Format::Json);
        assert_eq!(format_of(None, "https://x.test/feed", b"id,title"), Format::Csv);
        assert_eq!(format_of(None, "https://x.test/feed", b""), Format::Csv);
    }

    #[test]
    fn a_mapping_is_an_object_of_product_fields_to_column_names() {
        assert_eq!(Mapping::read(None), Ok(Mapping::default()));
        assert_eq!(Mapping::read(Some(&Value::Null)), Ok(Mapping::default()));
        assert!(Mapping::read(Some(&json!(["sku"]))).is_err());
        let unknown = Mapping::read(Some(&json!({"sku": "Code", "colour": "Farbe", "retailer_id": "x"})));
        let unknown = unknown.expect_err("unknown fields");
        assert!(unknown.contains("colour, retailer_id"), "{unknown}");
        let bad = Mapping::read(Some(&json!({"price": 3, "name": " ", "brand": "Marke"}))).expect_err("not names");
        assert!(bad.contains("name, price") && !bad.contains("brand"), "{bad}");
    }

    #[test]
    fn a_mapping_wins_over_same_name_columns_and_aliases() {
        let by = mapping(json!({"sku": "Code", "name": "Bezeichnung", "price": "Preis"}));
        let feed = "id,sku,Code,name,Bezeichnung,title,price,Preis\n1,S,C,N,B,T,100,200\n";
        let read = rows(feed.as_bytes(), Format::Csv, &by).expect("readable");
        assert_eq!(read, vec![json!({"sku": "C", "name": "B", "price": 200})]);
        // a mapped field is read from its column only
        let read = rows(b"sku,name\nS,N\n", Format::Csv, &mapping(json!({"name": "Bezeichnung"}))).expect("ok");
        assert_eq!(read, vec![json!({"sku": "S"})]);
        let member = json_feed(json!([{"name": "N", "Bezeichnung": "B"}]), &mapping(json!({"name": "bezeichnung"})));
        assert_eq!(member, vec![json!({"name": "B"})]);
    }

    #[test]
    fn unmapped_fields_read_their_own_name_then_the_feed_aliases() {
        let meta = "id,retailer_id,title,image_link,quantity_to_sell_on_facebook,quantity,product_type,\
                    google_product_category,link\nI,R,T,https://x.test/i.jpg,4,9,Shoes,187,https://x.test\n";
        assert_eq!(
            csv(meta),
            vec![json!({"sku": "I", "name": "T", "image_url": "https://x.test/i.jpg", "inventory": 4,
                "category": "Shoes"})]
        );
        let rest = "retailer_id,quantity,google_product_category\nR,9,187\n";
        assert_eq!(csv(rest), vec![json!({"sku": "R", "inventory": 9, "category": "187"})]);
        assert_eq!(csv("title,name,id,sku\nT,N,I,S\n"), vec![json!({"sku": "S", "name": "N"})]);
    }

    #[test]
    fn csv_reads_the_header_and_its_delimiter() {
        let expected = vec![json!({"sku": "A", "name": "Kahawa, 1kg", "price": 1800})];
        assert_eq!(csv("sku,name,price\nA,\"Kahawa, 1kg\",1800\n"), expected);
        assert_eq!(csv("sku;name;price\r\nA;Kahawa, 1kg;1800\r\n"), expected);
        let tsv = rows(b"sku\tname\tprice\nA\tKahawa, 1kg\t1800\n", Format::Tsv, &Mapping::default());
        assert_eq!(tsv, Ok(expected.clone()));
        // a header with as many `;` as `,` stays comma-separated
        assert_eq!(csv("sku,na;me\nA,B\n"), vec![json!({"sku": "A"})]);
        assert_eq!(csv("\u{feff} SKU ,Name,PRICE\nA,\"Kahawa, 1kg\",1800\n"), expected);
    }

    #[test]
    fn csv_leaves_out_blank_cells_and_skips_blank_rows() {
        let feed = "sku,name,brand,sale_price\nA,Kahawa,,\n,,,\n\n  ,\t\nB, ,Kili\nC\n";
        assert_eq!(
            csv(feed),
            vec![json!({"sku": "A", "name": "Kahawa"}), json!({"sku": "B", "brand": "Kili"}), json!({"sku": "C"})]
        );
        // a row with only unread columns is still a row, and the ingest refuses it
        assert_eq!(csv("sku,link\n,https://x.test\n"), vec![json!({})]);
    }

    #[test]
    fn json_reads_an_array_or_one_under_products_items_or_data() {
        let product = json!({"sku": "A", "name": "Kahawa"});
        for feed in [
            json!([product]),
            json!({"products": [product]}),
            json!({"items": [product], "count": 1}),
            json!({"data": [product]}),
            json!({"products": {"x": 1}, "items": [product]}),
        ] {
            assert_eq!(json_feed(feed.clone(), &Mapping::default()), vec![product.clone()], "{feed}");
        }
    }

    #[test]
    fn json_members_are_read_like_columns_and_non_objects_pass_through() {
        let feed = json!([
            {"ID": 1042, "Title": "Kahawa", "price": "1,800.00 TZS", "sale_price": null, "brand": "",
             "inventory": "7", "availability": "IN_STOCK", "link": "https://x.test"},
            "not a product",
            7,
        ]);
        let read = json_feed(feed, &Mapping::default());
        assert_eq!(
            read,
            vec![
                json!({"sku": "1042", "name": "Kahawa", "price": 180_000, "sale_price": null,
                    "currency": "TZS", "inventory": 7, "availability": "in stock"}),
                json!("not a product"),
                json!(7),
            ]
        );
        // an exact name wins over one that differs in case
        assert_eq!(json_feed(json!([{"Sku": "a", "sku": "b"}]), &Mapping::default()), vec![json!({"sku": "b"})]);
        // a value of the wrong type is kept for the ingest to refuse
        let odd = json_feed(json!([{"name": true, "inventory": [1]}]), &Mapping::default());
        assert_eq!(odd, vec![json!({"name": true, "inventory": [1]})]);
    }

    #[test]
    fn an_integer_price_is_minor_units() {
        assert_eq!(price("1800"), (Some(json!(1800)), None));
        assert_eq!(price(" 0 "), (Some(json!(0)), None));
        let read = json_feed(json!([{"price": 1800, "sale_price": "1500"}]), &Mapping::default());
        assert_eq!(read, vec![json!({"price": 1800, "sale_price": 1500})]);
    }

    #[test]
    fn a_decimal_or_a_price_with_a_currency_code_is_major_units() {
        assert_eq!(price("450.00"), (Some(json!(45_000)), None));
        assert_eq!(price("450.5"), (Some(json!(45_050)), None));
        assert_eq!(price("45000.00 TZS"), (Some(json!(4_500_000)), Some(json!("TZS"))));
        assert_eq!(price("TZS 45,000.00"), (Some(json!(4_500_000)), Some(json!("TZS"))));
        assert_eq!(price("usd9.99"), (Some(json!(999)), Some(json!("USD"))));
        assert_eq!(price("45000 TZS"), (Some(json!(4_500_000)), Some(json!("TZS"))));
        assert_eq!(price("1,234,567"), (Some(json!(123_456_700)), None));
        let read = json_feed(json!([{"price": 19.99, "sale_price": 450.0}]), &Mapping::default());
        assert_eq!(read, vec![json!({"price": 1999, "sale_price": 45_000})]);
    }

    #[test]
    fn an_unreadable_price_stays_as_written_for_the_ingest_to_refuse() {
        for cell in ["450.123", "45,00", "1,2345.00", "12,345,67", "450.", ".50", "-4.50", "$9.99", "9.99 TZSX", "TZS"]
        {
            assert_eq!(price(cell), (Some(json!(cell)), None), "{cell}");
            let row = json!({"name": "A", "price": cell});
            assert!(Input::read_row(&row).is_err(), "{cell}");
        }
        assert_eq!(price("92233720368547758.08"), (Some(json!("92233720368547758.08")), None));
    }

    #[test]
    fn a_currency_in_the_price_fills_only_a_missing_currency() {
        let feed =
            "sku,price,sale_price,currency\nA,10.00 KES,9.00 TZS,USD\nB,10.00 KES,9.00 TZS,\nC,10.00,9.00 tzs,\n";
        let read = csv(feed);
        let currencies: Vec<_> = read.iter().map(|row| row["currency"].clone()).collect();
        assert_eq!(currencies, vec![json!("USD"), json!("KES"), json!("TZS")]);
        assert_eq!(json_feed(json!([{"price": "5 TZS", "currency": null}]), &Mapping::default())[0]["currency"], "TZS");
    }

    #[test]
    fn inventory_text_becomes_a_number_else_stays_as_written() {
        let read = csv("sku,inventory\nA,12\nB, 3 \nC,lots\nD,1.5\n");
        let stock: Vec<_> = read.iter().map(|row| row["inventory"].clone()).collect();
        assert_eq!(stock, vec![json!(12), json!(3), json!("lots"), json!("1.5")]);
        assert!(Input::read_row(&json!({"inventory": "lots"})).is_err());
    }

    #[test]
    fn availability_is_lower_cased_with_underscores_as_spaces() {
        let read = csv("sku,availability\nA,in_stock\nB,Out Of Stock\nC,AVAILABLE_FOR_ORDER\n");
        let said: Vec<_> = read.iter().map(|row| row["availability"].clone()).collect();
        assert_eq!(said, vec![json!("in stock"), json!("out of stock"), json!("available for order")]);
    }

    #[test]
    fn everything_else_stays_a_string() {
        let read = csv("sku,name,description,brand,category,currency,image_url\n007,12,3.50,0,1,tzs,x\n");
        assert_eq!(
            read,
            vec![json!({"sku": "007", "name": "12", "description": "3.50", "currency": "tzs", "image_url": "x",
                "brand": "0", "category": "1"})]
        );
    }

    #[test]
    fn a_meta_feed_row_is_one_the_ingest_accepts() {
        let feed = "id,title,description,availability,condition,price,sale_price,link,image_link,brand\n\
                    K-1,Kahawa 1kg,Arabica,in stock,new,\"45,000.00 TZS\",40000.00 TZS,https://x.test/k,\
                    https://x.test/k.jpg,Kili\n";
        let read = csv(feed);
        let input = Input::read_row(&read[0]).expect("accepted");
        let draft = input.create("K-1".into(), "USD").expect("a new product");
        assert_eq!((draft.price, draft.sale_price, draft.currency.as_str()), (4_500_000, Some(4_000_000), "TZS"));
    }

    #[test]
    fn a_feed_that_is_not_utf8_or_not_json_is_refused() {
        assert!(refused(b"sku,name\nA,Caf\xe9\n", Format::Csv).contains("UTF-8"));
        assert!(refused(b"[{\"sku\": }]", Format::Json).contains("not valid JSON"));
    }

    #[test]
    fn json_with_no_product_array_is_refused() {
        for feed in [json!({"product": []}), json!({"items": {"sku": "A"}}), json!("A"), json!(null)] {
            assert!(refused(feed.to_string().as_bytes(), Format::Json).contains("no list of products"), "{feed}");
        }
    }

    #[test]
    fn a_csv_without_a_header_or_a_feed_without_rows_is_refused() {
        assert!(refused(b"", Format::Csv).contains("no header"));
        assert!(refused(b"\n\n", Format::Csv).contains("no header"));
        assert!(refused("\u{feff},,\nA,B\n".as_bytes(), Format::Csv).contains("no header"));
        assert_eq!(refused(b"sku,name\n", Format::Csv), "The feed has no products.");
        assert_eq!(refused(b"sku\tname\n\t\n\n", Format::Tsv), "The feed has no products.");
        assert_eq!(refused(b"[]", Format::Json), "The feed has no products.");
        assert_eq!(refused(b"{\"data\": []}", Format::Json), "The feed has no products.");
    }

    #[test]
    fn a_feed_is_at_most_one_batch() {
        let feed = |n: usize| format!("sku\n{}", (0..n).map(|i| format!("S{i}\n")).collect::<String>());
        assert_eq!(csv(&(feed(MAX_ROWS) + ",\n")).len(), MAX_ROWS);
        assert!(refused(feed(MAX_ROWS + 1).as_bytes(), Format::Csv).contains("more than 5000"));
        let products = |n: usize| Value::Array(vec![json!({"sku": "A"}); n]).to_string();
        assert_eq!(rows(products(MAX_ROWS).as_bytes(), Format::Json, &Mapping::default()).map(|r| r.len()), Ok(5_000));
        assert!(refused(products(MAX_ROWS + 1).as_bytes(), Format::Json).contains("more than 5000"));
    }
}
