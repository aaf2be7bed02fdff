//! The contact body (contract: Contact groups and contacts): `PHONE` wins over
//! `phone_number`; `country_code` is explicit; the name comes from `name`, `NAME` or
//! `FIRST_NAME` + `LAST_NAME`; every other top-level key except the reserved ones is a custom
//! field.

use kernel::error::FieldErrors;
use serde_json::{Map, Value};

/// Keys that are never custom fields.
pub const RESERVED: &[&str] =
    &["PHONE", "phone_number", "country_code", "name", "NAME", "FIRST_NAME", "LAST_NAME", "is_subscribed", "_token"];

/// The longest name kept.
pub const MAX_NAME_CHARS: usize = 191;
/// The longest custom field key.
pub const MAX_FIELD_KEY_CHARS: usize = 64;

/// A contact body as sent: each member `None` when absent (or null, for the reserved keys).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContactBody {
    /// The phone as sent, and the key it came from (`PHONE` or `phone_number`).
    pub phone: Option<(String, &'static str)>,
    pub country_code: Option<String>,
    pub name: Option<String>,
    pub is_subscribed: Option<bool>,
    /// Custom fields to set (a value) or remove (`Value::Null`).
    pub custom_fields: Map<String, Value>,
}

/// A string member; numbers are accepted for phone-like fields since clients send them so.
fn text(object: &Map<String, Value>, key: &str, numbers: bool, errors: &mut FieldErrors) -> Option<String> {
    match object.get(key)? {
        Value::Null => None,
        Value::String(s) => Some(s.trim().to_owned()),
        Value::Number(n) if numbers => Some(n.to_string()),
        _ => {
            errors.add(key, format!("The {key} must be a string."));
            None
        }
    }
}

fn boolean(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) if n.as_i64() == Some(1) => Some(true),
        Value::Number(n) if n.as_i64() == Some(0) => Some(false),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Some(true),
            "false" | "0" | "no" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a custom field key is one the contract allows (letters, digits, `_`, `.`, `-`).
pub fn is_field_key(key: &str) -> bool {
    !key.is_empty()
        && key.chars().count() <= MAX_FIELD_KEY_CHARS
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

impl ContactBody {
    /// Reads a body, collecting every field error at once. Empty strings count as absent.
    pub fn parse(value: &Value) -> Result<Self, kernel::Error> {
        let Value::Object(object) = value else {
            return Err(kernel::Error::validation("The contact must be a JSON object."));
        };
        let mut errors = FieldErrors::new();
        let nonempty = |s: Option<String>| s.filter(|s| !s.is_empty());

        let phone = match nonempty(text(object, "PHONE", true, &mut errors)) {
            Some(phone) => Some((phone, "PHONE")),
            None => nonempty(text(object, "phone_number", true, &mut errors)).map(|p| (p, "phone_number")),
        };
        let country_code = nonempty(text(object, "country_code", true, &mut errors));
        let first = nonempty(text(object, "FIRST_NAME", false, &mut errors));
        let last = nonempty(text(object, "LAST_NAME", false, &mut errors));
        let name = nonempty(text(object, "name", false, &mut errors))
            .or_else(|| nonempty(text(object, "NAME", false, &mut errors)))
            .or_else(|| match (first, last) {
                (None, None) => None,
                (first, last) => Some([first, last].into_iter().flatten().collect::<Vec<_>>().join(" ")),
            });
        if let Some(name) = &name
            && name.chars().count() > MAX_NAME_CHARS
        {
            errors.add("name", format!("The name may not be longer than {MAX_NAME_CHARS} characters."));
        }
        let is_subscribed = match object.get("is_subscribed") {
            None | Some(Value::Null) => None,
            Some(value) => {
                let parsed = boolean(value);
                if parsed.is_none() {
                    errors.add("is_subscribed", "The is_subscribed field must be true or false.");
                }
                parsed
            }
        };
        let mut custom_fields = Map::new();
        for (key, value) in object.iter().filter(|(k, _)| !RESERVED.contains(&k.as_str())) {
            if !is_field_key(key) {
                errors.add(
                    key.clone(),
                    format!("Custom field keys use letters, digits, '_', '.' and '-' (at most {MAX_FIELD_KEY_CHARS})."),
                );
                continue;
            }
            custom_fields.insert(key.clone(), value.clone());
        }
        errors.finish()?;
        Ok(Self { phone, country_code, name, is_subscribed, custom_fields })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn phone_wins_over_phone_number_and_names_combine() {
        let body = ContactBody::parse(&json!({
            "PHONE": "0712345678", "phone_number": "0799999999",
            "FIRST_NAME": "Asha", "LAST_NAME": "Juma", "city": "Arusha", "_token": "x"
        }))
        .expect("valid");
        assert_eq!(body.phone, Some(("0712345678".into(), "PHONE")));
        assert_eq!(body.name.as_deref(), Some("Asha Juma"));
        assert_eq!(body.custom_fields, json!({"city": "Arusha"}).as_object().cloned().expect("object"));
    }

    #[test]
    fn name_precedence_and_numbers() {
        let body = ContactBody::parse(&json!({"phone_number": 712345678, "NAME": "B", "name": "A"})).expect("valid");
        assert_eq!(body.name.as_deref(), Some("A"));
        assert_eq!(body.phone, Some(("712345678".into(), "phone_number")));
        let body = ContactBody::parse(&json!({"PHONE": "", "phone_number": "1", "NAME": "B"})).expect("valid");
        assert_eq!(body.phone, Some(("1".into(), "phone_number")));
        assert_eq!(body.name.as_deref(), Some("B"));
    }

    #[test]
    fn bad_members_are_all_reported() {
        let error =
            ContactBody::parse(&json!({"name": 5, "is_subscribed": "maybe", "bad key": 1})).expect_err("invalid");
        assert!(error.errors.contains_key("name"));
        assert!(error.errors.contains_key("is_subscribed"));
        assert!(error.errors.contains_key("bad key"));
    }
}
