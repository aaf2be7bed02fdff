//! What a call does, and the next actions for each thing the provider tells about a live call.
//! Pure: the callbacks (and the sandbox's player) store the plan and the call's position and ask
//! [`next`] what to answer, so the same walk serves every provider.

use std::collections::BTreeMap;

use providers::VoiceAction;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// How deep menus may nest; the defaults of a menu and a voicemail.
pub const MAX_MENU_DEPTH: usize = 3;
pub const DEFAULT_MENU_TIMEOUT: u32 = 10;
pub const DEFAULT_MENU_ATTEMPTS: u8 = 2;
pub const DEFAULT_VOICEMAIL_SECONDS: u32 = 120;

/// A call's plan, as stored with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Plan {
    /// The code spoken digit by digit, `repeat` times. The code is blanked when the call ends.
    Otp { code: String, repeat: u8 },
    /// Text spoken, or an audio file played.
    Message { text: Option<String>, audio_url: Option<String> },
    /// Connects the callee to an agent, or runs a menu; then the survey, when asked for.
    Call { connect: Option<Connect>, ivr: Option<Menu>, feedback: Option<Feedback> },
}

/// `connect`: the agent numbers the callee is put through to (the first that answers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Connect {
    /// 1 to 5 agent numbers, tried in order.
    #[schema(min_items = 1, max_items = 5, value_type = Vec<String>)]
    pub numbers: Vec<String>,
    /// Spoken to the callee before connecting (at most 1,000 characters).
    #[serde(default)]
    #[schema(max_length = 1000)]
    pub greeting: Option<String>,
    /// Record the conversation: `call.recording_ready` when the recording is available.
    #[serde(default)]
    pub record: bool,
}

/// An IVR menu: a prompt, then one key picks an option.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Menu {
    /// Spoken while waiting for a key (1 to 1,000 characters).
    #[schema(min_length = 1, max_length = 1000)]
    pub prompt: String,
    /// By key (`0`-`9`, `*`, `#`): what pressing it does.
    #[schema(value_type = Object)]
    pub options: BTreeMap<String, MenuOption>,
    /// Seconds of silence before the prompt counts as unanswered (3 to 60, default 10).
    #[serde(default)]
    #[schema(minimum = 3, maximum = 60)]
    pub timeout_seconds: Option<u32>,
    /// Times the prompt is played when no key or a wrong one is pressed (1 to 3, default 2).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 3)]
    pub attempts: Option<u8>,
}

/// What one key of a menu does: exactly one member.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MenuOption {
    /// Speak this, then end (or ask for feedback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 1000)]
    pub say: Option<String>,
    /// Play this audio file, then end (or ask for feedback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 2048)]
    pub play: Option<String>,
    /// Record a voicemail: `call.recording_ready` carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voicemail: Option<Voicemail>,
    /// Put the callee through to these numbers (1 to 5), recording when `record`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<Connect>,
    /// Another menu (menus nest three deep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(no_recursion, value_type = Object)]
    pub menu: Option<Box<Menu>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Voicemail {
    /// Spoken before the beep (at most 1,000 characters).
    #[serde(default)]
    #[schema(max_length = 1000)]
    pub prompt: Option<String>,
    /// The longest recording, 5 to 300 seconds (default 120).
    #[serde(default)]
    #[schema(minimum = 5, maximum = 300)]
    pub max_seconds: Option<u32>,
}

/// The post-call survey: a 1 to 5 key press, `call.feedback_ready` when answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Feedback {
    /// Spoken to ask for the score (at most 1,000 characters); a standard question when absent.
    #[serde(default)]
    #[schema(max_length = 1000)]
    pub prompt: Option<String>,
}

/// What the provider told about a live call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// It was answered: the first question.
    Answered,
    /// The keys pressed at the last prompt (`None`: none before the timeout).
    Digits(Option<String>),
    /// The voicemail was recorded here.
    Recording(String),
}

/// Where a call is, as stored: `None` before it is answered.
pub const DONE: &str = "done";
pub const VOICEMAIL: &str = "voicemail";
pub const FEEDBACK: &str = "feedback";
/// A menu's position: `menu:` then the keys that led to it, joined by `.` (`menu:` is the top).
const MENU: &str = "menu:";

/// The answer to one callback: actions, where the call is after them, and what it learnt.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Next {
    pub actions: Vec<VoiceAction>,
    pub position: String,
    pub attempts: i16,
    /// A score of the survey, 1 to 5.
    pub feedback: Option<i16>,
    /// A voicemail's address.
    pub recording: Option<String>,
    /// Whether this was the first answer (the call was just picked up).
    pub answered: bool,
}

/// The words of one language.
struct Words {
    code_is: &'static str,
    again: &'static str,
    not_an_option: &'static str,
    goodbye: &'static str,
    rate: &'static str,
    thanks: &'static str,
}

