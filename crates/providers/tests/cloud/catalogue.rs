//! The chat catalogue through the Cloud API's commerce, against the same local fake of the
//! Graph API: catalogues on the business account, `items_batch` writes and `products` reads.

use providers::catalogue::{CatalogueError, CatalogueGateway, CatalogueItem, ItemOutcome, MAX_BATCH};

use super::*;

const CATALOGUE_ID: &str = "1190471505621841";
const CATALOGS_PATH: &str = "/v21.0/102290129340398/product_catalogs";
const BATCH_PATH: &str = "/v21.0/1190471505621841/items_batch";
const PRODUCTS_PATH: &str = "/v21.0/1190471505621841/products";
const PRODUCT_FIELDS: &str =
    "retailer_id,name,description,price,sale_price,currency,availability,image_url,brand,category,inventory";

/// A product with everything the shop may tell.
fn kanga() -> CatalogueItem {
    CatalogueItem {
        retailer_id: "KANGA-RED-01".into(),
        name: "Kanga, red".into(),
        description: Some("Cotton kanga with a proverb".into()),
        price_minor: 4_500_000,
        sale_price_minor: Some(3_999_950),
        currency: "TZS".into(),
        availability: "in stock".into(),
        image_url: Some("https://cdn.example.com/kanga.jpg".into()),
        brand: Some("Duka la Asha".into()),
        category: Some("Apparel & Accessories > Clothing".into()),
        inventory: Some(12),
    }
}

/// A product with only what the catalogue requires.
fn bare(retailer_id: &str) -> CatalogueItem {
    CatalogueItem {
        retailer_id: retailer_id.into(),
        name: format!("Item {retailer_id}"),
        description: None,
        price_minor: 5,
        sale_price_minor: None,
        currency: "TZS".into(),
        availability: "out of stock".into(),
        image_url: None,
        brand: None,
        category: None,
        inventory: None,
    }
}

fn batch_answer(validation_status: Value) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .set_body_json(json!({"handles": ["AcyT8PZ3Yd0XOuuJ8Bv2ltIh"], "validation_status": validation_status}))
}

async fn requests_of(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.expect("requests are recorded")
}

fn refused(reason: &str) -> CatalogueError {
    CatalogueError::Refused { reason: reason.into() }
}

#[tokio::test]
async fn a_catalogue_is_created_on_the_business_account() {
    let server =
        server_on("POST", CATALOGS_PATH, ResponseTemplate::new(200).set_body_json(json!({"id": CATALOGUE_ID}))).await;
    let id = cloud(&server).create_catalogue(WABA_ID, "Duka la Asha").await;
    assert_eq!(id, Ok(CATALOGUE_ID.to_owned()));
    let request = only_request(&server).await;
    assert_eq!(request.method.as_str(), "POST");
    assert_eq!(header(&request, "authorization"), Some(format!("Bearer {TOKEN}")));
    assert!(header(&request, "content-type").is_some_and(|c| c.starts_with("application/json")));
    assert_eq!(body_of(&request), json!({"name": "Duka la Asha"}));

    let server = server_on("POST", CATALOGS_PATH, ResponseTemplate::new(200).set_body_json(json!({}))).await;
    let outcome = cloud(&server).create_catalogue(WABA_ID, "Duka la Asha").await;
    assert!(matches!(outcome, Err(CatalogueError::Failed(SendError::Malformed(_)))), "{outcome:?}");
}

