"""How many workers rustfx.offload's launcher keeps serving: the
autoscaler. Its rules are written here only, in `Autoscaler`'s doc
(rustfx.workers starts and stops the workers it asks for; docs/scale.md,
"Launchers", says how it fits)."""


from rustfx.offload_governor import Windows


class Autoscaler:
    """The worker count, decided at each governor window (rustfx.offload's
    Governor; a window is at least `patience` batches and 0.25 s) from
    what that window measured: its files' work (weighed by their bytes:
    rustfx.offload_governor.FILE_BYTES) and seconds, whether the trainer
    waited for its batches, and whether the workers sat idle (their
    batches not wanted: the governor on the local sweep only, or their
    queue full). Whether it waited is the governor's verdict, `last_stalled`
    (a share of the window: rustfx.offload_governor.WAIT_SHARE says why),
    decided there only. Every rate (of "files/s" below) is that work over
    seconds summed over windows, never a window's own: a window holds a
    few batches, and this machine kind's speed (and what is left of PE
    files' sizes) make one window's rate swing by more than a worker
    adds. The rules:
      - up, fast: while the trainer waits, one more worker (the first
        once it waited FIRST_WAITS windows in a row). Each addition is a
        trial: once the new worker serves (`ready` reaches the target),
        SETTLE_SECONDS of windows pass, then the files/s over its latest
        MEASURE_SECONDS of windows is compared with the count's before
        (its last MEASURE_SECONDS), at each window once they cover
        MEASURE_SECONDS. It is kept as soon as it raised the files/s by
        GAIN, and the next is tried at once (in the window that judged
        it) if the trainer still waits; still short of GAIN after
        MEASURE_MOST_SECONDS, it gave nothing: it is removed, and the
        count it reached is not tried again for HOLD_FIRST seconds of
        windows (twice as long each time it fails again, up to
        HOLD_MOST). A worker that joins a running epoch shows in the rate
        only 1.5-3 s after it serves (TF's client finds its task within
        a second, and a first batch under a 25% CPU quota took 1.1-2.6 s):
        climb logs had 2 workers read under 1's over their first 2 s,
        removed at once, then 1.2x in the windows after the verdict (a
        failed trial holds its count 10 s: a climb to 4 workers took
        46 s). And one window's rate swings by 15-20% with PE files. The
        first worker of the Offload is kept unjudged: the windows before
        it are the pipeline warming up (the first closes after two
        waits), no rate to compare with; it goes by the idle rule. So it
        comes only once the trainer waited in FIRST_WAITS windows in a
        row: one window can read as a stall in a trainer-bound run (a
        20 ms hiccup is 5% of a 0.4 s window; bench-scale's text run at
        50 ms steps got a worker so, 8 s into its first epoch, and held
        it idle through the next).
      - down, slowly: after DOWN_SECONDS of windows in a row of idle
        workers, one fewer. That is a trial too: if the trainer then
        waits and the files/s fell by GAIN, the worker comes back and the
        count below is not tried again for a hold (as above).
      - bounds: min_workers to max_workers, and no more than `most` (what
        the cluster can place now: its free CPUs) when adding.
      - none when the trainer, not the input, is the bottleneck: a trainer
        that never waits never gets a worker beyond min_workers.
      - a start or stop under way (`ready` != the target: a worker still
        importing TensorFlow, or a dead one being replaced) holds the count
        and measures nothing.
      - nor does an epoch's ramp (`ramp`: a window begun before the
        workers' first batch of the epoch): each epoch's job reaches the
        workers 0.75-1.4 s after it starts (bench-scale), whatever their
        count, and a 2 s trial that held a ramp read as no gain (a run
        stayed at 1 worker where 2-4 gave 2x); nor, while workers serve,
        a governor's probe (`probe`: the window ran a neighbouring arm,
        not the one the governor settled on; a probe of a worse cap in a
        trial read as no gain).
    min_workers == max_workers: a fixed count, no rule runs.
    The clock is the windows' seconds; nothing here reads time, so the
    rules are tested with made-up windows (tests/python/test_offload_autoscaler.py)."""

    GAIN = 1.05
    FIRST_WAITS = 2
    SETTLE_SECONDS, MEASURE_SECONDS, MEASURE_MOST_SECONDS = 0.25, 2.0, 6.0
    DOWN_SECONDS = 5.0
    HOLD_FIRST, HOLD_MOST = 10.0, 160.0

    def __init__(self, min_workers, max_workers):
        if not 0 <= min_workers <= max_workers or max_workers < 1:
            raise ValueError(f"need 0 <= min_workers <= max_workers and max_workers >= 1, "
                             f"got min_workers={min_workers}, max_workers={max_workers}")
        self.min_workers, self.max_workers = int(min_workers), int(max_workers)
        self.target = self.min_workers if self.min_workers < self.max_workers else self.max_workers
        self.rates = {}       # count -> its files/s over its last MEASURE_SECONDS
        self.recent = Windows(self.MEASURE_SECONDS)  # the count's latest windows
        self.trial = None     # a change being judged: _Trial
        self.idle_seconds = 0.0
        self.seconds = 0.0    # of all windows: the holds' clock
        self.holds = {}       # count -> (until seconds, hold length): not tried till then
        self.added = False    # a worker was added once
        self.waits_in_row = 0  # measured windows in a row the trainer waited in

    @property
    def fixed(self):
        return self.min_workers == self.max_workers

    def _held(self, count):
        until, _ = self.holds.get(count, (0, 0))
        return self.seconds < until

    def _hold(self, count):
        _, length = self.holds.get(count, (0, 0))
        length = self.HOLD_FIRST if not length else min(self.HOLD_MOST, 2 * length)
        self.holds[count] = (self.seconds + length, length)

    def window(self, work, seconds, waited, idle, ready, most=None, ramp=False,
               probe=False):
        """A governor window closed (files of `work` delivered in `seconds`,
        the trainer `waited` for input); returns the target worker count.
        `ready`: workers serving now; `most`: a callable, how many could serve
        at most now (the cluster's free CPUs; None: max_workers), called only
        when a worker is missing or would be added (for Ray it asks the
        cluster); `ramp`: the window began before the epoch's first batch from
        the workers; `probe`: it ran a governor's probe."""
        seconds = max(0.0, seconds)
        self.seconds += seconds
        if self.fixed:
            return self.target
        if most is not None and ready < self.target:
            room = max(most(), self.min_workers)
            if self.target > room:  # the cluster lost room (a node gone): what it holds now
                self._set(room)
        if ready != self.target or ((ramp or probe) and ready):
            # A start, a stop, a job under way or a probe: hold, measure nothing.
            return self.target
        self.waits_in_row = self.waits_in_row + 1 if waited else 0
        if self.trial is not None:
            step, target = self.trial.step, self.target
            self._judge(work, seconds, waited)
            if self.trial is not None or step < 0 or self.target != target:
                return self.target
            # An addition kept: the next one in this window if the trainer waits.
        if seconds > 0:  # a clock that did not move says nothing
            self._measure(work, seconds)
        self.idle_seconds = self.idle_seconds + seconds if idle else 0.0
        if (waited and (self.added or self.waits_in_row >= self.FIRST_WAITS)
                and self.target < self.max_workers and not self._held(self.target + 1)
                and (most is None or self.target < most())):
            self._change(+1)
        elif (self.idle_seconds >= self.DOWN_SECONDS and self.target > self.min_workers
              and not self._held(self.target - 1)):
            self._change(-1)
        return self.target

    def _measure(self, work, seconds):
        """The count's rate: over its latest windows once they cover
        MEASURE_SECONDS (till then, what its trial measured)."""
        self.recent.add(work, seconds)
        if self.recent.seconds >= self.MEASURE_SECONDS or self.target not in self.rates:
            self.rates[self.target] = self.recent.rate

    def _set(self, target):
        self.target, self.trial = target, None
        self.recent.clear()

    def _change(self, step):
        first = step > 0 and not self.added
        self.added |= step > 0
        before = None if first else self.rates.get(self.target)
        self._set(self.target + step)
        self.trial = _Trial(step, before)
        self.idle_seconds = 0.0

    def _judge(self, work, seconds, waited):
        trial = self.trial
        if trial.settled < self.SETTLE_SECONDS:
            trial.settled += seconds
            return
        trial.windows.add(work, seconds)
        trial.seconds += seconds
        trial.waited |= bool(waited)
        if trial.seconds < self.MEASURE_SECONDS:
            return
        after = trial.windows.rate  # its latest MEASURE_SECONDS
        if (trial.step > 0 and trial.before is not None
                and after < self.GAIN * trial.before
                and trial.seconds < self.MEASURE_MOST_SECONDS):
            return  # short of GAIN: the worker may not have joined yet
        self.trial = None
        self.rates[self.target] = after
        if trial.before is None:
            return  # the first worker: kept unjudged
        if trial.step > 0 and after < self.GAIN * trial.before:
            # It gave nothing: back, and this count is held.
            self._hold(self.target)
            self._set(self.target - 1)
        elif trial.step < 0 and trial.waited and after * self.GAIN < trial.before:
            # Removing it cost files/s while the trainer waits: back.
            self._hold(self.target)
            self._set(self.target + 1)


class _Trial:
    """A count change being judged: its direction, the files/s before, and
    the latest windows since (SETTLE_SECONDS of them skipped; `seconds`:
    all measured)."""

    def __init__(self, step, before):
        self.step, self.before = step, before
        self.settled, self.seconds, self.waited = 0.0, 0.0, False
        self.windows = Windows(Autoscaler.MEASURE_SECONDS)
