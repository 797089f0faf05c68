//! `install.sh` (run with `dash` where there is one, else `sh`: POSIX only) against a
//! loopback server of a release directory packed by `ci/release/pack.sh` from the binary
//! under test and signed by `ci/release/sign.sh` with a minisign key of the test's own:
//! it installs, re-installs over an existing binary, and fails closed with its own message
//! and exit code on a signature that does not verify, a checksum mismatch, a missing
//! checksum line, a 404, an unsupported platform and another program called `agent`,
//! never leaving anything but the old binary behind. And the install commands of the
//! README and the book name only the packages of `ci/release/names.env`.

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

/// Whether `minisign` is installed (`.ci/run` installs it). Without it the signature
/// tests say SKIPPED, except under CI, where they fail.
fn has_minisign() -> bool {
    let found = Command::new("minisign")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "minisign is not installed (.ci/run installs it: apt-get install minisign)"
        );
    }
    found
}

/// The test's own minisign key pair (no password), made once per test process: the
/// release is signed with it and install.sh is given its public key.
struct TestKey {
    secret: PathBuf,
    public: String,
}

fn test_key() -> Option<&'static TestKey> {
    static KEY: OnceLock<Option<TestKey>> = OnceLock::new();
    KEY.get_or_init(|| {
        if !has_minisign() {
            return None;
        }
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("minisign-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (secret, public) = (dir.join("test.key"), dir.join("test.pub"));
        let out = Command::new("minisign")
            .args(["-G", "-W", "-p"])
            .arg(&public)
            .arg("-s")
            .arg(&secret)
            .output()
            .unwrap();
        assert!(out.status.success(), "minisign -G: {out:?}");
        let text = std::fs::read_to_string(&public).unwrap();
        let public = text.lines().nth(1).unwrap().trim().to_string();
        Some(TestKey { secret, public })
    })
    .as_ref()
}

/// One release directory per test process, packed from the binary under test and signed
/// (where minisign is installed) with the test key, by the release scripts themselves.
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
        if let Some(key) = test_key() {
            let out = Command::new("bash")
                .arg(repo().join("ci/release/sign.sh"))
                .arg(&dir)
                .env("MINISIGN_SECRET_KEY_FILE", &key.secret)
                .env("MINISIGN_PUBKEY", &key.public)
                .output()
                .unwrap();
            assert!(out.status.success(), "sign.sh: {out:?}");
        }
        dir
    })
}

/// The signature of `sums` by `key` (a SHA256SUMS a test edits, signed again: the
/// checksum checks behind the signature are then what fails).
fn sign_with(key: &Path, sums: &[u8]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("SHA256SUMS");
    std::fs::write(&file, sums).unwrap();
    let out = Command::new("minisign")
        .arg("-S")
        .arg("-s")
        .arg(key)
        .arg("-m")
        .arg(&file)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "minisign -S: {out:?}");
    std::fs::read(dir.path().join("SHA256SUMS.minisig")).unwrap()
}

/// Serves `sums` as the release's SHA256SUMS, with a valid signature of it where the
/// release is signed.
fn serve_sums(server: &FileServer, sums: String) {
    if let Some(key) = test_key() {
        server.set(
            &format!("/v{VERSION}/SHA256SUMS.minisig"),
            sign_with(&key.secret, sums.as_bytes()),
        );
    }
    server.set(&format!("/v{VERSION}/SHA256SUMS"), sums.into_bytes());
}

