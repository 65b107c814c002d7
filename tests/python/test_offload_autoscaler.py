"""The autoscaler's rules (rustfx.offload_autoscaler.Autoscaler, whose doc
states them), window by window, with the windows' figures made up: no
clock, no workers. Each test is one rule of the doc."""

import math

import pytest

from rustfx.offload_autoscaler import Autoscaler
from rustfx.offload_governor import WAIT_SHARE, Governor


# Windows of one second each unless a test says otherwise: a window's
# files are then its files/s, and seconds count as windows.
SECOND = 1.0
TRIAL = math.ceil(Autoscaler.SETTLE_SECONDS) + math.ceil(Autoscaler.MEASURE_SECONDS)
MEASURE_ON = math.ceil(Autoscaler.MEASURE_MOST_SECONDS - Autoscaler.MEASURE_SECONDS)
HOLD_FIRST = int(Autoscaler.HOLD_FIRST)
DOWN = int(Autoscaler.DOWN_SECONDS)


def run(scaler, windows, ready=None, most=None):
    """Feeds `windows` [(files/s, waited, idle)] of a second each, the
    workers serving as soon as asked (ready = the target) unless `ready`
    is given, the cluster's room `most` unless None; the targets."""
    targets = []
    room = None if most is None else (lambda: most)
    for rate, waited, idle in windows:
        now_ready = scaler.target if ready is None else ready
        targets.append(scaler.window(rate * SECOND, SECOND, waited, idle, now_ready, room))
    return targets


def add(scaler, rate):
    """Windows at `rate` the trainer waited in, till the next worker is
    asked for: one, or FIRST_WAITS for the first."""
    return run(scaler, [(rate, True, False)] * (1 if scaler.added else Autoscaler.FIRST_WAITS))


def judged(scaler, rate, waited=True, idle=False):
    """The windows of one trial (SETTLE_SECONDS, then MEASURE_SECONDS) at
    `rate`: an addition kept while the trainer waits has the next worker
    asked for in its last window."""
    return run(scaler, [(rate, waited, idle)] * TRIAL)


def failed(scaler, rate):
    """The windows of a trial that gives nothing at `rate`: measured on
    till MEASURE_MOST_SECONDS."""
    return run(scaler, [(rate, True, False)] * (TRIAL + MEASURE_ON))


def climb(scaler, count):
    """From none to `count` workers, the trainer waiting and each worker
    adding 100 files/s (t workers: 100 (t + 1)); the last one judged as
    the trainer stops waiting, so no more is asked for."""
    add(scaler, 100)
    while scaler.trial is not None:
        target = scaler.target
        judged(scaler, 100 * (target + 1), waited=target < count)
    assert scaler.target == count


def test_no_wait_no_worker_beyond_min():
    scaler = Autoscaler(0, 8)
    assert run(scaler, [(100, False, False)] * 50) == [0] * 50
    scaler = Autoscaler(2, 8)
    assert scaler.target == 2
    assert run(scaler, [(100, False, False)] * 50) == [2] * 50


def test_an_epochs_first_batch_is_not_a_wait():
    # Each epoch's first batch waits for its pipeline to start, whatever the
    # workers: a trainer-bound run read each epoch's first window as a stall.
    governor = Governor("when_waiting", window=2, now=0.0)
    for epoch in range(3):
        start = 10.0 * epoch
        governor.new_epoch(start)
        governor.batch(32, 0.2, start + 0.2)     # the pipeline starting
        governor.batch(32, 0.001, start + 0.3)   # then 50 ms steps, no wait
        assert governor.last_wait_share == pytest.approx(0.001 / 0.3), epoch
        assert governor.local_cap is None  # no probe of the workers
    governor.batch(32, 0.2, 20.5)  # later in an epoch the same wait is one
    governor.batch(32, 0.001, 20.6)
    assert governor.last_wait_share >= WAIT_SHARE and governor.local_cap == 1.0