#[tokio::test]
async fn an_existing_catalogue_is_connected_by_its_id() {
    let server =
        server_on("POST", CATALOGS_PATH, ResponseTemplate::new(200).set_body_json(json!({"success": true}))).await;
    assert_eq!(cloud(&server).connect_catalogue(WABA_ID, CATALOGUE_ID).await, Ok(()));
    let request = only_request(&server).await;
    assert_eq!(header(&request, "authorization"), Some(format!("Bearer {TOKEN}")));
    assert_eq!(body_of(&request), json!({"catalog_id": CATALOGUE_ID}));

    let server =
        server_on("POST", CATALOGS_PATH, ResponseTemplate::new(200).set_body_json(json!({"success": false}))).await;
    let outcome = cloud(&server).connect_catalogue(WABA_ID, CATALOGUE_ID).await;
    assert!(matches!(outcome, Err(CatalogueError::Failed(SendError::Malformed(_)))), "{outcome:?}");

    let server = server_on(
        "POST",
        CATALOGS_PATH,
        graph_error(
            400,
            json!({
                "message": "(#100) Param catalog_id must be a valid catalog id",
                "type": "OAuthException",
                "code": 100,
                "fbtrace_id": "Ax1"
            }),
        ),
    )
    .await;
    assert_eq!(
        cloud(&server).connect_catalogue(WABA_ID, "404404").await,
        Err(refused("(#100) Param catalog_id must be a valid catalog id"))
    );
}

#[tokio::test]
async fn items_are_upserted_as_the_batch_api_takes_them() {
    let server = server_on("POST", BATCH_PATH, batch_answer(json!([]))).await;
    let outcomes = cloud(&server).upsert_items(CATALOGUE_ID, &[kanga(), bare("PIN-7")]).await;
    assert_eq!(outcomes, Ok(vec![ItemOutcome::Accepted, ItemOutcome::Accepted]));
    let request = only_request(&server).await;
    assert_eq!(header(&request, "authorization"), Some(format!("Bearer {TOKEN}")));
    assert_eq!(
        body_of(&request),
        json!({
            "item_type": "PRODUCT_ITEM",
            "allow_upsert": true,
            "requests": [
                {"method": "UPDATE", "data": {
                    "id": "KANGA-RED-01",
                    "title": "Kanga, red",
                    "description": "Cotton kanga with a proverb",
                    "price": "45000.00 TZS",
                    "sale_price": "39999.50 TZS",
                    "availability": "in stock",
                    "image_link": "https://cdn.example.com/kanga.jpg",
                    "brand": "Duka la Asha",
                    "category": "Apparel & Accessories > Clothing",
                    "inventory": 12
                }},
                {"method": "UPDATE", "data": {
                    "id": "PIN-7",
                    "title": "Item PIN-7",
                    "price": "0.05 TZS",
                    "availability": "out of stock"
                }}
            ]
        })
    );

    // No answer body at all is not the batch API's answer
    let server = server_on("POST", BATCH_PATH, ResponseTemplate::new(200).set_body_string("ok")).await;
    let outcome = cloud(&server).upsert_items(CATALOGUE_ID, &[bare("PIN-7")]).await;
    assert!(matches!(outcome, Err(CatalogueError::Failed(SendError::Malformed(_)))), "{outcome:?}");
}

#[tokio::test]
async fn refused_items_are_named_with_the_providers_words_in_the_order_given() {
    let server = server_on(
        "POST",
        BATCH_PATH,
        batch_answer(json!([
            {"retailer_id": "C", "errors": [{"message": "Invalid image_link"}]},
            {"retailer_id": "B", "errors": [], "warnings": [{"message": "Missing brand"}]},
            {"retailer_id": "A", "errors": [
                {"message": "Price must be positive"},
                {"message": "Title is too long"}
            ]},
            {"retailer_id": "Z", "errors": [{"message": "not one of ours"}]}
        ])),
    )
    .await;
    let outcomes = cloud(&server).upsert_items(CATALOGUE_ID, &[bare("A"), bare("B"), bare("C"), bare("D")]).await;
    assert_eq!(
        outcomes,
        Ok(vec![
            ItemOutcome::Refused { reason: "Price must be positive; Title is too long".into() },
            ItemOutcome::Accepted,
            ItemOutcome::Refused { reason: "Invalid image_link".into() },
            ItemOutcome::Accepted,
        ])
    );
}

