//! The cache's writer: one thread per open cache that owns the writing
//! connection and applies queued writes (stored misses, hits' "used"
//! marks, deletions of damaged entries) in batched transactions.
//!
//! So extraction never waits for SQLite's write lock: a lookup enqueues
//! and goes on. The queue holds at most [`QUEUE_BYTES`] of rows; a write
//! that does not fit is dropped and counted (`dropped`): the entry is
//! simply not stored this time, and the lookup of a later epoch misses and
//! queues it again. A write that fails (a full disk, a lock held past the
//! busy timeout, a damaged file) is counted (`errors`), its message kept,
//! and printed once: the cache is an accelerator, extraction goes on.
//! [`Writer::flush`] waits until everything queued before it is applied;
//! dropping the writer applies what is queued and joins the thread. Rows
//! queued and not yet committed are found by the handle's lookups
//! ([`Writer::fill_queued`]), so a handle reads its own writes at once.

use crate::row::StoredRow;
use crate::store::{Store, Write};
use crate::DocKey;
use rustfx::{Error, ErrorKind, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The most bytes of writes queued at once (rows of 10 KB: 6,000 files).
pub const QUEUE_BYTES: u64 = 64 << 20;
/// The most bytes of writes applied in one transaction.
const BATCH_BYTES: u64 = 16 << 20;

enum Message {
    Writes(Vec<Write>, u64),
    /// Answered once everything queued before it is applied: the outcome
    /// of the last transaction.
    Flush(SyncSender<Result<()>>),
}

/// What the writer has done, read by `stats`.
#[derive(Default)]
pub(crate) struct Counters {
    pub evicted: AtomicU64,
    pub dropped: AtomicU64,
    pub errors: AtomicU64,
    /// The first error's message (printed once).
    pub first_error: Mutex<Option<String>>,
}

impl Counters {
    /// Counts `e` and prints it, the first time, to stderr: a cache that
    /// fails is noticed, and training goes on.
    pub fn fault(&self, what: &str, e: &Error) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
        if first.is_none() {
            eprintln!("rustfx: {what}: {e}; extraction goes on without the cache where it fails (said once)");
            *first = Some(e.to_string());
        }
    }
}

/// Rows queued and not yet committed, by (spec digest, key).
type Queued = Mutex<HashMap<([u8; 32], DocKey), Arc<StoredRow>>>;

