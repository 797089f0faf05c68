//! The key is out of reach of the commands the model runs, even through `/proc`: a Bash
//! call searches every `/proc/*/environ`, `/proc/*/cmdline` (and, as the agent's own
//! unprivileged user, `/proc/*/mem`) it can open for the run's secrets, and finds none.
//! The search is a Perl script in the workspace, over the test's own process tree; the
//! secrets reach it reversed, so that no command line, environment or memory but its
//! own holds them.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::support::*;

/// The search: `perl scan.pl MODE TOP REVERSED...`, MODE `mem` or `nomem`, over TOP (the
/// test process) and every process below it: the agent, its supervisors, the command,
/// and the other tests' runs (the rest of the machine is none of the test's business).
/// Prints one `key=value` line per count, `hits=` (the files holding a secret), `self_hit=` (its
/// own memory holds them: proof that the memory search works) and, for itself and each
/// ancestor, which of its files could be read.
const SCAN_HEAD: &str = r#"
no warnings;
my ($mode, $top, @rev) = @ARGV;
my @needles = map { scalar reverse $_ } @rev;
sub slurp { my ($p) = @_; open(my $fh, '<:raw', $p) or return undef; local $/; my $d = <$fh>; return $d; }
sub has { my ($d) = @_; for my $n (@needles) { return 1 if index($d, $n) >= 0 } return 0 }
"#;

