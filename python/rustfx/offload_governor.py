"""Where rustfx.offload's batches come from, decided window by window:
the governor. Its rules are written here only, in `Governor`'s doc (the
module doc of rustfx.offload says how it fits)."""

import time

import numpy as np

from rustfx.pipeline import NOT_INPUT_BOUND_SECONDS, STALL_THRESHOLD

# The trainer "waits" in a window when it spent this share of it waiting
# for its batches (the stall profile's threshold): the governor tries the
# workers, and the autoscaler adds one, only then. Not at any one slow
# next(): a trainer-bound run (50 ms a step, hashed n-grams) had 132-162
# next() calls an epoch over 50 us, and was given a worker and probes.
# An epoch's first batch waits for its pipeline to start (a new iterator,
# whatever the workers: each epoch's first window of that run read as a
# stall, and a worker came): its wait is left out of the share.
WAIT_SHARE = STALL_THRESHOLD

# What a window's rate counts: its files' work, each file's bytes read
# plus FILE_BYTES for the file itself, not its files. PE files' sizes
# (124 kB to 2.3 MB, 10th to 90th percentile) swing one window's files/s
# by 11% (its spread over windows of 8 batches, 0.8 s, on one arm; 17%
# over 4); weighed so, by 3-4% (6-7%) with ember_features, whose cost per
# file is about that of 320-430 kB more of a file (fitted), and by 2%
# where files/s swung by 4-6% with byte_histogram. Bytes alone: 5-6%
# (7-9%) and 3%. Small files (text) weigh about alike: their rate is
# their files/s. So the governor's probes and the autoscaler's trials
# compare arms and counts, not the files that fell in their windows.
FILE_BYTES = 256 << 10


def work(sizes, max_bytes=None):
    """The work of files of `sizes` bytes read up to `max_bytes` (read_files'
    bound: 0 reads nothing; None: all)."""
    sizes = np.asarray(sizes, np.float64)
    if max_bytes is not None:
        sizes = np.minimum(sizes, max_bytes)
    return float(sizes.sum()) + FILE_BYTES * len(sizes)


# The policies rustfx.offload's `remote=` takes besides a number (a local
# cap from 0 to 1, kept): the first lets the governor choose, the others
# fix the cap (Governor.FIXED).
POLICIES = ("when_waiting", "always", "only")


def check_policy(policy):
    """Raises ValueError unless `policy` is one of POLICIES or a local cap
    from 0 to 1."""
    if not (policy in POLICIES or (isinstance(policy, (int, float))
                                   and not isinstance(policy, bool) and 0 <= policy <= 1)):
        raise ValueError(f"remote must be one of {POLICIES} or a local cap from 0 to 1, "
                         f"got {policy!r}")


class Windows:
    """Windows' work (their files': FILE_BYTES) and seconds, and their
    rate: work over seconds summed, never a mean of the windows' own
    rates (a window holds a few batches). With `keep`, only the
    latest windows that cover at least `keep` seconds are kept. The
    governor's arms and the autoscaler's counts both measure so."""

    def __init__(self, keep=None):
        self.keep, self.items = keep, []

    def add(self, work, seconds):
        self.items.append((work, seconds))
        if self.keep is not None:
            while len(self.items) > 1 and \
                    sum(s for _, s in self.items[1:]) >= self.keep:
                self.items.pop(0)

    def clear(self):
        self.items.clear()

    @property
    def seconds(self):
        return sum(s for _, s in self.items)

    @property
    def rate(self):
        seconds = self.seconds
        return sum(f for f, _ in self.items) / seconds if seconds > 0 else 0.0


