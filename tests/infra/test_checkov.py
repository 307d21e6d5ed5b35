"""checkov over infra/ (the bot and infra/contest): zero failed checks, every skip justified beside it.

checkov lives in its own virtualenv (scripts/checkov.sh creates .venv-checkov once: its `hcl2` module
clashes with python-hcl2). The test is skipped, saying why, only when that virtualenv cannot be created
(no package index reachable); on CI, a machine like this one, it runs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "checkov.sh"


@pytest.mark.timeout(900)
def test_checkov_passes_with_only_justified_skips() -> None:
    setup = subprocess.run([str(SCRIPT), "--setup-only"], capture_output=True, text=True, timeout=840, check=False)
    if setup.returncode != 0:
        pytest.skip(f"the checkov virtualenv could not be created (is PyPI reachable?): {setup.stderr[-500:]}")
    run = subprocess.run([str(SCRIPT), "--output", "json"], capture_output=True, text=True, timeout=300, check=False)
    assert run.stdout.strip(), run.stderr[-2000:]
    report = json.loads(run.stdout)
    reports = report if isinstance(report, list) else [report]
    assert [r["check_type"] for r in reports] == ["terraform"]
    summary = reports[0]["summary"]
    results = reports[0]["results"]
    failed = [
        f"{c['check_id']} {c['resource']} ({c['file_path']}): {c['check_name']}" for c in results["failed_checks"]
    ]
    assert not failed, "checkov failed checks:\n" + "\n".join(failed)
    assert summary["parsing_errors"] == 0, results.get("parsing_errors")
    assert summary["resource_count"] > 40, "checkov saw too few resources: did it read infra/contest too?"
    unjustified = [
        f"{c['check_id']} {c['resource']}"
        for c in results["skipped_checks"]
        if len((c["check_result"].get("suppress_comment") or "").strip()) < 30
    ]
    assert not unjustified, f"each skip needs its reason beside it (#checkov:skip=ID:reason): {unjustified}"
    assert run.returncode == 0
