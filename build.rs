//! Release link options for the `agent` binary: packed relative relocations (DT_RELR) and
//! the hot functions first in `.text` (`--symbol-ordering-file`).
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
//!
//! The code a run executes (~2.5 MB of 11 MB, ci/link/hot-symbols.txt, written by
//! ci/bench/hot_symbols.py) is placed first: the kernel maps a file's cached pages 64 KB
//! at a time around each fault, so hot functions spread over the whole `.text` made ~5.6 MB
//! of code resident in a 101-turn session (decision 0134). Only LLD takes the list, the
//! linker rustc uses for x86_64-unknown-linux-gnu unless told otherwise, so it is added
//! only there and only when no other linker is configured. Names the list holds that the
//! build no longer has (a dependency or the toolchain changed) are skipped silently: a
//! stale list costs memory, never a failed build.

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
    let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("ci/link/hot-symbols.txt");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    if order.is_file()
        && rust_lld(
            &var("TARGET"),
            &var("RUSTC_LINKER"),
            &var("CARGO_ENCODED_RUSTFLAGS"),
        )
    {
        // -Xlinker, not -Wl: a comma in the checkout's path must not split the argument.
        println!("cargo:rustc-link-arg-bin=agent=-Xlinker");
        println!(
            "cargo:rustc-link-arg-bin=agent=--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=agent=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether rustc links with its own LLD: its default for x86_64-unknown-linux-gnu (since
/// 1.90), unless a linker is configured or the flags choose one (`-C linker-features`,
/// `-C link-self-contained`, `-fuse-ld`). GNU ld would refuse the ordering option.
fn rust_lld(target: &str, linker: &str, rustflags: &str) -> bool {
    let chooses = ["linker", "link-self-contained", "fuse-ld"];
    target == "x86_64-unknown-linux-gnu"
        && linker.is_empty()
        && !rustflags
            .split('\x1f')
            .any(|f| chooses.iter().any(|c| f.contains(c)))
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
