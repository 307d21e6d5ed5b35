"""Rows of docs/fidelity.md settled (wholly or in part) by the field documentation of gcloud's generated API clients
and gcloud's own commands: regions.get's quotas, instances.list's filter, Cloud Build's logging, Workbench's
instance owners, the Ops Agent's monitored resource. Skipped with one line where the SDK is absent.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.infra.gcloud_sdk import COMPUTE_V1, ROOT, ServicerContext, api_fields, message_of, sdk

__all__ = ["sdk"]


def test_a_regions_quotas_are_read_by_metric_and_may_be_missing_from_an_answer(sdk: Path) -> None:
    """Row `regions.get` of docs/fidelity.md: the shape, as gcloud's own `compute regions list` reads it.

    api_lib/compute/resource_specs.py `_QuotaToCell` looks each column's metric up in `region['quotas']` and shows
    its `usage`/`limit`; compute v1 `Quota` has `limit` and `usage` as doubles beside `metric` and `owner`; and
    `Region.quotaStatusWarning` "is populated only if fetching of the `quotas` field fails", so a 200 answer can
    lack them (tools/doctor/preflight.py then reports the quotas unread: the test below, and
    tests/doctor/test_preflight.py over the wire).
    """
    specs = (sdk / "lib/googlecloudsdk/api_lib/compute/resource_specs.py").read_text()
    assert re.search(r"for quota in region\.get\('quotas', \[\]\):\s+if quota\.get\('metric'\) != metric:", specs)
    assert "quota.get('usage')" in specs and "quota.get('limit')" in specs
    assert "_QuotaToCell('CPUS'" in specs and "_QuotaToCell('DISKS_TOTAL_GB'" in specs
    messages = (sdk / COMPUTE_V1).read_text()
    assert api_fields(messages, "Quota") == {"limit", "metric", "owner", "usage"}
    quota = message_of(messages, "Quota")
    assert "limit = _messages.FloatField(" in quota and "usage = _messages.FloatField(" in quota
    region = message_of(messages, "Region")
    assert "quotas = _messages.MessageField('Quota'" in region
    assert ("quotaStatusWarning: [Output Only] Warning of fetching the `quotas` field for this region. This field is "
            "populated only if fetching of the `quotas` field fails.") in region


def test_a_region_answered_without_its_quotas_is_not_room_for_the_fleet() -> None:
    from tools.doctor.model import Status  # noqa: PLC0415
    from tools.doctor.preflight import ContestPlan, Participant, PreflightSeen, check_plan  # noqa: PLC0415

    plan = ContestPlan(project="prj", zone="us-central1-a", contest_name="c",
                       participants=(Participant("nb-1", "a@example.com", "n2-standard-4"),))
    [line] = [result for result in check_plan(plan, PreflightSeen(quotas={})) if result.key == "preflight.quotas"]
    assert line.status != Status.OK, line.what


def test_instances_list_filters_on_a_field_and_the_vm_id_is_a_uint64(sdk: Path) -> None:
    """Row `compute.instances.list` of docs/fidelity.md: the bot's filter `id = N` and the id's type.

    gcloud's generated compute v1 client: `ComputeInstancesListRequest.filter` ("your expression must specify the
    field name, an operator, and the value", "The value must be a string, a number, or a boolean", `=` among the
    operators) and `Instance.id` (a UINT64, "[Output Only] The unique identifier for the resource. This identifier
    is defined by the server"), which is why it travels as a JSON string.
    """
    messages = (sdk / COMPUTE_V1).read_text()
    request = message_of(messages, "ComputeInstancesListRequest")
    assert "your expression must specify the field name, an operator, and the value" in request
    assert "The value must be a string, a number, or a boolean. The operator must be either `=`," in request
    instance = message_of(messages, "Instance")
    assert re.search(r" id = _messages\.IntegerField\(\d+, variant=_messages\.Variant\.UINT64\)", instance)
    assert ("id: [Output Only] The unique identifier for the resource. This identifier is defined by the server."
            in instance)
    adapter = (ROOT / "shared" / "adapters" / "compute.py").read_text()
    assert '"filter": f"id = {int(vm_id)}"' in adapter, "shared/adapters/compute.py no longer filters on id = N"


def test_gcloud_builds_submit_shows_no_cloud_logging_only_log_but_fails_with_the_build(sdk: Path) -> None:
    """Row "A Cloud Build build runs every step as one service account" of docs/fidelity.md: what the operator sees.

    Both builds log `CLOUD_LOGGING_ONLY` (the generated cloudbuild v1 client's `BuildOptions.LoggingValueValuesEnum`:
    "Build logs are stored in Cloud Logging"). The GA `gcloud builds submit` (surface/builds/submit.py `Submit`,
    `_support_gcl = False`) then streams no log and says "gcloud builds submit only displays logs from Cloud Storage"
    (command_lib/builds/submit_util.py `Build`), yet waits for the build and raises `FailedBuildException` unless it
    ends SUCCESS; `gcloud beta builds submit` (`SubmitBeta`, `_support_gcl = True`) streams it from Cloud Logging.
    """
    for config in ("cloudbuild.yaml", "cloudbuild-deploy.yaml"):
        assert re.search(r"^\s+logging: CLOUD_LOGGING_ONLY\b", (ROOT / config).read_text(), re.M), config
    enum = message_of((sdk / "lib/googlecloudsdk/generated_clients/apis/cloudbuild/v1/cloudbuild_v1_messages.py")
                    .read_text(), "BuildOptions")
    assert "CLOUD_LOGGING_ONLY: Build logs are stored in Cloud Logging." in enum
    submit = (sdk / "lib/surface/builds/submit.py").read_text()
    assert re.search(r"ReleaseTrack\.GA\)\nclass Submit\(.*?\n  _support_gcl = False\n", submit, re.S)
    assert re.search(r"ReleaseTrack\.BETA\)\nclass SubmitBeta\(Submit\):.*?\n  _support_gcl = True\n", submit, re.S)
    util = " ".join((sdk / "lib/googlecloudsdk/command_lib/builds/submit_util.py").read_text().split())
    assert re.search(r"not support_gcl and build\.options and build\.options\.logging in \[ "
                     r"messages\.BuildOptions\.LoggingValueValuesEnum\.STACKDRIVER_ONLY, "
                     r"messages\.BuildOptions\.LoggingValueValuesEnum\.CLOUD_LOGGING_ONLY, \] \): "
                     r"log\.status\.Print\( '\\ngcloud builds submit only displays logs from Cloud' ' Storage\.", util)
    assert ("if build.status != messages.Build.StatusValueValuesEnum.SUCCESS: raise FailedBuildException(build)"
            in util)


def test_instance_owners_is_one_email_and_without_it_the_service_accounts_users_get_in(sdk: Path) -> None:
    """Row `instance_owners` of docs/fidelity.md: what single-user mode is, in the v2 API's own words.

    gcloud's generated notebooks v2 client, `Instance.instanceOwners`: "Format: `alias@example.com` Currently
    supports one owner only. If not specified, all of the service account users of your VM instance's service
    account can use the instance" (the `proxy-mode` = `service_account` of an instance without owners). Its text
    there lacks the "Input only." that google-cloud-notebooks' `Instance.instance_owners` carries: the sources
    differ on whether a GET returns it (the simulator, following the library and the provider, never does).
    """
    messages = (sdk / "lib/googlecloudsdk/generated_clients/apis/notebooks/v2/notebooks_v2_messages.py").read_text()
    instance = message_of(messages, "Instance")
    documented = re.search(r"instanceOwners: (.*?) labels: ", instance)
    assert documented, "notebooks v2 Instance no longer documents instanceOwners"
    assert documented[1] == ("Optional. The owner of this instance after creation. Format: `alias@example.com` "
                             "Currently supports one owner only. If not specified, all of the service account users "
                             "of your VM instance's service account can use the instance."), documented[1]
    assert "instanceOwners = _messages.StringField(" in instance

    from google.cloud import notebooks_v2  # noqa: PLC0415

    library = " ".join((notebooks_v2.Instance.__doc__ or "").split())
    assert "instance_owners (MutableSequence[str]): Optional. Input only. The owner of this instance" in library

    from simulators.workbench import WorkbenchSimulator  # noqa: PLC0415

    workbench = WorkbenchSimulator()
    owned = workbench.get(workbench.add_instance("prj", "us-central1-a", "nb-1", owner_email="a@example.com"))
    shared = workbench.get(workbench.add_instance("prj", "us-central1-a", "nb-2", owner_email=None))
    assert "instanceOwners" not in owned and "instanceOwners" not in shared
    assert owned["gceSetup"]["metadata"]["proxy-user-mail"] == "a@example.com"
    assert shared["gceSetup"]["metadata"]["proxy-mode"] == "service_account"


def test_a_vms_time_series_are_on_gce_instance_with_its_project_id_instance_id_and_zone(sdk: Path) -> None:
    """Row "The Ops Agent writes agent.googleapis.com/memory/percent_used" of docs/fidelity.md: the resource.

    gcloud's generated monitoring v3 client, `MonitoredResource`: "the MonitoredResourceDescriptor for
    \\"gce_instance\\" has labels \\"project_id\\", \\"instance_id\\" and \\"zone\\"", which the stand-in answers.
    The SDK holds no Ops Agent configuration (so nothing of its defaults), only the script its ops-agents policies
    install it with (ops_agents_policy_to_guest_policy_converter.py), the one infra/contest/install-ops-agent.sh runs.
    """
    text = " ".join((sdk / "lib/googlecloudsdk/generated_clients/apis/monitoring/v3/monitoring_v3_messages.py")
                    .read_text().split())
    assert ('the MonitoredResourceDescriptor for "gce_instance" has labels "project_id", "instance_id" and "zone"'
            in text)
    converter = (sdk / "lib/googlecloudsdk/api_lib/compute/instances/ops_agents/converters"
                 / "ops_agents_policy_to_guest_policy_converter.py").read_text()
    script = (ROOT / "infra" / "contest" / "install-ops-agent.sh").read_text()
    for source in (converter, script):  # the agent gcloud's own policies install, from the same script
        assert "https://dl.google.com/cloudagents/add-google-cloud-ops-agent-repo.sh" in source
        assert re.search(r"add-(google-cloud-ops-agent-)?repo\.sh\"? --also-install", source)

    from datetime import UTC, datetime, timedelta  # noqa: PLC0415

    from google.cloud import monitoring_v3  # noqa: PLC0415

    from simulators.monitoring import MEMORY_METRIC, MonitoringSimulator  # noqa: PLC0415

    sim = MonitoringSimulator()
    kill = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    sim.feed_kill("4242", kill, project="prj", zone="us-central1-a")
    answer = sim._list_time_series(monitoring_v3.ListTimeSeriesRequest(
        name="projects/prj", filter=f'metric.type = "{MEMORY_METRIC}" AND resource.labels.instance_id = "4242"',
        interval={"start_time": kill - timedelta(minutes=5), "end_time": kill}), ServicerContext())
    assert answer.time_series  # type: ignore[attr-defined]
    for series in answer.time_series:  # type: ignore[attr-defined]
        assert series.resource.type == "gce_instance"
        assert dict(series.resource.labels) == {"project_id": "prj", "instance_id": "4242", "zone": "us-central1-a"}
