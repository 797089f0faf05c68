//! Tests of the command runner: output capture, groups, timeouts, orphans.

use std::fs::File;
use std::io::Read;

use super::capture::*;
use super::groups::*;
use super::*;

fn spec(dir: &Path, command: &str, timeout: Duration) -> CommandSpec {
    let env = Arc::new(std::env::vars().collect::<Vec<_>>());
    CommandSpec::new(command, dir, env, timeout, dir.join("spill"))
}

const GENEROUS: Duration = Duration::from_secs(120);

/// Alive = present in /proc and not a zombie (an orphaned zombie may linger unreaped
/// in a container whose init does not reap).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.trim_start().chars().next());
            !matches!(state, Some('Z') | Some('X') | None)
        }
    }
}

/// SIGKILL is delivered asynchronously; a killed process vanishes almost at once, a
/// surviving `sleep 300` stays for minutes, so this bound only absorbs scheduling.
/// The pid a test command wrote to `DIR/pid`.
fn pid_in(dir: &Path) -> i32 {
    std::fs::read_to_string(dir.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn dies_soon(pid: i32) -> bool {
    let give_up = Instant::now() + Duration::from_secs(10);
    while Instant::now() < give_up {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn collect(chunks: &[&[u8]]) -> Captured {
    // A spill "directory" below a regular file can never be created.
    let mut c = OutputCollector::new(PathBuf::from("/dev/null/spill"), "output", &[]);
    let mut d = Utf8Decoder::new();
    for chunk in chunks {
        let mut r: &[u8] = chunk;
        while d.read_from(&mut r, &mut c).unwrap() > 0 {}
    }
    d.finish(&mut c);
    c.finish()
}

#[test]
fn decoder_matches_lossy_decoding_at_every_split() {
    let bytes: Vec<u8> = [
        b"a\xc3\xa9b \xe2\x82\xac \xf0\x9f\x98\x80 bad:\xff\xfe \xe2\x82 end\xf0\x9f".as_slice(),
    ]
    .concat();
    let want = String::from_utf8_lossy(&bytes).into_owned();
    for i in 0..=bytes.len() {
        for j in i..=bytes.len() {
            let got = collect(&[&bytes[..i], &bytes[i..j], &bytes[j..]]);
            assert_eq!(got.text, want, "split at {i},{j}");
            assert_eq!(got.total_bytes, bytes.len() as u64);
        }
    }
}

#[test]
fn output_at_the_limit_is_whole_and_one_more_char_is_cut() {
    let exact = "x".repeat(OUTPUT_LIMIT_CHARS);
    let c = collect(&[exact.as_bytes()]);
    assert!(!c.truncated);
    assert_eq!(c.text, exact);

    let over = format!(
        "{}{}",
        "h".repeat(OUTPUT_HEAD_CHARS),
        "t".repeat(OUTPUT_TAIL_CHARS + 1)
    );
    let c = collect(&[over.as_bytes()]);
    assert!(c.truncated);
    assert!(
        c.text.contains("[... 1 of 10001 characters cut"),
        "{}",
        &c.text[1990..2200]
    );
    assert!(c.text.starts_with(&"h".repeat(OUTPUT_HEAD_CHARS)));
    assert!(c.text.ends_with(&"t".repeat(OUTPUT_TAIL_CHARS)));
    // The spill dir cannot be created here: the marker says so instead of a path.
    assert!(c.full_output_path.is_none());
    assert!(c.text.contains("could not be saved"), "{}", c.text);
}

#[test]
fn truncation_counts_characters_not_bytes_and_keeps_boundaries() {
    // 3-byte characters, fed in odd-sized pieces that split them.
    let text: String = (0..12_000)
        .map(|i| if i % 7 == 0 { '€' } else { 'a' })
        .collect();
    let bytes = text.as_bytes();
    let pieces: Vec<&[u8]> = bytes.chunks(997).collect();
    let c = collect(&pieces);
    let chars: Vec<char> = text.chars().collect();
    let head: String = chars[..OUTPUT_HEAD_CHARS].iter().collect();
    let tail: String = chars[chars.len() - OUTPUT_TAIL_CHARS..].iter().collect();
    assert!(c.text.starts_with(&head));
    assert!(c.text.ends_with(&tail));
    assert!(c.text.contains("2000 of 12000 characters cut"));
    assert_eq!(c.total_chars, 12_000);
}

#[test]
fn collector_memory_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = OutputCollector::new(dir.path().join("spill"), "output", &[]);
    let chunk = "é".repeat(READ_CHUNK_BYTES / 2);
    for _ in 0..200 {
        c.push_str(&chunk);
        c.push_str("z");
    }
    let bound = (OUTPUT_HEAD_CHARS + OUTPUT_TAIL_CHARS) * MAX_UTF8_BYTES;
    let got = c.finish();
    assert!(
        got.peak_buffer_bytes <= bound,
        "{} > {bound}",
        got.peak_buffer_bytes
    );
    let path = got.full_output_path.unwrap();
    let expect = 200 * (chunk.len() + 1);
    assert_eq!(std::fs::metadata(path).unwrap().len(), expect as u64);
}

#[test]
fn background_child_does_not_block_return() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&spec(
        dir.path(),
        "sleep 30 & echo $! > pid; echo started",
        GENEROUS,
    ))
    .unwrap();
    assert!(!out.timed_out);
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.output.text, "started\n");
    // Returned because the group kill closed the pipe, not because the drain gave up.
    assert!(!out.pipe_left_open);
    let pid = pid_in(dir.path());
    assert!(
        dies_soon(pid),
        "background child {pid} outlived the command"
    );
}

