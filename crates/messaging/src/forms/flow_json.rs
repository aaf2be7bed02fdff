//! The provider's form: a checked [`Definition`] written as WhatsApp Flow JSON, one screen per
//! page, for the flow the form is published as.
//!
//! Rules of Flow JSON followed here that are easy to miss:
//!
//! - Screen ids take letters and underscores only (an id with a digit is refused when the flow
//!   is uploaded), so pages are `PAGE_A`, `PAGE_B`, ... rather than `PAGE_1`; see [`screen_id`].
//! - Inputs sit directly in the layout, without a `Form` wrapper (optional since version 4.0),
//!   and are read as `${form.<name>}` on their own screen.
//! - A screen only sees what the screen before handed it: each `navigate` carries every answer
//!   so far in its `payload` (`${form.key}` for this screen's inputs, `${data.key}` for those
//!   passed on to it), and the next screen declares each of them in its `data` block. The last
//!   screen's `complete` payload thus holds every key, and the reply's `response_json` is
//!   exactly what [`read_answers`](super::answers::read_answers) reads.
//! - Photos and documents may only be referenced at the top level of a `complete` (or
//!   `data_exchange`) payload, never passed on by `navigate`; the definition check keeps the
//!   one upload question on the last page, so it goes straight into the `complete` payload.
//! - Since version 6.0 a string property may not be empty, so blank help is left out.
//! - No `routing_model`: it is only needed by flows with a data endpoint, which ours lack.

use serde_json::{Map, Value, json};

use super::definition::{Definition, Question};
use super::question_types::QuestionType;

/// The Flow JSON version written: the newest one, and the one recommended. Nothing here needs
/// more than 5.0 (dates read as `YYYY-MM-DD`), so stepping back only means changing this.
pub const FLOW_JSON_VERSION: &str = "7.3";
/// The footer label of every screen but the last (one language, like the other fixed words).
pub const NEXT_LABEL: &str = "Next";

/// The Flow JSON of a definition that passed [`check`](super::definition::check). A question
/// whose type is not one of the thirteen (which `check` refuses) is left out.
pub fn flow_json(definition: &Definition) -> Value {
    let screens: Vec<Value> = (0..definition.pages.len()).map(|index| screen(definition, index)).collect();
    json!({ "version": FLOW_JSON_VERSION, "screens": screens })
}

/// The id of the screen of page `page_index` (from 0): `PAGE_` and the index in letters, `A`
/// for 0, `Z` for 25, `AA` for 26 (screen ids take no digits).
pub fn screen_id(page_index: usize) -> String {
    let mut letters = Vec::new();
    let mut n = page_index + 1;
    while n > 0 {
        n -= 1;
        letters.push(char::from(b'A' + (n % 26) as u8));
        n /= 26;
    }
    format!("PAGE_{}", letters.iter().rev().collect::<String>())
}

/// The questions of a page that become inputs, with their types.
fn inputs(definition: &Definition, page: usize) -> impl Iterator<Item = (&Question, &'static QuestionType)> {
    definition.pages[page].questions.iter().filter_map(|q| q.question_type().map(|t| (q, t)))
}

fn screen(definition: &Definition, index: usize) -> Value {
    let last = index + 1 == definition.pages.len();
    let earlier: Vec<&Question> = (0..index).flat_map(|p| inputs(definition, p)).map(|(q, _)| q).collect();

    let mut payload = Map::new();
    for question in &earlier {
        payload.insert(question.key.clone(), format!("${{data.{}}}", question.key).into());
    }
    for (question, _) in inputs(definition, index) {
        payload.insert(question.key.clone(), format!("${{form.{}}}", question.key).into());
    }
    let (label, action) = if last {
        (definition.submit_label(), json!({ "name": "complete", "payload": payload }))
    } else {
        let next = json!({ "type": "screen", "name": screen_id(index + 1) });
        (NEXT_LABEL, json!({ "name": "navigate", "next": next, "payload": payload }))
    };

    let mut children: Vec<Value> = inputs(definition, index).map(|(q, t)| component(q, t)).collect();
    children.push(json!({ "type": "Footer", "label": label, "on-click-action": action }));

    let mut screen = Map::new();
    screen.insert("id".into(), screen_id(index).into());
    screen.insert("title".into(), definition.pages[index].title.clone().into());
    if !earlier.is_empty() {
        let data: Map<String, Value> = earlier.iter().map(|q| (q.key.clone(), declaration(q))).collect();
        screen.insert("data".into(), data.into());
    }
    if last {
        screen.insert("terminal".into(), true.into());
        screen.insert("success".into(), true.into());
    }
    screen.insert("layout".into(), json!({ "type": "SingleColumnLayout", "children": children }));
    screen.into()
}