fn words(language: &str) -> &'static Words {
    const EN: Words = Words {
        code_is: "Your verification code is",
        again: "Again, your code is",
        not_an_option: "Sorry, that is not an option.",
        goodbye: "Goodbye.",
        rate: "Please rate this call from 1 to 5, where 5 is best.",
        thanks: "Thank you.",
    };
    const SW: Words = Words {
        code_is: "Msimbo wako wa uthibitisho ni",
        again: "Narudia, msimbo wako ni",
        not_an_option: "Samahani, chaguo hilo halipo.",
        goodbye: "Kwaheri.",
        rate: "Tafadhali kadiria simu hii kutoka 1 hadi 5, ambapo 5 ni bora zaidi.",
        thanks: "Asante.",
    };
    if language == "sw" { &SW } else { &EN }
}

/// The OTP's words: each digit apart, so the voice reads digits, not a number.
pub fn otp_text(code: &str, repeat: u8, language: &str) -> String {
    let w = words(language);
    let digits = code.chars().map(String::from).collect::<Vec<_>>().join(", ");
    let mut text = format!("{} {digits}.", w.code_is);
    for _ in 1..repeat {
        text.push_str(&format!(" {} {digits}.", w.again));
    }
    text
}

/// Roughly how long the spoken part of an OTP or a message lasts (0.4 s a word, as text to
/// speech reads): a callee who hung up sooner did not hear it all.
pub fn speaking_seconds(plan: &Plan, language: &str) -> u32 {
    let text = match plan {
        Plan::Otp { code, repeat } => otp_text(code, *repeat, language),
        Plan::Message { text: Some(text), .. } => text.clone(),
        _ => return 0,
    };
    (text.split_whitespace().count() as u32 * 2).div_ceil(5)
}

/// The next actions of a call at `position` (after `attempts` tries there), given what was heard.
pub fn next(plan: &Plan, language: &str, position: Option<&str>, attempts: i16, heard: Heard) -> Next {
    let say = |text: &str| VoiceAction::Say { text: text.to_owned(), language: language.to_owned() };
    let w = words(language);
    let position = match (position, &heard) {
        (None, _) | (_, Heard::Answered) => None,
        (Some(p), _) => Some(p),
    };
    let Some(position) = position else {
        let mut next = first(plan, language);
        next.answered = true;
        return next;
    };
    let feedback = match plan {
        Plan::Call { feedback, .. } => feedback.as_ref(),
        _ => None,
    };
    if position == VOICEMAIL {
        let recording = match heard {
            Heard::Recording(url) => Some(url),
            _ => None,
        };
        return Next { recording, ..ending(vec![], feedback, language) };
    }
    if position == FEEDBACK {
        let score = match heard {
            Heard::Digits(Some(keys)) => keys.trim().parse::<i16>().ok().filter(|s| (1..=5).contains(s)),
            _ => None,
        };
        let last = if score.is_some() { w.thanks } else { w.goodbye };
        return Next { actions: vec![say(last)], position: DONE.to_owned(), feedback: score, ..Next::default() };
    }
    let (Some(path), Plan::Call { ivr: Some(top), .. }) = (position.strip_prefix(MENU), plan) else {
        return Next { position: DONE.to_owned(), ..Next::default() };
    };
    let Some(menu) = menu_at(top, path) else {
        return Next { position: DONE.to_owned(), ..Next::default() };
    };
    let key = match &heard {
        Heard::Digits(Some(keys)) => keys.trim().chars().next().map(String::from),
        _ => None,
    };
    match key.as_deref().and_then(|k| menu.options.get(k).map(|o| (k, o))) {
        Some((key, option)) => chosen(option, &child(path, key), feedback, language),
        None if attempts < i16::from(menu.attempts.unwrap_or(DEFAULT_MENU_ATTEMPTS)) => {
            let mut ask = prompt(menu, language);
            if let VoiceAction::GetDigits { prompt, .. } = &mut ask {
                prompt.insert(0, say(w.not_an_option));
            }
            Next { actions: vec![ask], position: position.to_owned(), attempts: attempts + 1, ..Next::default() }
        }
        None => Next { actions: vec![say(w.goodbye)], position: DONE.to_owned(), ..Next::default() },
    }
}

