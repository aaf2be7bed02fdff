//! `PATCH` semantics in one type: a member left out keeps the stored value, `null` clears it,
//! a value sets it. Every domain's update body uses [`Patch`], so "absent" and "null" mean the
//! same thing on every route.

use serde::{Deserialize, Deserializer};
use utoipa::__dev::ComposeSchema;
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;

/// One member of an update body. Declare the field `#[serde(default)]` so that a member left
/// out reads as [`Patch::Absent`]:
///
/// ```
/// use kernel::Patch;
///
/// #[derive(serde::Deserialize)]
/// struct Update {
///     #[serde(default)]
///     description: Patch<String>,
/// }
///
/// let read = |body: &str| serde_json::from_str::<Update>(body).unwrap().description;
/// assert_eq!(read("{}"), Patch::Absent);
/// assert_eq!(read(r#"{"description": null}"#), Patch::Null);
/// assert_eq!(read(r#"{"description": "x"}"#), Patch::Set("x".to_owned()));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Patch<T> {
    /// Left out: the stored value stays.
    #[default]
    Absent,
    /// `null`: the stored value is cleared.
    Null,
    /// A value: the stored value becomes it.
    Set(T),
}

impl<T> Patch<T> {
    pub fn is_absent(&self) -> bool {
        matches!(self, Self::Absent)
    }

    /// The value when one was sent.
    pub fn set(self) -> Option<T> {
        match self {
            Self::Set(value) => Some(value),
            _ => None,
        }
    }

    pub fn as_ref(&self) -> Patch<&T> {
        match self {
            Self::Absent => Patch::Absent,
            Self::Null => Patch::Null,
            Self::Set(value) => Patch::Set(value),
        }
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Patch<U> {
        match self {
            Self::Absent => Patch::Absent,
            Self::Null => Patch::Null,
            Self::Set(value) => Patch::Set(f(value)),
        }
    }

    /// The change to make: `None` keeps the stored value, `Some(None)` clears it.
    pub fn change(self) -> Option<Option<T>> {
        match self {
            Self::Absent => None,
            Self::Null => Some(None),
            Self::Set(value) => Some(Some(value)),
        }
    }

    /// The stored value after the change.
    pub fn apply_to(self, stored: Option<T>) -> Option<T> {
        self.change().unwrap_or(stored)
    }
}

impl<T> From<Option<T>> for Patch<T> {
    /// A present member: `None` is `null`.
    fn from(value: Option<T>) -> Self {
        value.map_or(Self::Null, Self::Set)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Only called for a member that is present; an absent one takes `Default`.
        Option::<T>::deserialize(deserializer).map(Self::from)
    }
}

/// Named as its value: a `Patch<T>` member is declared `#[schema(inline)]`, so no component of
/// this name is ever referenced.
impl<T: ToSchema + ComposeSchema> ToSchema for Patch<T> {}

// utoipa's derive reads a generic member's schema through `ComposeSchema` (public, if hidden, in
// the pinned 5.5.0): a `Patch<T>` is described exactly as an `Option<T>`, the value's schema or `null`.
impl<T: ComposeSchema> ComposeSchema for Patch<T> {
    fn compose(schemas: Vec<RefOr<Schema>>) -> RefOr<Schema> {
        <Option<T> as ComposeSchema>::compose(schemas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, ToSchema)]
    struct Update {
        #[serde(default)]
        #[schema(inline)]
        description: Patch<String>,
        #[serde(default)]
        #[schema(inline)]
        limit: Patch<i64>,
    }

    #[test]
    fn absent_null_and_value_are_three_changes() {
        let read = |body: &str| serde_json::from_str::<Update>(body).expect(body);
        assert_eq!(read("{}").description.change(), None);
        assert_eq!(read(r#"{"description": null}"#).description.change(), Some(None));
        assert_eq!(read(r#"{"limit": 3}"#).limit.apply_to(Some(1)), Some(3));
        assert_eq!(read(r#"{"limit": null}"#).limit.apply_to(Some(1)), None);
        assert_eq!(read("{}").limit.apply_to(Some(1)), Some(1));
        assert!(serde_json::from_str::<Update>(r#"{"limit": "x"}"#).is_err(), "a wrong type is still refused");
    }

    #[test]
    fn the_schema_is_the_value_or_null_and_not_required() {
        let schema = serde_json::to_value(<Update as utoipa::PartialSchema>::schema()).expect("schema");
        assert!(schema.get("required").is_none(), "{schema}");
        let limit = &schema["properties"]["limit"];
        assert_eq!(limit["oneOf"][0]["type"], "null", "{schema}");
        assert_eq!(limit["oneOf"][1]["type"], "integer", "{schema}");
    }
}
