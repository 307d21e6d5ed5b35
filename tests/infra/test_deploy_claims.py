"""What the deploy docs promise a first-time deployer, held to the code (issue 31): the doctor's gate can be met
with the shipped manifest, every grant a participant gets is in the security model, and docs/operations.md's
Cloud Build path names each step a first deployment gets stuck on, with the command that shows it worked.

And every command of README, docs/ and infra/README (issue 45): what a command is said to print is run where it
runs offline (else the page says "not checked offline"); each make target and its ARGS, each Terraform module,
output, variable and target, each path and each variable a shell block names exists; Terraform's floor is the
release the checks run with; the permissions table, the manifest's URLs and the contest's first apply say what
infra/ does. tests/infra/test_docs.py keeps the pages' links, paths, gcloud commands and configuration table."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.infra import gcloud_sdk, hcl
from tests.infra.test_docs import _FENCE, DEPLOY_PAGES, _made_by_the_reader, _page_id, _targets, _usable
from tests.infra.test_function_environment import names_config_reads
from tests.infra.test_iam import granted_permissions
from tools.doctor.deployment import slack_scopes

ROOT = hcl.ROOT
README = (hcl.INFRA / "README.md").read_text()
OPERATIONS = (ROOT / "docs" / "operations.md").read_text()
SECURITY = (ROOT / "docs" / "security.md").read_text()


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_doctor_gate_can_be_met_with_the_shipped_manifest() -> None:
    """The shipped manifest lacks channels:read, so slack.channel is ⚠ on a real workspace
    (tests/doctor/test_wire.py::test_without_channels_read_membership_is_unverified_not_failed): the gate must
    say so instead of asking for all ✓."""
    assert "channels:read" not in slack_scopes()
    gate = _flat(README)
    assert "Only when it is all ✓" not in gate
    assert "when no line is ✗ and you have read every ⚠: with the shipped `manifest.yaml`, `slack.channel` is ⚠" in gate
    local = (ROOT / "tools" / "doctor" / "local.py").read_text()
    assert '"channels:read")}' in local, "--local adds the scope for the doctor only, as the gate says"


def test_every_grant_a_participant_gets_is_in_the_security_model() -> None:
    contest = hcl.load_module(hcl.INFRA / "contest")
    roles = {hcl.literal(body["role"]) for (kind, _), body in contest.resources.items()
             if kind.endswith("_iam_member") and "owner_email" in str(body.get("member", ""))}
    assert roles == {"roles/notebooks.viewer", "roles/iam.serviceAccountUser"}
    for role in roles:
        assert role in README and role in SECURITY, role
    assert "Manage access to an instance's JupyterLab interface" in README, "why Workbench needs the actAs grant"


def test_the_cloud_build_path_names_every_stuck_point_with_its_check() -> None:
    section = _flat(OPERATIONS.split("## Cloud Build", 1)[1].split("\n## ", 1)[0])
    for needle in (
        "terraform -chdir=infra providers lock -platform=linux_amd64",  # the lock file, made where the registry is
        "git ls-files infra/.terraform.lock.hcl",
        "The first apply is by hand",
        "gcloud iam service-accounts describe notebook-medic-deployer@",
        "iam.serviceAccounts.actAs", "--role=roles/iam.serviceAccountUser",  # who may submit
        "gs://$PROJECT_ID-tfstate/notebook-medic/terraform.tfvars",  # the tfvars' home
        'gcloud builds list --filter="substitutions._COMMIT=$COMMIT"',
        "A secret's new value takes effect only in new instances",
        "gcloud run revisions list",
    ):
        assert needle in section, needle
    deploy = (ROOT / "cloudbuild-deploy.yaml").read_text()
    assert "${_TF_STATE_PREFIX}/terraform.tfvars" in deploy and "_TF_STATE_PREFIX: notebook-medic" in deploy


def test_the_preflight_runs_before_the_contests_apply() -> None:
    order = _flat(OPERATIONS.split("## Deploy in an order that works the first time", 1)[1].split("\n## ", 1)[0])
    assert re.search(r"The contest's notebooks.*--preflight --contest infra/contest/terraform\.tfvars", order)
    for line in ("preflight.slack_members", "preflight.network", "preflight.names", "preflight.apis",
                 "preflight.quotas"):
        assert line in order, line


def _permissions_named(cell: str) -> set[str]:
    """`notebooks.instances.get/list` as the table writes it: each permission it stands for."""
    found = set()
    for token in re.findall(r"`([a-z]+\.[a-zA-Z]+\.[a-zA-Z/]+)`", cell):
        service, resource, verbs = token.split(".", 2)
        if resource == "googleapis":  # an API's name, `compute.googleapis.com`
            continue
        found |= {f"{service}.{resource}.{verb}" for verb in verbs.split("/")}
    return found


def test_the_permissions_table_names_every_grant_of_each_function() -> None:
    """infra/README's table, row by function, against what infra/ grants it: its custom role's permissions
    (locals.tf workbench_permissions, held to the code by test_iam.py), the restart topic and the secrets. Three
    grants were missing at ebbd4a6 (on_memory_alert's role, the worker's instances.list, monitoring reads)."""
    module = hcl.load_module(hcl.INFRA)
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| (.*) \|$", README, re.MULTILINE)}
    publishers = {name.removesuffix("_publishes_restarts")
                  for (kind, name) in module.resources if kind == "google_pubsub_topic_iam_member"
                  and name.endswith("_publishes_restarts")}
    functions = set(granted_permissions())
    secret_readers = {name: {f for f in functions if f in str(body.get("for_each") or body["member"])}
                      for (kind, name), body in module.resources.items()
                      if kind == "google_secret_manager_secret_iam_member"}
    for function, permissions in granted_permissions().items():
        row = rows[function]
        role = "notebookMedic" + function.title().replace("_", "")
        assert f"custom role `{role}`" in row and _permissions_named(row) == permissions, (function, row)
        assert ("restart topic" in row) == (function in publishers), function
        reads = {secret for secret, readers in secret_readers.items() if function in readers}
        said = {"bot_token", "signing_secret"} if "both Slack secrets" in row else (
            {"bot_token"} if "bot-token secret" in row else set())
        assert said == reads, (function, reads)


def _url_keys(node: object, path: str = "") -> list[str]:
    """Where manifest.yaml carries the function's URL, as dotted keys (a list's items unnamed)."""
    if isinstance(node, dict):
        return [k for key, value in node.items() for k in _url_keys(value, f"{path}.{key}".lstrip("."))]
    if isinstance(node, list):
        return [k for value in node for k in _url_keys(value, path)]
    return [path] if isinstance(node, str) and "cloudfunctions.net" in node else []


def test_every_place_the_manifest_carries_the_url_is_named_and_the_events_url_is_verified_after_the_apply() -> None:
    """Three places (the command, interactivity, the Home tab's events), not two: the output's description names
    each, and step 7 sends the deployer back to Event Subscriptions, whose URL Slack can verify only once the
    function exists."""
    keys = _url_keys(yaml.safe_load((ROOT / "manifest.yaml").read_text()))
    assert sorted(keys) == ["features.slash_commands.url", "settings.event_subscriptions.request_url",
                            "settings.interactivity.request_url"]
    described = hcl.literal(hcl.load_module(hcl.INFRA).outputs["slack_request_url"]["description"])
    assert all(key.split(".", 1)[1] in described or key.endswith("slash_commands.url") for key in keys), described
    step7 = _flat(README.split("**7. Deploy.**", 1)[1].split("### Cloud Build", 1)[0])
    assert "three URLs of your manifest copy" in step7 and "Event Subscriptions" in step7
    assert "url_verification" in step7


def test_a_first_contest_apply_that_stops_at_the_schedulers_grant_is_said_with_its_remedy() -> None:
    """Step 8 says what to do when the contest's first apply stops at the grant, names the doctor's line that sees
    it, and that line exists (tools/doctor/pubsub_checks.py) and is in docs/doctor.md."""
    step8 = _flat(README.split("**8. The contest's notebooks**", 1)[1].split("**9. Check it works.**", 1)[0])
    assert "scheduler_publishes_schedule" in step8 and "apply again" in step8 and "`schedule.publisher`" in step8
    checks = (ROOT / "tools" / "doctor" / "pubsub_checks.py").read_text()
    assert '"schedule.publisher"' in checks and "terraform -chdir=infra/contest apply (again" in checks
    assert "| `schedule.publisher` |" in (ROOT / "docs" / "doctor.md").read_text()


# ---- what a command is said to print (issue 45): run where it runs offline, else marked as not checked ----
NOT_CHECKED = "not checked offline"  # the words a page puts beside a claim no test here can run
OFFLINE = {"sed", "grep", "printf", "echo", "cat", "wc", "tr", "head", "sort", "export"}
# A resource as the API lists it, for a gcloud --format claim: Secret Manager's SecretVersion (`name`
# "projects/*/secrets/*/versions/*", with the project number; `state`: the SDK's secretmanager_v1_messages.py).
LISTED = {("secrets", "versions", "list"): lambda secret: [
    {"name": f"projects/123456789012/secrets/{secret}/versions/1", "state": "ENABLED"}]}
SAMPLE_ENV = {"PROJECT_ID": "my-contest-project", "REGION": "us-central1"}


@dataclass(frozen=True)
class Printed:
    page: str
    before: tuple[str, ...]  # the block's lines before it, continuations joined
    line: str
    expected: str | None  # None: the page says it is not checked offline


def printed_claims(page: Path, text: str | None = None) -> list[Printed]:
    """Every shell line whose comment says what it prints: `# 3`, `# prints X`, or a gcloud --format's output."""
    found = []
    for block in _FENCE.findall(page.read_text() if text is None else text):
        lines = [line.strip() for line in re.sub(r"\\\n\s*", " ", block).splitlines()]
        for index, line in enumerate(lines):
            command, _, comment = line.partition(" # ")
            comment = comment.strip()
            claim = re.fullmatch(r"(\d+)|prints (.+)", comment) or (
                command.startswith("gcloud ") and "--format" in command and comment and comment)
            if not claim:
                continue
            expected = None if NOT_CHECKED in comment else (
                comment if isinstance(claim, str) else claim.group(1) or claim.group(2))
            found.append(Printed(_page_id(page), tuple(lines[:index]), command.strip(),
                                 "" if expected == "nothing" else expected))
    return found


def _gcloud_output(command: str) -> str | None:
    """What gcloud prints for a listed resource under the command's --format, by the SDK's own printer."""
    words = shlex.split(command)
    key = tuple(words[1:4])
    sdk = gcloud_sdk.sdk_root()
    if key not in LISTED or sdk is None:
        return None
    form = next(w.split("=", 1)[1] for w in words if w.startswith("--format="))
    code = ("import io, json, sys\nfrom googlecloudsdk.core.resource import resource_printer\n"
            "out = io.StringIO()\nresource_printer.Print(json.loads(sys.argv[1]), sys.argv[2], out=out)\n"
            "print(out.getvalue(), end='')")
    return gcloud_sdk.run_in_sdk(sdk, code, json.dumps(LISTED[key](words[4])), form)  # type: ignore[operator]


def run_printed(claim: Printed, home: Path) -> str | None:
    """What the line prints here, after the block's lines before it; None when it cannot run offline."""
    if claim.line.startswith("gcloud "):
        return _gcloud_output(claim.line)
    lines = [*claim.before, claim.line]
    commands = [part.split()[0] for line in lines for part in re.split(r"&&|\|\||;|\|", line.split(" # ")[0])
                if part.split()]
    if not set(commands) <= OFFLINE:
        return None
    done = subprocess.run(["bash", "-ceu", "\n".join(line.split(" # ")[0] for line in lines)], cwd=ROOT,
                          env={"PATH": os.environ["PATH"], "HOME": str(home), **SAMPLE_ENV},
                          capture_output=True, text=True, timeout=60, check=False)
    return done.stdout


@pytest.mark.parametrize("page", DEPLOY_PAGES, ids=_page_id)
def test_what_each_command_is_said_to_print_is_what_it_prints(page: Path, tmp_path: Path) -> None:
    """`grep -c … # 3`: run here with the pages' sample PROJECT_ID and REGION where every command of its block
    runs offline (the manifest check printed 3 where the page said 2); a gcloud --format claim by the SDK's own
    printer on a resource as the API lists it. Any other claim says "not checked offline", so a reader knows."""
    wrong, unmarked, unchecked = [], [], []
    for claim in printed_claims(page):
        if claim.expected is None:
            continue
        if claim.line.startswith("gcloud ") and gcloud_sdk.sdk_root() is None:
            unchecked.append(claim.line)
            continue
        printed = run_printed(claim, tmp_path)
        if printed is None:
            unmarked.append(claim.line)
        elif printed.split() != claim.expected.split():
            wrong.append((claim.line, claim.expected, printed))
    assert wrong == [] and unmarked == [], (wrong, unmarked)
    if unchecked:
        pytest.skip(f"no gcloud SDK here: {len(unchecked)} --format claim(s) unchecked (its printer says)")


def test_the_printed_check_runs_a_wrong_count_and_sees_it() -> None:
    page = ROOT / "infra" / "README.md"
    text = ("```sh\nsed \"s#x#y#\" manifest.yaml > \"$HOME/m.yaml\"\ngrep -c notebook-medic-slack \"$HOME/m.yaml\""
            "   # 2\ngit status   # prints nothing\ngit log   # prints nothing (" + NOT_CHECKED + ")\n```\n")
    claims = printed_claims(page, text)
    assert [c.expected for c in claims] == ["2", "", None]
    with tempfile.TemporaryDirectory() as home:
        assert run_printed(claims[0], Path(home)) == "3\n"
        assert run_printed(claims[1], Path(home)) is None


@pytest.mark.skipif(shutil.which("terraform") is None, reason="no terraform binary on PATH: its words unchecked")
def test_terraforms_words_for_a_missing_zip_are_the_ones_the_page_quotes(tmp_path: Path) -> None:
    """infra/'s source-object name (functions.tf) and dist_dir (locals.tf) in a module of their own, planned
    without dist/: the installed Terraform's error, word for word as docs/operations.md quotes it."""
    functions = (hcl.INFRA / "functions.tf").read_text()
    [name] = re.findall(r'^\s*name\s*=\s*("\$\{each\.key\}-\$\{filemd5\(.*\)\}\.zip")$', functions, re.MULTILINE)
    [dist] = re.findall(r"^\s*dist_dir\s*=\s*(.+)$", (hcl.INFRA / "locals.tf").read_text(), re.MULTILINE)
    module = tmp_path / "infra"
    module.mkdir()
    (module / "main.tf").write_text(
        f'variable "dist_dir" {{\n  default = ""\n}}\nlocals {{\n  dist_dir = {dist}\n}}\n'
        f'output "object" {{\n  value = {{ for each in [{{ key = "on_oom" }}] : each.key => {name} }}\n}}\n')
    done = subprocess.run(["terraform", f"-chdir={module}", "plan", "-no-color", "-input=false"], text=True,
                          capture_output=True, timeout=120, check=False,
                          env={"PATH": os.environ["PATH"], "CHECKPOINT_DISABLE": "1", "HOME": str(tmp_path),
                               "TF_CLI_CONFIG_FILE": os.devnull, "TF_DATA_DIR": str(tmp_path / ".terraform")})
    said = " ".join((done.stdout + done.stderr).split())
    page = " ".join((ROOT / "docs" / "operations.md").read_text().split())
    [quoted] = re.findall(r"the apply stops at `(Call to function \"filemd5\" failed: [^`]*)`", page)
    assert done.returncode != 0 and quoted.replace("<function>", "on_oom") in said, (quoted, said)


# ---- every shell command of every page (issue 45): make and its ARGS, terraform's names, paths, variables ----
_SHELL = re.compile(r"^ *```(?:sh|bash|shell)\n(.*?)^ *```", re.DOTALL | re.MULTILINE)
# What a page's shell has besides the functions' settings: the pages' own inputs, and the shell's.
SHELL_VARIABLES = {"PROJECT_ID", "REGION", "ZONE", "COMMIT", "TOKEN", "SECRET", "HOME", "PATH", "PYTHONPATH"}
MADE_BY_TERRAFORM = "/.terraform.lock.hcl"  # `terraform init` or `providers lock` writes it, to be committed
_REPO_PATH = re.compile(r"^(?:\./)?((?:infra|docs|tools|tests|shared|functions|scripts|simulators|demo|bench|dist)"
                        r"/[\w./-]*|[\w.-]+\.(?:yaml|toml|md|lock|txt|csv))$")


def _tool_args() -> dict[str, Any]:
    from bench.__main__ import parse_args as bench_args  # noqa: PLC0415
    from tools.doctor.cli import parse_args as doctor_args  # noqa: PLC0415
    from tools.report.cli import parse_args as report_args  # noqa: PLC0415

    def bench(args: list[str]) -> Any:  # with --out, its parser makes no temporary directory
        return bench_args([*args, "--out", str(ROOT / "bench")])

    return {"doctor": doctor_args, "report": report_args, "bench": bench}


def _variables_read() -> set[str]:
    doctor = "\n".join(p.read_text() for p in (ROOT / "tools" / "doctor").glob("*.py"))
    return names_config_reads() | set(re.findall(r'env\.get\("([A-Z][A-Z0-9_]+)"', doctor))


def page_commands(text: str) -> list[list[str]]:
    """The simple commands of a page's shell blocks, and of its code spans that are a make or terraform command."""
    from tests.infra.test_operations_path import _commands, _lines  # noqa: PLC0415 - one reading of a shell line

    found = [words for block in _SHELL.findall(text) for line in _lines(block) for words in _commands(line)]
    for span in re.findall(r"`((?:make|terraform) [^`\n]+)`", _FENCE.sub("", text)):
        try:
            found += _commands(_usable(span))
        except ValueError:  # a span cut by the page's line, its quote closed on the next: the block has it whole
            continue
    return found


def command_problems(words: list[str]) -> list[str]:
    """What is wrong with one command as a page shows it (the names it uses; nothing is run)."""
    problems, read = [], _variables_read()
    while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):
        name = words.pop(0).split("=", 1)[0]
        if name not in read | SHELL_VARIABLES:
            problems.append(f"{name}: no setting of config.py or make doctor, nor a page's input")
    if not words:
        return problems
    if words[0] == "export":
        problems += [f"{w.split('=', 1)[0]}: no setting of config.py or make doctor, nor a page's input"
                     for w in words[1:] if w.split("=", 1)[0] not in read | SHELL_VARIABLES]
    if words[0] == "make":
        for word in words[1:]:
            if word.startswith("ARGS="):
                tool = next((w for w in words[1:] if w in _tool_args()), None)
                args = [SAMPLE_ENV.get(a[1:], "x") if a.startswith("$") else a for a in shlex.split(word[5:])]
                try:
                    _tool_args()[tool or "doctor"](args)
                except SystemExit:
                    problems.append(f"make {tool} {word}: its parser refuses these arguments")
            elif "=" not in word and word not in _targets():
                problems.append(f"no make target {word}")
    if words[0] == "terraform":
        problems += _terraform_problems(words)
    for word in words[1:]:
        path = _REPO_PATH.match(word.split("=", 1)[-1])
        made = path and (path.group(1).startswith("dist/") or path.group(1).endswith(MADE_BY_TERRAFORM))
        if path and "$" not in word and "<" not in word and not made and not (
                ROOT / path.group(1)).exists() and not _made_by_the_reader(path.group(1)):
            problems.append(f"{path.group(1)}: no such path")
    return problems


