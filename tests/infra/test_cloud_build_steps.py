"""Cloud Build's steps as Cloud Build runs them (issue 45): each step of cloudbuild.yaml and cloudbuild-deploy.yaml
runs here in a root filesystem like its builder image, against what `gcloud builds submit` uploads.

- The upload is made by the installed SDK's own code (`googlecloudsdk.api_lib.cloudbuild.snapshot.Snapshot`, the
  tarball `gcloud builds submit` sends): its default .gcloudignore leaves out `.git`, `.gitignore` and every
  gitignored file, so no step can rely on git or on a local virtualenv.
- The image: Debian 12 with Python 3.11 and without git, as `python:3.11-slim` is: the tree the guard's tests boot
  (scripts/debian_rootfs.sh, cached under /var/cache/notebook-medic), on an overlay so nothing reaches the cache,
  entered with chroot at /workspace with Cloud Build's substitutions made, the config's `$$` unescaped.
- Stand-ins, each named where it is made (STAND_INS): what a step downloads (apt-get's `make`, the virtualenvs
  `make test` builds from PyPI, a builder image's gcloud or terraform) is put there from this machine, because a
  test may not download. The test step's pytest is narrowed to the tests that look for the image's tools (git,
  gcloud, terraform...: ENVIRONMENT_TESTS): the whole suite inside the suite would double `make test`.

Skipped with one line where the machine lacks a part (root, the Debian tree, the gcloud SDK's sources).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.guest.container import debian_rootfs
from tests.infra import gcloud_sdk

ROOT = gcloud_sdk.ROOT
WORKSPACE = "/workspace"
# The tests whose outcome hangs on the image's tools: git (tracked and ignored inputs), gcloud, terraform.
ENVIRONMENT_TESTS = ("tests/infra/test_operations_path.py", "tests/infra/test_docs.py",
                     "tests/infra/test_deploy_claims.py", "tests/infra/test_terraform_binary.py")
# Cloud Build's built-in substitutions a step may use (cloud.google.com/build/docs/configuring-builds/
# substitute-variable-values, "Using default substitutions"), with this test's values.
BUILT_INS = {"PROJECT_ID": "my-contest-project", "BUILD_ID": "b-1", "PROJECT_NUMBER": "123456789012",
             "LOCATION": "global"}
COMMIT = "0123456789abcdef0123456789abcdef01234567"
STAND_INS = {
    "apt-get": "installs only `make`, copied from this machine's Debian 12 package (dpkg -L make), offline",
    ".venv": "the virtualenv this test runs in, and the Python it was made from, bind-mounted: make venv's "
             "`pip install --require-hashes -r requirements-dev.lock` from PyPI, already done",
    ".mypy_cache": "the cache make test's typecheck wrote before pytest, copied (mypy answers the same)",
    ".venv-checkov, .venv-jupyter, .venv-dist-check": "this checkout's, bind-mounted where they exist "
                                                     "(make test's scripts build them from PyPI otherwise)",
    "gcloud": "the cloud-sdk image's gcloud: `builds list` answers one build id, `storage cp gs://...` copies "
              "infra/terraform.tfvars.example (the deploy's inputs live in the state bucket)",
}


def _substituted(text: str, values: dict[str, str]) -> str:
    """Cloud Build's substitution: $NAME and ${NAME} of a known name replaced, $$ left as one $."""
    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(2)
        return values.get(name, match.group(0))

    return re.sub(r"\$\$|\$\{(\w+)\}|\$(\w+)", one, text)


def steps(config: str, **given: str) -> list[dict[str, Any]]:
    """The config's steps with its substitutions (defaults, then `given`) and the built-ins made."""
    loaded = yaml.safe_load((ROOT / config).read_text())
    values = {**BUILT_INS, **{k: str(v) for k, v in loaded.get("substitutions", {}).items()}, **given}
    return [yaml.safe_load(_substituted(yaml.safe_dump(step), values)) for step in loaded["steps"]]


def upload(into: Path) -> Path:
    """The tarball `gcloud builds submit` would upload from this checkout, made by the SDK's own code."""
    sdk = gcloud_sdk.sdk_root()
    assert sdk is not None
    archive = into / "source.tgz"
    gcloud_sdk.run_in_sdk(sdk, textwrap.dedent("""
        import os, sys
        from googlecloudsdk.api_lib.cloudbuild import snapshot
        os.chdir(sys.argv[1])
        snapshot.Snapshot(sys.argv[1])._MakeTarball(sys.argv[2]).close()
    """), str(ROOT), str(archive))
    return archive