/// A directory of links to every command on PATH except `tool`: a machine without it.
fn path_without(tool: &str, under: &Path) -> PathBuf {
    let dir = under.join(format!("path-without-{tool}"));
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::env::split_paths(&std::env::var_os("PATH").unwrap()) {
        let Ok(list) = std::fs::read_dir(&entry) else {
            continue;
        };
        for e in list.flatten() {
            let name = e.file_name();
            let link = dir.join(&name);
            if name != tool && !link.exists() {
                let _ = std::os::unix::fs::symlink(e.path(), &link);
            }
        }
    }
    dir
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
        self.run_with_path(&path, vars)
    }

    fn run_with_path(&self, path: &str, vars: &[(&str, &str)]) -> Output {
        let mut c = Command::new(posix_sh());
        c.arg(repo().join("install.sh"))
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.tmp.path())
            .env("AGENT_DOWNLOAD_URL", self.server.url())
            .env("AGENT_INSTALL_DIR", self.bin_dir());
        if let Some(key) = test_key() {
            c.env("AGENT_MINISIGN_PUBKEY", &key.public);
        }
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
    let mut downloads = vec!["/latest".to_string(), format!("{base}/SHA256SUMS")];
    if test_key().is_some() {
        downloads.push(format!("{base}/SHA256SUMS.minisig"));
        assert!(
            stderr.contains("signature of SHA256SUMS verified (minisign"),
            "{stderr}"
        );
    }
    downloads.push(format!("{base}/{}", archive_name()));
    assert_eq!(t.server.requests(), downloads);

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
    serve_sums(&t.server, others);
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