/// The first answer, once the callee picked up.
fn first(plan: &Plan, language: &str) -> Next {
    let say = |text: &str| VoiceAction::Say { text: text.to_owned(), language: language.to_owned() };
    match plan {
        Plan::Otp { code, repeat } => Next {
            actions: vec![say(&otp_text(code, *repeat, language))],
            position: DONE.to_owned(),
            ..Next::default()
        },
        Plan::Message { text, audio_url } => {
            let action = match (text, audio_url) {
                (_, Some(url)) => VoiceAction::Play { url: url.clone() },
                (text, None) => say(text.as_deref().unwrap_or_default()),
            };
            Next { actions: vec![action], position: DONE.to_owned(), ..Next::default() }
        }
        Plan::Call { ivr: Some(menu), .. } => {
            Next { actions: vec![prompt(menu, language)], position: MENU.to_owned(), attempts: 1, ..Next::default() }
        }
        Plan::Call { connect, feedback, .. } => {
            let actions = connect.as_ref().map(|c| connecting(c, language)).unwrap_or_default();
            ending(actions, feedback.as_ref(), language)
        }
    }
}

/// What pressing a menu's key does.
fn chosen(option: &MenuOption, path: &str, feedback: Option<&Feedback>, language: &str) -> Next {
    let say = |text: &str| VoiceAction::Say { text: text.to_owned(), language: language.to_owned() };
    if let Some(menu) = &option.menu {
        let position = format!("{MENU}{path}");
        return Next { actions: vec![prompt(menu, language)], position, attempts: 1, ..Next::default() };
    }
    if let Some(voicemail) = &option.voicemail {
        let record = VoiceAction::Record {
            prompt: voicemail.prompt.as_deref().map(say).into_iter().collect(),
            max_seconds: voicemail.max_seconds.unwrap_or(DEFAULT_VOICEMAIL_SECONDS),
            finish_on_key: Some('#'),
        };
        return Next { actions: vec![record], position: VOICEMAIL.to_owned(), ..Next::default() };
    }
    let actions = match (&option.say, &option.play, &option.transfer) {
        (Some(text), _, _) => vec![say(text)],
        (_, Some(url), _) => vec![VoiceAction::Play { url: url.clone() }],
        (_, _, Some(transfer)) => connecting(transfer, language),
        _ => vec![],
    };
    ending(actions, feedback, language)
}

/// `actions`, then the survey when the plan asks for one.
fn ending(mut actions: Vec<VoiceAction>, feedback: Option<&Feedback>, language: &str) -> Next {
    let Some(feedback) = feedback else {
        return Next { actions, position: DONE.to_owned(), ..Next::default() };
    };
    let text = feedback.prompt.as_deref().unwrap_or(words(language).rate);
    actions.push(VoiceAction::GetDigits {
        prompt: vec![VoiceAction::Say { text: text.to_owned(), language: language.to_owned() }],
        num_digits: Some(1),
        finish_on_key: None,
        timeout_seconds: DEFAULT_MENU_TIMEOUT,
    });
    Next { actions, position: FEEDBACK.to_owned(), ..Next::default() }
}

fn connecting(connect: &Connect, language: &str) -> Vec<VoiceAction> {
    let greeting = connect.greeting.as_deref().filter(|g| !g.trim().is_empty());
    let greeting = greeting.map(|text| VoiceAction::Say { text: text.to_owned(), language: language.to_owned() });
    let dial = VoiceAction::Dial { numbers: connect.numbers.clone(), record: connect.record, caller_id: None };
    greeting.into_iter().chain([dial]).collect()
}

fn prompt(menu: &Menu, language: &str) -> VoiceAction {
    VoiceAction::GetDigits {
        prompt: vec![VoiceAction::Say { text: menu.prompt.clone(), language: language.to_owned() }],
        num_digits: Some(1),
        finish_on_key: None,
        timeout_seconds: menu.timeout_seconds.unwrap_or(DEFAULT_MENU_TIMEOUT),
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") }
}

/// The menu the keys of `path` lead to from `top`.
fn menu_at<'a>(top: &'a Menu, path: &str) -> Option<&'a Menu> {
    path.split('.').filter(|k| !k.is_empty()).try_fold(top, |menu, key| menu.options.get(key)?.menu.as_deref())
}

