//! How each column type reads a value (contract: Data table, column and record, the value
//! table): what is accepted, and the one stored form, so equal values are stored alike and
//! compare, sort and stay unique as people expect.

use serde_json::{Number, Value};
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime, UtcOffset};
use uuid::Uuid;

use crate::definition::{Column, ColumnType};

/// A column's value as stored; `Ok(None)` is empty (a clear). Relations and files are stored
/// as ids; whether those exist is the writer's next check.
pub fn read(column: &Column, value: &Value) -> Result<Option<Value>, String> {
    if value.is_null() {
        return Ok(None);
    }
    use ColumnType::*;
    match column.kind {
        Text | LongText => text(column, value),
        Number | Currency => number(column, value).map(Some),
        Boolean => boolean(value).map(|b| Some(Value::Bool(b))),
        Date => date(value).map(|d| Some(Value::String(d))),
        Datetime => datetime(value).map(|d| Some(Value::String(d))),
        Phone => phone(column, value),
        Email => email(value),
        Select => select(column, value),
        MultiSelect => multi_select(column, value),
        Status => status(column, value),
        Relation => reference(value, "a record id").map(|id| Some(Value::String(id.to_string()))),
        File => files(column, value),
        AutoNumber => Err("is assigned by the service and cannot be written.".into()),
    }
}

fn string(value: &Value) -> Result<&str, String> {
    value.as_str().ok_or_else(|| "must be a string.".to_owned())
}

fn text(column: &Column, value: &Value) -> Result<Option<Value>, String> {
    let text = string(value)?.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let length = text.chars().count() as u32;
    if length > column.max_length() {
        return Err(format!("must be at most {} characters.", column.max_length()));
    }
    if let Some(min) = column.config.min_length
        && length < min
    {
        return Err(format!("must be at least {min} characters."));
    }
    Ok(Some(Value::String(text.to_owned())))
}

/// A JSON number or a numeric string, as a finite number.
pub fn parse_number(value: &Value) -> Result<f64, String> {
    let parsed = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let s = s.trim();
            let numeric = !s.is_empty()
                && s.chars().all(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
                && s.chars().any(|c| c.is_ascii_digit());
            numeric.then(|| s.parse::<f64>().ok()).flatten()
        }
        _ => None,
    };
    parsed.filter(|n| n.is_finite()).ok_or_else(|| "must be a number (a JSON number or a numeric string).".to_owned())
}

/// The stored form of a number: an integer when whole, else the shortest decimal.
pub fn number_value(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        Value::Number((n as i64).into())
    } else {
        Number::from_f64(n).map(Value::Number).unwrap_or(Value::Null)
    }
}

fn decimals(n: f64) -> u32 {
    let shown = n.abs().to_string();
    shown.split_once('.').map(|(_, fraction)| fraction.len() as u32).unwrap_or(0)
}

fn number(column: &Column, value: &Value) -> Result<Value, String> {
    let n = parse_number(value)?;
    let config = &column.config;
    if let Some(min) = config.min
        && n < min
    {
        return Err(format!("must be at least {}.", number_value(min)));
    }
    if let Some(max) = config.max
        && n > max
    {
        return Err(format!("must be at most {}.", number_value(max)));
    }
    let places = if column.kind == ColumnType::Currency { config.decimals.or(Some(0)) } else { config.precision };
    if let Some(places) = places
        && decimals(n) > places
    {
        return Err(match places {
            0 => "must be a whole number.".to_owned(),
            _ => format!("must have at most {places} decimal places."),
        });
    }
    Ok(number_value(n))
}

fn boolean(value: &Value) -> Result<bool, String> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err("must be true or false.".into()),
    }
}

pub fn date(value: &Value) -> Result<String, String> {
    let format = format_description!("[year]-[month]-[day]");
    let raw = string(value)?.trim();
    Date::parse(raw, format)
        .ok()
        .filter(|_| raw.len() == 10)
        .map(|d| d.format(format).unwrap_or_default())
        .ok_or_else(|| "must be a date, YYYY-MM-DD.".into())
}

/// A time with an explicit offset, stored in UTC to the millisecond in one fixed width, so
/// stored values compare in time order.
pub fn datetime(value: &Value) -> Result<String, String> {
    let at = OffsetDateTime::parse(string(value)?.trim(), &Rfc3339)
        .map_err(|_| "must be an RFC 3339 time with Z or an offset, such as 2026-11-26T08:00:00+03:00.".to_owned())?;
    Ok(format_instant(at))
}

/// An instant for `$created_at`/`$updated_at` filters and ranges: RFC 3339, or a date (its
/// midnight in UTC).
pub fn instant(value: &Value) -> Result<OffsetDateTime, String> {
    let raw = string(value)?.trim();
    if let Ok(at) = OffsetDateTime::parse(raw, &Rfc3339) {
        return Ok(at);
    }
    let day = date(value).map_err(|_| "must be an RFC 3339 time or a date, YYYY-MM-DD.".to_owned())?;
    let day = Date::parse(&day, format_description!("[year]-[month]-[day]")).map_err(|e| e.to_string())?;
    Ok(day.midnight().assume_utc())
}

pub fn format_instant(at: OffsetDateTime) -> String {
    let format = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    at.to_offset(UtcOffset::UTC).format(format).unwrap_or_default()
}

fn phone(column: &Column, value: &Value) -> Result<Option<Value>, String> {
    let raw = string(value)?.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    // apply gives every phone column a region (the account's unless the definition names one)
    let region = column.config.region.as_deref().unwrap_or_default();
    kernel::phone::e164(raw, region).map(|n| Some(Value::String(n))).ok_or_else(|| match region {
        "" => "must be a valid phone number with its country code (+255...).".to_owned(),
        region => format!("must be a valid phone number (numbers without a country code are read as {region})."),
    })
}