class Image:
    """A Debian 12 root filesystem on an overlay (in its own mount namespace: gone with the step) with the upload
    at /workspace; `run` runs one step in it as Cloud Build would."""

    def __init__(self, rootfs: Path, work: Path, archive: Path) -> None:
        self.rootfs, self.work, self.archive = rootfs, work, archive
        self.binds: list[tuple[str, str]] = []  # (path here, path in the image), read-only
        self.copies: list[tuple[str, str]] = []  # (file here, path in the image)
        self.files: dict[str, str] = {}  # path in the image -> an executable script
        self.written = work  # the last step's writes (its overlay's upper layer)

    def stand_in(self, path: str, script: str) -> None:
        self.files[path] = "#!/bin/sh\n# a stand-in of tests/infra/test_cloud_build_steps.py\n" + script

    def run(self, step: dict[str, Any], env: dict[str, str] | None = None,
            timeout: float = 900) -> subprocess.CompletedProcess[str]:
        work = self.work / str(len(list(self.work.glob("step-*"))))
        merged = work.with_name(f"step-{work.name}")
        for folder in (work / "upper", work / "work", merged):
            folder.mkdir(parents=True)
        self.written = work / "upper"
        command = [step.get("entrypoint") or "", *[str(a) for a in step.get("args", [])]]
        folder = f"{WORKSPACE}/{step['dir']}" if step.get("dir") else WORKSPACE
        setup = [
            f"mount -t overlay overlay -o lowerdir={self.rootfs},upperdir={work / 'upper'},"
            f"workdir={work / 'work'} {merged}",
            f"mount -t proc proc {merged}/proc", f"mount --rbind /dev {merged}/dev",
            f"mount -t tmpfs tmpfs {merged}/tmp",
            f"mkdir -p {merged}{WORKSPACE} && tar xzf {self.archive} -C {merged}{WORKSPACE}",
        ]
        for here, there in self.binds:
            setup.append(f"mkdir -p {merged}{there} && mount --bind {shlex.quote(here)} {merged}{there} "
                         f"&& mount -o remount,bind,ro {merged}{there}")
        for here, there in self.copies:
            setup.append(f"mkdir -p {merged}{os.path.dirname(there)} && cp -a {here} {merged}{there}")
        for path, text in self.files.items():
            setup.append(f"mkdir -p {merged}{os.path.dirname(path)} && cat > {merged}{path} <<'STAND_IN'\n"
                         f"{text}\nSTAND_IN\nchmod +x {merged}{path}")
        variables = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": "/builder/home",
                     "BUILDER_OUTPUT": "/builder/outputs", **BUILT_INS, **(env or {})}
        setup.append(f"mkdir -p {merged}/builder/home {merged}/builder/outputs && exec chroot {merged} /usr/bin/env -i "
                     + " ".join(shlex.quote(f"{k}={v}") for k, v in variables.items())
                     + f" /bin/sh -c 'cd {folder} && exec \"$@\"' step " + shlex.join(command))
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "/bin/sh", "-ceu", "\n".join(setup)],
                              capture_output=True, text=True, timeout=timeout, check=False)


def _needs_sdk() -> None:
    if gcloud_sdk.sdk_root() is None:
        pytest.skip("no gcloud SDK sources here: what `gcloud builds submit` uploads is its code's to say")


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("not root, or no unshare: no overlay of a Debian 12 tree to run Cloud Build's steps in")
    _needs_sdk()
    rootfs = debian_rootfs()
    if isinstance(rootfs, str):
        pytest.skip(f"no Debian 12 tree to stand in for python:3.11-slim: {rootfs}")
    work = tmp_path_factory.mktemp("cloud-build")
    made = Image(rootfs, work, upload(work))
    listed = subprocess.run(["dpkg", "-L", "make"], capture_output=True, text=True, check=False).stdout.split()
    make = [path for path in listed if path.startswith("/usr/bin/") and Path(path).is_file()]
    if not make:
        pytest.skip("no Debian `make` package on this machine for the apt-get stand-in to install")
    tried = made.run({"entrypoint": "true"}, timeout=120)
    if tried.returncode != 0:  # no overlay or mount namespace for this root (a container without CAP_SYS_ADMIN)
        pytest.skip(f"cannot mount an overlay of the Debian 12 tree here: {tried.stderr.strip()[-160:]}")
    made.copies += [(path, f"/.stand-in/make{path}") for path in make]
    made.stand_in("/usr/local/bin/apt-get", textwrap.dedent("""\
        case "$1" in
          update) exit 0 ;;
          install) for p in "$@"; do case "$p" in install|-*|make) ;;
                     *) echo "apt-get stand-in: only make, not $p" >&2; exit 100 ;; esac; done
                   cp -a /.stand-in/make/. / ;;
          *) echo "apt-get stand-in: $1 is not stood in" >&2; exit 100 ;;
        esac"""))
    return made


def test_the_upload_has_no_git_and_holds_what_the_steps_run(tmp_path: Path) -> None:
    _needs_sdk()
    names = set(subprocess.run(["tar", "tzf", str(upload(tmp_path))], capture_output=True, text=True,
                               check=True).stdout.split())
    assert not [n for n in names if n.split("/")[0] in {".git", ".venv", "dist", ".terraform"}]
    assert {"Makefile", "requirements-dev.lock", "scripts/package.py", "cloudbuild.yaml"} <= names