/// A release whose SHA256SUMS is not the one the project signed: an archive and its
/// checksum both swapped (what a compromised server or a man in the middle would serve),
/// a signature by another key, no signature at all. Each is exit 8 before the archive is
/// downloaded, and the old binary stays.
#[test]
fn install_sh_refuses_a_release_whose_signature_does_not_verify() {
    let Some(key) = test_key() else {
        eprintln!("SKIPPED: minisign is not installed");
        return;
    };
    let sums_path = format!("/v{VERSION}/SHA256SUMS");
    let sums = std::fs::read_to_string(release_dir().join(&sums_path[1..])).unwrap();
    let swapped: String = sums
        .lines()
        .map(|l| match l.strip_suffix(archive_name().as_str()) {
            Some(_) => format!("{}  {}\n", "ab".repeat(32), archive_name()),
            None => format!("{l}\n"),
        })
        .collect();
    let other_key = tempfile::tempdir().unwrap();
    let other_secret = other_key.path().join("other.key");
    let out = Command::new("minisign")
        .args(["-G", "-W", "-p"])
        .arg(other_key.path().join("other.pub"))
        .arg("-s")
        .arg(&other_secret)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");

    let archive = format!("/v{VERSION}/{}", archive_name());
    let cases = [
        ("checksums swapped, the project's old signature", None),
        (
            "checksums swapped and signed by another key",
            Some(sign_with(&other_secret, swapped.as_bytes())),
        ),
    ];
    for (what, new_sig) in cases {
        let t = Install::new();
        let old = t.put_old_binary();
        t.server.set(&sums_path, swapped.clone().into_bytes());
        if let Some(sig) = new_sig {
            t.server.set(&format!("{sums_path}.minisig"), sig);
        }
        let out = t.run(&[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(8), "{what}: {stderr}");
        assert!(
            stderr.contains(&format!("does not verify with the key {}", key.public)),
            "{what}: {stderr}"
        );
        assert!(stderr.contains("nothing was installed"), "{what}: {stderr}");
        assert_eq!(t.installed(), ["agent"], "{what}");
        assert_eq!(std::fs::read(t.bin_dir().join("agent")).unwrap(), old);
        assert!(!t.server.requests().contains(&archive), "{what}");
    }

    // No signature at all: a server of the release without SHA256SUMS.minisig (404).
    let empty = tempfile::tempdir().unwrap();
    let t = Install {
        server: FileServer::start(empty.path()),
        tmp: tempfile::tempdir().unwrap(),
    };
    t.server.set("/latest", format!("{VERSION}\n").into_bytes());
    t.server.set(&sums_path, sums.into_bytes());
    t.server.set(
        &archive,
        std::fs::read(release_dir().join(&archive[1..])).unwrap(),
    );
    let out = t.run(&[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(8), "{stderr}");
    assert!(stderr.contains("SHA256SUMS.minisig: HTTP 404"), "{stderr}");
    assert!(
        stderr.contains("an unsigned release is refused"),
        "{stderr}"
    );
    assert!(t.installed().is_empty());
    assert!(!t.server.requests().contains(&archive));
}

/// Without minisign the install goes on (the checksum is still checked) and says that the
/// signature was not; AGENT_REQUIRE_SIGNATURE=1 makes that a failure instead.
#[test]
fn install_sh_without_minisign_says_so_or_fails_when_required() {
    let t = Install::new();
    let path = path_without("minisign", t.tmp.path());
    let out = t.run_with_path(path.to_str().unwrap(), &[("AGENT_REQUIRE_SIGNATURE", "1")]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert!(
        stderr.contains("AGENT_REQUIRE_SIGNATURE=1 but minisign is not installed"),
        "{stderr}"
    );
    assert!(t.installed().is_empty());

    let out = t.run_with_path(path.to_str().unwrap(), &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("minisign is not installed: the signature of SHA256SUMS was not checked"),
        "{stderr}"
    );
    assert_eq!(text(&out.stdout).trim(), version_line());
    assert!(
        !t.server.requests().iter().any(|r| r.ends_with(".minisig")),
        "{:?}",
        t.server.requests()
    );
}

/// Another program called `agent` (Cursor's CLI installs ~/.local/bin/agent, the same
/// path) is never replaced unless asked; AGENT_BIN_NAME installs ours beside it, and an
/// `agent` earlier on PATH than the one installed is pointed out.
#[test]
fn install_sh_never_replaces_another_program_called_agent() {
    let t = Install::new();
    let foreign = b"#!/bin/sh\necho 2026.02.13-a1b2c3d\n".to_vec();
    let write_foreign = |dir: &Path| {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join("agent");
        std::fs::write(&p, &foreign).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write_foreign(&t.bin_dir());
    let out = t.run(&[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{stderr}");
    assert!(
        stderr.contains("is another program (its --version says '2026.02.13-a1b2c3d')"),
        "{stderr}"
    );
    assert!(
        stderr.contains("AGENT_BIN_NAME=ci-coding-agent"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(t.bin_dir().join("agent")).unwrap(), foreign);

    // Beside it, under the package's name.
    let out = t.run(&[("AGENT_BIN_NAME", "ci-coding-agent")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(t.installed(), ["agent", "ci-coding-agent"]);
    assert_eq!(std::fs::read(t.bin_dir().join("agent")).unwrap(), foreign);
    let out = t.run(&[("AGENT_BIN_NAME", "../agent")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));

    // Replaced when asked.
    let out = t.run(&[("AGENT_FORCE", "1")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(t.bin_dir().join("agent")).unwrap(),
        std::fs::read(crate::support::agent_bin()).unwrap()
    );

    // Installed, but another `agent` comes first on PATH: said, with both paths.
    let t = Install::new();
    let earlier = t.tmp.path().join("earlier");
    write_foreign(&earlier);
    let path = format!(
        "{}:{}:{}",
        earlier.display(),
        t.bin_dir().display(),
        std::env::var("PATH").unwrap()
    );
    let out = t.run_with_path(&path, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "`agent` on PATH is {}, not {}",
            earlier.join("agent").display(),
            t.bin_dir().join("agent").display()
        )),
        "{stderr}"
    );
}

/// `ci/release/names.env` as a map.
fn names() -> std::collections::BTreeMap<String, String> {
    std::fs::read_to_string(repo().join("ci/release/names.env"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The code of a Markdown text, one piece per inline code span or fenced block: where
/// commands are (prose may say "a `cargo install` is minutes").
fn code_pieces(md: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut fence: Option<String> = None;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            match fence.take() {
                Some(block) => pieces.push(block),
                None => fence = Some(String::new()),
            }
            continue;
        }
        if let Some(block) = fence.as_mut() {
            block.push_str(line);
            block.push('\n');
            continue;
        }
        pieces.extend(line.split('`').skip(1).step_by(2).map(str::to_string));
    }
    pieces
}

/// The package each install command in `text` names: `npm i -g X`, `npx X`, `pipx install
/// X`, `pip install X`, `uvx --from X`, `cargo install … X` (not `--path`), `docker pull X`.
fn installed_packages(text: &str) -> Vec<String> {
    const COMMANDS: [&[&str]; 10] = [
        &["npm", "i", "-g"],
        &["npm", "install", "-g"],
        &["npx"],
        &["pipx", "install"],
        &["pipx", "run", "--spec"],
        &["pip", "install"],
        &["uvx", "--from"],
        &["uv", "tool", "install"],
        &["cargo", "install"],
        &["docker", "pull"],
    ];
    const WITH_VALUE: [&str; 8] = [
        "--git",
        "--bin",
        "--root",
        "--version",
        "--rev",
        "--tag",
        "--branch",
        "--index-url",
    ];
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || "`|;()&".contains(c))
        .filter(|w| !w.is_empty())
        .collect();
    let mut found = Vec::new();
    for i in 0..words.len() {
        for cmd in COMMANDS {
            if words.len() < i + cmd.len() || words[i..i + cmd.len()] != *cmd {
                continue;
            }
            let mut j = i + cmd.len();
            let mut local = false;
            while j < words.len() && words[j].starts_with('-') {
                local |= words[j] == "--path";
                j += if WITH_VALUE.contains(&words[j]) { 2 } else { 1 };
            }
            if let (false, Some(w)) = (local, words.get(j)) {
                let w = w.trim_matches(|c| c == '\'' || c == '"' || c == ',');
                // npm's and pip's version pins, an image's tag.
                let name = w.split(['@', '=', '>', '<']).next().unwrap_or(w);
                let name = name.rsplit_once(':').map_or(name, |(n, _)| n);
                found.push(name.to_string());
            }
        }
    }
    found
}

/// Every install command of README's Install sections and of the book's install page names
/// a package of names.env (a name checked free on its registry and ours), and the names are
/// the ones Cargo.toml and install.sh use; the name that was someone else's is gone.
#[test]
fn install_commands_name_only_our_packages() {
    let names = names();
    let ours: Vec<&str> = ["NPM_NAME", "PYPI_NAME", "CRATE_NAME", "IMAGE_NAME"]
        .iter()
        .map(|k| {
            names
                .get(*k)
                .unwrap_or_else(|| panic!("names.env has no {k}"))
                .as_str()
        })
        .collect();
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut sections = String::new();
    let mut inside = false;
    for line in readme.lines() {
        if line.starts_with("## ") {
            inside = line.starts_with("## Install");
        }
        if inside {
            sections.push_str(line);
            sections.push('\n');
        }
    }
    let page = std::fs::read_to_string(repo().join("docs/guide/install.md")).unwrap();
    for (doc, text) in [
        ("README.md Install", &sections),
        ("docs/guide/install.md", &page),
    ] {
        let found: Vec<String> = code_pieces(text)
            .iter()
            .flat_map(|p| installed_packages(p))
            .collect();
        assert!(found.len() >= 3, "{doc}: {found:?}");
        for name in &found {
            assert!(
                ours.contains(&name.as_str()),
                "{doc} installs `{name}`, not in names.env {ours:?}"
            );
        }
        assert!(
            !text.contains("agent-runner"),
            "{doc} still names agent-runner"
        );
    }
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!("\nname = \"{}\"\n", names["CRATE_NAME"])),
        "Cargo.toml's package is not CRATE_NAME"
    );
    let install = std::fs::read_to_string(repo().join("install.sh")).unwrap();
    assert!(
        install.contains(&format!("project_pubkey=\"{}\"", names["MINISIGN_PUBKEY"])),
        "install.sh's key is not names.env's MINISIGN_PUBKEY"
    );
    assert!(
        page.contains(&names["MINISIGN_PUBKEY"]),
        "docs/guide/install.md does not show names.env's MINISIGN_PUBKEY"
    );
    // The parser itself: a stranger's package is caught.
    let sample = "`pipx install agent-runner` or (`cargo install`) is slow; run\n\
        ```sh\ncargo install --locked --git https://x/y agent --bin agent\n```\n";
    let found: Vec<String> = code_pieces(sample)
        .iter()
        .flat_map(|p| installed_packages(p))
        .collect();
    assert_eq!(found, ["agent-runner", "agent"]);
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
            .envs(test_key().map(|k| ("AGENT_MINISIGN_PUBKEY", k.public.as_str())))
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
    serve_sums(&r.server, bad);
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
