//! A form's definition (contract: Forms, "Definition shape") and the checks run on save and
//! on publish. Checks never stop at the first problem: every issue is listed with the path of
//! the field it is about, so an editor can mark them all at once.
//!
//! Unknown fields are accepted and ignored (not refused), so an editor that sends extra
//! presentation fields still saves; they are not kept. Missing text fields read as empty and
//! come back as `required` issues with their path, rather than as one unplaced parse error.
//!
//! Where the contract is silent we chose: a form holds 1 to [`PAGES_MAX`] pages and at most
//! [`QUESTIONS_MAX`] questions, every page holds at least one question, page titles are
//! required and at most [`PAGE_TITLE_MAX`] characters, labels of types other than the five
//! short ones are at most [`LABEL_MAX`](super::question_types::LABEL_MAX), and the key
//! `flow_token` is reserved (the provider's reply carries it beside the answers). Lengths count
//! Unicode scalar values (`char`s), not bytes.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::question_types::{FILES_MAX, QuestionType, question_type};

/// Pages of one form (our choice).
pub const PAGES_MAX: usize = 10;
/// Questions of one form, all pages together (our choice).
pub const QUESTIONS_MAX: usize = 50;
/// A page title (our choice; a narrow phone's header).
pub const PAGE_TITLE_MAX: usize = 30;
/// A question key: letters, digits and `_`, starting with a letter.
pub const KEY_MAX: usize = 64;
/// An option label.
pub const OPTION_LABEL_MAX: usize = 30;
/// A question's help text.
pub const HELP_MAX: usize = 80;
/// The submit button's label.
pub const SUBMIT_LABEL_MAX: usize = 30;
/// The submit button's label when none is given.
pub const DEFAULT_SUBMIT_LABEL: &str = "Submit";
/// The key the provider's reply carries beside the answers; no question may use it.
pub const RESERVED_KEY: &str = "flow_token";

/// `{pages, submit_label}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    #[serde(default)]
    pub pages: Vec<Page>,
    /// Absent means [`DEFAULT_SUBMIT_LABEL`]; see [`Definition::submit_label`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_label: Option<String>,
}

/// One screen of the form.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Page {
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub questions: Vec<Question>,
}

/// One question; `key` is the name its answer is saved as.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Question {
    #[serde(default)]
    pub key: String,
    /// One of the thirteen [`QUESTION_TYPES`](super::question_types::QUESTION_TYPES).
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub label: String,
    #[serde(default)]
    pub required: bool,
    /// Only for `dropdown`, `single_choice` and `multiple_choice`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<Choice>,
    /// Only for `photo` and `document`; 1 to 10, default 1. Signed so a negative number is
    /// reported as an issue rather than failing the whole body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_files: Option<i64>,
    /// Only for `number`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Only for `number`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

/// An option of a choice or dropdown question: its saved `key` and shown `label`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub label: String,
}

/// One problem found in a definition or an answer.
///
/// `code` is one of `required`, `too_long`, `too_many`, `invalid`, `duplicate`, `reserved`,
/// `unknown_type`, `not_allowed`, `out_of_range`, `wrong_page`, `type_changed` (and, for
/// answers, `not_an_option`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    /// Where: `pages[0].questions[2].label`, `submit_label`, or a question key for answers.
    pub path: String,
    pub code: String,
    pub message: String,
}

impl Issue {
    pub fn new(path: impl Into<String>, code: &str, message: impl Into<String>) -> Self {
        Issue { path: path.into(), code: code.to_owned(), message: message.into() }
    }
}

impl Definition {
    /// The submit button's label, [`DEFAULT_SUBMIT_LABEL`] when none is set.
    pub fn submit_label(&self) -> &str {
        self.submit_label.as_deref().unwrap_or(DEFAULT_SUBMIT_LABEL)
    }

    /// Every question, page after page.
    pub fn questions(&self) -> impl Iterator<Item = &Question> {
        self.pages.iter().flat_map(|page| page.questions.iter())
    }
}

