"""The request-equality oracle of cloud_sdk.sh: one loopback server captures the
request `agent` sends and the one the official SDK client sends for the same input, and
they are compared field by field (method, path, the headers that matter, the body JSON).
The SDK call is rebuilt from the agent's captured body (its system prompt, tools and
messages), so that the comparison is of what each client adds and how: the URL, the
model's escaping, what moves from the body to the URL, the version, the betas, the
credential headers. `anthropic_version` is compared with the documented value the agent
chose (DESIGN.md), and reported next to the SDK's own. Each of the agent's SigV4
signatures is also recomputed with botocore from the captured request.
"""

import datetime
import json
import os
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

captured = []


class Capture(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        if self.path == "/token":  # a Google token endpoint for the agent's service account
            answer = json.dumps({"access_token": "ya29.oracle-token", "expires_in": 3600}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        captured.append(
            {
                "method": "POST",
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": json.loads(body) if body else None,
                "raw": body,
            }
        )
        answer = json.dumps({"message": "captured", "type": "error",
                             "error": {"type": "invalid_request_error", "message": "captured"}}).encode()
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def serve():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def run_agent(agent, env, args):
    workspace = tempfile.mkdtemp()
    base = {"PATH": os.environ["PATH"], "HOME": workspace, "NO_COLOR": "1"}
    base.update(env)
    subprocess.run([agent, "run", "--max-retries", "0", *args], env=base, cwd=workspace,
                   capture_output=True, timeout=60)
    return captured.pop()


def sdk_call(client, agent_req, model, drop):
    body = dict(agent_req["body"])
    for k in ["anthropic_version", *drop]:
        body.pop(k, None)
    betas = body.pop("anthropic_beta", None)
    if not betas and agent_req["headers"].get("anthropic-beta"):
        betas = agent_req["headers"]["anthropic-beta"].split(",")
    kwargs = dict(model=model, stream=True, **body)
    try:
        if betas:
            client.beta.messages.create(betas=betas, **kwargs)
        else:
            client.messages.create(**kwargs)
    except Exception as e:  # the capture server answers 400
        if "captured" not in str(e):
            raise
    return captured.pop()


failures = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{(': ' + detail) if detail else ''}")
    if not ok:
        failures.append(name)


def compare(provider, agent_req, sdk_req, headers, version_field, documented):
    check(f"{provider}: method", agent_req["method"] == sdk_req["method"])
    check(f"{provider}: path", agent_req["path"] == sdk_req["path"],
          f"agent {agent_req['path']} / sdk {sdk_req['path']}")
    a, s = dict(agent_req["body"]), dict(sdk_req["body"])
    if version_field:
        check(f"{provider}: anthropic_version is the documented {documented}", a.get(version_field) == documented,
              f"agent {a.get(version_field)!r}, SDK {s.get(version_field)!r}")
        a.pop(version_field, None)
        s.pop(version_field, None)
    check(f"{provider}: body JSON", a == s,
          "" if a == s else f"\n  agent: {json.dumps(a, sort_keys=True)[:600]}\n  sdk:   {json.dumps(s, sort_keys=True)[:600]}")
    for h in headers:
        av, sv = agent_req["headers"].get(h), sdk_req["headers"].get(h)
        check(f"{provider}: header {h}", av == sv, f"agent {av!r} / sdk {sv!r}")
    for h in ("x-api-key", "anthropic-version", "api-key", "authorization"):
        check(f"{provider}: {h} sent only if the SDK sends it", h not in agent_req["headers"] or h in sdk_req["headers"],
              f"agent {agent_req['headers'].get(h)!r}, sdk {sdk_req['headers'].get(h)!r}")


def resign(req, base, creds, region, service):
    """botocore's signature of the captured request, with its signed headers and date."""
    import botocore.auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    auth = req["headers"]["authorization"]
    signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";")
    headers = {h: req["headers"][h] for h in signed if h not in ("host", "x-amz-date", "x-amz-security-token")}
    when = datetime.datetime.strptime(req["headers"]["x-amz-date"], "%Y%m%dT%H%M%SZ")
    r = AWSRequest(method="POST", url=base + req["path"], headers=headers, data=req["raw"])
    with mock.patch.object(botocore.auth, "get_current_datetime", return_value=when):
        botocore.auth.SigV4Auth(Credentials(*creds), service, region).add_auth(r)
    return r.headers["Authorization"], auth


def bedrock(agent):
    from anthropic import AnthropicBedrock

    server, url = serve()
    creds = ("AKIDORACLE", "oracle/secret+key", "oracle-session-token")
    env = {"AWS_ACCESS_KEY_ID": creds[0], "AWS_SECRET_ACCESS_KEY": creds[1], "AWS_SESSION_TOKEN": creds[2],
           "AWS_REGION": "us-east-1", "ANTHROPIC_BEDROCK_BASE_URL": url, "AWS_EC2_METADATA_DISABLED": "true"}
    client = AnthropicBedrock(aws_access_key=creds[0], aws_secret_key=creds[1], aws_session_token=creds[2],
                              aws_region="us-east-1", base_url=url, max_retries=0)
    for model, extra in [
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", []),
        ("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3;x", []),
        ("anthropic.claude-opus-4-1-20250805-v1:0", ["--thinking-budget", "2048", "--betas", "context-1m-2025-08-07"]),
    ]:
        name = f"bedrock {model[:40]}{' ' + ' '.join(extra) if extra else ''}"
        agent_req = run_agent(agent, env, ["--provider", "bedrock", "-m", model, "--max-tokens", "100", *extra,
                                           "list the files"])
        sdk_req = sdk_call(client, agent_req, model, [])
        compare(name, agent_req, sdk_req, ["content-type", "x-amz-security-token"], "anthropic_version",
                "bedrock-2023-05-31")
        a_scope = agent_req["headers"]["authorization"].split(",")[0]
        s_scope = sdk_req["headers"]["authorization"].split(",")[0]
        check(f"{name}: credential scope", a_scope.split("/")[0] == s_scope.split("/")[0] and
              a_scope.split("/")[2:] == s_scope.split("/")[2:], f"{a_scope} / {s_scope}")
        want, got = resign(agent_req, url, creds, "us-east-1", "bedrock")
        check(f"{name}: botocore re-signs the agent's request to the same signature", want == got,
              "" if want == got else f"\n  botocore {want}\n  agent    {got}")
    # A Bedrock API key: Bearer, no signing.
    env2 = {"AWS_BEARER_TOKEN_BEDROCK": "ABSK-oracle-key", "AWS_REGION": "us-east-1", "ANTHROPIC_BEDROCK_BASE_URL": url}
    agent_req = run_agent(agent, env2, ["--provider", "bedrock", "-m", "us.anthropic.claude-haiku-4-5-20251001-v1:0",
                                        "hi"])
    os.environ["AWS_BEARER_TOKEN_BEDROCK"] = "ABSK-oracle-key"
    client = AnthropicBedrock(aws_region="us-east-1", base_url=url, max_retries=0)
    del os.environ["AWS_BEARER_TOKEN_BEDROCK"]
    sdk_req = sdk_call(client, agent_req, "us.anthropic.claude-haiku-4-5-20251001-v1:0", [])
    compare("bedrock api key", agent_req, sdk_req, ["authorization", "content-type"], "anthropic_version",
            "bedrock-2023-05-31")
    check("bedrock api key: unsigned", "x-amz-date" not in agent_req["headers"])
    server.shutdown()


def vertex(agent):
    from anthropic import AnthropicVertex

    server, url = serve()
    keys = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/fixtures/keys")
    sa = os.path.join(tempfile.mkdtemp(), "sa.json")
    with open(sa, "w") as f:
        json.dump({"type": "service_account", "project_id": "p", "private_key_id": "k",
                   "private_key": open(os.path.join(keys, "test_rsa_pkcs8.pem")).read(),
                   "client_email": "ci@p.iam.gserviceaccount.com", "token_uri": url + "/token"}, f)
    for region, project, model, extra in [
        ("us-east5", "my-project", "claude-sonnet-4-5@20250929", []),
        ("global", "proj;x", "claude-opus-4-1@20250805", ["--thinking-budget", "2048", "--betas", "context-1m-2025-08-07"]),
    ]:
        env = {"GOOGLE_APPLICATION_CREDENTIALS": sa, "CLOUD_ML_REGION": region,
               "ANTHROPIC_VERTEX_PROJECT_ID": project, "ANTHROPIC_VERTEX_BASE_URL": url + "/v1",
               "GCE_METADATA_HOST": "127.0.0.1:9"}
        name = f"vertex {region} {model}{' ' + ' '.join(extra) if extra else ''}"
        agent_req = run_agent(agent, env, ["--provider", "vertex", "-m", model, "--max-tokens", "100", *extra,
                                           "list the files"])
        client = AnthropicVertex(region=region, project_id=project, access_token="ya29.oracle-token",
                                 base_url=url + "/v1", max_retries=0)
        sdk_req = sdk_call(client, agent_req, model, ["stream"])
        compare(name, agent_req, sdk_req, ["authorization", "content-type", "anthropic-beta"], "anthropic_version",
                "vertex-2023-10-16")
    server.shutdown()


def foundry(agent):
    from anthropic import AnthropicFoundry

    server, url = serve()
    for label, env, client in [
        ("foundry key", {"ANTHROPIC_FOUNDRY_API_KEY": "foundry-oracle-key"},
         AnthropicFoundry(api_key="foundry-oracle-key", base_url=url + "/anthropic/", max_retries=0)),
        ("foundry Entra ID token", {"ANTHROPIC_FOUNDRY_AUTH_TOKEN": "entra-oracle-token"},
         AnthropicFoundry(azure_ad_token_provider=lambda: "entra-oracle-token", base_url=url + "/anthropic/",
                          max_retries=0)),
    ]:
        env = {**env, "ANTHROPIC_FOUNDRY_BASE_URL": url + "/anthropic"}
        agent_req = run_agent(agent, env, ["--provider", "foundry", "-m", "claude-sonnet-4-5", "--max-tokens", "100",
                                           "--betas", "context-1m-2025-08-07", "list the files"])
        sdk_req = sdk_call(client, agent_req, "claude-sonnet-4-5", ["stream", "model"])
        compare(label, agent_req, sdk_req, ["x-api-key", "api-key", "authorization", "content-type",
                                            "anthropic-beta"], None, None)
        print(f"note {label}: anthropic-version header: agent {agent_req['headers'].get('anthropic-version')!r}, "
              f"SDK {sdk_req['headers'].get('anthropic-version')!r} (the agent keeps the Messages API's documented one)")
    server.shutdown()


def main(agent):
    bedrock(agent)
    for provider in ("vertex", "foundry"):
        fn = globals().get(provider)
        if fn:
            fn(agent)
    print(f"{len(failures)} failed" if failures else "all checks passed")
    return 1 if failures else 0
