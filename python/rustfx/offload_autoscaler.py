"""How many workers rustfx.offload's launcher keeps serving: the
autoscaler. Its rules are written here only, in `Autoscaler`'s doc
(rustfx.workers starts and stops the workers it asks for; docs/stalls.md,
"Launchers", says how it fits)."""


class Autoscaler:
    """The worker count, decided at each governor window (rustfx.offload's
    Governor; a window is at least `patience` batches and 0.25 s) from
    what that window measured: the delivered files/s, whether the trainer
    waited for a batch, and whether the workers sat idle (their batches
    not wanted: the governor on the local sweep only, or their queue
    full). The rules:
      - up, fast: while the trainer waits, one more worker, each window
        (the first as soon as it waits). Each addition is a trial: once
        the new worker serves (`ready` reaches the target), SETTLE windows
        pass, then MEASURE windows' mean files/s is compared with the
        count's before. It is kept if it raised the files/s by GAIN, and
        the next is tried at once if the trainer still waits; else it gave
        nothing: it is removed, and the count it reached is not tried
        again for HOLD_FIRST windows (twice as long each time it fails
        again, up to HOLD_MOST). The first worker of the Offload is kept
        unjudged: the windows before it are the pipeline warming up (the
        first closes after two waits), no rate to compare with; it goes
        by the idle rule.
      - down, slowly: after DOWN_WINDOWS windows in a row of idle workers,
        one fewer. That is a trial too: if the trainer then waits and the
        files/s fell by GAIN, the worker comes back and the count below is
        not tried again for a hold (as above).
      - bounds: min_workers to max_workers, and no more than `most` (what
        the cluster can place now: its free CPUs) when adding.
      - none when the trainer, not the input, is the bottleneck: a trainer
        that never waits never gets a worker beyond min_workers.
      - a start or stop under way (`ready` != the target: a worker still
        importing TensorFlow, or a dead one being replaced) holds the count
        and measures nothing.
    min_workers == max_workers: a fixed count, no rule runs.
    The clock is the caller's (`now`, seconds); nothing here reads time, so
    the rules are tested with a fake one (tests/python/test_offload_autoscaler.py)."""

    GAIN = 1.05
    SETTLE, MEASURE = 1, 2
    DOWN_WINDOWS = 6
    HOLD_FIRST, HOLD_MOST = 16, 128

    def __init__(self, min_workers, max_workers):
        if not 0 <= min_workers <= max_workers or max_workers < 1:
            raise ValueError(f"need 0 <= min_workers <= max_workers and max_workers >= 1, "
                             f"got min_workers={min_workers}, max_workers={max_workers}")
        self.min_workers, self.max_workers = int(min_workers), int(max_workers)
        self.target = self.min_workers if self.min_workers < self.max_workers else self.max_workers
        self.rates = {}       # count -> its files/s (a running mean)
        self.trial = None     # a change being judged: _Trial
        self.idle_windows = 0
        self.windows = 0
        self.holds = {}       # count -> (until window, hold length): not tried till then
        self.added = False    # a worker was added once

    @property
    def fixed(self):
        return self.min_workers == self.max_workers

    def _held(self, count):
        until, _ = self.holds.get(count, (0, 0))
        return self.windows < until

    def _hold(self, count):
        _, length = self.holds.get(count, (0, 0))
        length = self.HOLD_FIRST if not length else min(self.HOLD_MOST, 2 * length)
        self.holds[count] = (self.windows + length, length)

    def window(self, files_per_second, waited, idle, ready, most=None):
        """A governor window closed; returns the target worker count.
        `ready`: workers serving now; `most`: how many could serve at most
        now (the cluster's free CPUs; None: max_workers)."""
        self.windows += 1
        if self.fixed:
            return self.target
        if most is not None and self.target > max(most, self.min_workers) and ready < self.target:
            # The cluster lost room (a node gone): what it can hold now.
            self.target, self.trial = max(most, self.min_workers), None
        if ready != self.target:
            return self.target  # a start or stop under way: hold, measure nothing
        if self.trial is not None:
            self._judge(files_per_second, waited)
            return self.target
        old = self.rates.get(self.target)
        self.rates[self.target] = (files_per_second if old is None
                                   else 0.5 * (old + files_per_second))
        self.idle_windows = self.idle_windows + 1 if idle else 0
        ceiling = self.max_workers if most is None else min(self.max_workers, most)
        if waited and self.target < ceiling and not self._held(self.target + 1):
            self._change(+1)
        elif (self.idle_windows >= self.DOWN_WINDOWS and self.target > self.min_workers
              and not self._held(self.target - 1)):
            self._change(-1)
        return self.target

    def _change(self, step):
        first = step > 0 and not self.added
        self.added |= step > 0
        self.trial = _Trial(step, None if first else self.rates[self.target])
        self.target += step
        self.idle_windows = 0

    def _judge(self, files_per_second, waited):
        trial = self.trial
        trial.seen += 1
        if trial.seen <= self.SETTLE:
            return
        trial.samples.append(files_per_second)
        if len(trial.samples) < self.MEASURE:
            return
        after = sum(trial.samples) / len(trial.samples)
        self.trial = None
        self.rates[self.target] = after
        if trial.before is None:
            return  # the first worker: kept unjudged
        if trial.step > 0 and after < self.GAIN * trial.before:
            # It gave nothing: back, and this count is held.
            self._hold(self.target)
            self.target -= 1
        elif trial.step < 0 and waited and after * self.GAIN < trial.before:
            # Removing it cost files/s while the trainer waits: back.
            self._hold(self.target)
            self.target += 1


class _Trial:
    """A count change being judged: its direction and the files/s before."""

    def __init__(self, step, before):
        self.step, self.before = step, before
        self.seen, self.samples = 0, []
