//! Read buffers kept by each thread for the next files it reads
//! (src/files.rs): a fresh buffer for every file is fresh pages from the
//! system, faulted in and zeroed (1-2% of a first epoch of megabyte PE
//! files), which uncached extraction, reading into one buffer per thread,
//! never pays.

use rustfx::read::read_file_into;
use rustfx::Result;
use std::cell::RefCell;

/// A buffer larger than this is freed after use, not kept.
const KEPT_BUFFER_BYTES: usize = 4 << 20;
/// At most this many buffers kept per thread (a group's files,
/// files.rs' GROUP_FILES)...
const KEPT_BUFFERS: usize = crate::files::GROUP_FILES;
/// ...and at most this many bytes of them.
const KEPT_BYTES: usize = 8 << 20;

thread_local! {
    static KEPT: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// The file at `path` read by the core's rules (`read_file`), into a
/// buffer this thread kept if it has one.
pub(crate) fn read_reusing(path: &[u8], max_bytes: u64) -> Result<Vec<u8>> {
    let mut buffer = KEPT
        .with(|kept| kept.borrow_mut().pop())
        .unwrap_or_default();
    match read_file_into(path, max_bytes, &mut buffer) {
        Ok(()) => Ok(buffer),
        Err(e) => {
            reuse(Some(buffer));
            Err(e)
        }
    }
}

/// Keeps `buffer` for this thread's next read, unless it is large or the
/// thread keeps enough.
pub(crate) fn reuse(buffer: Option<Vec<u8>>) {
    let Some(buffer) = buffer else { return };
    if buffer.capacity() > KEPT_BUFFER_BYTES {
        return;
    }
    KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        let bytes: usize = kept.iter().map(Vec::capacity).sum();
        if kept.len() < KEPT_BUFFERS && bytes + buffer.capacity() <= KEPT_BYTES {
            kept.push(buffer);
        }
    });
}
