"""intakes.answer: how an intake's event ended becomes the function's HTTP answer in one place, here served by
functions-framework itself (its Flask app and test client, no server): 200 for every end but the one that asks for
the event again, answered 503, which Eventarc's push subscription redelivers."""

from __future__ import annotations

from pathlib import Path

import functions_framework
import pytest

from shared.app.intakes import REDELIVERED, Intake

FUNCTION = '''
import functions_framework
from shared.app.intakes import Intake, IntakeOutcome, answer

@functions_framework.cloud_event
def ended(event):
    answer(IntakeOutcome(Intake(event.data["kind"]), "why"))
'''


@pytest.mark.parametrize("kind", list(Intake), ids=str)
def test_every_end_is_answered_200_but_the_held_kill_that_is_asked_for_again(tmp_path: Path, kind: Intake) -> None:
    source = tmp_path / "main.py"
    source.write_text(FUNCTION)
    app = functions_framework.create_app(target="ended", source=str(source), signature_type="cloudevent")
    headers = {"ce-id": "1", "ce-source": "//pubsub", "ce-type": "google.cloud.pubsub.topic.v1.messagePublished",
               "ce-specversion": "1.0", "Content-Type": "application/json"}
    response = app.test_client().post("/", json={"kind": kind.value}, headers=headers)
    assert response.status_code == (503 if kind in REDELIVERED else 200), response.get_data(as_text=True)