class Governor:
    """Where the trainer's batches come from, decided window by window (a
    window: at least `window` batches, offload's `patience`, and
    WINDOW_SECONDS). The choices form a line, ARMS:
      - None (LOCAL_ONLY): the local sweep only (the workers' batches are
        not taken, their client stops fetching);
      - a cap c from 1 (UNCAPPED) down to 0: a worker's batch whenever one
        is queued, and the local sweep's for at most a share c of the
        batches; over it, the trainer waits for the workers instead. c = 1
        takes both sides as fast as they come; c = 0 pauses the local
        sweep (not pulled, its pipeline idles once its buffer is full). A
        cheap FX's local threads can cost the trainer's CPU more than
        their batches give (shipping costs it too): the cap is how much
        the local side may take of it.
    The rules:
      - when: the workers are tried only once the trainer waited in a
        local window, WAIT_SHARE of its time or more (a next() over 50 us,
        rustfx.pipeline.NOT_INPUT_BOUND_SECONDS, counts as a wait in the
        report; two of them, if WAIT_SHARE of the time, close the first
        window early); a local window in which it waited less stays local;
      - how much: hill climbing on the measured rate, its files' work a
        second (FILE_BYTES: files weighed by their bytes). An arm's rate is
        its work over its seconds summed over its latest windows,
        RATE_SECONDS of them, never one window's: a window holds a few
        batches, and this machine kind's speed (and what is left of the
        files' sizes) moves its rate by more than an arm's gain. Now and
        then the next windows run a neighbouring arm (the one on each side
        in turn), a probe of PROBE_SECONDS (its own windows only: the arm's
        older ones are stale): after PROBE_FIRST windows, then twice as long
        each time the probe loses (up to PROBE_MOST windows, and at most
        PROBE_MOST_SECONDS of them: slow windows, 8 batches at a few seconds
        each, had kept a wrong arm for minutes). A probe that wins by GAIN
        is kept, and the next arm that way is tried at once. Ties go to the
        local side: the local sweep alone is left only for 5% more
        (LEAVE_LOCAL; Cachew's rule of thumb: keep a worker while it helps
        by 7%). So with a cheap FX, whose workers cost the trainer more than
        they save, they stay idle;
      - epochs: what was learned (each arm's rate, the arm) is kept from
        epoch to epoch; a new epoch starts on the arm the last ended on,
        and a probe under way and the probes' count-down go on
        (`new_epoch`).
        Its ramp (a window begun before the workers' first batch of the
        epoch, `ramp` of `batch`) on a workers' arm is neither recorded
        nor counted in a probe: each epoch's job reaches the workers
        0.75-1.4 s after it starts (bench-scale), while the local side
        runs uncapped, so every arm's ramp reads as the local sweep's
        rate and a capped arm's probe there won by it (one slow worker
        was held on cap 0.65 at 0.72x the local sweep alone);
      - one experiment at a time: while the launcher's autoscaler judges
        a worker count (`judging`), no probe starts, and the probes'
        count-down waits (at most PROBE_MOST_SECONDS of windows; a probe
        that won has its next tried once the trial is over): the
        autoscaler measures no probe window, so a probe in its trial
        only made the trial longer (a climb log: 1-3 s a count), and a
        count is judged on the arm the governor settled on;
    remote="always" keeps the cap at 1, remote="only" at 0, a number at
    that number (POLICIES, check_policy); a stall or the workers' end is
    handled as for those (`stalled`: the next window runs UNCAPPED;
    `gone`: local for the rest of the epoch)."""

    ARMS = (None, 1.0, 0.8, 0.65, 0.5, 0.35, 0.2, 0.0)
    # The two arms the rules name, as indices into ARMS (`arm`, `rates`):
    LOCAL_ONLY = 0  # None: the local sweep only, the workers' client idle
    UNCAPPED = 1    # cap 1: both sides as fast as they come
    FIXED = {"always": 1.0, "only": 0.0}
    PROBE_FIRST, PROBE_MOST = 4, 64
    PROBE_MOST_SECONDS = 10.0
    GAIN, LEAVE_LOCAL = 1.05, 1.05
    WINDOW_SECONDS = 0.25
    RATE_SECONDS, PROBE_SECONDS = 2.0, 1.0

    def __init__(self, policy, window, now=None):
        self.window = max(1, window)
        # A cap the user chose (remote="always", "only" or a number): kept.
        self.fixed = self.FIXED.get(policy, None if isinstance(policy, str) else float(policy))
        self.arm, self.stalled_window = self.LOCAL_ONLY, False
        self.rates = [None] * len(self.ARMS)
        self.recent = [Windows(self.RATE_SECONDS) for _ in self.ARMS]  # each arm's latest
        self.probe_windows = Windows()          # the running probe's
        self.since_probe = 0.0                  # seconds of windows since the last
        self.interval, self.until_probe = self.PROBE_FIRST, self.PROBE_FIRST
        self.probe_from, self.step = None, 1
        self.workers_gone = False
        self.judged, self.held_seconds = False, 0.0  # see judging
        self.epoch_batches = 0                  # this epoch's so far
        self.last_window = (0, 0.0, 0)  # the last closed window's files, seconds, waits
        self.last_work = 0.0        # and its files' work
        self.last_wait_share = 0.0  # its share of seconds the trainer waited for input
        self.last_stalled = False   # that share was WAIT_SHARE or more: the trainer waited
        self.last_ramp = False      # it was an epoch's ramp on a workers' arm
        self.last_probe = False     # it ran a probe's arm, not the one settled on
        self._reset(time.perf_counter() if now is None else now)

    @property
    def local_cap(self):
        """The local sweep's most share of the batches, None: local only."""
        if self.workers_gone:
            return None
        if self.stalled_window:
            return 1.0
        return self.ARMS[self.arm] if self.fixed is None else self.fixed

    @staticmethod
    def name(cap):
        return "local" if cap is None else f"{cap:.2f}"

    def _reset(self, now):
        self.files, self.work, self.batches, self.waited, self.since = 0, 0.0, 0, 0, now
        self.wait_seconds, self.ramp = 0.0, False

    def _wins(self, arm, over):
        """Whether `arm`'s rate beats `over`'s: by GAIN, and by LEAVE_LOCAL
        to leave the local sweep alone (by less to go back to it)."""
        a, b = self.rates[arm], self.rates[over]
        if a is None or b is None:
            return a is not None
        if over == self.LOCAL_ONLY:
            need = self.LEAVE_LOCAL
        elif arm == self.LOCAL_ONLY:
            need = 1 / self.LEAVE_LOCAL
        else:
            need = self.GAIN
        return a >= need * b

    def batch(self, files, wait_seconds, now, ramp=False, work=None):
        """Counts a delivered batch the trainer waited `wait_seconds` for;
        True when a window closed (the arm may then have changed). `ramp`:
        the window began before the workers' first batch of the epoch;
        `work`: its files' (the module's `work`; None: its files)."""
        self.files += files
        self.work += files if work is None else work
        self.batches += 1
        self.waited += wait_seconds > NOT_INPUT_BOUND_SECONDS
        if self.epoch_batches:  # the first: the epoch's pipeline starting
            self.wait_seconds += wait_seconds
        self.epoch_batches += 1
        self.ramp |= bool(ramp)
        # Two waits close a local window early while the workers are untried,
        # if they are a stall (WAIT_SHARE): a trainer-bound run's hiccups had
        # closed windows of 2 batches, where one 5 ms wait read as a stall.
        early = (self.local_cap is None and self.rates[self.UNCAPPED] is None
                 and self.waited >= 2 and self.wait_seconds >= WAIT_SHARE * (now - self.since))
        if not early and (self.batches < self.window
                          or now - self.since < self.WINDOW_SECONDS):
            return False
        self._close(now)
        return True

    def stalled(self, now):
        """The workers gave no batch in a while with the local sweep
        capped: the window closes as it stands and the next runs with the
        cap at 1 (then, with a cap the user chose, that cap again)."""
        self._close(now, instead=self.UNCAPPED)

    def gone(self, now):
        """The workers' job ended (or failed): local for the rest of the
        epoch (the arm is kept for the next)."""
        if not self.workers_gone and self.arm != self.LOCAL_ONLY:
            self._close(now)
        self.workers_gone = True

    def workers_changed(self, more):
        """The count of workers serving changed (rustfx.workers): the
        workers' arms' rates are stale and forgotten, and the next probe
        comes after PROBE_FIRST windows, towards a lower cap with `more`
        (more of the batches can be theirs), a higher one with fewer (an
        autoscaled run had sat on cap 1 through its count's changes, its
        probes doubled apart, at 0.7x of a fixed count that found 0.8);
        with `more`, a governor on the local sweep only tries them in the
        next window."""
        self.rates[self.LOCAL_ONLY + 1:] = [None] * (len(self.ARMS) - 1)
        for windows in self.recent[self.LOCAL_ONLY + 1:]:
            windows.clear()
        if self.fixed is None:
            self.step = 1 if more else -1
            self.interval = self.until_probe = self.PROBE_FIRST
            self.since_probe = 0.0
        if more and self.fixed is None and self.arm == self.LOCAL_ONLY \
                and self.probe_from is None:
            self.probe_from, self.arm = self.LOCAL_ONLY, self.UNCAPPED
            self.probe_windows.clear()

    def judging(self, on):
        """Whether the autoscaler is judging a worker count (its trial):
        while it is, no probe starts (for PROBE_MOST_SECONDS of windows at
        most: a trial that long is stuck, the arm is measured again)."""
        self.judged = bool(on)
        if not on:
            self.held_seconds = 0.0

    def _holding(self):
        return self.judged and self.held_seconds < self.PROBE_MOST_SECONDS

    def new_epoch(self, now):
        """A new epoch starts on the arm the last ended on (its rates
        kept): its workers' job is new. A probe the last epoch's end cut
        short goes on, and the probes' count-down goes on: epochs of fewer
        windows than a probe takes (1-3 s, a few hundred PE files) had
        sent each probe back and counted down from PROBE_FIRST again, and
        a governor sat on the local sweep alone at half the files/s of
        one worker's arm."""
        self.workers_gone = False
        self.epoch_batches = 0
        self._reset(now)

    def _close(self, now, instead=None):
        seconds = now - self.since
        self.last_window = (self.files, seconds, self.waited)
        self.last_work = self.work  # what the rates count (FILE_BYTES says why)
        self.last_wait_share = self.wait_seconds / seconds if seconds > 0 else 0.0
        self.last_stalled = self.last_wait_share >= WAIT_SHARE  # the autoscaler's "waited" too
        # Its ramp on a workers' arm, for the governor and the autoscaler;
        # a probe's window, for the autoscaler (it measures counts on the
        # arm settled on: a probe of a worse arm in a trial read as no gain).
        self.last_ramp = self.ramp and self.local_cap is not None and instead is None
        self.last_probe = self.probe_from is not None  # (a fixed cap never probes)
        if self.workers_gone:  # local until the epoch ends: nothing to learn
            self._reset(now)
            return
        stalled, self.stalled_window = self.stalled_window, instead is not None
        if self.fixed is not None:
            self._reset(now)
            return
        ramp = self.last_ramp
        if seconds > 0 and self.files and not stalled and not ramp:
            self._record(self.work, seconds)  # a clock that did not move says nothing
        waited = self.last_stalled
        self._reset(now)
        if ramp:
            return  # the job's start, not the arm's rate: the probe or the arm goes on
        if instead is not None:
            self.arm, self.probe_from = instead, None
        elif self.probe_from is not None:
            if self.probe_windows.seconds < self.PROBE_SECONDS:
                return  # the probe goes on
            origin, self.probe_from = self.probe_from, None
            if self._wins(self.arm, origin):  # kept; the next arm that way at once
                self.interval = self.until_probe = self.PROBE_FIRST
                if self._holding():
                    self.until_probe = 1  # once the autoscaler's trial is over
                else:
                    self._probe()
            else:  # back, and the other way next time
                self.arm, self.step = origin, -self.step
                self.interval = min(self.PROBE_MOST, self.interval * 2)
                self.until_probe = self.interval
                self.since_probe = 0.0
        elif self.arm == self.LOCAL_ONLY and not waited:
            pass  # the trainer never waited: nothing to gain
        else:
            untried = self.arm == self.LOCAL_ONLY and self.rates[self.UNCAPPED] is None
            if self._holding() and not untried:
                self.held_seconds += seconds  # the autoscaler's trial first
                return
            self.until_probe -= 1
            self.since_probe += seconds
            if self.until_probe <= 0 or untried or self.since_probe >= self.PROBE_MOST_SECONDS:
                self._probe()

    def _probe(self):
        """Runs the next window on a neighbouring arm."""
        if self.arm == self.LOCAL_ONLY:
            self.step = 1  # the only way from the local sweep: towards the workers
        target = self.arm + self.step
        if not 0 <= target < len(self.ARMS):
            self.step = -self.step
            target = self.arm + self.step
        self.probe_from, self.arm = self.arm, target
        self.probe_windows.clear()
        self.since_probe = 0.0
        self.recent[target].clear()  # its rate: this probe's

    def _record(self, work, seconds):
        """A window of the arm: its rate is over its latest RATE_SECONDS
        of windows (a probe's: over the probe's)."""
        if self.probe_from is not None:
            self.probe_windows.add(work, seconds)
        self.recent[self.arm].add(work, seconds)
        self.rates[self.arm] = self.recent[self.arm].rate
