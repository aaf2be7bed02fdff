//! The rules of commerce's typed bodies: limits, formats and choices checked in the service
//! after serde has read the body, every problem of a body collected at once (`levels.3.inventory`).
//! A wrong JSON type never reaches here: the gateway's reader refuses it, naming its path.

use std::fmt;

use kernel::Patch;
use kernel::error::FieldErrors;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use utoipa::__dev::ComposeSchema;
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, Type};

/// A whole number as commerce has always read it: a JSON integer, or an integer in a string
/// (`"12"`). A fraction or other text reads, and the rule that needs the number refuses it with
/// "must be a whole number" under the member's name. Declare a field of this type
/// `#[schema(inline)]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Whole(pub Option<i64>);

impl From<i64> for Whole {
    fn from(n: i64) -> Self {
        Self(Some(n))
    }
}

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Read;
        impl Visitor<'_> for Read {
            type Value = Whole;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a whole number, or a whole number in a string")
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Whole, E> {
                Ok(Whole(Some(n)))
            }

            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Whole, E> {
                Ok(Whole(i64::try_from(n).ok()))
            }

            // JSON does not tell `2` from `2.0`: a number without a fraction is whole
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Whole, E> {
                let whole = n.fract() == 0.0 && n.abs() < 9.0e18;
                Ok(Whole(whole.then_some(n as i64)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Whole, E> {
                Ok(Whole(text.trim().parse::<i64>().ok()))
            }
        }
        deserializer.deserialize_any(Read)
    }
}

/// An integer, or an integer in a string.
impl ComposeSchema for Whole {
    fn compose(_: Vec<RefOr<Schema>>) -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64))),
            )
            .item(ObjectBuilder::new().schema_type(Type::String).pattern(Some(r"^\s*[-+]?[0-9]+\s*$")))
            .into()
    }
}

impl ToSchema for Whole {}

/// The schema of a whole number in `min..=max` (`min` at least 0) as [`Whole`] reads it: an
/// integer in the range, or a string of one (spaces around it, a `+`, leading zeros; `-0` is 0).
pub fn whole_in(min: i64, max: i64) -> RefOr<Schema> {
    let digits = digit_ranges(min, max);
    let zero = if min == 0 { "|-0+" } else { "" };
    OneOfBuilder::new()
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                .minimum(Some(min))
                .maximum(Some(max)),
        )
        .item(
            ObjectBuilder::new().schema_type(Type::String).pattern(Some(format!(
                r"^{SPACE}*(?:\+?0*(?:{digits}){zero}){SPACE}*$",
                SPACE = kernel::schema::SPACE
            ))),
        )
        .into()
}

/// A regular expression alternation of the decimal numbers in `min..=max` (no leading zeros).
fn digit_ranges(min: i64, max: i64) -> String {
    let mut parts = Vec::new();
    let (min, max) = (min.max(0) as u64, max.max(0) as u64);
    let width = |n: u64| n.to_string().len();
    for len in width(min)..=width(max) {
        let low = if len == width(min) { min } else { 10u64.pow(len as u32 - 1) };
        let high = if len == width(max) { max } else { 10u64.pow(len as u32) - 1 };
        if low <= high {
            same_width(&low.to_string(), &high.to_string(), "", &mut parts);
        }
    }
    parts.join("|")
}

