//! What a webhook receiver's lead filters mean (`{stages, labels, channels}` on a receiver of
//! lead events): the leads crate owns the rule, the webhooks fan-out applies it to each lead
//! event bound for a receiver with filters (`gateway::catalogue` injects it). A pure function of
//! the stored filters and the event payload, so it needs no database and no service.

use serde_json::Value;

/// Whether a lead event (its payload, `{lead: {...}, ...}`) passes a receiver's filters: each
/// non-empty list must name the lead as it is after the change — its stage (exactly), one of
/// its labels (by name, any case), its source channel (any case). No filters, `{}` and empty
/// lists pass everything.
///
/// ```
/// use serde_json::json;
/// let lead = json!({"lead": {"stage": "won", "labels": [{"name": "VIP"}], "source_channel": "sms"}});
/// assert!(leads::filters::matches(&json!({"stages": ["won"], "labels": ["vip"]}), &lead));
/// assert!(!leads::filters::matches(&json!({"channels": ["whatsapp"]}), &lead));
/// ```
pub fn matches(filters: &Value, payload: &Value) -> bool {
    if filters.is_null() {
        return true;
    }
    let lead = payload.get("lead").unwrap_or(&Value::Null);
    let list = |key: &str| -> Vec<&str> {
        filters
            .get(key)
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    let (stages, labels, channels) = (list("stages"), list("labels"), list("channels"));
    let stage = lead.get("stage").and_then(Value::as_str);
    if !stages.is_empty() && !stage.is_some_and(|stage| stages.contains(&stage)) {
        return false;
    }
    let channel = lead.get("source_channel").and_then(Value::as_str).map(str::to_lowercase);
    if !channels.is_empty() && !channel.is_some_and(|channel| channels.iter().any(|c| c.to_lowercase() == channel)) {
        return false;
    }
    if !labels.is_empty() {
        let names: Vec<String> = lead
            .get("labels")
            .and_then(Value::as_array)
            .map(|items| {
                items.iter().filter_map(|l| l.get("name").and_then(Value::as_str)).map(str::to_lowercase).collect()
            })
            .unwrap_or_default();
        if !labels.iter().any(|wanted| names.contains(&wanted.to_lowercase())) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::matches;

    fn lead(stage: &str, labels: &[&str], channel: Option<&str>) -> Value {
        let labels: Vec<Value> = labels.iter().map(|name| json!({"id": 1, "name": name, "color": "#000"})).collect();
        json!({"lead": {"stage": stage, "labels": labels, "source_channel": channel}})
    }

    #[test]
    fn no_filters_and_empty_lists_pass_everything() {
        let any = lead("new", &[], None);
        for filters in [Value::Null, json!({}), json!({"stages": [], "labels": [], "channels": []})] {
            assert!(matches(&filters, &any), "{filters}");
        }
    }

    #[test]
    fn stages_match_exactly() {
        let filters = json!({"stages": ["won", "lost"]});
        assert!(matches(&filters, &lead("won", &[], None)));
        assert!(!matches(&filters, &lead("new", &[], None)));
        assert!(!matches(&filters, &lead("Won", &[], None)));
        assert!(!matches(&filters, &json!({"lead": {}})), "no stage");
    }

    #[test]
    fn labels_match_by_name_in_any_case() {
        let filters = json!({"labels": ["vip"]});
        assert!(matches(&filters, &lead("new", &["Repeat", "vIp"], None)));
        assert!(!matches(&filters, &lead("new", &["Other"], None)));
        assert!(!matches(&filters, &lead("new", &[], None)));
        assert!(!matches(&filters, &json!({"lead": {"labels": ["vip"]}})), "labels are objects");
    }

    #[test]
    fn channels_match_the_source_channel_in_any_case() {
        let filters = json!({"channels": ["WhatsApp"]});
        assert!(matches(&filters, &lead("new", &[], Some("whatsapp"))));
        assert!(!matches(&filters, &lead("new", &[], Some("sms"))));
        assert!(!matches(&filters, &lead("new", &[], None)));
    }

    #[test]
    fn every_non_empty_list_must_match() {
        let filters = json!({"stages": ["won"], "labels": ["VIP"], "channels": []});
        assert!(matches(&filters, &lead("won", &["vip"], Some("sms"))));
        assert!(!matches(&filters, &lead("won", &["other"], Some("sms"))));
        assert!(!matches(&filters, &lead("new", &["vip"], Some("sms"))));
    }
}
