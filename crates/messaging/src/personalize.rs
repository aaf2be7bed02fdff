//! Campaign personalization (contract: SMS, campaign body — "{{name}}, {{phone}},
//! {{phone_number}}, {{country_code}}, {{cf:<custom_key>}}; unknown variables become empty").

use serde_json::{Map, Value};

/// What one contact contributes to a rendered campaign message.
#[derive(Debug, Clone, Copy)]
pub struct ContactVars<'a> {
    pub name: &'a str,
    /// Calling code, digits only.
    pub country_code: &'a str,
    /// National number, digits only.
    pub phone_number: &'a str,
    pub custom_fields: &'a Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Name,
    /// Country code plus national number, no '+', as the contract's `full_phone_number`.
    Phone,
    PhoneNumber,
    CountryCode,
    Custom(String),
}

/// A campaign message parsed once, rendered per contact (a campaign renders it 100,000 times).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Every complete `{{ ... }}` is a variable (whitespace inside allowed, names
    /// case-sensitive); unknown ones are dropped here so they render empty. Anything else,
    /// such as a lone `{{`, `}}` or `{name}`, stays literal.
    pub fn parse(text: &str) -> Self {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(close) = rest.find("}}") {
            // The innermost opening before the close: "{{ {{name}}" keeps "{{ " literal.
            let Some(open) = rest[..close].rfind("{{") else {
                literal.push_str(&rest[..close + 2]);
                rest = &rest[close + 2..];
                continue;
            };
            literal.push_str(&rest[..open]);
            if let Some(var) = variable(rest[open + 2..close].trim()) {
                if !literal.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut literal)));
                }
                parts.push(var);
            }
            rest = &rest[close + 2..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Self { parts }
    }

    pub fn render(&self, vars: &ContactVars<'_>) -> String {
        let mut out =
            String::with_capacity(self.parts.iter().map(|p| if let Part::Text(t) = p { t.len() } else { 16 }).sum());
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Name => out.push_str(vars.name),
                Part::Phone => {
                    out.push_str(vars.country_code);
                    out.push_str(vars.phone_number);
                }
                Part::PhoneNumber => out.push_str(vars.phone_number),
                Part::CountryCode => out.push_str(vars.country_code),
                Part::Custom(key) => match vars.custom_fields.get(key) {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) => out.push_str(s),
                    // Numbers, booleans, arrays and objects as their compact JSON text.
                    Some(other) => out.push_str(&other.to_string()),
                },
            }
        }
        out
    }

    /// Whether the rendered text depends on the contact; when not, one render serves all.
    pub fn is_personalized(&self) -> bool {
        self.parts.iter().any(|p| !matches!(p, Part::Text(_)))
    }
}

fn variable(name: &str) -> Option<Part> {
    match name {
        "name" => Some(Part::Name),
        "phone" => Some(Part::Phone),
        "phone_number" => Some(Part::PhoneNumber),
        "country_code" => Some(Part::CountryCode),
        _ => name.strip_prefix("cf:").map(|key| Part::Custom(key.trim().to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn fields() -> Map<String, Value> {
        let Value::Object(map) = json!({
            "city": "Arusha",
            "age": 42,
            "ratio": 1.5,
            "vip": true,
            "nothing": null,
            "tags": ["a", "b"],
            "address": {"street": "Main", "no": 1},
        }) else {
            unreachable!("a JSON object literal")
        };
        map
    }

    fn render(text: &str) -> String {
        let custom_fields = fields();
        let vars =
            ContactVars { name: "Asha", country_code: "255", phone_number: "712345678", custom_fields: &custom_fields };
        Template::parse(text).render(&vars)
    }

    #[test]
    fn contact_variables() {
        assert_eq!(render("Hi {{name}}!"), "Hi Asha!");
        assert_eq!(render("{{phone}}"), "255712345678");
        assert_eq!(render("{{phone_number}}"), "712345678");
        assert_eq!(render("{{country_code}}"), "255");
        assert_eq!(render("{{ name }} / {{\tphone_number  }}"), "Asha / 712345678");
    }

    #[test]
    fn custom_fields_by_json_type() {
        assert_eq!(render("{{cf:city}}"), "Arusha");
        assert_eq!(render("{{ cf:city }}|{{cf: city}}"), "Arusha|Arusha");
        assert_eq!(render("{{cf:age}} {{cf:ratio}} {{cf:vip}}"), "42 1.5 true");
        assert_eq!(render("[{{cf:nothing}}][{{cf:missing}}]"), "[][]");
        assert_eq!(render("{{cf:tags}} {{cf:address}}"), r#"["a","b"] {"street":"Main","no":1}"#);
    }

    #[test]
    fn unknown_variables_become_empty() {
        assert_eq!(render("a{{foo}}b"), "ab");
        assert_eq!(render("a{{Name}}b{{NAME}}c{{CF:city}}d{{}}e"), "abcde");
        assert!(!Template::parse("a{{foo}}b").is_personalized());
    }

    #[test]
    fn incomplete_braces_stay_literal() {
        for text in ["{{name", "name}}", "{name}", "{{ name }", "{ name }}", "}}{{", "{{", "}}"] {
            assert_eq!(render(text), text);
        }
        assert_eq!(render("{{ {{name}}"), "{{ Asha");
        assert_eq!(render("{{{name}}}"), "{Asha}");
        assert_eq!(render("}} {{name}} {{"), "}} Asha {{");
    }

    #[test]
    fn adjacent_variables() {
        assert_eq!(render("{{name}}{{phone}}{{cf:city}}"), "Asha255712345678Arusha");
    }

    #[test]
    fn personalized_only_with_contact_variables() {
        assert!(Template::parse("Hi {{name}}").is_personalized());
        assert!(Template::parse("{{cf:x}}").is_personalized());
        assert!(!Template::parse("Hi all {name}").is_personalized());
        assert!(!Template::parse("").is_personalized());
    }

    proptest! {
        #[test]
        fn text_without_double_open_braces_renders_unchanged(
            text in "(\\PC|[{}]){0,60}".prop_filter("no {{", |t| !t.contains("{{"))
        ) {
            prop_assert_eq!(render(&text), text);
        }
    }
}