#[test]
fn escaped_child_holding_the_pipe_is_not_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    // setsid leaves our group, so the group kill cannot reach it; it keeps the pipe.
    let out = run(&spec(
        dir.path(),
        // Wait until it has left the group, or the group kill would still reach it.
        "setsid sh -c 'echo $$ > pid; exec sleep 30' & \
         until [ -s pid ]; do sleep 0.01; done; echo started",
        GENEROUS,
    ))
    .unwrap();
    assert!(!out.timed_out);
    assert!(out.output.text.contains("started"));
    assert!(out.pipe_left_open);
    // Clean up the escapee.
    let pid = pid_in(dir.path());
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

#[test]
fn timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = "sleep 300 >/dev/null 2>&1 & echo $! > pids; sleep 300 & echo $! >> pids; \
               echo ready; sleep 300";
    let out = run(&spec(dir.path(), cmd, Duration::from_secs(3))).unwrap();
    assert!(out.timed_out);
    assert_eq!(out.signal, Some(libc::SIGKILL));
    assert!(
        out.output.text.contains("ready"),
        "output so far is kept: {:?}",
        out.output.text
    );
    let pids = std::fs::read_to_string(dir.path().join("pids")).unwrap();
    let pids: Vec<i32> = pids.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(pids.len(), 2);
    for pid in pids {
        assert!(
            dies_soon(pid),
            "background child {pid} survived the timeout"
        );
    }
}

#[test]
fn leftover_group_members_are_killed_when_the_command_exits() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&spec(
        dir.path(),
        "sleep 300 >/dev/null 2>&1 & echo $! > pid",
        GENEROUS,
    ))
    .unwrap();
    assert_eq!(out.exit_code, Some(0));
    let pid = pid_in(dir.path());
    assert!(
        dies_soon(pid),
        "background child {pid} outlived the command"
    );
}

