"""A standalone GitLab REST v4 mock for ci/interop/gitlab.sh's gitlab-ci-local run: it
accepts exactly the calls of tests/fixtures/gitlab/routes.json (as tests/support/gitlab.rs
does: the route table, `PRIVATE-TOKEN`, JSON bodies with the table's keys), answers from
a tiny project (user 1001 a Developer, issue 3), and on SIGTERM writes every request and
every violation to OUT.json.

    python gitlab_mock.py ROUTES.json TOKEN PORT_FILE OUT.json
"""

import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

ROUTES = json.load(open(sys.argv[1]))["routes"]
TOKEN, PORT_FILE, OUT = sys.argv[2], sys.argv[3], sys.argv[4]
REQUESTS, VIOLATIONS, NOTES = [], [], {}
LOCK = threading.Lock()


def match(template, path):
    t, p = template.split("/"), path.split("/")
    if len(t) != len(p):
        return None
    out = {}
    for a, b in zip(t, p):
        if a.startswith("{"):
            if not b:
                return None
            out[a[1:-1]] = b
        elif a != b:
            return None
    return out


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def handle_one(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n).decode() if n else ""
        url = urlsplit(self.path)
        path = url.path.removeprefix("/api/v4")
        body = json.loads(raw) if raw else None
        found = None
        for r in ROUTES:
            if r["method"] == self.command:
                v = match(r["path"], path)
                if v is not None:
                    found = (r, v)
                    break
        problems = []
        if found is None:
            problems.append("no route")
        else:
            r = found[0]
            if self.headers.get("private-token") != TOKEN:
                problems.append("private-token is not the token")
            for k in parse_qs(url.query):
                if k not in r.get("query", []):
                    problems.append(f"query key {k}")
            if self.command != "GET":
                keys = set((body or {}).keys())
                problems += [f"body key {k}" for k in keys - set(r.get("keys", []))]
                problems += [f"body lacks {k}" for k in set(r.get("required", [])) - keys]
        with LOCK:
            REQUESTS.append({"method": self.command, "path": path, "query": url.query, "body": body})
            VIOLATIONS.extend(f"{self.command} {path}: {p}" for p in problems)
            status, answer = self.answer(found, path, body)
        out = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def answer(self, found, path, body):
        if found is None:
            return 404, {"message": "404 Not Found"}
        r, v = found
        t = r["path"]
        if t == "/projects/{id}/members/all/{user_id}":
            if v["user_id"] == "1001":
                return 200, {"id": 1001, "username": "maintainer", "state": "active", "access_level": 30}
            return 404, {"message": "404 Not found"}
        if t == "/projects/{id}":
            return 200, {"id": 7, "default_branch": "main"}
        if t.endswith("/notes") and self.command == "GET":
            return 200, []
        if t.endswith("/notes") and self.command == "POST":
            nid = 5000 + len(NOTES)
            NOTES[nid] = body["body"]
            return 201, {"id": nid, "body": body["body"], "system": False}
        if t.endswith("/notes/{note_id}"):
            NOTES[int(v["note_id"])] = body["body"]
            return 200, {"id": int(v["note_id"]), "body": body["body"]}
        if t == "/projects/{id}/merge_requests" and self.command == "POST":
            return 201, {"iid": 100, "web_url": "https://gitlab.example/group/hello/-/merge_requests/100"}
        return 404, {"message": "404 Not Found"}

    do_GET = do_POST = do_PUT = handle_one


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def stop(*_):
        with open(OUT, "w") as f:
            json.dump({"requests": REQUESTS, "violations": VIOLATIONS, "notes": NOTES}, f, indent=1)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    with open(PORT_FILE, "w") as f:
        f.write(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
