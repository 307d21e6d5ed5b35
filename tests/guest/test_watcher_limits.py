"""The memory watcher's refusal (issue 40), its pure core on synthetic figures: the address-space limit each kernel
keeps, what is left for it, whom it follows, and the refusal's note and line; no clock, no machine."""

from __future__ import annotations

from tests.guest.test_watcher_decide import LIMIT, MIB, POLICY, mw

GIB = 1024 * MIB
RAM = 16 * GIB


def test_what_is_left_is_the_interrupt_line_less_the_working_set_page_cache_counted_free() -> None:
    at_line = int(0.93 * LIMIT)
    assert mw.memory_left(mw.Sample(0, 500 * MIB, LIMIT, ()), POLICY) == at_line - 500 * MIB
    # 1 GB of it page cache (a file read): reclaimed before any kill, so left for the cell
    assert mw.memory_left(mw.Sample(0, 1500 * MIB, LIMIT, (), 1000 * MIB), POLICY) == at_line - 500 * MIB
    assert mw.memory_left(mw.Sample(0, LIMIT, LIMIT, ()), POLICY) < 0
    # of that cache, 300 MiB are mapped (libraries, mmap'd files): not free, they would fault back in
    assert mw.memory_left(mw.Sample(0, 1500 * MIB, LIMIT, (), 1000 * MIB, mapped=300 * MIB), POLICY) \
        == at_line - 800 * MIB
    assert mw.memory_left(mw.Sample(0, 1500 * MIB, LIMIT, (), 100 * MIB, mapped=300 * MIB), POLICY) \
        == at_line - 1500 * MIB
    assert mw.memory_left(mw.Sample(0, 500 * MIB, 0, ()), POLICY) == 0


# The Jupyter unit's memory.stat (cgroup v1, abridged) when the catalogue's "a concat of five folds" was refused
# (bench, 17 / 18 fitting): the 800 MB .npy the fitting cells had read through mmap, twice, closed since, sat in the
# page cache as *active* file pages, 763 MiB of the 1502 MiB used.
AFTER_TWO_MMAP_READS = (f"cache {800 * MIB}\nrss {600 * MIB}\nmapped_file {60 * MIB}\n"
                        f"total_cache {800 * MIB}\ntotal_rss {600 * MIB}\ntotal_shmem {2 * MIB}\n"
                        f"total_mapped_file {120 * MIB}\ntotal_dirty {MIB}\ntotal_writeback 0\n"
                        f"total_inactive_anon {2 * MIB}\ntotal_active_anon {598 * MIB}\n"
                        f"total_inactive_file {10 * MIB}\ntotal_active_file {788 * MIB}\n").encode()


def test_page_cache_the_kernel_takes_back_before_a_kill_is_every_clean_file_page_active_or_inactive() -> None:
    assert mw.page_cache(AFTER_TWO_MMAP_READS, 1) == (797 * MIB, 120 * MIB)
    v2 = (f"anon {600 * MIB}\nfile {800 * MIB}\nfile_mapped {120 * MIB}\nfile_dirty {MIB}\n"
          f"file_writeback {4 * MIB}\nshmem {2 * MIB}\ninactive_file {10 * MIB}\nactive_file {788 * MIB}\n").encode()
    assert mw.page_cache(v2, 2) == (793 * MIB, 120 * MIB)
    assert mw.page_cache(b"anon 1\n", 2) == (0, 0)
    assert mw.page_cache(f"active_file {MIB}\nfile_dirty {2 * MIB}\n".encode(), 2) == (0, 0)


def test_a_memory_stat_value_is_read_from_its_own_line_only() -> None:
    stat = b"file_mapped 7\nfile 5\ninactive_file 3\nactive_file 4"  # no newline at the end
    assert [mw.stat_value(stat, key) for key in (b"file_mapped", b"file", b"inactive_file", b"active_file")] == [
        7, 5, 3, 4]
    assert mw.stat_value(stat, b"mapped") == 0 and mw.stat_value(stat, b"file_dirty") == 0
    assert mw.stat_value(b"file -1\nfile_dirty x\n", b"file") == 0
    assert mw.stat_value(b"file_dirty x\n", b"file_dirty") == 0


