"""Stand-in for the Compute Engine metadata server inside the container: instance attributes and guest attributes.

GET /computeMetadata/v1/instance/attributes/KEY answers from ATTRIBUTES (a JSON file the test writes), 404 when
absent; PUT /computeMetadata/v1/instance/guest-attributes/NAMESPACE/KEY stores the body in GUEST (JSON), as the
real server does ("Setting and querying guest attributes"). Both refuse a request without Metadata-Flavor: Google.
"""

import http.server
import json
import os
import sys

PORT, ATTRIBUTES, GUEST = int(sys.argv[1]), sys.argv[2], sys.argv[3]
PREFIX = "/computeMetadata/v1/instance/"


def load(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return {}


class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.headers.get("Metadata-Flavor") != "Google":
            return self.answer(403)
        key = self.path[len(PREFIX + "attributes/"):]
        value = load(ATTRIBUTES).get(key) if self.path.startswith(PREFIX + "attributes/") else None
        return self.answer(404) if value is None else self.answer(200, value.encode())

    def do_PUT(self):
        if self.headers.get("Metadata-Flavor") != "Google" or not self.path.startswith(PREFIX + "guest-attributes/"):
            return self.answer(403)
        namespace, _, key = self.path[len(PREFIX + "guest-attributes/"):].partition("/")
        value = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        stored = load(GUEST)
        stored[f"{namespace}/{key}"] = value
        with open(GUEST + ".tmp", "w") as handle:
            json.dump(stored, handle)
        os.replace(GUEST + ".tmp", GUEST)
        return self.answer(200)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
