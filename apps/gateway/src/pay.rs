//! The checkout page (`GET`/`POST /pay/{token}`): the customer sees what an order costs, gives
//! the number to pay from, and approves the prompt on their phone; the page follows the payment
//! until it settles. Server-rendered, no script (it reloads itself while the prompt waits), no
//! key: the token in the link is the credential.

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpResponse, web};
use payments_read::{Checkout, Payment};
use serde::Deserialize;

use crate::AppState;
use crate::http::html::{escape, page};
use crate::shop::STYLE;

/// How often the page looks again while the payer's phone is asked.
const REFRESH_SECONDS: u32 = 3;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/pay/{token}").route(web::get().to(checkout)).route(web::post().to(pay)));
}

#[derive(Debug, Deserialize)]
pub struct PayForm {
    #[serde(default)]
    phone: String,
}

pub async fn checkout(state: web::Data<AppState>, token: web::Path<String>) -> HttpResponse {
    answer(&state, &token, StatusCode::OK, None).await
}

/// The customer's number: the prompt goes out and the page shows it waiting (a GET after the
/// POST, so a reload does not ask twice); refused, the page says why.
pub async fn pay(state: web::Data<AppState>, token: web::Path<String>, form: web::Form<PayForm>) -> HttpResponse {
    match state.payments.pay_checkout(&token, &form.phone).await {
        Ok(_) => {
            HttpResponse::SeeOther().insert_header((header::LOCATION, format!("/pay/{}", token.as_str()))).finish()
        }
        Err(error) if error.is(kernel::ErrorKind::NotFound) => {
            answer(&state, &token, StatusCode::NOT_FOUND, None).await
        }
        Err(error) if error.is(kernel::ErrorKind::Conflict) => {
            answer(&state, &token, StatusCode::CONFLICT, Some(&error.message)).await
        }
        Err(error) if error.is(kernel::ErrorKind::Validation) => {
            let why = error.errors.values().flatten().next().cloned().unwrap_or(error.message.clone());
            answer(&state, &token, StatusCode::UNPROCESSABLE_ENTITY, Some(&why)).await
        }
        Err(error) => {
            tracing::error!(error = %error, "a checkout payment could not be asked for");
            answer(&state, &token, StatusCode::SERVICE_UNAVAILABLE, Some("Try again in a moment.")).await
        }
    }
}

async fn answer(state: &AppState, token: &str, status: StatusCode, alert: Option<&str>) -> HttpResponse {
    match state.payments.checkout(token).await {
        Ok(checkout) => {
            let waiting = checkout.payment.is_open && checkout.payment.state != "draft";
            let mut response =
                page(status, &format!("Pay {}", checkout.payment.reference), STYLE, &render(&checkout, token, alert));
            if waiting {
                // no script: the browser looks again until the payer answers
                response.headers_mut().insert(header::REFRESH, header::HeaderValue::from(REFRESH_SECONDS));
            }
            response
        }
        Err(error) if error.is(kernel::ErrorKind::NotFound) => page(
            StatusCode::NOT_FOUND,
            "Payment not found",
            STYLE,
            "<h1>Payment not found</h1><p>This link is not a payment.</p>",
        ),
        Err(error) => {
            tracing::error!(error = %error, "the checkout page failed");
            page(StatusCode::SERVICE_UNAVAILABLE, "Try again", STYLE, "<h1>Try again in a moment</h1>")
        }
    }
}

fn render(checkout: &Checkout, token: &str, alert: Option<&str>) -> String {
    let payment: &Payment = &checkout.payment;
    let greeting = checkout.customer_name.as_deref().map(|name| format!("{}, y", escape(name))).unwrap_or("Y".into());
    let subject = match (payment.subject_type.as_deref(), payment.subject_id.as_deref()) {
        (Some("order"), Some(id)) => format!("order #{}", escape(id)),
        _ => "your purchase".to_owned(),
    };
    let mut body = format!(
        "<h1>{greeting}our payment</h1><p class=\"muted\">{reference} · {subject}</p><p class=\"price\" id=\"amount\">{amount}</p>",
        reference = escape(&payment.reference),
        amount = escape(&payment.amount),
    );
    if let Some(alert) = alert {
        body.push_str(&format!("<p role=\"alert\" class=\"out\">{}</p>", escape(alert)));
    }
    let form = |label: &str| {
        format!(
            "<form method=\"post\" action=\"/pay/{token}\"><label for=\"phone\">Mobile money number</label> \
             <input id=\"phone\" name=\"phone\" type=\"tel\" autocomplete=\"tel\" required maxlength=\"32\" value=\"{phone}\"> \
             <button type=\"submit\">{label}</button></form>",
            token = escape(token),
            phone = escape(payment.payer.as_deref().unwrap_or_default()),
        )
    };
    let status = match payment.state {
        "draft" => form(&format!("Pay {}", payment.amount)),
        "pending" | "authorised" => format!(
            "<p id=\"status\" class=\"muted\">We sent a payment prompt to {}. Approve it on your phone with your PIN; this page follows it.</p>",
            escape(payment.payer.as_deref().unwrap_or("your phone"))
        ),
        "paid" | "partly_refunded" | "refunded" => format!(
            "<p id=\"status\" class=\"done\">Paid. Thank you!{}</p>",
            payment.provider_receipt.as_deref().map(|r| format!(" Receipt {}.", escape(r))).unwrap_or_default()
        ),
        "failed" => format!(
            "<p id=\"status\" class=\"out\">The payment did not go through{}. You can try again.</p>{}",
            payment.last_error.as_deref().map(|e| format!(": {}", escape(e))).unwrap_or_default(),
            form("Try again")
        ),
        "cancelled" => {
            "<p id=\"status\" class=\"out\">This payment was cancelled. Ask the shop for a new link.</p>".to_owned()
        }
        _ => {
            "<p id=\"status\" class=\"out\">This payment link has expired. Ask the shop for a new link.</p>".to_owned()
        }
    };
    body.push_str(&status);
    body
}
