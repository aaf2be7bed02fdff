//! Chat groups through the Cloud API's Groups API, against the same local fake of the Graph API:
//! each call's method, path, token and body, the provider's refusals and troubles, and the four
//! group webhook fields with group messages.

use providers::chat_groups::{
    GroupError, GroupPin, GroupRequested, GroupUpdate, JoinRequest, NewGroup, OutboundGroupMessage,
};

use super::*;

const GROUP_ID: &str = "Y2FwaV9ncm91cDoxNzA1NTU1MDEzOToxMjAzNjM0MDQ2OTQyMzM4MjAZD";
const GROUPS_PATH: &str = "/v21.0/106540352242922/groups";
const GROUP_PATH: &str = "/v21.0/Y2FwaV9ncm91cDoxNzA1NTU1MDEzOToxMjAzNjM0MDQ2OTQyMzM4MjAZD";
const INVITE_PATH: &str = "/v21.0/Y2FwaV9ncm91cDoxNzA1NTU1MDEzOToxMjAzNjM0MDQ2OTQyMzM4MjAZD/invite_link";
const JOIN_PATH: &str = "/v21.0/Y2FwaV9ncm91cDoxNzA1NTU1MDEzOToxMjAzNjM0MDQ2OTQyMzM4MjAZD/join_requests";
const PARTICIPANTS_PATH: &str = "/v21.0/Y2FwaV9ncm91cDoxNzA1NTU1MDEzOToxMjAzNjM0MDQ2OTQyMzM4MjAZD/participants";
const LINK: &str = "https://chat.whatsapp.com/Fz3bq7Hn0aC1xYk2";
const TOS_WORDS: &str = "(#131203) Recipient has not accepted our new Terms of Service and Privacy Policy.";

fn ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