#[test]
fn huge_output_is_truncated_and_saved_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&spec(dir.path(), "yes | head -c 100000000", GENEROUS)).unwrap();
    assert_eq!(out.exit_code, Some(0));
    let c = &out.output;
    assert!(c.truncated);
    assert_eq!(c.total_bytes, 100_000_000);
    assert!(c.text.len() < OUTPUT_LIMIT_CHARS + 400, "{}", c.text.len());
    assert!(c.text.len() > OUTPUT_LIMIT_CHARS);
    let path = c.full_output_path.as_ref().unwrap();
    assert!(c.text.contains(&path.display().to_string()));
    assert_eq!(std::fs::metadata(path).unwrap().len(), 100_000_000);
    let bound = (OUTPUT_HEAD_CHARS + OUTPUT_TAIL_CHARS) * MAX_UTF8_BYTES;
    assert!(
        c.peak_buffer_bytes <= bound,
        "{} > {bound}",
        c.peak_buffer_bytes
    );
}

#[test]
fn streams_are_merged_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&spec(dir.path(), "echo a; echo b >&2; echo c", GENEROUS)).unwrap();
    assert_eq!(out.output.text, "a\nb\nc\n");
    assert!(out.stderr.is_none());
}

#[test]
fn stderr_can_be_separate() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), "echo a; echo b >&2; echo c", GENEROUS);
    s.stderr = Stderr::Separate;
    let out = run(&s).unwrap();
    assert_eq!(out.output.text, "a\nc\n");
    assert_eq!(out.stderr.unwrap().text, "b\n");
}

#[test]
fn exit_code_and_signal_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&spec(dir.path(), "exit 3", GENEROUS)).unwrap();
    assert_eq!(
        (out.exit_code, out.signal, out.shell_status()),
        (Some(3), None, Some(3))
    );
    let out = run(&spec(dir.path(), "kill -TERM $$", GENEROUS)).unwrap();
    assert_eq!((out.exit_code, out.signal), (None, Some(libc::SIGTERM)));
    assert_eq!(out.shell_status(), Some(128 + libc::SIGTERM));
}

#[test]
fn stdin_is_closed_or_fed() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&spec(dir.path(), "cat; echo done", GENEROUS)).unwrap();
    assert!(!out.timed_out);
    assert_eq!(out.output.text, "done\n");
    let mut s = spec(dir.path(), "cat", GENEROUS);
    s.stdin = Some(b"{\"hook\": 1}".to_vec());
    assert_eq!(run(&s).unwrap().output.text, "{\"hook\": 1}");
}

#[test]
fn environment_is_exactly_the_given_one() {
    let dir = tempfile::tempdir().unwrap();
    let env = Arc::new(vec![("ONLY_THIS".to_string(), "1".to_string())]);
    let s = CommandSpec::new("env", dir.path(), env, GENEROUS, dir.path().join("spill"));
    let out = run(&s).unwrap();
    let names: Vec<&str> = out
        .output
        .text
        .lines()
        .filter_map(|l| l.split('=').next())
        .collect();
    // bash adds PWD, SHLVL and `_` itself; nothing is inherited from us.
    assert!(names.contains(&"ONLY_THIS"), "{names:?}");
    assert!(
        !names.contains(&"HOME") && !names.contains(&"CARGO"),
        "{names:?}"
    );
}

#[test]
fn runs_in_cwd_in_its_own_session() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&spec(
        dir.path(),
        "pwd -P; ps -o pid=,pgid=,sid= -p $$",
        GENEROUS,
    ))
    .unwrap();
    let mut lines = out.output.text.lines();
    assert_eq!(
        lines.next().map(PathBuf::from),
        Some(dir.path().canonicalize().unwrap())
    );
    if let Some(ids) = lines.next() {
        // ps may be missing on minimal images; when present, pid = pgid = sid.
        let ids: Vec<&str> = ids.split_whitespace().collect();
        assert_eq!(ids.len(), 3, "{ids:?}");
        assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
    }
}

#[test]
fn failure_to_start_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = run(&spec(&dir.path().join("missing"), "true", GENEROUS)).unwrap_err();
    assert!(e.contains("failed to start"), "{e}");
}

