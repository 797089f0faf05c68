"""Oracles for the cloud providers (issue 22), run by cloud_sdk.sh in a scratch venv.

  sigv4 FILE      botocore's SigV4Auth signs each case of FILE's inputs; the
                  signatures must equal the `expected` ones in FILE (which the agent's
                  own unit test, sigv4_tests.rs, checks its signer against). With
                  --write, FILE's expected values are replaced by botocore's.
  requests AGENT  one loopback server captures the request AGENT (the built binary)
                  sends and the one the official SDK client sends for the same input,
                  per provider, and compares method, path, the headers that matter and
                  the body JSON.
"""

import datetime
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock


def sigv4(path, write):
    import botocore.auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    with open(path) as f:
        doc = json.load(f)
    bad = 0
    for case in doc["cases"]:
        when = datetime.datetime.fromtimestamp(case["time"], datetime.timezone.utc).replace(tzinfo=None)
        request = AWSRequest(
            method=case["method"],
            url=case["url"],
            headers=dict(case["headers"]),
            data=case["body"].encode(),
        )
        creds = Credentials(case["access_key_id"], case["secret_access_key"], case.get("session_token"))
        with mock.patch.object(botocore.auth, "get_current_datetime", return_value=when):
            botocore.auth.SigV4Auth(creds, case["service"], case["region"]).add_auth(request)
        got = {
            "authorization": request.headers["Authorization"],
            "x-amz-date": request.headers["X-Amz-Date"],
        }
        if case.get("session_token"):
            got["x-amz-security-token"] = request.headers["X-Amz-Security-Token"]
        if write:
            case["expected"] = got
        elif case.get("expected") != got:
            bad += 1
            print(f"MISMATCH {case['name']}:\n  file:     {case.get('expected')}\n  botocore: {got}")
        else:
            print(f"ok {case['name']}: {got['authorization'][-64:]}")
    if write:
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print(f"wrote {len(doc['cases'])} botocore signatures to {path}")
    return bad


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "sigv4":
        sys.exit(1 if sigv4(sys.argv[2], "--write" in sys.argv) else 0)
    if cmd == "requests":
        from cloud_requests import main as requests_main

        sys.exit(requests_main(sys.argv[2]))
    print(__doc__)
    sys.exit(2)