fn new_group(description: Option<&'static str>) -> NewGroup<'static> {
    NewGroup {
        phone_number_id: PHONE_NUMBER_ID,
        subject: "Duka la Asha: VIP",
        description,
        join_approval_mode: "approval_required",
    }
}

/// The one request a fake saw: its method and path, that it came as the account, and its body
/// (`Null` without one).
async fn the_request(server: &MockServer, verb: &str, at: &str) -> Value {
    let request = only_request(server).await;
    assert_eq!(request.method.as_str(), verb);
    assert_eq!(request.url.path(), at);
    assert_eq!(header(&request, "authorization"), Some(format!("Bearer {TOKEN}")));
    if request.body.is_empty() {
        return Value::Null;
    }
    assert!(header(&request, "content-type").is_some_and(|c| c.starts_with("application/json")));
    body_of(&request)
}

fn refused(reason: &str) -> GroupError {
    GroupError::Refused { reason: reason.into() }
}

#[tokio::test]
async fn a_group_is_asked_for_and_its_request_id_read() {
    let server = server_on("POST", GROUPS_PATH, ok(json!({"request_id": "B35FB999BF97240A0B2FDFF5574F8297"}))).await;
    let requested = cloud(&server).create_group(new_group(Some("Early offers for regulars"))).await;
    assert_eq!(
        requested,
        Ok(GroupRequested { request_id: "B35FB999BF97240A0B2FDFF5574F8297".into(), scheduled: None })
    );
    assert_eq!(
        the_request(&server, "POST", GROUPS_PATH).await,
        json!({
            "messaging_product": "whatsapp",
            "subject": "Duka la Asha: VIP",
            "description": "Early offers for regulars",
            "join_approval_mode": "approval_required"
        })
    );

    let server = server_on("POST", GROUPS_PATH, ok(json!({"request_id": "R2"}))).await;
    cloud(&server).create_group(new_group(None)).await.expect("requested");
    assert_eq!(
        the_request(&server, "POST", GROUPS_PATH).await,
        json!({"messaging_product": "whatsapp", "subject": "Duka la Asha: VIP", "join_approval_mode": "approval_required"})
    );

    let server = server_on("POST", GROUPS_PATH, ok(json!({"messaging_product": "whatsapp"}))).await;
    let outcome = cloud(&server).create_group(new_group(None)).await;
    assert!(matches!(outcome, Err(GroupError::Failed(SendError::Malformed(_)))), "{outcome:?}");
}

#[tokio::test]
async fn a_refusal_carries_the_providers_code_and_words() {
    let server = server_on(
        "POST",
        GROUPS_PATH,
        graph_error(
            400,
            json!({
                "message": "(#131009) Parameter value is not valid",
                "type": "OAuthException",
                "code": 131009,
                "error_data": {"messaging_product": "whatsapp", "details": "Group subject is too long"},
                "fbtrace_id": "AbC"
            }),
        ),
    )
    .await;
    let outcome = cloud(&server).create_group(new_group(None)).await;
    assert_eq!(outcome, Err(refused("(#131009) Parameter value is not valid: Group subject is too long")));
    assert_eq!(
        outcome.expect_err("refused").to_string(),
        "(#131009) Parameter value is not valid: Group subject is too long"
    );

    let server = server_on(
        "GET",
        INVITE_PATH,
        graph_error(403, json!({"message": "Invalid OAuth access token", "type": "OAuthException", "code": 190})),
    )
    .await;
    assert_eq!(cloud(&server).group_invite_link(GROUP_ID).await, Err(refused("(#190) Invalid OAuth access token")));
}

#[tokio::test]
async fn throttling_server_trouble_and_silence_are_failures() {
    let cases = [
        (500, graph_error(500, json!({"message": "Something went wrong", "code": 131000}))),
        (503, ResponseTemplate::new(503).set_body_string("<html>unavailable</html>")),
        (429, graph_error(429, json!({"message": "Too many requests", "code": 80007}))),
        (400, graph_error(400, json!({"message": "Rate limit hit", "code": 130429}))),
        (400, ResponseTemplate::new(400).set_body_string("<html>bad request</html>")),
    ];
    for (status, response) in cases {
        let server = server_on("POST", GROUPS_PATH, response).await;
        let outcome = cloud(&server).create_group(new_group(None)).await;
        assert_eq!(outcome, Err(GroupError::Failed(SendError::Status { status })));
    }

    let server = server_on("POST", INVITE_PATH, ResponseTemplate::new(502)).await;
    assert_eq!(
        cloud(&server).reset_group_invite_link(GROUP_ID).await,
        Err(GroupError::Failed(SendError::Status { status: 502 }))
    );

    let slow = ok(json!({"request_id": "R"})).set_delay(Duration::from_millis(600));
    let server = server_on("POST", GROUPS_PATH, slow).await;
    let outcome = cloud_with_timeout(&server, Duration::from_millis(200)).create_group(new_group(None)).await;
    assert_eq!(outcome, Err(GroupError::Failed(SendError::Timeout)));
}

#[tokio::test]
async fn settings_are_posted_on_the_group_with_only_what_changes() {
    let server = server_on("POST", GROUP_PATH, ok(json!({"success": true}))).await;
    cloud(&server).update_group(GROUP_ID, Some("VIP customers"), Some("Offers first")).await.expect("updated");
    assert_eq!(
        the_request(&server, "POST", GROUP_PATH).await,
        json!({"messaging_product": "whatsapp", "subject": "VIP customers", "description": "Offers first"})
    );

    let server = server_on("POST", GROUP_PATH, ok(json!({"success": true}))).await;
    cloud(&server).update_group(GROUP_ID, None, Some("Offers first")).await.expect("updated");
    assert_eq!(
        the_request(&server, "POST", GROUP_PATH).await,
        json!({"messaging_product": "whatsapp", "description": "Offers first"})
    );

    let server = server_on("POST", GROUP_PATH, ok(json!({"success": true}))).await;
    cloud(&server).update_group(GROUP_ID, None, None).await.expect("nothing to change");
    assert!(server.received_requests().await.expect("recorded").is_empty());

    let server = server_on("POST", GROUP_PATH, ok(json!({"success": false}))).await;
    let outcome = cloud(&server).update_group(GROUP_ID, Some("x"), None).await;
    assert!(matches!(outcome, Err(GroupError::Failed(SendError::Malformed(_)))), "{outcome:?}");

    let server = server_on(
        "POST",
        GROUP_PATH,
        graph_error(400, json!({"message": "Invalid group subject", "code": 131201, "type": "OAuthException"})),
    )
    .await;
    assert_eq!(
        cloud(&server).update_group(GROUP_ID, Some(""), None).await,
        Err(refused("(#131201) Invalid group subject"))
    );
}

#[tokio::test]
async fn a_group_is_deleted_and_deleting_a_gone_one_is_fine() {
    let server = server_on("DELETE", GROUP_PATH, ok(json!({"success": true}))).await;
    assert_eq!(cloud(&server).delete_group(GROUP_ID).await, Ok(()));
    assert_eq!(the_request(&server, "DELETE", GROUP_PATH).await, Value::Null);

    let gone = [
        ResponseTemplate::new(404),
        graph_error(
            400,
            json!({
                "message": format!("Unsupported delete request. Object with ID '{GROUP_ID}' does not exist, \
                                    cannot be loaded due to missing permissions, or does not support this operation."),
                "type": "GraphMethodException",
                "code": 100,
                "error_subcode": 33
            }),
        ),
        graph_error(400, json!({"message": "Group does not exist", "code": 131212})),
    ];
    for response in gone {
        let server = server_on("DELETE", GROUP_PATH, response).await;
        assert_eq!(cloud(&server).delete_group(GROUP_ID).await, Ok(()));
    }

    let server = server_on(
        "DELETE",
        GROUP_PATH,
        graph_error(400, json!({"message": "The business is not an admin of this group", "code": 131215})),
    )
    .await;
    assert_eq!(
        cloud(&server).delete_group(GROUP_ID).await,
        Err(refused("(#131215) The business is not an admin of this group"))
    );

    let server = server_on("DELETE", GROUP_PATH, ResponseTemplate::new(500)).await;
    assert_eq!(cloud(&server).delete_group(GROUP_ID).await, Err(GroupError::Failed(SendError::Status { status: 500 })));
}

#[tokio::test]
async fn the_invite_link_is_read_and_reset() {
    let server = server_on("GET", INVITE_PATH, ok(json!({"messaging_product": "whatsapp", "invite_link": LINK}))).await;
    assert_eq!(cloud(&server).group_invite_link(GROUP_ID).await, Ok(LINK.to_owned()));
    assert_eq!(the_request(&server, "GET", INVITE_PATH).await, Value::Null);

    let fresh = "https://chat.whatsapp.com/NewLink9";
    let server =
        server_on("POST", INVITE_PATH, ok(json!({"messaging_product": "whatsapp", "invite_link": fresh}))).await;
    assert_eq!(cloud(&server).reset_group_invite_link(GROUP_ID).await, Ok(fresh.to_owned()));
    assert_eq!(the_request(&server, "POST", INVITE_PATH).await, json!({"messaging_product": "whatsapp"}));

    let server = server_on("GET", INVITE_PATH, ok(json!({"messaging_product": "whatsapp"}))).await;
    let outcome = cloud(&server).group_invite_link(GROUP_ID).await;
    assert!(matches!(outcome, Err(GroupError::Failed(SendError::Malformed(_)))), "{outcome:?}");
}

#[tokio::test]
async fn join_requests_are_approved_by_post_and_rejected_by_delete_with_the_refused_ones_read() {
    let ids = vec!["MTY0NjcwNDM1OTU6MTIw".to_owned(), "MTY0NjcwNDM1OTU6MTIx".to_owned()];
    let partial = ResponseTemplate::new(206).set_body_json(json!({
        "messaging_product": "whatsapp",
        "approved_join_requests": ["MTY0NjcwNDM1OTU6MTIw"],
        "failed_join_requests": [{
            "join_request_id": "MTY0NjcwNDM1OTU6MTIx",
            "errors": [{
                "code": 131203,
                "message": TOS_WORDS,
                "title": "Unable to add participant to group",
                "error_data": {"details": "Recipient has not accepted our new Terms of Service and Privacy Policy."}
            }]
        }],
        "errors": [{"code": 131201, "message": "Not all join requests were approved"}]
    }));
    let server = server_on("POST", JOIN_PATH, partial).await;
    let refused = cloud(&server).answer_join_requests(GROUP_ID, &ids, true).await;
    assert_eq!(refused, Ok(vec![("MTY0NjcwNDM1OTU6MTIx".to_owned(), TOS_WORDS.to_owned())]));
    assert_eq!(
        the_request(&server, "POST", JOIN_PATH).await,
        json!({"messaging_product": "whatsapp", "join_requests": ids})
    );

    let all_rejected = ok(json!({"messaging_product": "whatsapp", "rejected_join_requests": ids}));
    let server = server_on("DELETE", JOIN_PATH, all_rejected).await;
    assert_eq!(cloud(&server).answer_join_requests(GROUP_ID, &ids, false).await, Ok(vec![]));
    assert_eq!(
        the_request(&server, "DELETE", JOIN_PATH).await,
        json!({"messaging_product": "whatsapp", "join_requests": ids})
    );

    let server = server_on("POST", JOIN_PATH, ok(json!({}))).await;
    assert_eq!(cloud(&server).answer_join_requests(GROUP_ID, &[], true).await, Ok(vec![]));
    assert!(server.received_requests().await.expect("recorded").is_empty(), "no ids, no call");

    let server = server_on(
        "DELETE",
        JOIN_PATH,
        graph_error(400, json!({"message": "Invalid join request", "code": 131009, "type": "OAuthException"})),
    )
    .await;
    assert_eq!(
        cloud(&server).answer_join_requests(GROUP_ID, &ids, false).await,
        Err(GroupError::Refused { reason: "(#131009) Invalid join request".into() })
    );
}

#[tokio::test]
async fn participants_are_removed_by_their_chat_ids_eight_a_request() {
    let wa_ids: Vec<String> = (0..10).map(|i| format!("25571234560{i}")).collect();
    let server = MockServer::start().await;
    Mock::given(method("DELETE"))
        .and(path(PARTICIPANTS_PATH))
        .and(bearer_token(TOKEN))
        .respond_with(ok(json!({
            "messaging_product": "whatsapp",
            "failed_participants": [
                {"input": "+255712345601", "errors": [{"code": 131208, "message": "Participant is not in the group"}]}
            ]
        })))
        .mount(&server)
        .await;
    let refused = cloud(&server).remove_group_participants(GROUP_ID, &wa_ids).await;
    // The fake refuses the same participant in both requests: in the first, which named it, as we
    // gave it (though the provider wrote it with a +); in the second as the provider wrote it
    let words = "(#131208) Participant is not in the group".to_owned();
    assert_eq!(refused, Ok(vec![("255712345601".to_owned(), words.clone()), ("+255712345601".to_owned(), words)]));
    let requests = server.received_requests().await.expect("recorded");
    assert_eq!(requests.len(), 2);
    let users = |request: &Request| -> Vec<Value> {
        assert_eq!(body_of(request)["messaging_product"], "whatsapp");
        body_of(request)["participants"].as_array().expect("participants").clone()
    };
    assert_eq!(users(&requests[0]), wa_ids[..8].iter().map(|id| json!({"user": id})).collect::<Vec<_>>());
    assert_eq!(users(&requests[1]), wa_ids[8..].iter().map(|id| json!({"user": id})).collect::<Vec<_>>());

    let server = server_on("DELETE", PARTICIPANTS_PATH, ok(json!({"messaging_product": "whatsapp"}))).await;
    assert_eq!(cloud(&server).remove_group_participants(GROUP_ID, &wa_ids[..1]).await, Ok(vec![]));
    assert_eq!(
        the_request(&server, "DELETE", PARTICIPANTS_PATH).await,
        json!({"messaging_product": "whatsapp", "participants": [{"user": "255712345600"}]})
    );

    let server = server_on("DELETE", PARTICIPANTS_PATH, ResponseTemplate::new(503)).await;
    assert_eq!(
        cloud(&server).remove_group_participants(GROUP_ID, &wa_ids[..1]).await,
        Err(GroupError::Failed(SendError::Status { status: 503 }))
    );
}

fn group_message(content: &ChatContent) -> OutboundGroupMessage<'_> {
    OutboundGroupMessage { reference: "msg_01JGRP", phone_number_id: PHONE_NUMBER_ID, group_id: GROUP_ID, content }
}