def test_a_wait_is_a_share_of_the_window_not_one_slow_batch():
    # A trainer-bound run (50 ms a step) has a next() over 50 us now and
    # then: a few tenths of a percent of its time, no wait. The governor's
    # verdict, last_stalled, is what the autoscaler adds a worker on.
    def window(governor, start, share):
        """Two batches over one second, the second waited `share` of it."""
        governor.batch(32, 0.0, start + 0.5)
        governor.batch(32, share, start + 1.0)
        return governor.last_stalled

    governor = Governor("when_waiting", window=2, now=0.0)
    assert not any(window(governor, float(t), WAIT_SHARE * 0.9) for t in range(50))
    assert governor.local_cap is None  # no probe of the workers either
    assert window(governor, 50.0, WAIT_SHARE)
    assert governor.local_cap == 1.0
    scaler = Autoscaler(0, 8)
    assert run(scaler, [(100, False, False)] * 50) == [0] * 50
    assert run(scaler, [(100, governor.last_stalled, False)] * 2) == [0, 1]


def test_the_clusters_room_is_asked_only_when_it_matters():
    # For Ray, `most` asks the cluster (ray.available_resources and each
    # handle, under the pool's lock): not at every window of a fixed or a
    # settled count.
    asked = []

    def room():
        asked.append(1)
        return 8

    fixed = Autoscaler(3, 3)
    for _ in range(20):
        fixed.window(100, SECOND, True, False, 3, room)
    scaler = Autoscaler(0, 8)
    for _ in range(20):
        scaler.window(100, SECOND, False, False, 0, room)
    assert asked == []  # no wait, nothing missing: never asked
    scaler.window(100, SECOND, True, False, 0, room)
    scaler.window(100, SECOND, True, False, 0, room)
    assert scaler.target == 1 and len(asked) == 1  # asked before adding


def test_one_stalled_window_brings_no_first_worker():
    # A trainer-bound run's hiccup (20 ms is 5% of a 0.4 s window) reads as
    # one stalled window now and then: the first worker, kept unjudged,
    # comes only after FIRST_WAITS in a row.
    scaler = Autoscaler(0, 8)
    hiccups = ([(100, False, False)] * 10 + [(100, True, False)]) * 5
    assert run(scaler, hiccups) == [0] * len(hiccups)
    assert run(scaler, [(100, True, False)] * Autoscaler.FIRST_WAITS)[-1] == 1


def test_up_while_waiting_each_addition_kept_only_if_it_raised_the_rate():
    scaler = Autoscaler(0, 8)
    assert add(scaler, 100) == [0, 1]  # the first: once it waited 2 windows in a row
    # 1.5x: kept, and the next tried at once, in the window that judged it
    assert judged(scaler, 150) == [1, 1, 2]
    assert judged(scaler, 200)[-1] == 3
    assert judged(scaler, 202)[-1] == 3              # +1%: between, measured on...
    assert run(scaler, [(202, True, False)] * MEASURE_ON)[-1] == 2  # ...short of GAIN: removed
    # The count that gave nothing is held for HOLD_FIRST seconds.
    held = run(scaler, [(200, True, False)] * (HOLD_FIRST - 1))
    assert set(held) == {2}
    assert run(scaler, [(200, True, False)]) == [3]  # tried again after the hold


def test_a_rate_is_files_over_seconds_summed_not_a_mean_of_windows():
    scaler = Autoscaler(0, 4)
    add(scaler, 100)
    judged(scaler, 130)  # the first worker: 130 files/s; the second tried
    assert scaler.target == 2
    run(scaler, [(130, True, False)])  # settling
    # One short window at 600 files/s, then 1.9 s at 105: the mean of the
    # windows' rates is 352, but 260 files in 2 s is 130, not 5% more.
    for files, seconds in [(60, 0.1), (200, 1.9)]:
        scaler.window(files, seconds, True, False, scaler.target)
    assert scaler.trial is not None and scaler.target == 2  # not kept: measured on


def test_a_trial_short_of_gain_is_measured_on_over_its_latest_windows():
    # A worker joining a running epoch shows 1.5-3 s after it serves:
    # climb logs had 2 workers read under 1's over their first 2 s, and
    # removed, then 1.2x in the windows right after. Short of GAIN, a
    # trial's latest MEASURE_SECONDS are read at each window, up to
    # MEASURE_MOST_SECONDS.
    scaler = Autoscaler(0, 4)
    add(scaler, 100)
    judged(scaler, 100)  # the first worker (kept), the second tried
    assert judged(scaler, 95)[-1] == 2 and scaler.trial is not None  # under before: on
    # Its latest 2 s: 112.5 files/s, 1.125x: kept, and the next tried at once.
    assert run(scaler, [(130, True, False)]) == [3]
    assert judged(scaler, 110)[-1] == 3 and scaler.trial is not None  # short of 5%: on...
    assert run(scaler, [(110, True, False)] * MEASURE_ON)[-1] == 2  # ...removed at 6 s


