"""The README and docs/ say only what is true of the tree they are in: every relative link resolves,
every `make X` they name is a Makefile target, every file and test they name in code exists (code moves),
nothing points outside the repository, and the README
fits a screenful of reading (≤ 12 KB)."""

from __future__ import annotations

import fnmatch
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

from tests import gcloud_cli
from tests.infra import gcloud_sdk, hcl
from tests.infra.test_function_environment import names_config_reads

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
MAKE = re.compile(r"\bmake ([a-z][a-z-]*)\b")
README_MAX_BYTES = 12 * 1024


def _targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE))


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", [*PAGES, ROOT / "infra" / "README.md"], ids=_page_id)
def test_every_relative_link_resolves_inside_the_repository(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, or an anchor on the same page
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists() or ROOT not in (path, *path.parents):
            broken.append(target)
    assert not broken, f"{_page_id(page)}: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_make_command_named_is_a_target(page: Path) -> None:
    named = set(MAKE.findall(page.read_text())) - {"sure"}  # "make sure" is English
    assert named <= _targets(), f"{_page_id(page)} names make {sorted(named - _targets())}"


def test_the_readme_fits_in_12_kb_and_answers_try_test_deploy_first() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= README_MAX_BYTES
    first_screen = " ".join(" ".join(text.splitlines()[:55]).split())
    for needle in ("make demo", "make test", "docs/operations.md", "has not yet run against a live project"):
        assert needle in first_screen, needle


def test_no_page_points_at_the_reference_outside_the_repository() -> None:
    assert not [p for p in PAGES if "shared/reference" in p.read_text()]


def test_the_restart_rules_live_in_docs_policy_and_the_readme_links_there() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "docs/policy.md" in readme
    assert not [knob for knob in ("CRASHLOOP_", "INCIDENT_COOLDOWN", "HEALTH_GRACE", "BACKOFF_") if knob in readme]


def test_every_variable_the_code_reads_is_in_the_configuration_table() -> None:
    table = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", (ROOT / "docs" / "configuration.md").read_text()))
    assert names_config_reads() - table == set()


CODE_PATH = re.compile(
    r"(?<![\w/.-])((?:shared|functions|tests|simulators|infra|tools|demo|bench|scripts)/[\w/.-]*\w)"
    r"(?:::(\w+))?"
)


def _named_paths(text: str) -> list[tuple[str, str]]:
    """Every repository path a page names in code spans (`shared/core/policy.py`, `tests/x.py::test_y`)."""
    spans = re.findall(r"`([^`\n]+)`", text)
    return [(m.group(1), m.group(2) or "") for span in spans for m in CODE_PATH.finditer(span)]


@pytest.mark.parametrize("page", [*PAGES, ROOT / "infra" / "README.md"], ids=_page_id)
def test_every_file_and_test_a_page_names_exists(page: Path) -> None:
    """Code moves; a page that still points at the old place sends the next engineer to nothing."""
    missing = []
    for path, name in _named_paths(page.read_text()):
        target = ROOT / path
        if "*" in path or "<" in path or _made_by_the_reader(path):
            continue
        if not target.exists():
            missing.append(path)
        elif name and target.is_file() and not re.search(rf"\b{re.escape(name)}\b", target.read_text()):
            missing.append(f"{path}::{name}")
    assert not missing, f"{_page_id(page)} names what does not exist: {missing}"


def _made_by_the_reader(path: str) -> bool:
    """An input the steps have the reader make (infra/terraform.tfvars...): .gitignore keeps it out, by name."""
    if not (ROOT / ".gitignore").is_file():
        pytest.skip("no .gitignore (gcloud builds submit leaves it out): which inputs the reader makes is unknown")
    ignored = [line.strip().rstrip("/") for line in (ROOT / ".gitignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    return any(fnmatch.fnmatch(path, pattern) for pattern in ignored)


def test_the_path_check_sees_a_moved_file() -> None:
    named = _named_paths("see `shared/core/policy.py` and `tests/unit/test_policy.py::test_x`, not shared/x.py")
    assert named == [("shared/core/policy.py", ""), ("tests/unit/test_policy.py", "test_x")]


# ---- commands and figures (issue 31): what a first-time deployer types, and where each number comes from ----
DEPLOY_PAGES = [*PAGES, ROOT / "infra" / "README.md"]
_FENCE = re.compile(r"```[a-z]*\n(.*?)```", re.DOTALL)


def gcloud_commands(text: str) -> list[str]:
    """Every gcloud command a page shows: lines of its code blocks (continuations joined) and code spans."""
    found = []
    for block in _FENCE.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            for part in re.split(r"&&|\|\||;|\|", line):
                words = part.strip()
                if words.startswith("gcloud "):
                    found.append(words.split(" #", 1)[0].strip())
    prose = _FENCE.sub("", text)
    found += [span.strip() for span in re.findall(r"`(gcloud [^`\n]+)`", prose)]
    return found


def _usable(command: str) -> str:
    """The command up to what a page leaves to the reader (…, ..., a remark in parentheses)."""
    cut = re.split(r"…|\.\.\.(?!\w)", command, maxsplit=1)[0]
    try:
        shlex.split(cut)
    except ValueError:  # a remark with an apostrophe, after the command
        cut = cut.split(" (", 1)[0]
    return cut


@pytest.mark.parametrize("page", DEPLOY_PAGES, ids=_page_id)
def test_every_gcloud_command_and_flag_a_page_names_exists(page: Path) -> None:
    """Against the installed SDK's own command tree (tests/gcloud_cli.py), so a printed fix cannot fail."""
    if gcloud_cli.tree() is None:
        pytest.skip(gcloud_cli.SKIP_REASON)
    wrong = {command: gcloud_cli.problems(_usable(command)) for command in gcloud_commands(page.read_text())}
    assert {c: p for c, p in wrong.items() if p} == {}, _page_id(page)


def test_the_gcloud_check_sees_a_flag_that_does_not_exist() -> None:
    if gcloud_cli.tree() is None:
        pytest.skip(gcloud_cli.SKIP_REASON)
    text = ("run `gcloud workbench instances update nb --location=Z --remove-labels=a`\n"
            "```sh\ngcloud nosuch thing\n```\n")
    problems = [p for c in gcloud_commands(text) for p in gcloud_cli.problems(_usable(c))]
    assert sorted(problems) == ["gcloud nosuch: not a gcloud command",
                                "gcloud workbench instances update: no flag --remove-labels"]


@pytest.mark.parametrize("page", DEPLOY_PAGES, ids=_page_id)
def test_every_make_target_a_deploy_page_names_exists(page: Path) -> None:
    named = set(MAKE.findall(page.read_text())) - {"sure"}
    assert named <= _targets(), f"{_page_id(page)} names make {sorted(named - _targets())}"


# A measured figure: a duration, with a word that says it was measured. It must name its run: a date, the
# bench's results file, or the test that holds it.
_DURATION = re.compile(r"\b\d+(?:[.,]\d+)?(?:\s*[–-]\s*\d+(?:[.,]\d+)?)?\s?(?:s|ms|seconds|minutes|min)\b")
_MEASURED = re.compile(r"\b(?:takes?|took|measured|about|runs? in|in under)\b", re.IGNORECASE)
_RUN = re.compile(r"\b20\d\d-\d\d-\d\d\b|bench/results|make bench|tests/[\w/]+\.py|checked-facts")


def unsourced_figures(text: str) -> list[str]:
    """Paragraphs that quote a measured duration without naming the run it came from (a table takes the run
    its introducing paragraph names)."""
    paragraphs = re.split(r"\n\s*\n", _FENCE.sub(lambda m: m.group(0).replace("\n\n", "\n"), text))
    found, previous_run = [], False
    for paragraph in paragraphs:
        sourced = bool(_RUN.search(paragraph)) or (paragraph.lstrip().startswith("|") and previous_run)
        if _DURATION.search(paragraph) and _MEASURED.search(paragraph) and not sourced:
            found.append(" ".join(paragraph.split())[:160])
        previous_run = sourced
    return found


@pytest.mark.parametrize("page", [ROOT / "README.md", ROOT / "docs" / "testing.md", ROOT / "docs" / "doctor.md",
                                  ROOT / "docs" / "operations.md"], ids=_page_id)
def test_every_measured_figure_names_its_run(page: Path) -> None:
    assert unsourced_figures(page.read_text()) == [], _page_id(page)


def test_the_figure_check_sees_a_figure_without_its_run() -> None:
    assert unsourced_figures("make unit takes about 20 s.\n\nIt took 3 s (2026-12-01, 5 runs).\n") == [
        "make unit takes about 20 s."]


# ---- the deploy path's claims (issue 45): each held to what it names ----
def _required_versions() -> set[str]:
    found = set()
    for path in hcl.all_tf_files():
        for block in hcl.parse(path).get("terraform", []):
            if "required_version" in block:
                found.add(hcl.literal(block["required_version"]))
    return found


def test_terraforms_oldest_allowed_version_is_the_one_the_checks_run_with() -> None:
    """`contest_end`'s validation refers to `var.contest_start`, which Terraform accepts only from 1.9: a claimed
    "≥ 1.5" failed at the first plan on 1.5–1.8. The floor is the release the offline checks run (only one can be
    installed here: Terraform ships from releases.hashicorp.com, not PyPI, Debian or npm), Cloud Build's deploy
    image is that release, and every page says the same floor."""
    [required] = _required_versions()
    floor = required.removeprefix(">= ")
    deploy = yaml.safe_load((ROOT / "cloudbuild-deploy.yaml").read_text())["substitutions"]
    assert deploy["_TERRAFORM_IMAGE"] == f"hashicorp/terraform:{floor}"
    for page in DEPLOY_PAGES:
        claimed = set(re.findall(r"Terraform ≥ ([\d.]+)", page.read_text()))
        assert claimed <= {floor}, (_page_id(page), claimed)
    if shutil.which("terraform"):
        version = subprocess.run(["terraform", "version", "-json"], capture_output=True, text=True, check=True,
                                 env={"PATH": os.environ["PATH"], "CHECKPOINT_DISABLE": "1",
                                      "TF_CLI_CONFIG_FILE": os.devnull})
        assert json.loads(version.stdout)["terraform_version"] == floor


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


# ---- docs/configuration.md's table, held to config.py (issue 45) ----
def _configuration_rows() -> list[tuple[list[str], str, str]]:
    """(variables, used by, default) of each row of the variables table."""
    rows = []
    for line in (ROOT / "docs" / "configuration.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == 4 and cells[0].startswith("`") and cells[0][1:2].isupper():
            rows.append((re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0]), cells[1], cells[2]))
    return rows


def test_each_row_names_every_function_whose_entry_point_reads_the_setting() -> None:
    """COMPUTE_API_ENDPOINT was said to be on_oom's alone while on_memory_alert's main.py reads it too."""
    mains = {p.parent.name: p.read_text() for p in (ROOT / "functions").glob("*/main.py")}
    missing = []
    for names, used_by, _ in _configuration_rows():
        for name in names:
            readers = {f for f, text in mains.items() if f"SETTINGS.{name.lower()}" in text}
            if used_by != "all" and not readers <= set(re.findall(r"[a-z_]+", used_by)):
                missing.append((name, sorted(readers - set(re.findall(r"[a-z_]+", used_by)))))
    assert missing == []


_LITERAL_DEFAULT = re.compile(r"`?([\w.:/,-]+)`?(?: \(|$)")


def test_every_default_the_table_states_is_the_one_config_py_takes() -> None:
    """Setting a variable to the table's default changes nothing: the same Settings as leaving it unset. A
    default that is not a value (— required, unset, "Slack's", "see below") is not one to compare."""
    from shared.adapters.config import Need, load_settings  # noqa: PLC0415
    from tests.infra.env_samples import SAMPLE_VALUES  # noqa: PLC0415

    compared, differ = 0, []
    for names, _, default in _configuration_rows():
        values = [v.strip() for v in default.split(" / ")]
        if len(values) != len(names):
            continue
        for name, value in zip(names, values, strict=True):
            literal = _LITERAL_DEFAULT.match(value)
            if not literal or value.startswith(("—", "unset", "Slack's", "see below")):
                continue
            base = {k: v for k, v in SAMPLE_VALUES.items() if k != name}
            unset = load_settings(list(Need), base)
            if unset != load_settings(list(Need), {**base, name: literal.group(1)}):
                differ.append((name, literal.group(1)))
            compared += 1
    assert differ == [] and compared >= 30, (differ, compared)


def test_the_health_agents_cadence_is_said_once_with_its_source() -> None:
    """The agent's report cadence was "about every 30 s" on one page and "about once a minute" on another, with no
    source: every page that states it says the simulator's HEALTH_REPORT_SECONDS and names docs/checked-facts.md
    (or its row in docs/fidelity.md), where it is recorded."""
    from simulators.workbench.model import HEALTH_REPORT_SECONDS  # noqa: PLC0415

    cadence = re.compile(r"health agent[^.]*?(?:reports?|report-event-health)[^.]*?(?:about )?(every \d+ s|once a "
                         r"minute|every minute|that often)", re.IGNORECASE)
    wrong = []
    for page in DEPLOY_PAGES:
        for paragraph in re.split(r"\n\s*\n", page.read_text()):
            flat = " ".join(paragraph.split())
            for said in cadence.findall(flat):
                right = said == f"every {HEALTH_REPORT_SECONDS:g} s" or said == "that often"
                sourced = "checked-facts" in flat or page.name in {"checked-facts.md", "fidelity.md"}
                if not (right and sourced):
                    wrong.append((_page_id(page), said, flat[:120]))
    assert wrong == []


def test_the_schedule_section_says_what_the_worker_does_with_a_schedule_message() -> None:
    """At ebbd4a6 infra/README still said the worker could not decode the schedule's messages ("not wired yet"),
    long after dispatch.py routed them: the section now names the routing and the wire test that shows it."""
    section = " ".join((ROOT / "infra" / "README.md").read_text().split("## The contest's schedule", 1)[1]
                       .split("\n## ", 1)[0].split())
    dispatch = (ROOT / "shared" / "app" / "worker" / "dispatch.py").read_text()
    assert re.search(r"kind == fleet_ops\.SCHEDULE_KIND:.*\n\s*return self\._bulk\(self\.bulk\.scheduled", dispatch)
    assert "cannot decode" not in section and "`BulkRunner.scheduled`" in section
    assert "tests/integration/test_bulk.py::test_the_schedule_warns_each_owner_then_stops_all" in section


# ---- every shell command of every page (issue 45): make and its ARGS, terraform's names, paths, variables ----
_SHELL = re.compile(r"^ *```(?:sh|bash|shell)\n(.*?)^ *```", re.DOTALL | re.MULTILINE)
# What a page's shell has besides the functions' settings: the pages' own inputs, and the shell's.
SHELL_VARIABLES = {"PROJECT_ID", "REGION", "ZONE", "COMMIT", "TOKEN", "SECRET", "HOME", "PATH", "PYTHONPATH"}
MADE_BY_TERRAFORM = "/.terraform.lock.hcl"  # `terraform init` or `providers lock` writes it, to be committed
_REPO_PATH = re.compile(r"^(?:\./)?((?:infra|docs|tools|tests|shared|functions|scripts|simulators|demo|bench|dist)"
                        r"/[\w./-]*|[\w.-]+\.(?:yaml|toml|md|lock|txt|csv))$")


def _tool_args() -> dict[str, Any]:
    from tools.doctor.cli import parse_args as doctor_args  # noqa: PLC0415
    from tools.report.cli import parse_args as report_args  # noqa: PLC0415

    return {"doctor": doctor_args, "report": report_args}


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
    chdir = next((w.split("=", 1)[1] for w in words if w.startswith("-chdir=")), "")
    if words[0] == "terraform" and chdir:  # without -chdir, the folder is the prose's to say
        module = hcl.load_module((ROOT / chdir).resolve()) if list((ROOT / chdir).glob("*.tf")) else None
        rest = [w for w in words[1:] if not w.startswith("-chdir=")]
        if module is None:
            return [*problems, f"terraform -chdir={chdir}: no module there"]
        if rest[:1] == ["output"]:
            problems += [f"no output {n} in {chdir}" for n in rest[1:] if not n.startswith("-")
                         and n not in module.outputs]
        for index, word in enumerate(rest):
            if word == "-var" or word.startswith("-var="):
                name = (word[5:] or rest[index + 1]).split("=", 1)[0]
                problems += [] if name in module.variables else [f"no variable {name} in {chdir}"]
            if word.startswith("-target=") and tuple(word[8:].split(".", 1)) not in module.resources:
                problems.append(f"no resource {word[8:]} in {chdir}")
    for word in words[1:]:
        path = _REPO_PATH.match(word.split("=", 1)[-1])
        made = path and (path.group(1).startswith("dist/") or path.group(1).endswith(MADE_BY_TERRAFORM))
        if path and "$" not in word and "<" not in word and not made and not (
                ROOT / path.group(1)).exists() and not _made_by_the_reader(path.group(1)):
            problems.append(f"{path.group(1)}: no such path")
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
            "cat infra/nosuch.tf\n```\nthen `terraform -chdir=infra/contest output nosuch`\n")
    found = "\n".join(p for words in page_commands(text) for p in command_problems(list(words)))
    for needle in ("NOSUCH_SETTING: no setting", "refuses these arguments", "no make target nosuch",
                   "no output nothing in infra", "no variable nosuch", "no resource google_x.y",
                   "infra/nosuch.tf: no such path", "no output nosuch in infra/contest"):
        assert needle in found, (needle, found)
