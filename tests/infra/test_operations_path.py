"""The deploy path as a first-time organizer types it (issue 31): infra/README.md's "Deploy from zero" and then
docs/operations.md, every shell block in order, in one session from the top of a fresh clone.

Each command is checked against what it names: `cd` and `-chdir` land in folders that exist and every block ends
back at the top (the next one is typed from there); `cp` copies a file that exists into a gitignored input;
nothing edits a tracked file in place; every `$VAR` was set by an earlier step; `make` targets exist; Terraform
targets, variables and outputs exist in the module the command runs in, and `-backend-config` keys are the gcs
backend's (the real binary says so where installed); secret names, service accounts, functions and buckets are
the ones infra/*.tf and the earlier steps create; Cloud Build substitutions are the config's; every gcloud
command and flag exists in the installed SDK (skipped with one line where gcloud is absent).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests import gcloud_cli
from tests.infra import hcl

ROOT = hcl.ROOT
PAGES = (ROOT / "infra" / "README.md", ROOT / "docs" / "operations.md")  # the order operations.md gives
_SH_BLOCK = re.compile(r"^ *```sh\n(.*?)^ *```", re.DOTALL | re.MULTILINE)
_VAR = re.compile(r"\$\{?([A-Za-z_]\w*)")
# What the page hands the reader to fill in, and what a shell already has.
GIVEN = {"HOME": "/home/organizer", "PATH": "/usr/bin"}
SAMPLE = {"PROJECT_ID": "my-contest-project", "REGION": "us-central1"}
TERRAFORM = shutil.which("terraform")
# Whether a path is tracked or ignored is git's to say; Cloud Build's upload has no .git and its image no git.
NO_GIT = "no git, or no .git (Cloud Build's upload): tracked and ignored inputs unchecked"
needs_git = pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason=NO_GIT)
GCS_BACKEND_KEYS = {"bucket", "prefix"}  # what the pages pass; the binary test below asks Terraform itself


def shell_blocks(text: str) -> list[str]:
    return [m.group(1) for m in _SH_BLOCK.finditer(text)]


def _lines(block: str) -> Iterator[str]:
    """Logical lines: continuations joined, indentation and comments dropped, for-loops unrolled."""
    lines = [line.strip() for line in re.sub(r"\\\n\s*", " ", block).splitlines()]
    index = 0
    while index < len(lines):
        line = lines[index]
        loop = re.fullmatch(r"for (\w+) in ([^;]+); do", line)
        if loop:
            end = lines.index("done", index)
            for value in loop.group(2).split():
                for body in lines[index + 1 : end]:
                    yield re.sub(rf"\${{?{loop.group(1)}\b}}?", value, body)
            index = end + 1
            continue
        yield line
        index += 1


def _commands(line: str) -> list[list[str]]:
    """The simple commands of a line (split at && || ; |), each as its words; $(...) stands as one word."""
    text = re.sub(r"\$\(([^()]*)\)", lambda m: "SUBST_" + re.sub(r"\W", "_", m.group(1)), line)
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split, lexer.commenters = True, "#"
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in {"&&", "||", ";", "|"}:
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _tracked(path: Path) -> bool:
    return subprocess.run(["git", "ls-files", "--error-unmatch", str(path)], cwd=ROOT, capture_output=True,
                          check=False).returncode == 0


def _ignored(path: Path) -> bool:
    return subprocess.run(["git", "check-ignore", "-q", "--no-index", str(path)], cwd=ROOT, check=False).returncode == 0


def _prefix_default() -> str:
    return hcl.literal(hcl.load_module(hcl.INFRA).variables["name_prefix"]["default"])


def _bot_names(kind: str, attribute: str) -> set[str]:
    """The names infra/ gives resources of a kind, at the default name_prefix (a for_each's keys filled in)."""
    module, prefix = hcl.load_module(hcl.INFRA), _prefix_default()
    names = set()
    for body in module.of_type(kind).values():
        template = hcl.unquote(str(body[attribute])).replace("${var.name_prefix}", prefix)
        keys = re.findall(r'"(\w+)"', str(body.get("for_each", ""))) if "each.key" in template else [""]
        names |= {template.replace('${replace(each.key, "_", "-")}', key.replace("_", "-")) for key in keys}
    return names


def _substitutions(config: Path) -> set[str]:
    return set(yaml.safe_load(config.read_text())["substitutions"])


@dataclass
class Session:
    """One organizer's shell, from the top of a fresh clone."""

    env: dict[str, str] = field(default_factory=lambda: dict(GIVEN))
    cwd: Path = ROOT
    created: set[Path] = field(default_factory=set)
    buckets: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    gcloud_checked: int = 0

    def walk(self, page: Path, text: str | None = None) -> None:
        for number, block in enumerate(shell_blocks(page.read_text() if text is None else text), 1):
            for line in _lines(block):
                for words in _commands(line):
                    self.run(f"{page.name} block {number}: {' '.join(words)[:90]}", words)
            if self.cwd != ROOT:
                self.problems.append(f"{page.name} block {number} ends in {self.cwd.relative_to(ROOT)}, not the "
                                     "top of the checkout the next block is typed from")
                self.cwd = ROOT

    def exists(self, name: str, base: Path | None = None) -> Path | None:
        path = ((base or self.cwd) / self.expand(name)).resolve()
        return path if path.exists() or path in self.created or any(c in path.parents for c in self.created) else None

    def expand(self, word: str) -> str:
        return _VAR.sub(lambda m: self.env.get(m.group(1), m.group(0)).replace("}", "") if m.group(1) in self.env
                        else m.group(0), word).replace("}", "") if "$" in word else word

    def run(self, where: str, words: list[str]) -> None:
        undefined = sorted({v for w in words for v in _VAR.findall(w) if v not in self.env})
        if undefined:
            self.problems.append(f"{where}: ${', $'.join(undefined)} not set by any earlier step")
        while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):  # VAR=value before (or as) the command
            name, value = words.pop(0).split("=", 1)
            self.env[name] = SAMPLE.get(name, self.expand(value))
        if not words:
            return
        handler = getattr(self, f"_{words[0].replace('-', '_')}", None)
        if handler is not None:
            handler(where, [self.expand(w) for w in words[1:]], words)

    # ---- the commands a deployer types ----
    def _export(self, where: str, args: list[str], raw: list[str]) -> None:
        for word in raw[1:]:
            name, _, value = word.partition("=")
            self.env[name] = SAMPLE.get(name, self.expand(value) or "set")

    def _read(self, where: str, args: list[str], raw: list[str]) -> None:
        self.env.update({name: "secret" for name in args if not name.startswith("-")})

    def _cd(self, where: str, args: list[str], raw: list[str]) -> None:
        target = (self.cwd / args[0]).resolve()
        if not target.is_dir():
            self.problems.append(f"{where}: no folder {target} (from {self.cwd})")
            return
        self.cwd = target

    def _cp(self, where: str, args: list[str], raw: list[str]) -> None:
        source, target = args[-2], (self.cwd / args[-1]).resolve()
        if target in self.created and "-n" not in args:
            self.problems.append(f"{where}: copies over {args[-1]}, which an earlier step made and the organizer "
                                 "filled in (cp -n)")
        if self.exists(source) is None:
            self.problems.append(f"{where}: {source} does not exist")
        if not target.parent.is_dir():
            self.problems.append(f"{where}: no folder {target.parent}")
        elif ROOT in target.parents and not _ignored(target):
            self.problems.append(f"{where}: {target.relative_to(ROOT)} is an input with people's addresses: "
                                 "gitignore it, or gcloud builds submit uploads it and git shows it")
        self.created.add(target)

    def _sed(self, where: str, args: list[str], raw: list[str]) -> None:
        files = [a for a in args[1:] if not a.startswith("-") and a not in {">"}]
        for name in files:
            path = (self.cwd / name).resolve()
            if ("-i" in args or any(a.startswith("-i") for a in args)) and _tracked(path):
                self.problems.append(f"{where}: edits the tracked {name} in place (make test, and Cloud Build's "
                                     "test build of this tree, then fail; git status shows a change)")
        if ">" in args:
            self.created.add(Path(args[args.index(">") + 1]))

    def _git(self, where: str, args: list[str], raw: list[str]) -> None:
        if args[:1] == ["add"]:
            for name in args[1:]:
                if _ignored(self.cwd / name):
                    self.problems.append(f"{where}: {name} is gitignored: git add refuses it")

    def _make(self, where: str, args: list[str], raw: list[str]) -> None:
        targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE))
        for word in args:
            if word.startswith("ARGS="):
                flags = shlex.split(word[5:])
                if "--contest" in flags and self.exists(flags[flags.index("--contest") + 1]) is None:
                    self.problems.append(f"{where}: {flags[flags.index('--contest') + 1]} does not exist yet")
            elif "=" not in word and word not in targets:
                self.problems.append(f"{where}: no make target {word}")
            elif word == "package":
                self.created.add(ROOT / "dist")

    def _terraform(self, where: str, args: list[str], raw: list[str]) -> None:
        folder = self.cwd
        while args and args[0].startswith("-chdir="):
            folder = (self.cwd / args.pop(0).split("=", 1)[1]).resolve()
        if not list(folder.glob("*.tf")):
            self.problems.append(f"{where}: no Terraform module in {folder}")
            return
        module = hcl.load_module(folder)
        command, rest = (args[0], args[1:]) if args else ("", [])
        if command == "output":
            names = [a for a in rest if not a.startswith("-")]
            self.problems += [f"{where}: no output {n} in {folder.name}" for n in names if n not in module.outputs]
        for index, word in enumerate(rest):
            flag, _, value = word.partition("=")
            if flag == "-target" and tuple(value.split(".", 1)) not in module.resources:
                self.problems.append(f"{where}: no resource {value} in {folder.name}")
            if flag == "-var":
                value = value or rest[index + 1]
                if value.split("=", 1)[0] not in module.variables:
                    self.problems.append(f"{where}: no variable {value.split('=', 1)[0]} in {folder.name}")
            if flag == "-backend-config" and value.split("=", 1)[0] not in GCS_BACKEND_KEYS:
                self.problems.append(f"{where}: {value.split('=', 1)[0]} is not a gcs backend setting")
        if command == "apply" and not any(w.startswith("-target") for w in rest) and folder == hcl.INFRA \
                and ROOT / "dist" not in self.created:
            self.problems.append(f"{where}: infra/ applied before make package (filemd5 of dist/*.zip fails)")

    def _gcloud(self, where: str, args: list[str], raw: list[str]) -> None:
        words = ["gcloud", *args]
        if gcloud_cli.tree() is not None:
            self.gcloud_checked += 1
            self.problems += [f"{where}: {p}" for p in gcloud_cli.problems(shlex.join(words))]
        text = " ".join(words)
        if words[1:3] == ["secrets", "versions"] and words[3] in {"add", "list"} \
                and words[4] not in _bot_names("google_secret_manager_secret", "secret_id"):
            self.problems.append(f"{where}: no secret {words[4]} in infra/secrets.tf")
        for account in re.findall(r"([a-z][\w-]*)@[\w-]+\.iam\.gserviceaccount\.com", text):
            if account not in _bot_names("google_service_account", "account_id"):
                self.problems.append(f"{where}: no service account {account} in infra/*.tf")
        service = next((w.split("=", 1)[1] for w in words if w.startswith("--service=")), None)
        if words[1:4] == ["run", "services", "update"] or words[1:3] == ["functions", "describe"]:
            service = words[4] if words[1] == "run" else words[3]
        if service and service not in _bot_names("google_cloudfunctions2_function", "name"):
            self.problems.append(f"{where}: no function {service} in infra/functions.tf")
        if words[1:4] == ["storage", "buckets", "create"]:
            self.buckets.add(words[4].removeprefix("gs://"))
        for bucket, path in re.findall(r"gs://([\w.-]+)/?([\w./-]*)", text):
            if words[1:4] != ["storage", "buckets", "create"] and bucket not in self.buckets:
                self.problems.append(f"{where}: gs://{bucket} is no bucket an earlier step created")
            if path.endswith("terraform.tfvars"):
                prefix = yaml.safe_load((ROOT / "cloudbuild-deploy.yaml").read_text())["substitutions"]
                if path != f"{prefix['_TF_STATE_PREFIX']}/terraform.tfvars":
                    self.problems.append(f"{where}: cloudbuild-deploy.yaml reads {prefix['_TF_STATE_PREFIX']}/"
                                         f"terraform.tfvars, not {path}")
        config = next((words[i + 1] for i, w in enumerate(words) if w == "--config"), None)
        if config:
            if not (self.cwd / config).is_file():
                self.problems.append(f"{where}: no build config {config}")
                return
            given = next((w.split("=", 1)[1] for w in words if w.startswith("--substitutions=")), "")
            unknown = {pair.split("=", 1)[0] for pair in given.split(",") if pair} - _substitutions(self.cwd / config)
            if unknown:
                self.problems.append(f"{where}: {config} has no substitution {', '.join(sorted(unknown))}")


