//! `GET /leads` (contract: Leads; docs/api.md "GET /leads"): open leads by default and the
//! `status` that widens the list, every filter, a bad value refused as `invalid`, standard
//! pagination newest activity first, and the issuer's visibility.

use api_tests::{json, spawn};
use serde_json::Value;
use time::Duration;

use super::support::*;
use crate::framework::assert_error;

/// A phone of its own for the `n`th lead of a test.
fn phone(n: usize) -> String {
    format!("0712{n:06}")
}

#[actix_web::test]
async fn open_leads_are_the_default_and_status_shows_closed_archived_or_all() {
    // Proves `status`: open (neither closed nor archived) by default and when named, then
    // `closed` (won and lost), `archived`, and `all`.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let new = id_of(&create(&app, &acme.key, json!({"phone": phone(1)})).await);
    let qualified = id_of(&create(&app, &acme.key, json!({"phone": phone(2), "stage": "qualified"})).await);
    let won = id_of(&create(&app, &acme.key, json!({"phone": phone(3), "stage": "won"})).await);
    let lost =
        id_of(&create(&app, &acme.key, json!({"phone": phone(4), "stage": "lost", "reason": "no budget"})).await);
    let archived = id_of(&create(&app, &acme.key, json!({"phone": phone(5)})).await);
    patched(&app, &acme.key, &archived, json!({"archived": true})).await;

    let open = sorted(vec![new.clone(), qualified.clone()]);
    let page = list(&app, &acme.key, &[]).await;
    assert_eq!(sorted(ids(&page)), open, "{page}");
    assert_eq!(page["pagination"]["total"], 2);
    assert_eq!(sorted(ids(&list(&app, &acme.key, &[("status", "open")]).await)), open);
    assert_eq!(
        sorted(ids(&list(&app, &acme.key, &[("status", "closed")]).await)),
        sorted(vec![won.clone(), lost.clone()])
    );
    assert_eq!(ids(&list(&app, &acme.key, &[("status", "archived")]).await), vec![archived.clone()]);
    let all = list(&app, &acme.key, &[("status", "all")]).await;
    assert_eq!(sorted(ids(&all)), sorted(vec![new, qualified, won, lost, archived]));
    assert_eq!(all["pagination"]["total"], 5);
}

#[actix_web::test]
async fn stage_label_and_channel_filters_narrow_the_list() {
    // Proves `stage` (comma-separated), `label` (a name in any case, an id, several meaning any
    // of them) and `channel` (`source_channel` in any case).
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let a = create(
        &app,
        &acme.key,
        json!({"phone": phone(1), "stage": "won", "labels": ["VIP"], "source_channel": "WhatsApp"}),
    )
    .await;
    let b = create(
        &app,
        &acme.key,
        json!({"phone": phone(2), "stage": "lost", "reason": "gone", "labels": ["Hot"], "source_channel": "sms"}),
    )
    .await;
    let c = create(&app, &acme.key, json!({"phone": phone(3), "labels": ["vip", "hot"], "source_channel": "whatsapp"}))
        .await;
    let d = create(&app, &acme.key, json!({"phone": phone(4), "source_channel": "Web"})).await;
    let (a, b, c, d) = (id_of(&a), id_of(&b), id_of(&c), id_of(&d));
    let hot = list(&app, &acme.key, &[("label", "hot"), ("status", "all")]).await;
    let hot_id = hot["items"][0]["labels"]
        .as_array()
        .and_then(|labels| labels.iter().find(|l| l["name"] == "Hot"))
        .map(label_id_of)
        .unwrap_or_else(|| panic!("the Hot label in {hot}"));
    let hot_id = hot_id.to_string();

    let all = ("status", "all");
    let found = |page: Value| sorted(ids(&page));
    assert_eq!(found(list(&app, &acme.key, &[("stage", "won,lost"), all]).await), sorted(vec![a.clone(), b.clone()]));
    assert_eq!(found(list(&app, &acme.key, &[("stage", "new")]).await), sorted(vec![c.clone(), d.clone()]));
    assert_eq!(found(list(&app, &acme.key, &[("stage", "won")]).await), Vec::<String>::new(), "won is not open");

    assert_eq!(found(list(&app, &acme.key, &[("label", "vip"), all]).await), sorted(vec![a.clone(), c.clone()]));
    assert_eq!(found(list(&app, &acme.key, &[("label", "VIP"), all]).await), sorted(vec![a.clone(), c.clone()]));
    assert_eq!(found(list(&app, &acme.key, &[("label", &hot_id), all]).await), sorted(vec![b.clone(), c.clone()]));
    let any = format!("VIP,{hot_id}");
    assert_eq!(
        found(list(&app, &acme.key, &[("label", &any), all]).await),
        sorted(vec![a.clone(), b.clone(), c.clone()])
    );
    assert_eq!(found(list(&app, &acme.key, &[("label", "Nobody"), all]).await), Vec::<String>::new());

    assert_eq!(found(list(&app, &acme.key, &[("channel", "WHATSAPP"), all]).await), sorted(vec![a, c]));
    assert_eq!(found(list(&app, &acme.key, &[("channel", "web")]).await), vec![d]);
    assert_eq!(found(list(&app, &acme.key, &[("channel", "sms")]).await), Vec::<String>::new(), "b is closed");
}