def test_a_fold_concat_that_fits_is_not_refused_for_a_closed_files_active_page_cache() -> None:
    reclaimable, mapped = mw.page_cache(AFTER_TWO_MMAP_READS, 1)
    sample = mw.Sample(0, 1502 * MIB, LIMIT, (), reclaimable, (), mapped)
    kernel = mw.Kernel(1, "python", rss=275 * MIB, size=1636 * MIB)
    room = mw.address_limit(kernel, mw.memory_left(sample, POLICY), POLICY, RAM, gpu=False) - kernel.size
    assert room >= 40 * MIB + 191 * MIB  # a fold (500,000 x 10 floats), then pd.concat's 191 MiB result
    assert room == int(0.93 * LIMIT) - 1502 * MIB + 797 * MIB - 120 * MIB  # the line, the cache counted free


def test_the_limit_is_what_the_kernel_has_mapped_plus_what_is_left_never_less_than_the_floor() -> None:
    # address space is not resident memory: 1.5 GiB mapped (arenas, thread stacks, libraries) for 200 MiB used.
    kernel = mw.Kernel(1, "python", rss=200 * MIB, size=1536 * MIB)
    assert mw.address_limit(kernel, 700 * MIB, POLICY, RAM, gpu=False) == 1536 * MIB + 700 * MIB
    assert mw.address_limit(kernel, 10 * MIB, POLICY, RAM, gpu=False) == 1536 * MIB + POLICY.floor
    assert mw.address_limit(kernel, -300 * MIB, POLICY, RAM, gpu=False) == 1536 * MIB + POLICY.floor


def test_gpu_machines_and_processes_that_reserve_more_than_the_ram_are_never_limited() -> None:
    kernel = mw.Kernel(1, "python", rss=200 * MIB, size=1536 * MIB)
    assert mw.address_limit(kernel, 700 * MIB, POLICY, RAM, gpu=True) is None
    cuda_like = mw.Kernel(2, "python", rss=2 * GIB, size=2 * GIB + 34 * GIB)  # CUDA's reservation at start
    assert mw.address_limit(cuda_like, 700 * MIB, POLICY, RAM, gpu=False) is None
    big_but_used = mw.Kernel(3, "python", rss=12 * GIB, size=20 * GIB)
    assert mw.address_limit(big_but_used, 700 * MIB, POLICY, RAM, gpu=False) == 20 * GIB + 700 * MIB


def test_a_limit_is_written_when_it_moves_by_a_step_lifted_at_once_and_never_looser_than_the_process_own() -> None:
    inf, step = mw.RLIM_INFINITY, POLICY.limit_step
    assert mw.limit_to_set(None, 5 * GIB, inf, POLICY) == 5 * GIB  # first sight
    assert mw.limit_to_set(5 * GIB, 5 * GIB + step - 1, inf, POLICY) is None
    assert mw.limit_to_set(5 * GIB, 5 * GIB - step, inf, POLICY) == 5 * GIB - step  # tightened
    assert mw.limit_to_set(5 * GIB, 6 * GIB, inf, POLICY) == 6 * GIB  # relaxed
    assert mw.limit_to_set(5 * GIB, None, inf, POLICY) == inf  # exempt now: its own back
    assert mw.limit_to_set(None, None, inf, POLICY) is None  # never limited: untouched
    assert mw.limit_to_set(None, 5 * GIB, 3 * GIB, POLICY) == 3 * GIB  # its own is tighter: kept
    assert mw.limit_to_set(3 * GIB, None, 3 * GIB, POLICY) == 3 * GIB


def test_processes_started_by_kernels_are_found_at_any_depth() -> None:
    parents = {50: 1, 60: 10, 61: 60, 62: 61, 70: 20, 80: 50}
    assert mw.descendants(parents, {10, 20}) == {60, 61, 62, 70}
    assert mw.descendants({5: 6, 6: 5}, {10}) == set()  # a loop in what was read ends


def test_proc_stat_gives_the_parent_and_start_time_whatever_the_process_calls_itself() -> None:
    line = "4242 (a) b) c) S 4000 4242 4242 0 -1 4194560 " + "0 " * 12 + "987654 0 0\n"
    assert mw.parse_stat_line(line) == (4000, 987654)
    assert mw.parse_stat_line("garbage") is None


def test_a_refusal_note_is_three_non_negative_integers_or_nothing() -> None:
    assert mw.parse_refusal_note('{"pid": 7, "asked": 0, "left": 5, "extra": "x"}') == (7, 0, 5)
    for bad in ('{"pid": 7, "asked": -1, "left": 5}', '{"pid": 7, "asked": true, "left": 5}', '{"pid": 7}',
                '[1, 2, 3]', 'nope', '{"pid": 0, "asked": 1, "left": 1}', '{"pid": 7, "asked": 1.5, "left": 1}'):
        assert mw.parse_refusal_note(bad) is None, bad


