"""A small OTLP/HTTP receiver for ci/interop/otel.sh: decodes every request with the
official opentelemetry-proto package (protobuf's own parser, not ours), refuses
anything with unknown fields, and writes what it got as JSON lines (MessageToDict) to
the file named on the command line. Prints its port on stdout, then serves until
killed."""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[1]


def unknown_fields(msg, path="request"):
    """Every field the official schema does not know, anywhere in the message."""
    found = []
    if len(UnknownFieldSet(msg)):
        found.append(path)
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        # protobuf 6+ has `is_repeated`; older releases only `label`.
        repeated = getattr(field, "is_repeated", None)
        if repeated is None:
            repeated = field.label == field.LABEL_REPEATED
        if repeated:
            if field.message_type.GetOptions().map_entry:
                continue
            for i, item in enumerate(value):
                found += unknown_fields(item, f"{path}.{field.name}[{i}]")
        elif isinstance(value, Message):
            found += unknown_fields(value, f"{path}.{field.name}")
    return found


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        kinds = {
            "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
            "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
        }
        if self.path not in kinds:
            self.send_error(404)
            return
        request_type, response_type = kinds[self.path]
        record = {"path": self.path, "content_type": self.headers.get("Content-Type")}
        try:
            msg = request_type()
            msg.ParseFromString(body)
            record["unknown_fields"] = unknown_fields(msg)
            record["body"] = MessageToDict(msg)
        except Exception as e:  # a body the official decoder refuses
            record["error"] = repr(e)
        with open(OUT, "a") as f:
            f.write(json.dumps(record) + "\n")
        reply = response_type().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