#[tokio::test]
async fn a_group_message_goes_to_the_group_id_as_a_group_recipient() {
    let server = server_on("POST", MESSAGES_PATH, accepted_answer()).await;
    let content = ChatContent::Text { body: "New stock: https://duka.example.com/new".into() };
    let outcome = cloud(&server).send_group(group_message(&content)).await;
    assert_eq!(outcome, Ok(SendOutcome::Accepted { provider_message_id: WAMID.into(), cost: None, receipts: vec![] }));
    assert_eq!(
        the_request(&server, "POST", MESSAGES_PATH).await,
        json!({
            "messaging_product": "whatsapp",
            "recipient_type": "group",
            "to": GROUP_ID,
            "type": "text",
            "text": {"body": "New stock: https://duka.example.com/new", "preview_url": true},
            "biz_opaque_callback_data": "msg_01JGRP"
        })
    );

    let template = ChatContent::Template { name: "weekly_offers".into(), language: "sw".into(), components: vec![] };
    let server = server_on("POST", MESSAGES_PATH, accepted_answer()).await;
    cloud(&server).send_group(group_message(&template)).await.expect("accepted");
    let body = the_request(&server, "POST", MESSAGES_PATH).await;
    assert_eq!(body["template"], json!({"name": "weekly_offers", "language": {"code": "sw"}}));
    assert_eq!((body["recipient_type"].as_str(), body["to"].as_str()), (Some("group"), Some(GROUP_ID)));

    let server = server_on(
        "POST",
        MESSAGES_PATH,
        graph_error(400, json!({"message": "Group is suspended", "code": 131216, "type": "OAuthException"})),
    )
    .await;
    assert_eq!(
        cloud(&server).send_group(group_message(&content)).await,
        Ok(SendOutcome::Refused { reason: "(#131216) Group is suspended".into() })
    );

    let server = server_on("POST", MESSAGES_PATH, ResponseTemplate::new(500)).await;
    assert_eq!(cloud(&server).send_group(group_message(&content)).await, Err(SendError::Status { status: 500 }));
}

