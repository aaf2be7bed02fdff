//! Contact groups (contract: Contact group): named lists of contacts with their custom
//! field definitions.

use std::collections::BTreeSet;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};
use uuid::Uuid;

use kernel::error::FieldErrors;
use kernel::{Error, Patch, TenantId};

use crate::body::{MAX_FIELD_KEY_CHARS, is_field_key};
use crate::ids::{GroupId, GroupRef};
use crate::schema::contact_groups;

/// The longest group name kept.
pub const MAX_GROUP_NAME_CHARS: usize = 191;

/// The custom field types a group may declare (`text` when none is given).
pub const FIELD_TYPES: &[&str] = &["text", "number", "date", "datetime", "boolean", "email", "phone", "url"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CustomField {
    pub key: String,
    /// Defaults to the key.
    pub label: String,
    /// Defaults to `text`.
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContactGroup {
    pub id: i64,
    pub uid: Uuid,
    pub name: String,
    /// `active` or `inactive`.
    pub status: String,
    /// Every contact, subscribed or not.
    pub contacts_count: i64,
    /// The contacts a campaign would reach.
    pub subscribed_count: i64,
    pub custom_fields: Vec<CustomField>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = contact_groups)]
pub(crate) struct GroupRow {
    pub id: GroupId,
    pub uid: Uuid,
    pub name: String,
    pub status: String,
    pub custom_fields: Value,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

impl GroupRow {
    pub(crate) fn into_group(self, contacts_count: i64, subscribed_count: i64) -> ContactGroup {
        ContactGroup {
            id: self.id.0,
            uid: self.uid,
            name: self.name,
            status: self.status,
            contacts_count,
            subscribed_count,
            custom_fields: serde_json::from_value(self.custom_fields).unwrap_or_default(),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// A custom field key as sent: the key rules, spaces around it trimmed.
const FIELD_KEY_SENT_PATTERN: &str = r"^\s*[A-Za-z0-9_.-]{1,64}\s*$";

/// One custom field definition as sent: `{key, label?, type?}`, or just the key.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, expecting = "Each custom field is an object {key, label, type} or a key.")]
pub enum FieldInput {
    Key(String),
    Definition {
        key: Option<String>,
        /// Defaults to the key.
        label: Option<String>,
        /// One of `text`, `number`, `date`, `datetime`, `boolean`, `email`, `phone`, `url`;
        /// `text` when left out.
        #[serde(rename = "type")]
        kind: Option<String>,
    },
}

// Through `ComposeSchema` (public, if hidden, in the pinned utoipa 5.5.0; `kernel::Patch` does the
// same): `GroupPatch`'s inlined `Patch<Vec<FieldInput>>` reads the schema that way, and
// `PartialSchema` follows from it.
impl utoipa::__dev::ComposeSchema for FieldInput {
    fn compose(_: Vec<RefOr<Schema>>) -> RefOr<Schema> {
        let key = || ObjectBuilder::new().schema_type(Type::String).pattern(Some(FIELD_KEY_SENT_PATTERN));
        let mut kinds: Vec<Option<&str>> = FIELD_TYPES.iter().copied().map(Some).collect();
        kinds.extend([Some(""), None]);
        OneOfBuilder::new()
            .item(key().description(Some("Just the key.")))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Object)
                    .required("key")
                    .property("key", key().description(Some("Letters, digits, `_`, `.`, `-`; at most 64.")))
                    .property(
                        "label",
                        ObjectBuilder::new()
                            .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                            .description(Some("Defaults to the key.")),
                    )
                    .property(
                        "type",
                        ObjectBuilder::new()
                            .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                            .enum_values(Some(kinds))
                            .description(Some("`text` when left out, null or empty.")),
                    ),
            )
            .description(Some(
                "One custom field definition: `{key, label?, type?}`, or just the key; keys may not repeat.",
            ))
            .into()
    }
}

impl ToSchema for FieldInput {}

/// `POST /contact-groups`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct NewGroup {
    /// Not blank; at most 191 characters.
    #[schema(
        pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]",
        max_length = 191
    )]
    pub name: String,
    /// Each `{key, label?, type?}`, or just the key as a string.
    #[serde(default)]
    pub custom_fields: Option<Vec<FieldInput>>,
}

/// `PATCH /contact-groups/{group}`: only what is sent changes.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct GroupPatch {
    /// Not blank; at most 191 characters; null keeps the name.
    #[serde(default)]
    #[schema(
        pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]",
        max_length = 191
    )]
    pub name: Option<String>,
    /// `active` or `inactive`; null keeps the status.
    #[serde(default)]
    #[schema(schema_with = status_schema)]
    pub status: Option<String>,
    /// Replaces the definitions (stored values are untouched); `null` removes them all.
    #[serde(default)]
    #[schema(inline)]
    pub custom_fields: Patch<Vec<FieldInput>>,
}

fn status_schema() -> Schema {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some([Some("active"), Some("inactive"), None]))
        .description(Some("`active` or `inactive`; null keeps the status."))
        .into()
}

