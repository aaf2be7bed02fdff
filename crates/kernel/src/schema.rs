//! What a derived OpenAPI schema cannot say. utoipa's derive states each member's rules; a rule
//! across members (`anyOf` of required members, `if`/`then`, `additionalProperties: false`)
//! is added by the domain that owns the body to the body's own component, so the type the
//! handler reads stays the schema the description shows.

use serde_json::Value;

use utoipa::openapi::schema::Schema;
use utoipa::openapi::{Components, RefOr};

/// The characters `str::trim` takes off (Unicode White_Space), as a pattern's class. It is
/// written out because ECMA's `\s` differs at the edges (it has U+FEFF, not U+0085).
pub const SPACE: &str = r"[\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]";

/// A text that is not blank once trimmed: one character `str::trim` keeps ([`SPACE`]'s
/// complement). Attributes need a literal: they write the same class.
pub const NOT_BLANK: &str = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]";

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

/// An RFC 3339 time, as a pattern without anchors. Days stop at 28 so that every value the
/// pattern allows is a date.
pub fn date_time() -> String {
    let date = "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])";
    format!(r"{date}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{{1,9}})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])")
}

/// A text a reader trims and takes empty as left out: `inner` (a pattern without anchors),
/// spaces around allowed.
pub fn trimmed(inner: &str) -> String {
    format!("^{SPACE}*({inner})?{SPACE}*$")
}
