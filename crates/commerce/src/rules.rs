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

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Whole, E> {
                Ok(Whole(None))
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
                let s = s.trim();
                if s.is_empty() {
                    Patch::Null
                } else if s.chars().count() > max {
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

    /// One of `options` (as sent, without case).
    pub fn one_of(&mut self, key: &str, value: Patch<String>, options: &[&'static str]) -> Patch<&'static str> {
        match self.text(key, value, 64) {
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
        match self.text(key, value, 3) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_number_reads_from_an_integer_or_an_integer_string() {
        let read = |body: &str| serde_json::from_str::<Whole>(body);
        assert_eq!(read("12").ok(), Some(Whole(Some(12))));
        assert_eq!(read("\" 12 \"").ok(), Some(Whole(Some(12))));
        assert_eq!(read("2.5").ok(), Some(Whole(None)));
        assert_eq!(read("\"lots\"").ok(), Some(Whole(None)));
        assert!(read("true").is_err());
        let mut rules = Rules::new();
        assert_eq!(rules.int("n", Patch::Set(Whole(None)), 0, 5), Patch::Absent);
        assert_eq!(rules.int("m", Patch::Set(Whole(Some(6))), 0, 5), Patch::Absent);
        let errors = rules.errors.into_map();
        assert_eq!(errors["n"], vec!["The n must be a whole number.".to_owned()]);
        assert_eq!(errors["m"], vec!["The m must be between 0 and 5.".to_owned()]);
    }
}