/// How a screen declares an answer passed on to it, typed as its input sends it: option keys
/// as a list for several choices, an opt-in as a boolean, everything else (numbers, dates and
/// yes/no's `"true"`/`"false"` included) as a string. Uploads are never passed on (see the
/// module note), so they need no type here.
fn declaration(question: &Question) -> Value {
    match question.kind.as_str() {
        "multiple_choice" => json!({ "type": "array", "items": { "type": "string" }, "__example__": ["example"] }),
        "agreement" => json!({ "type": "boolean", "__example__": true }),
        _ => json!({ "type": "string", "__example__": "example" }),
    }
}

/// The input a question becomes. A number's `min` and `max` are not in Flow JSON (a number
/// input takes no bounds); they are checked when the answer arrives.
fn component(question: &Question, kind: &QuestionType) -> Value {
    let mut component = Map::new();
    component.insert("type".into(), kind.component.into());
    component.insert("name".into(), question.key.clone().into());
    component.insert("label".into(), question.label.clone().into());
    if let Some(input_type) = kind.input_type {
        component.insert("input-type".into(), input_type.into());
    }
    match kind.component {
        // Pickers take no `required`: a minimum of one file is what makes them required.
        "PhotoPicker" => files(&mut component, "photos", question),
        "DocumentPicker" => files(&mut component, "documents", question),
        _ => {
            component.insert("required".into(), question.required.into());
        }
    }
    if question.kind == "yes_no" {
        // The ids are what `read_answers` turns into a boolean.
        let yes_no = json!([{ "id": "true", "title": "Yes" }, { "id": "false", "title": "No" }]);
        component.insert("data-source".into(), yes_no);
    } else if kind.limits.options_max.is_some() {
        let options = question.options.iter().map(|o| json!({ "id": o.key, "title": o.label })).collect();
        component.insert("data-source".into(), Value::Array(options));
    }
    // Text inputs and the date picker have helper text; choice groups and pickers a
    // description, shown under the label; a dropdown and an opt-in have neither.
    let help_attribute = match kind.component {
        "TextInput" | "TextArea" | "DatePicker" => Some("helper-text"),
        "RadioButtonsGroup" | "CheckboxGroup" | "PhotoPicker" | "DocumentPicker" => Some("description"),
        _ => None,
    };
    let help = question.help.as_deref().map(str::trim).filter(|h| !h.is_empty());
    if let (Some(attribute), Some(help)) = (help_attribute, help) {
        component.insert(attribute.into(), help.into());
    }
    component.into()
}

