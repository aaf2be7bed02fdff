//! What the bodies' readers take, stated in the OpenAPI description (`schema_with`): the rules
//! a member's type cannot carry (a stage's names, a label's length, a time's format). Each one
//! is a rule the service applies; none is looser than it.

use serde_json::{Value, json};
use utoipa::openapi::Array;
use utoipa::openapi::schema::{
    AnyOfBuilder, ArrayBuilder, KnownFormat, ObjectBuilder, Schema, SchemaFormat, SchemaType, Type,
};

use crate::labels::{NAME_MAX, NAMES_MAX};
use crate::stage::LeadStage;

/// A phone as the schema states it: digits with an optional `+`, 6 to 20 characters. The
/// readers take more (spaces, a local form) and check the number against its country.
pub const PHONE_PATTERN: &str = r"^\+?[0-9]{6,20}$";
/// The same, or an empty string (the upsert ignores it).
const PHONE_OR_BLANK: &str = r"^(\+?[0-9]{6,20})?$";
/// `#RRGGBB`.
pub const COLOR_PATTERN: &str = "^#[0-9A-Fa-f]{6}$";
/// A label name: 1 to 60 characters, not only spaces.
const NAME_PATTERN: &str = kernel::schema::NOT_BLANK;

fn nullable(kind: Type) -> SchemaType {
    SchemaType::from_iter([kind, Type::Null])
}

fn stages() -> impl Iterator<Item = Value> {
    LeadStage::ALL.into_iter().map(|stage| json!(stage.as_str()))
}

/// A label name of `{labels[]}`.
fn label_name() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(NAME_MAX))
        .pattern(Some(NAME_PATTERN))
}

/// `labels` of `POST`/`DELETE /leads/{lead}/labels`: 1 to 100 names.
pub fn label_names() -> Array {
    ArrayBuilder::new().items(label_name()).min_items(Some(1)).max_items(Some(NAMES_MAX)).build()
}

/// `name` of a new label.
pub fn new_label_name() -> Schema {
    label_name().description(Some("Up to 60 characters; unique in the workspace, any case.")).build().into()
}

/// `name` of a label patch (absent or null keeps it).
pub fn label_name_patch() -> Schema {
    label_name()
        .schema_type(nullable(Type::String))
        .description(Some("Up to 60 characters; unique in the workspace, any case."))
        .build()
        .into()
}

/// `color` of a label: `#RRGGBB`, or null (the default colour on a new label, kept on a patch).
pub fn label_color() -> Schema {
    ObjectBuilder::new()
        .schema_type(nullable(Type::String))
        .pattern(Some(COLOR_PATTERN))
        .description(Some("`#RRGGBB`; `#6B7280` when absent on a new label."))
        .build()
        .into()
}

/// `stage` of the stage operation: one of the stages, required.
pub fn stage() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(stages()))
        .description(Some("new, contacted, qualified, opportunity, won, lost or unqualified (any case)."))
        .build()
        .into()
}

/// `stage` of a lead's `PATCH`: one of the stages (null is refused).
pub fn stage_patch() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(stages()))
        .description(Some("As the stage operation; a won lead answers `won_locked` here."))
        .build()
        .into()
}

/// `stage` of the upsert: a stage, or null or an empty string (ignored).
pub fn stage_upsert() -> Schema {
    ObjectBuilder::new()
        .schema_type(nullable(Type::String))
        .enum_values(Some(stages().chain([json!(""), Value::Null])))
        .description(Some(
            "new, contacted, qualified, opportunity, won, lost or unqualified; null or empty is ignored.",
        ))
        .build()
        .into()
}

/// A note's `body`: 1 to 10,000 characters.
pub fn note_body() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(10_000))
        .pattern(Some(NAME_PATTERN))
        .build()
        .into()
}

/// An RFC 3339 time, or null (clears it on a patch).
pub fn date_time_or_null() -> Schema {
    ObjectBuilder::new()
        .schema_type(nullable(Type::String))
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
        .description(Some("RFC 3339."))
        .build()
        .into()
}

/// A value of the upsert that may also be null or an empty string (both ignored).
fn or_blank(value: ObjectBuilder, description: &str) -> Schema {
    AnyOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .item(ObjectBuilder::new().schema_type(Type::String).max_length(Some(0)))
        .item(value)
        .description(Some(description))
        .build()
        .into()
}

/// `next_action_at` of the upsert.
pub fn date_time_upsert() -> Schema {
    or_blank(
        ObjectBuilder::new().schema_type(Type::String).format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime))),
        "RFC 3339; null or empty is ignored.",
    )
}

