//! What the bodies' and queries' readers take, stated in the OpenAPI description
//! (`schema_with`): the catalogue's event names, a URL's form, header names and values. Each is
//! a rule the service applies; none is looser than it.

use serde_json::{Value, json};
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, KnownFormat, ObjectBuilder, Schema, SchemaFormat, SchemaType, Type,
};

use crate::catalogue::GROUPS;
use crate::headers::MAX_HEADERS;
use kernel::state::Status as _;

use crate::status::DeliveryState;

/// The longest URL a receiver may have.
pub const URL_MAX: usize = 2_048;
/// A header name: an HTTP token of up to 64 characters.
const HEADER_NAME: &str = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$";
/// A header value: visible ASCII, spaces and tabs.
const HEADER_VALUE: &str = r"^[\t\x20-\x7E]*$";
const HEADER_VALUE_MAX: usize = 2_048;
/// The lead stages a filter may name.
pub const LEAD_STAGES: [&str; 7] = ["new", "contacted", "qualified", "opportunity", "won", "lost", "unqualified"];

fn events() -> impl Iterator<Item = Value> {
    GROUPS.iter().flat_map(|group| group.events).map(|event| json!(event.name))
}

fn event_name() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(events()))
}

/// `url` of a receiver: an absolute http(s) URL of up to 2,048 characters.
pub fn url() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::Custom("uri".to_owned())))
        .pattern(Some(r"^[Hh][Tt][Tt][Pp][Ss]://[^/?#@\s]+([/?#]\S*)?$"))
        .max_length(Some(URL_MAX))
        .description(Some(
            "https; plain http only to loopback when `SVC_WEBHOOKS_ALLOW_LOOPBACK` allows it. Private \
             and reserved addresses are refused.",
        ))
        .build()
        .into()
}

/// `events` of a receiver: names from `GET /webhooks/events`, at least one.
pub fn events_list() -> Schema {
    ArrayBuilder::new()
        .items(event_name())
        .min_items(Some(1))
        .description(Some("Names from `GET /webhooks/events`; at least one."))
        .build()
        .into()
}

/// A filter's name list (`labels`, `channels`): names of 1 to 191 characters, not only spaces;
/// null is no filter.
pub fn filter_names() -> Schema {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(191))
                .pattern(Some(kernel::schema::NOT_BLANK)),
        )
        .build()
        .into()
}

/// `stages` of a filter; null is no filter.
pub fn filter_stages() -> Schema {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(ObjectBuilder::new().schema_type(Type::String).enum_values(Some(LEAD_STAGES)))
        .build()
        .into()
}

fn headers_object(value: ObjectBuilder, description: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .max_properties(Some(MAX_HEADERS))
        .property_names(Some(ObjectBuilder::new().schema_type(Type::String).pattern(Some(HEADER_NAME))))
        .additional_properties(Some(AdditionalProperties::RefOr(value.into())))
        .description(Some(description))
}

/// `headers` of a new receiver: up to five `{name: value}`, or null.
pub fn headers_new() -> Schema {
    let value =
        ObjectBuilder::new().schema_type(Type::String).pattern(Some(HEADER_VALUE)).max_length(Some(HEADER_VALUE_MAX));
    headers_object(value, "Up to five `{name: value}`; values are stored encrypted and never returned.")
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .build()
        .into()
}

/// `headers` of a receiver's `PATCH`: the set that replaces the stored one; a name sent as null
/// keeps its stored value; `{}` or null removes all.
pub fn headers_patch() -> Schema {
    let value = ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .pattern(Some(HEADER_VALUE))
        .max_length(Some(HEADER_VALUE_MAX));
    headers_object(value, "Replaces the set; a name sent as null keeps its stored value; `{}` (or null) removes all.")
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .build()
        .into()
}

/// `since` of a recovery: an RFC 3339 time, required.
pub fn since() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
        .description(Some("RFC 3339: failed deliveries created at or after this are replayed."))
        .build()
        .into()
}

/// `event` of a test send: a catalogue event, or null or empty for `webhook.test`.
pub fn test_event() -> Schema {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(events().chain([json!(""), Value::Null])))
        .description(Some("A catalogue event whose sample is sent; `webhook.test` when absent."))
        .build()
        .into()
}

/// `event` of the delivery log's filter: a catalogue event (empty is no filter).
pub fn event_query() -> Schema {
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(events().chain([json!("")]))).build().into()
}

/// `state` of the delivery log's filter (empty is no filter).
pub fn state_query() -> Schema {
    let states = DeliveryState::SHOWN.iter().map(|state| json!(state.as_str())).chain([json!("")]);
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(states))
        .description(Some("`pending`, `delivered`, `failed` or `held`."))
        .build()
        .into()
}

/// `url` of a receiver's `PATCH`: as on registration, or null (kept).
pub fn url_patch() -> Schema {
    match url() {
        Schema::Object(mut object) => {
            object.schema_type = SchemaType::from_iter([Type::String, Type::Null]);
            Schema::Object(object)
        }
        other => other,
    }
}

/// `events` of a receiver's `PATCH`: as on registration, or null (kept).
pub fn events_patch() -> Schema {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(event_name())
        .min_items(Some(1))
        .description(Some("Names from `GET /webhooks/events`; at least one; null keeps them."))
        .build()
        .into()
}

/// The rule across `POST /webhooks`'s members that the derive cannot state, on
/// [`NewWebhook`](crate::NewWebhook)'s own component: filters (any object) need a lead event
/// among `events`.
pub fn add_rules(components: &mut utoipa::openapi::Components) {
    kernel::schema::add_rules(
        components,
        "NewWebhook",
        [
            ("if", json!({"required": ["filters"], "properties": {"filters": {"type": "object"}}})),
            (
                "then",
                json!({"required": ["events"], "properties": {"events": {"contains": {"type": "string", "pattern": "^lead\\."}}}}),
            ),
        ],
    );
}