#[tokio::test]
async fn a_batch_over_the_limit_goes_in_two_requests() {
    let last = format!("SKU-{MAX_BATCH}");
    let server =
        server_on("POST", BATCH_PATH, batch_answer(json!([{"retailer_id": last, "errors": [{"message": "No"}]}])))
            .await;
    let items: Vec<CatalogueItem> = (0..=MAX_BATCH).map(|n| bare(&format!("SKU-{n}"))).collect();
    let outcomes = cloud(&server).upsert_items(CATALOGUE_ID, &items).await.expect("outcomes");
    assert_eq!(outcomes.len(), MAX_BATCH + 1);
    assert!(outcomes[..MAX_BATCH].iter().all(|o| *o == ItemOutcome::Accepted));
    assert_eq!(outcomes[MAX_BATCH], ItemOutcome::Refused { reason: "No".into() });

    let requests = requests_of(&server).await;
    assert_eq!(requests.len(), 2);
    let sizes: Vec<usize> = requests.iter().map(|r| body_of(r)["requests"].as_array().map_or(0, Vec::len)).collect();
    assert_eq!(sizes, vec![MAX_BATCH, 1]);
    assert_eq!(body_of(&requests[1])["requests"][0]["data"]["id"], json!(last));

    let deletes: Vec<String> = (0..=MAX_BATCH).map(|n| format!("SKU-{n}")).collect();
    server.reset().await;
    Mock::given(method("POST")).and(path(BATCH_PATH)).respond_with(batch_answer(json!([]))).mount(&server).await;
    assert_eq!(cloud(&server).delete_items(CATALOGUE_ID, &deletes).await, Ok(()));
    assert_eq!(requests_of(&server).await.len(), 2);
}

#[tokio::test]
async fn items_are_deleted_by_retailer_id_and_missing_ones_are_fine() {
    let server = server_on(
        "POST",
        BATCH_PATH,
        batch_answer(json!([{"retailer_id": "GONE-1", "errors": [{"message": "Product not found"}]}])),
    )
    .await;
    let ids = vec!["KANGA-RED-01".to_owned(), "GONE-1".to_owned()];
    assert_eq!(cloud(&server).delete_items(CATALOGUE_ID, &ids).await, Ok(()));
    let request = only_request(&server).await;
    assert_eq!(header(&request, "authorization"), Some(format!("Bearer {TOKEN}")));
    assert_eq!(
        body_of(&request),
        json!({
            "item_type": "PRODUCT_ITEM",
            "requests": [
                {"method": "DELETE", "data": {"id": "KANGA-RED-01"}},
                {"method": "DELETE", "data": {"id": "GONE-1"}}
            ]
        })
    );
}

#[tokio::test]
async fn nothing_to_do_asks_nothing() {
    let server = MockServer::start().await;
    let cloud = cloud(&server);
    assert_eq!(cloud.upsert_items(CATALOGUE_ID, &[]).await, Ok(vec![]));
    assert_eq!(cloud.delete_items(CATALOGUE_ID, &[]).await, Ok(()));
    assert_eq!(cloud.items(CATALOGUE_ID, &[]).await, Ok(vec![]));
    assert!(requests_of(&server).await.is_empty());
}

