//! `install.sh` (run with `dash` where there is one, else `sh`: POSIX only) against a
//! loopback server of a release directory packed by `ci/release/pack.sh` from the binary
//! under test: it installs, re-installs over an existing binary, and fails closed with its
//! own message and exit code on a checksum mismatch, a missing checksum line, a 404 and an
//! unsupported platform, never leaving anything but the old binary behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::support::files::FileServer;

pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The release target install.sh picks on this machine (the musl build on Linux).
pub(crate) fn host_target() -> String {
    let os = match std::env::consts::OS {
        "macos" => "apple-darwin",
        _ => "unknown-linux-musl",
    };
    format!("{}-{os}", std::env::consts::ARCH)
}

pub(crate) fn archive_name() -> String {
    format!("agent-{VERSION}-{}.tar.gz", host_target())
}

/// One release directory per test process, packed from the binary under test.
pub(crate) fn release_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("release-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = Command::new("bash")
            .arg(repo().join("ci/release/pack.sh"))
            .arg(&dir)
            .arg(VERSION)
            .arg(host_target())
            .arg(crate::support::agent_bin())
            .env("AGENT_PACK_GZIP_LEVEL", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "pack.sh: {out:?}");
        dir
    })
}

/// A shell that is POSIX and nothing more, where the machine has one.
fn posix_sh() -> &'static str {
    if Path::new("/usr/bin/dash").exists() || Path::new("/bin/dash").exists() {
        "dash"
    } else {
        "sh"
    }
}

struct Install {
    server: FileServer,
    tmp: tempfile::TempDir,
}