pub(crate) struct Writer {
    queue: Mutex<Option<Sender<Message>>>,
    pending: Arc<AtomicU64>,
    queued: Arc<Queued>,
    /// The cache's cap: a larger row is never stored, so never listed.
    max_bytes: u64,
    pub counters: Arc<Counters>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Writer {
    /// Starts the thread that applies writes to `store`.
    pub fn start(store: Store, max_bytes: u64, name: &str) -> Result<Writer> {
        let (queue, received) = channel();
        let pending = Arc::new(AtomicU64::new(0));
        let counters = Arc::new(Counters::default());
        let queued: Arc<Queued> = Arc::default();
        let thread = {
            let (pending, counters, queued) = (pending.clone(), counters.clone(), queued.clone());
            std::thread::Builder::new()
                .name("rustfx-cache-writer".into())
                .spawn(move || run(store, max_bytes, received, &pending, &counters, &queued))
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Io,
                        format!("feature cache {name}: cannot start its writer: {e}"),
                    )
                })?
        };
        Ok(Writer {
            queue: Mutex::new(Some(queue)),
            pending,
            queued,
            max_bytes,
            counters,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// A writer with no thread, for a cache that is only read: its
    /// counters count lookups that failed; nothing is ever sent to it.
    pub fn idle() -> Writer {
        Writer {
            queue: Mutex::new(None),
            pending: Arc::default(),
            queued: Arc::default(),
            max_bytes: 0,
            counters: Arc::default(),
            thread: Mutex::new(None),
        }
    }

    fn send(&self, message: Message) -> bool {
        let queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        queue.as_ref().is_some_and(|q| q.send(message).is_ok())
    }

    /// Sends `writes`, their puts' rows listed as queued first.
    fn send_writes(&self, writes: Vec<Write>, bytes: u64) -> bool {
        {
            let mut queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
            for write in &writes {
                match write {
                    Write::Put { spec, key, row } if row.size() <= self.max_bytes => {
                        queued.insert((*spec, *key), row.clone());
                    }
                    _ => {}
                }
            }
        }
        if self.send(Message::Writes(writes, bytes)) {
            return true;
        }
        self.queued
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        false
    }

    /// Fills the `None`s of `rows` (of `keys` under `spec`) with rows
    /// queued and not yet committed.
    pub fn fill_queued(&self, spec: &[u8; 32], keys: &[DocKey], rows: &mut [Option<StoredRow>]) {
        let queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
        if queued.is_empty() {
            return;
        }
        for (key, row) in keys.iter().zip(rows.iter_mut()) {
            if row.is_none() {
                *row = queued.get(&(*spec, *key)).map(|r| StoredRow::clone(r));
            }
        }
    }

    /// Queues `writes` unless the queue is full (then they are dropped and
    /// counted). Never waits.
    pub fn offer(&self, writes: Vec<Write>) {
        if writes.is_empty() {
            return;
        }
        let bytes: u64 = writes.iter().map(Write::bytes).sum();
        let held = self.pending.fetch_add(bytes, Ordering::Relaxed);
        if held + bytes > QUEUE_BYTES && held > 0 {
            self.pending.fetch_sub(bytes, Ordering::Relaxed);
            self.counters
                .dropped
                .fetch_add(writes.len() as u64, Ordering::Relaxed);
            return;
        }
        let count = writes.len() as u64;
        if !self.send_writes(writes, bytes) {
            self.pending.fetch_sub(bytes, Ordering::Relaxed);
            self.counters.dropped.fetch_add(count, Ordering::Relaxed);
        }
    }

    /// Queues `writes` whatever the queue holds and waits until they are
    /// applied: their transaction's error, if it failed.
    pub fn write_now(&self, writes: Vec<Write>) -> Result<()> {
        let bytes: u64 = writes.iter().map(Write::bytes).sum();
        self.pending.fetch_add(bytes, Ordering::Relaxed);
        if !self.send_writes(writes, bytes) {
            self.pending.fetch_sub(bytes, Ordering::Relaxed);
            return Err(stopped());
        }
        self.flush()
    }

    /// Waits until every write queued before this call is applied: the
    /// outcome of the last transaction.
    pub fn flush(&self) -> Result<()> {
        let (done, answer) = sync_channel(1);
        if !self.send(Message::Flush(done)) {
            return Err(stopped());
        }
        answer.recv().unwrap_or_else(|_| Err(stopped()))
    }
}

impl Drop for Writer {
    /// Applies what is queued, then joins the thread.
    fn drop(&mut self) {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(thread) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

fn stopped() -> Error {
    Error::new(
        ErrorKind::Internal,
        "the feature cache's writer has stopped (a bug in rustfx)",
    )
}

/// The writer thread: takes every message queued (up to BATCH_BYTES of
/// writes), applies the writes in one transaction, answers the flushes.
fn run(
    mut store: Store,
    max_bytes: u64,
    received: Receiver<Message>,
    pending: &AtomicU64,
    counters: &Counters,
    queued: &Queued,
) {
    let mut writes: Vec<Write> = Vec::new();
    let mut flushes: Vec<SyncSender<Result<()>>> = Vec::new();
    while let Ok(first) = received.recv() {
        let mut batch_bytes = 0;
        let mut next = Some(first);
        while let Some(message) = next.take() {
            match message {
                Message::Writes(more, bytes) => {
                    pending.fetch_sub(bytes, Ordering::Relaxed);
                    batch_bytes += bytes;
                    writes.extend(more);
                }
                Message::Flush(done) => flushes.push(done),
            }
            if batch_bytes < BATCH_BYTES {
                next = received.try_recv().ok();
            }
        }
        let mut outcome = Ok(());
        if !writes.is_empty() {
            match store.apply(&writes, max_bytes) {
                Ok(evicted) => {
                    counters.evicted.fetch_add(evicted, Ordering::Relaxed);
                }
                Err(e) => {
                    counters.fault("feature cache: cannot store", &e);
                    outcome = Err(e);
                }
            }
            // Committed (or failed): no longer the handle's to read. A row
            // queued again since stays (another Arc).
            let mut queued = queued.lock().unwrap_or_else(|p| p.into_inner());
            for write in writes.drain(..) {
                if let Write::Put { spec, key, row } = write {
                    if queued
                        .get(&(spec, key))
                        .is_some_and(|r| Arc::ptr_eq(r, &row))
                    {
                        queued.remove(&(spec, key));
                    }
                }
            }
        }
        for done in flushes.drain(..) {
            let _ = done.send(outcome.clone());
        }
    }
}
