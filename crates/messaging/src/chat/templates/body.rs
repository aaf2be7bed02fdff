//! The create and patch bodies of a template (contract: Chat templates, create fields): the flat
//! description (`body`, `header_text`, `footer`, `buttons[]`, `variable_samples`) or the
//! provider's own `components[]`, which wins when both are sent.

use std::collections::BTreeMap;

use kernel::Error;
use kernel::error::FieldErrors;
use serde::Deserialize;
use serde_json::{Value, json};

/// The categories a template may have.
pub const CATEGORIES: &[&str] = &["utility", "marketing", "authentication"];

/// A button of the flat description.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct TemplateButton {
    /// `url`, `phone` or `quick reply` (`quick_reply` and `phone_number` too).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The button's label (at most 25).
    #[schema(max_length = 25)]
    pub text: Option<String>,
    /// A `url` button's link; may end in a `{{1}}` placeholder.
    pub url: Option<String>,
    /// A `phone` button's number.
    pub phone_number: Option<String>,
    /// The sample of a url button's placeholder (required when the url ends in one).
    pub example: Option<String>,
}

/// `POST /chat/templates`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct TemplateCreate {
    /// Lowercase letters, digits and underscores (at most 191); not slugged.
    #[schema(max_length = 191, pattern = "^[a-z0-9_]+$")]
    pub name: Option<String>,
    /// At most 20; default `en`.
    #[schema(max_length = 20)]
    pub language: Option<String>,
    /// `utility`, `marketing` or `authentication`.
    pub category: Option<String>,
    /// The business account; optional when the workspace has one.
    pub waba_id: Option<String>,
    /// Default true; false saves a draft.
    pub submit: Option<bool>,
    #[schema(max_length = 191)]
    pub display_name: Option<String>,
    /// The message text (at most 1,024) with `{{1}}`, `{{2}}`... placeholders.
    #[schema(max_length = 1024)]
    pub body: Option<String>,
    /// A text header (at most 60), with at most one placeholder.
    #[schema(max_length = 60)]
    pub header_text: Option<String>,
    /// At most 60.
    #[schema(max_length = 60)]
    pub footer: Option<String>,
    pub buttons: Option<Vec<TemplateButton>>,
    /// A sample per placeholder, keyed by its index (`{"1": "Amina"}`).
    #[schema(value_type = Option<Object>)]
    pub variable_samples: Option<BTreeMap<String, Value>>,
    /// The provider's own shape (HEADER, BODY, FOOTER, BUTTONS); wins over the flat fields.
    #[schema(value_type = Option<Vec<Object>>)]
    pub components: Option<Vec<Value>>,
}

/// `PATCH /chat/templates/{id}`: any subset of the create fields; `name`, `language` and
/// `waba_id` cannot change.
pub type TemplatePatch = TemplateCreate;

/// The placeholders (`{{1}}`, `{{name}}`) of a text, in order of first appearance.
pub fn placeholders(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let name = after[..end].trim().to_owned();
        if !name.is_empty() && !found.contains(&name) {
            found.push(name);
        }
        rest = &after[end + 2..];
    }
    found
}

/// The placeholders of a template's components (header and body texts), for `variables[]`.
pub fn variables(components: &[Value]) -> Vec<String> {
    let mut all = Vec::new();
    for component in components {
        let kind = component["type"].as_str().unwrap_or_default().to_ascii_uppercase();
        if kind == "HEADER" || kind == "BODY" {
            for name in placeholders(component["text"].as_str().unwrap_or_default()) {
                if !all.contains(&name) {
                    all.push(name);
                }
            }
        }
    }
    all
}

fn limit(errors: &mut FieldErrors, field: &str, value: Option<&str>, max: usize) {
    if let Some(v) = value {
        if v.chars().count() > max {
            errors.add(field, format!("The {field} may not be greater than {max} characters."));
        } else if v.contains('\0') {
            errors.add(field, format!("The {field} must not contain NUL characters."));
        }
    }
}