@pytest.mark.parametrize("config", ["cloudbuild.yaml", "cloudbuild-deploy.yaml"])
def test_the_package_step_builds_every_function_zip(image: Image, config: str) -> None:
    [step] = [s for s in steps(config, _COMMIT=COMMIT) if s["id"] == "package"]
    done = image.run(step)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    functions = {p.name for p in (ROOT / "functions").iterdir() if (p / "main.py").is_file()}
    built = {p.stem for p in (image.written / WORKSPACE.lstrip("/") / "dist").glob("*.zip")}
    assert functions and built == functions


# make test's own lint, typecheck and tests in the image: minutes on a loaded machine (a fresh clone under load 15
# took over pytest's default 120 s); image.run's own bound is 900 s.
@pytest.mark.timeout(900)
def test_the_test_step_passes_without_git(image: Image) -> None:
    """cloudbuild.yaml's test step: apt-get's make, then `make test` (its pytest narrowed to ENVIRONMENT_TESTS,
    on one worker): ruff, mypy and those tests pass where there is no git and no .git."""
    [step] = [s for s in steps("cloudbuild.yaml", _COMMIT=COMMIT) if s["id"] == "test"]
    venv, base = Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()  # where its scripts point
    image.binds += [(str(venv), f"{WORKSPACE}/.venv"), (str(venv), str(venv)), (str(base), str(base))]
    image.binds += [(str((ROOT / name).resolve()), f"{WORKSPACE}/{name}") for name in (".venv-checkov", ".venv-jupyter",
                                                                                ".venv-dist-check")
                    if (ROOT / name).is_dir()]
    if (ROOT / ".mypy_cache").is_dir():  # what make test's typecheck wrote before pytest: mypy's answer is the same
        image.copies.append((str(ROOT / ".mypy_cache"), f"{WORKSPACE}/.mypy_cache"))
    done = image.run(step, env={"TEST_WORKERS": "1", "PYTEST_ADDOPTS": "-rs " + " ".join(ENVIRONMENT_TESTS)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and "SKIPPED" in done.stdout and "no git" in done.stdout, done.stdout[-3000:]


GCLOUD = """\
echo "$*" >> /builder/outputs/gcloud
case "$1 $2" in
  "builds list") echo b-tested-1 ;;
  "storage cp") cp /workspace/infra/terraform.tfvars.example "$4" ;;
  *) echo "gcloud stand-in: $1 $2 is not stood in" >&2; exit 2 ;;
esac"""


@pytest.mark.parametrize("given, said", [
    ({"_COMMIT": COMMIT, "_TF_STATE_BUCKET": "my-contest-project-tfstate"}, "tested by build b-tested-1"),
    ({"_TF_STATE_BUCKET": "my-contest-project-tfstate"}, "set _COMMIT"),
    ({"_COMMIT": COMMIT}, "set _TF_STATE_BUCKET"),
])
def test_the_deploy_builds_first_step_looks_for_the_test_build_of_its_commit(image: Image, given: dict[str, str],
                                                                              said: str) -> None:
    image.stand_in("/usr/local/bin/gcloud", GCLOUD)
    [step] = [s for s in steps("cloudbuild-deploy.yaml", **given) if s["id"] == "tested"]
    done = image.run(step)
    assert said in done.stdout + done.stderr and (done.returncode == 0) == said.startswith("tested"), done
    if done.returncode == 0:
        [call] = (image.written / "builder" / "outputs" / "gcloud").read_text().splitlines()
        assert f'substitutions._COMMIT="{COMMIT}"' in call and 'tags="notebook-medic-test"' in call, call


def test_the_deploy_build_fetches_its_inputs_where_terraform_reads_them(image: Image) -> None:
    """The deploy step (hashicorp/terraform) is not run: its init needs the registry and Google's state bucket
    (tests/infra/test_terraform_binary.py runs what Terraform does offline). Its inputs are where it looks."""
    image.stand_in("/usr/local/bin/gcloud", GCLOUD)
    built = steps("cloudbuild-deploy.yaml", _COMMIT=COMMIT, _TF_STATE_BUCKET="my-contest-project-tfstate")
    [fetch] = [s for s in built if s["id"] == "fetch-tfvars"]
    [deploy] = [s for s in built if s["id"] == "deploy"]
    done = image.run(fetch)
    assert done.returncode == 0, done
    assert (image.written / WORKSPACE.lstrip("/") / deploy["dir"] / "terraform.tfvars").is_file()
    assert "gs://my-contest-project-tfstate/notebook-medic/terraform.tfvars" in (
        image.written / "builder" / "outputs" / "gcloud").read_text()
