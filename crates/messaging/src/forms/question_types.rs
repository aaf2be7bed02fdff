//! The thirteen question types of a form (contract: Forms, `GET /chat/forms/question-types`):
//! the provider component each becomes on screen, the data-table column type its answer fits,
//! and its limits. The list is served as is, so the serialized shape is part of the contract.

use serde::Serialize;

/// What a question of one type may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// The longest label, in characters (the provider cuts shorter labels on small inputs).
    pub label_max: usize,
    /// The most options a question may list; `null` when the type takes no options.
    pub options_max: Option<usize>,
    /// The most files one answer may carry; `null` when the type takes no uploads.
    pub files_max: Option<usize>,
    /// Whether `min` and `max` apply (checked when an answer arrives).
    pub min_max: bool,
}

/// One question type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct QuestionType {
    /// The `type` a question names, for example `short_text`.
    #[serde(rename = "type")]
    pub key: &'static str,
    /// The provider (flow) component it becomes: `TextInput`, `DatePicker`, ...
    pub component: &'static str,
    /// The `input-type` of a `TextInput`; absent for other components.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_type: Option<&'static str>,
    /// The data-table column type the answer fits: `text`, `number`, `select`, `file`, ...
    pub column_fit: &'static str,
    /// Answers of this type are shown only with `forms.answers.export`.
    pub sensitive: bool,
    pub limits: Limits,
}

/// Labels of text, number, email, phone and dropdown inputs show at most 20 characters.
pub const SHORT_LABEL_MAX: usize = 20;
/// Every other label (our choice; the provider's widest label, the opt-in's, is 120).
pub const LABEL_MAX: usize = 120;
/// Options of a single or multiple choice question.
pub const CHOICES_MAX: usize = 20;
/// Options of a dropdown.
pub const DROPDOWN_OPTIONS_MAX: usize = 200;
/// Files of one photo or document answer.
pub const FILES_MAX: usize = 10;

const fn limits(label_max: usize) -> Limits {
    Limits { label_max, options_max: None, files_max: None, min_max: false }
}

const fn text_input(
    key: &'static str,
    input_type: &'static str,
    column_fit: &'static str,
    sensitive: bool,
) -> QuestionType {
    QuestionType {
        key,
        component: "TextInput",
        input_type: Some(input_type),
        column_fit,
        sensitive,
        limits: limits(SHORT_LABEL_MAX),
    }
}

const fn other(key: &'static str, component: &'static str, column_fit: &'static str, limits: Limits) -> QuestionType {
    QuestionType { key, component, input_type: None, column_fit, sensitive: false, limits }
}

const fn with_options(label_max: usize, options_max: usize) -> Limits {
    Limits { options_max: Some(options_max), ..limits(label_max) }
}

const fn upload(key: &'static str, component: &'static str) -> QuestionType {
    QuestionType {
        key,
        component,
        input_type: None,
        column_fit: "file",
        sensitive: true,
        limits: Limits { files_max: Some(FILES_MAX), ..limits(LABEL_MAX) },
    }
}

/// The thirteen types, in the order the list route shows them.
pub const QUESTION_TYPES: &[QuestionType] = &[
    text_input("short_text", "text", "text", false),
    other("long_text", "TextArea", "long_text", limits(LABEL_MAX)),
    QuestionType {
        limits: Limits { min_max: true, ..limits(SHORT_LABEL_MAX) },
        ..text_input("number", "number", "number", false)
    },
    text_input("email", "email", "email", true),
    text_input("phone", "phone", "phone", true),
    other("date", "DatePicker", "date", limits(LABEL_MAX)),
    other("dropdown", "Dropdown", "select", with_options(SHORT_LABEL_MAX, DROPDOWN_OPTIONS_MAX)),
    other("single_choice", "RadioButtonsGroup", "select", with_options(LABEL_MAX, CHOICES_MAX)),
    other("multiple_choice", "CheckboxGroup", "multi_select", with_options(LABEL_MAX, CHOICES_MAX)),
    // Two fixed radio buttons (ids `true` and `false`); the answer is a boolean.
    other("yes_no", "RadioButtonsGroup", "boolean", limits(LABEL_MAX)),
    // A tick box; the answer is a boolean.
    other("agreement", "OptIn", "boolean", limits(LABEL_MAX)),
    upload("photo", "PhotoPicker"),
    upload("document", "DocumentPicker"),
];

/// The type named `key`, if it is one of the thirteen.
pub fn question_type(key: &str) -> Option<&'static QuestionType> {
    QUESTION_TYPES.iter().find(|t| t.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirteen_distinct_types() {
        assert_eq!(QUESTION_TYPES.len(), 13);
        for (i, t) in QUESTION_TYPES.iter().enumerate() {
            assert!(QUESTION_TYPES[i + 1..].iter().all(|o| o.key != t.key), "{} twice", t.key);
            assert_eq!(question_type(t.key), Some(t));
        }
        assert_eq!(question_type("signature"), None);
        assert_eq!(question_type("Short_Text"), None);
    }

    #[test]
    fn short_labels_are_the_contracts_five() {
        let short: Vec<&str> = QUESTION_TYPES.iter().filter(|t| t.limits.label_max == 20).map(|t| t.key).collect();
        assert_eq!(short, ["short_text", "number", "email", "phone", "dropdown"]);
    }

    #[test]
    fn options_files_and_bounds_belong_to_their_types() {
        let options = |k| question_type(k).map(|t| t.limits.options_max);
        assert_eq!(options("dropdown"), Some(Some(200)));
        assert_eq!(options("single_choice"), Some(Some(20)));
        assert_eq!(options("multiple_choice"), Some(Some(20)));
        assert_eq!(options("yes_no"), Some(None));
        let with_files: Vec<&str> =
            QUESTION_TYPES.iter().filter(|t| t.limits.files_max == Some(10)).map(|t| t.key).collect();
        assert_eq!(with_files, ["photo", "document"]);
        let bounded: Vec<&str> = QUESTION_TYPES.iter().filter(|t| t.limits.min_max).map(|t| t.key).collect();
        assert_eq!(bounded, ["number"]);
        let sensitive: Vec<&str> = QUESTION_TYPES.iter().filter(|t| t.sensitive).map(|t| t.key).collect();
        assert_eq!(sensitive, ["email", "phone", "photo", "document"]);
    }

    #[test]
    fn serializes_for_the_list_route() {
        let number = serde_json::to_value(question_type("number")).expect("json");
        assert_eq!(
            number,
            serde_json::json!({
                "type": "number", "component": "TextInput", "input_type": "number",
                "column_fit": "number", "sensitive": false,
                "limits": {"label_max": 20, "options_max": null, "files_max": null, "min_max": true}
            })
        );
        let agreement = serde_json::to_value(question_type("agreement")).expect("json");
        assert_eq!(agreement["component"], "OptIn");
        assert_eq!(agreement["column_fit"], "boolean");
        assert!(agreement.get("input_type").is_none());
    }
}