#[tokio::test]
async fn a_message_is_pinned_and_unpinned() {
    let pin = GroupPin {
        phone_number_id: PHONE_NUMBER_ID,
        group_id: GROUP_ID,
        message_id: WAMID,
        pin: true,
        expiration_days: Some(7),
    };
    let server = server_on("POST", MESSAGES_PATH, accepted_answer()).await;
    assert_eq!(cloud(&server).pin_group_message(pin).await, Ok(()));
    assert_eq!(
        the_request(&server, "POST", MESSAGES_PATH).await,
        json!({
            "messaging_product": "whatsapp",
            "recipient_type": "group",
            "to": GROUP_ID,
            "type": "pin",
            "pin": {"type": "pin", "message_id": WAMID, "expiration_days": 7}
        })
    );

    let server = server_on("POST", MESSAGES_PATH, accepted_answer()).await;
    cloud(&server).pin_group_message(GroupPin { expiration_days: None, ..pin }).await.expect("pinned");
    assert_eq!(the_request(&server, "POST", MESSAGES_PATH).await["pin"], json!({"type": "pin", "message_id": WAMID}));

    // An unpin has no expiry, whatever it is given
    let server = server_on("POST", MESSAGES_PATH, accepted_answer()).await;
    cloud(&server).pin_group_message(GroupPin { pin: false, ..pin }).await.expect("unpinned");
    assert_eq!(the_request(&server, "POST", MESSAGES_PATH).await["pin"], json!({"type": "unpin", "message_id": WAMID}));

    let server = server_on(
        "POST",
        MESSAGES_PATH,
        graph_error(400, json!({"message": "Message not found", "code": 131009, "type": "OAuthException"})),
    )
    .await;
    assert_eq!(cloud(&server).pin_group_message(pin).await, Err(refused("(#131009) Message not found")));
}