def test_a_governors_probe_is_not_measured():
    # The governor probes a neighbouring arm soon after a count changes: a
    # probe of a worse cap inside a trial read as no gain.
    scaler = Autoscaler(0, 4)
    add(scaler, 100)
    judged(scaler, 100)  # the first, the second tried
    probes = [scaler.window(50, SECOND, True, False, 2, probe=True) for _ in range(2 * TRIAL)]
    assert probes == [2] * (2 * TRIAL) and scaler.trial is not None  # nothing judged
    assert judged(scaler, 150, waited=False)[-1] == 2 and scaler.trial is None  # kept
    # With no worker serving, a probe changes nothing: its waits count.
    first = Autoscaler(0, 4)
    assert [first.window(100, SECOND, True, False, 0, probe=True)
            for _ in range(Autoscaler.FIRST_WAITS)] == [0, 1]


def test_the_first_worker_is_kept_unjudged():
    scaler = Autoscaler(0, 4)
    add(scaler, 20)  # the warm-up windows: slow
    assert judged(scaler, 20, waited=False)[-1] == 1  # gave nothing, kept: no rate to judge by
    assert run(scaler, [(20, False, True)] * DOWN)[-1] == 0  # idle: goes


def test_hold_doubles_each_time_the_count_fails_again():
    scaler = Autoscaler(0, 4)
    add(scaler, 100)
    judged(scaler, 200)  # the first worker (kept), the second tried
    failed(scaler, 200)  # the second gave nothing
    assert scaler.target == 1
    first = scaler.holds[2][1]
    windows = 0
    while scaler.target == 1:
        run(scaler, [(200, True, False)])
        windows += 1
    failed(scaler, 200)
    assert scaler.target == 1 and scaler.holds[2][1] == 2 * first
    assert windows <= first


def test_bounded_by_max_workers_and_by_what_the_cluster_can_place():
    scaler = Autoscaler(0, 2)
    for _ in range(2):
        add(scaler, 100 * (scaler.target + 1))
        judged(scaler, 100 * (scaler.target + 1))
    assert scaler.target == 2
    assert run(scaler, [(300, True, False)] * 10) == [2] * 10
    scaler = Autoscaler(0, 8)
    assert run(scaler, [(100, True, False)] * 5, most=0) == [0] * 5


def test_down_slowly_when_idle_and_back_if_it_cost():
    scaler = Autoscaler(0, 8)
    climb(scaler, 3)
    idle = run(scaler, [(300, False, True)] * DOWN)
    assert idle == [3] * (DOWN - 1) + [2]  # after DOWN_SECONDS, one fewer
    judged(scaler, 300, waited=False)  # the trainer did not wait: the removal is kept
    assert scaler.target == 2
    run(scaler, [(300, False, True)] * DOWN)
    assert scaler.target == 1
    judged(scaler, 150, waited=True)  # waits, half the files/s: it comes back
    assert scaler.target == 2


def test_idle_windows_must_be_in_a_row():
    scaler = Autoscaler(1, 4)
    pattern = [(100, False, True)] * (DOWN - 1) + [(100, False, False)]
    assert set(run(scaler, pattern * 4)) == {1}
    assert run(scaler, [(100, False, True)] * DOWN)[-1] == 1  # min_workers


def test_a_start_under_way_holds_and_measures_nothing():
    scaler = Autoscaler(0, 4)
    add(scaler, 100)
    assert scaler.target == 1
    # The worker still starting (ready 0): nothing is judged however long.
    assert run(scaler, [(100, True, False)] * 20, ready=0) == [1] * 20
    assert judged(scaler, 180, waited=False)[-1] == 1 and scaler.trial is None