def walk_path() -> Session:
    session = Session()
    for page in PAGES:
        session.walk(page)
    return session


@needs_git
def test_the_deploy_path_followed_literally_has_no_step_that_fails() -> None:
    session = walk_path()
    assert session.problems == []
    assert ROOT / "dist" in session.created and session.buckets == {"my-contest-project-tfstate"}


@needs_git
def test_the_gcloud_commands_of_the_path_exist_in_the_installed_sdk() -> None:
    if gcloud_cli.tree() is None:
        pytest.skip(gcloud_cli.SKIP_REASON)
    assert walk_path().gcloud_checked >= 30, "the walk found fewer gcloud commands than the pages have"


@needs_git
def test_the_walk_sees_each_kind_of_broken_step() -> None:
    """A page with one mistake of each kind the walk exists to catch."""
    page = """
```sh
export PROJECT_ID=p REGION=r
sed -i "s#x#y#" manifest.yaml
cp infra/terraform.tfvars.example infra/mine.tfvars
cp -n infra/contest/terraform.tfvars.example infra/contest/terraform.tfvars
cp infra/contest/terraform.tfvars.example infra/contest/terraform.tfvars
terraform -chdir=infra output nothing
make nosuch
gcloud secrets versions add medic-token --data-file=-
gcloud run services update notebook-medic-slak --region=$REGION --update-labels=a=b
gcloud storage cp x "gs://$PROJECT_ID-state/notebook-medic/terraform.tfvars"
gcloud builds submit --config cloudbuild.yaml --substitutions="_COMIT=$COMMIT"
cd infra/contest && terraform destroy
cd infra && terraform apply -target=google_secret_manager_secret.nope -var nosuch=1
```
"""
    session = Session()
    session.created.add(ROOT / "dist")
    session.walk(PAGES[1], page)
    found = "\n".join(session.problems)
    for needle in ("no folder", "ends in infra", "no resource google_secret_manager_secret.nope",
                   "no variable nosuch", "edits the tracked manifest.yaml", "infra/mine.tfvars is an input",
                   "no output nothing", "no make target nosuch", "copies over infra/contest/terraform.tfvars",
                   "no secret medic-token",
                   "no function notebook-medic-slak", "-state is no bucket", "no substitution _COMIT",
                   "$COMMIT not set"):
        assert needle in found, (needle, found)