def _terraform_problems(words: list[str]) -> list[str]:
    """Outputs, variables and targets a terraform command names, in its -chdir module (without -chdir, the folder
    is the prose's to say: in either root module of infra/)."""
    chdir = next((w.split("=", 1)[1] for w in words if w.startswith("-chdir=")), "")
    if chdir and not list((ROOT / chdir).glob("*.tf")):
        return [f"terraform -chdir={chdir}: no module there"]
    modules = [hcl.load_module((ROOT / chdir).resolve())] if chdir else [hcl.load_module(d) for d in hcl.MODULE_DIRS]
    where = chdir or "infra/ or infra/contest"
    rest, problems = [w for w in words[1:] if not w.startswith("-chdir=")], []
    if rest[:1] == ["output"]:
        problems += [f"no output {n} in {where}" for n in rest[1:] if not n.startswith("-")
                     and not any(n in m.outputs for m in modules)]
    for index, word in enumerate(rest):
        if word == "-var" or word.startswith("-var="):
            name = (word[5:] or rest[index + 1]).split("=", 1)[0]
            problems += [] if any(name in m.variables for m in modules) else [f"no variable {name} in {where}"]
        if word.startswith("-target=") and not any(tuple(word[8:].split(".", 1)) in m.resources for m in modules):
            problems.append(f"no resource {word[8:]} in {where}")
    return problems


