//! The process's open caches, one per directory and options: what the op
//! library's kernels use (src/cache_ops.rs at the top level), so every
//! kernel and every tf.data thread of a process shares one handle, one
//! writer and its counters, and a kernel holds no state of its own.
//!
//! A cache stays open until the process ends: [`flush_shared`] commits
//! what their writers hold and checkpoints their WAL (the op library calls
//! it at exit), so a cache a training run filled is whole in its database
//! file once the run ends.

use crate::{CacheOptions, FeatureCache};
use rustfx::{Error, ErrorKind, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

type Registry = Mutex<HashMap<(PathBuf, CacheOptions), Arc<FeatureCache>>>;

fn registry() -> &'static Registry {
    static CACHES: OnceLock<Registry> = OnceLock::new();
    CACHES.get_or_init(Registry::default)
}

/// The process's cache in `dir` with `options`, opened on first use
/// ([`FeatureCache::open`]: created if missing when `create`, else
/// `NotFound` for a missing directory). A failed open is not remembered:
/// the next call tries again.
pub fn shared(dir: &Path, options: CacheOptions, create: bool) -> Result<Arc<FeatureCache>> {
    let key = (dir.to_path_buf(), options);
    let mut caches = registry().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(cache) = caches.get(&key) {
        return Ok(cache.clone());
    }
    options.check()?;
    if !create && !dir.is_dir() {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("feature cache {}: no such directory", dir.display()),
        ));
    }
    let cache = Arc::new(FeatureCache::open(dir, options)?);
    caches.insert(key, cache.clone());
    Ok(cache)
}

/// Commits what every shared cache's writer holds, and checkpoints each
/// ([`FeatureCache::checkpoint`]: never waits for another process).
pub fn flush_shared() {
    let caches: Vec<Arc<FeatureCache>> = registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .cloned()
        .collect();
    for cache in caches {
        let _ = cache.checkpoint();
    }
}
