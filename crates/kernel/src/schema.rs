//! What a derived OpenAPI schema cannot say. utoipa's derive states each member's rules; a rule
//! across members (`anyOf` of required members, `if`/`then`, `additionalProperties: false`)
//! is added by the domain that owns the body to the body's own component, so the type the
//! handler reads stays the schema the description shows.

use serde_json::Value;
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