fn group_change(field: &str, groups: Value) -> Value {
    json!({
        "field": field,
        "value": {"messaging_product": "whatsapp", "metadata": metadata(), "groups": groups}
    })
}

fn group_event(update: GroupUpdate) -> ChatEvent {
    ChatEvent::Group { phone_number_id: PHONE_NUMBER_ID.into(), update }
}

#[test]
fn lifecycle_updates_are_read() {
    let body = delivery(json!([
        group_change(
            "group_lifecycle_update",
            json!([{
                "timestamp": "1750263800", "group_id": GROUP_ID, "type": "group_create",
                "request_id": "REQ1", "subject": "Duka la Asha: VIP", "invite_link": LINK,
                "join_approval_mode": "approval_required"
            }])
        ),
        group_change(
            "group_lifecycle_update",
            json!([{
                "timestamp": "1750263801", "type": "group_create", "subject": "x", "request_id": "REQ2",
                "group_id": "", "errors": [{
                    "code": 131009, "message": "(#131009) Parameter value is not valid",
                    "title": "Parameter value is not valid", "error_data": {"details": "Group subject is too long"}
                }]
            }])
        ),
        group_change(
            "group_lifecycle_update",
            json!([
                {"timestamp": "1750263802", "group_id": GROUP_ID, "type": "group_delete", "request_id": "REQ3"},
                {"timestamp": "1750263803", "group_id": "G2", "type": "group_delete", "request_id": "REQ4",
                 "errors": [{"code": 131215, "message": "Not an admin", "title": "Not an admin"}]},
                {"timestamp": "1750263804", "group_id": "G3", "type": "group_archive"}
            ])
        )
    ]));
    let webhook = parse_webhook(&body).expect("a delivery");
    assert_eq!(
        webhook.events,
        vec![
            group_event(GroupUpdate::Created {
                request_id: "REQ1".into(),
                group_id: GROUP_ID.into(),
                invite_link: Some(LINK.into())
            }),
            group_event(GroupUpdate::CreateFailed {
                request_id: "REQ2".into(),
                reason: "(#131009) Parameter value is not valid: Group subject is too long".into()
            }),
            group_event(GroupUpdate::Deleted { group_id: GROUP_ID.into() }),
        ]
    );
    assert_eq!(
        webhook.ignored,
        vec!["group_lifecycle_update.group_delete".to_owned(), "group_lifecycle_update.group_archive".to_owned()]
    );
}

