//! The sign-in and consent page in a real headless Chromium (issue 16): a person signs in,
//! reads what the client asks for and what will be granted, allows it, and the browser lands
//! on the client's redirect URI with the code, which the client exchanges and uses. The
//! browser keeps the page's `__Host-` cookies over loopback as it would over https.

use api_tests::browser::Browser;
use api_tests::json;
use fantoccini::Locator;
use serde_json::Value;
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::oauth::{BASE, PASSWORD, authorize_path, person, pkce, register};
use super::support::{connect, ok};

#[actix_web::test]
async fn a_person_signs_in_and_allows_a_client_in_a_real_browser() {
    let app = api_tests::spawn().await;
    let server = app.listen();
    person(&app, "leads.view,contacts.view", "amina@duka.example").await;
    // the client: a native app listening on loopback for the redirect
    let callback = MockServer::start().await;
    Mock::given(path("/callback"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("<p>Signed in</p>", "text/html"))
        .mount(&callback)
        .await;
    let redirect = format!("{}/callback", callback.uri());
    let client_id = register(&server, &redirect).await;
    let (verifier, challenge) = pkce("browser");
    let url = format!(
        "{}{}",
        server.url,
        authorize_path(&client_id, &challenge, "mcp:contacts mcp:write", &[("redirect_uri", &redirect)])
    );

    let browser = Browser::start().await;
    browser.goto(&url).await.expect("open the authorization URL");
    // a wrong password first: the page says so and keeps the request
    sign_in(&browser, "amina@duka.example", "not it at all").await;
    let alert = browser.wait().for_element(Locator::Css("[role=alert]")).await.expect("the refusal");
    assert_eq!(alert.text().await.expect("text"), "Wrong email or password.");
    sign_in(&browser, "amina@duka.example", PASSWORD).await;

    // the consent page: who asks, where it sends the person, what it gets
    let heading = browser.wait().for_element(Locator::XPath("//h1[text()='Allow access?']")).await.expect("consent");
    assert_eq!(heading.text().await.expect("text"), "Allow access?");
    let page = browser.find(Locator::Css("body")).await.expect("body").text().await.expect("text");
    assert!(page.contains("Claude (test)"), "{page}");
    assert!(page.contains(callback.address().to_string().as_str()), "the redirect host: {page}");
    // leads.view reads contacts but writes nothing: mcp:write is shown as withheld
    assert!(page.contains("It will be granted 2 of the 3 scopes"), "{page}");
    let withheld = browser.find(Locator::Css("li.no code")).await.expect("a withheld scope");
    assert_eq!(withheld.text().await.expect("text"), "mcp:write");
    browser.find(Locator::Css("button[value=approve]")).await.expect("allow").click().await.expect("click");

    // back at the client with the code, the state and the issuer
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let current = loop {
        let current = browser.current_url().await.expect("url");
        if current.as_str().starts_with(&redirect) {
            break current;
        }
        assert!(std::time::Instant::now() < deadline, "the browser never reached the redirect URI: {current}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let back: std::collections::BTreeMap<String, String> =
        current.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    assert_eq!(back["state"], "xyz-state");
    assert_eq!(back["iss"], BASE);
    browser.close().await;

    let tokens: Value = reqwest::Client::new()
        .post(format!("{}/oauth/token", server.url))
        .form(&[
            ("grant_type", "authorization_code"),
            ("client_id", client_id.as_str()),
            ("code", back["code"].as_str()),
            ("redirect_uri", redirect.as_str()),
            ("code_verifier", verifier.as_str()),
        ])
        .send()
        .await
        .expect("token")
        .json()
        .await
        .expect("json");
    assert_eq!(tokens["scope"], "mcp:contacts mcp:use", "{tokens}");
    let access = tokens["access_token"].as_str().expect("access token");
    let client = connect(&server, "/mcp/v1/contacts", access).await;
    let found = ok(&client, "find_leads", json!({})).await;
    assert!(found["items"].is_array(), "{found}");
}

/// Types into the sign-in form and submits it, as a person would.
async fn sign_in(browser: &Browser, email: &str, password: &str) {
    for (field, text) in [("#email", email), ("#password", password)] {
        let input = browser.find(Locator::Css(field)).await.unwrap_or_else(|e| panic!("{field}: {e}"));
        input.send_keys(text).await.expect("type");
    }
    browser.find(Locator::Css("button[type=submit]")).await.expect("sign in").click().await.expect("click");
}