#[test]
fn pre_exec_hook_runs_in_the_child_and_can_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), "true", GENEROUS);
    s.pre_exec = Some(Arc::new(|| Err(io::Error::from_raw_os_error(libc::EPERM))));
    let e = run(&s).unwrap_err();
    assert!(e.contains("failed to start"), "{e}");
}

#[test]
fn kill_all_stops_a_running_command_and_closes_the_registry() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // A private registry: the global one is shared with every test in this process.
    let registry = ProcessRegistry::new();
    let s = spec(dir.path(), "echo running > fifo; sleep 300", GENEROUS);
    std::thread::scope(|scope| {
        let runner = scope.spawn(|| run_in(&s, &registry));
        // Opening a FIFO for reading blocks until the command opens it for writing.
        let mut line = String::new();
        File::open(&fifo)
            .unwrap()
            .read_to_string(&mut line)
            .unwrap();
        assert_eq!(line, "running\n");
        registry.kill_all();
        let out = runner.join().unwrap().unwrap();
        assert!(out.interrupted);
        assert!(!out.timed_out);
        assert_eq!(out.signal, Some(libc::SIGKILL));
    });
    let e = run_in(&spec(dir.path(), "true", GENEROUS), &registry).unwrap_err();
    assert!(e.contains("shutting down"), "{e}");
}

#[test]
fn registry_is_empty_after_runs() {
    let registry = ProcessRegistry::new();
    let dir = tempfile::tempdir().unwrap();
    run_in(&spec(dir.path(), "true", GENEROUS), &registry).unwrap();
    let _ = run_in(
        &spec(dir.path(), "sleep 5", Duration::from_millis(50)),
        &registry,
    )
    .unwrap();
    assert!(registry.lock().groups.is_empty());
}

#[test]
fn a_secret_across_the_head_cut_is_redacted_in_the_text_and_the_spill_file() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "ghp_SECRETSECRETSECRET0123".to_string();
    let mut c = OutputCollector::new(
        dir.path().join("spill"),
        "output",
        std::slice::from_ref(&secret),
    );
    // The secret starts 5 characters before the head's end, and arrives in two reads.
    let before = "a".repeat(OUTPUT_HEAD_CHARS - 5);
    let (first, second) = secret.split_at(9);
    c.push_str(&format!("{before}{first}"));
    c.push_str(&format!("{second}{}", "b".repeat(OUTPUT_LIMIT_CHARS)));
    let got = c.finish();
    assert!(got.truncated);
    assert!(
        !got.text.contains(&secret[..8]),
        "a prefix is left in the text"
    );
    assert!(
        got.text.starts_with(&format!("{before}[REDA")),
        "cut inside the marker"
    );
    let saved = std::fs::read_to_string(got.full_output_path.unwrap()).unwrap();
    assert!(
        !saved.contains(&secret[..8]),
        "the spill file keeps the secret"
    );
    assert!(saved.starts_with(&format!("{before}[REDACTED]bbb")));
}

#[test]
fn the_saved_output_keeps_its_head_and_tail_and_says_what_was_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.txt");
    let file = File::create(&path).unwrap();
    let mut spill = Spill::new(file, path.clone(), 10, 8);
    for piece in ["0123456", "789abcdé", "fghij", "klmnopqrstuvwxyz"] {
        spill.write(piece).unwrap();
    }
    let dropped = spill.finish().unwrap();
    let saved = std::fs::read_to_string(&path).unwrap();
    // 10 head bytes, 8 tail bytes, and the rest (of 37) dropped between them.
    assert_eq!(dropped, 37 - 10 - 8);
    assert_eq!(
        saved,
        "0123456789\n\n[... 19 bytes dropped here: this file keeps the first 10 and the last \
         8 bytes of the output ...]\n\nstuvwxyz"
    );
}

#[test]
fn a_saved_output_within_its_limits_is_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.txt");
    let mut spill = Spill::new(File::create(&path).unwrap(), path.clone(), 4, 100);
    spill.write("héllo wörld").unwrap();
    assert_eq!(spill.finish().unwrap(), 0);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "héllo wörld");
}
