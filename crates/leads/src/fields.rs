//! Custom lead fields (contract: Leads — `GET /lead-fields`): the keys a workspace defines for a
//! lead's `custom_fields`, with their types and, for `select`, the option keys. Operators manage
//! them with `gateway admin lead-field set|remove`; the upsert checks values against them.

use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::RunQueryDsl;
use kernel::error::FieldErrors;
use kernel::{Caller, Error, Permission, TenantId};
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::schema::lead_fields;
use crate::service::LeadService;

/// The types a custom field may have.
pub const FIELD_TYPES: [&str; 5] = ["text", "number", "date", "boolean", "select"];
pub const KEY_MAX: usize = 60;
pub const LABEL_MAX: usize = 191;
/// The longest option key of a `select` field, and how many options one may have.
pub const OPTION_MAX: usize = 191;
pub const OPTIONS_MAX: usize = 200;

/// One custom field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct LeadField {
    /// The key in a lead's `custom_fields`: letters, digits and `_`.
    pub key: String,
    /// What people read.
    pub label: String,
    /// `text`, `number`, `date` (`YYYY-MM-DD`), `boolean` or `select`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The option keys of a `select` field (a value must be one of them); empty for the others.
    pub options: Vec<String>,
}

impl LeadService {
    /// The workspace's custom fields, by key (`leads.view`).
    pub async fn fields(&self, caller: &Caller) -> Result<Vec<LeadField>, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        self.access(&mut conn, caller, Permission::LEADS_VIEW).await?;
        let rows: Vec<(String, String, String, Vec<String>)> = lead_fields::table
            .filter(lead_fields::tenant_id.eq(caller.tenant_id.0))
            .order(lead_fields::key)
            .select((lead_fields::key, lead_fields::label, lead_fields::kind, lead_fields::options))
            .load(&mut conn)
            .await?;
        Ok(rows.into_iter().map(|(key, label, kind, options)| LeadField { key, label, kind, options }).collect())
    }
}

/// A definition, checked: the key of letters, digits and `_` (up to 60), a label (up to 191),
/// one of the types (any case in, lower case kept), and for `select` at least one option (each
/// once, up to 191 characters); other types take no options.
pub fn check_field(key: &str, label: &str, kind: &str, options: &[String]) -> Result<LeadField, Error> {
    let mut errors = FieldErrors::new();
    let key = key.trim();
    if key.is_empty() {
        errors.add("key", "The key is required.");
    } else if key.len() > KEY_MAX {
        errors.add("key", format!("The key may not be longer than {KEY_MAX} characters."));
    } else if !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        errors.add("key", "The key may hold only letters, digits and _.");
    }
    let label = label.trim();
    if label.is_empty() {
        errors.add("label", "The label is required.");
    } else if label.chars().count() > LABEL_MAX {
        errors.add("label", format!("The label may not be longer than {LABEL_MAX} characters."));
    }
    let kind = kind.trim().to_ascii_lowercase();
    if !FIELD_TYPES.contains(&kind.as_str()) {
        errors.add("type", "The type must be one of text, number, date, boolean, select.");
    }
    let mut kept: Vec<String> = Vec::new();
    for option in options.iter().map(|o| o.trim()) {
        if option.is_empty() || option.chars().count() > OPTION_MAX {
            errors.add("options", format!("Options are keys of 1 to {OPTION_MAX} characters."));
        } else if kept.iter().any(|k| k == option) {
            errors.add("options", format!("The option {option} is given twice."));
        } else {
            kept.push(option.to_owned());
        }
    }
    if kind == "select" && options.is_empty() {
        errors.add("options", "A select field needs at least one option.");
    } else if kind != "select" && !options.is_empty() && FIELD_TYPES.contains(&kind.as_str()) {
        errors.add("options", "Only select fields take options.");
    }
    if kept.len() > OPTIONS_MAX {
        errors.add("options", format!("A select field may have at most {OPTIONS_MAX} options."));
    }
    if !errors.is_empty() {
        return Err(Error::fields(errors.into_map()).with_reason("invalid"));
    }
    Ok(LeadField { key: key.to_owned(), label: label.to_owned(), kind, options: kept })
}

