"""Stand-ins inside the container for the Compute Engine metadata server and the Cloud Storage JSON API.

Metadata (requests without Metadata-Flavor: Google refused, as the real server does):
- GET /computeMetadata/v1/instance/attributes/KEY answers from ATTRIBUTES (a JSON file the test writes), 404
  when absent;
- GET /computeMetadata/v1/instance/service-accounts/default/token answers a token ("Access tokens" of the
  metadata server: {"access_token", "expires_in", "token_type"});
- PUT /computeMetadata/v1/instance/guest-attributes/NAMESPACE/KEY stores the body in GUEST (JSON)
  ("Setting and querying guest attributes").
Cloud Storage JSON API (requests without that token's Authorization: Bearer refused), objects being the files
under BUCKET_DIR/<bucket>/:
- GET /storage/v1/b/BUCKET/o?prefix=P lists them ("Objects: list": {"kind": "storage#objects", "items": [...]},
  no "items" when none);
- GET /storage/v1/b/BUCKET/o/NAME?alt=media (NAME percent-encoded) returns one's content ("Objects: get").
"""

import http.server
import json
import os
import sys
import urllib.parse

PORT, ATTRIBUTES, GUEST = int(sys.argv[1]), sys.argv[2], sys.argv[3]
BUCKET_DIR = sys.argv[4] if len(sys.argv) > 4 else "/opt/standin/bucket"
PREFIX = "/computeMetadata/v1/instance/"
TOKEN = "ya29.stand-in"


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
        if self.path.startswith("/storage/v1/b/"):
            return self.storage()
        if self.headers.get("Metadata-Flavor") != "Google":
            return self.answer(403)
        if self.path == PREFIX + "service-accounts/default/token":
            return self.answer(200, json.dumps({"access_token": TOKEN, "expires_in": 3599,
                                                "token_type": "Bearer"}).encode())
        key = self.path[len(PREFIX + "attributes/"):]
        value = load(ATTRIBUTES).get(key) if self.path.startswith(PREFIX + "attributes/") else None
        return self.answer(404) if value is None else self.answer(200, value.encode())

    def storage(self):
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self.answer(401)
        path, _, query = self.path.partition("?")
        params = urllib.parse.parse_qs(query)
        bucket, _, rest = path[len("/storage/v1/b/"):].partition("/")
        root = os.path.join(BUCKET_DIR, bucket)
        if rest == "o":
            prefix = params.get("prefix", [""])[0]
            names = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files)
            items = [{"kind": "storage#object", "bucket": bucket, "name": n} for n in names if n.startswith(prefix)]
            body = {"kind": "storage#objects", **({"items": items} if items else {})}
            return self.answer(200, json.dumps(body).encode())
        if rest.startswith("o/") and params.get("alt") == ["media"]:
            name = urllib.parse.unquote(rest[2:])
            target = os.path.normpath(os.path.join(root, name))
            if not target.startswith(root + os.sep) or not os.path.isfile(target):
                return self.answer(404)
            with open(target, "rb") as handle:
                return self.answer(200, handle.read())
        return self.answer(400)

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
