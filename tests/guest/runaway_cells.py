"""The cells a contest notebook runs out of memory with, and cells that fit, for the memory watcher on the real
kernel (issue 40): numpy, pandas, scikit-learn and joblib as .venv-jupyter pins them, and pure Python.

One catalogue for tests/guest/test_watcher_refusal.py (a short subset, in make test) and bench/watcher.py (all of
it, make bench --only watcher). A runaway cell asks for `factor` times the Jupyter unit's limit, at two factors: just
past it (1.5) and far past it (8); a cell growing without end is at two step sizes instead. A fitting cell must run
to its end, neither refused nor interrupted. The cells are code as a participant types it, run in a real kernel;
files they read are made by prepare() (sparse where only their size matters: no disk written for them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MB = 1_000_000
FACTORS = {"1.5x": 1.5, "8x": 8.0}
# Imported once per kernel before its trials (a participant's notebook starts with them).
IMPORTS = "import numpy as np\nimport pandas as pd\nimport joblib\nimport sklearn\n"


@dataclass(frozen=True)
class Cell:
    """One cell of the catalogue: its name (template[size]) and its code."""

    name: str
    code: str


@dataclass(frozen=True)
class Files:
    """Files the cells read, by prepare(): per factor a sparse raw file and .npy of that many bytes, a .npy that
    fits (read through mmap) and a CSV."""

    data: Path
    limit: int

    def raw(self, label: str) -> Path:
        return self.data / f"too-big-{label}.bin"

    def npy(self, label: str) -> Path:
        return self.data / f"too-big-{label}.npy"

    @property
    def fitting_npy(self) -> Path:
        return self.data / "fits.npy"

    @property
    def csv(self) -> Path:
        return self.data / "rows.csv"


def npy_header(count: int) -> bytes:
    """A .npy (format 1.0) header for `count` float64s, written without numpy (numpy/lib/format.py's layout)."""
    body = f"{{'descr': '<f8', 'fortran_order': False, 'shape': ({count},), }}"
    pad = 64 - (10 + len(body) + 1) % 64
    text = (body + " " * pad + "\n").encode("latin1")
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text


def sparse(path: Path, size: int, header: bytes = b"") -> None:
    with path.open("wb") as out:
        out.write(header)
        out.truncate(len(header) + size)


def prepare(data: Path, limit: int) -> Files:
    """The files, made once per run (sparse ones take no disk; the CSV is 50 MB)."""
    data.mkdir(parents=True, exist_ok=True)
    files = Files(data, limit)
    for label, factor in FACTORS.items():
        size = int(factor * limit) // 8 * 8
        sparse(files.raw(label), size)
        sparse(files.npy(label), size, npy_header(size // 8))
    fits = int(0.4 * limit) // 8 * 8
    sparse(files.fitting_npy, fits, npy_header(fits // 8))
    row = b"12345,0.6789,some_text_value,2026-12-01T13:00:00,42\n"
    with files.csv.open("wb") as out:
        out.write(b"a,b,c,d,e\n")
        for _ in range(50):
            out.write(row * (MB // len(row)))
    return files


def _side(n: int, per_cell: int) -> int:
    """The side of a square result of n bytes, `per_cell` bytes per element."""
    return math.isqrt(n // per_cell) + 1


Template = Callable[[int, str, Files], str]

RUNAWAY: dict[str, Template] = {
    # big arrays
    "np.ones": lambda n, _, f: f"a = np.ones({n // 8})",
    "np.ones 2-D": lambda n, _, f: f"a = np.ones(({_side(n, 8)}, {_side(n, 8)}))",
    "np.zeros then filled": lambda n, _, f: f"a = np.zeros({n // 8})\na[:] = 1.0",
    "np.random": lambda n, _, f: f"a = np.random.default_rng(0).random({n // 8})",
    "np.empty then written": lambda n, _, f: f"a = np.empty({n // 8})\na.fill(2.0)",
    "np.arange": lambda n, _, f: f"a = np.arange({n // 8}, dtype=np.float64)",
    "np.outer": lambda n, _, f: f"x = np.ones({_side(n, 8)})\no = np.outer(x, x)",
    "np.repeat": lambda n, _, f: f"r = np.repeat(np.ones(1 << 20), {n // (8 << 20) + 1})",
    "np.tile": lambda n, _, f: f"t = np.tile(np.ones((1024, 128)), ({n // (1 << 20) + 1}, 1))",
    "np.meshgrid": lambda n, _, f: f"xx, yy = np.meshgrid(np.arange({_side(n, 16)}), np.arange({_side(n, 16)}))",
    "np.random.normal 2-D": lambda n, _, f: (f"w = np.random.default_rng(1).normal(size=({_side(n, 8)}, "
                                             f"{_side(n, 8)}))"),
    # copies and the doubling pattern
    "copies of an array": lambda n, _, f: ("base = np.ones(12_500_000)\ncopies = []\n"
                                           f"for _ in range({n // (100 * MB) + 1}):\n    copies.append(base.copy())"),
    "frame arithmetic kept": lambda n, _, f: ("df = pd.DataFrame({'a': np.ones(10_000_000)})\nframes = []\n"
                                              f"for i in range({n // (80 * MB) + 1}):\n    frames.append(df * i)"),
    "np doubling": lambda n, _, f: "a = np.ones(1 << 20)\nwhile True:\n    a = np.concatenate([a, a])",
    # pandas: joins that explode, concat, groupby/apply, astype, reshapes
    "merge on a skewed key": lambda n, _, f: (f"df = pd.DataFrame({{'k': np.zeros({_side(n, 24)}, dtype=np.int64), "
                                              f"'v': np.arange({_side(n, 24)})}})\nm = df.merge(df, on='k')"),
    "join on a repeated index": lambda n, _, f: (f"left = pd.DataFrame({{'v': np.arange({_side(n, 24)})}}, "
                                                 f"index=np.zeros({_side(n, 24)}, dtype=np.int64))\n"
                                                 "j = left.join(left, lsuffix='_l', rsuffix='_r')"),
    "cross merge": lambda n, _, f: (f"small = pd.DataFrame({{'a': np.arange({_side(n, 16)})}})\n"
                                    "c = small.merge(small, how='cross')"),
    "concat of every fold": lambda n, _, f: ("fold = pd.DataFrame(np.ones((1_000_000, 10)), copy=False)\n"
                                             f"everything = pd.concat([fold] * {n // (80 * MB) + 1})"),
    "groupby apply that grows": lambda n, _, f: (
        "df = pd.DataFrame({'g': np.arange(1_000_000) % 100, 'v': np.ones(1_000_000)})\n"
        f"out = df.groupby('g').apply(lambda g: pd.concat([g] * {n // (16 * MB) + 1}))"),
    "astype of a large frame": lambda n, label, f: (
        f"df = pd.DataFrame(np.zeros(({int(min(n / 64, 0.05 * f.limit))}, 8), dtype=np.int8), copy=False)\n"
        f"wide = df.astype({'np.float64' if label == '1.5x' else 'np.complex128'})"),
    "get_dummies of many codes": lambda n, _, f: (f"codes = pd.Series(np.arange(1_000_000) % {n // (8 * MB) + 1})\n"
                                                  "d = pd.get_dummies(codes, dtype=float)"),
    "pivot to a square": lambda n, _, f: (f"df = pd.DataFrame({{'r': np.arange({_side(n, 8)}), "
                                          f"'c': np.arange({_side(n, 8)}), 'v': 1.0}})\n"
                                          "p = df.pivot(index='r', columns='c', values='v')"),
    # a file too big for memory
    "np.fromfile too big": lambda n, label, f: f"a = np.fromfile({str(f.raw(label))!r}, dtype=np.float64)",
    "np.load too big": lambda n, label, f: f"a = np.load({str(f.npy(label))!r})",
    "open().read() too big": lambda n, label, f: f"with open({str(f.raw(label))!r}, 'rb') as source:\n"
                                                 "    data = source.read()",
    # scikit-learn and joblib workers
    "pairwise_distances n_jobs=2": lambda n, _, f: ("from sklearn.metrics import pairwise_distances\n"
                                                    f"X = np.random.default_rng(0).random(({_side(n, 8)}, 8))\n"
                                                    "D = pairwise_distances(X, n_jobs=2)"),
    "OneHotEncoder dense": lambda n, _, f: ("from sklearn.preprocessing import OneHotEncoder\n"
                                            f"ids = (np.arange(1_000_000) % {n // (8 * MB) + 1}).reshape(-1, 1)\n"
                                            "oh = OneHotEncoder(sparse_output=False).fit_transform(ids)"),
    "PolynomialFeatures": lambda n, _, f: ("from sklearn.preprocessing import PolynomialFeatures\n"
                                           f"X = np.ones(({n // (1891 * 8) + 1}, 60))\n"
                                           "P = PolynomialFeatures(degree=2).fit_transform(X)"),
    "joblib loky workers": lambda n, _, f: ("from joblib import Parallel, delayed\n"
                                            f"parts = Parallel(n_jobs=2)(delayed(np.ones)({n // 16}) "
                                            "for _ in range(2))"),
    # pure Python
    "list of blocks": lambda n, label, f: ("blocks = []\nwhile True:\n"
                                           f"    blocks.append(bytearray({50 * MB if label == '1.5x' else 200 * MB}))"),
    "list of floats": lambda n, label, f: ("xs = []\nwhile True:\n" + (
        "    xs.append(float(len(xs)))" if label == "1.5x" else "    xs.extend([float(len(xs))] * 1_000_000)")),
    "dict of values": lambda n, label, f: ("d = {}\nwhile True:\n"
                                           f"    d[len(d)] = bytes({1000 if label == '1.5x' else 100_000})"),
    "bytes doubling": lambda n, _, f: "b = b'x' * (1 << 20)\nwhile True:\n    b = b + b",
    "str join": lambda n, _, f: f"s = ''.join(['x' * 1000] * {n // 1000 + 1})",
}


def runaway(files: Files) -> list[Cell]:
    """Every runaway template at both factors of the unit's limit."""
    return [Cell(f"{name} [{label}]", template(int(factor * files.limit), label, files))
            for name, template in RUNAWAY.items() for label, factor in FACTORS.items()]


def left_function(cgroup: Path, version: int, threshold: float = 0.93) -> str:
    """Code defining left(): what the notebook has left, as the watcher counts it (memory_watcher.memory_left: the
    line less usage, the clean page cache that is not mapped counted free)."""
    usage, prefix = ("memory.usage_in_bytes", "total_") if version == 1 else ("memory.current", "")
    keys = (["active_file", "inactive_file", "dirty", "writeback", "mapped_file"] if version == 1 else
            ["active_file", "inactive_file", "file_dirty", "file_writeback", "file_mapped"])
    limit = ("stat['hierarchical_memory_limit']" if version == 1 else
             f"int(open({str(cgroup / 'memory.max')!r}).read())")
    return ("def left():\n    stat = {}\n"
            f"    for line in open({str(cgroup / 'memory.stat')!r}).read().splitlines():\n"
            "        key, _, value = line.partition(' ')\n        stat[key] = int(value)\n"
            f"    active, inactive, dirty, writeback, mapped = (stat.get({prefix!r} + key, 0) for key in {keys!r})\n"
            f"    usage = int(open({str(cgroup / usage)!r}).read())\n"
            f"    return int({threshold} * {limit}) - usage + max(active + inactive - dirty - writeback - mapped, 0)\n")


FITTING: dict[str, Callable[[Files], str]] = {
    "a frame of 85 % of what is left": lambda f: ("a = np.ones(int(0.85 * left()) // 64 * 8)\n"
                                                  "df = pd.DataFrame(a.reshape(-1, 8), copy=False)\n"
                                                  "total = float(df[0].sum())"),
    "60 % of what is left, freed, then again": lambda f: ("a = np.ones(int(0.6 * left()) // 8)\ndel a\n"
                                                          "b = np.ones(int(0.6 * left()) // 8)\n"
                                                          "total = float(b.sum())"),
    "a big .npy read through mmap": lambda f: (f"m = np.load({str(f.fitting_npy)!r}, mmap_mode='r')\n"
                                               "total = float(m.sum())"),
    "a big file read through mmap.mmap": lambda f: ("import mmap\n"
                                                    f"with open({str(f.fitting_npy)!r}, 'rb') as source:\n"
                                                    "    view = mmap.mmap(source.fileno(), 0, "
                                                    "access=mmap.ACCESS_READ)\n"
                                                    "    total = sum(view[i] for i in range(0, len(view), 4096))\n"
                                                    "    view.close()"),
    # read twice (each munmap marks its pages accessed): the file's page cache is active, reclaimed all the same
    "85 % of what is left, after a file read twice through mmap": lambda f: (
        f"for _ in range(2):\n    m = np.load({str(f.fitting_npy)!r}, mmap_mode='r')\n    total = float(m.sum())\n"
        "    del m\na = np.ones(int(0.85 * left()) // 8)\ntotal = float(a.sum())"),
    "64 threads": lambda f: ("import threading\nheld = []\n"
                             "def work():\n    held.append(bytearray(1_000_000))\n"
                             "threads = [threading.Thread(target=work) for _ in range(64)]\n"
                             "for t in threads:\n    t.start()\nfor t in threads:\n    t.join()\n"
                             "assert len(held) == 64"),
    "a thread pool over numpy": lambda f: ("from concurrent.futures import ThreadPoolExecutor\n"
                                           "with ThreadPoolExecutor(16) as pool:\n"
                                           "    sums = list(pool.map(lambda i: float(np.ones(1_000_000).sum()), "
                                           "range(64)))"),
    "joblib loky workers that fit": lambda f: ("from joblib import Parallel, delayed\n"
                                               "sums = Parallel(n_jobs=2)(delayed(np.sum)(np.ones(2_000_000)) "
                                               "for _ in range(8))"),
    "a random forest fit with n_jobs=2": lambda f: (
        "from sklearn.ensemble import RandomForestClassifier\n"
        "X = np.random.default_rng(0).random((20_000, 20))\ny = (X[:, 0] > 0.5).astype(int)\n"
        "model = RandomForestClassifier(n_estimators=20, n_jobs=2, random_state=0).fit(X, y)"),
    "a cross-validation with loky workers": lambda f: (
        "from sklearn.linear_model import LogisticRegression\nfrom sklearn.model_selection import cross_val_score\n"
        "X = np.random.default_rng(0).random((20_000, 20))\ny = (X[:, 0] > 0.5).astype(int)\n"
        "scores = cross_val_score(LogisticRegression(), X, y, cv=3, n_jobs=2)"),
    "a k-means fit": lambda f: ("from sklearn.cluster import KMeans\n"
                                "km = KMeans(4, n_init=1, random_state=0)"
                                ".fit(np.random.default_rng(0).random((100_000, 8)))"),
    "a merge that fits": lambda f: ("df = pd.DataFrame({'k': np.arange(1_000_000), 'v': np.ones(1_000_000)})\n"
                                    "m = df.merge(df, on='k')"),
    "a groupby mean": lambda f: ("df = pd.DataFrame({'g': np.arange(5_000_000) % 1000, 'v': np.ones(5_000_000)})\n"
                                 "means = df.groupby('g')['v'].mean()"),
    "a concat of five folds": lambda f: ("fold = pd.DataFrame(np.ones((500_000, 10)), copy=False)\n"
                                         "everything = pd.concat([fold] * 5)"),
    "an outer product that fits": lambda f: "x = np.ones(4000)\no = np.outer(x, x)",
    "pd.read_csv of 50 MB": lambda f: f"rows = pd.read_csv({str(f.csv)!r})",
    "a sort of 10 M floats": lambda f: "s = np.sort(np.random.default_rng(0).random(10_000_000))",
    "a list of 5 M ints": lambda f: "xs = list(range(5_000_000))",
    "astype of a frame that fits": lambda f: ("df = pd.DataFrame(np.zeros((1_000_000, 10), dtype=np.int8), "
                                              "copy=False)\nwide = df.astype(np.float64)"),
}


def fitting(files: Files, cgroup: Path, version: int) -> list[Cell]:
    """Every fitting cell, with left() defined where it needs it."""
    prelude = left_function(cgroup, version)
    return [Cell(name, (prelude if "left()" in code else "") + code)
            for name, code in ((name, template(files)) for name, template in FITTING.items())]
