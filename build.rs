//! Release link option for the `agent` binary: packed relative relocations (DT_RELR).
//!
//! A PIE binary's ~17k relative relocations (vtables, static string tables) were a 414 KB
//! `.rela.dyn` that the loader reads whole at every start: ~0.7 MB of the small session's
//! peak RSS (see README "Performance"). DT_RELR packs them into ~5 KB and keeps ASLR (a
//! non-PIE link saves about as much but puts the code at a fixed address). The loader must
//! know DT_RELR: glibc 2.36+, which the linker records as the `GLIBC_ABI_DT_RELR` version
//! (an older glibc refuses to start the binary), so the option is only added for a
//! native Linux glibc build whose own glibc has it. Debug builds and tests are unchanged.
//! The release targets need nothing here: cargo-zigbuild links the musl ones static and
//! non-PIE (no relative relocations at all: `readelf -r` shows none), and Mach-O has its
//! own compact form (chained fixups, the linker's default for current macOS versions).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("HOST") == var("TARGET");
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if var("PROFILE") != "release" || !native || !linux_gnu {
        return;
    }
    if glibc_minor().is_some_and(|minor| minor >= 36) {
        println!("cargo:rustc-link-arg-bin=agent=-Wl,-z,pack-relative-relocs");
    }
}

/// The build machine's glibc minor version, from `getconf GNU_LIBC_VERSION` ("glibc 2.36").
fn glibc_minor() -> Option<u32> {
    let out = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.trim().strip_prefix("glibc 2.")?;
    version.split('.').next()?.parse().ok()
}
