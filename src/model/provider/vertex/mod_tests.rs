//! Unit tests of the Vertex AI wire: the SDK's base per region and its path quoting.

use super::*;

#[test]
fn the_base_per_region_is_the_sdks() {
    assert_eq!(base_url("global"), "https://aiplatform.googleapis.com/v1");
    assert_eq!(
        base_url("us"),
        "https://aiplatform.us.rep.googleapis.com/v1"
    );
    assert_eq!(
        base_url("eu"),
        "https://aiplatform.eu.rep.googleapis.com/v1"
    );
    assert_eq!(
        base_url("europe-west1"),
        "https://europe-west1-aiplatform.googleapis.com/v1"
    );
}

#[test]
fn the_path_quotes_each_segment_and_the_last_semicolon() {
    assert_eq!(
        model_path("p", "us-east5", "claude-sonnet-4-5@20250929"),
        "/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    );
    assert_eq!(
        model_path("a b/c", "global", "m;x"),
        "/projects/a%20b%2Fc/locations/global/publishers/anthropic/models/m%3Bx:streamRawPredict"
    );
}
