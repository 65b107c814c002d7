//! The threads a call of [`FeatureCache::extract_files_on`] runs on: a
//! host with a pool of its own (the op library's, which yields to other
//! running calls) implements [`FileThreads`]; [`RayonThreads`] is rayon's
//! pool, [`CallingThread`] the caller alone.
//!
//! [`FeatureCache::extract_files_on`]: crate::FeatureCache::extract_files_on

/// Where a call's files are read, looked up and extracted: `run` starts
/// the call's loop on each of its threads. Every loop takes files off one
/// shared counter until none is left, so a loop that starts after the
/// others took every file returns at once, and one loop alone does all.
pub trait FileThreads: Sync {
    /// Runs `work` on each of at most as many threads as it has (the
    /// calling one may be one of them), and returns when every run has
    /// returned. `work` does not panic.
    fn run(&self, work: &(dyn Fn() + Sync));
}

/// Rayon's current pool, with the calling thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct RayonThreads;

impl FileThreads for RayonThreads {
    fn run(&self, work: &(dyn Fn() + Sync)) {
        let helpers = rayon::current_num_threads().saturating_sub(1);
        rayon::in_place_scope(|scope| {
            for _ in 0..helpers {
                scope.spawn(|_| work());
            }
            work();
        });
    }
}

/// The calling thread alone.
#[derive(Clone, Copy, Debug, Default)]
pub struct CallingThread;

impl FileThreads for CallingThread {
    fn run(&self, work: &(dyn Fn() + Sync)) {
        work();
    }
}