def test_the_for_loop_and_line_splitting_read_the_page_as_a_shell_does() -> None:
    block = 'for s in a b; do\n  gcloud run services update $s --x\ndone\nA=$(git rev-parse HEAD) && echo "$A" | cat\n'
    assert [words for line in _lines(block) for words in _commands(line)] == [
        ["gcloud", "run", "services", "update", "a", "--x"], ["gcloud", "run", "services", "update", "b", "--x"],
        ["A=SUBST_git_rev_parse_HEAD"], ["echo", "$A"], ["cat"]]


@pytest.mark.parametrize("example, module", [("infra/terraform.tfvars.example", hcl.INFRA),
                                             ("infra/contest/terraform.tfvars.example", hcl.INFRA / "contest")])
def test_every_key_of_a_tfvars_example_is_a_variable_of_its_module(example: str, module: Path) -> None:
    text = (ROOT / example).read_text()
    keys = set(re.findall(r"^#?\s*([a-z_]+)\s*=", text, re.MULTILINE))
    assert keys and keys <= set(hcl.load_module(module).variables), keys - set(hcl.load_module(module).variables)


@pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary on PATH: the backend settings are unchecked")
@pytest.mark.parametrize("module", [hcl.INFRA, hcl.INFRA / "contest"], ids=["infra", "contest"])
def test_terraform_takes_the_backend_settings_the_pages_pass(module: Path, tmp_path: Path) -> None:
    """`terraform init -backend-config=bucket=… -backend-config=prefix=…` on a copy of the module: Terraform 1.11
    reads the settings and stops only at the missing credentials; a key the gcs backend lacks would stop it
    at "Invalid backend configuration argument" first (checked with a wrong key)."""
    # The module's folder whole: its local modules (infra/contest/schedule) are read by init too.
    shutil.copytree(module, tmp_path, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".terraform", ".terraform.lock.hcl", "*.tfstate*", "*.tfvars"))

    def init(*settings: str) -> str:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "none")}
        done = subprocess.run([str(TERRAFORM), "init", "-input=false", "-no-color",
                               *[f"-backend-config={s}" for s in settings]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        return done.stdout + done.stderr

    right = init(*(f"{key}=my-contest-project-tfstate" for key in sorted(GCS_BACKEND_KEYS)))
    assert "Initializing the backend" in right and "Invalid backend configuration" not in right, right
    assert "credentials" in right.lower(), right
    assert "Invalid backend configuration argument" in init("bukket=x")


def test_every_figure_the_deploy_page_quotes_names_where_it_came_from() -> None:
    """infra/README.md too (test_docs checks README, testing, doctor and operations): a measured duration names
    its run, test or date; a figure computed from the configuration says so instead of "about"."""
    from tests.infra.test_docs import unsourced_figures  # noqa: PLC0415 - one rule, kept in test_docs

    assert unsourced_figures((ROOT / "infra" / "README.md").read_text()) == []


def test_every_setting_the_deploy_pages_name_is_a_variable_or_an_argument_of_infra() -> None:
    """`dry_run = true`, `install_guard = false`…: a variable of infra/ or infra/contest (or, where the page
    explains what Terraform does, an argument the .tf files set), so a renamed variable cannot leave a page
    telling organizers to set one that no longer exists. Python in a span (`x = bytearray(…)`) is not one."""
    variables = set(hcl.load_module(hcl.INFRA).variables) | set(hcl.load_module(hcl.INFRA / "contest").variables)
    tf_text = "\n".join(path.read_text() for path in hcl.all_tf_files())
    unknown = set()
    for page in PAGES:
        for name, value in re.findall(r"`([a-z_]+) = ([^`]*)`", page.read_text()):
            if re.search(r"[(\[]", value) or name in variables:
                continue
            if not re.search(rf"^\s*{name}\s*=", tf_text, re.MULTILINE):
                unknown.add(f"{page.name}: {name}")
    assert unknown == set()
