//! Contacts (contract: Contact): a person's number within one group, with custom field values.

use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};

use kernel::page::PageQuery;
use kernel::phone::{ContactPhone, PhoneError};
use kernel::{Error, PageRequest};

use crate::body::QueryValue;
use crate::ids::{ContactId, ContactUid, GroupId};
use crate::schema::contacts;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Contact {
    pub id: i64,
    pub uid: String,
    pub group_id: i64,
    pub group_uid: uuid::Uuid,
    pub name: String,
    /// Digits only, e.g. `255`.
    pub country_code: String,
    /// The national number, without the country code or a trunk `0`.
    pub phone_number: String,
    /// Country code plus national number, digits only.
    pub full_phone_number: String,
    pub is_subscribed: bool,
    /// Always an object; `{}` when none.
    #[schema(value_type = Object)]
    pub custom_field_values: Map<String, Value>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Debug, Clone, Queryable, QueryableByName, Selectable)]
#[diesel(table_name = contacts)]
pub(crate) struct ContactRow {
    pub id: ContactId,
    pub uid: String,
    pub group_id: GroupId,
    pub name: String,
    pub country_code: String,
    pub phone_number: String,
    pub full_phone_number: String,
    pub is_subscribed: bool,
    pub custom_field_values: Value,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

impl ContactRow {
    pub(crate) fn into_contact(self, group_uid: uuid::Uuid) -> Contact {
        Contact {
            id: self.id.0,
            uid: self.uid,
            group_id: self.group_id.0,
            group_uid,
            name: self.name,
            country_code: self.country_code,
            phone_number: self.phone_number,
            full_phone_number: self.full_phone_number,
            is_subscribed: self.is_subscribed,
            custom_field_values: match self.custom_field_values {
                Value::Object(map) => map,
                _ => Map::new(),
            },
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// A new contact's uid.
pub(crate) fn new_uid() -> String {
    ContactUid::generate().as_str().to_owned()
}

/// Normalizes a phone, reporting a failure on the key it came from.
pub(crate) fn parse_phone(
    phone: &str,
    field: &str,
    country_code: Option<&str>,
    default_country_code: &str,
) -> Result<ContactPhone, Error> {
    ContactPhone::parse(phone, country_code, default_country_code).map_err(|e| match e {
        PhoneError::CountryCode => Error::field("country_code", e.to_string()),
        _ => Error::field(field, e.to_string()),
    })
}

/// `GET /contact-groups/{group}/contacts` filters.
#[derive(Debug, Clone, Default, Deserialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ContactFilter {
    /// Matches the name, the national number, or the full number without punctuation.
    pub search: Option<String>,
    /// `true` or `false` (`1`, `0`); empty is no filter.
    #[schema(schema_with = subscribed_text)]
    #[param(schema_with = subscribed_text)]
    pub subscribed: Option<String>,
}

/// The `subscribed` filter as the query string sends it.
fn subscribed_text() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["true", "false", "1", "0", ""]))
        .description(Some("`true` or `false` (`1`, `0`); empty is no filter."))
        .into()
}

/// The `subscribed` filter in the original list's body: a boolean, `1`/`0`, or the text.
fn subscribed_value() -> Schema {
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .item(ObjectBuilder::new().schema_type(Type::Boolean))
        .item(ObjectBuilder::new().schema_type(Type::Integer).enum_values(Some([0, 1])))
        .item(subscribed_text())
        .into()
}

/// A paging member in the original list's body: an integer, as a number or as text (empty is
/// left out).
fn paging_value() -> Schema {
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .item(ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(i64::MIN)).maximum(Some(i64::MAX)))
        .item(ObjectBuilder::new().schema_type(Type::String).pattern(Some(r"^\s*([+-]?[0-9]{1,18})?\s*$")))
        .into()
}

/// The search term in the original list's body: text, a number or a boolean, read as its text.
fn search_value() -> Schema {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Number, Type::Boolean, Type::Null]))
        .into()
}

/// `GET /contacts` filters.
#[derive(Debug, Clone, Default, Deserialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ContactSearch {
    /// Matches like `search` on a group's list.
    pub q: Option<String>,
    /// A group's id or UUID.
    pub group_id: Option<String>,
}

/// The original list's body (`POST /contacts/{group_id}/all`): the same filters and paging as
/// the query string, which a member of the body overrides.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct ListBody {
    #[serde(default)]
    #[schema(schema_with = search_value)]
    pub search: Option<QueryValue>,
    /// `true` or `false`.
    #[serde(default)]
    #[schema(schema_with = subscribed_value)]
    pub subscribed: Option<QueryValue>,
    #[serde(default)]
    #[schema(schema_with = paging_value)]
    pub page: Option<QueryValue>,
    #[serde(default)]
    #[schema(schema_with = paging_value)]
    pub limit: Option<QueryValue>,
    #[serde(default)]
    #[schema(schema_with = paging_value)]
    pub per_page: Option<QueryValue>,
}

impl ListBody {
    /// The filters and paging of the original list: each member from the body when sent there
    /// (an empty paging member is left out, as a form posts it), else from the query. The query
    /// is read whole even where the body wins over it: a bad value is refused, not hidden.
    pub fn read(&self, query: &ContactFilter, paging: &PageQuery) -> Result<(ListQuery, PageRequest), Error> {
        query.parse()?;
        PageRequest::parse(paging, DEFAULT_PER_PAGE)?;
        let over = |body: &Option<QueryValue>, query: &Option<String>, empty_counts: bool| {
            body.as_ref()
                .map(|v| v.0.clone())
                .filter(|v| empty_counts || !v.trim().is_empty())
                .or_else(|| query.clone())
        };
        let filter = ContactFilter {
            search: over(&self.search, &query.search, true),
            subscribed: over(&self.subscribed, &query.subscribed, true),
        };
        let paging = PageQuery {
            page: over(&self.page, &paging.page, false),
            limit: over(&self.limit, &paging.limit, false),
            per_page: over(&self.per_page, &paging.per_page, false),
        };
        Ok((filter.parse()?, PageRequest::parse(&paging, DEFAULT_PER_PAGE)?))
    }
}

/// The parsed list query.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub search: Option<String>,
    pub subscribed: Option<bool>,
}

impl ContactFilter {
    pub fn parse(&self) -> Result<ListQuery, Error> {
        // exactly the description's values: ` true` is not one of them
        let subscribed = match self.subscribed.as_deref() {
            None | Some("") => None,
            Some("true" | "1") => Some(true),
            Some("false" | "0") => Some(false),
            Some(_) => return Err(Error::field("subscribed", "The subscribed filter must be true or false.")),
        };
        Ok(ListQuery { search: self.search.clone().filter(|s| !s.trim().is_empty()), subscribed })
    }
}

/// Default page size of contact lists (contract: 20 for contacts).
pub const DEFAULT_PER_PAGE: i64 = 20;

pub(crate) fn page_bounds(page: PageRequest) -> (i64, i64) {
    (page.per_page, page.offset())
}