/// The numbers from `low` to `high`, both of the same width, each part prefixed by `prefix`.
fn same_width(low: &str, high: &str, prefix: &str, parts: &mut Vec<String>) {
    let (l, h) = (low.as_bytes(), high.as_bytes());
    if l.is_empty() {
        parts.push(prefix.to_owned());
        return;
    }
    let rest = l.len() - 1;
    let any = |n: usize| if n == 0 { String::new() } else { format!("[0-9]{{{n}}}") };
    let digits = |a: u8, b: u8| if a == b { (a as char).to_string() } else { format!("[{}-{}]", a as char, b as char) };
    if l[0] == h[0] {
        return same_width(&low[1..], &high[1..], &format!("{prefix}{}", l[0] as char), parts);
    }
    let (low_full, high_full) = (low[1..].bytes().all(|c| c == b'0'), high[1..].bytes().all(|c| c == b'9'));
    let first = if low_full { l[0] } else { l[0] + 1 };
    let last = if high_full { h[0] } else { h[0] - 1 };
    if !low_full {
        same_width(&low[1..], &"9".repeat(rest), &format!("{prefix}{}", l[0] as char), parts);
    }
    if first <= last {
        parts.push(format!("{prefix}{}{}", digits(first, last), any(rest)));
    }
    if !high_full {
        same_width(&"0".repeat(rest), &high[1..], &format!("{prefix}{}", h[0] as char), parts);
    }
}

