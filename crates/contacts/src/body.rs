//! The contact body (contract: Contact groups and contacts): `PHONE` wins over
//! `phone_number`; `country_code` is explicit; the name comes from `name`, `NAME` or
//! `FIRST_NAME` + `LAST_NAME`; every other top-level member except `_token` is a custom field.
//!
//! [`ContactInput`] is what the gateway's reader parses (a wrong JSON type is refused there, with
//! its path); [`ContactInput::read`] applies the rules, reporting every field error at once.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::Value;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::{PartialSchema, ToSchema};

use kernel::error::FieldErrors;
use kernel::{Error, Patch};

/// Members that are never custom fields, besides the named members of [`ContactInput`]: a
/// form's CSRF token that clients of the original API send along.
pub const IGNORED: &[&str] = &["_token"];

/// The longest name kept.
pub const MAX_NAME_CHARS: usize = 191;
/// The longest custom field key.
pub const MAX_FIELD_KEY_CHARS: usize = 64;

/// A phone-like member: a string, or a number (clients send numbers so). Strings are trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhoneValue(pub String);

impl<'de> Deserialize<'de> for PhoneValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl Visitor<'_> for Text {
            type Value = PhoneValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PhoneValue, E> {
                Ok(PhoneValue(v.trim().to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PhoneValue, E> {
                Ok(PhoneValue(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<PhoneValue, E> {
                Ok(PhoneValue(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<PhoneValue, E> {
                Ok(PhoneValue(serde_json::Number::from_f64(v).map_or_else(|| v.to_string(), |n| n.to_string())))
            }
        }
        deserializer.deserialize_any(Text)
    }
}

impl PartialSchema for PhoneValue {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::String))
            .item(ObjectBuilder::new().schema_type(Type::Number))
            .into()
    }
}

impl ToSchema for PhoneValue {}

/// A query-like member sent in a body: a string, a number or a boolean, read as its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryValue(pub String);

impl<'de> Deserialize<'de> for QueryValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl Visitor<'_> for Text {
            type Value = QueryValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, a number or a boolean")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<QueryValue, E> {
                Ok(QueryValue(v.to_owned()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<QueryValue, E> {
                Ok(QueryValue(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<QueryValue, E> {
                Ok(QueryValue(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<QueryValue, E> {
                Ok(QueryValue(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<QueryValue, E> {
                Ok(QueryValue(serde_json::Number::from_f64(v).map_or_else(|| v.to_string(), |n| n.to_string())))
            }
        }
        deserializer.deserialize_any(Text)
    }
}

impl PartialSchema for QueryValue {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::String))
            .item(ObjectBuilder::new().schema_type(Type::Number))
            .item(ObjectBuilder::new().schema_type(Type::Boolean))
            .into()
    }
}

impl ToSchema for QueryValue {}

/// A yes/no member: `true`/`false`, `1`/`0`, or the strings `"true"`, `"1"`, `"yes"`,
/// `"false"`, `"0"`, `"no"` (any case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YesNo(pub bool);

impl<'de> Deserialize<'de> for YesNo {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Yes;
        const REFUSED: &str = "must be true or false";
        impl Visitor<'_> for Yes {
            type Value = YesNo;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("true or false")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<YesNo, E> {
                Ok(YesNo(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<YesNo, E> {
                match v {
                    1 => Ok(YesNo(true)),
                    0 => Ok(YesNo(false)),
                    _ => Err(E::custom(REFUSED)),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<YesNo, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(-1))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<YesNo, E> {
                match v.trim().to_ascii_lowercase().as_str() {
                    "true" | "1" | "yes" => Ok(YesNo(true)),
                    "false" | "0" | "no" => Ok(YesNo(false)),
                    _ => Err(E::custom(REFUSED)),
                }
            }
        }
        deserializer.deserialize_any(Yes)
    }
}

impl PartialSchema for YesNo {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::Boolean))
            .item(ObjectBuilder::new().schema_type(Type::Integer).enum_values(Some([0, 1])))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(["true", "false", "1", "0", "yes", "no"])),
            )
            .into()
    }
}

impl ToSchema for YesNo {}

/// A contact as sent, to create one or change one (`POST` and `PATCH` on a group's contacts,
/// and each row of a batch). On a change only the members sent count; `null` on a named
/// member is the same as leaving it out, and `null` on a custom field removes it.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(expecting = "a contact object")]
pub struct ContactInput {
    /// The number: national (the trunk `0` is dropped) and read in `country_code`, else in the
    /// account's default calling code. Wins over `phone_number` unless empty.
    #[serde(rename = "PHONE", default)]
    pub phone: Option<PhoneValue>,
    /// The number, when `PHONE` is not sent.
    #[serde(default)]
    pub phone_number: Option<PhoneValue>,
    /// The calling code, digits (`254`); the account's default when left out.
    #[serde(default)]
    pub country_code: Option<PhoneValue>,
    /// Wins over `NAME` and `FIRST_NAME`/`LAST_NAME`; a new contact without a name is named
    /// after its full number.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(rename = "NAME", default)]
    pub upper_name: Option<String>,
    #[serde(rename = "FIRST_NAME", default)]
    pub first_name: Option<String>,
    #[serde(rename = "LAST_NAME", default)]
    pub last_name: Option<String>,
    /// `true` when a new contact leaves it out.
    #[serde(default)]
    pub is_subscribed: Option<YesNo>,
    /// Every other member is a custom field value (keys of letters, digits, `_`, `.`, `-`);
    /// `null` removes one.
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, serde_json::Value>)]
    pub custom_fields: BTreeMap<String, Patch<Value>>,
}

/// A contact body after its rules: each member `None` when absent, null or empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContactBody {
    /// The phone as sent, and the key it came from (`PHONE` or `phone_number`).
    pub phone: Option<(String, &'static str)>,
    pub country_code: Option<String>,
    pub name: Option<String>,
    pub is_subscribed: Option<bool>,
    /// Custom fields to set or remove.
    pub custom_fields: BTreeMap<String, Patch<Value>>,
}

/// Whether a custom field key is one the contract allows (letters, digits, `_`, `.`, `-`).
pub fn is_field_key(key: &str) -> bool {
    !key.is_empty()
        && key.chars().count() <= MAX_FIELD_KEY_CHARS
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

fn nonempty(text: Option<String>) -> Option<String> {
    text.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

impl ContactInput {
    /// Applies the body rules, collecting every field error at once.
    pub fn read(self) -> Result<ContactBody, Error> {
        let mut errors = FieldErrors::new();
        let phone = match nonempty(self.phone.map(|d| d.0)) {
            Some(phone) => Some((phone, "PHONE")),
            None => nonempty(self.phone_number.map(|d| d.0)).map(|p| (p, "phone_number")),
        };
        let name = nonempty(self.name).or_else(|| nonempty(self.upper_name)).or_else(|| {
            match (nonempty(self.first_name), nonempty(self.last_name)) {
                (None, None) => None,
                (first, last) => Some([first, last].into_iter().flatten().collect::<Vec<_>>().join(" ")),
            }
        });
        if let Some(name) = &name
            && name.chars().count() > MAX_NAME_CHARS
        {
            errors.add("name", format!("The name may not be longer than {MAX_NAME_CHARS} characters."));
        }
        let mut custom_fields = BTreeMap::new();
        for (key, value) in self.custom_fields.into_iter().filter(|(k, _)| !IGNORED.contains(&k.as_str())) {
            if !is_field_key(&key) {
                errors.add(
                    key,
                    format!("Custom field keys use letters, digits, '_', '.' and '-' (at most {MAX_FIELD_KEY_CHARS})."),
                );
                continue;
            }
            custom_fields.insert(key, value);
        }
        errors.finish()?;
        Ok(ContactBody {
            phone,
            country_code: nonempty(self.country_code.map(|d| d.0)),
            name,
            is_subscribed: self.is_subscribed.map(|f| f.0),
            custom_fields,
        })
    }
}

/// Reads a JSON value as `T` the way the gateway's body reader does: the first wrong member is
/// the error, named by its path (`PHONE`, `custom_fields[0]`), or `contact` for the whole value.
pub(crate) fn from_value<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, Error> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        let field = if path == "." { "contact".to_owned() } else { path };
        Error::field(field, message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: Value) -> Result<ContactBody, Error> {
        from_value::<ContactInput>(value)?.read()
    }

    #[test]
    fn phone_wins_over_phone_number_and_names_combine() {
        let body = read(json!({
            "PHONE": "0712345678", "phone_number": "0799999999",
            "FIRST_NAME": "Asha", "LAST_NAME": "Juma", "city": "Arusha", "_token": "x"
        }))
        .expect("valid");
        assert_eq!(body.phone, Some(("0712345678".into(), "PHONE")));
        assert_eq!(body.name.as_deref(), Some("Asha Juma"));
        assert_eq!(body.custom_fields, BTreeMap::from([("city".to_owned(), Patch::Set(json!("Arusha")))]));
    }

    #[test]
    fn name_precedence_and_numbers() {
        let body = read(json!({"phone_number": 712345678, "NAME": "B", "name": "A"})).expect("valid");
        assert_eq!(body.name.as_deref(), Some("A"));
        assert_eq!(body.phone, Some(("712345678".into(), "phone_number")));
        let body = read(json!({"PHONE": "", "phone_number": "1", "NAME": "B", "is_subscribed": "No"})).expect("valid");
        assert_eq!(body.phone, Some(("1".into(), "phone_number")));
        assert_eq!(body.name.as_deref(), Some("B"));
        assert_eq!(body.is_subscribed, Some(false));
    }

    #[test]
    fn a_null_custom_field_is_a_removal() {
        let body = read(json!({"PHONE": null, "city": null, "tier": 2})).expect("valid");
        assert_eq!(body.phone, None);
        assert_eq!(body.custom_fields["city"], Patch::Null);
        assert_eq!(body.custom_fields["tier"], Patch::Set(json!(2)));
    }

    #[test]
    fn a_wrong_type_names_its_member() {
        let field = |value: Value| read(value).expect_err("invalid").errors.keys().next().cloned();
        assert_eq!(field(json!({"name": 5})).as_deref(), Some("name"));
        assert_eq!(field(json!({"is_subscribed": "maybe"})).as_deref(), Some("is_subscribed"));
        assert_eq!(field(json!({"PHONE": true})).as_deref(), Some("PHONE"));
        assert_eq!(field(json!("not an object")).as_deref(), Some("contact"));
    }

    #[test]
    fn rule_breaks_are_all_reported() {
        let error = read(json!({"name": "x".repeat(192), "bad key": 1, "bad/key": 2})).expect_err("invalid");
        assert_eq!(error.errors.keys().collect::<Vec<_>>(), ["bad key", "bad/key", "name"]);
    }
}
