//! What a chat message says, kept on its row: `template_params` for a template, `metadata`'s
//! `interactive`, `reaction` and `reply_to` members, `media_type`/`media_url` for media, and the
//! body otherwise. Dispatch rebuilds the provider's content from the row, so a queued message
//! needs nothing beside it.

use providers::ChatContent;
use serde_json::{Value, json};

use crate::messages::Message;

/// The row's members for `content`: (`metadata`, `template_params`).
pub fn stored(content: &ChatContent, reply_to: Option<&str>) -> (Option<Value>, Option<Value>) {
    let mut metadata = serde_json::Map::new();
    metadata.insert("message_type".into(), json!(content.kind()));
    let mut template = None;
    match content {
        ChatContent::Template { name, language, components } => {
            template = Some(json!({"name": name, "language": language, "components": components}));
        }
        ChatContent::Interactive { interactive } => {
            metadata.insert("interactive".into(), interactive.clone());
        }
        ChatContent::Reaction { message_id, emoji } => {
            metadata.insert("reaction".into(), json!({"message_id": message_id, "emoji": emoji}));
        }
        ChatContent::Text { .. } | ChatContent::Media { .. } => {}
    }
    if let Some(reply_to) = reply_to {
        metadata.insert("reply_to".into(), json!(reply_to));
    }
    (Some(Value::Object(metadata)), template)
}

/// The provider id a message replies to.
pub fn reply_to(message: &Message) -> Option<&str> {
    message.metadata.as_ref()?.get("reply_to")?.as_str()
}

/// The content of a stored outbound chat message.
pub fn of(message: &Message) -> Result<ChatContent, String> {
    let metadata = message.metadata.clone().unwrap_or(Value::Null);
    let kind = metadata["message_type"].as_str().unwrap_or("text");
    let text =
        |v: &Value| v.as_str().map(str::to_owned).ok_or_else(|| format!("a stored {kind} message is incomplete"));
    Ok(match kind {
        "template" => {
            let template = message.template_params.clone().unwrap_or(Value::Null);
            ChatContent::Template {
                name: text(&template["name"])?,
                language: text(&template["language"])?,
                components: template["components"].as_array().cloned().unwrap_or_default(),
            }
        }
        "interactive" => ChatContent::Interactive { interactive: metadata["interactive"].clone() },
        "reaction" => ChatContent::Reaction {
            message_id: text(&metadata["reaction"]["message_id"])?,
            emoji: text(&metadata["reaction"]["emoji"])?,
        },
        "text" => ChatContent::Text { body: message.body.clone() },
        media => ChatContent::Media {
            kind: media.to_owned(),
            link: message.media_url.clone().ok_or_else(|| format!("a stored {media} message has no media_url"))?,
            caption: (!message.body.is_empty() && !matches!(media, "audio" | "sticker")).then(|| message.body.clone()),
        },
    })
}