/// The name rule: lowercase letters, digits, underscores; never slugged.
pub fn check_name(name: &str) -> Result<(), Error> {
    if name.is_empty()
        || name.chars().count() > 191
        || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(Error::field(
            "name",
            "The name must be 1 to 191 lowercase letters, digits and underscores (it is not slugged for you).",
        ));
    }
    Ok(())
}

pub fn check_category(raw: &str) -> Result<String, Error> {
    let category = raw.trim().to_ascii_lowercase();
    if !CATEGORIES.contains(&category.as_str()) {
        return Err(Error::field("category", "The category must be utility, marketing or authentication."));
    }
    Ok(category)
}

/// Whether the body describes content (flat fields or components).
pub fn describes_content(body: &TemplateCreate) -> bool {
    body.components.is_some()
        || body.body.is_some()
        || body.header_text.is_some()
        || body.footer.is_some()
        || body.buttons.is_some()
        || body.variable_samples.is_some()
}

/// The components a body describes: its own `components[]` (checked), else built from the
/// flat fields (every placeholder with its sample).
pub fn components(body: &TemplateCreate) -> Result<Vec<Value>, Error> {
    if let Some(components) = &body.components {
        check_components(components)?;
        return Ok(components.clone());
    }
    let mut errors = FieldErrors::new();
    limit(&mut errors, "body", body.body.as_deref(), 1_024);
    limit(&mut errors, "header_text", body.header_text.as_deref(), 60);
    limit(&mut errors, "footer", body.footer.as_deref(), 60);
    let text = body.body.as_deref().map(str::trim).filter(|b| !b.is_empty());
    let Some(text) = text else {
        errors.add("body", "A template needs a body (or components with a BODY).");
        return Err(errors.finish().err().unwrap_or_else(|| Error::field("body", "A template needs a body.")));
    };
    let samples = body.variable_samples.clone().unwrap_or_default();
    let sample = |name: &str, errors: &mut FieldErrors| -> Option<String> {
        match samples.get(name) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => {
                errors
                    .add(format!("variable_samples.{name}"), format!("The placeholder {{{{{name}}}}} needs a sample."));
                None
            }
        }
    };
    let mut components = Vec::new();
    if let Some(header) = body.header_text.as_deref().map(str::trim).filter(|h| !h.is_empty()) {
        let names = placeholders(header);
        if names.len() > 1 {
            errors.add("header_text", "A text header has at most one placeholder.");
        }
        let mut component = json!({"type": "HEADER", "format": "TEXT", "text": header});
        let examples: Vec<String> = names.iter().filter_map(|n| sample(n, &mut errors)).collect();
        if !examples.is_empty() {
            component["example"] = json!({"header_text": examples});
        }
        components.push(component);
    }
    let names = placeholders(text);
    let mut component = json!({"type": "BODY", "text": text});
    let examples: Vec<String> = names.iter().filter_map(|n| sample(n, &mut errors)).collect();
    if !examples.is_empty() {
        component["example"] = json!({"body_text": [examples]});
    }
    components.push(component);
    if let Some(footer) = body.footer.as_deref().map(str::trim).filter(|f| !f.is_empty()) {
        components.push(json!({"type": "FOOTER", "text": footer}));
    }
    if let Some(buttons) = body.buttons.as_ref().filter(|b| !b.is_empty()) {
        if buttons.len() > 10 {
            errors.add("buttons", "A template has at most 10 buttons.");
        }
        let mut out = Vec::new();
        for (i, button) in buttons.iter().enumerate() {
            let at = format!("buttons[{i}]");
            let label = button.text.as_deref().map(str::trim).unwrap_or_default();
            if label.is_empty() {
                errors.add(format!("{at}.text"), "Each button needs a text.");
            }
            limit(&mut errors, &format!("{at}.text"), Some(label), 25);
            let kind = button.kind.as_deref().map(|k| k.trim().to_ascii_lowercase().replace(['_', '-'], " "));
            match kind.as_deref() {
                Some("url") => {
                    let url = button.url.as_deref().map(str::trim).unwrap_or_default();
                    if url.is_empty() {
                        errors.add(format!("{at}.url"), "A url button needs a url.");
                    }
                    let mut b = json!({"type": "URL", "text": label, "url": url});
                    if url.trim_end().ends_with("}}") {
                        match button.example.as_deref().map(str::trim).filter(|e| !e.is_empty()) {
                            Some(example) => b["example"] = json!([example]),
                            None => errors
                                .add(format!("{at}.example"), "A url button ending in a placeholder needs an example."),
                        }
                    }
                    out.push(b);
                }
                Some("phone" | "phone number") => {
                    let number = button.phone_number.as_deref().map(str::trim).unwrap_or_default();
                    if number.is_empty() {
                        errors.add(format!("{at}.phone_number"), "A phone button needs a phone_number.");
                    }
                    out.push(json!({"type": "PHONE_NUMBER", "text": label, "phone_number": number}));
                }
                Some("quick reply") => out.push(json!({"type": "QUICK_REPLY", "text": label})),
                _ => errors.add(format!("{at}.type"), "The button type must be url, phone or quick reply."),
            }
        }
        components.push(json!({"type": "BUTTONS", "buttons": out}));
    }
    errors.finish()?;
    Ok(components)
}

