"""The Slack simulator end to end: a real Bolt app under functions-framework, answering a signed slash command and
a button press, posting to the simulator's Web API and to its response_url."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from simulators.ports import free_port
from simulators.slack import SlackRequester, SlackSimulator
from tests.simulators.test_slack_sim import SECRET, TOKEN, client, sim

__all__ = ["sim"]  # the started simulator fixture, shared with test_slack_sim.py

pytestmark = pytest.mark.wire


# --------------------------------------------------------------------------- end to end

BOLT_MAIN = textwrap.dedent(
    """
    import os

    import functions_framework
    from slack_bolt import App
    from slack_bolt.adapter.google_cloud_functions import SlackRequestHandler
    from slack_sdk import WebClient

    app = App(
        process_before_response=True,
        signing_secret=os.environ["SLACK_SIGNING_SECRET"],
        client=WebClient(base_url=os.environ["SLACK_API_URL"], token=os.environ["SLACK_BOT_TOKEN"]),
    )


    @app.command("/restart-notebook")
    def restart(ack, respond, command, client):
        ack(f"Restarting {command['text']} for <@{command['user_id']}>")
        respond(text="restart queued")
        client.chat_postMessage(channel="C0ALERTS", text=f"restart of {command['text']} requested")


    @app.action("confirm")
    def confirm(ack, respond, body):
        ack()
        respond(replace_original=True, text=f"confirmed {body['actions'][0]['value']}")


    _slack = SlackRequestHandler(app)


    @functions_framework.http
    def handler(request):
        return _slack.handle(request)
    """
)


def _wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            output = proc.stdout.read() if proc.stdout is not None else b""
            raise AssertionError(f"functions-framework exited: {output!r}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("functions-framework did not start")


def test_bolt_app_under_functions_framework(sim: SlackSimulator, tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text(BOLT_MAIN)
    port = free_port()
    env = dict(
        os.environ,
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=sim.api_url,
        SLACK_BOT_TOKEN=TOKEN,
    )
    ff = Path(sys.executable).parent / "functions-framework"
    proc = subprocess.Popen(
        [str(ff), "--source", str(tmp_path / "main.py"), "--target", "handler", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_listening(port, proc, timeout=60)
        # Bolt verifies the token with auth.test when App() is built (module import).
        assert sim.wait_for(lambda: bool(sim.calls_to("auth.test")), timeout=5)

        requester = SlackRequester(SECRET, f"http://127.0.0.1:{port}/")
        url = sim.new_response_url(channel="C0GENERAL")
        ok = requester.slash_command("U0ALICE", "alice-nb", response_url=url)
        assert ok.status == 200, ok.body
        # ack("text") with nothing else: Bolt answers text/plain, not JSON
        assert ok.body == "Restarting alice-nb for <@U0ALICE>" and ok.json is None
        assert [r["text"] for r in sim.responses(url)] == ["restart queued"]
        assert [m["text"] for m in sim.messages("C0ALERTS")] == ["restart of alice-nb requested"]

        bad = requester.slash_command("U0ALICE", "alice-nb", response_url=url, tamper="bad_signature")
        assert bad.status == 401
        stale = requester.slash_command("U0ALICE", "x", response_url=url, tamper="stale_timestamp")
        assert stale.status == 401
        assert len(sim.responses(url)) == 1  # rejected requests ran no listener

        posted = client(sim).chat_postMessage(channel="C0ALERTS", text="Restart alice-nb?")
        click_url = sim.new_response_url(channel="C0ALERTS", message_ts=posted["ts"])
        click = requester.block_action(
            "U0ALICE",
            "confirm",
            "alice-nb",
            response_url=click_url,
            message_ts=posted["ts"],
            message=posted["message"],
        )
        assert click.status == 200, click.body
        assert sim.messages("C0ALERTS")[-1]["text"] == "confirmed alice-nb"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
