//! Reading a JSON body (or an MCP tool's arguments) into its typed request: malformed JSON or
//! a wrong type is a validation error whose `errors` names the member (`custom_fields[0].key`),
//! a missing member is named as required, and text holding NUL is refused before any database
//! sees it. REST's body extractor and the MCP tools both read through [`parse`], so a body and
//! the same arguments are refused alike.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Error;

/// Reads `bytes` as `T`. An empty body (no bytes) reads as `{}`, so missing fields are
/// reported by name; a body of spaces is not JSON, and is refused like any other.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    let bytes: &[u8] = if bytes.is_empty() { b"{}" } else { bytes };
    refuse_nul(bytes)?;
    // Every body is an object; serde's derive would also read a struct from an array of its
    // members (`[null, null]`).
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') && serde_json::from_slice::<Value>(bytes).is_ok()
    {
        let message = "The request body must be a JSON object.";
        return Err(Error::validation(message).with_field("body", message));
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize(de) {
        Ok(value) => Ok(value),
        // JSON Schema counts `3.0` as an integer: the body is read again with such numbers
        // written as integers (only on this path, so a valid body is parsed once).
        Err(e) if e.inner().to_string().starts_with("invalid type: floating point") => {
            let mut value: Value = serde_json::from_slice(bytes).map_err(|_| refusal(e))?;
            whole_numbers(&mut value);
            serde_path_to_error::deserialize(value).map_err(refusal)
        }
        Err(e) => Err(refusal(e)),
    }
}

/// A number with no fraction (`48.0`, `-3e2`) becomes the integer it is, everywhere in `value`.
fn whole_numbers(value: &mut Value) {
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15) {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers),
        Value::Object(members) => members.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

/// The reader's 422: `errors` keyed by the member's path, a missing member named.
fn refusal(e: serde_path_to_error::Error<serde_json::Error>) -> Error {
    let path = e.path().to_string();
    let inner = e.into_inner();
    if inner.is_syntax() || inner.is_eof() {
        Error::validation(format!("The request body is not valid JSON: {inner}"))
            .with_field("body", "The request body is not valid JSON.")
    } else {
        let message = inner.to_string();
        // serde's message ends with the position, which means nothing to a client.
        let message = message.split(" at line ").next().unwrap_or(&message).to_owned();
        match missing_field(&message) {
            Some(missing) => {
                let field = if path == "." { missing.to_owned() } else { format!("{path}.{missing}") };
                let message = format!("The {field} field is required.");
                Error::validation(message.clone()).with_field(field, message)
            }
            None => {
                let field = if path == "." { "body".to_owned() } else { path };
                Error::validation(format!("The {field} field is invalid: {message}.")).with_field(field, message)
            }
        }
    }
}

/// PostgreSQL text cannot hold the NUL character: a `\u0000` anywhere in a body (a value or a
/// member name) is refused here, naming where it is, before any service or the database sees it.
fn refuse_nul(bytes: &[u8]) -> Result<(), Error> {
    if !has_nul_escape(bytes) {
        return Ok(());
    }
    let field = serde_json::from_slice::<Value>(bytes).ok().and_then(|v| nul_in(&v)).unwrap_or_else(|| "body".into());
    let message = "Text may not contain the NUL character (\\u0000).";
    Err(Error::validation(format!("The {field} field is invalid: {message}")).with_field(field, message))
}

/// A `\u0000` escape: `u0000` after an odd run of backslashes (`\\u0000` is plain text).
fn has_nul_escape(bytes: &[u8]) -> bool {
    bytes
        .windows(6)
        .enumerate()
        .any(|(at, w)| w == b"\\u0000" && bytes[..at].iter().rev().take_while(|b| **b == b'\\').count() % 2 == 0)
}

/// Where the first NUL is, as the body reader names fields (`items[2].sku`).
fn nul_in(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => text.contains('\0').then(String::new),
        Value::Array(items) => {
            items.iter().enumerate().find_map(|(i, item)| nul_in(item).map(|rest| format!("[{i}]{}", dotted(rest))))
        }
        Value::Object(members) => members.iter().find_map(|(key, member)| {
            if key.contains('\0') {
                return Some(key.replace('\0', "\\u0000"));
            }
            nul_in(member).map(|rest| format!("{key}{}", dotted(rest)))
        }),
        _ => None,
    }
}

fn dotted(rest: String) -> String {
    if rest.is_empty() || rest.starts_with('[') { rest } else { format!(".{rest}") }
}

/// serde names a missing member only in its message: "missing field `name`".
fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.split('`').next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_anywhere_is_refused_with_its_path() {
        let field = |body: &str| parse::<Value>(body.as_bytes()).expect_err("refused").errors.keys().next().cloned();
        assert_eq!(field(r#"{"name": "a\u0000b"}"#).as_deref(), Some("name"));
        assert_eq!(field(r#"{"products": [{"sku": "A"}, {"sku": "\u0000"}]}"#).as_deref(), Some("products[1].sku"));
        assert_eq!(field(r#"[["x", "\u0000"]]"#).as_deref(), Some("[0][1]"));
        assert_eq!(field(r#"{"a\u0000": 1}"#).as_deref(), Some("a\\u0000"));
        assert_eq!(field(r#"{"name": "\\\u0000"}"#).as_deref(), Some("name"), "an escaped backslash, then NUL");
    }

    #[derive(Debug, serde::Deserialize)]
    struct Counted {
        n: i64,
        ratio: Option<f64>,
    }

    #[test]
    fn a_whole_number_with_a_fraction_reads_as_the_integer() {
        let read: Counted = parse(br#"{"n": 48.0, "ratio": 0.5}"#).expect("whole");
        assert_eq!((read.n, read.ratio), (48, Some(0.5)));
        let refused = parse::<Counted>(br#"{"n": 4.5}"#).expect_err("a fraction");
        assert!(refused.errors.contains_key("n"), "{refused:?}");
    }

    #[test]
    fn a_body_is_an_object() {
        for body in ["[null, null]", "3", "\"x\"", "null"] {
            let refused = parse::<Value>(body.as_bytes()).expect_err(body);
            assert!(refused.errors.contains_key("body"), "{body}: {refused:?}");
        }
        assert!(parse::<Value>(b"  {}").is_ok());
        assert!(parse::<Value>(b"[").expect_err("malformed").message.contains("not valid JSON"));
    }

    #[test]
    fn text_that_only_looks_like_a_nul_escape_is_kept() {
        let value: Value = parse(br#"{"name": "\\u0000", "n": "u0000"}"#).expect("plain text");
        assert_eq!(value["name"], "\\u0000");
        assert!(!has_nul_escape(br#""\\u0000""#));
        assert!(has_nul_escape(br#""\u0000""#));
    }
}