/// `email` of the upsert.
pub fn email_upsert() -> Schema {
    or_blank(
        ObjectBuilder::new().schema_type(Type::String).format(Some(SchemaFormat::KnownFormat(KnownFormat::Email))),
        "Matched in any case; null or empty is ignored.",
    )
}

/// `email` of a lead's `PATCH`: an address, or null or empty to clear it.
pub fn email_patch() -> Schema {
    or_blank(
        ObjectBuilder::new().schema_type(Type::String).format(Some(SchemaFormat::KnownFormat(KnownFormat::Email))),
        "Null or an empty string clears it.",
    )
}

/// `phone` of the upsert: [`PHONE_PATTERN`], or null or empty (ignored).
pub fn phone_upsert() -> Schema {
    ObjectBuilder::new()
        .schema_type(nullable(Type::String))
        .pattern(Some(PHONE_OR_BLANK))
        .description(Some("Digits with an optional `+` (the service also reads `+255 712 345 678`, `0712345678`); null or empty is ignored."))
        .build()
        .into()
}

/// `phone` of a lead's `PATCH`: [`PHONE_PATTERN`], or null or empty to clear it.
pub fn phone_patch() -> Schema {
    ObjectBuilder::new()
        .schema_type(nullable(Type::String))
        .pattern(Some(PHONE_OR_BLANK))
        .description(Some(
            "Digits with an optional `+`, read with the account's calling code; null or empty clears it.",
        ))
        .build()
        .into()
}

/// `currency` of the upsert: a three-letter ISO 4217 code (any case), or null or empty (ignored).
pub fn currency_upsert() -> Schema {
    ObjectBuilder::new()
        .schema_type(nullable(Type::String))
        .pattern(Some("^([A-Za-z]{3})?$"))
        .description(Some("ISO 4217; defaults to the workspace currency."))
        .build()
        .into()
}

/// `currency` of a lead's `PATCH`: a three-letter ISO 4217 code (any case), or null.
pub fn currency_patch() -> Schema {
    ObjectBuilder::new()
        .schema_type(nullable(Type::String))
        .pattern(Some("^[A-Za-z]{3}$"))
        .description(Some("ISO 4217; null puts back the workspace's currency."))
        .build()
        .into()
}

/// `labels` of the upsert: names of up to 60 characters (empty ones are skipped), or null.
pub fn labels_upsert() -> Schema {
    ArrayBuilder::new()
        .schema_type(nullable(Type::Array))
        .items(ObjectBuilder::new().schema_type(Type::String).max_length(Some(NAME_MAX)))
        .description(Some("Matched by name, any case."))
        .build()
        .into()
}

/// The upsert finds its person by one of these: at least one must be sent, and not empty.
pub fn identity_any_of() -> Value {
    let string = |name: &str, extra: Value| {
        let mut member = json!({"type": "string", "minLength": 1});
        if let (Some(member), Some(extra)) = (member.as_object_mut(), extra.as_object()) {
            member.extend(extra.clone());
        }
        json!({"required": [name], "properties": {name: member}})
    };
    json!([
        string("phone", json!({"pattern": PHONE_PATTERN})),
        string("email", json!({"format": "email"})),
        {"required": ["conversation_id"], "properties": {"conversation_id": {"type": "integer"}}},
        string("call_id", json!({"pattern": NAME_PATTERN})),
    ])
}

/// `lost` and `unqualified` need a reason that is not blank (422 `reason_required`).
pub fn reason_rule() -> [(&'static str, Value); 2] {
    [
        ("if", json!({"required": ["stage"], "properties": {"stage": {"enum": ["lost", "unqualified"]}}})),
        (
            "then",
            json!({"required": ["reason"], "properties": {"reason": {"type": "string", "pattern": NAME_PATTERN}}}),
        ),
    ]
}

/// The rules across members that the derive cannot state, on the bodies' own components:
/// `POST /leads` needs one of `phone`, `email`, `conversation_id` and `call_id` to find the
/// person by, and a reason with `lost` and `unqualified` (as the stage operation does);
/// `PATCH /leads/{lead}` refuses a member the record does not have, by name. The edit's reason
/// rule is not stated: it holds for a move only, and sending the stage the lead has is none.
pub fn add_rules(components: &mut utoipa::openapi::Components) {
    use kernel::schema::add_rules;
    add_rules(components, "UpsertLead", std::iter::once(("anyOf", identity_any_of())).chain(reason_rule()));
    add_rules(components, "StageChange", reason_rule());
    add_rules(components, "LeadPatch", [("additionalProperties", Value::Bool(false))]);
}