/// The provider's shape, as far as the service can tell before the provider looks: known types,
/// a BODY with text, header media with its `example.header_handle`.
fn check_components(components: &[Value]) -> Result<(), Error> {
    let mut errors = FieldErrors::new();
    let mut body = false;
    for (i, component) in components.iter().enumerate() {
        let at = format!("components[{i}]");
        let kind = component["type"].as_str().unwrap_or_default().to_ascii_uppercase();
        match kind.as_str() {
            "BODY" => {
                body = true;
                let text = component["text"].as_str().unwrap_or_default();
                if text.trim().is_empty() {
                    errors.add(format!("{at}.text"), "The BODY needs a text.");
                }
                limit(&mut errors, &format!("{at}.text"), Some(text), 1_024);
            }
            "HEADER" => {
                let format = component["format"].as_str().unwrap_or("TEXT").to_ascii_uppercase();
                if matches!(format.as_str(), "IMAGE" | "VIDEO" | "DOCUMENT")
                    && component["example"]["header_handle"].as_array().is_none_or(|h| h.is_empty())
                {
                    errors.add(format!("{at}.example.header_handle"), "A media header needs example.header_handle.");
                }
            }
            "FOOTER" | "BUTTONS" => {}
            _ => errors.add(format!("{at}.type"), "A component's type is HEADER, BODY, FOOTER or BUTTONS."),
        }
    }
    if !body {
        errors.add("components", "The components need a BODY.");
    }
    errors.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_found_once_in_order() {
        assert_eq!(placeholders("Hi {{1}}, order {{2}} for {{1}} {{ name }}"), ["1", "2", "name"]);
        assert!(placeholders("no {{ placeholder").is_empty());
    }

    #[test]
    fn flat_fields_become_components_with_their_samples() {
        let body = TemplateCreate {
            body: Some("Hi {{1}}, your order {{2}} is ready".into()),
            header_text: Some("Order {{1}}".into()),
            footer: Some("Duka".into()),
            buttons: Some(vec![
                TemplateButton {
                    kind: Some("url".into()),
                    text: Some("Track".into()),
                    url: Some("https://duka.example.com/t/{{1}}".into()),
                    example: Some("DK-1".into()),
                    ..Default::default()
                },
                TemplateButton { kind: Some("quick reply".into()), text: Some("Thanks".into()), ..Default::default() },
            ]),
            variable_samples: Some([("1".to_owned(), json!("Amina")), ("2".to_owned(), json!(1042))].into()),
            ..Default::default()
        };
        let built = components(&body).expect("components");
        assert_eq!(
            built[0],
            json!({"type": "HEADER", "format": "TEXT", "text": "Order {{1}}", "example": {"header_text": ["Amina"]}})
        );
        assert_eq!(built[1]["example"], json!({"body_text": [["Amina", "1042"]]}));
        assert_eq!(built[3]["buttons"][0]["example"], json!(["DK-1"]));
        assert_eq!(built[3]["buttons"][1], json!({"type": "QUICK_REPLY", "text": "Thanks"}));
        assert_eq!(variables(&built), ["1", "2"]);
    }
}
