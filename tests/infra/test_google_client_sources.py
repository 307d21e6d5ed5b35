"""Rows of docs/fidelity.md settled in issue 29's second pass by Google's own client code shipped with the gcloud SDK
(here its bq CLI, `platform/bq`), run under the SDK's bundled interpreter against the simulators' answers.
Skipped with one line where the SDK is absent.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from simulators.gcp_admin import CloudProject, RestApis
from tests.infra.test_gcloud_sources import sdk_root

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