def test_an_epochs_ramp_is_not_measured():
    # Each epoch's first windows, before the workers' first batch, run at
    # the local sweep's rate whatever the count: a trial that took them in
    # read a second worker's 2x as nothing.
    scaler = Autoscaler(0, 4)
    # The first kept, the next tried at once:
    assert run(scaler, [(100, True, False)] * (Autoscaler.FIRST_WAITS + TRIAL))[-1] == 2
    ramps = TRIAL + MEASURE_ON  # a trial's longest
    ramp = [scaler.window(100, SECOND, True, False, 2, ramp=True) for _ in range(ramps)]
    assert ramp == [2] * ramps and scaler.trial is not None  # nothing judged
    assert judged(scaler, 200, waited=False)[-1] == 2  # judged on the steady windows: kept
    # Without the ramp flag, the same windows make the trial fail.
    other = Autoscaler(0, 4)
    assert run(other, [(100, True, False)] * (Autoscaler.FIRST_WAITS + TRIAL))[-1] == 2
    assert run(other, [(100, True, False)] * ramps + [(200, True, False)] * TRIAL)[-1] == 1


def test_a_cluster_that_lost_room_lowers_the_target():
    scaler = Autoscaler(0, 4)
    climb(scaler, 3)
    # A node gone: 2 serve and nothing more can be placed.
    assert run(scaler, [(200, True, False)], ready=2, most=2) == [2]


def test_fixed_count_never_moves():
    scaler = Autoscaler(3, 3)
    assert scaler.target == 3
    assert set(run(scaler, [(1, True, False), (1, False, True)] * 20, ready=1)) == {3}


@pytest.mark.parametrize("counts", [(-1, 2), (3, 2), (0, 0)])
def test_bad_counts_refused(counts):
    with pytest.raises(ValueError, match="min_workers"):
        Autoscaler(*counts)


def test_the_governor_tries_the_workers_again_when_more_serve():
    from rustfx.offload_governor import Governor

    governor = Governor("when_waiting", window=1, now=0.0)
    governor.rates[Governor.UNCAPPED] = 50.0
    governor.rates[Governor.LOCAL_ONLY] = 100.0
    assert governor.local_cap is None  # on the local sweep only
    governor.workers_changed(more=False)  # fewer: forgotten, no probe
    assert governor.rates[1:] == [None] * (len(Governor.ARMS) - 1)
    assert governor.local_cap is None
    governor.workers_changed(more=True)  # more: the next window runs UNCAPPED
    assert governor.local_cap == 1.0 and governor.rates[0] == 100.0
    # Measured below the local rate, it goes back to the local sweep.
    governor.batch(10, 0.25, 1.0)
    assert governor.local_cap is None and governor.last_window == (10, 1.0, 1)
    # (an epoch's first batch: its wait is not in the share)
    assert governor.last_wait_share == 0.0 and not governor.last_ramp
    assert governor.last_probe  # that window was a probe: not the autoscaler's to measure
    governor.batch(10, 0.25, 2.0)
    assert not governor.last_probe


def test_a_trainer_bound_runs_hiccups_close_no_window_early():
    # 50 ms steps, each next() 0.1-5 ms: waits by count (over 50 us), not
    # a stall. Windows close at `window` batches, and the share is tiny.
    from rustfx.offload_governor import Governor

    governor, now = Governor("when_waiting", window=8, now=0.0), 0.0
    governor.new_epoch(now)
    for batch in range(64):
        wait = 0.005 if batch % 8 == 3 else 0.0001
        now += 0.05 + wait
        if governor.batch(32, wait, now):
            assert governor.last_window[1] >= 8 * 0.05, governor.last_window
            assert governor.last_wait_share < WAIT_SHARE
    assert governor.local_cap is None  # no probe of the workers
    # Input-bound (every batch waited for): two waits close the first window.
    governor, now = Governor("when_waiting", window=8, now=0.0), 0.0
    governor.new_epoch(now)
    closed = [governor.batch(32, 0.05, now := now + 0.05) for _ in range(2)]
    assert closed == [False, True] and governor.local_cap == 1.0


