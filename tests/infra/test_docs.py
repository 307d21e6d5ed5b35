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
from pathlib import Path

import pytest
import yaml

from tests import gcloud_cli
from tests.infra import hcl
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
    assert re.search(r"case ScheduleMessage\(\):.*\n\s*return self\._bulk\((partial\()?self\.bulk\.scheduled",
                     dispatch)
    assert "cannot decode" not in section and "`BulkRunner.scheduled`" in section
    assert "tests/integration/test_bulk.py::test_the_schedule_warns_each_owner_then_stops_all" in section


# ---- Terraform's floor (issue 45) ----
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