impl Question {
    /// Its type, when `type` names one of the thirteen.
    pub fn question_type(&self) -> Option<&'static QuestionType> {
        question_type(&self.kind)
    }

    /// How many files one answer may carry (1 unless set).
    pub fn max_files(&self) -> usize {
        self.max_files.and_then(|n| usize::try_from(n).ok()).unwrap_or(1)
    }

    /// Whether the type takes uploads (`photo`, `document`).
    pub fn is_upload(&self) -> bool {
        self.question_type().is_some_and(|t| t.limits.files_max.is_some())
    }
}

/// Checks a working copy; `published` is the live version, if any, whose question keys must
/// keep their types. An empty list means the definition can be saved and published.
pub fn check(definition: &Definition, published: Option<&Definition>) -> Vec<Issue> {
    let mut issues = Vec::new();
    check_form(definition, &mut issues);
    let mut keys = HashSet::new();
    for (p, page) in definition.pages.iter().enumerate() {
        let path = format!("pages[{p}]");
        text(&mut issues, &format!("{path}.title"), &page.title, PAGE_TITLE_MAX);
        if page.questions.is_empty() {
            issues.push(Issue::new(format!("{path}.questions"), "required", "A page needs at least one question."));
        }
        for (q, question) in page.questions.iter().enumerate() {
            let path = format!("{path}.questions[{q}]");
            check_key(&mut issues, &path, &question.key, &mut keys);
            check_question(&mut issues, &path, question);
        }
    }
    check_uploads(definition, &mut issues);
    if let Some(published) = published {
        check_types_kept(definition, published, &mut issues);
    }
    issues
}

fn check_form(definition: &Definition, issues: &mut Vec<Issue>) {
    if definition.pages.is_empty() {
        issues.push(Issue::new("pages", "required", "A form needs at least one page."));
    }
    if definition.pages.len() > PAGES_MAX {
        issues.push(Issue::new("pages", "too_many", format!("A form holds at most {PAGES_MAX} pages.")));
    }
    if definition.questions().count() > QUESTIONS_MAX {
        let message = format!("A form holds at most {QUESTIONS_MAX} questions.");
        issues.push(Issue::new("pages", "too_many", message));
    }
    if let Some(label) = &definition.submit_label {
        text(issues, "submit_label", label, SUBMIT_LABEL_MAX);
    }
}

/// A required text of at most `max` characters.
fn text(issues: &mut Vec<Issue>, path: &str, value: &str, max: usize) {
    if value.trim().is_empty() {
        issues.push(Issue::new(path, "required", "Required."));
    } else {
        too_long(issues, path, value, max);
    }
}

fn too_long(issues: &mut Vec<Issue>, path: &str, value: &str, max: usize) {
    if value.chars().count() > max {
        issues.push(Issue::new(path, "too_long", format!("At most {max} characters.")));
    }
}

/// Letters, digits and `_`, starting with a letter (ASCII, so it is a safe column name).
pub fn valid_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic()) && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn check_key<'a>(issues: &mut Vec<Issue>, path: &str, key: &'a str, seen: &mut HashSet<&'a str>) {
    let path = format!("{path}.key");
    if key.is_empty() {
        issues.push(Issue::new(path, "required", "Required."));
    } else if !valid_key(key) {
        let message = "Letters, digits and underscores, starting with a letter.";
        issues.push(Issue::new(path, "invalid", message));
    } else if key.chars().count() > KEY_MAX {
        issues.push(Issue::new(path, "too_long", format!("At most {KEY_MAX} characters.")));
    } else if key == RESERVED_KEY {
        issues.push(Issue::new(path, "reserved", format!("`{RESERVED_KEY}` is used by the provider.")));
    } else if !seen.insert(key) {
        issues.push(Issue::new(path, "duplicate", format!("Another question is saved as `{key}`.")));
    }
}

fn check_question(issues: &mut Vec<Issue>, path: &str, question: &Question) {
    if let Some(help) = &question.help {
        too_long(issues, &format!("{path}.help"), help, HELP_MAX);
    }
    let Some(kind) = question.question_type() else {
        // Without a known type only the label's presence can be checked.
        let (code, message) = if question.kind.is_empty() {
            ("required", "Required.".to_owned())
        } else {
            ("unknown_type", format!("`{}` is not a question type.", question.kind))
        };
        issues.push(Issue::new(format!("{path}.type"), code, message));
        if question.label.trim().is_empty() {
            issues.push(Issue::new(format!("{path}.label"), "required", "Required."));
        }
        return;
    };
    text(issues, &format!("{path}.label"), &question.label, kind.limits.label_max);
    check_options(issues, path, question, kind);
    check_max_files(issues, path, question, kind);
    check_bounds(issues, path, question, kind);
}

