//! Large output buffers backed by huge pages where the system allows it.
//!
//! A batch's values can run to hundreds of MB (500,000 URLs' byte 3-grams:
//! 172 MB of ids). Freshly allocated, every 4 KiB page faults on its first
//! write; in a VM each fault is a few microseconds, so the faults cost more
//! than the hashing (0.44 s against 0.30 s with reused memory, one
//! thread, benches/arrow.py). With transparent huge pages in `madvise`
//! mode (the common default), asking for them turns 512 faults into one.

/// Buffers smaller than this are left alone: a huge page is 2 MiB.
const HUGE_PAGE: usize = 2 << 20;

/// Asks the system to back the whole 2 MiB pages inside `bytes` with huge
/// pages (Linux `madvise(MADV_HUGEPAGE)`); advice only, so a refusal
/// changes nothing, and elsewhere it does nothing.
pub fn advise_huge_pages(bytes: &mut [u8]) {
    #[cfg(target_os = "linux")]
    {
        let start = (bytes.as_ptr() as usize).next_multiple_of(HUGE_PAGE);
        let end = (bytes.as_ptr() as usize + bytes.len()) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            // SAFETY: the range is inside `bytes`, memory this process owns;
            // MADV_HUGEPAGE is advice that never changes its contents.
            #[allow(unsafe_code)]
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE)
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = bytes;
}

/// Whether a buffer of `bytes` is worth the advice.
pub fn is_large(bytes: usize) -> bool {
    bytes >= 2 * HUGE_PAGE
}
