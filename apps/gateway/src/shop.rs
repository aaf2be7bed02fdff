//! The public pages of the shops: the storefront (`GET /shop/{token}`), a shop's products with
//! their prices and availability, and the basket page (`GET`/`POST /basket/{token}`), where a
//! customer sets the quantities of a basket sent to them and submits it as an order.
//! Server-rendered, no script, no key: the token in the link is the credential.

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpResponse, web};
use commerce::baskets::{BasketPage, Submission};
use commerce::products::Product;
use commerce::storefront::Storefront;
use serde::Deserialize;

use crate::AppState;
use crate::http::html::{escape, money, page};

pub(crate) const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1b1b1f}\
h1{font-size:1.6rem;margin-bottom:.2rem}.muted{color:#5c5c66}ul.products{list-style:none;padding:0;display:grid;\
grid-template-columns:repeat(auto-fill,minmax(14rem,1fr));gap:1rem}li.product{border:1px solid #ddd;border-radius:6px;padding:.8rem}\
li.product img{width:100%;height:10rem;object-fit:cover;border-radius:4px}.price{font-weight:600}.was{text-decoration:line-through;\
color:#8a8a93;margin-left:.4rem}.out{color:#b3261e}nav{margin:1.5rem 0}nav a{margin-right:1rem}\
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.4rem;border-bottom:1px solid #eee}\
input[type=number]{width:4.5rem}button{padding:.5rem 1.2rem;font-size:1rem}.done{color:#1e7b34;font-weight:600}";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/shop/{token}").route(web::get().to(storefront)))
        .service(web::resource("/basket/{token}").route(web::get().to(basket)).route(web::post().to(submit_basket)));
}

#[derive(Debug, Deserialize)]
pub struct PageQuery {
    page: Option<i64>,
}

/// The storefront page; 404 (a page too) for an unknown token or a shop off its storefront.
pub async fn storefront(
    state: web::Data<AppState>,
    token: web::Path<String>,
    query: web::Query<PageQuery>,
) -> HttpResponse {
    match state.commerce.storefront(&token, query.page.unwrap_or(1)).await {
        Ok(shop) => page(StatusCode::OK, &shop.name, STYLE, &render(&shop, &token)),
        Err(error) if error.is(kernel::ErrorKind::NotFound) => page(
            StatusCode::NOT_FOUND,
            "Shop not found",
            STYLE,
            "<h1>Shop not found</h1><p>This link is not a shop.</p>",
        ),
        Err(error) => {
            tracing::error!(error = %error, "the storefront page failed");
            page(StatusCode::SERVICE_UNAVAILABLE, "Try again", STYLE, "<h1>Try again in a moment</h1>")
        }
    }
}

fn render(shop: &Storefront, token: &str) -> String {
    let mut body = format!("<h1>{}</h1>", escape(&shop.name));
    if let Some(description) = &shop.description {
        body.push_str(&format!("<p class=\"muted\">{}</p>", escape(description)));
    }
    if shop.products.is_empty() {
        body.push_str("<p>No products yet.</p>");
        return body;
    }
    body.push_str("<ul class=\"products\">");
    for product in &shop.products {
        body.push_str(&product_card(product));
    }
    body.push_str("</ul>");
    if shop.last_page > 1 {
        let link = |page: i64, label: &str| format!("<a href=\"/shop/{}?page={page}\">{label}</a>", escape(token));
        body.push_str("<nav>");
        if shop.page > 1 {
            body.push_str(&link(shop.page - 1, "Previous"));
        }
        body.push_str(&format!("<span class=\"muted\">Page {} of {}</span>", shop.page, shop.last_page));
        if shop.page < shop.last_page {
            body.push_str(&link(shop.page + 1, "Next"));
        }
        body.push_str("</nav>");
    }
    body
}

fn product_card(product: &Product) -> String {
    let image = product
        .image_url
        .as_deref()
        .filter(|url| url.starts_with("https://") || url.starts_with("http://"))
        .map(|url| format!("<img src=\"{}\" alt=\"\" loading=\"lazy\">", escape(url)))
        .unwrap_or_default();
    let price = match product.sale_price {
        Some(sale) if sale < product.price => format!(
            "<span class=\"price\">{}</span><span class=\"was\">{}</span>",
            escape(&money(sale, &product.currency)),
            escape(&money(product.price, &product.currency))
        ),
        _ => format!("<span class=\"price\">{}</span>", escape(&money(product.price, &product.currency))),
    };
    let availability = match product.availability.as_str() {
        "in stock" => "<span class=\"in\">In stock</span>".to_owned(),
        other => format!("<span class=\"out\">{}</span>", escape(&capitalised(other))),
    };
    let description =
        product.description.as_deref().map(|d| format!("<p class=\"muted\">{}</p>", escape(d))).unwrap_or_default();
    format!(
        "<li class=\"product\" id=\"{sku}\" data-sku=\"{sku}\">{image}<h2>{name}</h2><p>{price}</p><p>{availability}</p>{description}</li>",
        sku = escape(&product.sku),
        name = escape(&product.name),
    )
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// The basket page.
pub async fn basket(state: web::Data<AppState>, token: web::Path<String>) -> HttpResponse {
    basket_answer(&state, &token, StatusCode::OK, None).await
}

/// The basket page's form: `qty:<sku>` quantities and the customer's `name`. Placed, it shows
/// the basket again (now ordered); refused, the page says why.
pub async fn submit_basket(
    state: web::Data<AppState>,
    token: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> HttpResponse {
    let mut submission = Submission::default();
    for (name, value) in form.into_inner() {
        if let Some(sku) = name.strip_prefix("qty:") {
            let Ok(quantity) = value.trim().parse::<i64>() else {
                return basket_answer(
                    &state,
                    &token,
                    StatusCode::UNPROCESSABLE_ENTITY,
                    Some("Quantities are whole numbers."),
                )
                .await;
            };
            submission.quantities.push((sku.to_owned(), quantity));
        } else if name == "name" {
            submission.customer_name = Some(value.chars().take(191).collect());
        }
    }
    match state.commerce.submit_basket(&token, submission).await {
        // after a POST, a GET: reloading the page does not order twice
        Ok(_) => {
            HttpResponse::SeeOther().insert_header((header::LOCATION, format!("/basket/{}", token.as_str()))).finish()
        }
        Err(error) if error.is(kernel::ErrorKind::NotFound) => {
            basket_answer(&state, &token, StatusCode::NOT_FOUND, None).await
        }
        Err(error) if error.is(kernel::ErrorKind::Conflict) => {
            basket_answer(&state, &token, StatusCode::CONFLICT, Some(&error.message)).await
        }
        Err(error) if error.is(kernel::ErrorKind::Validation) => {
            let why = error.errors.values().flatten().next().cloned().unwrap_or(error.message.clone());
            basket_answer(&state, &token, StatusCode::UNPROCESSABLE_ENTITY, Some(&why)).await
        }
        Err(error) => {
            tracing::error!(error = %error, "a basket could not be submitted");
            basket_answer(&state, &token, StatusCode::SERVICE_UNAVAILABLE, Some("Try again in a moment.")).await
        }
    }
}

async fn basket_answer(state: &AppState, token: &str, status: StatusCode, alert: Option<&str>) -> HttpResponse {
    match state.commerce.basket_page(token).await {
        Ok(basket) => {
            let mut body = render_basket(&basket, token, alert);
            body.push_str(&pay_step(state, &basket).await);
            page(status, &format!("Basket {}", basket.basket.code), STYLE, &body)
        }
        Err(error) if error.is(kernel::ErrorKind::NotFound) => page(
            StatusCode::NOT_FOUND,
            "Basket not found",
            STYLE,
            "<h1>Basket not found</h1><p>This link is not a basket.</p>",
        ),
        Err(error) => {
            tracing::error!(error = %error, "the basket page failed");
            page(StatusCode::SERVICE_UNAVAILABLE, "Try again", STYLE, "<h1>Try again in a moment</h1>")
        }
    }
}

/// An ordered basket's pay step: a link to the order's checkout page while money is owed.
async fn pay_step(state: &AppState, basket: &BasketPage) -> String {
    let Some(order) = basket.basket.order_id.filter(|_| basket.basket.status == "ordered") else {
        return String::new();
    };
    match state.payments.checkout_for_order(basket.tenant_id, commerce::OrderId(order)).await {
        // a relative link: the page's own origin, whatever the public URL says
        Ok(Some(payment)) => match payment.checkout_url.as_ref().and(payment.checkout_token.as_ref()) {
            Some(token) => {
                format!("<p><a id=\"pay\" href=\"/pay/{}\">Pay {} now</a></p>", escape(token), escape(&payment.amount))
            }
            None => String::new(),
        },
        Ok(None) => String::new(),
        Err(error) => {
            tracing::error!(error = %error, "the basket's pay step failed");
            String::new()
        }
    }
}

fn render_basket(page: &BasketPage, token: &str, alert: Option<&str>) -> String {
    let basket = &page.basket;
    let mut body =
        format!("<h1>Your basket at {}</h1><p class=\"muted\">Basket {}</p>", escape(&page.shop), escape(&basket.code));
    if let Some(alert) = alert {
        body.push_str(&format!("<p role=\"alert\" class=\"out\">{}</p>", escape(alert)));
    }
    let lines: String = basket
        .items
        .iter()
        .map(|item| {
            let mut detail = Vec::new();
            if let Some(variant) = &item.variant {
                detail.push(escape(variant));
            }
            if !item.options.is_empty() {
                detail.push(format!("with {}", escape(&item.options.join(", "))));
            }
            if let Some(note) = &item.note {
                detail.push(format!("note: {}", escape(note)));
            }
            let detail = if detail.is_empty() {
                String::new()
            } else {
                format!("<br><span class=\"muted\">{}</span>", detail.join(" · "))
            };
            let quantity = match basket.status.as_str() {
                "ordered" | "expired" => item.quantity.to_string(),
                _ => quantity_input(&item.sku, item.quantity),
            };
            format!(
                "<tr data-sku=\"{sku}\"><td>{name}{detail}</td><td>{unit}</td><td>{quantity}</td><td>{total}</td></tr>",
                sku = escape(&item.sku),
                name = escape(&item.name),
                unit = escape(&money(item.unit_price_minor, &item.currency)),
                total = escape(&money(item.line_total_minor, &item.currency)),
            )
        })
        .collect();
    match basket.status.as_str() {
        "ordered" => {
            body.push_str(&format!(
                "<p class=\"done\">Thank you! Your order {} is placed.</p><table><tr><th>Item</th><th>Price</th><th>Quantity</th><th>Total</th></tr>{lines}</table><p class=\"price\">Total {}</p>",
                basket.order_id.map(|id| format!("#{id}")).unwrap_or_default(),
                escape(&money(basket.subtotal_minor, &basket.currency))
            ));
            return body;
        }
        "expired" => {
            body.push_str("<p class=\"out\">This basket has expired. Ask the shop for a new link.</p>");
            return body;
        }
        _ => {}
    }
    let in_basket: Vec<&str> = basket.items.iter().map(|i| i.sku.as_str()).collect();
    let more: String = page
        .offer
        .iter()
        .filter(|p| !in_basket.contains(&p.sku.as_str()))
        .map(|product| {
            let unit = product.sale_price.unwrap_or(product.price);
            format!(
                "<tr data-sku=\"{sku}\"><td>{name}<br><span class=\"muted\">{availability}</span></td><td>{unit}</td><td>{quantity}</td><td></td></tr>",
                sku = escape(&product.sku),
                name = escape(&product.name),
                availability = escape(&product.availability),
                unit = escape(&money(unit, &product.currency)),
                quantity = quantity_input(&product.sku, 0),
            )
        })
        .collect();
    body.push_str(&format!(
        "<form method=\"post\" action=\"/basket/{token}\"><table><tr><th>Item</th><th>Price</th><th>Quantity</th><th>Total</th></tr>{lines}{more}</table>\
         <p class=\"price\">Subtotal {subtotal}</p><label for=\"name\">Your name</label><input id=\"name\" name=\"name\" maxlength=\"191\">\
         <p><button type=\"submit\">Place order</button></p></form>",
        token = escape(token),
        subtotal = escape(&money(basket.subtotal_minor, &basket.currency)),
    ));
    if let Some(note) = &basket.note {
        body.push_str(&format!("<p class=\"muted\">{}</p>", escape(note)));
    }
    body
}

fn quantity_input(sku: &str, quantity: i32) -> String {
    format!(
        "<input type=\"number\" name=\"qty:{sku}\" value=\"{quantity}\" min=\"0\" max=\"{max}\" aria-label=\"Quantity of {sku}\">",
        sku = escape(sku),
        max = commerce::baskets::MAX_QUANTITY,
    )
}