def test_the_governor_publishes_its_ramp_verdict_for_the_autoscaler():
    # One rule, the governor's: a ramp counts on a workers' arm only, with
    # a fixed cap too (its windows measure nothing, but the autoscaler's
    # trials must leave the ramp out all the same).
    from rustfx.offload_governor import Governor

    local = Governor("when_waiting", window=1, now=0.0)  # on the local sweep
    local.batch(10, 1.0, 1.0, ramp=True)
    assert not local.last_ramp
    for policy in ("always", "only", 0.5):
        fixed = Governor(policy, window=1, now=0.0)
        fixed.batch(10, 1.0, 1.0, ramp=True)
        assert fixed.last_ramp, policy
        fixed.batch(10, 1.0, 2.0)
        assert not fixed.last_ramp, policy


def test_the_governor_probes_soon_and_towards_the_workers_when_more_serve():
    # Its probes had doubled apart (arms alike); more workers serve: the
    # next probe comes within PROBE_FIRST windows, to a lower cap.
    from rustfx.offload_governor import Governor

    governor, now = Governor("when_waiting", window=1, now=0.0), 0.0
    governor.arm = Governor.UNCAPPED
    governor.interval = governor.until_probe = Governor.PROBE_MOST
    governor.step = -1
    governor.workers_changed(more=True)
    for windows in range(1, Governor.PROBE_MOST):
        now += 0.3
        governor.batch(10, 0.3, now)
        if governor.probe_from is not None:
            break
    assert windows <= Governor.PROBE_FIRST and governor.local_cap == 0.8, windows
    governor.workers_changed(more=False)  # fewer: the next probe, a higher cap
    assert governor.step == -1 and governor.until_probe == Governor.PROBE_FIRST


def test_no_probe_starts_while_a_count_is_judged():
    # One experiment at a time: the autoscaler measures no probe window, so
    # a probe inside its trial only made the trial longer (1-3 s a count in
    # a climb log). Held for PROBE_MOST_SECONDS of windows at most.
    def first_probe(judging, windows=40):
        governor, now = Governor("when_waiting", window=1, now=0.0), 0.0
        governor.arm, governor.until_probe = Governor.UNCAPPED, 1  # due at the next window
        governor.judging(judging)
        for window in range(windows):
            now += 0.5
            governor.batch(10, 0.5, now)
            if governor.probe_from is not None:
                return window
        return None

    assert first_probe(False) == 0
    assert first_probe(True) == int(Governor.PROBE_MOST_SECONDS / 0.5)
    # A probe under way goes on; one that wins has the next arm that way
    # tried once the trial is over, not at once.
    governor, now = Governor("when_waiting", window=1, now=0.0), 0.0
    governor.arm, governor.until_probe = Governor.UNCAPPED, 1
    governor.batch(50, 0.5, now := now + 0.5)
    assert governor.local_cap == 0.8  # the probe
    governor.judging(True)
    for _ in range(6):
        governor.batch(100, 0.5, now := now + 0.5)  # 2x: it wins
    assert governor.local_cap == 0.8 and governor.probe_from is None
    governor.judging(False)
    governor.batch(100, 0.5, now := now + 0.5)
    assert governor.local_cap == 0.65 and governor.probe_from == Governor.ARMS.index(0.8)
    # From the local sweep alone, the workers' first probe is not held: it
    # is how a worker the autoscaler added gets batches at all.
    governor = Governor("when_waiting", window=1, now=0.0)
    governor.judging(True)
    governor.batch(10, 0.5, 0.5)  # (an epoch's first wait is left out)
    governor.batch(10, 0.5, 1.0)
    assert governor.local_cap == Governor.ARMS[Governor.UNCAPPED]


def test_the_launcher_tells_the_governor_while_a_count_is_judged():
    from types import SimpleNamespace

    from rustfx.workers import _Pool

    governor = Governor("when_waiting", window=1, now=0.0)
    pool = SimpleNamespace(ready=0, seen_ready=0, target=0, autoscaler=Autoscaler(0, 4),
                           most=lambda: 4)
    pool.set_target = lambda count: setattr(pool, "target", count)
    judged_at, now = [], 0.0
    for window in range(Autoscaler.FIRST_WAITS + 40):
        pool.ready = pool.target  # each worker serves as soon as asked
        now += 1.0
        governor.batch(100, 1.0, now)  # the trainer waits through each window
        _Pool.window(pool, governor, idle=False)
        judged_at.append(governor.judged)
        assert governor.judged == (pool.autoscaler.trial is not None)
    assert any(judged_at) and not all(judged_at)