impl Install {
    fn new() -> Install {
        Install {
            server: FileServer::start(release_dir()),
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn bin_dir(&self) -> PathBuf {
        self.tmp.path().join("bin")
    }

    fn run(&self, vars: &[(&str, &str)]) -> Output {
        let path = format!(
            "{}:{}",
            self.tmp.path().join("fake").display(),
            std::env::var("PATH").unwrap()
        );
        let mut c = Command::new(posix_sh());
        c.arg(repo().join("install.sh"))
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.tmp.path())
            .env("AGENT_DOWNLOAD_URL", self.server.url())
            .env("AGENT_INSTALL_DIR", self.bin_dir());
        for (k, v) in vars {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    /// What the install directory holds (names), sorted.
    fn installed(&self) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(self.bin_dir()) else {
            return Vec::new();
        };
        let mut names: Vec<String> = dir
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// An older `agent` already installed: a script that says so.
    fn put_old_binary(&self) -> Vec<u8> {
        std::fs::create_dir_all(self.bin_dir()).unwrap();
        let old = b"#!/bin/sh\necho agent 0.0.1-old\n".to_vec();
        let p = self.bin_dir().join("agent");
        std::fs::write(&p, &old).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        old
    }

    fn fake_uname(&self, os: &str, arch: &str) {
        let dir = self.tmp.path().join("fake");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("uname");
        let script = format!(
            "#!/bin/sh\ncase \"$1\" in -s) echo {os} ;; -m) echo {arch} ;; *) echo {os} ;; esac\n"
        );
        std::fs::write(&p, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn version_line() -> String {
    let out = Command::new(crate::support::agent_bin())
        .arg("--version")
        .output()
        .unwrap();
    text(&out.stdout).trim().to_string()
}

#[test]
fn install_sh_installs_the_latest_then_reinstalls_a_version_over_it() {
    let t = Install::new();
    let out = t.run(&[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let dest = t.bin_dir().join("agent");
    assert!(
        stderr.contains(&format!("installed {}", dest.display())),
        "{stderr}"
    );
    assert_eq!(stdout.trim(), version_line());
    assert_eq!(t.installed(), ["agent"]);
    assert_eq!(
        std::fs::read(&dest).unwrap(),
        std::fs::read(crate::support::agent_bin()).unwrap()
    );
    let base = format!("/v{VERSION}");
    assert_eq!(
        t.server.requests(),
        [
            "/latest".to_string(),
            format!("{base}/SHA256SUMS"),
            format!("{base}/{}", archive_name())
        ]
    );

    // Over an existing binary, with the version given (a leading v is accepted).
    t.put_old_binary();
    let out = t.run(&[("AGENT_VERSION", &format!("v{VERSION}"))]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), version_line());
    assert_eq!(t.installed(), ["agent"]);
    assert_eq!(
        std::fs::read(&dest).unwrap(),
        std::fs::read(crate::support::agent_bin()).unwrap()
    );
}

#[test]
fn install_sh_refuses_a_truncated_download_and_keeps_the_old_binary() {
    let t = Install::new();
    let old = t.put_old_binary();
    let archive = std::fs::read(
        release_dir()
            .join(format!("v{VERSION}"))
            .join(archive_name()),
    )
    .unwrap();
    t.server.set(
        &format!("/v{VERSION}/{}", archive_name()),
        archive[..archive.len() / 2].to_vec(),
    );
    let out = t.run(&[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains(&format!("checksum mismatch for {}", archive_name())),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was installed"), "{stderr}");
    assert_eq!(t.installed(), ["agent"]);
    assert_eq!(std::fs::read(t.bin_dir().join("agent")).unwrap(), old);
}

#[test]
fn install_sh_refuses_an_archive_without_a_checksum_line() {
    let t = Install::new();
    let sums =
        std::fs::read_to_string(release_dir().join(format!("v{VERSION}/SHA256SUMS"))).unwrap();
    let others: String = sums
        .lines()
        .filter(|l| !l.ends_with(&archive_name()))
        .map(|l| format!("{l}\n"))
        .chain(["0000  agent-other.tar.gz\n".to_string()])
        .collect();
    t.server
        .set(&format!("/v{VERSION}/SHA256SUMS"), others.into_bytes());
    let out = t.run(&[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains(&format!("has no checksum for {}", archive_name())),
        "{stderr}"
    );
    assert!(t.installed().is_empty(), "{:?}", t.installed());
}

#[test]
fn install_sh_reports_a_version_that_is_not_there() {
    let t = Install::new();
    let out = t.run(&[("AGENT_VERSION", "9.9.9")]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot download {}/v9.9.9/SHA256SUMS: HTTP 404",
            t.server.url()
        )),
        "{stderr}"
    );
    assert!(t.installed().is_empty());
}

#[test]
fn install_sh_refuses_an_unsupported_platform_before_downloading() {
    let t = Install::new();
    t.fake_uname("Linux", "riscv64");
    let out = t.run(&[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unsupported architecture: riscv64 on Linux"),
        "{stderr}"
    );
    t.fake_uname("FreeBSD", "amd64");
    let out = t.run(&[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unsupported operating system: FreeBSD"),
        "{stderr}"
    );
    assert!(t.server.requests().is_empty(), "{:?}", t.server.requests());
    assert!(t.installed().is_empty());
}

/// The Action's install steps (`ci/action/install.sh key`, then `install`) in a simulated
/// runner: HOME, RUNNER_OS/RUNNER_ARCH and GITHUB_OUTPUT in a temporary directory, the
/// release server on loopback, and a fake `cargo` that only records being called.
struct Runner {
    server: FileServer,
    tmp: tempfile::TempDir,
}

impl Runner {
    fn new() -> Runner {
        let r = Runner {
            server: FileServer::start(release_dir()),
            tmp: tempfile::tempdir().unwrap(),
        };
        let fake = r.tmp.path().join("fake");
        std::fs::create_dir_all(&fake).unwrap();
        let cargo = fake.join("cargo");
        let script = format!(
            "#!/bin/sh\necho \"$@\" >> {}\nexit 1\n",
            r.tmp.path().join("cargo-calls").display()
        );
        std::fs::write(&cargo, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
        r
    }

    fn step(&self, what: &str, version_input: &str) -> (Output, String) {
        let outputs = self.tmp.path().join(format!("github-output-{what}"));
        let _ = std::fs::remove_file(&outputs);
        let path = format!(
            "{}:{}",
            self.tmp.path().join("fake").display(),
            std::env::var("PATH").unwrap()
        );
        let (os, arch) = match (std::env::consts::OS, std::env::consts::ARCH) {
            ("macos", "aarch64") => ("macOS", "ARM64"),
            ("macos", _) => ("macOS", "X64"),
            (_, "aarch64") => ("Linux", "ARM64"),
            _ => ("Linux", "X64"),
        };
        let out = Command::new("bash")
            .arg(repo().join("ci/action/install.sh"))
            .arg(what)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.tmp.path())
            .env("RUNNER_OS", os)
            .env("RUNNER_ARCH", arch)
            .env("GITHUB_OUTPUT", &outputs)
            .env("AGENT_DOWNLOAD_URL", self.server.url())
            .env("AGENT_VERSION_INPUT", version_input)
            .output()
            .unwrap();
        (out, std::fs::read_to_string(&outputs).unwrap_or_default())
    }

    fn bin(&self) -> PathBuf {
        self.tmp.path().join(".agent-action/bin/agent")
    }

    fn cargo_calls(&self) -> String {
        std::fs::read_to_string(self.tmp.path().join("cargo-calls")).unwrap_or_default()
    }
}

#[test]
fn the_action_installs_its_own_release_once_then_uses_the_cache() {
    let r = Runner::new();
    let (out, outputs) = r.step("key", "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(outputs.contains("mode=release\n"), "{outputs}");
    assert!(
        outputs.contains(&format!("version={VERSION}\n")),
        "{outputs}"
    );
    assert!(
        outputs.contains(&format!("key=agent-release-{VERSION}-")),
        "{outputs}"
    );

    let (out, _) = r.step("install", "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(r.bin()).unwrap(),
        std::fs::read(crate::support::agent_bin()).unwrap()
    );
    let downloads = r.server.requests();
    assert!(
        downloads.contains(&format!("/v{VERSION}/{}", archive_name())),
        "{downloads:?}"
    );

    // What actions/cache restores: the same directory, the same version. Nothing is
    // downloaded again and nothing is built.
    let (out, _) = r.step("install", &format!("v{VERSION}"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("already installed (cached)"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(r.server.requests(), downloads);
    assert_eq!(r.cargo_calls(), "");
}

#[test]
fn the_action_fails_on_a_bad_checksum_and_never_builds_instead() {
    let r = Runner::new();
    let sums =
        std::fs::read_to_string(release_dir().join(format!("v{VERSION}/SHA256SUMS"))).unwrap();
    let name = archive_name();
    let bad: String = sums
        .lines()
        .map(|l| match l.strip_suffix(name.as_str()) {
            Some(_) => format!("{}  {name}\n", "0".repeat(64)),
            None => format!("{l}\n"),
        })
        .collect();
    r.server
        .set(&format!("/v{VERSION}/SHA256SUMS"), bad.into_bytes());
    let (out, _) = r.step("install", "");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("checksum mismatch"), "{stderr}");
    assert!(stderr.contains("::error::installing agent"), "{stderr}");
    assert!(!r.bin().exists());
    assert_eq!(r.cargo_calls(), "");
}

#[test]
fn the_action_builds_from_source_only_when_asked_or_when_its_version_has_no_release() {
    // A version given that has no release: a failure, not a silent build.
    let r = Runner::new();
    let (out, _) = r.step("install", "9.9.9");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(r.cargo_calls(), "");

    // `version: source`: the source-hash key, and cargo install of the Action's checkout.
    let (out, outputs) = r.step("key", "source");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(outputs.contains("mode=source\n"), "{outputs}");
    assert!(!outputs.contains("key=agent-release-"), "{outputs}");
    let (out, _) = r.step("install", "source");
    assert!(!out.status.success());
    let calls = r.cargo_calls();
    assert!(calls.starts_with("install --locked --path "), "{calls}");

    // The default version on a ref with no release (the server has none): built.
    let empty = tempfile::tempdir().unwrap();
    let r = Runner {
        server: FileServer::start(empty.path()),
        tmp: r.tmp,
    };
    std::fs::remove_file(r.tmp.path().join("cargo-calls")).unwrap();
    let (_, _) = r.step("install", "");
    assert!(
        r.cargo_calls().starts_with("install --locked --path "),
        "{}",
        r.cargo_calls()
    );
}
