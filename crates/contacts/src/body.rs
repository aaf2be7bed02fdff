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
use utoipa::openapi::schema::{
    AllOfBuilder, AnyOfBuilder, ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};
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

/// A phone-like member: a string, or a whole number (clients send numbers so; a fraction is
/// refused, as the description's `integer` says). Strings are trimmed; the flag says it was sent
/// as a number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhoneValue(pub String, pub bool);

impl<'de> Deserialize<'de> for PhoneValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl Visitor<'_> for Text {
            type Value = PhoneValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a whole number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PhoneValue, E> {
                Ok(PhoneValue(v.trim().to_owned(), false))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PhoneValue, E> {
                Ok(PhoneValue(v.to_string(), true))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<PhoneValue, E> {
                Ok(PhoneValue(v.to_string(), true))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<PhoneValue, E> {
                // `712345678.0` is a whole number written so; 2^53 holds every 15-digit one
                if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
                    return Ok(PhoneValue(format!("{}", v as i64), true));
                }
                Err(E::invalid_value(de::Unexpected::Float(v), &self))
            }
        }
        deserializer.deserialize_any(Text)
    }
}

/// What the schema says of a phone member: 6 to 20 digits after an optional `+` (the reader
/// also drops punctuation, but only digits make a number), surrounding spaces trimmed; an
/// empty string counts as absent. As a JSON number: 6 to 15 digits (E.164 holds at most 15).
pub const PHONE_PATTERN: &str = r"^\s*(\+?[0-9]{6,20})?\s*$";
/// A phone member that is actually sent: not empty.
const PHONE_SENT_PATTERN: &str = r"^\s*\+?[0-9]{6,20}\s*$";
/// A calling code: 1 to 3 digits after an optional `+`; an empty string counts as absent.
pub const CALLING_CODE_PATTERN: &str = r"^\s*(\+?[0-9]{1,3})?\s*$";
/// Custom field keys (contract: letters, digits, `_`, `.`, `-`), at most 64 characters.
pub const FIELD_KEY_PATTERN: &str = r"^[A-Za-z0-9_.-]{1,64}$";

fn phone_schema(pattern: &str) -> Schema {
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::String).pattern(Some(pattern)))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(100_000))
                .maximum(Some(999_999_999_999_999_i64)),
        )
        .into()
}

fn nullable(schema: impl Into<RefOr<Schema>>, description: &str) -> Schema {
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .item(schema)
        .description(Some(description))
        .into()
}

fn text(max: usize, description: Option<&str>) -> Schema {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .max_length(Some(max))
        .description(description)
        .into()
}

impl PartialSchema for PhoneValue {
    fn schema() -> RefOr<Schema> {
        phone_schema(PHONE_PATTERN).into()
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
                // a whole number written `48.0` is the integer 48, as JSON Schema counts it
                if v.fract() == 0.0 && v.abs() < 1e18 {
                    #[allow(clippy::cast_possible_truncation)]
                    return Ok(QueryValue((v as i64).to_string()));
                }
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
#[derive(Debug, Clone, Default, Deserialize)]
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
    pub custom_fields: BTreeMap<String, Patch<Value>>,
}

impl PartialSchema for ContactInput {
    /// Written by hand: the members' rules (a phone's digits, a calling code, the name's
    /// length) and the custom field keys (`propertyNames`) are what [`ContactInput::read`] and
    /// the number reader check.
    fn schema() -> RefOr<Schema> {
        let phone = |description: &str| nullable(Ref::from_schema_name("PhoneValue"), description);
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "A contact as sent, to change one (`PATCH` on a group's contacts; a create is a \
                 `ContactCreate`). Only the members sent count; `null` on a named member is the same as \
                 leaving it out, and `null` on a custom field removes it.",
            ))
            .property(
                "PHONE",
                phone(
                    "The number: national (the trunk `0` is dropped) and read in `country_code`, else in the \
                     account's default calling code; 6 to 20 digits. Wins over `phone_number` unless empty.",
                ),
            )
            .property("phone_number", phone("The number, when `PHONE` is not sent (or empty)."))
            .property(
                "country_code",
                nullable(
                    OneOfBuilder::new()
                        .item(ObjectBuilder::new().schema_type(Type::String).pattern(Some(CALLING_CODE_PATTERN)))
                        .item(ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1)).maximum(Some(999))),
                    "The calling code, digits (`254`); the account's default when left out.",
                ),
            )
            .property(
                "name",
                text(
                    MAX_NAME_CHARS,
                    Some(
                        "Wins over `NAME` and `FIRST_NAME`/`LAST_NAME`; a new contact without a name is named \
                         after its full number. At most 191 characters (also `FIRST_NAME` and `LAST_NAME` \
                         joined by a space).",
                    ),
                ),
            )
            .property("NAME", text(MAX_NAME_CHARS, None))
            .property("FIRST_NAME", text(MAX_NAME_CHARS, None))
            .property("LAST_NAME", text(MAX_NAME_CHARS, None))
            .property(
                "is_subscribed",
                nullable(Ref::from_schema_name("YesNo"), "`true` when a new contact leaves it out."),
            )
            .additional_properties(Some(
                ObjectBuilder::new().schema_type(SchemaType::AnyValue).description(Some(
                    "Every other member is a custom field value (any JSON value); `null` removes one.",
                )),
            ))
            .property_names(Some(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(FIELD_KEY_PATTERN))
                    .description(Some("Custom field keys: letters, digits, `_`, `.`, `-`, at most 64.")),
            ))
            .into()
    }
}

