"""A run's figures from its epochs: median, spread, stability, and the projection of capped epochs."""

from __future__ import annotations

import pytest

from cpustudy.measure.tally import summarize
from conftest import run_config


def test_spread_and_stability_of_timed_epochs():
    config = run_config(steps_per_epoch=None, full_steps_per_epoch=10, batch_size=4)
    steady = [{"elapsed_s": 9.0, "warmup": True}] + [{"elapsed_s": t} for t in (1.0, 1.01, 0.99, 1.0)]
    s = summarize(config, steady, 1.0)
    assert s["epoch_time_cv"] < 0.05 and s["unstable"] is False
    assert s["epoch_time_iqr_s"] == pytest.approx(0.005, abs=1e-9)
    noisy = [{"elapsed_s": 9.0, "warmup": True}] + [{"elapsed_s": t} for t in (1.0, 1.3, 0.8)]
    s = summarize(config, noisy, 1.0)
    assert s["unstable"] is True and s["epoch_time_cv"] > 0.05
    capped = summarize(config.with_(steps_per_epoch=2), noisy, 1.0)
    assert capped["epoch_time_iqr_s"] == pytest.approx(s["epoch_time_iqr_s"] * 5)  # scaled to a full epoch


def test_summarize_projects_capped_epochs():
    config = run_config(steps_per_epoch=10, full_steps_per_epoch=100, batch_size=32)
    epochs = [
        {"elapsed_s": 5.0, "warmup": True, "samples": 320},
        {"elapsed_s": 1.0, "samples": 320},
        {"elapsed_s": 3.0, "samples": 320},
        {"elapsed_s": 2.0, "samples": 320},
    ]
    s = summarize(config, epochs, 4.0)
    assert s["measured_epoch_time_s"] == 2.0 and s["timed_epochs"] == 3
    assert s["step_time_s"] == pytest.approx(0.2) and s["epoch_time_s"] == pytest.approx(20.0)
    assert s["projected"] and s["samples_per_s"] == pytest.approx(160.0)
    full = summarize(config.with_(steps_per_epoch=None), epochs, 4.0)
    assert not full["projected"] and full["epoch_time_s"] == 2.0


def test_time_outside_the_steps_is_added_once_per_projected_epoch_not_scaled():
    # 10 steps of 0.1 s plus a 2.5 s stall at the epoch's end (TensorFlow tearing down the data
    # iterator): a full epoch of 100 steps takes 10 s + 2.5 s, not (1 s + 2.5 s) x 10.
    config = run_config(steps_per_epoch=10, full_steps_per_epoch=100, batch_size=32, vcpus=1)
    epochs = [{"elapsed_s": 6.0, "warmup": True, "steps_s": 3.0, "boundary_s": 3.0, "cpu_s": 3.0}]
    epochs += [{"elapsed_s": 1.0 + b, "steps_s": 1.0, "boundary_s": b, "cpu_s": 1.0, "samples": 320}
               for b in (2.5, 0.0, 2.5)]
    s = summarize(config, epochs, 4.0)
    assert s["projected"] and s["epoch_time_s"] == pytest.approx(12.5)
    assert s["step_time_s"] == pytest.approx(0.1) and s["epoch_boundary_s"] == pytest.approx(2.5)
    assert s["measured_epoch_time_s"] == pytest.approx(3.5)
    assert s["samples_per_s"] == pytest.approx(3200 / 12.5)  # a full epoch's samples over its time
    assert s["cpu_utilization"] == pytest.approx(1.0 / 3.5)  # the process slept through the stall
    assert s["epoch_time_iqr_s"] == pytest.approx(1.25)  # spread of 10, 12.5, 12.5 (projected epochs)
    # Epochs stored without the split (older runs) are projected as a whole, as before.
    old = summarize(config, [{k: v for k, v in e.items() if k == "elapsed_s"} for e in epochs[1:]], 4.0)
    assert old["epoch_time_s"] == pytest.approx(35.0) and old["epoch_boundary_s"] is None


def test_stability_flag_and_iqr_share_one_basis():
    # A 2.5 s stall in one of three 20-step epochs makes the raw epoch times vary by ~70 %, but
    # projected to a full epoch (the stall added once) the times vary by ~20 %, and a steady stall
    # varies not at all: the flag follows the projected figures the IQR beside it describes.
    config = run_config(steps_per_epoch=10, full_steps_per_epoch=100, batch_size=32, vcpus=1)
    steady = [{"elapsed_s": 3.5, "steps_s": 1.0, "boundary_s": 2.5} for _ in range(3)]
    wobbly = [{"elapsed_s": 1.0 + b, "steps_s": s, "boundary_s": b}
              for s, b in ((1.0, 2.5), (1.02, 0.0), (0.98, 2.5))]
    s = summarize(config, wobbly, 1.0)
    raw = [1.0 + b for b in (2.5, 0.0, 2.5)]
    assert max(raw) / min(raw) > 3  # the raw times alone would have been flagged
    shown = [10.0 + 2.5, 10.2, 9.8 + 2.5]
    mean = sum(shown) / 3
    sd = (sum((x - mean) ** 2 for x in shown) / 2) ** 0.5
    assert s["epoch_time_cv"] == pytest.approx(sd / mean)
    assert s["unstable"] is True  # 12.5 vs 10.2: the projected epochs do differ by > 5 %
    calm = summarize(config, steady, 1.0)
    assert calm["epoch_time_cv"] == pytest.approx(0.0) and calm["unstable"] is False
    # A 0.3 s stall in one short epoch: 16 % in raw times, 1.7 % in projected full epochs.
    stall = [{"elapsed_s": 1.0 + b, "steps_s": 1.0, "boundary_s": b} for b in (0.0, 0.3, 0.0)]
    s = summarize(config, stall, 1.0)
    assert s["epoch_time_cv"] < 0.02 and s["unstable"] is False
