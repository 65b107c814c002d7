//! Token n-grams (joined with " ") and character n-grams (joined with
//! nothing) share one mechanism: a [`TokenSource`] appends each token's
//! bytes (lowercased on the way when asked) and the joiner to a
//! [`TokenBuffer`], which keeps the tokens of a block (and the few before
//! it). Every n-gram ending in the block is then a slice of that buffer, so
//! each token is copied once, whatever the widths, and a joined n-gram's
//! bytes are by construction those of the lowercased text. A short token
//! is copied as one 16-byte chunk, lowercased in a vector register, with no
//! branch on its content: whether a token is followed by exactly one space
//! (so that the n-gram is already a slice of the text), or has an uppercase
//! letter, is a coin toss in real text, and a mispredicted branch costs more
//! than the copy.
//!
//! [`TokenBuffer::emit_windows`] emits the n-grams of the given widths
//! block by block, width by width: called once per width it gives
//! `tf.strings.ngrams`' order (all n-grams of the first width, then the
//! next), called once with every width it gives them all in one pass,
//! grouped by width (and, for a document of one block, in that order).

use super::config::MAX_NGRAM_WIDTH;
use super::scan::{ascii_lowercase_chunk, Chunk, CHUNK};
use super::tokenize::TokenSource;
use super::window::Gram;
use std::ops::ControlFlow;

/// Tokens whose start is remembered: a block's, and room for the widest
/// n-gram's twice (a power of two, so the slot of token `k` is `k % RING`).
pub(super) const RING: usize = if cfg!(test) { 256 } else { 1024 };

/// Tokens stored before their n-grams are emitted (see
/// [`TokenBuffer::emit_windows`]). (Tests' documents are short: a small
/// block there sends them both ways.)
const BLOCK: usize = RING - 2 * MAX_NGRAM_WIDTH;

/// The block of a single width: its n-grams come in order block or no
/// block, and a caller that stops early (the first ids of a sequence)
/// stops after a few tokens more, not a whole block more.
const SINGLE_WIDTH_BLOCK: usize = 32;

/// The longest document whose tokens fit in one block (each takes a byte
/// at least): its n-grams of several widths come in output order from one
/// pass over its tokens.
pub(super) const SHORT_DOC: usize = BLOCK;

/// The bytes of the last tokens, each followed by the joiner. Positions are
/// counted from the start of the stream, so they stay valid when old bytes
/// are dropped to make room. Reusable from one pass to the next.
pub(super) struct TokenBuffer {
    buf: Vec<u8>,
    /// Bytes in use: `buf[..len]`.
    len: usize,
    /// Stream position of `buf[0]`.
    base: usize,
    joiner: Option<u8>,
    /// Stream positions of the last tokens' first bytes, and how many tokens
    /// there have been: what `make_room` may drop.
    starts: [usize; RING],
    count: usize,
    /// The tokens the n-grams still to come may start at: the widest
    /// n-gram's worth, plus the lag.
    keep_tokens: usize,
}

impl Default for TokenBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl TokenBuffer {
    pub(super) const fn new() -> Self {
        TokenBuffer {
            buf: Vec::new(),
            len: 0,
            base: 0,
            joiner: None,
            starts: [0; RING],
            count: 0,
            keep_tokens: 1,
        }
    }

    /// Frees the buffer's bytes if it holds more than `max`.
    pub(super) fn release_above(&mut self, max: usize) {
        if self.buf.capacity() > max {
            self.buf = Vec::new();
            self.len = 0;
        }
    }

    /// Empties the buffer for a stream of tokens joined with `joiner`, whose
    /// n-grams are at most `widest` wide and emitted a block at a time.
    fn reset(&mut self, joiner: Option<u8>, widest: usize) {
        self.len = 0;
        self.base = 0;
        self.joiner = joiner;
        self.count = 0;
        self.keep_tokens = widest.clamp(1, MAX_NGRAM_WIDTH) + BLOCK;
    }

    /// The stream position after the last byte.
    #[inline(always)]
    fn end(&self) -> usize {
        self.base + self.len
    }

