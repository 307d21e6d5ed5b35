"""Our JSON log lines carry what google-cloud-logging's StructuredLogHandler writes (the library is the oracle)."""

from __future__ import annotations

import io
import json
import logging

from google.cloud.logging_v2.handlers import StructuredLogHandler

from shared.adapters.audit import CloudJsonFormatter


def emit(handler: logging.Handler, stream: io.StringIO) -> dict:
    logger = logging.getLogger("notebook_medic.audit.test")
    logger.handlers, logger.propagate = [handler], False
    logger.setLevel(logging.INFO)
    logger.warning("decision %s", "made", extra={"json_fields": {"instance": "wb-alice", "decision": "reset"}})
    return json.loads(stream.getvalue().strip().splitlines()[-1])


def test_same_fields_as_the_library() -> None:
    ours_stream, theirs_stream = io.StringIO(), io.StringIO()
    ours_handler = logging.StreamHandler(ours_stream)
    ours_handler.setFormatter(CloudJsonFormatter())
    ours = emit(ours_handler, ours_stream)
    theirs = emit(StructuredLogHandler(stream=theirs_stream), theirs_stream)
    for key in ("message", "severity", "instance", "decision", "logging.googleapis.com/labels",
                "logging.googleapis.com/sourceLocation"):
        assert ours[key] == theirs[key], key


def test_exceptions_are_in_the_message() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(CloudJsonFormatter())
    logger = logging.getLogger("notebook_medic.audit.test2")
    logger.handlers, logger.propagate = [handler], False
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("failed")
    record = json.loads(stream.getvalue())
    assert record["severity"] == "ERROR" and "ValueError: boom" in record["message"]