/// `min-uploaded-<what>` (1 when required, else 0) and `max-uploaded-<what>` (`max_files`).
fn files(component: &mut Map<String, Value>, what: &str, question: &Question) {
    component.insert(format!("min-uploaded-{what}"), u64::from(question.required).into());
    component.insert(format!("max-uploaded-{what}"), question.max_files().into());
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::forms::definition::{Choice, PAGES_MAX, Page, check};
    use crate::forms::menu::{MenuProduct, menu_definition};
    use crate::forms::question_types::QUESTION_TYPES;

    fn question(key: &str, kind: &str) -> Question {
        Question { key: key.into(), kind: kind.into(), label: format!("{key}?"), ..Default::default() }
    }

    fn page(title: &str, questions: Vec<Question>) -> Page {
        Page { title: title.into(), questions }
    }

    fn options(keys: &[&str]) -> Vec<Choice> {
        keys.iter().map(|k| Choice { key: (*k).into(), label: k.to_uppercase() }).collect()
    }

    fn keys(object: &Value) -> Vec<&str> {
        object.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default()
    }

    /// The screen's footer (always its last child).
    fn footer(screen: &Value) -> &Value {
        let children = screen["layout"]["children"].as_array().expect("children");
        children.last().expect("a footer")
    }

    /// What any generated flow must hold, whatever the definition.
    fn assert_valid(flow: &Value) {
        assert_eq!(flow["version"], FLOW_JSON_VERSION);
        let screens = flow["screens"].as_array().expect("screens");
        assert!(!screens.is_empty());
        let ids: Vec<&str> = screens.iter().map(|s| s["id"].as_str().expect("id")).collect();
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len(), "ids are unique");
        for (i, screen) in screens.iter().enumerate() {
            let id = ids[i];
            assert!(id.chars().all(|c| c.is_ascii_uppercase() || c == '_') && id != "SUCCESS", "{id}");
            assert_eq!(screen["layout"]["type"], "SingleColumnLayout");
            let children = screen["layout"]["children"].as_array().expect("children");
            let footers = children.iter().filter(|c| c["type"] == "Footer").count();
            assert_eq!(footers, 1, "{id}: one footer");
            let footer = footer(screen);
            assert_eq!(footer["type"], "Footer");
            let names: HashSet<&str> = children.iter().filter_map(|c| c["name"].as_str()).collect();
            let declared = keys(&screen["data"]);
            let action = &footer["on-click-action"];
            for (key, reference) in action["payload"].as_object().expect("payload") {
                let reference = reference.as_str().expect("a reference");
                if reference == format!("${{form.{key}}}") {
                    assert!(names.contains(key.as_str()), "{id}: no input {key}");
                } else {
                    assert_eq!(reference, format!("${{data.{key}}}"), "{id}");
                    assert!(declared.contains(&key.as_str()), "{id}: {key} not declared");
                }
            }
            let last = i + 1 == screens.len();
            assert_eq!(screen["terminal"] == true, last, "{id}: only the last screen ends the flow");
            if last {
                assert_eq!(action["name"], "complete");
                assert_eq!(screen["success"], true);
            } else {
                assert_eq!(action["name"], "navigate");
                assert_eq!(action["next"], json!({ "type": "screen", "name": ids[i + 1] }));
                // the next screen declares exactly what this one hands it
                assert_eq!(keys(&action["payload"]), keys(&screens[i + 1]["data"]), "{id}");
            }
            // Flow JSON 6.0+: no empty strings in properties
            for child in children {
                for (property, value) in child.as_object().expect("component") {
                    assert!(value.as_str().is_none_or(|s| !s.trim().is_empty()), "{id}: empty {property}");
                }
            }
        }
    }

    #[test]
    fn screen_ids_are_letters_and_underscores() {
        assert_eq!(screen_id(0), "PAGE_A");
        assert_eq!(screen_id(1), "PAGE_B");
        assert_eq!(screen_id(9), "PAGE_J");
        assert_eq!(screen_id(25), "PAGE_Z");
        assert_eq!(screen_id(26), "PAGE_AA");
        assert_eq!(screen_id(27), "PAGE_AB");
        let ids: HashSet<String> = (0..1000).map(screen_id).collect();
        assert_eq!(ids.len(), 1000);
        assert!(ids.iter().all(|id| id.chars().all(|c| c.is_ascii_uppercase() || c == '_')));
        const { assert!(PAGES_MAX <= 26, "every page of a form keeps a one-letter id") };
    }

    #[test]
    fn a_one_page_form_is_one_terminal_screen() {
        let mut name = question("name", "short_text");
        name.required = true;
        let definition =
            Definition { pages: vec![page("About you", vec![name, question("age", "number")])], submit_label: None };
        assert_eq!(check(&definition, None), vec![]);
        let flow = flow_json(&definition);
        assert_valid(&flow);

        let screens = flow["screens"].as_array().expect("screens");
        assert_eq!(screens.len(), 1);
        let screen = &screens[0];
        assert_eq!(screen["id"], "PAGE_A");
        assert_eq!(screen["title"], "About you");
        assert_eq!((&screen["terminal"], &screen["success"]), (&json!(true), &json!(true)));
        assert!(screen.get("data").is_none(), "nothing is passed to the first screen");
        let children = screen["layout"]["children"].as_array().expect("children");
        assert_eq!(children.len(), 3);
        assert_eq!((&children[0]["name"], &children[0]["required"]), (&json!("name"), &json!(true)));
        assert_eq!((&children[1]["name"], &children[1]["required"]), (&json!("age"), &json!(false)));
        assert_eq!(
            footer(screen),
            &json!({
                "type": "Footer",
                "label": "Submit",
                "on-click-action": {"name": "complete", "payload": {"name": "${form.name}", "age": "${form.age}"}}
            })
        );
    }

    #[test]
    fn three_pages_pass_every_answer_on() {
        let mut topics = question("topics", "multiple_choice");
        topics.options = options(&["news", "offers"]);
        let definition = Definition {
            pages: vec![
                page("One", vec![question("name", "short_text"), topics]),
                page("Two", vec![question("born", "date"), question("terms", "agreement")]),
                page("Three", vec![question("happy", "yes_no"), question("id_copy", "document")]),
            ],
            submit_label: Some("Send".into()),
        };
        assert_eq!(check(&definition, None), vec![]);
        let flow = flow_json(&definition);
        assert_valid(&flow);

        let screens = flow["screens"].as_array().expect("screens");
        let ids: Vec<&Value> = screens.iter().map(|s| &s["id"]).collect();
        assert_eq!(ids, [&json!("PAGE_A"), &json!("PAGE_B"), &json!("PAGE_C")]);
        let titles: Vec<&Value> = screens.iter().map(|s| &s["title"]).collect();
        assert_eq!(titles, [&json!("One"), &json!("Two"), &json!("Three")]);
        assert!(screens[0].get("terminal").is_none() && screens[1].get("terminal").is_none());

        let first = &footer(&screens[0]);
        assert_eq!(first["label"], "Next");
        assert_eq!(
            first["on-click-action"],
            json!({
                "name": "navigate",
                "next": {"type": "screen", "name": "PAGE_B"},
                "payload": {"name": "${form.name}", "topics": "${form.topics}"}
            })
        );

        // the second screen declares the first's answers, typed as their inputs send them
        assert_eq!(
            screens[1]["data"],
            json!({
                "name": {"type": "string", "__example__": "example"},
                "topics": {"type": "array", "items": {"type": "string"}, "__example__": ["example"]}
            })
        );
        assert_eq!(
            footer(&screens[1])["on-click-action"]["payload"],
            json!({"name": "${data.name}", "topics": "${data.topics}", "born": "${form.born}", "terms": "${form.terms}"})
        );
        assert_eq!(footer(&screens[1])["on-click-action"]["next"]["name"], "PAGE_C");

        let last = &screens[2];
        assert_eq!(keys(&last["data"]), ["name", "topics", "born", "terms"]);
        assert_eq!(last["data"]["born"]["type"], "string");
        assert_eq!(last["data"]["terms"], json!({"type": "boolean", "__example__": true}));
        let submit = footer(last);
        assert_eq!(submit["label"], "Send");
        assert_eq!(
            submit["on-click-action"],
            json!({
                "name": "complete",
                "payload": {
                    "name": "${data.name}", "topics": "${data.topics}", "born": "${data.born}",
                    "terms": "${data.terms}", "happy": "${form.happy}", "id_copy": "${form.id_copy}"
                }
            })
        );
        // every key reaches the reply
        let all: Vec<&str> = definition.questions().map(|q| q.key.as_str()).collect();
        assert_eq!(keys(&submit["on-click-action"]["payload"]), all);
    }

    /// The component of a one-question form.
    fn component_of(question: Question) -> Value {
        let definition = Definition { pages: vec![page("Page", vec![question])], submit_label: None };
        let flow = flow_json(&definition);
        assert_valid(&flow);
        flow["screens"][0]["layout"]["children"][0].clone()
    }

    #[test]
    fn each_of_the_thirteen_types_becomes_its_component() {
        for kind in QUESTION_TYPES {
            let mut q = question("answer", kind.key);
            q.required = true;
            q.help = Some("Some help".into());
            if kind.limits.options_max.is_some() {
                q.options = options(&["a", "b"]);
            }
            if kind.limits.files_max.is_some() {
                q.max_files = Some(3);
            }
            if kind.limits.min_max {
                q.min = Some(1.0);
                q.max = Some(5.0);
            }
            let c = component_of(q);
            assert_eq!(c["type"], kind.component, "{}", kind.key);
            assert_eq!((&c["name"], &c["label"]), (&json!("answer"), &json!("answer?")), "{}", kind.key);
            assert_eq!(c.get("input-type").and_then(Value::as_str), kind.input_type, "{}", kind.key);
            for bound in ["min", "max", "min-chars", "max-chars"] {
                assert!(c.get(bound).is_none(), "{}: {bound}", kind.key);
            }
            let has = |attribute: &str| c.get(attribute).is_some();
            match kind.component {
                "TextInput" | "TextArea" | "DatePicker" => {
                    assert_eq!(c["helper-text"], "Some help", "{}", kind.key);
                    assert_eq!(c["required"], true, "{}", kind.key);
                    assert!(!has("data-source") && !has("description"), "{}", kind.key);
                }
                "Dropdown" | "RadioButtonsGroup" | "CheckboxGroup" => {
                    assert_eq!(c["required"], true, "{}", kind.key);
                    assert!(!has("helper-text"), "{}", kind.key);
                    assert_eq!(has("description"), kind.component != "Dropdown", "{}", kind.key);
                    let expected = if kind.key == "yes_no" {
                        json!([{"id": "true", "title": "Yes"}, {"id": "false", "title": "No"}])
                    } else {
                        json!([{"id": "a", "title": "A"}, {"id": "b", "title": "B"}])
                    };
                    assert_eq!(c["data-source"], expected, "{}", kind.key);
                }
                "OptIn" => {
                    assert_eq!(c, json!({"type": "OptIn", "name": "answer", "label": "answer?", "required": true}));
                }
                "PhotoPicker" | "DocumentPicker" => {
                    let what = if kind.component == "PhotoPicker" { "photos" } else { "documents" };
                    assert_eq!(c[format!("max-uploaded-{what}")], 3, "{}", kind.key);
                    assert_eq!(c[format!("min-uploaded-{what}")], 1, "{}", kind.key);
                    assert_eq!(c["description"], "Some help", "{}", kind.key);
                    assert!(!has("required") && !has("helper-text"), "{}", kind.key);
                }
                other => panic!("no case for {other}"),
            }
        }
    }

    #[test]
    fn input_types_follow_the_question_type() {
        for (kind, input_type) in [("short_text", "text"), ("number", "number"), ("email", "email"), ("phone", "phone")]
        {
            assert_eq!(component_of(question("a", kind))["input-type"], input_type, "{kind}");
        }
    }

    #[test]
    fn optional_questions_and_blank_help() {
        let mut text = question("a", "long_text");
        text.help = Some("   ".into());
        let c = component_of(text);
        assert_eq!(c["required"], false);
        assert!(c.get("helper-text").is_none(), "an empty string is refused since Flow JSON 6.0");

        let photo = component_of(question("selfie", "photo"));
        assert_eq!((&photo["min-uploaded-photos"], &photo["max-uploaded-photos"]), (&json!(0), &json!(1)));
    }

    #[test]
    fn the_menu_form_is_a_valid_flow() {
        let products = vec![
            MenuProduct { sku: "CHAI-1".into(), name: "Chai".into(), price_minor: 150_000, currency: "TZS".into() },
            MenuProduct {
                sku: "MANDAZI-2".into(),
                name: "Mandazi".into(),
                price_minor: 50_000,
                currency: "TZS".into(),
            },
        ];
        let definition = menu_definition(&products, "en");
        let flow = flow_json(&definition);
        assert_valid(&flow);
        assert!(serde_json::to_string(&flow).is_ok_and(|s| s.contains("\"SingleColumnLayout\"")));

        let screens = flow["screens"].as_array().expect("screens");
        assert_eq!(screens.len(), 3);
        let quantities = screens[0]["layout"]["children"].as_array().expect("children");
        assert_eq!(quantities.len(), 3, "two products and the footer");
        assert_eq!(quantities[0]["type"], "TextInput");
        assert_eq!(quantities[0]["input-type"], "number");
        assert_eq!(quantities[0]["name"], "qty_CHAI_2d_1");
        assert_eq!(quantities[0]["helper-text"], "Chai · TZS 1,500.00");
        assert_eq!(keys(&screens[2]["data"]), ["qty_CHAI_2d_1", "qty_MANDAZI_2d_2", "note"]);
        let confirm = &screens[2]["layout"]["children"][0];
        assert_eq!((&confirm["type"], &confirm["required"]), (&json!("OptIn"), &json!(true)));
        let submit = footer(&screens[2]);
        assert_eq!(submit["label"], "Place order");
        let all: Vec<&str> = definition.questions().map(|q| q.key.as_str()).collect();
        assert_eq!(keys(&submit["on-click-action"]["payload"]), all);
    }
}
