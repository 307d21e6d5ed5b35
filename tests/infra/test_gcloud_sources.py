"""What gcloud's own code does with the commands the project's builds run (docs/fidelity.md cites it).

The gcloud SDK installed here ships its Python sources; run under its bundled interpreter they settle how a
command splits its work between the client and the server. Skipped with one line where the SDK is absent. The
rows settled from the generated clients' field documentation: test_gcloud_sources_fields.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.infra.gcloud_sdk import ROOT, AbortedError, ServicerContext, api_fields, run_in_sdk, sdk

__all__ = ["sdk"]  # the SDK fixture, shared with test_gcloud_sources_fields.py

DEPLOY_BUILD = ROOT / "cloudbuild-deploy.yaml"


def rewrite_build_filter(sdk: Path, expression: str) -> tuple[str, str]:
    """(client filter, server filter) as `gcloud builds list` splits them (surface/builds/list.py `Run`)."""
    code = (
        "import json, sys\n"
        "from googlecloudsdk.api_lib.cloudbuild import filter_rewrite\n"
        "print(json.dumps(filter_rewrite.Backend(False).Rewrite(sys.argv[1])))\n"
    )
    client, server = json.loads(run_in_sdk(sdk, code, expression))
    return str(client), str(server or "")


def test_the_deploy_builds_commit_filter_is_applied_by_gcloud_itself(sdk: Path) -> None:
    """The server cannot filter on substitutions: gcloud sends it the rest and filters each build it returns.

    api_lib/cloudbuild/filter_rewrite.py `Backend.RewriteTerm` passes only the fields of `_STRING_FIELDS` and
    `_TIME_FIELDS` to the server; `--limit` is applied by gcloud's display after its own filter (list.py gives
    the pager no limit), so the one build asked for is one that matched the commit.
    """
    match = re.search(r"gcloud builds list --filter='([^']+)'", DEPLOY_BUILD.read_text())
    assert match, "cloudbuild-deploy.yaml no longer looks its test build up with gcloud builds list --filter"
    expression = match[1].replace("${_COMMIT}", "0123abcd")
    client, server = rewrite_build_filter(sdk, expression)
    assert 'substitutions._COMMIT="0123abcd"' in client
    assert "substitutions" not in server
    assert 'tags="notebook-medic-test"' in server and 'status="SUCCESS"' in server


# ---- rows of docs/fidelity.md that gcloud's own code settles (issue 29) --------------------------------------------
INFRA = ROOT / "infra"


def function_names() -> list[str]:
    """Every Cloud Function `infra/` declares, under the default name prefix."""
    prefix = re.search(r'variable "name_prefix" \{.*?default\s*=\s*"([^"]+)"', (INFRA / "variables.tf").read_text(),
                       re.S)
    assert prefix, "infra/variables.tf no longer gives name_prefix a default"
    names = [f"{prefix[1]}-{suffix}" for tf in sorted(INFRA.glob("*.tf"))
             for suffix in re.findall(r'resource "google_cloudfunctions2_function" "\w+" \{\s*name\s*=\s*'
                                      r'"\$\{var\.name_prefix\}-([^"]+)"', tf.read_text())]
    assert len(names) >= 4, names
    return names


def test_a_functions_cloud_run_service_is_named_as_the_function(sdk: Path) -> None:
    """The report and the dropped-kills alert's runbook select a function's log lines by `service_name` = its name.

    gcloud's own `functions logs read` builds the same selection (lib/surface/functions/logs/read.py
    `_CreateGen2LogFilterBase`: "GCFv2 functions' service names are the function ID lower-cased with '_' replaced
    with '-'"), so it is the function's name exactly when the name has neither: name_prefix's validation allows
    neither, and the suffixes are lower case with hyphens.
    """
    code = (
        "import sys, types\n"
        "from surface.functions.logs import read\n"
        "for name in sys.argv[1:]:\n"
        "    print(read._CreateGen2LogFilterBase(types.SimpleNamespace(functionsId=name), 'us-central1'))\n"
    )
    names = function_names()
    filters = run_in_sdk(sdk, code, *names).splitlines()
    for name, log_filter in zip(names, filters, strict=True):
        assert 'resource.type="cloud_run_revision"' in log_filter
        assert f'resource.labels.service_name="{name}"' in log_filter, (name, log_filter)
    validation = re.search(r'variable "name_prefix" \{.*?regex\("([^"]+)"', (INFRA / "variables.tf").read_text(), re.S)
    assert validation, "name_prefix lost its validation"
    allowed = re.compile(validation[1].replace("\\\\", "\\"))
    assert allowed.fullmatch("medic-7") and not allowed.fullmatch("medic_7") and not allowed.fullmatch("Medic-7")


def test_workbench_gives_an_unset_data_disk_100_gb_of_standard_persistent_disk(sdk: Path) -> None:
    """What `tools/doctor/preflight.py` counts of each notebook's data disk, which infra/contest leaves unset.

    gcloud's `workbench instances create` sends no data disk unless asked (api_lib/workbench/instances.py
    `GetDataDisk` returns []), and its help says what the service then makes (command_lib/workbench/flags.py
    `AddCreateInstanceFlags`): "defaults to standard persistent disk (`PD_STANDARD`)", "defaults to 100".
    Standard persistent disk counts against DISKS_TOTAL_GB, not SSD_TOTAL_GB (Compute Engine "Disk quotas").
    """
    flags = " ".join((sdk / "lib/googlecloudsdk/command_lib/workbench/flags.py").read_text().split())
    data_type = re.search(r"'--data-disk-type',.*?help=\((.*?)\),", flags)
    data_size = re.search(r"'--data-disk-size',.*?help=\((.*?)\),", flags)
    assert data_type and data_size, "gcloud's workbench flags changed shape"
    assert "defaults to ' 'standard persistent disk (`PD_STANDARD`)" in data_type[1]
    assert "If not specified, this defaults to 100." in data_size[1]
    instances = (sdk / "lib/googlecloudsdk/api_lib/workbench/instances.py").read_text()
    assert re.search(r"def GetDataDisk\(.*?\):.*?\n\s+return \[\]\n", instances, re.S)
    assert "data_disks" not in (INFRA / "contest" / "main.tf").read_text()

    from tools.doctor.preflight import DATA_DISK_GB, ContestPlan, needs  # noqa: PLC0415

    plan = ContestPlan(project="prj", zone="us-central1-a", contest_name="c", participants=(),
                       disable_public_ip=True, boot_disk_size_gb=150)
    need = needs(["n2-standard-4", "n2-standard-4"], plan)
    assert DATA_DISK_GB == 100
    assert need["DISKS_TOTAL_GB"] == 2 * 100  # the data disks, PD_STANDARD
    assert need["SSD_TOTAL_GB"] == 2 * 150  # the boot disks, PD_BALANCED in infra/contest/main.tf


def test_a_guest_attribute_namespace_with_nothing_under_it_is_404_in_computes_words(sdk: Path) -> None:
    """gcloud waits for these words from getGuestAttributes and reports them as a 404; the simulator answers them.

    lib/surface/compute/instances/os_inventory/describe.py `Describe._GetGuestInventoryGuestAttributes` (queryPath
    'guestInventory/'); `make doctor` reads a 404 as "nothing written" (tools/doctor/guard.py).
    """
    describe = (sdk / "lib/surface/compute/instances/os_inventory/describe.py").read_text()
    joined = re.sub(r"'\s*\n\s*'", "", describe).replace("\\'", "'")  # adjacent literals as one, quotes unescaped
    assert "The resource 'guestInventory/' of type 'Guest Attribute' was not found." in joined
    assert re.search(r"\(404,\s*'OS inventory data was not found", describe)

    from simulators.compute import ComputeSimulator  # noqa: PLC0415
    from simulators.workbench import WorkbenchSimulator  # noqa: PLC0415

    workbench = WorkbenchSimulator()
    workbench.add_instance("prj", "us-central1-a", "nb-1", owner_email="a@example.com")
    status, body = ComputeSimulator(workbench).guest_attributes(
        "prj", "us-central1-a", "nb-1", {"queryPath": ["guestInventory/"]})
    assert status == 404
    assert body["error"]["message"] == "The resource 'guestInventory/' of type 'Guest Attribute' was not found."


def test_a_push_is_the_json_of_a_pubsubmessage_and_that_carries_the_ordering_key(sdk: Path) -> None:
    """Settles the push body's `orderingKey` (tests/contract/test_pubsub_push_body.py holds both Pub/Subs to it).

    gcloud's generated pubsub v1 client (generated_clients/apis/pubsub/v1/pubsub_v1_messages.py): `PubsubWrapper`
    "The payload to the push endpoint is in the form of the JSON representation of a PubsubMessage", and
    `PubsubMessage.orderingKey` is one of its fields; google-cloud-pubsub's protos say the same.
    """
    text = (sdk / "lib/googlecloudsdk/generated_clients/apis/pubsub/v1/pubsub_v1_messages.py").read_text()
    wrapper = re.search(r'class PubsubWrapper\(_messages\.Message\): r"""(.*?)"""', " ".join(text.split()))
    assert wrapper and "JSON representation of a PubsubMessage" in wrapper[1]
    pubsub_message = text[text.index("class PubsubMessage(_messages.Message):"):]
    pubsub_message = pubsub_message[:pubsub_message.index("\nclass ")]
    assert "orderingKey = _messages.StringField(" in pubsub_message

    from google.pubsub_v1.types import PubsubMessage, PushConfig  # noqa: PLC0415

    assert "JSON" in " ".join((PushConfig.PubsubWrapper.__doc__ or "").split())
    assert "ordering_key" in PubsubMessage.meta.fields


def test_every_quota_the_preflight_counts_is_a_metric_compute_names(sdk: Path) -> None:
    """`needs` keys its figures by `Quota.metric`; a name Compute does not have would never meet the region's list.

    gcloud's generated compute v1 client (generated_clients/apis/compute/v1/compute_v1_messages.py)
    `Quota.MetricValueValuesEnum`, from the API's discovery document.
    """
    text = (sdk / "lib/googlecloudsdk/generated_clients/apis/compute/v1/compute_v1_messages.py").read_text()
    quota = text[text.index("class Quota(_messages.Message):"):]
    enum = quota[quota.index("class MetricValueValuesEnum"):quota.index("metric = _messages.EnumField")]
    metrics = set(re.findall(r"^\s+([A-Z0-9_]+) = \d+$", enum, re.M))
    assert {"CPUS", "SSD_TOTAL_GB", "DISKS_TOTAL_GB", "IN_USE_ADDRESSES"} <= metrics

    from shared.core.machines import DEFAULT_LADDER  # noqa: PLC0415
    from tools.doctor.preflight import ContestPlan, needs  # noqa: PLC0415

    plan = ContestPlan(project="prj", zone="us-central1-a", contest_name="c", participants=())
    counted = set(needs([*DEFAULT_LADDER, "n2d-standard-8", "c2-standard-8"], plan))
    assert counted <= metrics, counted - metrics


def test_the_guest_agents_reports_are_operations_of_the_notebooks_api(sdk: Path) -> None:
    """Why the zone's ListOperations holds operations the bot did not start (Workbench.find_reset skips them).

    gcloud's generated notebooks v2 client: `ReportInfoSystem` ("Allows notebook instances to report their latest
    instance information to the Notebooks API server … Do not use this method directly") answers an `Operation`;
    its request carries an `Event` of type IDLE, HEARTBEAT, HEALTH, MAINTENANCE or METADATA_CHANGE.
    """
    api = sdk / "lib/googlecloudsdk/generated_clients/apis/notebooks/v2"
    client = " ".join((api / "notebooks_v2_client.py").read_text().split())
    method = re.search(r"ReportInfoSystem\.method_config = lambda: base_api\.ApiMethodInfo\((.*?)\)", client)
    assert method and "response_type_name='Operation'" in method[1] and "http_method='POST'" in method[1]
    assert "report their latest instance information to the Notebooks API server" in client
    messages = (api / "notebooks_v2_messages.py").read_text()
    event = messages[messages.index("class Event(_messages.Message):"):]
    event = event[:event.index("\nclass ")]
    assert {"IDLE", "HEARTBEAT", "HEALTH"} <= set(re.findall(r"^\s+([A-Z_]+) = \d+$", event, re.M))


def test_the_logging_stand_in_answers_entries_list_as_its_fields_are_documented(sdk: Path) -> None:
    """simulators/logging_api.py against `ListLogEntriesRequest`'s documentation in gcloud's generated client.

    "Default is 50. If the value is negative, the request is rejected"; orderBy "the only permitted values are
    \\"timestamp asc\\" (default) and \\"timestamp desc\\""; "The maximum length of a filter is 20,000 characters".
    """
    text = (sdk / "lib/googlecloudsdk/generated_clients/apis/logging/v2/logging_v2_messages.py").read_text()
    request = " ".join(text[text.index("class ListLogEntriesRequest(_messages.Message):"):].split())
    request = request[:request.index(" class ")]
    assert "Default is 50. If the value is negative, the request is rejected." in request
    assert 'the only permitted values are "timestamp asc" (default) and "timestamp desc"' in request
    assert "The maximum length of a filter is 20,000 characters." in request

    from simulators.logging_api import LoggingSimulator  # noqa: PLC0415

    sim = LoggingSimulator()
    sim.add(*({"insertId": f"i{n:03}", "timestamp": f"2026-12-01T10:{n // 60:02}:{n % 60:02}Z",
               "logName": "projects/prj/logs/audit", "resource": {"type": "global"}} for n in range(60)))
    names = {"resourceNames": ["projects/prj"]}
    status, page = sim.list_entries(names)
    assert status == 200 and len(page["entries"]) == 50 and page["nextPageToken"]
    assert page["entries"][0]["insertId"] == "i000"  # "timestamp asc" by default: oldest first
    status, newest = sim.list_entries(names | {"orderBy": "timestamp desc", "pageSize": 1})
    assert status == 200 and newest["entries"][0]["insertId"] == "i059"
    assert sim.list_entries(names | {"pageSize": -1})[0] == 400
    assert sim.list_entries(names | {"orderBy": "insertId asc"})[0] == 400
    longest = 'timestamp>="2026-12-01T00:00:00Z"'
    longest += " " * (20_000 - len(longest))
    assert sim.list_entries(names | {"filter": longest})[0] == 200
    assert sim.list_entries(names | {"filter": longest + " "})[0] == 400


def test_the_monitoring_stand_in_aligns_and_orders_as_the_fields_are_documented(sdk: Path) -> None:
    """simulators/monitoring.py against the v3 documentation in gcloud's generated monitoring client.

    `Aggregation.alignmentPeriod`: "The value must be at least 60 seconds. If a per-series aligner other than
    ALIGN_NONE is specified, this field is required or an error is returned"; `TimeSeries.points`: "returned in
    reverse time order (most recent to oldest)".
    """
    text = " ".join((sdk / "lib/googlecloudsdk/generated_clients/apis/monitoring/v3/monitoring_v3_messages.py")
                    .read_text().split())
    assert ("The value must be at least 60 seconds. If a per-series aligner other than ALIGN_NONE is specified, "
            "this field is required or an error is returned.") in text
    assert "returned in reverse time order (most recent to oldest)" in text

    from datetime import UTC, datetime, timedelta  # noqa: PLC0415

    from google.cloud import monitoring_v3  # noqa: PLC0415

    from simulators.monitoring import MEMORY_METRIC, MonitoringSimulator  # noqa: PLC0415

    sim = MonitoringSimulator()
    kill = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    sim.feed_kill("4242", kill, project="prj", zone="us-central1-a")
    mean = monitoring_v3.Aggregation.Aligner.ALIGN_MEAN

    def ask(aggregation: dict[str, object]) -> object:
        return sim._list_time_series(monitoring_v3.ListTimeSeriesRequest(
            name="projects/prj",
            filter=f'metric.type = "{MEMORY_METRIC}" AND resource.labels.instance_id = "4242"',
            interval={"start_time": kill - timedelta(minutes=30), "end_time": kill},
            aggregation=aggregation), ServicerContext())

    for too_short in ({"per_series_aligner": mean}, {"per_series_aligner": mean, "alignment_period": {"seconds": 59}}):
        with pytest.raises(AbortedError, match="60 seconds"):
            ask(too_short)
    answer = ask({"per_series_aligner": mean, "alignment_period": {"seconds": 60}})
    [series] = answer.time_series  # type: ignore[attr-defined]
    ends = [point.interval.end_time for point in series.points]
    assert len(ends) == 30 and ends == sorted(ends, reverse=True)


def test_the_live_instance_has_fields_the_locked_client_library_does_not_know(sdk: Path) -> None:
    """Why a REST `op.result()` can raise ParseError on a reset that worked, and the simulator sends such fields.

    The v2 API's own field list (gcloud's generated notebooks v2 client, `Instance`, `GceSetup`) against
    google-cloud-notebooks' protos as locked: the fields the simulator adds to every Instance it renders
    (`simulators/workbench/model.py` `UNKNOWN_TOP_LEVEL`, `UNKNOWN_GCE_SETUP`) are real fields the library lacks.
    """
    from google.cloud import notebooks_v2  # noqa: PLC0415

    from simulators.workbench.model import UNKNOWN_GCE_SETUP, UNKNOWN_TOP_LEVEL  # noqa: PLC0415

    def known(message: type) -> set[str]:
        names = [field.name.split("_") for field in message.pb().DESCRIPTOR.fields]  # type: ignore[attr-defined]
        return {first + "".join(part.title() for part in rest) for first, *rest in names}

    messages = (sdk / "lib/googlecloudsdk/generated_clients/apis/notebooks/v2/notebooks_v2_messages.py").read_text()
    newer_instance = api_fields(messages, "Instance") - known(notebooks_v2.Instance)
    newer_gce_setup = api_fields(messages, "GceSetup") - known(notebooks_v2.GceSetup)
    assert set(UNKNOWN_TOP_LEVEL) <= newer_instance, (set(UNKNOWN_TOP_LEVEL), newer_instance)
    assert set(UNKNOWN_GCE_SETUP) <= newer_gce_setup, (set(UNKNOWN_GCE_SETUP), newer_gce_setup)