/// Declares schema-only types for whole numbers with a range, for `#[schema(value_type = ..)]`.
macro_rules! whole_range {
    ($($(#[$doc:meta])* $name:ident = $min:expr, $max:expr;)*) => {$(
        $(#[$doc])*
        pub struct $name;

        impl ComposeSchema for $name {
            fn compose(_: Vec<RefOr<Schema>>) -> RefOr<Schema> {
                whole_in($min, $max)
            }
        }

        impl ToSchema for $name {}
    )*};
}

/// A month: a hold longer than that is a stock leak, not a reservation.
pub const MAX_TTL_HOURS: i64 = 720;
/// Prices in minor units.
pub const MAX_PRICE: i64 = 1_000_000_000_000_000;
/// Units of one order line.
pub const MAX_QUANTITY: i64 = 100_000;

whole_range! {
    /// `reservation_ttl_hours`: 1 to 720.
    Hours = 1, MAX_TTL_HOURS;
    /// A count of units: 0 to 2,147,483,647.
    Units = 0, i32::MAX as i64;
    /// Minor units of a price: 0 to 10^18.
    Money = 0, MAX_PRICE;
    /// An order line's quantity: 1 to 100,000.
    Quantity = 1, MAX_QUANTITY;
}

/// The rule across a stock level's and an order line's members, on their own components: the
/// product is named by `sku`, or by a non-blank `retailer_id` when `sku` is null or left out.
pub fn add_rules(components: &mut utoipa::openapi::Components) {
    let coded = serde_json::json!([
        {"required": ["sku"], "properties": {"sku": {"type": "string"}}},
        {"required": ["retailer_id"], "properties": {"retailer_id": {
            "type": "string", "maxLength": 100, "pattern": kernel::schema::NOT_BLANK
        }}}
    ]);
    for row in ["NewLine", "LevelPush"] {
        kernel::schema::add_rules(components, row, [("anyOf", coded.clone())]);
    }
}

/// Declares schema-only string enums of `&[&str]` choices, for `#[schema(value_type = ..)]`.
macro_rules! choice {
    ($($(#[$doc:meta])* $name:ident = $options:expr;)*) => {$(
        $(#[$doc])*
        pub struct $name;

        impl utoipa::__dev::ComposeSchema for $name {
            fn compose(
                _: Vec<utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>>,
            ) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                $crate::rules::choice_schema($options)
            }
        }

        impl utoipa::ToSchema for $name {}
    )*};
}
pub(crate) use choice;

/// A string that is one of `options`.
pub fn choice_schema(options: &[&str]) -> RefOr<Schema> {
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(options.iter().copied())).into()
}

/// An optional member of a body that has no null of its own: left out (or null) is absent.
pub(crate) fn sent<T>(value: Option<T>) -> Patch<T> {
    value.map_or(Patch::Absent, Patch::Set)
}

/// Checks the members of one body (or one row of it: `prefix` is `levels.3.`), collecting
/// every problem.
#[derive(Default)]
pub(crate) struct Rules {
    prefix: String,
    pub errors: FieldErrors,
}

impl Rules {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn has_error(&self, key: &str) -> bool {
        self.errors.contains(&format!("{}{key}", self.prefix))
    }

    pub fn error(&mut self, key: &str, message: impl Into<String>) {
        self.errors.add(format!("{}{key}", self.prefix), message);
    }

    /// Trimmed text of at most `max` characters; an empty string is null.
    pub fn text(&mut self, key: &str, value: Patch<String>, max: usize) -> Patch<String> {
        match value {
            Patch::Set(s) => {
                // the limit is on the text as sent, as the description's `maxLength` counts it
                let long = s.chars().count() > max;
                let s = s.trim();
                if s.is_empty() {
                    Patch::Null
                } else if long {
                    self.error(key, format!("The {key} may not be greater than {max} characters."));
                    Patch::Absent
                } else {
                    Patch::Set(s.to_owned())
                }
            }
            other => other,
        }
    }

    /// A whole number in `min..=max`.
    pub fn int(&mut self, key: &str, value: Patch<Whole>, min: i64, max: i64) -> Patch<i64> {
        match value {
            Patch::Set(Whole(Some(n))) if (min..=max).contains(&n) => Patch::Set(n),
            Patch::Set(Whole(Some(_))) => {
                self.error(key, format!("The {key} must be between {min} and {max}."));
                Patch::Absent
            }
            Patch::Set(Whole(None)) => {
                self.error(key, format!("The {key} must be a whole number."));
                Patch::Absent
            }
            Patch::Null => Patch::Null,
            Patch::Absent => Patch::Absent,
        }
    }

    /// One of `options` (as sent, without case); a blank string is none of them.
    pub fn one_of(&mut self, key: &str, value: Patch<String>, options: &[&'static str]) -> Patch<&'static str> {
        let value = match value {
            Patch::Set(blank) if blank.trim().is_empty() => Patch::Set(blank),
            other => self.text(key, trimmed(other), 64),
        };
        match value {
            Patch::Set(value) => match options.iter().find(|o| o.eq_ignore_ascii_case(&value)) {
                Some(option) => Patch::Set(option),
                None => {
                    self.error(key, format!("The {key} must be one of: {}.", options.join(", ")));
                    Patch::Absent
                }
            },
            Patch::Null => Patch::Null,
            Patch::Absent => Patch::Absent,
        }
    }

    /// An ISO 4217 code, upper-cased.
    pub fn currency(&mut self, key: &str, value: Patch<String>) -> Patch<String> {
        match self.text(key, trimmed(value), 3) {
            Patch::Set(code) if code.len() == 3 && code.chars().all(|c| c.is_ascii_alphabetic()) => {
                Patch::Set(code.to_ascii_uppercase())
            }
            Patch::Set(_) => {
                self.error(key, format!("The {key} must be a three-letter ISO 4217 code, like TZS."));
                Patch::Absent
            }
            other => other,
        }
    }

    /// `sku`, or its alias `retailer_id` when `sku` is not sent (contract: Product).
    pub fn sku(&mut self, sku: Patch<String>, retailer_id: Patch<String>) -> Patch<String> {
        if sku.is_absent() { self.text("retailer_id", retailer_id, 100) } else { self.text("sku", sku, 100) }
    }

    /// A product's own code, as [`sku`](Self::sku) reads it, both members checked: up to 100
    /// characters, no `/` (the code is a path segment) and no control character.
    pub fn product_sku(&mut self, sku: Patch<String>, retailer_id: Patch<String>) -> Patch<String> {
        let retailer_id = self.code("retailer_id", retailer_id);
        if sku.is_absent() { retailer_id } else { self.code("sku", sku) }
    }

    fn code(&mut self, key: &str, code: Patch<String>) -> Patch<String> {
        let code = self.text(key, code, 100);
        if let Patch::Set(text) = &code
            && (text.contains('/') || text.chars().any(char::is_control))
        {
            self.error(key, format!("The {key} may not contain '/' or control characters."));
        }
        code
    }

    /// The value of a required member, or an error naming it (unless it already has one).
    pub fn required<T>(&mut self, key: &str, member: Patch<T>) -> Option<T> {
        let value = member.set();
        if value.is_none() && !self.has_error(key) {
            self.error(key, format!("The {key} field is required."));
        }
        value
    }

    /// Checks each row of the list `key` with `check`, its errors named `<key>[n].<field>` as the
    /// body reader names them; a
    /// list of 1 to `max` rows is required.
    pub fn rows<R, T>(
        &mut self,
        key: &str,
        rows: &[R],
        max: usize,
        mut check: impl FnMut(&mut Rules, &R) -> Option<T>,
    ) -> Vec<T> {
        if rows.is_empty() || rows.len() > max {
            self.error(key, format!("Send between 1 and {max} {key}."));
            return Vec::new();
        }
        let mut checked = Vec::with_capacity(rows.len());
        for (n, row) in rows.iter().enumerate() {
            let mut rules = Rules { prefix: format!("{}{key}[{n}].", self.prefix), errors: FieldErrors::new() };
            let value = check(&mut rules, row);
            for (field, messages) in rules.errors.into_map() {
                for message in messages {
                    self.errors.add(field.clone(), message);
                }
            }
            checked.extend(value);
        }
        checked
    }

    /// The first problem, for a batch row's report.
    pub fn first_error(self) -> Option<String> {
        self.errors.into_map().into_values().flatten().next()
    }

    pub fn finish(self) -> Result<(), kernel::Error> {
        self.errors.finish()
    }
}

/// A code read by its pattern, spaces around allowed (a currency, a prefix, one of a list):
/// its length limit counts the code, not the spaces.
fn trimmed(value: Patch<String>) -> Patch<String> {
    value.map(|text| text.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_number_reads_from_an_integer_or_an_integer_string() {
        let read = |body: &str| serde_json::from_str::<Whole>(body);
        assert_eq!(read("12").ok(), Some(Whole(Some(12))));
        assert_eq!(read("\" 12 \"").ok(), Some(Whole(Some(12))));
        assert_eq!(read("2.5").ok(), Some(Whole(None)));
        assert_eq!(read("2.0").ok(), Some(Whole(Some(2))));
        assert_eq!(read("1e300").ok(), Some(Whole(None)));
        assert_eq!(read("\"lots\"").ok(), Some(Whole(None)));
        assert!(read("true").is_err());
        let mut rules = Rules::new();
        assert_eq!(rules.int("n", Patch::Set(Whole(None)), 0, 5), Patch::Absent);
        assert_eq!(rules.int("m", Patch::Set(Whole(Some(6))), 0, 5), Patch::Absent);
        let errors = rules.errors.into_map();
        assert_eq!(errors["n"], vec!["The n must be a whole number.".to_owned()]);
        assert_eq!(errors["m"], vec!["The m must be between 0 and 5.".to_owned()]);
    }

    #[test]
    fn a_range_pattern_matches_exactly_the_numbers_of_the_range() {
        for (min, max) in [(1, 720), (0, i32::MAX as i64), (0, MAX_PRICE), (1, MAX_QUANTITY), (0, 9), (7, 7), (3, 1234)]
        {
            let pattern = format!("^(?:{})$", digit_ranges(min, max));
            let re = regex_lite::Regex::new(&pattern).expect("pattern");
            let mut probes: Vec<i64> = vec![0, 1, 9, 10, 99, 100, 719, 720, 721, 1000, 1234, 1235, 100_000, 100_001];
            probes.extend([i32::MAX as i64, i32::MAX as i64 + 1, MAX_PRICE, MAX_PRICE + 1, min, max, max + 1]);
            probes.extend((0..2000).map(|n| n * 7919 % 100_000));
            for n in probes.into_iter().filter(|n| *n >= 0) {
                assert_eq!(re.is_match(&n.to_string()), (min..=max).contains(&n), "{n} in {min}..={max}: {pattern}");
            }
        }
    }
}