#[actix_web::test]
async fn assigned_to_and_created_by_filter_by_person_or_kind() {
    // Proves `assigned_to` (`me`, `none`, a user id) and `created_by` (a user id, `me`, a kind).
    let app = spawn().await;
    let boss = app.account(MANAGER).await;
    let mate = app.user(boss.tenant, MANAGER).await;
    let mate_key = app.key(boss.tenant, mate).await;
    let mine = id_of(&create(&app, &boss.key, json!({"phone": phone(1)})).await);
    assign(&app, &mine, boss.user).await;
    let mates = id_of(&create(&app, &boss.key, json!({"phone": phone(2)})).await);
    assign(&app, &mates, mate).await;
    let pooled = id_of(&create(&app, &mate_key, json!({"phone": phone(3)})).await);

    let found = |page: Value| sorted(ids(&page));
    assert_eq!(found(list(&app, &boss.key, &[("assigned_to", "me")]).await), vec![mine.clone()]);
    assert_eq!(found(list(&app, &mate_key, &[("assigned_to", "me")]).await), vec![mates.clone()]);
    assert_eq!(found(list(&app, &boss.key, &[("assigned_to", "none")]).await), vec![pooled.clone()]);
    let mate_id = mate.0.to_string();
    assert_eq!(found(list(&app, &boss.key, &[("assigned_to", &mate_id)]).await), vec![mates.clone()]);

    assert_eq!(found(list(&app, &boss.key, &[("created_by", &mate_id)]).await), vec![pooled.clone()]);
    assert_eq!(found(list(&app, &boss.key, &[("created_by", "me")]).await), sorted(vec![mine.clone(), mates.clone()]));
    assert_eq!(found(list(&app, &mate_key, &[("created_by", "me")]).await), vec![pooled.clone()]);
    assert_eq!(found(list(&app, &boss.key, &[("created_by", "api")]).await), sorted(vec![mine, mates, pooled]));
    assert_eq!(found(list(&app, &boss.key, &[("created_by", "ai")]).await), Vec::<String>::new());
}

#[actix_web::test]
async fn q_searches_name_company_phone_and_email() {
    // Proves `q` over each of the four fields, without case, and a text found nowhere.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let a = create(
        &app,
        &acme.key,
        json!({"phone": "0712345678", "name": "Amina Juma", "company": "Duka", "email": "amina@mail.co.tz"}),
    )
    .await;
    let b = create(
        &app,
        &acme.key,
        json!({"phone": "0754321987", "name": "Baraka", "company": "Kilimo Ltd", "email": "baraka@mail.co.tz"}),
    )
    .await;
    let c =
        create(&app, &acme.key, json!({"phone": "0713111222", "name": "Chausiku", "email": "chau@farm.co.tz"})).await;
    let (a, b, c) = (id_of(&a), id_of(&b), id_of(&c));

    for (q, expected) in [
        ("JUMA", vec![a.clone()]),
        ("kilimo", vec![b.clone()]),
        ("713111", vec![c.clone()]),
        ("farm.co", vec![c.clone()]),
        ("mail.co", sorted(vec![a.clone(), b.clone()])),
        ("zanzibar", vec![]),
    ] {
        assert_eq!(sorted(ids(&list(&app, &acme.key, &[("q", q)]).await)), expected, "q={q}");
    }
}