#[test]
fn participant_updates_are_read() {
    let body = delivery(json!([
        group_change(
            "group_participants_update",
            json!([
                {"timestamp": "1", "group_id": GROUP_ID, "type": "group_participants_add", "reason": "invite_link",
                 "added_participants": [{"wa_id": "255712345678"}]},
                {"timestamp": "2", "group_id": GROUP_ID, "type": "group_participants_add", "reason": "invite_link",
                 "added_participants": [{"input": "+255712000111", "wa_id": "255712000111"}, {"input": "255712000222"}]}
            ])
        ),
        group_change(
            "group_participants_update",
            json!([
                {"timestamp": "3", "group_id": GROUP_ID, "type": "group_participants_remove", "request_id": "REQ5",
                 "initiated_by": "business",
                 "removed_participants": [{"input": "255712000111"}],
                 "failed_participants": [{"input": "255712000333", "errors": [{"code": 131208, "message": "Not in group"}]}]},
                {"timestamp": "4", "group_id": GROUP_ID, "type": "group_participants_remove",
                 "initiated_by": "participant", "removed_participants": [{"wa_id": "255712000222"}]},
                {"timestamp": "5", "group_id": GROUP_ID, "type": "group_participants_remove", "request_id": "REQ6",
                 "removed_participants": [{"input": "255712000444"}]},
                {"timestamp": "6", "group_id": GROUP_ID, "type": "group_participants_remove", "request_id": "REQ7",
                 "failed_participants": [{"input": "255712000555"}]}
            ])
        ),
        group_change(
            "group_participants_update",
            json!([
                {"timestamp": "7", "group_id": GROUP_ID, "type": "group_join_request_created", "reason": "invite_link",
                 "join_request_id": "JR1", "wa_id": "255712999000"},
                {"timestamp": "8", "group_id": GROUP_ID, "type": "group_join_request_revoked",
                 "join_request_id": "JR1", "wa_id": "255712999000"},
                {"timestamp": "9", "group_id": GROUP_ID, "type": "group_participants_promote"}
            ])
        )
    ]));
    let webhook = parse_webhook(&body).expect("a delivery");
    assert_eq!(
        webhook.events,
        vec![
            group_event(GroupUpdate::Joined { group_id: GROUP_ID.into(), wa_ids: vec!["255712345678".into()] }),
            group_event(GroupUpdate::Joined {
                group_id: GROUP_ID.into(),
                wa_ids: vec!["255712000111".into(), "255712000222".into()]
            }),
            group_event(GroupUpdate::Left {
                group_id: GROUP_ID.into(),
                wa_ids: vec!["255712000111".into()],
                removed: true
            }),
            group_event(GroupUpdate::Left {
                group_id: GROUP_ID.into(),
                wa_ids: vec!["255712000222".into()],
                removed: false
            }),
            // without initiated_by, the request id says the business asked
            group_event(GroupUpdate::Left {
                group_id: GROUP_ID.into(),
                wa_ids: vec!["255712000444".into()],
                removed: true
            }),
            group_event(GroupUpdate::JoinRequested {
                group_id: GROUP_ID.into(),
                request: JoinRequest { join_request_id: "JR1".into(), wa_id: "255712999000".into() }
            }),
            group_event(GroupUpdate::JoinRequestRevoked { group_id: GROUP_ID.into(), join_request_id: "JR1".into() }),
        ]
    );
    assert_eq!(
        webhook.ignored,
        vec![
            "group_participants_update.group_participants_remove".to_owned(),
            "group_participants_update.group_participants_promote".to_owned()
        ]
    );
}

