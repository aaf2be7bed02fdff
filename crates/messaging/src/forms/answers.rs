//! Reading a submitted form (contract: `form.submitted` payload note): the provider's flow
//! reply (`response_json`, an object keyed by question key, values as the provider sends
//! them) becomes `answers` keyed by question key: choices as keys, several as a list, numbers
//! as numbers, dates `YYYY-MM-DD`, agreements and yes/no as booleans, uploads as file names.
//!
//! Keys the definition does not name are ignored, and so is the provider's `flow_token`. Text
//! is trimmed; email and phone are kept as typed (the provider's input checks them, and a
//! data-table column normalizes them). An empty string, `null` or empty list is no answer.

use std::collections::HashSet;

use serde_json::{Map, Number, Value};
use time::Date;
use time::macros::format_description;

use super::definition::{Definition, Issue, Question, RESERVED_KEY};

/// The answers of one reply, in the definition's order, or every issue found.
pub fn read_answers(definition: &Definition, response: &Value) -> Result<Map<String, Value>, Vec<Issue>> {
    let Some(response) = response.as_object() else {
        return Err(vec![Issue::new("", "invalid", "The reply is not an object.")]);
    };
    let mut answers = Map::new();
    let mut issues = Vec::new();
    for question in definition.questions().filter(|q| q.key != RESERVED_KEY) {
        let given = response.get(&question.key).filter(|v| !is_blank(v));
        match read_one(question, given) {
            Ok(Some(answer)) => {
                answers.insert(question.key.clone(), answer);
            }
            Ok(None) if question.required => {
                issues.push(Issue::new(&question.key, "required", "An answer is required."));
            }
            Ok(None) => {}
            Err(issue) => issues.push(issue),
        }
    }
    if issues.is_empty() { Ok(answers) } else { Err(issues) }
}

/// Phone, email, photo and document answers are shown only with `forms.answers.export`.
pub fn sensitive(question: &Question) -> bool {
    question.question_type().is_some_and(|t| t.sensitive)
}

