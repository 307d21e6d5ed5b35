"""What the bot's code needs of each API, read from the code itself (the adapters' client calls reached from each
function's main.py), for tests/infra/test_iam.py to hold the Terraform roles to."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from tests.infra import hcl

ROOT = hcl.ROOT


# NotebookServiceClient method -> the IAM permission the API checks (Workbench REST reference, v2).
CLIENT_PERMISSIONS = {
    "get_instance": "notebooks.instances.get",
    "list_instances": "notebooks.instances.list",
    "reset_instance": "notebooks.instances.reset",
    "start_instance": "notebooks.instances.start",
    "stop_instance": "notebooks.instances.stop",
    "update_instance": "notebooks.instances.update",
    "create_instance": "notebooks.instances.create",
    "delete_instance": "notebooks.instances.delete",
    "get_operation": "notebooks.operations.get",  # polling a long-running operation (Operation.result())
    "list_operations": "notebooks.operations.list",  # after a crash: did the reset reach the API?
}



def notebook_client_methods() -> set[str]:
    from google.cloud import notebooks_v2  # noqa: PLC0415 - heavy; only this test needs it

    return {name for name in dir(notebooks_v2.NotebookServiceClient) if not name.startswith("_")}


@cache
def adapter_calls() -> dict[str, set[str]]:
    """Workbench adapter method -> NotebookServiceClient methods it can end up calling."""
    tree = ast.parse((ROOT / "shared" / "adapters" / "workbench.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Workbench")
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
    client_methods = notebook_client_methods()
    direct: dict[str, set[str]] = {}
    internal: dict[str, set[str]] = {}
    for name, fn in methods.items():
        direct[name], internal[name] = set(), set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in client_methods:
                direct[name].add(node.value)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                target = node.func
                if isinstance(target.value, ast.Name) and target.value.id == "self" and target.attr in methods:
                    internal[name].add(target.attr)
                if target.attr in client_methods:  # client.list_operations(...) called by name
                    direct[name].add(target.attr)
                if target.attr in ("result", "done"):  # Operation.result() and .done() poll GetOperation
                    direct[name].add("get_operation")

    def closure(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        calls = set(direct[name])
        for callee in internal[name] - seen - {name}:
            calls |= closure(callee, seen | {name})
        return calls

    return {name: closure(name) for name in methods if not name.startswith("_")}


def import_closure(main: Path) -> list[Path]:
    seen: dict[Path, None] = {}
    pending = [main]
    while pending:
        path = pending.pop()
        if path in seen or not path.is_file():
            continue
        seen[path] = None
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "shared":
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names if alias.name.split(".")[0] == "shared"]
            for name in names:  # a module, or a package (its __init__ imports the rest)
                base = ROOT / name.replace(".", "/")
                pending += [base.with_suffix(".py"), base / "__init__.py"]
    return list(seen)


def reached_adapter_methods(function: str) -> tuple[set[str], bool]:
    """Adapter methods called on a Workbench object by the function's code; and whether it builds one."""
    public = set(adapter_calls())
    called: set[str] = set()
    builds = False
    for path in import_closure(ROOT / "functions" / function / "main.py"):
        if path.name == "workbench.py" and path.parent.name == "adapters":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Workbench":
                builds = True
            # Any reference counts, called at once or handed on (pool.submit(self.workbench.list, ...)).
            if (
                isinstance(node, ast.Attribute)
                and node.attr in public
                and "workbench" in ast.unparse(node.value).lower()
            ):
                called.add(node.attr)
    return called, builds


def needed_permissions(function: str) -> set[str]:
    methods, builds = reached_adapter_methods(function)
    assert methods or not builds, f"{function} builds a Workbench but no call on it was recognised"
    client_calls = set().union(*(adapter_calls()[m] for m in methods)) if methods else set()
    unknown = client_calls - set(CLIENT_PERMISSIONS)
    assert not unknown, f"add the IAM permission of {sorted(unknown)} to CLIENT_PERMISSIONS"
    return {CLIENT_PERMISSIONS[call] for call in client_calls} | compute_permissions(function) | (
        monitoring_permissions(function))


# google-cloud-compute InstancesClient method -> the IAM permission the API checks (Compute REST reference).
COMPUTE_CLIENT_PERMISSIONS = {"list": "compute.instances.list", "get": "compute.instances.get", "aggregated_list":
                              "compute.instances.list", "get_guest_attributes": "compute.instances.getGuestAttributes"}


def compute_adapter_calls() -> dict[str, set[str]]:
    """Compute's public methods -> the InstancesClient methods each calls, itself or through self._helpers."""
    [cls] = [n for n in ast.parse((ROOT / "shared" / "adapters" / "compute.py").read_text()).body
             if isinstance(n, ast.ClassDef) and n.name == "Compute"]
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}

    def calls(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        found: set[str] = set()
        for node in ast.walk(methods[name]):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(
                    owner := node.func.value, ast.Name):
                if owner.id == "client":
                    found.add(node.func.attr)
                elif owner.id == "self" and node.func.attr in methods and node.func.attr not in seen:
                    found |= calls(node.func.attr, seen | {name})
        return found

    return {name: calls(name) for name in methods if not name.startswith("_") and name != "client"}


def compute_permissions(function: str) -> set[str]:
    """The permissions of the Compute methods the function's code names (called or handed on), if it builds one."""
    trees = [ast.parse(path.read_text()) for path in import_closure(ROOT / "functions" / function / "main.py")
             if not (path.name == "compute.py" and path.parent.name == "adapters")]
    if not any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Compute"
               for tree in trees for node in ast.walk(tree)):
        return set()
    adapter = compute_adapter_calls()
    used = {node.attr for tree in trees for node in ast.walk(tree) if getattr(node, "attr", None) in adapter}
    assert used, f"{function} builds a Compute but no call on it was recognised"
    calls = set().union(*(adapter[m] for m in used))
    assert calls <= set(COMPUTE_CLIENT_PERMISSIONS), f"add the permission of {sorted(calls)}"
    return {COMPUTE_CLIENT_PERMISSIONS[call] for call in calls}


# google-cloud-monitoring MetricServiceClient method -> the IAM permission the API checks (Monitoring access
# control reference: projects.timeSeries.list needs monitoring.timeSeries.list).
MONITORING_CLIENT_PERMISSIONS = {"list_time_series": "monitoring.timeSeries.list"}


def monitoring_permissions(function: str) -> set[str]:
    """The permissions of the MetricServiceClient calls in shared/adapters/memory_series.py, when the function's
    code builds a MemorySeries (the memory picture: restart_worker only)."""
    builds = any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "MemorySeries"
        for path in import_closure(ROOT / "functions" / function / "main.py")
        for node in ast.walk(ast.parse(path.read_text()))
    )
    if not builds:
        return set()
    source = (ROOT / "shared" / "adapters" / "memory_series.py").read_text()
    calls = {node.func.attr for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr in MONITORING_CLIENT_PERMISSIONS}
    assert calls, "shared/adapters/memory_series.py calls no MetricServiceClient method that this test recognises"
    return {MONITORING_CLIENT_PERMISSIONS[call] for call in calls}