/// What deleting a group removed.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeletedGroup {
    pub id: i64,
    pub uid: Uuid,
    pub deleted: bool,
    pub contacts_deleted: i64,
}

/// Trimmed; its limit counts the name as sent, spaces included, as the description's
/// `maxLength` does.
pub(crate) fn check_name(raw: &str, errors: &mut FieldErrors) -> String {
    let name = raw.trim();
    if name.is_empty() {
        errors.add("name", "The name is required.");
    } else if raw.chars().count() > MAX_GROUP_NAME_CHARS {
        errors.add("name", format!("The name may not be longer than {MAX_GROUP_NAME_CHARS} characters."));
    }
    name.to_owned()
}

/// Reads custom field definitions: keys of letters, digits, `_`, `.`, `-`, no duplicates,
/// label defaulting to the key and type to `text`.
pub(crate) fn parse_custom_fields(items: Vec<FieldInput>, errors: &mut FieldErrors) -> Vec<CustomField> {
    let mut seen = BTreeSet::new();
    let mut fields = Vec::with_capacity(items.len());
    let text = |s: Option<String>| s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    for (i, item) in items.into_iter().enumerate() {
        let at = |member: &str| format!("custom_fields[{i}]{member}");
        let (key, label, kind) = match item {
            FieldInput::Key(key) => (text(Some(key)), None, None),
            FieldInput::Definition { key, label, kind } => (text(key), text(label), text(kind)),
        };
        let Some(key) = key else {
            errors.add(at(".key"), "The key is required.");
            continue;
        };
        if !is_field_key(&key) {
            errors.add(
                at(".key"),
                format!("Keys use letters, digits, '_', '.' and '-' (at most {MAX_FIELD_KEY_CHARS} characters)."),
            );
            continue;
        }
        if !seen.insert(key.clone()) {
            errors.add(at(".key"), format!("The key {key:?} is repeated."));
            continue;
        }
        let kind = kind.unwrap_or_else(|| "text".to_owned());
        if !FIELD_TYPES.contains(&kind.as_str()) {
            errors.add(at(".type"), format!("Unknown type {kind:?}; use one of {}.", FIELD_TYPES.join(", ")));
            continue;
        }
        fields.push(CustomField { label: label.unwrap_or_else(|| key.clone()), key, kind });
    }
    fields
}

/// A group's status: an inactive group keeps its contacts but campaigns do not reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupStatus {
    Active,
    Inactive,
}

impl GroupStatus {
    pub const ALL: &[Self] = &[Self::Active, Self::Inactive];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Inactive => "inactive",
        }
    }

    /// Exactly as stored (`active`, `inactive`); anything else is `None`.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| s.as_str() == raw)
    }
}

pub(crate) fn check_status(status: &str, errors: &mut FieldErrors) -> Option<GroupStatus> {
    let parsed = GroupStatus::parse(status);
    if parsed.is_none() {
        errors.add("status", "The status must be active or inactive.");
    }
    parsed
}

/// Filters a group query to one tenant's group by id or uid.
pub(crate) fn find(tenant: TenantId, group: GroupRef) -> contact_groups::BoxedQuery<'static, diesel::pg::Pg> {
    let query = contact_groups::table.filter(contact_groups::tenant_id.eq(tenant.0)).into_boxed();
    match group {
        GroupRef::Id(id) => query.filter(contact_groups::id.eq(id)),
        GroupRef::Uid(uid) => query.filter(contact_groups::uid.eq(uid)),
    }
}

/// What another domain shows of a group (a campaign's `contact_group`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupName {
    pub id: i64,
    pub uid: Uuid,
    pub name: String,
}

/// The group `id` of `tenant`, whatever its status; another tenant's is `None`.
pub async fn name_of(conn: &mut store::Conn, tenant: TenantId, id: GroupId) -> Result<Option<GroupName>, Error> {
    let found: Option<(i64, Uuid, String)> = contact_groups::table
        .filter(contact_groups::tenant_id.eq(tenant.0))
        .filter(contact_groups::id.eq(id))
        .select((contact_groups::id, contact_groups::uid, contact_groups::name))
        .first(conn)
        .await
        .optional()?;
    Ok(found.map(|(id, uid, name)| GroupName { id, uid, name }))
}

/// The active groups of `tenant` named by any of `ids` or `uids`, each once, in no order.
pub async fn active_among(
    conn: &mut store::Conn,
    tenant: TenantId,
    ids: &[GroupId],
    uids: &[Uuid],
) -> Result<Vec<GroupName>, Error> {
    let found: Vec<(i64, Uuid, String)> = contact_groups::table
        .filter(contact_groups::tenant_id.eq(tenant.0))
        .filter(contact_groups::status.eq(GroupStatus::Active.as_str()))
        .filter(contact_groups::id.eq_any(ids).or(contact_groups::uid.eq_any(uids)))
        .select((contact_groups::id, contact_groups::uid, contact_groups::name))
        .load(conn)
        .await?;
    Ok(found.into_iter().map(|(id, uid, name)| GroupName { id, uid, name }).collect())
}
