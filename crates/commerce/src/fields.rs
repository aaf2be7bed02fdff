//! Reading JSON bodies member by member, so a `PATCH` or `PUT` can tell "absent" from "null"
//! and every problem of a body is reported at once.

use kernel::error::FieldErrors;
use serde_json::{Map, Value};

/// A member of a body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Member<T> {
    Absent,
    Null,
    Set(T),
}

impl<T> Member<T> {
    pub fn set(self) -> Option<T> {
        match self {
            Self::Set(value) => Some(value),
            _ => None,
        }
    }

    /// `None` when absent, `Some(None)` when null.
    pub fn change(self) -> Option<Option<T>> {
        match self {
            Self::Absent => None,
            Self::Null => Some(None),
            Self::Set(value) => Some(Some(value)),
        }
    }
}

pub(crate) struct Body<'a> {
    object: &'a Map<String, Value>,
    /// Prepended to field names (`levels.3.`).
    prefix: String,
    pub errors: FieldErrors,
}

impl<'a> Body<'a> {
    pub fn new(object: &'a Map<String, Value>) -> Self {
        Self { object, prefix: String::new(), errors: FieldErrors::new() }
    }

    pub fn has(&self, key: &str) -> bool {
        self.object.contains_key(key)
    }

    pub fn is_null(&self, key: &str) -> bool {
        matches!(self.object.get(key), Some(Value::Null))
    }

    /// Sent as a string of spaces or nothing.
    pub fn is_blank(&self, key: &str) -> bool {
        matches!(self.object.get(key), Some(Value::String(s)) if s.trim().is_empty())
    }

    pub fn has_error(&self, key: &str) -> bool {
        self.errors.contains(&format!("{}{key}", self.prefix))
    }

    pub fn error(&mut self, key: &str, message: impl Into<String>) {
        self.errors.add(format!("{}{key}", self.prefix), message);
    }

    fn raw(&self, key: &str) -> Member<&'a Value> {
        match self.object.get(key) {
            None => Member::Absent,
            Some(Value::Null) => Member::Null,
            Some(value) => Member::Set(value),
        }
    }

    /// Trimmed text of at most `max` characters; an empty string is null.
    pub fn text(&mut self, key: &str, max: usize) -> Member<String> {
        match self.raw(key) {
            Member::Absent => Member::Absent,
            Member::Null => Member::Null,
            Member::Set(Value::String(s)) => {
                let s = s.trim();
                if s.is_empty() {
                    Member::Null
                } else if s.chars().count() > max {
                    self.error(key, format!("The {key} may not be greater than {max} characters."));
                    Member::Absent
                } else {
                    Member::Set(s.to_owned())
                }
            }
            Member::Set(_) => {
                self.error(key, format!("The {key} must be a string."));
                Member::Absent
            }
        }
    }

    /// A whole number in `min..=max`; integer strings are accepted.
    pub fn int(&mut self, key: &str, min: i64, max: i64) -> Member<i64> {
        let value = match self.raw(key) {
            Member::Absent => return Member::Absent,
            Member::Null => return Member::Null,
            Member::Set(Value::Number(n)) => n.as_i64(),
            Member::Set(Value::String(s)) => s.trim().parse::<i64>().ok(),
            Member::Set(_) => None,
        };
        match value {
            Some(n) if (min..=max).contains(&n) => Member::Set(n),
            Some(_) => {
                self.error(key, format!("The {key} must be between {min} and {max}."));
                Member::Absent
            }
            None => {
                self.error(key, format!("The {key} must be a whole number."));
                Member::Absent
            }
        }
    }

    pub fn bool(&mut self, key: &str) -> Member<bool> {
        match self.raw(key) {
            Member::Absent => Member::Absent,
            Member::Null => Member::Null,
            Member::Set(Value::Bool(b)) => Member::Set(*b),
            Member::Set(_) => {
                self.error(key, format!("The {key} field must be true or false."));
                Member::Absent
            }
        }
    }

    /// One of `options` (as sent, without case).
    pub fn one_of(&mut self, key: &str, options: &[&'static str]) -> Member<&'static str> {
        match self.text(key, 64) {
            Member::Set(value) => match options.iter().find(|o| o.eq_ignore_ascii_case(&value)) {
                Some(option) => Member::Set(option),
                None => {
                    self.error(key, format!("The {key} must be one of: {}.", options.join(", ")));
                    Member::Absent
                }
            },
            Member::Null => Member::Null,
            Member::Absent => Member::Absent,
        }
    }

    /// An ISO 4217 code, upper-cased.
    pub fn currency(&mut self, key: &str) -> Member<String> {
        match self.text(key, 3) {
            Member::Set(code) if code.len() == 3 && code.chars().all(|c| c.is_ascii_alphabetic()) => {
                Member::Set(code.to_ascii_uppercase())
            }
            Member::Set(_) => {
                self.error(key, format!("The {key} must be a three-letter ISO 4217 code, like TZS."));
                Member::Absent
            }
            other => other,
        }
    }

    /// `sku`, or its alias `retailer_id` when `sku` is not sent (contract: Product).
    pub fn sku(&mut self) -> Member<String> {
        if self.has("sku") { self.text("sku", 100) } else { self.text("retailer_id", 100) }
    }

    /// The value of a required member, or an error naming it (unless it already has one).
    pub fn required<T>(&mut self, key: &str, member: Member<T>) -> Option<T> {
        let value = member.set();
        if value.is_none() && !self.has_error(key) {
            self.error(key, format!("The {key} field is required."));
        }
        value
    }

    /// Reads each object of the list `key` with `read`, its errors named `<key>.<n>.<field>`; a
    /// list of 1 to `max` entries is required.
    pub fn rows<T>(&mut self, key: &str, max: usize, mut read: impl FnMut(&mut Body<'_>) -> Option<T>) -> Vec<T> {
        let object = self.object;
        let Some(Value::Array(rows)) = object.get(key) else {
            self.error(key, format!("The {key} field is required and must be a list."));
            return Vec::new();
        };
        if rows.is_empty() || rows.len() > max {
            self.error(key, format!("Send between 1 and {max} {key}."));
            return Vec::new();
        }
        let mut read_rows = Vec::with_capacity(rows.len());
        for (n, row) in rows.iter().enumerate() {
            let Some(row) = row.as_object() else {
                self.error(&format!("{key}.{n}"), "Each entry must be an object.");
                continue;
            };
            let mut body =
                Body { object: row, prefix: format!("{}{key}.{n}.", self.prefix), errors: FieldErrors::new() };
            let value = read(&mut body);
            for (field, messages) in body.errors.into_map() {
                for message in messages {
                    self.errors.add(field.clone(), message);
                }
            }
            read_rows.extend(value);
        }
        read_rows
    }

    /// The first error message, for a batch row's problem.
    pub fn first_error(self) -> Option<String> {
        self.errors.into_map().into_values().flatten().next()
    }
}

/// The body as an object, or a 422.
pub(crate) fn object(body: &Value) -> Result<&Map<String, Value>, kernel::Error> {
    body.as_object().ok_or_else(|| kernel::Error::validation("The body must be a JSON object."))
}
