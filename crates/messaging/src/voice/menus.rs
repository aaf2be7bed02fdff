//! Menus and agent numbers before a call (the `ivr` and `routing` MCP servers): a menu checked
//! by the rules `POST /calls` applies and walked key by key, so that a model sees what each
//! caller would hear before anyone is called; and the voice numbers calls go out from, in the
//! order the routing policy picks them.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::error::FieldErrors;
use kernel::{Caller, Error, Permission};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::plan::{DEFAULT_VOICEMAIL_SECONDS, Menu, MenuOption};
use super::requests::check_ivr;
use crate::schema::{channels, senders};

/// A menu to check: the same `ivr` member `POST /calls` takes.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MenuCheckBody {
    pub ivr: Menu,
}

/// A checked menu, walked: every key path and what it leads to.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MenuWalk {
    /// One entry per option, depth first, keys in order.
    pub paths: Vec<MenuPath>,
    /// Menus deep, counting the top one (at most 3).
    pub depth: usize,
    /// The numbers a caller may be put through to, each once.
    pub transfer_numbers: Vec<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MenuPath {
    /// The keys pressed from the top menu, joined by `.` (`2.1`: 2, then 1 in the menu 2 opens).
    pub keys: String,
    /// `say`, `play`, `voicemail`, `transfer` or `menu`.
    pub action: &'static str,
    /// What is spoken or played, the voicemail's prompt and longest seconds, the numbers tried,
    /// or the next menu's prompt.
    pub detail: String,
}

/// A voice number calls can go out from (`sender_id` of the calls tools and routes).
#[derive(Debug, Clone, Serialize, ToSchema, Queryable)]
pub struct VoiceNumber {
    pub value: String,
    pub label: Option<String>,
    /// The channel's code.
    pub channel: String,
    /// The number a call without `sender_id` goes out from.
    #[diesel(deserialize_as = bool)]
    pub default: bool,
}

fn walk(menu: &Menu, prefix: &str, depth: usize, out: &mut MenuWalk) {
    out.depth = out.depth.max(depth);
    for (key, option) in &menu.options {
        let keys = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        let MenuOption { say, play, voicemail, transfer, menu: next } = option;
        let (action, detail) = if let Some(text) = say {
            ("say", text.clone())
        } else if let Some(url) = play {
            ("play", url.clone())
        } else if let Some(voicemail) = voicemail {
            let seconds = voicemail.max_seconds.unwrap_or(DEFAULT_VOICEMAIL_SECONDS);
            ("voicemail", format!("{} (up to {seconds} s)", voicemail.prompt.as_deref().unwrap_or("After the beep.")))
        } else if let Some(transfer) = transfer {
            for number in &transfer.numbers {
                if !out.transfer_numbers.contains(number) {
                    out.transfer_numbers.push(number.clone());
                }
            }
            ("transfer", transfer.numbers.join(", "))
        } else if let Some(next) = next {
            ("menu", next.prompt.clone())
        } else {
            continue;
        };
        out.paths.push(MenuPath { keys: keys.clone(), action, detail });
        if let Some(next) = next {
            walk(next, &keys, depth + 1, out);
        }
    }
}

impl crate::MessagingService {
    /// A menu checked as `POST /calls` checks its `ivr` (422 naming the member), then walked.
    /// Nobody is called and nothing is written.
    pub fn check_menu(&self, caller: &Caller, body: MenuCheckBody) -> Result<MenuWalk, Error> {
        caller.require(Permission::MESSAGES_VIEW)?;
        let mut errors = FieldErrors::default();
        let menu = check_ivr(&mut errors, body.ivr, &caller.calling_code);
        errors.finish()?;
        let mut out = MenuWalk { paths: Vec::new(), depth: 0, transfer_numbers: Vec::new() };
        walk(&menu, "", 1, &mut out);
        Ok(out)
    }

    /// The account's approved numbers on active voice channels, in the order the routing policy
    /// tries them: the first is where a call without `sender_id` goes out from.
    pub async fn voice_numbers(&self, caller: &Caller) -> Result<Vec<VoiceNumber>, Error> {
        caller.require(Permission::MESSAGES_VIEW)?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let rows: Vec<(String, Option<String>, String)> = senders::table
            .inner_join(channels::table)
            .filter(senders::tenant_id.eq(tenant.0))
            .filter(senders::kind.eq("phone_number"))
            .filter(senders::status.eq("approved"))
            .filter(channels::kind.eq("voice"))
            .filter(channels::status.eq("active"))
            .order((channels::priority, channels::id, senders::id))
            .select((senders::value, senders::label, channels::code))
            .load(&mut conn)
            .await?;
        Ok(rows
            .into_iter()
            .enumerate()
            .map(|(i, (value, label, channel))| VoiceNumber { value, label, channel, default: i == 0 })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::voice::plan::{Connect, Voicemail};

    fn option(f: impl FnOnce(&mut MenuOption)) -> MenuOption {
        let mut option = MenuOption::default();
        f(&mut option);
        option
    }

    #[test]
    fn a_menu_is_walked_depth_first_with_every_transfer_number_once() {
        let sales = Connect { numbers: vec!["+255754000111".into()], greeting: None, record: false };
        let inner = Menu {
            prompt: "Press 1 for orders.".into(),
            options: BTreeMap::from([("1".into(), option(|o| o.transfer = Some(sales.clone())))]),
            timeout_seconds: None,
            attempts: None,
        };
        let top = Menu {
            prompt: "Welcome.".into(),
            options: BTreeMap::from([
                ("1".into(), option(|o| o.say = Some("We open at eight.".into()))),
                ("2".into(), option(|o| o.menu = Some(Box::new(inner)))),
                ("3".into(), option(|o| o.transfer = Some(sales.clone()))),
                ("9".into(), option(|o| o.voicemail = Some(Voicemail { prompt: None, max_seconds: Some(30) }))),
            ]),
            timeout_seconds: None,
            attempts: None,
        };
        let mut out = MenuWalk { paths: Vec::new(), depth: 0, transfer_numbers: Vec::new() };
        walk(&top, "", 1, &mut out);
        let paths: Vec<(&str, &str)> = out.paths.iter().map(|p| (p.keys.as_str(), p.action)).collect();
        assert_eq!(paths, [("1", "say"), ("2", "menu"), ("2.1", "transfer"), ("3", "transfer"), ("9", "voicemail")]);
        assert_eq!(out.paths[4].detail, "After the beep. (up to 30 s)");
        assert_eq!((out.depth, out.transfer_numbers.as_slice()), (2, ["+255754000111".to_owned()].as_slice()));
    }
}
