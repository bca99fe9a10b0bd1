"""Memory is released: 10,000 runs of a small model do not grow the process (RSS)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kestrel


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    pytest.skip("no /proc/self/status here")
    return 0


def test_no_growth_over_10000_runs(tiny_model):
    _, ksm = tiny_model
    with kestrel.Model.load(ksm) as model, kestrel.Session(model) as s:
        rng = np.random.default_rng(0)
        x = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in model.inputs}
        for _ in range(500):  # warm up: allocator pools, NumPy caches
            s.run(x)
        before = rss_kib()
        for _ in range(10_000):
            out = s.run(x)
        grown = rss_kib() - before
        assert set(out) == {"y", "z"}
    # a leaked output pair (16 KiB) per run would be ~160 MB; allow 1 MiB of noise
    assert grown < 1024, f"RSS grew by {grown} KiB over 10,000 runs"


def test_no_growth_over_10000_runs_without_copy(tiny_model):
    """run(copy=False): the views release their hold on the session (no leaked session, view
    or reference), also when close() comes while one lives."""
    _, ksm = tiny_model
    x = None
    with kestrel.Model.load(ksm) as model:
        rng = np.random.default_rng(0)
        x = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in model.inputs}
        with kestrel.Session(model) as s:
            for _ in range(500):
                s.run(x, copy=False)
            before = rss_kib()
            for _ in range(10_000):
                out = s.run(x, copy=False)
            grown = rss_kib() - before
            assert set(out) == {"y", "z"}
        del out  # the session was closed with views alive: destroyed here
        for _ in range(200):  # sessions closed under a live view, then released
            s = kestrel.Session(model)
            keep = s.run(x, copy=False)
            s.close()
            del keep
        before2 = rss_kib()
        for _ in range(2_000):
            s = kestrel.Session(model)
            keep = s.run(x, copy=False)
            s.close()
            del keep
        grown2 = rss_kib() - before2
    assert grown < 1024, f"RSS grew by {grown} KiB over 10,000 runs with copy=False"
    assert grown2 < 2048, f"RSS grew by {grown2} KiB over 2,000 close-under-view cycles"


def test_no_growth_over_10000_failing_runs(tiny_model):
    """The error paths (wrong dtype, wrong shape) release what they hold too."""
    _, ksm = tiny_model
    with kestrel.Model.load(ksm) as model, kestrel.Session(model) as s:
        good = np.zeros((1, 8, 16, 16), np.float32)
        bad = [[good, good.astype(np.float64)], [good, np.zeros((1, 8, 16, 15), np.float32)]]
        for i in range(300):
            with pytest.raises(kestrel.KestrelError):
                s.run(bad[i % 2])
        before = rss_kib()
        for i in range(10_000):
            try:
                s.run(bad[i % 2])
            except kestrel.KestrelError:
                pass
        grown = rss_kib() - before
        s.run([good, good])
    assert grown < 1024, f"RSS grew by {grown} KiB over 10,000 failing runs"


def test_no_growth_over_open_close_cycles(blazeface):
    x = np.zeros((1, 128, 128, 3), np.float32)
    for _ in range(20):
        with kestrel.Model.load(blazeface) as m, kestrel.Session(m) as s:
            s.run(x)
    before = rss_kib()
    for _ in range(300):
        with kestrel.Model.load(blazeface) as m, kestrel.Session(m) as s:
            s.run(x)
        try:
            kestrel.Model.load(os.devnull)
        except kestrel.KestrelError:
            pass
    grown = rss_kib() - before
    assert grown < 4096, f"RSS grew by {grown} KiB over 300 load/session/close cycles"
