"""Rows of docs/fidelity.md settled in issue 29's second pass by Google's own client code shipped with the gcloud SDK
(its bq CLI, `platform/bq`; `gcloud workbench instances create`), run under the SDK's bundled interpreter.
Skipped with one line where the SDK is absent.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from simulators.gcp_admin import CloudProject, RestApis
from simulators.pubsub import ACK_STATUSES
from simulators.pubsub_emulator import emulator_launcher
from tests.infra.gcloud_sdk import run_in_sdk, sdk_root

pytestmark = pytest.mark.wire  # the BigQuery stand-in answers over a loopback socket

BQ_RAISE = (
    "import json, sys\n"
    "from clients import utils\n"
    "try:\n"
    "    utils.RaiseError(json.loads(sys.argv[1]))\n"
    "except Exception as err:\n"
    "    print(type(err).__name__)\n"
)


@pytest.fixture(scope="module")
def bq_cli() -> Path:
    root = sdk_root()
    if root is None or not (root / "platform" / "bq" / "clients" / "utils.py").is_file():
        pytest.skip("no gcloud SDK with its bq CLI's sources here: how bq reads BigQuery's errors is unchecked")
    return root


def bq_error_class(sdk: Path, body: dict[str, object]) -> str:
    """The error class Google's bq CLI raises for a failed call's JSON body (clients/utils.py `RaiseError`)."""
    bundled = sdk / "platform" / "bundledpythonunix" / "bin" / "python3"
    bq = sdk / "platform" / "bq"
    env = {"PYTHONPATH": f"{bq}:{bq / 'third_party'}", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([str(bundled) if bundled.exists() else "python3", "-c", BQ_RAISE, json.dumps(body)],
                            capture_output=True, text=True, timeout=60, env=env, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture
def bigquery() -> Iterator[RestApis]:
    project = CloudProject("contest-prj")
    project.datasets["contest"] = []
    apis = RestApis(project).start()
    yield apis
    apis.stop()


def answer(apis: RestApis, path: str) -> tuple[int, dict[str, object]]:
    got = requests.get(apis.url + path, timeout=60)
    return got.status_code, got.json()


@pytest.mark.parametrize("path", [
    "/bigquery/v2/projects/contest-prj/datasets/missing",
    "/bigquery/v2/projects/other-prj/datasets/contest",
])
def test_an_unknown_dataset_is_not_found_to_googles_own_bq_cli(bq_cli: Path, bigquery: RestApis, path: str) -> None:
    """bq takes a 404 for "not found" only by `error.errors[0].reason` = `notFound`; the text is the server's."""
    status, body = answer(bigquery, path)
    assert status == 404
    assert bq_error_class(bq_cli, body) == "BigqueryNotFoundError"


def test_a_body_without_the_reason_is_malformed_to_bq(bq_cli: Path) -> None:
    """What the stand-in answered before: bq calls it malformed, so the reason is what a client reads."""
    bare = {"error": {"code": 404, "message": "Not found: Dataset p:d", "status": "NOT_FOUND"}}
    assert bq_error_class(bq_cli, bare) == "BigqueryInterfaceError"


def test_a_known_dataset_is_answered(bigquery: RestApis) -> None:
    status, body = answer(bigquery, "/bigquery/v2/projects/contest-prj/datasets/contest")
    assert status == 200 and body["id"] == "contest-prj:contest"


WORKBENCH_CREATE = (
    "import json, sys\n"
    "from apitools.base.py import encoding\n"
    "from googlecloudsdk.api_lib.workbench import instances, util\n"
    "given = json.loads(sys.argv[1])\n"
    "class Args:\n"
    "    def __init__(self, values): self.__dict__.update(values)\n"
    "    def IsSpecified(self, name): return name in given\n"
    "    def __getattr__(self, name): return None\n"
    "print(json.dumps(encoding.MessageToDict(instances.CreateInstance(Args(given), util.GetMessages()))))\n"
)


def test_gcloud_sends_the_owner_and_the_container_as_fields_never_as_metadata() -> None:
    """`gcloud workbench instances create --instance-owners --container-repository --container-tag` (api_lib/workbench/
    instances.py `CreateInstance`, `GetInstanceOwnersFromArgs`, `CreateContainerImageFromArgs`) sends `instanceOwners`
    and `gceSetup.containerImage` and no metadata: `proxy-mode`, `proxy-user-mail` and `container`, which the bot and
    the guard read, are written by Workbench itself (a real answer: gcpdiag's test data, docs/fidelity.md)."""
    root = sdk_root()
    if root is None:
        pytest.skip("no gcloud SDK with its sources here: what gcloud's workbench create sends is unchecked")
    given = {"instance_owners": "alice@example.com", "container_repository": "gcr.io/contest/image",
             "container_tag": "1"}
    request = json.loads(run_in_sdk(root, WORKBENCH_CREATE, json.dumps(given)))
    assert request == {"instanceOwners": ["alice@example.com"],
                       "gceSetup": {"containerImage": {"repository": "gcr.io/contest/image", "tag": "1"}}}


# ---- Google's Pub/Sub emulator: its package has no documentation, so its own code says what it does ----------------
PUSHER = "com/google/cloud/pubsub/testing/v1/HttpEndpointPusher.class"


def emulator_pusher_bytecode(tmp_path: Path) -> str:
    """`javap -c -p` of the emulator's push client, from the jar beside its launcher."""
    launcher = emulator_launcher()
    javap = shutil.which("javap")
    jars = sorted(launcher.parents[1].glob("lib/cloud-pubsub-emulator-*.jar")) if launcher else []
    if not jars or javap is None:
        pytest.skip("no Pub/Sub emulator jar or no javap here: the emulator's push code is unread")
    with zipfile.ZipFile(jars[-1]) as jar:
        jar.extract(PUSHER, tmp_path)
    return subprocess.run([javap, "-c", "-p", str(tmp_path / PUSHER)], capture_output=True, text=True, timeout=60,
                          check=True).stdout


def test_the_emulators_push_acknowledges_203_not_202_and_its_body_has_no_ordering_key(tmp_path: Path) -> None:
    """HttpEndpointPusher: ACK_RESPONSE_CODES is {102, 200, 201, 203, 204} (Pub/Sub's push docs list 202, not 203:
    simulators/pubsub/model.py ACK_STATUSES follows the docs); toJsonStringForPush writes attributes, data, messageId,
    publishTime and subscription, and the ordering key only as the x-goog-ordering-key header of a push without
    the wrapper. docs/fidelity.md, "Issue 29: Pub/Sub"."""
    code = emulator_pusher_bytecode(tmp_path)
    static = code[code.index("static {};"):]
    codes = {int(n) for n in re.findall(r"(?:bipush|sipush)\s+(\d+)", static)}
    assert codes == {102, 200, 201, 203, 204}
    assert codes - ACK_STATUSES == {203} and ACK_STATUSES - codes == {202}
    body = code[code.index("toJsonStringForPush(com"):code.index("toPublishTimeString(com")]
    assert all(f"String {key}\n" in body for key in ("attributes", "data", "messageId", "publishTime", "subscription"))
    assert "orderingKey" not in body and "deliveryAttempt" not in body and "ordering_key" not in body
    assert "String x-goog-ordering-key" in code