/// Defines a custom field, or redefines the one with that key. Values already on leads are
/// left as they are; the upsert checks new values against the new definition.
pub async fn set_field(
    conn: &mut store::Conn,
    tenant: TenantId,
    key: &str,
    label: &str,
    kind: &str,
    options: &[String],
) -> Result<LeadField, Error> {
    let field = check_field(key, label, kind, options)?;
    // an unknown tenant is not found, rather than a broken foreign key
    accounts::tenants::get(conn, tenant).await?;
    diesel::insert_into(lead_fields::table)
        .values((
            lead_fields::tenant_id.eq(tenant.0),
            lead_fields::key.eq(&field.key),
            lead_fields::label.eq(&field.label),
            lead_fields::kind.eq(&field.kind),
            lead_fields::options.eq(&field.options),
            lead_fields::created_at.eq(OffsetDateTime::now_utc()),
        ))
        .on_conflict((lead_fields::tenant_id, lead_fields::key))
        .do_update()
        .set((
            lead_fields::label.eq(excluded(lead_fields::label)),
            lead_fields::kind.eq(excluded(lead_fields::kind)),
            lead_fields::options.eq(excluded(lead_fields::options)),
        ))
        .execute(conn)
        .await?;
    Ok(field)
}

/// Removes a custom field: its values stay on the leads that have them, but no upsert sets it
/// any more (it is listed in `ignored`).
pub async fn remove_field(conn: &mut store::Conn, tenant: TenantId, key: &str) -> Result<LeadField, Error> {
    let removed: Option<(String, String, String, Vec<String>)> = diesel::delete(
        lead_fields::table.filter(lead_fields::tenant_id.eq(tenant.0)).filter(lead_fields::key.eq(key.trim())),
    )
    .returning((lead_fields::key, lead_fields::label, lead_fields::kind, lead_fields::options))
    .get_result(conn)
    .await
    .optional()?;
    let (key, label, kind, options) = removed.ok_or_else(|| Error::not_found("Lead field"))?;
    Ok(LeadField { key, label, kind, options })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn fields_of(error: &Error) -> Vec<&str> {
        error.errors.keys().map(String::as_str).collect()
    }

    #[test]
    fn a_select_field_keeps_its_options_in_order() {
        let field = check_field(" budget_band ", " Budget ", "Select", &options(&["low", " high "])).expect("valid");
        assert_eq!(
            field,
            LeadField {
                key: "budget_band".into(),
                label: "Budget".into(),
                kind: "select".into(),
                options: options(&["low", "high"]),
            }
        );
        let shown = serde_json::to_value(&field).expect("json");
        assert_eq!(shown["type"], "select");
        assert!(shown.get("kind").is_none());
    }

    #[test]
    fn every_type_of_the_list_is_accepted_and_no_other() {
        for kind in ["text", "number", "date", "boolean"] {
            assert_eq!(check_field("k", "K", kind, &[]).expect("valid").kind, kind);
        }
        let error = check_field("k", "K", "money", &[]).expect_err("refused");
        assert_eq!(fields_of(&error), ["type"]);
        assert_eq!(error.reason.as_deref(), Some("invalid"));
    }

    #[test]
    fn keys_are_letters_digits_and_underscores_up_to_60() {
        assert!(check_field("Tier_2", "Tier", "text", &[]).is_ok());
        assert!(check_field(&"k".repeat(60), "K", "text", &[]).is_ok());
        for key in ["", "  ", "tier-2", "tier 2", "tíer", "a.b", &"k".repeat(61)] {
            let error = check_field(key, "K", "text", &[]).expect_err("refused");
            assert_eq!(fields_of(&error), ["key"], "{key}");
        }
    }

    #[test]
    fn options_belong_to_select_fields_only() {
        let error = check_field("k", "K", "select", &[]).expect_err("refused");
        assert_eq!(fields_of(&error), ["options"]);
        let error = check_field("k", "K", "text", &options(&["a"])).expect_err("refused");
        assert_eq!(fields_of(&error), ["options"]);
        for bad in [options(&["a", "a"]), options(&["a", " "]), vec!["o".repeat(OPTION_MAX + 1)]] {
            let error = check_field("k", "K", "select", &bad).expect_err("refused");
            assert_eq!(fields_of(&error), ["options"]);
        }
        let many: Vec<String> = (0..=OPTIONS_MAX).map(|i| format!("o{i}")).collect();
        assert!(check_field("k", "K", "select", &many[..OPTIONS_MAX]).is_ok());
        assert!(check_field("k", "K", "select", &many).is_err());
    }

    #[test]
    fn a_label_is_required() {
        let error = check_field("k", " ", "text", &[]).expect_err("refused");
        assert_eq!(fields_of(&error), ["label"]);
        let error = check_field("", "", "nope", &[]).expect_err("refused");
        assert_eq!(fields_of(&error), ["key", "label", "type"]);
    }
}
