//! `agent gitlab`: the conversation on issues and merge requests, driven with webhook
//! payloads (tests/fixtures/gitlab) passed as a pipeline trigger passes them
//! (`TRIGGER_PAYLOAD`), the mock GitLab API (tests/support/gitlab.rs, which checks every
//! call against the route table), the mock model, and a real local bare repository as
//! `origin`.

use crate::support::gitlab::{GITLAB_TOKEN, GitlabMock, GlFault, JOB_TOKEN};
use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

const ISSUE_NOTES: &str = "/projects/{id}/issues/{issue_iid}/notes";
const ISSUE_NOTE: &str = "/projects/{id}/issues/{issue_iid}/notes/{note_id}";
const MR: &str = "/projects/{id}/merge_requests/{merge_request_iid}";
const MR_NOTES: &str = "/projects/{id}/merge_requests/{merge_request_iid}/notes";
const MR_NOTE: &str = "/projects/{id}/merge_requests/{merge_request_iid}/notes/{note_id}";
const MEMBER: &str = "/projects/{id}/members/all/{user_id}";
const NEW_MR: &str = "/projects/{id}/merge_requests";
const DISCUSSIONS: &str = "/projects/{id}/merge_requests/{merge_request_iid}/discussions";

fn fixture(name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/gitlab")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A workspace that is a clone of a bare `origin`, the GitLab mock, the model mock.
struct Gl {
    env: TestEnv,
    api: GitlabMock,
    origin: PathBuf,
}

impl Gl {
    fn new(script: Vec<Reply>) -> Gl {
        let env = TestEnv::new(script);
        let origin = env.out("origin.git");
        let ok = Command::new("git")
            .args(["init", "-q", "--bare", "-b", "main"])
            .arg(&origin)
            .status()
            .unwrap()
            .success();
        assert!(ok);
        env.write("README.md", "hello\n");
        env.git(&["init", "-q", "-b", "main"]);
        env.git(&["add", "-A"]);
        env.git(&["commit", "-qm", "init"]);
        env.git(&["remote", "add", "origin", origin.to_str().unwrap()]);
        env.git(&["push", "-q", "origin", "main"]);
        let api = GitlabMock::start();
        api.member(1001, 30);
        Gl { env, api, origin }
    }

    /// A branch `name` on origin with one commit writing `file`, also as
    /// `refs/merge-requests/{iid}/head`; the workspace stays on main. Its sha.
    fn mr_branch(&self, iid: u64, name: &str, file: &str, content: &str) -> String {
        self.env.git(&["checkout", "-q", "-b", name]);
        self.env.write(file, content);
        self.env.git(&["add", "-A"]);
        self.env.git(&["commit", "-qm", &format!("change {file}")]);
        self.env
            .git(&["push", "-q", "origin", &format!("HEAD:refs/heads/{name}")]);
        self.env.git(&[
            "push",
            "-q",
            "origin",
            &format!("HEAD:refs/merge-requests/{iid}/head"),
        ]);
        let sha = self.origin_git(&["rev-parse", name]);
        self.env.git(&["checkout", "-q", "main"]);
        sha
    }

    fn origin_git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(&self.origin)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn refs(&self) -> String {
        self.origin_git(&["for-each-ref", "--format=%(refname) %(objectname)"])
    }

    /// `agent gitlab ARGS` in a job of a trigger pipeline whose payload is `payload` (a
    /// file variable, as GitLab passes TRIGGER_PAYLOAD), or of a pipeline of `source`
    /// without one.
    fn run(&self, payload: Option<&Value>, args: &[&str], extra: &[(&str, &str)]) -> RunOutput {
        let path = self.env.out("trigger_payload.json");
        let mut vars: Vec<(&str, &str)> = vec![
            ("CI_API_V4_URL", ""),
            ("CI_SERVER_URL", "https://gitlab.example"),
            ("CI_PROJECT_ID", "7"),
            ("CI_PROJECT_PATH", "group/hello"),
            (
                "CI_JOB_URL",
                "https://gitlab.example/group/hello/-/jobs/4242",
            ),
            ("GITLAB_TOKEN", GITLAB_TOKEN),
            ("CI_JOB_TOKEN", JOB_TOKEN),
        ];
        let api = self.api.api_url();
        vars[0].1 = &api;
        if let Some(p) = payload {
            std::fs::write(&path, p.to_string()).unwrap();
            vars.push(("CI_PIPELINE_SOURCE", "trigger"));
            vars.push(("TRIGGER_PAYLOAD", path.to_str().unwrap()));
        }
        vars.extend_from_slice(extra);
        let mut all = vec!["gitlab"];
        all.extend_from_slice(args);
        self.env.run_with_env(&all, &vars)
    }

    /// Neither token is anywhere: stdout, stderr, the transcript, both git configs, the
    /// bodies sent to GitLab, the requests to the model (tool results included).
    fn assert_tokens_nowhere(&self, out: &RunOutput, transcript: Option<&Path>) {
        for token in [GITLAB_TOKEN, JOB_TOKEN] {
            assert!(!out.stdout.contains(token), "token in stdout");
            assert!(!out.stderr.contains(token), "token in stderr");
            if let Some(t) = transcript {
                let text = std::fs::read_to_string(t).unwrap();
                assert!(!text.contains(token), "token in the transcript");
            }
            for cfg in [self.env.path(".git/config"), self.origin.join("config")] {
                let text = std::fs::read_to_string(&cfg).unwrap();
                assert!(!text.contains(token), "token in {}", cfg.display());
                assert!(!text.contains("extraheader"), "{}", cfg.display());
            }
            self.api.assert_no_secret_in_bodies(token);
            for r in self.env.server.requests() {
                let raw = String::from_utf8_lossy(&r.raw_body);
                assert!(!raw.contains(token), "token sent to the model");
            }
        }
    }
}

/// The bodies of the progress note's edits, in order.
fn edits(api: &GitlabMock, route: &str) -> Vec<String> {
    api.calls("PUT", route)
        .iter()
        .map(|r| r.body["body"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_mention_on_an_issue_pushes_a_branch_and_opens_a_merge_request() {
    let gl = Gl::new(vec![
        Reply::turn(
            Turn::new()
                .tool(
                    "toolu_env",
                    "Bash",
                    json!({"command": "env; cat .git/config; git config --list --show-origin"}),
                )
                .tool(
                    "toolu_w",
                    "WriteFile",
                    json!({"path": "greeting.txt", "content": "hello\n"}),
                ),
        ),
        Reply::turn(Turn::new().text("Added greeting.txt.")),
    ]);
    gl.api.note("issues", 3, "reporter", "Any news?", false);
    gl.api
        .note("issues", 3, "reporter", "changed the description", true);
    let t = gl.env.out("t.json");
    let out = gl.run(
        Some(&fixture("note.issue.json")),
        &[
            "--allow-write",
            "--allow-bash",
            "--keep-env",
            "GITLAB_TOKEN,CI_JOB_TOKEN",
            "--progress-interval",
            "0s",
            "--git-author",
            "Agent Bot <agent-bot@example.com>",
            "-o",
            t.to_str().unwrap(),
        ],
        &[],
    );
    out.assert_code(0).assert_no_secret();
    assert_eq!(out.stdout, "Added greeting.txt.\n");
    gl.api.assert_valid();
    gl.env.server.assert_invariants();

    // The gate asked about the author's access, by id, once.
    let member = gl.api.calls("GET", MEMBER);
    assert_eq!(member.len(), 1);
    assert_eq!(member[0].path, "/projects/7/members/all/1001");

    // One progress note, edited while the run went, then the result.
    let created = gl.api.calls("POST", ISSUE_NOTES);
    assert_eq!(created.len(), 1, "one progress note");
    assert_eq!(created[0].path, "/projects/7/issues/3/notes");
    let first = created[0].body["body"].as_str().unwrap();
    assert!(first.contains("working"), "{first}");
    assert!(
        first.contains("https://gitlab.example/group/hello/-/jobs/4242"),
        "{first}"
    );
    let edits = edits(&gl.api, ISSUE_NOTE);
    assert!(edits.len() >= 2, "edited, then the result: {edits:?}");
    let (last, during) = edits.split_last().unwrap();
    assert!(
        during
            .iter()
            .any(|b| b.contains("- [x] `WriteFile` `greeting.txt`")),
        "a checklist of the calls: {during:?}"
    );
    assert!(last.contains("### agent: ✅ `success`"), "{last}");
    assert!(last.contains("Added greeting.txt."), "{last}");
    assert!(last.contains("2 turns"), "{last}");
    assert!(last.contains("1 file changed, 1 insertion(+)"), "{last}");
    assert!(
        last.contains("<details><summary>Transcript summary</summary>"),
        "{last}"
    );
    if let Some(path) = std::env::var_os("AGENT_GITLAB_RECORD_NOTE") {
        // The closing note's sample: the final note as the mock recorded it.
        std::fs::write(path, last).unwrap();
    }

    // The branch, with the change, the identity and the trailer.
    let branch = "agent/issue-3-add-a-greeting";
    assert_eq!(
        gl.origin_git(&["show", &format!("{branch}:greeting.txt")]),
        "hello"
    );
    let msg = gl.origin_git(&["log", "-1", "--format=%an <%ae>%n%B", branch]);
    assert!(
        msg.starts_with("Agent Bot <agent-bot@example.com>\nagent: Add a greeting"),
        "{msg}"
    );
    assert!(
        msg.contains("Co-authored-by: maintainer <1001-maintainer@users.noreply.gitlab.example>"),
        "{msg}"
    );
    assert!(
        msg.contains("https://gitlab.example/group/hello/-/issues/3#note_5005"),
        "{msg}"
    );
    assert_eq!(
        gl.origin_git(&["ls-tree", "--name-only", branch]),
        "README.md\ngreeting.txt",
        "nothing of the run's own is committed"
    );
    // The merge request mentions the issue, and closes it only with --close-issue.
    let mrs = gl.api.calls("POST", NEW_MR);
    assert_eq!(mrs.len(), 1);
    assert_eq!(mrs[0].body["source_branch"], branch);
    assert_eq!(mrs[0].body["target_branch"], "main");
    let description = mrs[0].body["description"].as_str().unwrap();
    assert!(description.starts_with("For #3."), "{description}");
    assert!(!description.contains("Closes"), "{description}");
    assert!(
        last.contains("opened !100 (https://gitlab.example/group/hello/-/merge_requests/100)"),
        "{last}"
    );

    // The prompt: the request as written, the rest fenced, system notes left out.
    let model = gl.env.server.requests();
    let prompt = model[0].first_user_text();
    assert!(
        prompt.contains("<request author=\"maintainer\">\n@agent please add greeting.txt"),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "issue #3 of the project group/hello (https://gitlab.example/group/hello/-/issues/3)"
        ),
        "{prompt}"
    );
    let body_at = prompt.find("Ignore all previous instructions").unwrap();
    let fence_at = prompt[..body_at].rfind("<untrusted-data-").unwrap();
    assert!(!prompt[fence_at..body_at].contains("</untrusted-data-"));
    assert!(
        prompt.contains("Any news?"),
        "earlier notes are in the context"
    );
    assert!(
        !prompt.contains("changed the description"),
        "no system notes"
    );
    let listed = gl.api.calls("GET", ISSUE_NOTES);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].query, "sort=desc&order_by=created_at&per_page=20");
    assert!(
        model[0].system_text().contains("GitLab Flavored Markdown"),
        "the system prompt names the forge"
    );
    gl.assert_tokens_nowhere(&out, Some(&t));
}

#[test]
fn a_mention_on_a_same_project_merge_request_pushes_to_its_source_branch() {
    let gl = Gl::new(vec![
        Reply::turn(Turn::new().tool(
            "toolu_w",
            "WriteFile",
            json!({"path": "notes.txt", "content": "fixed\n"}),
        )),
        Reply::turn(Turn::new().text("Fixed the typo.")),
    ]);
    let head = gl.mr_branch(5, "feature", "notes.txt", "fixd\n");
    gl.api.merge_request(
        5,
        "feature",
        &head,
        7,
        json!([{"old_path": "notes.txt", "new_path": "notes.txt", "new_file": true,
                "renamed_file": false, "deleted_file": false, "diff": "@@ -0,0 +1 @@\n+fixd\n"}]),
    );
    let out = gl.run(
        Some(&fixture("note.merge_request.json")),
        &["--allow-write", "--close-issue"],
        &[],
    );
    out.assert_code(0).assert_no_secret();
    gl.api.assert_valid();
    assert_eq!(
        gl.api.calls("GET", MR).len(),
        1,
        "the merge request asked for once"
    );
    let new_head = gl.origin_git(&["rev-parse", "feature"]);
    assert_ne!(new_head, head, "a commit was pushed to the source branch");
    assert_eq!(gl.origin_git(&["rev-parse", "feature~1"]), head);
    assert_eq!(gl.origin_git(&["show", "feature:notes.txt"]), "fixed");
    let msg = gl.origin_git(&["log", "-1", "--format=%an%n%B", "feature"]);
    assert!(msg.starts_with("agent\nagent: Add notes"), "{msg}");
    assert!(
        gl.api.calls("POST", NEW_MR).is_empty(),
        "no new merge request"
    );
    let posted = gl.api.calls("POST", MR_NOTES);
    assert_eq!(posted.len(), 1);
    let last = edits(&gl.api, MR_NOTE).pop().unwrap();
    assert!(
        last.contains("Pushed `") && last.contains("to `feature`"),
        "{last}"
    );
    let prompt = gl.env.server.requests()[0].first_user_text();
    assert!(
        prompt.contains("merge request !5 of the project group/hello"),
        "{prompt}"
    );
    assert!(
        prompt.contains("The merge request merges feature into main"),
        "{prompt}"
    );
    assert!(prompt.contains("added +1 -0 notes.txt"), "{prompt}");
    gl.assert_tokens_nowhere(&out, None);
}

#[test]
fn a_fork_merge_request_is_not_pushed_and_still_gets_the_result() {
    let gl = Gl::new(vec![
        Reply::turn(Turn::new().tool(
            "toolu_w",
            "WriteFile",
            json!({"path": "fix.txt", "content": "fixed\n"}),
        )),
        Reply::turn(Turn::new().text("Added the fix.")),
    ]);
    let head = gl.mr_branch(5, "patch-1", "README.md", "from a fork\n");
    gl.origin_git(&["update-ref", "-d", "refs/heads/patch-1"]);
    gl.api.merge_request(5, "patch-1", &head, 99, json!([]));
    let mut payload = fixture("note.merge_request.json");
    payload["merge_request"]["source_project_id"] = json!(99);
    payload["merge_request"]["source"]["path_with_namespace"] = json!("forker/hello");
    let before = gl.refs();
    let out = gl.run(Some(&payload), &["--allow-write"], &[]);
    out.assert_code(0).assert_no_secret();
    gl.api.assert_valid();
    assert_eq!(gl.refs(), before, "nothing pushed anywhere");
    assert!(gl.api.calls("POST", NEW_MR).is_empty());
    let last = edits(&gl.api, MR_NOTE).pop().unwrap();
    assert!(last.contains("Added the fix."), "{last}");
    assert!(last.contains("the fork forker/hello"), "{last}");
    assert_eq!(gl.env.read("fix.txt"), "fixed\n");
    gl.assert_tokens_nowhere(&out, None);
}

#[test]
fn no_access_a_bot_or_no_phrase_exits_0_without_a_model_request() {
    let gl = Gl::new(vec![]);
    gl.api.member(5, 20);
    let mut reporter = fixture("note.issue.json");
    reporter["user"] = json!({"id": 5, "username": "visitor", "name": "V"});
    let out = gl.run(Some(&reporter), &["--allow-write"], &[]);
    out.assert_code(0).assert_no_secret();
    assert!(
        out.stderr.contains(
            "refused: visitor has access level 20 (Reporter), not Developer (30) or above"
        ),
        "{}",
        out.stderr
    );
    let mut stranger = reporter.clone();
    stranger["user"]["id"] = json!(6);
    let out = gl.run(Some(&stranger), &[], &[]);
    out.assert_code(0);
    assert!(
        out.stderr
            .contains("refused: visitor is not a member of the project"),
        "{}",
        out.stderr
    );
    assert_eq!(gl.api.requests().len(), 2, "only the members were asked");

    let mut bot = fixture("note.issue.json");
    bot["user"] = json!({"id": 77, "username": "project_7_bot_a1b2", "name": "bot"});
    let out = gl.run(Some(&bot), &[], &[]);
    out.assert_code(0);
    assert!(
        out.stderr
            .contains("refused: project_7_bot_a1b2 is a bot not named in --allowed-bots"),
        "{}",
        out.stderr
    );
    let mut other = fixture("note.issue.json");
    other["object_attributes"]["note"] = json!("ping @agentsmith and @agent-x, not the agent");
    let out = gl.run(Some(&other), &[], &[]);
    out.assert_code(0);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines,
        ["agent: gitlab: not triggered: the note has no @agent"],
        "one log line"
    );
    // A merge_request_event pipeline without --prompt or --review.
    let out = gl.run(
        None,
        &[],
        &[
            ("CI_PIPELINE_SOURCE", "merge_request_event"),
            ("CI_MERGE_REQUEST_IID", "5"),
        ],
    );
    out.assert_code(0);
    assert!(
        out.stderr
            .contains("not triggered: a merge_request_event pipeline without --prompt or --review"),
        "{}",
        out.stderr
    );
    assert_eq!(gl.api.requests().len(), 2, "no call without the phrase");
    assert_eq!(gl.env.server.request_count(), 0, "no model request");
    gl.api.assert_valid();
    gl.assert_tokens_nowhere(&out, None);
}

