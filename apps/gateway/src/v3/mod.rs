//! The `/api/v3` route tree.

pub mod account;
pub mod automations;
pub mod carts;
pub mod catalogues;
pub mod chat;
pub mod contacts;
pub mod data;
pub mod forms;
pub mod groups;
pub mod lead_labels;
pub mod leads;
pub mod messaging;
pub mod operations;
pub mod orders;
pub mod payments;
pub mod sends;
pub mod voice;
pub mod webhooks;

use actix_web::web;

use crate::http::{BodyRefusal, LegacyRoute};

/// Routes that keys from before the permission model keep (contract: Authentication, rule 4
/// and the permission table's "tenant credential only" families). Everything else refuses them.
fn legacy(path: &str) -> actix_web::Resource {
    web::resource(path).app_data(LegacyRoute)
}

/// The leads routes: every refusal carries a `reason` (contract: Leads refusals), the body
/// reader's `invalid` included.
fn lead_route(path: &str) -> actix_web::Resource {
    web::resource(path).app_data(BodyRefusal("invalid"))
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/v3")
            .wrap(actix_web::middleware::from_fn(crate::http::auth::authenticate_request))
            .service(legacy("/me").route(web::get().to(account::me)))
            .service(legacy("/balance").route(web::get().to(account::balance)))
            // SMS and campaigns: tenant credential only (contract: Authentication); the routes
            // this service adds beyond the contract need an issuer and a permission
            .service(legacy("/sms/send").route(web::post().to(messaging::send)))
            .service(legacy("/sms/senders").route(web::get().to(messaging::senders)))
            .service(legacy("/sms/campaign").route(web::post().to(messaging::create_campaign)))
            .service(
                web::resource("/sms/blacklist")
                    .route(web::get().to(messaging::blacklist))
                    .route(web::post().to(messaging::blacklist_add)),
            )
            .service(web::resource("/sms/blacklist/{number}").route(web::delete().to(messaging::blacklist_remove)))
            .service(legacy("/sms/{uid}").route(web::get().to(messaging::get_message)))
            .service(legacy("/campaign/{uid}/view").route(web::get().to(messaging::view_campaign)))
            .service(web::resource("/campaign/{uid}/resume").route(web::post().to(messaging::resume_campaign)))
            .service(web::resource("/campaign/{uid}/cancel").route(web::post().to(messaging::cancel_campaign)))
            .service(web::resource("/messages").route(web::get().to(messaging::list_messages)))
            // voice and calls: added after the permission model
            .service(web::resource("/voice/otp").route(web::post().to(voice::otp)))
            .service(web::resource("/voice/messages").route(web::post().to(voice::messages)))
            .service(web::resource("/calls").route(web::get().to(voice::list)).route(web::post().to(voice::create)))
            .service(web::resource("/calls/{uid}").route(web::get().to(voice::get)))
            .service(
                web::resource("/call-campaigns")
                    .route(web::get().to(voice::list_campaigns))
                    .route(web::post().to(voice::create_campaign)),
            )
            .service(web::resource("/call-campaigns/{uid}").route(web::get().to(voice::get_campaign)))
            .service(web::resource("/call-campaigns/{uid}/{action}").route(web::post().to(voice::campaign_action)))
            // chat: added after the permission model, so keys without an issuer are refused
            .service(web::resource("/automations/events").route(web::get().to(automations::events)))
            .service(web::resource("/automations/subscriptions").route(web::get().to(automations::subscriptions)))
            .service(web::resource("/automations/schedules").route(web::get().to(automations::schedules)))
            .service(web::resource("/operations").route(web::get().to(operations::list)))
            .service(web::resource("/operations/runs/{run}").route(web::get().to(operations::get_run)))
            .service(web::resource("/operations/{name}").route(web::get().to(operations::get)))
            .service(web::resource("/operations/{name}/runs").route(web::post().to(operations::run)))
            .service(web::resource("/payments").route(web::get().to(payments::list)))
            .service(web::resource("/payments/{payment}").route(web::get().to(payments::get)))
            .service(web::resource("/shop-links").route(web::post().to(carts::create_link)))
            .service(web::resource("/carts").route(web::get().to(carts::list)))
            .service(web::resource("/carts/{ref}").route(web::get().to(carts::get)))
            .service(web::resource("/chat/send").route(web::post().to(chat::send)))
            .service(web::resource("/chat/accounts").route(web::get().to(chat::accounts)))
            .service(web::resource("/chat/conversations").route(web::get().to(chat::conversations)))
            .service(web::resource("/chat/conversations/{id}").route(web::get().to(chat::conversation)))
            .service(
                web::resource("/chat/templates")
                    .route(web::get().to(chat::templates))
                    .route(web::post().to(chat::create_template)),
            )
            .service(web::resource("/chat/templates/sync").route(web::post().to(chat::sync_templates)))
            .service(
                web::resource("/chat/templates/{id}")
                    .route(web::get().to(chat::template))
                    .route(web::patch().to(chat::update_template))
                    .route(web::delete().to(chat::delete_template)),
            )
            .service(web::resource("/chat/templates/{id}/submit").route(web::post().to(chat::submit_template)))
            .service(web::resource("/chat/templates/{id}/refresh").route(web::post().to(chat::refresh_template)))
            .service(web::resource("/chat/templates/{id}/deployments").route(web::post().to(chat::deploy_template)))
            .service(
                web::resource("/chat/groups").route(web::get().to(groups::list)).route(web::post().to(groups::create)),
            )
            .service(
                web::resource("/chat/groups/{id}")
                    .route(web::get().to(groups::get))
                    .route(web::patch().to(groups::update))
                    .route(web::delete().to(groups::delete)),
            )
            .service(web::resource("/chat/groups/{id}/invites").route(web::post().to(groups::invite)))
            .service(web::resource("/chat/groups/{id}/invite-link/reset").route(web::post().to(groups::reset_link)))
            .service(web::resource("/chat/groups/{id}/join-requests").route(web::get().to(groups::join_requests)))
            .service(web::resource("/chat/groups/{id}/join-requests/approve").route(web::post().to(groups::approve)))
            .service(web::resource("/chat/groups/{id}/join-requests/reject").route(web::post().to(groups::reject)))
            .service(
                web::resource("/chat/groups/{id}/participants").route(web::delete().to(groups::remove_participants)),
            )
            .service(web::resource("/chat/groups/{id}/messages").route(web::post().to(groups::message)))
            .service(web::resource("/chat/groups/{id}/pin").route(web::post().to(groups::pin)))
            .service(web::resource("/chat/forms").route(web::post().to(forms::create)))
            .service(web::resource("/chat/forms/question-types").route(web::get().to(forms::question_types)))
            .service(
                web::resource("/chat/forms/{form}")
                    .route(web::get().to(forms::get))
                    .route(web::patch().to(forms::update)),
            )
            .service(web::resource("/chat/forms/{form}/publish").route(web::post().to(forms::publish)))
            .service(web::resource("/chat/forms/{form}/send").route(web::post().to(forms::send)))
            .service(web::resource("/chat/forms/{form}/answers").route(web::get().to(forms::answers)))
            .service(web::resource("/chat/forms/{form}/deployments").route(web::post().to(forms::deploy)))
            .service(web::resource("/chat/forms/{form}/deployments/{waba}").route(web::delete().to(forms::undeploy)))
            .service(web::resource("/chat/{uid}").route(web::get().to(chat::get_message)))
            // leads
            .service(lead_route("/leads").route(web::get().to(leads::list)).route(web::post().to(leads::upsert)))
            .service(
                lead_route("/leads/{lead}")
                    .route(web::get().to(leads::get))
                    .route(web::patch().to(leads::update))
                    .route(web::delete().to(leads::delete)),
            )
            .service(lead_route("/leads/{lead}/stage").route(web::post().to(leads::stage)))
            .service(
                lead_route("/leads/{lead}/labels")
                    .route(web::post().to(lead_labels::add_labels))
                    .route(web::delete().to(lead_labels::remove_labels)),
            )
            .service(
                lead_route("/lead-labels")
                    .route(web::get().to(lead_labels::list_labels))
                    .route(web::post().to(lead_labels::create_label)),
            )
            .service(
                lead_route("/lead-labels/{label}")
                    .route(web::patch().to(lead_labels::update_label))
                    .route(web::delete().to(lead_labels::delete_label)),
            )
            .service(lead_route("/lead-fields").route(web::get().to(lead_labels::fields)))
            .service(lead_route("/leads/{lead}/notes").route(web::post().to(leads::add_note)))
            .service(lead_route("/leads/{lead}/assign").route(web::post().to(leads::assign)))
            .service(lead_route("/leads/{lead}/activities").route(web::get().to(leads::activities)))
            // commerce: the fixed paths (`orders`, `send-*`, `batch`, `by-sku`) before the ids
            .service(
                web::resource("/catalogues")
                    .route(web::get().to(catalogues::list))
                    .route(web::post().to(catalogues::create)),
            )
            .service(web::resource("/catalogues/orders").route(web::get().to(orders::list)))
            .service(web::resource("/catalogues/send-product").route(web::post().to(sends::send_product)))
            .service(web::resource("/catalogues/send-product-list").route(web::post().to(sends::send_product_list)))
            .service(web::resource("/catalogues/send-catalogue").route(web::post().to(sends::send_catalogue)))
            .service(web::resource("/catalogues/orders/{order}").route(web::get().to(orders::get)))
            .service(web::resource("/catalogues/orders/{order}/status").route(web::put().to(orders::set_status)))
            .service(
                web::resource("/catalogues/{catalogue}")
                    .route(web::get().to(catalogues::get))
                    .route(web::patch().to(catalogues::update)),
            )
            .service(web::resource("/catalogues/{catalogue}/orders").route(web::post().to(orders::create)))
            .service(web::resource("/catalogues/{catalogue}/products").route(web::get().to(catalogues::products)))
            .service(web::resource("/catalogues/{catalogue}/products/batch").route(web::post().to(catalogues::batch)))
            .service(
                web::resource("/catalogues/{catalogue}/products/by-sku/{sku}")
                    .route(web::get().to(catalogues::get_by_sku))
                    .route(web::put().to(catalogues::put_by_sku))
                    .route(web::delete().to(catalogues::delete_by_sku)),
            )
            .service(
                web::resource("/catalogues/{catalogue}/products/by-sku/{sku}/movements")
                    .route(web::get().to(catalogues::movements_by_sku)),
            )
            .service(
                web::resource("/catalogues/{catalogue}/products/{product}")
                    .route(web::get().to(catalogues::get_by_id))
                    .route(web::put().to(catalogues::put_by_id))
                    .route(web::delete().to(catalogues::delete_by_id)),
            )
            .service(
                web::resource("/catalogues/{catalogue}/products/{product}/movements")
                    .route(web::get().to(catalogues::movements_by_id)),
            )
            .service(
                web::resource("/catalogues/{catalogue}/inventory")
                    .route(web::get().to(catalogues::inventory))
                    .route(web::post().to(catalogues::push_inventory)),
            )
            .service(web::resource("/catalogues/{catalogue}/syncs").route(web::get().to(catalogues::syncs)))
            .service(web::resource("/catalogues/{catalogue}/syncs/{sync}").route(web::get().to(catalogues::sync)))
            .service(
                web::resource("/catalogues/{catalogue}/feeds")
                    .route(web::get().to(catalogues::feeds))
                    .route(web::post().to(catalogues::create_feed)),
            )
            .service(web::resource("/catalogues/{catalogue}/feeds/{feed}").route(web::get().to(catalogues::get_feed)))
            .service(web::resource("/catalogues/{catalogue}/listings").route(web::get().to(catalogues::listings)))
            .service(
                web::resource("/catalogues/{catalogue}/feeds/{feed}/run").route(web::post().to(catalogues::run_feed)),
            )
            // data tables
            .service(web::resource("/data/tables").route(web::get().to(data::tables)))
            .service(web::resource("/data/tables/{table}/schema").route(web::get().to(data::schema)))
            .service(web::resource("/data/tables/{table}/states").route(web::get().to(data::states)))
            .service(
                web::resource("/data/tables/{table}/records")
                    .route(web::get().to(data::list))
                    .route(web::post().to(data::create)),
            )
            .service(
                web::resource("/data/tables/{table}/records/{record}")
                    .route(web::get().to(data::get))
                    .route(web::patch().to(data::update))
                    .route(web::delete().to(data::delete)),
            )
            .service(web::resource("/data/tables/{table}/records/{record}/history").route(web::get().to(data::history)))
            .service(web::resource("/data/groups").route(web::get().to(data::groups)))
            .service(web::resource("/data/groups/{group}").route(web::get().to(data::group)))
            .service(web::resource("/data/groups/{group}/overview").route(web::get().to(data::overview)))
            // webhooks: the fixed paths before `{webhook}`
            .service(
                web::resource("/webhooks").route(web::get().to(webhooks::list)).route(web::post().to(webhooks::create)),
            )
            .service(web::resource("/webhooks/events").route(web::get().to(webhooks::events)))
            .service(web::resource("/webhooks/notifications").route(web::get().to(webhooks::notifications)))
            .service(
                web::resource("/webhooks/{webhook}")
                    .route(web::get().to(webhooks::get))
                    .route(web::patch().to(webhooks::update))
                    .route(web::delete().to(webhooks::delete)),
            )
            .service(web::resource("/webhooks/{webhook}/test").route(web::post().to(webhooks::test)))
            .service(web::resource("/webhooks/{webhook}/rotate-secret").route(web::post().to(webhooks::rotate_secret)))
            .service(web::resource("/webhooks/{webhook}/recover").route(web::post().to(webhooks::recover)))
            .service(web::resource("/webhooks/{webhook}/deliveries").route(web::get().to(webhooks::deliveries)))
            .service(
                web::resource("/webhooks/{webhook}/deliveries/{delivery}").route(web::get().to(webhooks::delivery)),
            )
            .service(
                web::resource("/webhooks/{webhook}/deliveries/{delivery}/replay")
                    .route(web::post().to(webhooks::replay)),
            )
            // contact groups and contacts
            .service(
                web::resource("/contact-groups")
                    .route(web::get().to(contacts::list_groups))
                    .route(web::post().to(contacts::create_group)),
            )
            .service(
                web::resource("/contact-groups/{group}")
                    .route(web::get().to(contacts::get_group))
                    .route(web::patch().to(contacts::update_group))
                    .route(web::delete().to(contacts::delete_group)),
            )
            .service(
                web::resource("/contact-groups/{group}/contacts")
                    .route(web::get().to(contacts::list_contacts))
                    .route(web::post().to(contacts::create_contact)),
            )
            .service(web::resource("/contact-groups/{group}/contacts/batch").route(web::post().to(contacts::batch)))
            .service(
                web::resource("/contact-groups/{group}/contacts/{contact}")
                    .route(web::get().to(contacts::get_contact))
                    .route(web::patch().to(contacts::update_contact))
                    .route(web::delete().to(contacts::delete_contact)),
            )
            .service(web::resource("/contacts").route(web::get().to(contacts::search)))
            // the original contact paths; a GET to them is not equivalent (405)
            .service(legacy("/contacts/{group_id}/all").route(web::post().to(contacts::original_list)))
            .service(legacy("/contacts/{group_id}/store").route(web::post().to(contacts::original_store)))
            .service(legacy("/contacts/{group_id}/search/{uid}").route(web::post().to(contacts::original_search)))
            .service(legacy("/contacts/{group_id}/update/{uid}").route(web::patch().to(contacts::original_update)))
            .service(legacy("/contacts/{group_id}/delete/{uid}").route(web::delete().to(contacts::original_delete))),
    );
}
