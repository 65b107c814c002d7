//! The threads of the TF op library: TensorFlow's C kernel API has no
//! thread pool, so a batch split into chunks runs on a rayon pool of ours.
//!
//! How many threads one op call uses (BUILD_NOTES.md, "One op library for
//! every TensorFlow"):
//! - `RUSTFX_NUM_THREADS`, if set, sizes the pool (and so caps every call);
//!   else the pool has a thread per core the process may use. rustfx's
//!   Python functions set it from
//!   `tf.config.threading.get_intra_op_parallelism_threads()` when that is
//!   not 0 (a kernel cannot read its session's ConfigProto safely: TF's
//!   constant folding runs kernels with no function library, where
//!   `TF_GetSerializedConfigProto` dereferences a null pointer);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

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
}