#[test]
fn settings_and_status_updates_are_read() {
    let body = delivery(json!([
        group_change(
            "group_settings_update",
            json!([
                {"timestamp": "1", "group_id": GROUP_ID, "type": "group_settings_update", "request_id": "REQ8",
                 "profile_picture": {"mime_type": "image/jpeg", "update_successful": true, "sha256": "h"},
                 "group_subject": {"text": "VIP customers", "update_successful": true},
                 "group_description": {"text": "Offers first", "update_successful": true}},
                {"timestamp": "2", "group_id": GROUP_ID, "type": "group_settings_update", "request_id": "REQ9",
                 "group_subject": {"text": "Bad", "update_successful": false,
                                   "errors": [{"code": 131201, "message": "Invalid group subject"}]},
                 "group_description": {"text": "Still applied", "update_successful": true}},
                {"timestamp": "3", "group_id": GROUP_ID, "type": "group_settings_update", "request_id": "REQ10",
                 "group_subject": {"text": "Bad", "update_successful": false}}
            ])
        ),
        group_change(
            "group_status_update",
            json!([
                {"timestamp": "4", "type": "group_suspend", "group_id": GROUP_ID},
                {"timestamp": "5", "type": "group_suspend_cleared", "group_id": GROUP_ID}
            ])
        )
    ]));
    let webhook = parse_webhook(&body).expect("a delivery");
    assert_eq!(
        webhook.events,
        vec![
            group_event(GroupUpdate::Settings {
                group_id: GROUP_ID.into(),
                subject: Some("VIP customers".into()),
                description: Some("Offers first".into())
            }),
            group_event(GroupUpdate::Settings {
                group_id: GROUP_ID.into(),
                subject: None,
                description: Some("Still applied".into())
            }),
            group_event(GroupUpdate::Suspended { group_id: GROUP_ID.into() }),
            group_event(GroupUpdate::SuspensionCleared { group_id: GROUP_ID.into() }),
        ]
    );
    assert_eq!(webhook.ignored, vec!["group_settings_update.group_settings_update".to_owned()]);
}