#[actix_web::test]
async fn dates_scores_and_updated_since_filter_by_the_clock_s_times() {
    // Proves `from`/`to` (RFC 3339 or a date) on `created_at` (the default) and `updated_at`,
    // `updated_since`, and `score_min`/`score_max`, all inclusive.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let t0 = app.clock.now();
    let first = id_of(&create(&app, &acme.key, json!({"phone": phone(1), "score": 20})).await);
    app.clock.advance(Duration::days(1));
    let t1 = app.clock.now();
    let second = id_of(&create(&app, &acme.key, json!({"phone": phone(2), "score": 50})).await);
    app.clock.advance(Duration::days(1));
    let t2 = app.clock.now();
    let third = id_of(&create(&app, &acme.key, json!({"phone": phone(3), "score": 80})).await);
    app.clock.advance(Duration::days(1));
    let t3 = app.clock.now();
    patched(&app, &acme.key, &first, json!({"company": "Duka"})).await;

    let (t0, t1, t2, t3) = (stamp(t0), stamp(t1), stamp(t2), stamp(t3));
    let day_of_third = t2[..10].to_owned();
    let found = |page: Value| sorted(ids(&page));
    for (query, expected) in [
        (vec![("from", t1.as_str())], vec![second.clone(), third.clone()]),
        (vec![("to", t1.as_str())], vec![first.clone(), second.clone()]),
        (vec![("from", t1.as_str()), ("to", t1.as_str()), ("date_field", "created_at")], vec![second.clone()]),
        (vec![("from", t0.as_str()), ("to", t0.as_str())], vec![first.clone()]),
        (vec![("from", day_of_third.as_str())], vec![third.clone()]),
        (vec![("from", t3.as_str()), ("date_field", "updated_at")], vec![first.clone()]),
        (vec![("to", t2.as_str()), ("date_field", "updated_at")], vec![second.clone(), third.clone()]),
        (vec![("updated_since", t3.as_str())], vec![first.clone()]),
        (vec![("updated_since", t2.as_str())], vec![first.clone(), third.clone()]),
        (vec![("score_min", "50")], vec![second.clone(), third.clone()]),
        (vec![("score_max", "50")], vec![first.clone(), second.clone()]),
        (vec![("score_min", "30"), ("score_max", "60")], vec![second.clone()]),
    ] {
        let page = list(&app, &acme.key, &query).await;
        assert_eq!(found(page), sorted(expected), "{query:?}");
    }
}

#[actix_web::test]
async fn a_bad_filter_value_is_invalid_with_the_field_named() {
    // Proves 422 `reason: invalid` and `errors.<field>` for each filter that takes a fixed set,
    // a number or a time.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    for (field, value) in [
        ("status", "dormant"),
        ("stage", "new,dreaming"),
        ("assigned_to", "someone"),
        ("date_field", "birthday"),
        ("from", "yesterday"),
        ("to", "2026-13-45"),
        ("score_min", "high"),
        ("score_max", "1.5"),
        ("updated_since", "soon"),
    ] {
        let res = app.get(&list_path(&[(field, value)]), &acme.key).await;
        assert_refused(&res, 422, "invalid");
        assert!(res.body["errors"][field].is_array(), "errors.{field} for {value}: {}", res.body);
    }
}

