//! The threads of the TF op library: TensorFlow's C kernel API has no
//! thread pool, so a batch split into chunks runs on a rayon pool of ours.
//!
//! How many threads one op call uses (BUILD_NOTES.md, "Threads"):
//! - `RUSTFX_NUM_THREADS`, if set, sizes the pool (and so caps every call);
//!   else the pool has a thread per core the process may use;
//! - a session's `intra_op_parallelism_threads` (what
//!   `tf.config.threading.set_intra_op_parallelism_threads` sets), when it
//!   is not 0, caps each call of its kernels;
//! - a call that starts while others run takes only the threads they
//!   leave: under tf.data's `num_parallel_calls` the batches already keep
//!   every core busy, so the calls run on their own threads and the pool
//!   stays idle instead of oversubscribing the cores.
//!
//! The calling thread runs chunks too; chunks are taken off an atomic
//! counter as threads free up, and every chunk writes its own part of the
//! output, so rows stay in input order and the outputs are the same bits
//! on any number of threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The environment variable that sets the number of threads.
pub const NUM_THREADS_ENV: &str = "RUSTFX_NUM_THREADS";

/// Threads a call may use when nothing else says: `RUSTFX_NUM_THREADS` if
/// it is a positive integer, else the cores this process may run on.
pub fn default_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::env::var(NUM_THREADS_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

/// The helpers' pool: one thread fewer than [`default_threads`], since the
/// calling thread is a runner too. `None` when one thread is all there is,
/// or when the pool cannot be started (then calls run on their own thread).
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let helpers = default_threads().saturating_sub(1);
        if helpers == 0 {
            return None;
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(helpers)
            .thread_name(|i| format!("rustfx-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// The threads a kernel's calls may use: the session's
/// `intra_op_parallelism_threads` (0: not set), capped by the pool.
pub fn call_threads(intra_op_threads: usize) -> usize {
    let all = default_threads();
    if intra_op_threads == 0 {
        all
    } else {
        intra_op_threads.min(all)
    }
}

/// Op calls running chunks right now, in this process.
static CALLS_RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Runs `work(c)` for every chunk `c < chunks`, on at most `threads`
/// threads (the caller's included), fewer when other calls are running.
/// Returns when every chunk is done. `work` must not panic (the bridge's
/// callers catch their errors).
pub fn run_chunks(chunks: usize, threads: usize, work: &(dyn Fn(usize) + Sync)) {
    let others = CALLS_RUNNING.fetch_add(1, Ordering::Relaxed);
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            CALLS_RUNNING.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let _leave = Leave;
    let runners = threads.saturating_sub(others).max(1).min(chunks);
    let next = AtomicUsize::new(0);
    let run = || loop {
        let c = next.fetch_add(1, Ordering::Relaxed);
        if c >= chunks {
            break;
        }
        work(c);
    };
    match pool() {
        Some(pool) if runners > 1 => pool.in_place_scope(|scope| {
            for _ in 1..runners {
                // A helper that starts after the chunks are gone returns at
                // once.
                scope.spawn(|_| run());
            }
            run();
        }),
        _ => run(),
    }
}

/// `intra_op_parallelism_threads` (field 2) of a serialized
/// `tensorflow.ConfigProto`, 0 when it is absent or the bytes are not a
/// message.
pub fn intra_op_threads(config_proto: &[u8]) -> usize {
    let threads = crate::wire::fields(config_proto)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(field, value)| match value {
            crate::wire::Value::Varint(n) if field == 2 => Some(n),
            _ => None,
        })
        .next_back()
        .unwrap_or(0);
    // An int32 field: a negative value is sign-extended to 64 bits.
    usize::try_from(threads)
        .ok()
        .filter(|&n| n <= i32::MAX as usize)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn reads_intra_op_threads_among_other_fields() {
        // device_count {"CPU": 1} (field 1, a map entry), intra_op 3
        // (field 2), inter_op 5 (field 5), allow_soft_placement (field 7).
        let proto = [
            0x0a, 0x07, 0x0a, 0x03, b'C', b'P', b'U', 0x10, 0x01, 0x10, 0x03, 0x28, 0x05, 0x38,
            0x01,
        ];
        assert_eq!(intra_op_threads(&proto), 3);
        assert_eq!(intra_op_threads(&[0x10, 0x96, 0x01]), 150);
        assert_eq!(intra_op_threads(&[]), 0);
        assert_eq!(intra_op_threads(&[0x28, 0x05]), 0);
        // Truncated, or a negative int32 (10-byte varint): not set.
        assert_eq!(intra_op_threads(&[0x10]), 0);
        assert_eq!(intra_op_threads(&[0x0a, 0x09, 0x01]), 0);
        let mut negative = vec![0x10];
        negative.extend([0xff; 9]);
        negative.push(0x01);
        assert_eq!(intra_op_threads(&negative), 0);
    }

    #[test]
    fn every_chunk_runs_once_on_any_number_of_threads() {
        for threads in [1, 2, 3, 64] {
            for chunks in [0, 1, 2, 7, 100] {
                let seen = Mutex::new(vec![0u32; chunks]);
                run_chunks(chunks, threads, &|c| seen.lock().unwrap()[c] += 1);
                assert!(seen.into_inner().unwrap().iter().all(|&n| n == 1));
            }
        }
    }

    #[test]
    fn a_call_never_gets_more_threads_than_asked() {
        assert_eq!(call_threads(1), 1);
        assert_eq!(call_threads(0), default_threads());
        assert_eq!(call_threads(usize::MAX), default_threads());
    }
}