#[test]
fn a_group_message_names_its_group_and_a_signed_delivery_verifies() {
    let message = json!({
        "from": "255712345678", "group_id": GROUP_ID, "id": "wamid.in_group", "timestamp": "1750263800",
        "type": "text", "text": {"body": "Is the red kanga back?"}
    });
    let direct = json!({
        "from": "255712345678", "id": "wamid.in_direct", "timestamp": "1750263801",
        "type": "text", "text": {"body": "Hello"}
    });
    let body = delivery(json!([
        {"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": metadata(),
            "contacts": [{"profile": {"name": "Asha M"}, "wa_id": "255712345678"}],
            "messages": [message, direct]
        }},
        group_change("group_status_update", json!([{"timestamp": "4", "type": "group_suspend", "group_id": GROUP_ID}]))
    ]));
    let header = sign("app_secret_1", &body);
    assert!(signature_holds("app_secret_1", &body, Some(&header)));

    let webhook = parse_webhook(&body).expect("a delivery");
    assert_eq!(
        webhook.events,
        vec![
            ChatEvent::Inbound(ChatInbound {
                group_id: Some(GROUP_ID.into()),
                ..inbound("wamid.in_group", "text", Some("Is the red kanga back?"), &message)
            }),
            ChatEvent::Inbound(inbound("wamid.in_direct", "text", Some("Hello"), &direct)),
            group_event(GroupUpdate::Suspended { group_id: GROUP_ID.into() }),
        ]
    );
    assert!(webhook.ignored.is_empty());
}

#[test]
fn a_malformed_group_update_is_refused_by_name() {
    let cases = [
        (
            group_change("group_lifecycle_update", json!([{"type": "group_create", "group_id": "G"}])),
            "groups[0]: no request_id",
        ),
        (
            group_change("group_lifecycle_update", json!([{"type": "group_create", "request_id": "R"}])),
            "groups[0]: no group_id",
        ),
        (group_change("group_status_update", json!([{"group_id": "G"}])), "groups[0]: no type"),
        (group_change("group_status_update", json!([{"type": "group_suspend"}])), "groups[0]: no group_id"),
        (
            group_change(
                "group_participants_update",
                json!([{"type": "group_join_request_created", "group_id": "G", "wa_id": "1"}]),
            ),
            "groups[0]: no join_request_id",
        ),
        (
            group_change(
                "group_participants_update",
                json!([{"type": "group_participants_add", "group_id": "G", "added_participants": {}}]),
            ),
            "added_participants is not an array",
        ),
        (group_change("group_status_update", json!({})), "groups is not an array"),
        (json!({"field": "group_status_update", "value": {"groups": []}}), "value: no metadata"),
        (json!({"field": "group_settings_update"}), "group_settings_update without a value object"),
    ];
    for (change, named) in cases {
        let error = parse_webhook(&delivery(json!([change]))).expect_err("malformed");
        assert!(error.0.contains(named), "{error} should name {named}");
    }
}
