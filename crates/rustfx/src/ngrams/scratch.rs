//! The buffers a thread reuses from one document, and one batch, to the
//! next: the count scratch, the ids that wait for their document's end,
//! the token buffer with its word scanner, and the character buffers. A
//! nested call, or one during thread exit, gets fresh ones: nothing here
//! can panic.

use super::count::CountScratch;
use super::token_buffer::TokenBuffer;
use super::tokenize::AsciiWords;
use std::cell::{Cell, RefCell};
use std::thread::LocalKey;

thread_local! {
    static COUNT_SCRATCH: Cell<CountScratch> = Cell::new(CountScratch::new());
    static LATER_IDS: Cell<Vec<Vec<i64>>> = const { Cell::new(Vec::new()) };
    // A RefCell, not a Cell taken and put back: the buffer is 1 KiB of
    // token starts plus a Vec, and moving it per document showed in the
    // profile of short records.
    static TOKEN_BUFFER: RefCell<TokenBuffer> = const { RefCell::new(TokenBuffer::new()) };
    static CHAR_BUFFERS: RefCell<(Vec<u8>, Vec<usize>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Runs `f` with this thread's value of `key`. The value is taken out while
/// in use, so a nested call (or one during thread exit) gets a fresh one:
/// nothing here can panic.
fn with_thread_local<S: Default + 'static, T>(
    key: &'static LocalKey<Cell<S>>,
    f: impl FnOnce(&mut S) -> T,
) -> T {
    let mut value = key.try_with(Cell::take).unwrap_or_default();
    let out = f(&mut value);
    let _ = key.try_with(|cell| cell.set(value));
    out
}

pub(super) fn with_scratch<T>(f: impl FnOnce(&mut CountScratch) -> T) -> T {
    with_thread_local(&COUNT_SCRATCH, f)
}

pub(super) fn with_later_ids<T>(f: impl FnOnce(&mut Vec<Vec<i64>>) -> T) -> T {
    with_thread_local(&LATER_IDS, f)
}

/// Runs `f` with this thread's token buffer: a fresh one per document cost
/// an allocation and a 4 KiB clear, as much as the n-grams of a short
/// record (a URL, a log line). Batches take it once, not per document
/// (4% of whitespace ids of log lines). A buffer a huge token grew is not
/// kept.
pub(super) fn with_gram_scratch<'d, T>(mut f: impl FnMut(&mut GramScratch<'_, 'd>) -> T) -> T {
    let kept = TOKEN_BUFFER.try_with(|cell| {
        let mut buffer = cell.try_borrow_mut().ok()?;
        let out = f(&mut GramScratch::new(&mut buffer));
        buffer.release_above(KEEP_TOKEN_BUFFER);
        Some(out)
    });
    match kept {
        Ok(Some(out)) => out,
        // A nested call, or one during thread exit: a fresh buffer.
        _ => f(&mut GramScratch::new(&mut TokenBuffer::new())),
    }
}

/// What the documents of a batch (with lifetime `'d`) reuse from one to
/// the next: this thread's token buffer, and a word scanner started over
/// on each (a new one clears an 824-byte array of edges: 1.7% of the
/// profile of whitespace ids of lines).
pub(super) struct GramScratch<'b, 'd> {
    pub(super) buffer: &'b mut TokenBuffer,
    pub(super) words: Option<AsciiWords<'d>>,
}

impl<'b> GramScratch<'b, '_> {
    fn new(buffer: &'b mut TokenBuffer) -> Self {
        GramScratch {
            buffer,
            words: None,
        }
    }
}

/// Runs `f` with this thread's buffers of
/// [`char_ngrams`](super::window::char_ngrams) (bounded: a
/// block of text and its character starts).
pub(super) fn with_char_buffers<T>(mut f: impl FnMut(&mut Vec<u8>, &mut Vec<usize>) -> T) -> T {
    let kept = CHAR_BUFFERS.try_with(|cell| {
        let mut buffers = cell.try_borrow_mut().ok()?;
        let (text, starts) = &mut *buffers;
        Some(f(text, starts))
    });
    match kept {
        Ok(Some(out)) => out,
        // A nested call, or one during thread exit: fresh buffers.
        _ => f(&mut Vec::new(), &mut Vec::new()),
    }
}

/// Bytes of token buffer kept by a thread between documents.
const KEEP_TOKEN_BUFFER: usize = 1 << 16;