def test_the_refusal_line_cannot_be_bent_by_a_process_name() -> None:
    line = mw.refusal_line(mw.Refusal(12, "evil) asked=1 x=\n", 11_900_000_000, 0, 3, 4), "/system.slice/j s")
    assert line == ("notebook-medic-watcher: refused allocation kernel pid=12 (evil__asked_1_x__) asked=11900000000 "
                    "left=0 usage=3 limit=4 cgroup=/system.slice/j_s")


def test_a_fill_in_progress_is_not_counted_as_left_twice_but_what_a_kernel_always_keeps_unfilled_is() -> None:
    # at rest: 400 MiB of data mapped, 150 MiB of it resident anonymous memory (stacks, arenas: 250 unfilled)
    rest = mw.Kernel(1, "python", rss=200 * MIB, size=1200 * MIB, mapped_file=50 * MIB, data=400 * MIB)
    assert mw.unfilled(rest, None, 0) == (0, 250 * MIB)
    # np.concatenate has mapped its 1 GiB result and filled a quarter of it
    mid = mw.Kernel(1, "python", rss=456 * MIB, size=2224 * MIB, mapped_file=50 * MIB, data=1424 * MIB)
    assert mw.unfilled(mid, 250 * MIB, 64 * MIB) == (704 * MIB, 314 * MIB)
    # a slack that lasts (the heap handed back with madvise, still mapped) is absorbed at the settle rate
    usual = 250 * MIB
    for _ in range(12):  # 3 s of looks 0.25 s apart, at 256 MiB/s
        _, usual = mw.unfilled(mid, usual, int(POLICY.settle * 0.25))
    assert mw.unfilled(mid, usual, 0) == (0, 1018 * MIB)
    # threads gone, less unfilled than ever: the new usual
    lean = mw.Kernel(1, "python", rss=200 * MIB, size=1000 * MIB, mapped_file=50 * MIB, data=300 * MIB)
    assert mw.unfilled(lean, 250 * MIB, 64 * MIB) == (0, 150 * MIB)


def test_a_fill_slowed_by_load_stays_a_fill_while_a_lasting_slack_is_still_absorbed() -> None:
    # b = b + b on a busy machine, as the watcher saw it (2026-12-05, load 10): each step maps its result and the
    # copy is half done at the next look, so the slack grows by less than a look's settle rise (64 MiB) at a time.
    # Absorbed as usual, 300 MiB of copies yet to land were counted left and the 1 GiB step granted, then killed.
    rise, steady = int(POLICY.settle * 0.25), POLICY.steady
    usual = before = 98 * MIB  # the kernel at rest
    for slack in (146, 198, 278, 326, 409):  # MiB, the looks before the 1 GiB step
        look = mw.Kernel(1, "python", rss=200 * MIB, size=2000 * MIB, mapped_file=50 * MIB,
                         data=(150 + slack) * MIB)
        fill, usual = mw.unfilled(look, usual, mw.settling(before, mw.slack_of(look), rise, steady))
        before = mw.slack_of(look)
        assert fill == (slack - 98) * MIB, slack  # all of it still a fill
    # a slack that has stopped moving (the heap handed back, still mapped) is absorbed at the settle rate as before
    for _ in range(5):
        fill, usual = mw.unfilled(look, usual, mw.settling(before, mw.slack_of(look), rise, steady))
    assert (fill, usual) == (0, 409 * MIB)
    assert mw.settling(before, before - steady + 1, rise, steady) == rise  # a page or two touched is not a fill
    assert mw.settling(before, before - steady, rise, steady) == 0  # resident memory rising into it is one
    assert mw.settling(None, before, rise, steady) == rise  # first look at a process: its usual is what it has


def test_a_fill_in_progress_is_granted_to_no_one_else() -> None:
    left = 1500 * MIB
    assert mw.share_of_left(left, 0) == left  # each process, kernel or worker, may have all that is left
    # a kernel has mapped 1 GiB it is filling: the others may not have it again
    assert mw.share_of_left(left, 1024 * MIB) == 476 * MIB
    assert mw.share_of_left(left, 2048 * MIB) < 0  # the floor then (address_limit)