    /// The n-gram from the start of token `first` to stream position
    /// `end`, padded with the rest of the buffer (at least a chunk: see
    /// `room`).
    #[inline(always)]
    fn window(&self, first: usize, end: usize) -> Gram<'_> {
        let start = self.starts[first % RING];
        Gram::new(&self.buf[start - self.base..], end - start)
    }

    /// Where the next token's `n` bytes, the joiner and a chunk of slack can
    /// be written; records where the token starts.
    #[inline(always)]
    fn room(&mut self, n: usize) -> usize {
        if self.len + n + 1 + CHUNK > self.buf.len() {
            self.make_room(n);
        }
        self.starts[self.count % RING] = self.end();
        self.count += 1;
        self.len
    }

    #[cold]
    fn make_room(&mut self, n: usize) {
        // The n-grams still to come start at token `count + 1 - keep_tokens`
        // or later (`count` is the one about to be written).
        let keep = match (self.count + 1).checked_sub(self.keep_tokens) {
            None => self.base,
            Some(oldest) if oldest < self.count => self.starts[oldest % RING],
            Some(_) => self.end(),
        };
        let dropped = keep - self.base;
        self.buf.copy_within(dropped..self.len, 0);
        self.len -= dropped;
        self.base = keep;
        let needed = self.len + n + 1 + CHUNK;
        if needed > self.buf.len() {
            self.buf.resize(needed.max(2 * self.buf.len()).max(4096), 0);
        }
    }

    /// Appends `text[start..end]`, ASCII-lowercased when `lowercase` (other
    /// bytes unchanged), then the joiner.
    #[inline(always)]
    pub(super) fn push_text(&mut self, text: &[u8], start: usize, end: usize, lowercase: bool) {
        let n = end - start;
        let at = self.room(n);
        if n < CHUNK {
            if let Some(&bytes) = text.get(start..).and_then(<[u8]>::first_chunk::<CHUNK>) {
                let chunk: Chunk = if lowercase {
                    ascii_lowercase_chunk(bytes)
                } else {
                    bytes
                };
                self.buf[at..at + CHUNK].copy_from_slice(&chunk);
                // A byte store over the chunk's: cheaper than placing the
                // joiner in the 128-bit chunk with variable shifts.
                self.len = at + n;
                self.push_joiner();
                return;
            }
        }
        let out = &mut self.buf[at..at + n];
        out.copy_from_slice(&text[start..end]);
        if lowercase {
            out.make_ascii_lowercase();
        }
        self.len = at + n;
        self.push_joiner();
    }

    /// Appends `bytes`, then the joiner.
    #[inline]
    pub(super) fn push(&mut self, bytes: &[u8]) {
        let at = self.room(bytes.len());
        self.buf[at..at + bytes.len()].copy_from_slice(bytes);
        self.len = at + bytes.len();
        self.push_joiner();
    }

    #[inline(always)]
    fn push_joiner(&mut self) {
        if let Some(joiner) = self.joiner {
            // `room` left space for it.
            self.buf[self.len] = joiner;
            self.len += 1;
        }
    }

    /// Emits the n-grams of every width in `widths` (each in
    /// `1..=`[`MAX_NGRAM_WIDTH`]) of the tokens of `source` joined with
    /// `joiner`, in one pass. Tokens are stored a block at a time (a short
    /// one for a single width: [`SINGLE_WIDTH_BLOCK`]), then the
    /// n-grams that end in the block are emitted width by width, each
    /// tagged with its width's position in `widths`: grouped by width, the
    /// output order. A document whose tokens fit in one block (one of at
    /// most [`SHORT_DOC`] bytes) gets them all in output order, in group 0:
    /// for a batch of short records (log lines, URLs) the ids go where they
    /// belong, with no second copy to order them. By the time an n-gram is
    /// hashed, the bytes just stored for its tokens have mostly reached the
    /// cache (a load spanning a token's chunk store and its joiner's byte
    /// store stalls until both have).
    pub(super) fn emit_windows<S: TokenSource>(
        &mut self,
        joiner: Option<u8>,
        source: &mut S,
        widths: &[usize],
        f: &mut impl FnMut(usize, Gram<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        self.reset(joiner, widths.iter().copied().max().unwrap_or(1));
        let joiner_len = usize::from(joiner.is_some());
        let block = if widths.len() == 1 {
            SINGLE_WIDTH_BLOCK
        } else {
            BLOCK
        };
        // Tokens whose n-grams have been emitted.
        let mut emitted = 0;
        loop {
            let mut more = true;
            while self.count - emitted < block {
                if !source.next_token(self) {
                    more = false;
                    break;
                }
            }
            let in_order = emitted == 0 && !more;
            let count = self.count;
            // The next token starts where the bytes end (`room` will store
            // the same): each n-gram ends a joiner before it.
            self.starts[count % RING] = self.end();
            if in_order {
                // A loop of its own, the group a constant: short records
                // ran 5-8% faster than through the general loop below.
                for &width in widths {
                    for first in 0..(count + 1).saturating_sub(width) {
                        let end = self.starts[(first + width) % RING] - joiner_len;
                        f(0, self.window(first, end))?;
                    }
                }
                return ControlFlow::Continue(());
            }
            for (k, &width) in widths.iter().enumerate() {
                for last in emitted.max(width.saturating_sub(1))..count {
                    let end = self.starts[(last + 1) % RING] - joiner_len;
                    f(k, self.window(last + 1 - width, end))?;
                }
            }
            if !more {
                return ControlFlow::Continue(());
            }
            emitted = count;
        }
    }
}
