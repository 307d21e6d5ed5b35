"""Runs one cell in a running Jupyter kernel and prints what came back as one JSON object (issue 32's rig).

Run by the Jupyter virtualenv's python (it has jupyter_client; .venv does not):
    python kernel_run.py CONNECTION_FILE TIMEOUT_SECONDS < code
The kernel is a real ipykernel started by a real jupyter_server; this is a second client on its channels, as a
console attached to it would be. Prints {"status", "ename", "evalue", "stdout", "stderr", "error_seen"}; status
"dead" when the kernel stopped answering within the timeout (killed, most likely).
"""

from __future__ import annotations

import json
import queue
import sys
import time

from jupyter_client import BlockingKernelClient


def main() -> int:
    connection_file, timeout = sys.argv[1], float(sys.argv[2])
    client = BlockingKernelClient(connection_file=connection_file)
    client.load_connection_file()
    client.start_channels()
    result = {"status": "dead", "ename": "", "evalue": "", "stdout": "", "stderr": "", "error_seen": ""}
    try:
        client.wait_for_ready(timeout=timeout)
        msg_id = client.execute(sys.stdin.read(), store_history=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = client.get_iopub_msg(timeout=0.5)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                result[content["name"]] += content["text"]
            elif kind == "error":
                result["error_seen"] = f"{content['ename']}: {content['evalue']}"
            elif kind == "status" and content["execution_state"] == "idle":
                reply = client.get_shell_msg(timeout=timeout)
                result.update(status=reply["content"]["status"], ename=reply["content"].get("ename", ""),
                              evalue=reply["content"].get("evalue", ""))
                break
    except RuntimeError:
        pass  # wait_for_ready's "Kernel didn't respond": dead
    finally:
        client.stop_channels()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