#[tokio::test]
async fn items_are_read_across_pages_with_their_prices() {
    let server = MockServer::start().await;
    let next = format!("{}{PRODUCTS_PATH}?access_token={TOKEN}&after=QVFIUmFr", server.uri());
    Mock::given(method("GET"))
        .and(path(PRODUCTS_PATH))
        .and(query_param_is_missing("after"))
        .and(bearer_token(TOKEN))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [
                {
                    "id": "7316",
                    "retailer_id": "KANGA-RED-01",
                    "name": "Kanga, red",
                    "description": "Cotton kanga with a proverb",
                    "price": "45000.00 TZS",
                    "sale_price": "TZS 39,999.50",
                    "currency": "TZS",
                    "availability": "in stock",
                    "image_url": "https://cdn.example.com/kanga.jpg",
                    "brand": "Duka la Asha",
                    "category": "Apparel & Accessories > Clothing",
                    "inventory": 12
                },
                // Not asked for: left out even when the provider sends it
                {"id": "7317", "retailer_id": "OTHER", "name": "Other", "price": "1", "currency": "TZS"}
            ],
            "paging": {"cursors": {"after": "QVFIUmFr"}, "next": next}
        })))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(PRODUCTS_PATH))
        .and(query_param("after", "QVFIUmFr"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [
                {"id": "7318", "retailer_id": "PIN-7", "name": "Item PIN-7", "price": "TZS 1,234,567.8",
                 "availability": "out of stock"},
                {"id": "7319", "retailer_id": "BEAD-3", "name": "Beads", "price": "2500",
                 "currency": "TZS", "availability": "in stock", "inventory": "0"}
            ]
        })))
        .mount(&server)
        .await;

    let ids: Vec<String> = ["KANGA-RED-01", "PIN-7", "BEAD-3", "NEVER-4"].map(str::to_owned).to_vec();
    let items = cloud(&server).items(CATALOGUE_ID, &ids).await.expect("items");
    assert_eq!(
        items,
        vec![
            kanga(),
            CatalogueItem { name: "Item PIN-7".into(), price_minor: 123_456_780, ..bare("PIN-7") },
            CatalogueItem {
                name: "Beads".into(),
                price_minor: 250_000,
                availability: "in stock".into(),
                inventory: Some(0),
                ..bare("BEAD-3")
            },
        ]
    );

    let requests = requests_of(&server).await;
    assert_eq!(requests.len(), 2);
    let first = query(&requests[0]);
    assert_eq!(first.get("fields").map(String::as_str), Some(PRODUCT_FIELDS));
    let filter: Value = serde_json::from_str(&first["filter"]).expect("a JSON filter");
    assert_eq!(filter, json!({"retailer_id": {"is_any": ["KANGA-RED-01", "PIN-7", "BEAD-3", "NEVER-4"]}}));
    for request in &requests {
        assert_eq!(header(request, "authorization"), Some(format!("Bearer {TOKEN}")));
    }
}

#[tokio::test]
async fn many_retailer_ids_are_read_a_hundred_at_a_time() {
    let server = server_on("GET", PRODUCTS_PATH, ResponseTemplate::new(200).set_body_json(json!({"data": []}))).await;
    let mut ids: Vec<String> = (0..150).map(|n| format!("SKU-{n}")).collect();
    ids.push("SKU-0".into());
    assert_eq!(cloud(&server).items(CATALOGUE_ID, &ids).await, Ok(vec![]));
    let requests = requests_of(&server).await;
    let asked: Vec<Vec<String>> = requests
        .iter()
        .map(|request| {
            let filter: Value = serde_json::from_str(&query(request)["filter"]).expect("a JSON filter");
            serde_json::from_value(filter["retailer_id"]["is_any"].clone()).expect("ids")
        })
        .collect();
    assert_eq!(asked, vec![ids[..100].to_vec(), ids[100..150].to_vec()]);
}

#[tokio::test]
async fn unreadable_products() {
    for (product, named) in [
        (json!({"retailer_id": "A", "name": "A", "price": "forty TZS", "currency": "TZS"}), "price"),
        (json!({"retailer_id": "A", "name": "A", "price": "1.005 TZS", "currency": "TZS"}), "price"),
        (json!({"retailer_id": "A", "name": "A", "price": "1", "currency": "TZS", "sale_price": "?"}), "sale_price"),
        (json!({"retailer_id": "A", "name": "A", "price": "1"}), "currency"),
        (json!({"retailer_id": "A", "price": "1 TZS"}), "name"),
        (json!({"retailer_id": "A", "name": "A", "price": "1 TZS", "inventory": 1e12}), "inventory"),
    ] {
        let server = server_on(
            "GET",
            PRODUCTS_PATH,
            ResponseTemplate::new(200).set_body_json(json!({"data": [product.clone()]})),
        )
        .await;
        let outcome = cloud(&server).items(CATALOGUE_ID, &["A".to_owned()]).await;
        let Err(CatalogueError::Failed(SendError::Malformed(text))) = &outcome else {
            panic!("{product}: expected Malformed, got {outcome:?}")
        };
        assert!(text.contains(named), "{text} should name {named}");
    }
}

