//! Test helpers shared by the file tools' tests.
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tools::ToolContext;

/// A workspace `ws`, a sibling `outside/secret.txt`, and a spill dir outside the
/// workspace, all under one temp dir (kept alive by the returned guard).
pub(crate) fn setup() -> (tempfile::TempDir, ToolContext) {
    let outer = tempfile::tempdir().unwrap();
    let base = outer.path().canonicalize().unwrap();
    std::fs::create_dir(base.join("ws")).unwrap();
    std::fs::create_dir(base.join("outside")).unwrap();
    std::fs::write(base.join("outside/secret.txt"), "secret\n").unwrap();
    std::fs::create_dir(base.join("spill")).unwrap();
    let mut ctx = ToolContext::for_workspace(base.join("ws"));
    ctx.spill_dir = base.join("spill");
    (outer, ctx)
}

/// The outside directory of `setup`.
pub(crate) fn outside(ctx: &ToolContext) -> std::path::PathBuf {
    ctx.workspace.parent().unwrap().join("outside")
}

/// Every entry under `dir`, sorted, to prove that nothing was created or changed.
pub(crate) fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let data = if p.is_file() {
            std::fs::read(&p).unwrap()
        } else {
            Vec::new()
        };
        out.push((p.display().to_string(), data));
    }
    out.sort();
    out
}

pub(crate) fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// Runs `f` on a thread and fails the test if it does not return (a hang guard, not a
/// timing assertion: any finite time passes).
pub(crate) fn without_hanging<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the call hung")
}

/// The schema and the typed input struct agree: the full example passes both; the
/// example names every schema property; dropping a field fails serde exactly when the
/// schema requires it; an unknown field fails both.
pub(crate) fn assert_schema_agrees<T: DeserializeOwned>(schema: &Value, full: &Value) {
    let props = schema["properties"].as_object().expect("properties");
    let full_obj = full.as_object().expect("object example");
    let mut prop_names: Vec<&String> = props.keys().collect();
    let mut example_names: Vec<&String> = full_obj.keys().collect();
    prop_names.sort();
    example_names.sort();
    assert_eq!(
        prop_names, example_names,
        "the example must use every schema property"
    );
    assert_eq!(schema["additionalProperties"], Value::Bool(false));
    for (name, p) in props {
        assert!(
            p["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{name}: description"
        );
    }
    crate::tools::schema::validate(schema, full).unwrap();
    serde_json::from_value::<T>(full.clone()).unwrap();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for name in full_obj.keys() {
        let mut partial = full_obj.clone();
        partial.remove(name);
        let serde_ok = serde_json::from_value::<T>(Value::Object(partial.clone())).is_ok();
        let schema_ok = crate::tools::schema::validate(schema, &Value::Object(partial)).is_ok();
        let is_required = required.contains(&name.as_str());
        assert_eq!(serde_ok, !is_required, "serde vs `required` for {name}");
        assert_eq!(schema_ok, !is_required, "schema vs `required` for {name}");
    }
    let mut extra = full_obj.clone();
    extra.insert("bogus_field".into(), Value::Bool(true));
    assert!(serde_json::from_value::<T>(Value::Object(extra.clone())).is_err());
    assert!(crate::tools::schema::validate(schema, &Value::Object(extra)).is_err());
}