fn check_options(issues: &mut Vec<Issue>, path: &str, question: &Question, kind: &QuestionType) {
    let path = format!("{path}.options");
    let Some(max) = kind.limits.options_max else {
        if !question.options.is_empty() {
            issues.push(Issue::new(path, "not_allowed", format!("A {} question has no options.", kind.key)));
        }
        return;
    };
    if question.options.is_empty() {
        issues.push(Issue::new(&path, "required", "At least one option."));
    } else if question.options.len() > max {
        issues.push(Issue::new(&path, "too_many", format!("At most {max} options.")));
    }
    let mut keys = HashSet::new();
    for (o, option) in question.options.iter().enumerate() {
        let key_path = format!("{path}[{o}].key");
        if option.key.trim().is_empty() {
            issues.push(Issue::new(key_path, "required", "Required."));
        } else if !keys.insert(option.key.as_str()) {
            issues.push(Issue::new(key_path, "duplicate", format!("Another option is `{}`.", option.key)));
        }
        text(issues, &format!("{path}[{o}].label"), &option.label, OPTION_LABEL_MAX);
    }
}

fn check_max_files(issues: &mut Vec<Issue>, path: &str, question: &Question, kind: &QuestionType) {
    let Some(n) = question.max_files else { return };
    let path = format!("{path}.max_files");
    if kind.limits.files_max.is_none() {
        issues.push(Issue::new(path, "not_allowed", "Only photo and document questions take files."));
    } else if !(1..=FILES_MAX as i64).contains(&n) {
        issues.push(Issue::new(path, "out_of_range", format!("From 1 to {FILES_MAX}.")));
    }
}

fn check_bounds(issues: &mut Vec<Issue>, path: &str, question: &Question, kind: &QuestionType) {
    for (field, value) in [("min", question.min), ("max", question.max)] {
        if value.is_some() && !kind.limits.min_max {
            issues.push(Issue::new(format!("{path}.{field}"), "not_allowed", "Only number questions have bounds."));
        }
    }
    if let (Some(min), Some(max)) = (question.min, question.max)
        && kind.limits.min_max
        && min > max
    {
        issues.push(Issue::new(format!("{path}.max"), "invalid", "The max is below the min."));
    }
}

/// One photo or document question per form, on the last page: the provider uploads files
/// when the form is submitted, which only the last screen does.
fn check_uploads(definition: &Definition, issues: &mut Vec<Issue>) {
    let last = definition.pages.len().saturating_sub(1);
    let mut seen = false;
    for (p, page) in definition.pages.iter().enumerate() {
        for (q, question) in page.questions.iter().enumerate() {
            if !question.is_upload() {
                continue;
            }
            let path = format!("pages[{p}].questions[{q}]");
            if seen {
                let message = "A form holds one photo or document question.";
                issues.push(Issue::new(format!("{path}.type"), "too_many", message));
            }
            if p != last {
                issues.push(Issue::new(path, "wrong_page", "A photo or document question goes on the last page."));
            }
            seen = true;
        }
    }
}