/// Every call of the gateway against a fake that answers every request with `response`.
async fn every_call_answered(response: ResponseTemplate) -> Vec<(&'static str, Result<(), CatalogueError>)> {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any()).respond_with(response).mount(&server).await;
    every_call(&cloud(&server)).await
}

async fn every_call(cloud: &Cloud) -> Vec<(&'static str, Result<(), CatalogueError>)> {
    let ids = ["KANGA-RED-01".to_owned()];
    vec![
        ("create", cloud.create_catalogue(WABA_ID, "Duka").await.map(drop)),
        ("connect", cloud.connect_catalogue(WABA_ID, CATALOGUE_ID).await),
        ("upsert", cloud.upsert_items(CATALOGUE_ID, &[kanga()]).await.map(drop)),
        ("delete", cloud.delete_items(CATALOGUE_ID, &ids).await),
        ("items", cloud.items(CATALOGUE_ID, &ids).await.map(drop)),
    ]
}

#[tokio::test]
async fn a_stated_error_is_a_refusal_in_the_providers_words() {
    let outcomes = every_call_answered(graph_error(
        400,
        json!({
            "message": "Invalid parameter",
            "type": "OAuthException",
            "code": 100,
            "error_subcode": 1_892_022,
            "error_user_msg": "The catalogue belongs to another business.",
            "fbtrace_id": "Bq7"
        }),
    ))
    .await;
    let reason = "(#100) Invalid parameter: The catalogue belongs to another business.";
    for (call, outcome) in outcomes {
        if call == "items" {
            // Reads go through the shared paging, which gives a refusal as a Malformed failure
            assert_eq!(outcome, Err(CatalogueError::Failed(SendError::Malformed("(#100) Invalid parameter".into()))));
        } else {
            assert_eq!(outcome, Err(refused(reason)), "{call}");
        }
    }
}

#[tokio::test]
async fn throttling_and_server_trouble_are_failures() {
    let cases = [
        (500, ResponseTemplate::new(500)),
        (503, graph_error(503, json!({"message": "Service unavailable", "code": 2}))),
        (429, graph_error(429, json!({"message": "Too many requests", "code": 80007}))),
        (400, graph_error(400, json!({"message": "Application request limit reached", "code": 4}))),
        (400, graph_error(400, json!({"message": "Rate limit issues", "code": 80007}))),
        (400, ResponseTemplate::new(400).set_body_string("<html>bad request</html>")),
    ];
    for (status, response) in cases {
        for (call, outcome) in every_call_answered(response).await {
            assert_eq!(outcome, Err(CatalogueError::Failed(SendError::Status { status })), "{call} {status}");
        }
    }
}

#[tokio::test]
async fn the_token_is_never_in_an_error() {
    let outcomes = every_call_answered(graph_error(
        401,
        json!({"message": "Invalid OAuth access token - Cannot parse access token", "code": 190}),
    ))
    .await;
    for (call, outcome) in outcomes {
        let error = outcome.expect_err(call);
        let text = format!("{error} {error:?}");
        assert!(text.contains("(#190) Invalid OAuth access token"), "{call}: {text}");
        assert!(!text.contains(TOKEN), "{call}: {text}");
    }

    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let cloud = Cloud::new(
        providers::http_client().expect("http client"),
        config(format!("http://127.0.0.1:{port}"), Duration::from_secs(5)),
    );
    for (call, outcome) in every_call(&cloud).await {
        let Err(error @ CatalogueError::Failed(SendError::Transport(_))) = outcome else {
            panic!("{call}: expected Transport, got {outcome:?}")
        };
        let text = format!("{error} {error:?}");
        assert!(!text.contains(TOKEN), "{call}: {text}");
    }

    let server = server_on("POST", CATALOGS_PATH, accepted_answer().set_delay(Duration::from_millis(600))).await;
    let outcome = cloud_with_timeout(&server, Duration::from_millis(200)).create_catalogue(WABA_ID, "Duka").await;
    assert_eq!(outcome, Err(CatalogueError::Failed(SendError::Timeout)));
}
