"""Stand-in for the Jupyter server inside the Debian 12 container: answers what Workbench's proxy agent probes.

Real Jupyter is not installed in the minimal Debian tree (no pip, no network in the container); the guard's
systemd behaviour does not depend on what the server is, only on the unit. It serves GET /api/kernelspecs on
127.0.0.1:PORT like jupyter_server and starts one child that looks like a kernel to the guard (a connection file
argument, as jupyter_client launches kernels), so the guard's raise of a running kernel's oom_score_adj is real.
Runs under the container's python3 (stdlib only).
"""

import http.server
import json
import subprocess
import sys

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 8080
KERNEL = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(10**6)", "-f",
                           "/tmp/kernel-0123abcd-4567-89ef-0123-456789abcdef.json"])


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.split("?")[0] != "/api/kernelspecs":
            self.send_error(404)
            return
        body = json.dumps({"default": "python3", "kernelspecs": {"python3": {"name": "python3"}}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
