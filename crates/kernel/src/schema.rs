//! What a derived OpenAPI schema cannot say. utoipa's derive states each member's rules; a rule
//! across members (`anyOf` of required members, `if`/`then`, `additionalProperties: false`)
//! is added by the domain that owns the body to the body's own component, so the type the
//! handler reads stays the schema the description shows.

use serde_json::Value;

/// A text that is not blank once trimmed: one character `str::trim` keeps. The class is
/// written out because `\S` differs at the edges (ECMA's `\s` has U+FEFF, not U+0085).
/// Attributes need a literal: they write the same class.
pub const NOT_BLANK: &str = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]";
use utoipa::openapi::schema::Schema;
use utoipa::openapi::{Components, RefOr};

/// Adds `rules` to the object schema named `component` (as its extensions, which utoipa
/// writes flat beside the schema's own members). A name that is not an object component is a
/// bug of the caller: the description test fails on the missing rule.
pub fn add_rules(components: &mut Components, component: &str, rules: impl IntoIterator<Item = (&'static str, Value)>) {
    if let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(component) {
        let extensions = object.extensions.get_or_insert_with(Default::default);
        for (key, value) in rules {
            extensions.insert(key.to_owned(), value);
        }
    }
}