@pytest.mark.parametrize("page", DEPLOY_PAGES, ids=_page_id)
def test_every_shell_command_names_what_exists(page: Path) -> None:
    """Each make target and its ARGS (the tool's own parser takes them), each Terraform module, output, variable
    and target, each path of the checkout and each variable a block sets (one config.py or make doctor reads, or
    a page's own input) — in every shell block and make/terraform code span of README, docs/ and infra/README."""
    wrong = {" ".join(words)[:100]: p for words in page_commands(page.read_text())
             if (p := command_problems(list(words)))}
    assert wrong == {}, _page_id(page)


def test_the_shell_check_sees_each_kind_of_wrong_name() -> None:
    text = ("```sh\nexport NOSUCH_SETTING=1 WORKBENCH_ZONES=z\nmake doctor ARGS=\"--nosuch\"\nmake nosuch\n"
            "terraform -chdir=infra output nothing\nterraform -chdir=infra apply -var nosuch=1 -target=google_x.y\n"
            "cat infra/nosuch.tf\n```\nthen `terraform -chdir=infra/contest output nosuch`, `terraform output gone`\n")
    found = "\n".join(p for words in page_commands(text) for p in command_problems(list(words)))
    for needle in ("NOSUCH_SETTING: no setting", "refuses these arguments", "no make target nosuch",
                   "no output nothing in infra", "no variable nosuch", "no resource google_x.y",
                   "infra/nosuch.tf: no such path", "no output nosuch in infra/contest",
                   "no output gone in infra/ or infra/contest"):
        assert needle in found, (needle, found)
