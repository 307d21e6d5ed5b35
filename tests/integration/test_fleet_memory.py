"""Memory in use across the fleet over the wire (issue 28): the real google-cloud-monitoring client's one
`timeSeries.list` for every VM of the project (shared/adapters/memory_series.py MemorySeries.fleet) against the
Monitoring stand-in over gRPC, and the Home tab that the running Slack function publishes with it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.adapters.errors import ServiceError
from shared.adapters.memory_series import FLEET_GROUP_BY, FLEET_WINDOW, MemorySeries
from simulators.monitoring import MonitoringSimulator
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import PROJECT, SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, ZONE, stack_with_organizer, wait_for

pytestmark = pytest.mark.wire
NOW = datetime(2026, 12, 1, 9, 30, 20, tzinfo=UTC)
OTHER_ZONE = "us-central1-a"


@pytest.fixture
def metrics() -> Iterator[MonitoringSimulator]:
    sim = MonitoringSimulator().start()
    try:
        yield sim
    finally:
        sim.stop()


def test_one_read_gives_every_vms_latest_memory_by_project_zone_and_name(metrics: MonitoringSimulator) -> None:
    metrics.feed_level("101", NOW, 87.5, project=PROJECT, zone=ZONE, name="wb-a")
    metrics.feed_level("102", NOW, 12.0, project=PROJECT, zone=OTHER_ZONE, name="wb-b")
    metrics.feed_level("103", NOW - FLEET_WINDOW - timedelta(minutes=1), 99.0, project=PROJECT, zone=ZONE,
                       name="wb-silent", minutes=30)  # the agent stopped writing before the window: no number
    metrics.feed_level("104", NOW, 95.0, project="someone-elses", zone=ZONE, name="wb-a")
    metrics.feed_kill("105", NOW - timedelta(minutes=2), project=PROJECT, zone=ZONE, name="wb-killed")
    metrics.vm("105").percents[(NOW - timedelta(minutes=1)).replace(second=0, microsecond=0)] = 31.0
    readings = MemorySeries(endpoint=metrics.endpoint, timeout_s=60).fleet(PROJECT, NOW)
    assert readings == {(PROJECT, ZONE, "wb-a"): 87.5, (PROJECT, OTHER_ZONE, "wb-b"): 12.0,
                        (PROJECT, ZONE, "wb-killed"): 31.0}  # the newest point of each, not the peak
    [(_, request)] = metrics.requests  # one call for the fleet, not one per notebook
    assert "instance_id" not in request.filter and f'resource.labels.project_id = "{PROJECT}"' in request.filter
    assert list(request.aggregation.group_by_fields) == list(FLEET_GROUP_BY)


def test_a_reduction_without_an_aligner_is_refused_as_the_api_does(metrics: MonitoringSimulator) -> None:
    from google.api_core import exceptions  # noqa: PLC0415
    from google.cloud import monitoring_v3  # noqa: PLC0415

    client = MemorySeries(endpoint=metrics.endpoint)._metrics()
    with pytest.raises(exceptions.InvalidArgument):
        client.list_time_series(request=monitoring_v3.ListTimeSeriesRequest(
            name=f"projects/{PROJECT}", filter='metric.type = "agent.googleapis.com/memory/percent_used"',
            interval={"start_time": NOW - FLEET_WINDOW, "end_time": NOW},
            aggregation={"cross_series_reducer": monitoring_v3.Aggregation.Reducer.REDUCE_MAX,
                         "group_by_fields": list(FLEET_GROUP_BY)}), retry=None, timeout=PATIENCE_S)


def test_monitoring_down_is_the_projects_error(metrics: MonitoringSimulator) -> None:
    metrics.down = True
    with pytest.raises(ServiceError, match="UNAVAILABLE"):
        MemorySeries(endpoint=metrics.endpoint, timeout_s=60).fleet(PROJECT, NOW)


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with stack_with_organizer() as running:
        yield running


def opened(stack: LocalStack, user_id: str) -> str:
    before = len(stack.slack.calls_to("views.publish"))
    response = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url).app_home_opened(user_id)
    assert response.status == 200, response.body
    assert wait_for(lambda: len(stack.slack.calls_to("views.publish")) > before, timeout=PATIENCE_S), \
        stack.functions["slack_app"][0].log_tail()
    view: dict[str, Any] | None = stack.slack.home_view(user_id)
    assert view is not None
    return json.dumps(view, ensure_ascii=False)


def test_the_home_tab_shows_each_notebooks_memory_and_says_when_there_is_none(stack: LocalStack) -> None:
    _, busy = new_instance(stack, "wb-busy")
    _, quiet = new_instance(stack, "wb-quiet")
    now = datetime.now(UTC)
    stack.metrics.feed_level("9001", now, 91.0, project=PROJECT, zone=ZONE, name=busy)
    text = opened(stack, ORGANIZER[0])
    assert "memory 91% █████" in text and ":warning: memory 91%" in text  # high memory: it needs attention
    assert f"{quiet} · " in text and "memory no data" in text


def test_the_home_tab_is_published_with_memory_unknown_when_monitoring_is_down(stack: LocalStack) -> None:
    new_instance(stack, "wb-unread")
    stack.metrics.down = True
    try:
        text = opened(stack, ORGANIZER[0])
    finally:
        stack.metrics.down = False
    assert "wb-unread" in text and "memory unknown" in text and "memory 9" not in text
