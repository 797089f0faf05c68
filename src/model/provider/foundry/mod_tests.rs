//! Unit tests of the Foundry wire: the resource's URL and the two key headers.

use super::*;

#[test]
fn the_resource_url_and_the_key_headers() {
    assert_eq!(
        base_url("my-res"),
        "https://my-res.services.ai.azure.com/anthropic"
    );
    let wire = FoundryWire::default();
    let config = HttpConfig::new("http://x", "k3y-0123456789");
    let headers = wire.headers(&config);
    assert!(headers.contains(&("x-api-key", "k3y-0123456789".into())));
    assert!(headers.contains(&("api-key", "k3y-0123456789".into())));
    let mut with_token = config.clone();
    with_token.gateway.auth_token = Some("entra".into());
    let headers = wire.headers(&with_token);
    assert!(headers.contains(&("authorization", "Bearer entra".into())));
    assert!(
        headers
            .iter()
            .all(|(n, _)| *n != "api-key" && *n != "x-api-key")
    );
}