fn email(value: &Value) -> Result<Option<Value>, String> {
    let raw = string(value)?.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    kernel::email::normalize(raw).map(|e| Some(Value::String(e))).ok_or_else(|| "must be an email address.".into())
}

fn option<'a>(column: &'a Column, value: &Value) -> Result<&'a String, String> {
    let raw = string(value)?;
    column
        .config
        .options
        .iter()
        .find(|o| o.as_str() == raw)
        .ok_or_else(|| format!("must be one of: {}.", column.config.options.join(", ")))
}

fn select(column: &Column, value: &Value) -> Result<Option<Value>, String> {
    if value.as_str() == Some("") {
        return Ok(None);
    }
    option(column, value).map(|o| Some(Value::String(o.clone())))
}

fn multi_select(column: &Column, value: &Value) -> Result<Option<Value>, String> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        single => vec![single],
    };
    let mut chosen = Vec::new();
    for item in items {
        chosen.push(option(column, item)?);
    }
    // in the options' order, each once
    let list: Vec<Value> =
        column.config.options.iter().filter(|o| chosen.contains(o)).map(|o| Value::String(o.clone())).collect();
    Ok((!list.is_empty()).then_some(Value::Array(list)))
}

fn status(column: &Column, value: &Value) -> Result<Option<Value>, String> {
    let raw = string(value)?;
    if raw.is_empty() {
        return Ok(None);
    }
    match column.state(raw) {
        Some(state) => Ok(Some(Value::String(state.key.clone()))),
        None => {
            let keys: Vec<&str> = column.config.states.iter().map(|s| s.key.as_str()).collect();
            Err(format!("must be one of the states: {}.", keys.join(", ")))
        }
    }
}

/// A UUID, or an object `{id}` holding one.
pub fn reference(value: &Value, what: &str) -> Result<Uuid, String> {
    let raw = match value {
        Value::Object(object) => object.get("id").and_then(Value::as_str),
        other => other.as_str(),
    };
    raw.and_then(|s| Uuid::parse_str(s.trim()).ok())
        .ok_or_else(|| format!("must be {what} (a UUID) or an object with its id."))
}

fn files(column: &Column, value: &Value) -> Result<Option<Value>, String> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        single => vec![single],
    };
    if column.config.multiple == Some(false) && items.len() > 1 {
        return Err("takes one file.".into());
    }
    let mut ids: Vec<Value> = Vec::new();
    for item in items {
        let id = Value::String(reference(item, "a file id")?.to_string());
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok((!ids.is_empty()).then_some(Value::Array(ids)))
}

/// The ids a stored relation or file value refers to.
pub fn ids(value: &Value) -> Vec<Uuid> {
    match value {
        Value::Array(items) => items.iter().filter_map(|v| v.as_str()?.parse().ok()).collect(),
        Value::String(s) => s.parse().ok().into_iter().collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::definition::Config;

    fn column(kind: ColumnType, config: Value) -> Column {
        Column {
            key: "c".into(),
            label: "C".into(),
            kind,
            required: false,
            unique: false,
            indexed: false,
            config: serde_json::from_value::<Config>(config).expect("config"),
        }
    }

    #[test]
    fn numbers_are_normalized_and_bounded() {
        let c = column(ColumnType::Number, json!({"min": 0, "max": 100, "precision": 1}));
        assert_eq!(read(&c, &json!("12.50")), Ok(Some(json!(12.5))));
        assert_eq!(read(&c, &json!(7.0)), Ok(Some(json!(7))));
        assert!(read(&c, &json!(12.55)).is_err());
        assert!(read(&c, &json!(101)).is_err());
        assert!(read(&c, &json!("12a")).is_err());
        assert!(read(&c, &json!("NaN")).is_err());
        let money = column(ColumnType::Currency, json!({"currency": "TZS", "decimals": 0}));
        assert_eq!(read(&money, &json!(1500)), Ok(Some(json!(1500))));
        assert!(read(&money, &json!(1500.5)).is_err());
    }

    #[test]
    fn times_phones_and_emails_have_one_stored_form() {
        let at = column(ColumnType::Datetime, json!({}));
        assert_eq!(read(&at, &json!("2026-11-26T11:00:00+03:00")), Ok(Some(json!("2026-11-26T08:00:00.000Z"))));
        assert!(read(&at, &json!("2026-11-26T11:00:00")).is_err());
        let day = column(ColumnType::Date, json!({}));
        assert_eq!(read(&day, &json!("2026-02-28")), Ok(Some(json!("2026-02-28"))));
        assert!(read(&day, &json!("2026-02-30")).is_err());
        let phone = column(ColumnType::Phone, json!({"region": "TZ"}));
        assert_eq!(read(&phone, &json!("0712 345 678")), Ok(Some(json!("+255712345678"))));
        let email = column(ColumnType::Email, json!({}));
        assert_eq!(read(&email, &json!(" Amina@Example.COM ")), Ok(Some(json!("amina@example.com"))));
        assert!(read(&email, &json!("amina")).is_err());
    }

    #[test]
    fn choices_keep_the_options_order() {
        let tags = column(ColumnType::MultiSelect, json!({"options": ["vip", "late"]}));
        assert_eq!(read(&tags, &json!(["late", "vip", "late"])), Ok(Some(json!(["vip", "late"]))));
        assert_eq!(read(&tags, &json!("vip")), Ok(Some(json!(["vip"]))));
        assert_eq!(read(&tags, &json!([])), Ok(None));
        assert!(read(&tags, &json!(["gold"])).is_err());
    }
}