/// The answers without those of sensitive questions (for holders of `forms.answers.view`
/// only). Keys the definition does not name (a menu answer's order fields) are kept.
pub fn redact(definition: &Definition, answers: &Map<String, Value>) -> Map<String, Value> {
    let hidden: HashSet<&str> = definition.questions().filter(|q| sensitive(q)).map(|q| q.key.as_str()).collect();
    answers.iter().filter(|(key, _)| !hidden.contains(key.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn is_blank(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// One question's answer: `None` when there is none, an issue when it cannot be read.
fn read_one(question: &Question, given: Option<&Value>) -> Result<Option<Value>, Issue> {
    let invalid = |what: &str| Issue::new(&question.key, "invalid", format!("Expected {what}."));
    // An unticked opt-in is often left out of the reply: its answer is still `false`.
    if question.kind == "agreement" {
        let agreed = match given {
            None => false,
            Some(value) => boolean(value).ok_or_else(|| invalid("true or false"))?,
        };
        // A required agreement must be accepted; `false` counts as no answer.
        return Ok((agreed || !question.required).then_some(Value::Bool(agreed)));
    }
    let Some(value) = given else { return Ok(None) };
    let answer = match question.kind.as_str() {
        "short_text" | "long_text" | "email" | "phone" => text(value).ok_or_else(|| invalid("text"))?,
        "number" => number(question, value)?,
        "date" => date(value).ok_or_else(|| invalid("a date (YYYY-MM-DD)"))?,
        "dropdown" | "single_choice" => choice(question, value)?,
        "multiple_choice" => choices(question, value)?,
        "yes_no" => Value::Bool(boolean(value).ok_or_else(|| invalid("true or false"))?),
        "photo" | "document" => uploads(question, value)?,
        // An unchecked definition with an unknown type: nothing sensible to save.
        _ => return Ok(None),
    };
    Ok(Some(answer))
}

fn text(value: &Value) -> Option<Value> {
    match value {
        Value::String(s) => Some(Value::String(s.trim().to_owned())),
        Value::Number(n) => Some(Value::String(n.to_string())),
        _ => None,
    }
}

/// A JSON number or numeric string, as a JSON number (whole numbers as integers), within
/// the question's `min` and `max`.
fn number(question: &Question, value: &Value) -> Result<Value, Issue> {
    let invalid = || Issue::new(&question.key, "invalid", "Expected a number.");
    let number = match value {
        Value::Number(n) if n.is_i64() || n.is_u64() => n.clone(),
        Value::Number(n) => n.as_f64().and_then(whole_or_decimal).ok_or_else(invalid)?,
        Value::String(s) => s.trim().parse::<f64>().ok().and_then(whole_or_decimal).ok_or_else(invalid)?,
        _ => return Err(invalid()),
    };
    let x = number.as_f64().ok_or_else(invalid)?;
    let below = question.min.is_some_and(|min| x < min);
    let above = question.max.is_some_and(|max| x > max);
    if below || above {
        let bound = |b: Option<f64>| b.map_or("any".to_owned(), |b| b.to_string());
        let message = format!("Expected a number from {} to {}.", bound(question.min), bound(question.max));
        return Err(Issue::new(&question.key, "out_of_range", message));
    }
    Ok(Value::Number(number))
}

/// `12.0` is saved as `12`; "NaN" and "inf" parse as floats but are no answers.
fn whole_or_decimal(x: f64) -> Option<Number> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: every whole f64 below is exact
    if x.is_finite() && x.fract() == 0.0 && x.abs() < EXACT {
        Some(Number::from(x as i64))
    } else {
        Number::from_f64(x)
    }
}

/// `YYYY-MM-DD`, or epoch milliseconds (a number or a string of digits) as older flow
/// versions send them.
fn date(value: &Value) -> Option<Value> {
    let iso = format_description!("[year]-[month]-[day]");
    let date = match value {
        Value::String(s) => match s.trim().parse::<i64>() {
            Ok(millis) => from_millis(millis)?,
            Err(_) => Date::parse(s.trim(), iso).ok()?,
        },
        Value::Number(n) => from_millis(n.as_i64()?)?,
        _ => return None,
    };
    Some(Value::String(date.format(iso).ok()?))
}

/// The day of an epoch-millisecond date. The picker sends the chosen day's midnight on the
/// customer's phone, so it lands up to a few hours either side of midnight UTC (21:00 UTC the
/// day before in East Africa); rounding to the nearest UTC midnight recovers the day for any
/// offset short of twelve hours.
fn from_millis(millis: i64) -> Option<Date> {
    const DAY: i64 = 86_400_000;
    const UNIX_EPOCH_JULIAN_DAY: i64 = 2_440_588;
    let days = millis.checked_add(DAY / 2)?.div_euclid(DAY);
    Date::from_julian_day(i32::try_from(UNIX_EPOCH_JULIAN_DAY.checked_add(days)?).ok()?).ok()
}

/// Yes/no and agreements: booleans, or `"true"` / `"false"` as radio ids and opt-ins send.
fn boolean(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

fn not_an_option(question: &Question, key: &str) -> Issue {
    Issue::new(&question.key, "not_an_option", format!("`{key}` is not one of the options."))
}

/// One option key.
fn choice(question: &Question, value: &Value) -> Result<Value, Issue> {
    let Value::String(key) = value else {
        return Err(Issue::new(&question.key, "invalid", "Expected an option key."));
    };
    if question.options.iter().any(|o| &o.key == key) {
        Ok(Value::String(key.clone()))
    } else {
        Err(not_an_option(question, key))
    }
}

/// A list of option keys (a lone key is a list of one), once each, in the options' order.
fn choices(question: &Question, value: &Value) -> Result<Value, Issue> {
    let given: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        one => vec![one],
    };
    let mut picked = HashSet::new();
    for item in given {
        let Value::String(key) = item else {
            return Err(Issue::new(&question.key, "invalid", "Expected a list of option keys."));
        };
        if !question.options.iter().any(|o| &o.key == key) {
            return Err(not_an_option(question, key));
        }
        picked.insert(key.as_str());
    }
    let keys = question.options.iter().filter(|o| picked.contains(o.key.as_str()));
    Ok(Value::Array(keys.map(|o| Value::String(o.key.clone())).collect()))
}

/// Uploaded media objects (`{file_name, media_id, ...}`) as their file names, the media id
/// standing in when a name is missing; at most the question's `max_files`.
fn uploads(question: &Question, value: &Value) -> Result<Value, Issue> {
    let given: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        one => vec![one],
    };
    if given.len() > question.max_files() {
        let message = format!("At most {} files.", question.max_files());
        return Err(Issue::new(&question.key, "too_many", message));
    }
    let name = |file: &Value| {
        let field = |f: &str| file.get(f).and_then(Value::as_str).filter(|s| !s.trim().is_empty());
        field("file_name").or_else(|| field("media_id")).map(|s| Value::String(s.to_owned()))
    };
    let names: Option<Vec<Value>> = given.into_iter().map(name).collect();
    let names = names.ok_or_else(|| Issue::new(&question.key, "invalid", "Expected uploaded files."))?;
    Ok(Value::Array(names))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::forms::definition::{Choice, Page};

    fn question(key: &str, kind: &str) -> Question {
        Question { key: key.into(), kind: kind.into(), label: "Label".into(), ..Default::default() }
    }

    fn form(questions: Vec<Question>) -> Definition {
        Definition { pages: vec![Page { title: "Page".into(), questions }], submit_label: None }
    }

    fn options(keys: &[&str]) -> Vec<Choice> {
        keys.iter().map(|k| Choice { key: (*k).into(), label: k.to_uppercase() }).collect()
    }

    /// The answer to the only question of `definition` when the reply gives it `given`.
    fn answer(question: Question, given: Value) -> Result<Option<Value>, Vec<(String, String)>> {
        let key = question.key.clone();
        read_answers(&form(vec![question]), &json!({ key.clone(): given }))
            .map(|answers| answers.get(&key).cloned())
            .map_err(|issues| issues.into_iter().map(|i| (i.path, i.code)).collect())
    }

    fn issue(key: &str, code: &str) -> Result<Option<Value>, Vec<(String, String)>> {
        Err(vec![(key.to_owned(), code.to_owned())])
    }

    #[test]
    fn text_is_trimmed_and_numbers_become_text() {
        assert_eq!(answer(question("name", "short_text"), json!("  Amina ")), Ok(Some(json!("Amina"))));
        assert_eq!(answer(question("bio", "long_text"), json!("line\nline")), Ok(Some(json!("line\nline"))));
        assert_eq!(answer(question("email", "email"), json!("a@b.co")), Ok(Some(json!("a@b.co"))));
        assert_eq!(answer(question("phone", "phone"), json!(255712345678_u64)), Ok(Some(json!("255712345678"))));
        assert_eq!(answer(question("name", "short_text"), json!({"x": 1})), issue("name", "invalid"));
    }

    #[test]
    fn blank_is_no_answer_and_required_missing_is_an_issue() {
        let mut q = question("name", "short_text");
        for blank in [json!(null), json!(""), json!("   "), json!([])] {
            assert_eq!(answer(q.clone(), blank.clone()), Ok(None), "{blank}");
        }
        q.required = true;
        assert_eq!(answer(q.clone(), json!(" ")), issue("name", "required"));
        let answers = read_answers(&form(vec![q]), &json!({}));
        assert_eq!(answers.map_err(|i| i[0].code.clone()), Err("required".to_owned()));
    }

    #[test]
    fn numbers_are_json_numbers() {
        let q = question("n", "number");
        assert_eq!(answer(q.clone(), json!("42")), Ok(Some(json!(42))));
        assert_eq!(answer(q.clone(), json!(" -3 ")), Ok(Some(json!(-3))));
        assert_eq!(answer(q.clone(), json!("2.5")), Ok(Some(json!(2.5))));
        assert_eq!(answer(q.clone(), json!("12.0")), Ok(Some(json!(12))));
        assert_eq!(answer(q.clone(), json!(7)), Ok(Some(json!(7))));
        assert_eq!(answer(q.clone(), json!(7.25)), Ok(Some(json!(7.25))));
        for bad in [json!("twelve"), json!("NaN"), json!("inf"), json!(true)] {
            assert_eq!(answer(q.clone(), bad.clone()), issue("n", "invalid"), "{bad}");
        }
    }

    #[test]
    fn number_bounds_are_checked_on_arrival() {
        let mut q = question("n", "number");
        q.min = Some(1.0);
        q.max = Some(10.0);
        assert_eq!(answer(q.clone(), json!("1")), Ok(Some(json!(1))));
        assert_eq!(answer(q.clone(), json!("10")), Ok(Some(json!(10))));
        assert_eq!(answer(q.clone(), json!("0.99")), issue("n", "out_of_range"));
        assert_eq!(answer(q.clone(), json!("10.01")), issue("n", "out_of_range"));
        assert_eq!(answer(q.clone(), json!(11)), issue("n", "out_of_range"));
        q.min = None;
        assert_eq!(answer(q, json!(-1000)), Ok(Some(json!(-1000))));
    }

    #[test]
    fn dates_become_iso_days() {
        let q = question("d", "date");
        assert_eq!(answer(q.clone(), json!("2024-05-10")), Ok(Some(json!("2024-05-10"))));
        // midnight in Dar es Salaam (UTC+3) is 21:00 UTC the day before
        assert_eq!(answer(q.clone(), json!("1715288400000")), Ok(Some(json!("2024-05-10"))));
        // midnight UTC, and midnight at UTC-5
        assert_eq!(answer(q.clone(), json!("1715299200000")), Ok(Some(json!("2024-05-10"))));
        assert_eq!(answer(q.clone(), json!(1715317200000_i64)), Ok(Some(json!("2024-05-10"))));
        assert_eq!(answer(q.clone(), json!("0")), Ok(Some(json!("1970-01-01"))));
        assert_eq!(answer(q.clone(), json!("-86400000")), Ok(Some(json!("1969-12-31"))));
        for bad in [json!("2024-02-30"), json!("10/05/2024"), json!("2024-5-1"), json!(true), json!("soon")] {
            assert_eq!(answer(q.clone(), bad.clone()), issue("d", "invalid"), "{bad}");
        }
    }

    #[test]
    fn single_choices_are_option_keys() {
        for kind in ["dropdown", "single_choice"] {
            let mut q = question("size", kind);
            q.options = options(&["s", "m"]);
            assert_eq!(answer(q.clone(), json!("m")), Ok(Some(json!("m"))), "{kind}");
            assert_eq!(answer(q.clone(), json!("M")), issue("size", "not_an_option"), "{kind}");
            assert_eq!(answer(q.clone(), json!(["m"])), issue("size", "invalid"), "{kind}");
        }
    }

    #[test]
    fn multiple_choices_are_lists_of_keys_in_option_order() {
        let mut q = question("toppings", "multiple_choice");
        q.options = options(&["cheese", "olives", "onion"]);
        assert_eq!(answer(q.clone(), json!(["onion", "cheese", "onion"])), Ok(Some(json!(["cheese", "onion"]))));
        assert_eq!(answer(q.clone(), json!("olives")), Ok(Some(json!(["olives"]))));
        assert_eq!(answer(q.clone(), json!(["ham"])), issue("toppings", "not_an_option"));
        assert_eq!(answer(q.clone(), json!([1])), issue("toppings", "invalid"));
    }

    #[test]
    fn yes_no_is_a_boolean() {
        let q = question("ok", "yes_no");
        assert_eq!(answer(q.clone(), json!("true")), Ok(Some(json!(true))));
        assert_eq!(answer(q.clone(), json!("false")), Ok(Some(json!(false))));
        assert_eq!(answer(q.clone(), json!(false)), Ok(Some(json!(false))));
        assert_eq!(answer(q.clone(), json!("maybe")), issue("ok", "invalid"));
        assert_eq!(answer(q, json!(null)), Ok(None));
    }

    #[test]
    fn agreements_are_booleans_and_required_ones_must_be_accepted() {
        let mut q = question("terms", "agreement");
        assert_eq!(answer(q.clone(), json!("true")), Ok(Some(json!(true))));
        assert_eq!(answer(q.clone(), json!(false)), Ok(Some(json!(false))));
        // left out of the reply: not ticked
        assert_eq!(
            read_answers(&form(vec![q.clone()]), &json!({})),
            Ok(Map::from_iter([("terms".into(), json!(false))]))
        );
        q.required = true;
        assert_eq!(answer(q.clone(), json!(true)), Ok(Some(json!(true))));
        assert_eq!(answer(q.clone(), json!("false")), issue("terms", "required"));
        assert_eq!(answer(q, json!(1)), issue("terms", "invalid"));
    }

    #[test]
    fn uploads_are_file_names_up_to_max_files() {
        let mut q = question("receipt", "photo");
        let file = |name: &str| json!({"file_name": name, "media_id": format!("m-{name}"), "cdn_url": "https://x"});
        assert_eq!(answer(q.clone(), json!([file("a.jpg")])), Ok(Some(json!(["a.jpg"]))));
        assert_eq!(answer(q.clone(), json!([file("a.jpg"), file("b.jpg")])), issue("receipt", "too_many"));
        q.max_files = Some(2);
        assert_eq!(answer(q.clone(), json!([file("a.jpg"), file("b.jpg")])), Ok(Some(json!(["a.jpg", "b.jpg"]))));
        assert_eq!(answer(q.clone(), json!([{"media_id": "123"}])), Ok(Some(json!(["123"]))));
        assert_eq!(answer(q.clone(), json!(["a.jpg"])), issue("receipt", "invalid"));
        let document = question("id_copy", "document");
        assert_eq!(answer(document, json!([file("id.pdf")])), Ok(Some(json!(["id.pdf"]))));
    }

    #[test]
    fn unknown_keys_and_the_flow_token_are_ignored_and_order_follows_the_form() {
        let definition = form(vec![question("b", "short_text"), question("a", "number")]);
        let reply = json!({"flow_token": "tok", "a": "1", "extra": "x", "b": "hi"});
        let answers = read_answers(&definition, &reply).expect("answers");
        assert_eq!(Value::Object(answers.clone()), json!({"b": "hi", "a": 1}));
        assert_eq!(answers.keys().collect::<Vec<_>>(), ["b", "a"]);
        assert_eq!(read_answers(&definition, &json!("nope")).map_err(|i| i[0].code.clone()), Err("invalid".into()));
    }

    #[test]
    fn every_issue_is_listed() {
        let mut required = question("name", "short_text");
        required.required = true;
        let definition = form(vec![required, question("age", "number"), question("d", "date")]);
        let issues = read_answers(&definition, &json!({"age": "old", "d": "2024-13-01"})).expect_err("issues");
        let found: Vec<(&str, &str)> = issues.iter().map(|i| (i.path.as_str(), i.code.as_str())).collect();
        assert_eq!(found, [("name", "required"), ("age", "invalid"), ("d", "invalid")]);
    }

    #[test]
    fn sensitive_answers_are_redacted() {
        let kinds = ["short_text", "email", "phone", "photo", "document", "number"];
        let definition = form(kinds.iter().map(|k| question(k, k)).collect());
        let expected = [false, true, true, true, true, false];
        for (q, sensitive_) in definition.questions().zip(expected) {
            assert_eq!(sensitive(q), sensitive_, "{}", q.kind);
        }
        let answers = json!({"short_text": "a", "email": "a@b.co", "phone": "+255", "photo": ["p.jpg"],
            "document": ["d.pdf"], "number": 1, "order_reference": "ORD-1"});
        let Value::Object(answers) = answers else { unreachable!() };
        let shown = redact(&definition, &answers);
        assert_eq!(Value::Object(shown), json!({"short_text": "a", "number": 1, "order_reference": "ORD-1"}));
    }
}