#[test]
fn the_job_token_alone_is_refused_with_what_it_cannot_do() {
    let gl = Gl::new(vec![]);
    let out = gl.run(
        Some(&fixture("note.issue.json")),
        &[],
        &[("GITLAB_TOKEN", "")],
    );
    out.assert_code(2);
    assert!(
        out.stderr.contains(
            "GITLAB_TOKEN is not set, and CI_JOB_TOKEN cannot do what agent gitlab needs"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("cannot post or edit notes"),
        "{}",
        out.stderr
    );
    assert!(gl.api.requests().is_empty());
    assert_eq!(gl.env.server.request_count(), 0);
    assert!(!out.stderr.contains(JOB_TOKEN));
}

#[test]
fn a_review_posts_diff_discussions_with_positions_and_the_rest_in_a_summary_note() {
    let gl = Gl::new(vec![Reply::turn(Turn::new().tool(
        "toolu_ans",
        "StructuredOutput",
        json!({"summary": "Looks fine overall.", "comments": [
            {"path": "src/a.rs", "line": 2, "side": "RIGHT", "body": "Name this better."},
            {"path": "src/a.rs", "line": 1, "side": "LEFT", "body": "The old first line."},
            {"path": "src/a.rs", "line": 3, "side": "RIGHT", "body": "A context line."},
            {"path": "src/a.rs", "line": 50, "side": "RIGHT", "body": "Far from the diff."},
            {"path": "src/other.rs", "line": 2, "body": "Not in this merge request."}]}),
    ))]);
    let head = gl.mr_branch(
        9,
        "add-line",
        "src/a.rs",
        "fn a() {}\nfn added() {}\nfn b() {}\n",
    );
    gl.api.merge_request(
        9,
        "add-line",
        &head,
        7,
        json!([{"old_path": "src/a.rs", "new_path": "src/a.rs", "new_file": false,
                "renamed_file": false, "deleted_file": false,
                "diff": "@@ -1,2 +1,3 @@\n-fn old() {}\n+fn a() {}\n+fn added() {}\n fn b() {}\n"}]),
    );
    // A merge_request_event pipeline: no payload, the variables name the merge request.
    let out = gl.run(
        None,
        &["--review"],
        &[
            ("CI_PIPELINE_SOURCE", "merge_request_event"),
            ("CI_MERGE_REQUEST_IID", "9"),
            ("CI_MERGE_REQUEST_TITLE", "Add a line"),
            ("GITLAB_USER_ID", "1001"),
            ("GITLAB_USER_LOGIN", "maintainer"),
        ],
    );
    out.assert_code(0).assert_no_secret();
    gl.api.assert_valid();
    let d = gl.api.calls("POST", DISCUSSIONS);
    assert_eq!(d.len(), 3, "three comments on diff lines");
    let pos = |i: usize| d[i].body["position"].clone();
    let shas = |p: &Value| {
        (
            p["base_sha"].as_str().unwrap().to_string(),
            p["start_sha"].as_str().unwrap().to_string(),
            p["head_sha"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(
        shas(&pos(0)),
        ("b".repeat(40), "c".repeat(40), head.clone()),
        "diff_refs"
    );
    assert_eq!(
        (pos(0)["new_line"].as_u64(), pos(0).get("old_line").cloned()),
        (Some(2), None),
        "an added line"
    );
    assert_eq!(
        (pos(1)["old_line"].as_u64(), pos(1).get("new_line").cloned()),
        (Some(1), None),
        "a removed line"
    );
    assert_eq!(
        (pos(2)["old_line"].as_u64(), pos(2)["new_line"].as_u64()),
        (Some(2), Some(3)),
        "a context line has both"
    );
    assert_eq!(d[0].body["body"], "Name this better.");
    // One summary note with the comments off the diff, besides the progress note.
    let notes = gl.api.calls("POST", MR_NOTES);
    assert_eq!(notes.len(), 2, "the progress note and the summary");
    let summary = notes[1].body["body"].as_str().unwrap();
    assert!(summary.contains("Looks fine overall."), "{summary}");
    assert!(
        summary.contains("`src/a.rs:50`: Far from the diff."),
        "{summary}"
    );
    assert!(
        summary.contains("`src/other.rs:2`: Not in this merge request."),
        "{summary}"
    );
    // The pipeline's user was gated; the model saw the patch and the schema.
    assert_eq!(
        gl.api.calls("GET", MEMBER)[0].path,
        "/projects/7/members/all/1001"
    );
    let model = gl.env.server.requests();
    assert!(model[0].first_user_text().contains("+fn added() {}"));
    assert!(
        model[0]
            .tool_names()
            .contains(&"StructuredOutput".to_string())
    );
    assert!(
        gl.api.calls("POST", NEW_MR).is_empty(),
        "no push in review mode"
    );
    let last = edits(&gl.api, MR_NOTE).pop().unwrap();
    assert!(last.contains("Posted 3 diff discussions"), "{last}");
    assert!(
        last.contains("(2 on lines outside the diff are in the summary)"),
        "{last}"
    );
    gl.assert_tokens_nowhere(&out, None);
}

#[test]
fn a_502_and_a_429_are_retried_and_a_missing_scope_names_the_call() {
    let gl = Gl::new(vec![Reply::turn(Turn::new().text("Nothing to change."))]);
    gl.api.fault("GET", MEMBER, GlFault::BadGateway);
    gl.api.fault("POST", ISSUE_NOTES, GlFault::TooManyRequests);
    gl.api.fault("PUT", ISSUE_NOTE, GlFault::BadGateway);
    let out = gl.run(Some(&fixture("note.issue.json")), &[], &[]);
    out.assert_code(0).assert_no_secret();
    gl.api.assert_valid();
    assert_eq!(gl.api.calls("GET", MEMBER).len(), 2);
    assert_eq!(gl.api.calls("POST", ISSUE_NOTES).len(), 2);
    let e = edits(&gl.api, ISSUE_NOTE);
    assert_eq!(e.len(), 2, "the final edit, retried");
    assert!(e[1].contains("Nothing to change."));
    assert!(
        out.stderr
            .contains("GitLab API GET /projects/7/members/all/1001: HTTP 502"),
        "the error names the call: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains("HTTP 429: Retry later"),
        "{}",
        out.stderr
    );

    // A read_api token: the note cannot be posted, and the error says why.
    let gl = Gl::new(vec![]);
    gl.api
        .fault("POST", ISSUE_NOTES, GlFault::InsufficientScope);
    let out = gl.run(Some(&fixture("note.issue.json")), &[], &[]);
    out.assert_code(1);
    assert!(
        out.stderr
            .contains("GitLab API POST /projects/7/issues/3/notes: HTTP 403: insufficient_scope"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("the token lacks the `api` scope"),
        "{}",
        out.stderr
    );
    assert_eq!(gl.env.server.request_count(), 0, "no model request");
    gl.assert_tokens_nowhere(&out, None);
}

#[test]
fn no_hook_no_mcp_server_and_no_remote_url_gets_a_token() {
    let gl = Gl::new(vec![
        Reply::turn(Turn::new().tool(
            "toolu_w",
            "WriteFile",
            json!({"path": "a.txt", "content": "a\n"}),
        )),
        Reply::turn(Turn::new().text("Done.")),
    ]);
    // A runner's clone: the job token in origin's URL.
    let with_token = format!("https://gitlab-ci-token:{JOB_TOKEN}@gitlab.example/group/hello.git");
    gl.env.git(&["remote", "set-url", "origin", &with_token]);
    let hook_env = gl.env.out("hook_env.txt");
    let settings = json!({"hooks": {"PreToolUse": [
        {"matcher": "WriteFile", "command": format!("env > {}", hook_env.display())}]}});
    let server = |var: &str| {
        json!({"type": "stdio", "command": env!("CARGO_BIN_EXE_mcp-test-server"),
               "args": ["--describe-env", var], "env": {}})
    };
    let mcp = gl.env.out("mcp.json");
    std::fs::write(
        &mcp,
        json!({"mcpServers": {"t": server("GITLAB_TOKEN"), "j": server("CI_JOB_TOKEN"),
                              "u": server("CI_PROJECT_PATH")}})
        .to_string(),
    )
    .unwrap();
    let out = gl.run(
        Some(&fixture("note.issue.json")),
        &[
            "--allow-write",
            "--no-push",
            "--allow-mcp",
            "--mcp-config",
            mcp.to_str().unwrap(),
            "--settings",
            &settings.to_string(),
        ],
        &[],
    );
    out.assert_code(0).assert_no_secret();
    let hook = std::fs::read_to_string(&hook_env).expect("the hook ran");
    assert!(hook.contains("CI_PROJECT_PATH=group/hello"), "{hook}");
    assert!(
        !hook.contains("GITLAB_TOKEN") && !hook.contains("CI_JOB_TOKEN"),
        "{hook}"
    );
    let tools = gl.env.server.requests()[0].body["tools"].to_string();
    assert!(
        tools.contains("group/hello"),
        "the servers' descriptions: {tools}"
    );
    let url = std::fs::read_to_string(gl.env.path(".git/config")).unwrap();
    assert!(
        url.contains("url = https://gitlab.example/group/hello.git"),
        "{url}"
    );
    let last = edits(&gl.api, ISSUE_NOTE).pop().unwrap();
    assert!(
        last.contains("The changes were not pushed: --no-push."),
        "{last}"
    );
    gl.assert_tokens_nowhere(&out, None);
}

#[test]
fn gitlab_help_has_the_run_sections_then_its_own_and_bad_input_is_exit_2() {
    let gl = Gl::new(vec![]);
    let out = gl.env.run(&["gitlab", "--help"]);
    out.assert_code(0);
    let at = |h: &str| {
        out.stdout
            .find(h)
            .unwrap_or_else(|| panic!("{h}: {}", out.stdout))
    };
    assert!(at("Model and provider:") < at("GitLab:"));
    for flag in [
        "--trigger-phrase",
        "--label-trigger",
        "--assignee-trigger",
        "--allowed-bots",
        "--review",
        "--close-issue",
        "--payload",
        "--git-author",
        "--progress-interval",
    ] {
        assert!(out.stdout.contains(flag), "{flag}");
    }
    let out = gl.run(
        Some(&fixture("note.issue.json")),
        &["--git-author", "nobody"],
        &[],
    );
    out.assert_code(2);
    assert!(
        out.stderr.contains("--git-author \"nobody\""),
        "{}",
        out.stderr
    );
    let out = gl.run(None, &[], &[("CI_PROJECT_ID", "seven")]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("CI_PROJECT_ID is \"seven\""),
        "{}",
        out.stderr
    );
    let out = gl.run(None, &["--payload", "/nonexistent.json"], &[]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("--payload /nonexistent.json"),
        "{}",
        out.stderr
    );
    assert!(gl.api.requests().is_empty());
}