/// A published key is a saved-as name with answers behind it, so its type cannot change.
fn check_types_kept(definition: &Definition, published: &Definition, issues: &mut Vec<Issue>) {
    let live: HashMap<&str, &str> = published.questions().map(|q| (q.key.as_str(), q.kind.as_str())).collect();
    for (p, page) in definition.pages.iter().enumerate() {
        for (q, question) in page.questions.iter().enumerate() {
            if let Some(&was) = live.get(question.key.as_str())
                && was != question.kind
            {
                let message =
                    format!("`{}` was published as {was}; a published question keeps its type.", question.key);
                issues.push(Issue::new(format!("pages[{p}].questions[{q}].type"), "type_changed", message));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn question(key: &str, kind: &str) -> Question {
        Question { key: key.into(), kind: kind.into(), label: "Label".into(), ..Default::default() }
    }

    fn choices(n: usize) -> Vec<Choice> {
        (0..n).map(|i| Choice { key: format!("o{i}"), label: format!("Option {i}") }).collect()
    }

    fn form(questions: Vec<Question>) -> Definition {
        Definition { pages: vec![Page { title: "Page".into(), questions }], submit_label: None }
    }

    /// The (path, code) pairs of the issues, for short assertions.
    fn found(definition: &Definition) -> Vec<(String, String)> {
        check(definition, None).into_iter().map(|i| (i.path, i.code)).collect()
    }

    fn one(path: &str, code: &str) -> Vec<(String, String)> {
        vec![(path.to_owned(), code.to_owned())]
    }

    const Q0: &str = "pages[0].questions[0]";

    #[test]
    fn a_plain_form_passes_and_reads_from_the_contract_shape() {
        let definition: Definition = serde_json::from_value(json!({
            "pages": [{"title": "About you", "questions": [
                {"key": "name", "type": "short_text", "label": "Your name", "required": true, "colour": "red"},
                {"key": "size", "type": "single_choice", "label": "Size", "options": [{"key": "s", "label": "Small"}]},
                {"key": "age", "type": "number", "label": "Age", "min": 0, "max": 120, "help": "In years"}
            ]}],
            "submit_label": "Send",
            "theme": "dark"
        }))
        .expect("definition");
        assert_eq!(check(&definition, None), vec![]);
        assert_eq!(definition.submit_label(), "Send");
        assert_eq!(definition.pages[0].questions[0].kind, "short_text");
        assert!(definition.pages[0].questions[0].required);
        assert!(!definition.pages[0].questions[1].required);
        // unknown fields are dropped, the shape round-trips
        let back = serde_json::to_value(&definition).expect("json");
        assert!(back.get("theme").is_none());
        assert_eq!(back["pages"][0]["questions"][0]["type"], "short_text");
    }

    #[test]
    fn missing_fields_are_placed_issues() {
        let definition: Definition =
            serde_json::from_value(json!({"pages": [{"questions": [{}]}]})).expect("definition");
        assert_eq!(
            found(&definition),
            vec![
                ("pages[0].title".into(), "required".into()),
                ("pages[0].questions[0].key".into(), "required".into()),
                ("pages[0].questions[0].type".into(), "required".into()),
                ("pages[0].questions[0].label".into(), "required".into()),
            ]
        );
    }

    #[test]
    fn pages_one_to_ten_each_with_a_question() {
        assert_eq!(found(&Definition::default()), one("pages", "required"));
        assert_eq!(found(&form(vec![])), one("pages[0].questions", "required"));

        let page =
            |i: usize| Page { title: format!("P{i}"), questions: vec![question(&format!("q{i}"), "short_text")] };
        let ten = Definition { pages: (0..10).map(page).collect(), submit_label: None };
        assert_eq!(found(&ten), vec![]);
        let eleven = Definition { pages: (0..11).map(page).collect(), submit_label: None };
        assert_eq!(found(&eleven), one("pages", "too_many"));
    }

    #[test]
    fn at_most_fifty_questions() {
        let many = |n: usize| form((0..n).map(|i| question(&format!("q{i}"), "short_text")).collect());
        assert_eq!(found(&many(50)), vec![]);
        assert_eq!(found(&many(51)), one("pages", "too_many"));
    }

    #[test]
    fn page_title_at_most_thirty() {
        let mut definition = form(vec![question("a", "short_text")]);
        definition.pages[0].title = "é".repeat(30);
        assert_eq!(found(&definition), vec![]);
        definition.pages[0].title = "é".repeat(31);
        assert_eq!(found(&definition), one("pages[0].title", "too_long"));
        definition.pages[0].title = "  ".into();
        assert_eq!(found(&definition), one("pages[0].title", "required"));
    }

    #[test]
    fn keys_are_named_short_unique_and_not_reserved() {
        for good in ["a", "Name_2", "x_"] {
            assert_eq!(found(&form(vec![question(good, "short_text")])), vec![], "{good}");
        }
        for bad in ["2a", "_a", "a-b", "a b", "naïve"] {
            assert_eq!(found(&form(vec![question(bad, "short_text")])), one(&format!("{Q0}.key"), "invalid"), "{bad}");
        }
        let at = "k".repeat(64);
        assert_eq!(found(&form(vec![question(&at, "short_text")])), vec![]);
        let past = "k".repeat(65);
        assert_eq!(found(&form(vec![question(&past, "short_text")])), one(&format!("{Q0}.key"), "too_long"));
        assert_eq!(found(&form(vec![question("flow_token", "short_text")])), one(&format!("{Q0}.key"), "reserved"));

        // unique across pages
        let definition = Definition {
            pages: vec![
                Page { title: "One".into(), questions: vec![question("name", "short_text")] },
                Page { title: "Two".into(), questions: vec![question("name", "long_text")] },
            ],
            submit_label: None,
        };
        assert_eq!(found(&definition), one("pages[1].questions[0].key", "duplicate"));
    }

    #[test]
    fn type_is_one_of_the_thirteen() {
        assert_eq!(found(&form(vec![question("a", "signature")])), one(&format!("{Q0}.type"), "unknown_type"));
    }

    #[test]
    fn short_labels_at_most_twenty_others_at_most_one_twenty() {
        for kind in ["short_text", "number", "email", "phone"] {
            let mut q = question("a", kind);
            q.label = "ü".repeat(20);
            assert_eq!(found(&form(vec![q.clone()])), vec![], "{kind}");
            q.label = "ü".repeat(21);
            assert_eq!(found(&form(vec![q])), one(&format!("{Q0}.label"), "too_long"), "{kind}");
        }
        let mut dropdown = question("a", "dropdown");
        dropdown.options = choices(2);
        dropdown.label = "d".repeat(20);
        assert_eq!(found(&form(vec![dropdown.clone()])), vec![]);
        dropdown.label = "d".repeat(21);
        assert_eq!(found(&form(vec![dropdown])), one(&format!("{Q0}.label"), "too_long"));

        for kind in ["long_text", "date", "yes_no", "agreement", "photo", "document"] {
            let mut q = question("a", kind);
            q.label = "x".repeat(120);
            assert_eq!(found(&form(vec![q.clone()])), vec![], "{kind}");
            q.label = "x".repeat(121);
            assert_eq!(found(&form(vec![q])), one(&format!("{Q0}.label"), "too_long"), "{kind}");
        }
        let mut q = question("a", "long_text");
        q.label = String::new();
        assert_eq!(found(&form(vec![q])), one(&format!("{Q0}.label"), "required"));
    }

    #[test]
    fn choices_hold_one_to_twenty_options() {
        for kind in ["single_choice", "multiple_choice"] {
            let mut q = question("a", kind);
            assert_eq!(found(&form(vec![q.clone()])), one(&format!("{Q0}.options"), "required"), "{kind}");
            q.options = choices(1);
            assert_eq!(found(&form(vec![q.clone()])), vec![], "{kind}");
            q.options = choices(20);
            assert_eq!(found(&form(vec![q.clone()])), vec![], "{kind}");
            q.options = choices(21);
            assert_eq!(found(&form(vec![q])), one(&format!("{Q0}.options"), "too_many"), "{kind}");
        }
    }

    #[test]
    fn dropdown_holds_one_to_two_hundred_options() {
        let mut q = question("a", "dropdown");
        assert_eq!(found(&form(vec![q.clone()])), one(&format!("{Q0}.options"), "required"));
        q.options = choices(200);
        assert_eq!(found(&form(vec![q.clone()])), vec![]);
        q.options = choices(201);
        assert_eq!(found(&form(vec![q])), one(&format!("{Q0}.options"), "too_many"));
    }

    #[test]
    fn option_keys_unique_and_labels_required_up_to_thirty() {
        let mut q = question("a", "single_choice");
        q.options = vec![
            Choice { key: "x".into(), label: "l".repeat(30) },
            Choice { key: "x".into(), label: "l".repeat(31) },
            Choice { key: "".into(), label: "".into() },
        ];
        assert_eq!(
            found(&form(vec![q])),
            vec![
                (format!("{Q0}.options[1].key"), "duplicate".into()),
                (format!("{Q0}.options[1].label"), "too_long".into()),
                (format!("{Q0}.options[2].key"), "required".into()),
                (format!("{Q0}.options[2].label"), "required".into()),
            ]
        );
    }

    #[test]
    fn options_only_on_choice_types() {
        for kind in ["short_text", "yes_no", "agreement", "number"] {
            let mut q = question("a", kind);
            q.options = choices(2);
            assert_eq!(found(&form(vec![q])), one(&format!("{Q0}.options"), "not_allowed"), "{kind}");
        }
    }

    #[test]
    fn one_upload_question_on_the_last_page() {
        let on_last = Definition {
            pages: vec![
                Page { title: "One".into(), questions: vec![question("name", "short_text")] },
                Page { title: "Two".into(), questions: vec![question("id_copy", "document")] },
            ],
            submit_label: None,
        };
        assert_eq!(found(&on_last), vec![]);

        let mut on_first = on_last.clone();
        on_first.pages.swap(0, 1);
        assert_eq!(found(&on_first), one("pages[0].questions[0]", "wrong_page"));

        let two = form(vec![question("selfie", "photo"), question("id_copy", "document")]);
        assert_eq!(found(&two), one("pages[0].questions[1].type", "too_many"));
    }

    #[test]
    fn max_files_one_to_ten_on_uploads_only() {
        let mut q = question("a", "photo");
        assert_eq!(q.max_files(), 1);
        for n in [1, 10] {
            q.max_files = Some(n);
            assert_eq!(found(&form(vec![q.clone()])), vec![], "{n}");
        }
        assert_eq!(q.max_files(), 10);
        for n in [0, 11, -1] {
            q.max_files = Some(n);
            assert_eq!(found(&form(vec![q.clone()])), one(&format!("{Q0}.max_files"), "out_of_range"), "{n}");
        }
        let mut text = question("a", "short_text");
        text.max_files = Some(1);
        assert_eq!(found(&form(vec![text])), one(&format!("{Q0}.max_files"), "not_allowed"));
    }

    #[test]
    fn min_and_max_only_on_numbers_and_ordered() {
        let mut q = question("a", "number");
        q.min = Some(5.0);
        q.max = Some(5.0);
        assert_eq!(found(&form(vec![q.clone()])), vec![]);
        q.max = Some(4.5);
        assert_eq!(found(&form(vec![q])), one(&format!("{Q0}.max"), "invalid"));

        let mut text = question("a", "short_text");
        text.min = Some(1.0);
        text.max = Some(0.0);
        assert_eq!(
            found(&form(vec![text])),
            vec![(format!("{Q0}.min"), "not_allowed".into()), (format!("{Q0}.max"), "not_allowed".into())]
        );
    }

    #[test]
    fn help_at_most_eighty() {
        let mut q = question("a", "short_text");
        q.help = Some("h".repeat(80));
        assert_eq!(found(&form(vec![q.clone()])), vec![]);
        q.help = Some("h".repeat(81));
        assert_eq!(found(&form(vec![q])), one(&format!("{Q0}.help"), "too_long"));
    }

    #[test]
    fn submit_label_defaults_and_at_most_thirty() {
        let mut definition = form(vec![question("a", "short_text")]);
        assert_eq!(definition.submit_label(), "Submit");
        definition.submit_label = Some("s".repeat(30));
        assert_eq!(found(&definition), vec![]);
        definition.submit_label = Some("s".repeat(31));
        assert_eq!(found(&definition), one("submit_label", "too_long"));
        definition.submit_label = Some(String::new());
        assert_eq!(found(&definition), one("submit_label", "required"));
    }

    #[test]
    fn a_published_key_keeps_its_type() {
        let published = form(vec![question("age", "number"), question("name", "short_text")]);
        // same types, a question dropped and one added: fine
        let kept = form(vec![question("age", "number"), question("city", "short_text")]);
        assert_eq!(check(&kept, Some(&published)), vec![]);
        // `name` becomes long text
        let changed = form(vec![question("age", "number"), question("name", "long_text")]);
        let issues = check(&changed, Some(&published));
        assert_eq!(issues.len(), 1);
        assert_eq!((issues[0].path.as_str(), issues[0].code.as_str()), ("pages[0].questions[1].type", "type_changed"));
        // without the published version the change is not an issue
        assert_eq!(check(&changed, None), vec![]);
    }

    #[test]
    fn issues_serialize_for_the_rest_answer() {
        let issue = Issue::new("pages[0].title", "required", "Required.");
        assert_eq!(
            serde_json::to_value(issue).expect("json"),
            json!({"path": "pages[0].title", "code": "required", "message": "Required."})
        );
    }
}
