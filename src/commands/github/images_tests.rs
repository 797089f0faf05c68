//! Tests of the image links of a body and of the hosts they may be fetched from.

use super::*;

#[test]
fn links_finds_markdown_html_and_bare_attachments_once_in_order() {
    let body = "see ![shot](https://github.com/user-attachments/assets/a1) and \
                <img width=\"300\" src=\"https://private-user-images.githubusercontent.com/1/x.png?jwt=a&amp;b=c\">\n\
                https://github.com/user-attachments/assets/b2 and [a link](https://example.com/page) \
                ![again](https://github.com/user-attachments/assets/a1) <IMG SRC='http://other/x.png'>";
    assert_eq!(
        links(body),
        vec![
            "https://github.com/user-attachments/assets/a1",
            "https://private-user-images.githubusercontent.com/1/x.png?jwt=a&b=c",
            "https://github.com/user-attachments/assets/b2",
            "http://other/x.png",
        ]
    );
}

#[test]
fn only_githubs_hosts_and_the_configured_origins_are_github() {
    let h = Hosts::new("https://ghe.corp/api/v3", "https://ghe.corp");
    assert!(h.is_github("https://github.com/user-attachments/assets/a"));
    assert!(h.is_github("https://user-images.githubusercontent.com/x.png"));
    assert!(h.is_github("https://ghe.corp:443/storage/x.png"));
    assert!(
        !h.is_github("http://github.com/x.png"),
        "not over plain http"
    );
    assert!(!h.is_github("https://evil.com/?github.com"));
    assert!(!h.is_github("https://github.com.evil.com/x.png"));
    assert!(!h.is_github("https://githubusercontent.com.evil.com/x.png"));
    assert!(!h.is_github("https://token@github.com/x.png"));
    assert!(!h.is_github("https://ghe.corp:8443/x.png"), "another port");
    let local = Hosts::new("http://127.0.0.1:4000", "https://github.com");
    assert!(local.is_github("http://127.0.0.1:4000/img"));
    assert!(!local.is_github("http://127.0.0.1:4001/img"));
}

#[test]
fn a_location_is_made_absolute() {
    assert_eq!(join("https://a.b/c/d", "https://x.y/z"), "https://x.y/z");
    assert_eq!(join("https://a.b/c/d", "/z"), "https://a.b/z");
    assert_eq!(join("https://a.b/c/d", "//x.y/z"), "https://x.y/z");
    assert_eq!(join("https://a.b/c/d", "e"), "https://a.b/c/e");
}