impl ToSchema for ContactInput {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((PhoneValue::name().into(), PhoneValue::schema()));
        schemas.push((YesNo::name().into(), YesNo::schema()));
    }
}

/// A contact to create (`POST` on a group's contacts, each row of a batch): a
/// [`ContactInput`] that names its number in `PHONE` or `phone_number`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(transparent)]
pub struct ContactCreate(pub ContactInput);

impl PartialSchema for ContactCreate {
    fn schema() -> RefOr<Schema> {
        let sent = |member: &str| {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .required(member)
                .property(member, phone_schema(PHONE_SENT_PATTERN))
        };
        AllOfBuilder::new()
            .item(Ref::from_schema_name(ContactInput::name()))
            .item(AnyOfBuilder::new().item(sent("PHONE")).item(sent("phone_number")))
            .description(Some(
                "A new contact: a `ContactInput` whose `PHONE` or `phone_number` holds the number \
                 (not null, not empty).",
            ))
            .into()
    }
}

impl ToSchema for ContactCreate {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((ContactInput::name().into(), ContactInput::schema()));
        ContactInput::schemas(schemas);
    }
}

/// A batch row: anything, since a row that is not a contact is rejected on its own (`problems[]`).
pub(crate) fn batch_rows() -> Schema {
    ArrayBuilder::new()
        .items(
            AnyOfBuilder::new()
                .item(Ref::from_schema_name("ContactCreate"))
                .item(
                    ObjectBuilder::new()
                        .schema_type(SchemaType::AnyValue)
                        .description(Some("any other value: the row is rejected on its own")),
                )
                .description(Some(
                    "A contact like a single create (`ContactCreate`). A row that is not one (another JSON \
                     value, a member of the wrong type, a rule broken) is rejected on its own with its \
                     `problems[]` entry while the other rows land.",
                )),
        )
        .min_items(Some(1))
        .max_items(Some(crate::batch::MAX_BATCH_ROWS))
        .description(Some("1 to 500 contacts; rows are read one by one."))
        .into()
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
        // Each name member is held to its own limit, the ones another member wins over too.
        for (key, text) in [
            ("name", &self.name),
            ("NAME", &self.upper_name),
            ("FIRST_NAME", &self.first_name),
            ("LAST_NAME", &self.last_name),
        ] {
            if text.as_ref().is_some_and(|t| t.chars().count() > MAX_NAME_CHARS) {
                errors.add(key, format!("The {key} may not be longer than {MAX_NAME_CHARS} characters."));
            }
        }
        // Each phone member is held to its stated digits, the one `PHONE` wins over too: 6 to 20
        // as text (punctuation aside), 6 to 15 as a number (E.164's most).
        for (key, value) in [("PHONE", &self.phone), ("phone_number", &self.phone_number)] {
            let Some(PhoneValue(text, number)) = value.as_ref().filter(|v| !v.0.is_empty()) else { continue };
            let most = if *number { 15 } else { 20 };
            if !(6..=most).contains(&kernel::phone::digits(text).len()) || (*number && text.starts_with('-')) {
                errors.add(key, format!("The {key} must be a phone number of 6 to {most} digits."));
            }
        }
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
            && errors.is_empty()
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
        let body = read(json!({"PHONE": "", "phone_number": "0712345679", "NAME": "B", "is_subscribed": "No"}))
            .expect("valid");
        assert_eq!(body.phone, Some(("0712345679".into(), "phone_number")));
        assert_eq!(body.name.as_deref(), Some("B"));
        assert_eq!(body.is_subscribed, Some(false));
    }

    #[test]
    fn each_phone_member_keeps_its_stated_shape_even_when_the_other_wins() {
        // The description's oneOf: a string of 6 to 20 digits, or a whole number of 6 to 15.
        for (bad, key) in [
            (json!({"PHONE": "0712345678", "phone_number": 58882.648596643805}), "phone_number"),
            (json!({"PHONE": "0712345678", "phone_number": "abc"}), "phone_number"),
            (json!({"PHONE": "0712345678", "phone_number": 1_000_000_000_000_000_u64}), "phone_number"),
            (json!({"PHONE": -712345678, "phone_number": "0712345678"}), "PHONE"),
            (json!({"PHONE": "12345"}), "PHONE"),
        ] {
            let error = read(bad.clone()).expect_err(&bad.to_string());
            assert!(error.errors.contains_key(key), "{bad}: {error:?}");
        }
        let body = read(json!({"PHONE": 712345678.0, "phone_number": " +255 (712) 345-679 "})).expect("valid");
        assert_eq!(body.phone, Some(("712345678".into(), "PHONE")));
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