/// The plan with an OTP's code blanked, once nobody needs to hear it again.
pub fn forget_code(plan: &mut Plan) {
    if let Plan::Otp { code, .. } = plan {
        *code = "*".repeat(code.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn menu() -> Menu {
        let sub = Menu {
            prompt: "Press 1 for Dar es Salaam.".into(),
            options: [("1".to_owned(), MenuOption { say: Some("Open 8 to 5.".into()), ..Default::default() })].into(),
            timeout_seconds: None,
            attempts: Some(1),
        };
        Menu {
            prompt: "Press 1 for hours, 2 to leave a message, 3 for an agent.".into(),
            options: [
                ("1".to_owned(), MenuOption { menu: Some(Box::new(sub)), ..Default::default() }),
                ("2".to_owned(), MenuOption { voicemail: Some(Voicemail::default()), ..Default::default() }),
                (
                    "3".to_owned(),
                    MenuOption {
                        transfer: Some(Connect { numbers: vec!["+255700000111".into()], greeting: None, record: true }),
                        ..Default::default()
                    },
                ),
            ]
            .into(),
            timeout_seconds: Some(5),
            attempts: None,
        }
    }

    fn ivr(feedback: bool) -> Plan {
        Plan::Call { connect: None, ivr: Some(menu()), feedback: feedback.then(Feedback::default) }
    }

    fn digits(keys: &str) -> Heard {
        Heard::Digits(Some(keys.to_owned()))
    }

    #[test]
    fn an_otp_is_spoken_digit_by_digit_and_repeated() {
        let plan = Plan::Otp { code: "4821".into(), repeat: 2 };
        let next = next(&plan, "en", None, 0, Heard::Answered);
        assert!(next.answered);
        assert_eq!(next.position, DONE);
        let [VoiceAction::Say { text, .. }] = next.actions.as_slice() else { panic!("{:?}", next.actions) };
        assert_eq!(text, "Your verification code is 4, 8, 2, 1. Again, your code is 4, 8, 2, 1.");
        assert!(otp_text("4821", 1, "sw").starts_with("Msimbo wako wa uthibitisho ni 4, 8, 2, 1."));
        assert!(speaking_seconds(&plan, "en") > 4);
    }

    #[test]
    fn a_menu_walks_its_keys_down_to_an_answer() {
        let plan = ivr(false);
        let top = next(&plan, "en", None, 0, Heard::Answered);
        assert_eq!((top.position.as_str(), top.attempts), ("menu:", 1));
        assert!(matches!(top.actions[0], VoiceAction::GetDigits { timeout_seconds: 5, num_digits: Some(1), .. }));
        let sub = next(&plan, "en", Some("menu:"), 1, digits("1"));
        assert_eq!(sub.position, "menu:1");
        let answer = next(&plan, "en", Some("menu:1"), 1, digits("1"));
        assert_eq!(answer.position, DONE);
        assert!(matches!(&answer.actions[..], [VoiceAction::Say { text, .. }] if text == "Open 8 to 5."));
    }

    #[test]
    fn a_wrong_key_asks_again_then_says_goodbye() {
        let plan = ivr(false);
        let again = next(&plan, "en", Some("menu:"), 1, digits("9"));
        assert_eq!((again.position.as_str(), again.attempts), ("menu:", 2));
        let VoiceAction::GetDigits { prompt, .. } = &again.actions[0] else { panic!() };
        assert!(matches!(&prompt[0], VoiceAction::Say { text, .. } if text == "Sorry, that is not an option."));
        let bye = next(&plan, "en", Some("menu:"), 2, Heard::Digits(None));
        assert_eq!(bye.position, DONE);
        // the submenu allows one try only
        assert_eq!(next(&plan, "en", Some("menu:1"), 1, Heard::Digits(None)).position, DONE);
    }

    #[test]
    fn voicemail_then_feedback() {
        let plan = ivr(true);
        let record = next(&plan, "en", Some("menu:"), 1, digits("2"));
        assert_eq!(record.position, VOICEMAIL);
        assert!(matches!(record.actions[0], VoiceAction::Record { max_seconds: 120, finish_on_key: Some('#'), .. }));
        let survey = next(&plan, "en", Some(VOICEMAIL), 0, Heard::Recording("https://r/1.mp3".into()));
        assert_eq!(survey.recording.as_deref(), Some("https://r/1.mp3"));
        assert_eq!(survey.position, FEEDBACK);
        let scored = next(&plan, "en", Some(FEEDBACK), 0, digits("4"));
        assert_eq!((scored.feedback, scored.position.as_str()), (Some(4), DONE));
        assert_eq!(next(&plan, "en", Some(FEEDBACK), 0, digits("7")).feedback, None);
    }

    #[test]
    fn a_transfer_dials_the_agents_with_recording() {
        let next = next(&ivr(false), "en", Some("menu:"), 1, digits("3"));
        let dial = VoiceAction::Dial { numbers: vec!["+255700000111".into()], record: true, caller_id: None };
        assert_eq!(next.actions, vec![dial]);
    }

    #[test]
    fn a_connect_call_greets_then_dials() {
        let connect = Connect { numbers: vec!["+255700000111".into()], greeting: Some("Hello".into()), record: false };
        let plan = Plan::Call { connect: Some(connect), ivr: None, feedback: None };
        let next = next(&plan, "sw", None, 0, Heard::Answered);
        assert_eq!(next.actions.len(), 2);
        assert!(matches!(&next.actions[0], VoiceAction::Say { language, .. } if language == "sw"));
    }

    #[test]
    fn the_code_is_forgotten() {
        let mut plan = Plan::Otp { code: "123456".into(), repeat: 1 };
        forget_code(&mut plan);
        assert_eq!(plan, Plan::Otp { code: "******".into(), repeat: 1 });
    }
}