#[actix_web::test]
async fn pages_hold_twenty_by_default_newest_activity_first_up_to_one_hundred() {
    // Proves the standard pagination (`{items, pagination}`, default 20, `limit` capped at 100)
    // and the order: the latest `updated_at` first, so a changed lead moves to the top.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let mut made = Vec::new();
    for n in 0..25 {
        made.push(id_of(&create(&app, &acme.key, json!({"phone": phone(n)})).await));
        app.clock.advance(Duration::seconds(1));
    }
    let newest_first: Vec<String> = made.iter().rev().cloned().collect();

    let page = list(&app, &acme.key, &[]).await;
    assert_eq!(
        page["pagination"],
        json!({"current_page": 1, "per_page": 20, "last_page": 2, "total": 25, "has_more_pages": true})
    );
    assert_eq!(ids(&page), newest_first[..20]);
    let page = list(&app, &acme.key, &[("page", "2")]).await;
    assert_eq!(ids(&page), newest_first[20..]);
    assert_eq!(page["pagination"]["has_more_pages"], false);
    let page = list(&app, &acme.key, &[("limit", "5"), ("page", "3")]).await;
    assert_eq!(ids(&page), newest_first[10..15]);
    assert_eq!(
        page["pagination"],
        json!({"current_page": 3, "per_page": 5, "last_page": 5, "total": 25, "has_more_pages": true})
    );
    let page = list(&app, &acme.key, &[("limit", "500")]).await;
    assert_eq!(
        page["pagination"],
        json!({"current_page": 1, "per_page": 100, "last_page": 1, "total": 25, "has_more_pages": false})
    );
    assert_eq!(ids(&page), newest_first);

    let oldest = &made[0];
    patched(&app, &acme.key, oldest, json!({"company": "Duka"})).await;
    let page = list(&app, &acme.key, &[("limit", "3")]).await;
    assert_eq!(ids(&page), vec![oldest.clone(), newest_first[0].clone(), newest_first[1].clone()]);
    assert_eq!(page["items"][0]["company"], "Duka", "items are whole leads");
}

#[actix_web::test]
async fn a_restricted_issuer_neither_lists_nor_reaches_another_s_assigned_lead() {
    // Proves visibility on the list (assigned to me, unassigned and self-added only; everything
    // with `leads.data.all`) and on the new routes of one lead (404).
    let app = spawn().await;
    let boss = app.account(MANAGER).await;
    let restricted_user = app.user(boss.tenant, EDITOR).await;
    let restricted = app.key(boss.tenant, restricted_user).await;
    let colleague = app.user(boss.tenant, EDITOR).await;

    let theirs = id_of(&create(&app, &boss.key, json!({"phone": phone(1), "name": "Amina"})).await);
    assign(&app, &theirs, colleague).await;
    let pooled = id_of(&create(&app, &boss.key, json!({"phone": phone(2)})).await);
    let mine = id_of(&create(&app, &boss.key, json!({"phone": phone(3)})).await);
    assign(&app, &mine, restricted_user).await;
    let self_added = id_of(&create(&app, &restricted, json!({"phone": phone(4)})).await);
    assign(&app, &self_added, colleague).await;

    let page = list(&app, &restricted, &[]).await;
    assert_eq!(sorted(ids(&page)), sorted(vec![pooled.clone(), mine.clone(), self_added.clone()]));
    assert_eq!(page["pagination"]["total"], 3);
    assert_eq!(ids(&list(&app, &restricted, &[("q", "Amina")]).await), Vec::<String>::new());
    assert_eq!(sorted(ids(&list(&app, &boss.key, &[]).await)), sorted(vec![theirs.clone(), pooled, mine, self_added]));

    assert_error(&patch(&app, &restricted, &theirs, json!({"company": "Duka"})).await, 404);
    assert_error(&app.post(&sub_path(&theirs, "notes"), &restricted, json!({"body": "hello"})).await, 404);
    assert_error(&app.get(&sub_path(&theirs, "activities"), &restricted).await, 404);
    assert_error(&app.post(&sub_path(&theirs, "labels"), &restricted, json!({"labels": ["VIP"]})).await, 404);
    assert_eq!(read(&app, &boss.key, &theirs).await["company"], Value::Null, "nothing changed");
}
