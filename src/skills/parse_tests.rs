use super::*;

fn parsed(file: &str, folder: &str) -> Result<Parsed, String> {
    let (yaml, _) = split(file.as_bytes())?;
    front_matter(yaml, folder)
}

#[test]
fn a_valid_skill_has_no_warnings() {
    let p = parsed(
        "---\nname: pdf-processing\ndescription: Extract PDF text.\nlicense: Apache-2.0\n\
         compatibility: needs python3\nmetadata:\n  author: me\n  version: \"1.0\"\n\
         allowed-tools: Bash(git:*) ReadFile\n---\n# Body\n",
        "pdf-processing",
    )
    .unwrap();
    assert_eq!(p.warnings, Vec::<String>::new());
    assert_eq!(p.meta.name, "pdf-processing");
    assert_eq!(p.meta.license.as_deref(), Some("Apache-2.0"));
    assert_eq!(p.meta.metadata["version"], "1.0");
    assert_eq!(p.meta.allowed_tools, ["Bash(git:*)", "ReadFile"]);
}

#[test]
fn split_gives_the_body_offset_and_takes_crlf_and_a_bom() {
    let f = "\u{feff}---\r\nname: a\r\ndescription: d\r\n---\r\nbody";
    let (yaml, at) = split(f.as_bytes()).unwrap();
    assert!(yaml.contains("description: d"));
    assert_eq!(&f[at..], "body");
}

#[test]
fn cosmetic_violations_load_with_warnings() {
    let bad_chars = parsed("---\nname: PDF_Tool\ndescription: d\n---\n", "PDF_Tool").unwrap();
    assert!(
        bad_chars.warnings[0].contains("other than a-z"),
        "{:?}",
        bad_chars.warnings
    );
    let other = parsed("---\nname: pdf\ndescription: d\n---\n", "pdf-tools").unwrap();
    assert_eq!(other.warnings.len(), 1);
    assert!(other.warnings[0].contains("differs from its folder `pdf-tools`"));
    let long = format!("---\nname: a\ndescription: {}\n---\n", "x".repeat(1025));
    let long = parsed(&long, "a").unwrap();
    assert!(
        long.warnings[0].contains("1025 characters"),
        "{:?}",
        long.warnings
    );
    for (name, rule) in [
        ("-a", "hyphen"),
        ("a-", "hyphen"),
        ("a--b", "consecutive"),
        (&"a".repeat(65), "over the specification's 64"),
    ] {
        let w = name_problems(name, name);
        assert!(w.iter().any(|w| w.contains(rule)), "{name}: {w:?}");
    }
    let no_name = parsed("---\ndescription: d\n---\n", "folder").unwrap();
    assert_eq!(no_name.meta.name, "folder");
    assert!(no_name.warnings[0].contains("no name"));
}

#[test]
fn unusable_skills_are_errors_saying_why() {
    let no_desc = parsed("---\nname: a\n---\n", "a").unwrap_err();
    assert!(no_desc.contains("no description"), "{no_desc}");
    let empty_desc = parsed("---\nname: a\ndescription: \"  \"\n---\n", "a").unwrap_err();
    assert!(empty_desc.contains("no description"));
    let none = split(b"# Just markdown\n").unwrap_err();
    assert!(none.contains("no front matter"), "{none}");
    let open = split(b"---\nname: a\ndescription: d\n").unwrap_err();
    assert!(open.contains("not closed"), "{open}");
    let not_yaml = parsed("---\nname: [a\ndescription: {d\n---\n", "a").unwrap_err();
    assert!(not_yaml.contains("not YAML"), "{not_yaml}");
    let list = parsed("---\n- a\n- b\n---\n", "a").unwrap_err();
    assert!(list.contains("not a mapping"), "{list}");
    let bytes = b"---\nname: a\ndescription: caf\xe9\n---\n";
    let e = split(bytes).unwrap_err();
    assert!(e.contains("not UTF-8"), "{e}");
}

#[test]
fn an_unquoted_colon_is_read_through_the_guides_fallback() {
    let p = parsed(
        "---\nname: a\ndescription: Use this skill when: the user asks about PDFs\n---\n",
        "a",
    )
    .unwrap();
    assert_eq!(
        p.meta.description,
        "Use this skill when: the user asks about PDFs"
    );
}

#[test]
fn unknown_fields_are_warned_about_and_disable_model_invocation_hides() {
    let p = parsed(
        "---\nname: a\ndescription: d\nargument-hint: x\ndisable-model-invocation: true\n---\n",
        "a",
    )
    .unwrap();
    assert!(p.meta.hidden);
    assert_eq!(p.warnings.len(), 1);
    assert!(p.warnings[0].contains("`argument-hint` is not in the specification"));
}

#[test]
fn no_bytes_panic_the_parser() {
    // Every prefix of a valid file, and a few hostile shapes.
    let f = "---\nname: a\ndescription: |\n  multi\n  line: yes\nmetadata: {k: v}\n---\nbody\n";
    for cut in 0..=f.len() {
        let _ = split(&f.as_bytes()[..cut]).map(|(y, _)| front_matter(y, "a"));
    }
    for hostile in [
        "---\na: &a [*a, *a]\n---\n",
        "---\n!!binary x\n---\n",
        "---\n? [a]\n: b\n---\n",
        "---\n\0\u{1}\n---\n",
        "---\n---\n",
    ] {
        let _ = parsed(hostile, "a");
    }
}

#[test]
fn pseudo_random_bytes_never_panic() {
    // A fixed xorshift stream: 20,000 inputs mixing front-matter pieces and raw bytes.
    let pieces: &[&[u8]] = &[
        b"---\n",
        b"name: ",
        b"description: ",
        b": ",
        b"\n",
        b"'",
        b"\"",
        b"|\n  ",
        b"- ",
        b"{",
        b"[",
        b"&a ",
        b"*a",
        b"\xff",
        b"\xc3",
        b"#",
        b"metadata:\n  k: v\n",
        b"\r\n",
    ];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..20_000 {
        let mut input = b"---\n".to_vec();
        for _ in 0..(next() % 24) {
            let r = next();
            if r % 3 == 0 {
                input.push((r >> 8) as u8);
            } else {
                input.extend_from_slice(pieces[(r >> 8) as usize % pieces.len()]);
            }
        }
        if next() % 2 == 0 {
            input.extend_from_slice(b"\n---\nbody");
        }
        if let Ok((yaml, at)) = split(&input) {
            assert!(at <= input.len());
            let _ = front_matter(yaml, "f");
        }
    }
}
