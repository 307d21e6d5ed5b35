"""tests/conftest.py's sharing out under `pytest -n`: what each chunk holds, and which chunks go first."""

from __future__ import annotations

from collections import Counter

from tests.conftest import STACK_CHUNK, chunk_scopes, first_sent


def test_a_big_module_is_cut_into_the_fewest_equal_runs_and_a_small_one_stays_whole() -> None:
    big = [f"tests/integration/test_big.py::test_{i}" for i in range(3 * STACK_CHUNK + 1)]
    small = [f"tests/integration/test_small.py::test_{i}[on-done]" for i in range(STACK_CHUNK)]
    scopes = chunk_scopes(big + small)
    sizes = Counter(scopes[n] for n in big)
    assert len(sizes) == 4 and max(sizes.values()) - min(sizes.values()) <= 1, sizes
    assert [scopes[n] for n in big] == sorted(scopes[n] for n in big)  # consecutive runs, in collection order
    assert {scopes[n] for n in small} == {"tests/integration/test_small.py#0"}


def test_chunks_that_wait_are_sent_before_the_cpu_bound_ones_bigger_first() -> None:
    chunks = {"tests/unit/test_policy.py#0": 16, "tests/integration/test_demo.py#0": 4,
              "tests/infra/test_checkov.py#0": 1, "tests/integration/test_faults.py#0": 13}
    order = sorted(chunks, key=lambda scope: first_sent(scope, chunks[scope]))
    assert order == ["tests/integration/test_faults.py#0", "tests/integration/test_demo.py#0",
                     "tests/infra/test_checkov.py#0", "tests/unit/test_policy.py#0"]
