"""Least privilege for a bigger disk (issue 43): test_iam.py's walk reads Workbench's methods, and resizeDisk is a
REST call beside them (shared/adapters/disk_resize.py)."""

from __future__ import annotations

from tests.infra.test_iam import ROOT, granted_permissions


def test_the_bigger_disk_resize_is_the_workers_and_granted() -> None:
    """resizeDisk (issue 43) is a REST call in shared/adapters/disk_resize.py, not a Workbench method, so the walk
    above does not see it: it needs notebooks.instances.update (REST reference, instances/resizeDisk), its disk
    sizes notebooks.instances.get, its operation notebooks.operations.get; only the worker makes it, slack_app
    never (whether slack_app keeps notebooks.instances.update is the `bigger` ledger's, issue 44)."""
    assert "resize_disk(" in (ROOT / "shared/app/worker/disks.py").read_text()
    granted = granted_permissions()
    assert {"notebooks.instances.update", "notebooks.instances.get", "notebooks.operations.get"} <= granted[
        "restart_worker"]
    slack_app = [p for p in (ROOT / "shared/app/slack").rglob("*.py") if "disk_resize" in p.read_text()]
    assert slack_app == []