/// The rest of the search, after `SCAN_MEM`.
const SCAN_TAIL: &str = r#"
my (%env, %mem, @hits);
my ($environ, $cmdline, $mems, $self_hit) = (0, 0, 0, 0);
sub ppid_of { my $st = slurp("/proc/$_[0]/stat") // return 0; my ($rest) = $st =~ /\)\s+(.*)/s; return (split ' ', $rest)[1] }
sub below_top { my $p = $_[0]; for (1 .. 64) { return 1 if $p == $top; return 0 if $p <= 1; $p = ppid_of($p) } 0 }
opendir(my $dh, '/proc') or die "no /proc";
for my $pid (grep { /^\d+$/ && below_top($_) } readdir $dh) {
  if (defined(my $d = slurp("/proc/$pid/environ"))) { $environ++; $env{$pid} = 1; push @hits, "$pid/environ" if has($d) }
  if (defined(my $d = slurp("/proc/$pid/cmdline"))) { $cmdline++; push @hits, "$pid/cmdline" if has($d) }
  next if $mode ne 'mem';
  my $m = scan_mem($pid);
  next if $m < 0;
  $mems++; $mem{$pid} = 1;
  if ($pid == $$) { $self_hit = $m } elsif ($m) { push @hits, "$pid/mem" }
}
print "\nenviron=$environ\ncmdline=$cmdline\nmem=$mems\nself_hit=$self_hit\nhits=@hits\n";
my $p = $$;
while (1) {
  my $st = slurp("/proc/$p/stat") // last;
  my ($comm, $rest) = $st =~ /\((.*)\)\s+(.*)/s;
  my $ppid = (split ' ', $rest)[1];
  printf "proc=%d comm=%s environ=%d mem=%d\n", $p, $comm, $env{$p} ? 1 : 0, $mem{$p} ? 1 : 0;
  last if $ppid <= 1 || $p == $top;
  $p = $ppid;
}
"#;

/// `scan_mem(PID)`: reads every readable mapping of `/proc/PID/mem` and returns whether
/// the caller's `has` found something in it (-1: nothing could be read). Shared with the
/// `--allow-domain` helper's test (`egress.rs`).
pub(crate) const SCAN_MEM: &str = r#"
sub scan_mem {
  my ($pid) = @_;
  open(my $maps, '<', "/proc/$pid/maps") or return -1;
  open(my $mem, '<:raw', "/proc/$pid/mem") or return -1;
  my ($found, $bytes) = (0, 0);
  while (my $l = <$maps>) {
    my ($s, $e, $perm) = $l =~ /^([0-9a-f]+)-([0-9a-f]+) (\S+)/ or next;
    next if substr($perm, 0, 1) ne 'r' || $l =~ /\[(vvar|vvar_vclock|vsyscall)\]/;
    my ($at, $end, $tail) = (hex $s, hex $e, '');
    while ($at < $end) {
      my $len = $end - $at; $len = 1 << 20 if $len > 1 << 20;
      sysseek($mem, $at, 0) or last;
      my $got = sysread($mem, my $buf, $len);
      last unless $got;
      $bytes += $got;
      $found = 1 if has($tail . $buf);
      $tail = substr($buf, -128);
      $at += $got;
    }
  }
  return $bytes > 0 ? $found : -1;
}
"#;

/// The search script.
fn scan() -> String {
    format!("{SCAN_HEAD}{SCAN_MEM}{SCAN_TAIL}")
}

/// Secrets unique to this run: other agents on the machine (other tests) hold theirs.
struct Secrets {
    key: String,
    env_token: String,
    header_token: String,
}

impl Secrets {
    fn new() -> Secrets {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let tag = format!("{}x{nanos}", std::process::id());
        Secrets {
            key: format!("sk-ant-proc-{tag}"),
            env_token: format!("proc-env-token-{tag}"),
            header_token: format!("proc-header-token-{tag}"),
        }
    }

    fn all(&self) -> [&str; 3] {
        [&self.key, &self.env_token, &self.header_token]
    }
}

/// The Bash call running the search, and the answer after it.
fn script(mode: &str, secrets: &Secrets) -> Vec<Reply> {
    let reversed: Vec<String> = secrets
        .all()
        .iter()
        .map(|s| format!("'{}'", s.chars().rev().collect::<String>()))
        .collect();
    let top = std::process::id();
    let command = format!("perl scan.pl {mode} {top} {}", reversed.join(" "));
    vec![
        Reply::Sse(turn_tools(&[(
            "toolu_scan",
            "Bash",
            json!({"command": command}),
        )])),
        Reply::Sse(turn_text("done")),
    ]
}

/// The run's flags: Bash allowed, a credential header on the command line.
fn run_args(secrets: &Secrets) -> Vec<String> {
    [
        "run",
        "--allow-bash",
        "--header",
        &format!("X-Proc-Test-Token: {}", secrets.header_token),
        "scan",
    ]
    .map(str::to_string)
    .to_vec()
}

/// What the search printed: its `key=value` lines, and the `proc=` lines.
struct Found {
    fields: std::collections::HashMap<String, String>,
    procs: Vec<String>,
}

impl Found {
    fn of(env: &TestEnv, secrets: &Secrets) -> Found {
        let results = env.server.requests()[1].tool_results();
        let out = results[0].content.clone();
        assert!(!results[0].is_error, "{out}");
        for s in secrets.all() {
            assert!(!out.contains(s), "the search printed a secret: {out}");
        }
        let mut fields = std::collections::HashMap::new();
        let mut procs = Vec::new();
        for line in out.lines() {
            if line.starts_with("proc=") {
                procs.push(line.to_string());
            } else if let Some((k, v)) = line.split_once('=') {
                fields.insert(k.to_string(), v.to_string());
            }
        }
        Found { fields, procs }
    }

    fn count(&self, k: &str) -> usize {
        self.fields
            .get(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {k}= in the search's output: {:?}", self.fields))
    }

    /// The `proc=` line of `pid`.
    fn proc(&self, pid: u32) -> &str {
        let prefix = format!("proc={pid} ");
        self.procs
            .iter()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("the agent {pid} is no ancestor: {:?}", self.procs))
    }
}

/// A `perl` on PATH, or why the test cannot run.
fn perl() -> Result<PathBuf, String> {
    which("perl").ok_or_else(|| "no perl on PATH".to_string())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn no_environ_or_cmdline_holds_a_secret_even_as_root() {
    if let Err(why) = perl() {
        eprintln!("skipped: {why}");
        return;
    }
    let secrets = Secrets::new();
    let env = TestEnv::new(script("nomem", &secrets));
    env.write("scan.pl", &scan());
    let args = run_args(&secrets);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cmd = env.command(&args);
    cmd.env("ANTHROPIC_API_KEY", &secrets.key)
        .env("PROC_TEST_TOKEN", &secrets.env_token);
    let running = env.spawn_command(cmd);
    let agent = running.pid();
    running.wait().assert_code(0);
    let found = Found::of(&env, &secrets);
    eprintln!("the search: {found:?}");
    assert_eq!(found.fields["hits"], "", "secrets found: {found:?}");
    assert!(found.count("cmdline") >= 3, "{:?}", found.fields);
    assert!(found.count("environ") >= 1, "{:?}", found.fields);
    let line = found.proc(agent);
    if is_root() {
        // Root opens the agent's environ (and its supervisor's): read, and clean.
        assert!(line.contains("environ=1"), "{line}");
    } else {
        eprintln!("not root: the agent's environ was closed to the search ({line})");
    }
}

#[test]
fn a_command_of_the_agents_own_user_finds_no_secret_in_proc_not_even_in_memory() {
    if !is_root() {
        eprintln!("skipped: the agent is run as another user (setpriv), which takes root");
        return;
    }
    let Some(setpriv) = which("setpriv") else {
        eprintln!("skipped: no setpriv on PATH");
        return;
    };
    let perl = match perl() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    const NOBODY: &str = "65534";
    let as_nobody = |program: &Path| {
        let mut c = Command::new(&setpriv);
        c.args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            "--",
        ])
        .arg(program);
        c
    };
    let ok = as_nobody(&perl)
        .args(["-e", "1"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: {} cannot run as uid {NOBODY}", perl.display());
        return;
    }
    let secrets = Secrets::new();
    let env = TestEnv::new(script("mem", &secrets));
    env.write("scan.pl", &scan());
    // The workspace, HOME and the rest of the temp directory, open to that user.
    let root = env.ws().parent().unwrap().to_path_buf();
    for d in [
        &root,
        &root.join("ws"),
        &root.join("home"),
        &root.join("out"),
    ] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let agent_bin = &crate::support::agent_bin();
    let mut cmd = as_nobody(agent_bin);
    cmd.args(run_args(&secrets))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", root.join("home"))
        .env("NO_COLOR", "1")
        .env("ANTHROPIC_BASE_URL", env.server.url())
        .env("ANTHROPIC_API_KEY", &secrets.key)
        .env("PROC_TEST_TOKEN", &secrets.env_token)
        .current_dir(env.ws())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let running = env.spawn_command(cmd);
    let agent = running.pid(); // setpriv execs the agent: the same process
    running.wait().assert_code(0);
    let found = Found::of(&env, &secrets);
    eprintln!("the search: {found:?}");
    assert_eq!(found.fields["hits"], "", "secrets found: {found:?}");
    assert!(found.count("cmdline") >= 3, "{:?}", found.fields);
    assert!(found.count("environ") >= 1, "{:?}", found.fields);
    assert!(found.count("mem") >= 1, "{:?}", found.fields);
    assert_eq!(
        found.fields["self_hit"], "1",
        "the memory search finds the secrets in its own memory: {:?}",
        found.fields
    );
    let line = found.proc(agent);
    assert!(line.contains("comm=agent"), "{line}");
}

impl std::fmt::Debug for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} {:?}", self.fields, self.procs)
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
