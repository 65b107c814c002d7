//! From a document to its n-grams, streaming: tokens (or characters) are
//! produced as they are found and n-grams are emitted a block of tokens
//! later, so no list of a document's tokens and no lowercased copy of it
//! is ever built.
//!
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
//!
//! Bytes and the ASCII cases of `char` and `sklearn_char`, where characters
//! are bytes, have their own block-at-a-time paths (`byte_ngrams`,
//! `ascii_collapsed_ngrams`), and `char` on other text decodes a block at
//! a time into a buffer its n-grams are slices of (`char_ngrams`);
//! `sklearn_char_wb` forms its n-grams inside each word.

use super::scan::{
    ascii_lowercase_chunk, non_ascii_masks, padded_block, AsciiTokens, ByteClass, Chunk, CHUNK,
};
use super::MAX_NGRAM_WIDTH;
use crate::unicode_classes::{
    is_final_sigma, is_python_space, is_python_word, python_lower, python_str_lower, CAPITAL_SIGMA,
};
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

/// An n-gram: the first `len` bytes of `padded`, which may run on past
/// it (the bytes after an n-gram in its buffer), so that a hash can load
/// whole words without a branch on the length.
#[derive(Clone, Copy, Debug)]
pub(super) struct Gram<'a> {
    padded: &'a [u8],
    len: usize,
}

impl<'a> Gram<'a> {
    /// `padded[..len]`, `padded` read past it (`len <= padded.len()`).
    #[inline(always)]
    pub(super) fn new(padded: &'a [u8], len: usize) -> Self {
        debug_assert!(len <= padded.len());
        Gram { padded, len }
    }

    /// An n-gram with nothing after it.
    #[inline(always)]
    pub(super) fn exact(bytes: &'a [u8]) -> Self {
        Gram {
            padded: bytes,
            len: bytes.len(),
        }
    }

    /// The n-gram's bytes.
    #[inline(always)]
    pub(super) fn bytes(self) -> &'a [u8] {
        self.padded.get(..self.len).unwrap_or(self.padded)
    }

    /// The n-gram's bytes and what follows them.
    #[inline(always)]
    pub(super) fn padded(self) -> &'a [u8] {
        self.padded
    }

    /// The n-gram's length in bytes.
    #[inline(always)]
    pub(super) fn len(self) -> usize {
        self.len
    }
}

/// Tokens (or characters) of a document, in order.
pub(super) trait TokenSource {
    /// Appends the bytes of the next token to `out`, with exactly one push;
    /// false at the end.
    fn next_token(&mut self, out: &mut TokenBuffer) -> bool;
}

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

/// Tokens that are runs of non-separator bytes (at least `min_len` long),
/// lowercased (ASCII) as they are copied.
pub(super) struct AsciiWords<'a> {
    tokens: AsciiTokens<'a>,
    lowercase: bool,
}

impl<'a> AsciiWords<'a> {
    /// `min_len`: 1 or 2 (see [`AsciiTokens::new`]).
    pub(super) fn new(text: &'a [u8], class: ByteClass, lowercase: bool, min_len: usize) -> Self {
        AsciiWords {
            tokens: AsciiTokens::new(text, class, min_len),
            lowercase,
        }
    }

    /// Starts over on `text`.
    pub(super) fn reset(&mut self, text: &'a [u8]) {
        self.tokens.reset(text);
    }

    /// The byte range of the next token in the text, not copied.
    #[inline(always)]
    pub(super) fn next_range(&mut self) -> Option<(usize, usize)> {
        self.tokens.next()
    }
}

impl TokenSource for AsciiWords<'_> {
    #[inline(always)]
    fn next_token(&mut self, out: &mut TokenBuffer) -> bool {
        let Some((start, end)) = self.next_range() else {
            return false;
        };
        out.push_text(self.tokens.text(), start, end, self.lowercase);
        true
    }
}

/// Python's `c.lower()` for the character `c` at byte `pos` of `text`, as
/// `text.lower()` maps it: the capital sigma looks at its neighbours.
fn python_lower_at(text: &str, pos: usize, c: char, out: &mut String) {
    if c == '\u{3a3}' {
        let before = text.get(..pos).unwrap_or_default();
        let after = text.get(pos + c.len_utf8()..).unwrap_or_default();
        out.push(if is_final_sigma(before, after) {
            '\u{3c2}'
        } else {
            '\u{3c3}'
        });
    } else {
        python_lower(c, out);
    }
}

/// The characters of `text.lower()` (when `lowercase`), each with the byte
/// range of the character of `text` it comes from. `'İ'` lowers to two
/// characters, both from the same range.
struct LoweredChars<'a> {
    text: &'a str,
    pos: usize,
    lowercase: bool,
    /// The lowering of the last non-ASCII character, and how much of it has
    /// been handed out.
    lowered: String,
    handed: usize,
    source: (usize, usize),
}

impl<'a> LoweredChars<'a> {
    fn new(text: &'a str, lowercase: bool) -> Self {
        LoweredChars {
            text,
            pos: 0,
            lowercase,
            lowered: String::new(),
            handed: 0,
            source: (0, 0),
        }
    }

    /// Starts over on `text`, keeping the buffer's allocation.
    fn reset(&mut self, text: &'a str) {
        (self.text, self.pos, self.handed, self.source) = (text, 0, 0, (0, 0));
        self.lowered.clear();
    }

    /// The next character and its source range, and whether it is exactly
    /// the source character (not changed by lowering).
    #[inline]
    fn next(&mut self) -> Option<(char, usize, usize, bool)> {
        if let Some(c) = self
            .lowered
            .get(self.handed..)
            .and_then(|s| s.chars().next())
        {
            self.handed += c.len_utf8();
            return Some((c, self.source.0, self.source.1, false));
        }
        let start = self.pos;
        let &lead = self.text.as_bytes().get(start)?;
        if lead.is_ascii() {
            self.pos += 1;
            let c = if self.lowercase {
                lead.to_ascii_lowercase()
            } else {
                lead
            };
            return Some((char::from(c), start, start + 1, c == lead));
        }
        let c = self.text.get(start..)?.chars().next()?;
        let end = start + c.len_utf8();
        self.pos = end;
        // U+FFFD, what invalid UTF-8 decodes to (most of a binary's
        // non-ASCII characters), is its own lowercase: no table lookup.
        if !self.lowercase || c == char::REPLACEMENT_CHARACTER {
            return Some((c, start, end, true));
        }
        self.lowered.clear();
        python_lower_at(self.text, start, c, &mut self.lowered);
        let first = self.lowered.chars().next()?;
        if self.lowered.len() == first.len_utf8() && first == c {
            self.lowered.clear();
            return Some((c, start, end, true));
        }
        self.handed = first.len_utf8();
        self.source = (start, end);
        Some((first, start, end, false))
    }
}

/// scikit-learn's word tokens of a document that is not valid UTF-8 (a
/// binary, a compressed file), without decoding it whole: each maximal
/// invalid subsequence decodes to U+FFFD, which is neither a word
/// character nor cased, so no token, and no final-sigma context, reaches
/// across it, and each valid run can be tokenized on its own: with
/// [`PythonWords`] where it has characters beyond ASCII, else as ASCII
/// ([`AsciiWords`]), which also reads the invalid bytes between such runs
/// as the separators they are. Decoding the whole document
/// (`String::from_utf8_lossy`) and reading it a character at a time made
/// such files 3x slower than text.
pub(super) struct SklearnWords<'a> {
    doc: &'a [u8],
    /// Where the runs not yet read start.
    at: usize,
    /// The run being read: `unicode` if there is one, else `ascii`, a run
    /// with no valid character beyond ASCII (its invalid sequences are
    /// not word bytes, so its ASCII runs, valid or not in between, are
    /// tokenized as one). One of each serves every run of its kind: a
    /// compressed file has a run every ~35 bytes.
    ascii: AsciiWords<'a>,
    unicode: PythonWords<'a>,
    in_unicode: bool,
}

/// The next run of [`SklearnWords`].
enum ValidRun<'a> {
    Ascii(&'a [u8]),
    Unicode(&'a str),
}

impl<'a> SklearnWords<'a> {
    pub(super) fn new(doc: &'a [u8], lowercase: bool) -> Self {
        SklearnWords {
            doc,
            at: 0,
            ascii: AsciiWords::new(&[], ByteClass::NonWord, lowercase, 2),
            unicode: PythonWords::new("", lowercase),
            in_unicode: false,
        }
    }

    /// The run from `at` on: up to the valid run around the first
    /// character beyond ASCII, read as ASCII; else that valid run, to the
    /// next invalid sequence (or the end), read as Unicode. A compressed
    /// file has an invalid sequence every few bytes, but a valid character
    /// beyond ASCII only every ~35: one run per valid run (`Utf8Chunks`)
    /// made such files 1.9x slower than text.
    fn next_run(&mut self) -> Option<ValidRun<'a>> {
        let doc = self.doc;
        let from = self.at;
        if from >= doc.len() {
            return None;
        }
        let Some(valid_from) = first_valid_run_beyond_ascii(doc, from) else {
            self.at = doc.len();
            return Some(ValidRun::Ascii(&doc[from..]));
        };
        if valid_from > from {
            self.at = valid_from;
            return Some(ValidRun::Ascii(&doc[from..valid_from]));
        }
        let rest = &doc[from..];
        let valid = match std::str::from_utf8(rest) {
            Ok(text) => text,
            Err(e) => std::str::from_utf8(&rest[..e.valid_up_to()]).expect("valid up to here"),
        };
        self.at = from + valid.len();
        Some(ValidRun::Unicode(valid))
    }
}

impl TokenSource for SklearnWords<'_> {
    fn next_token(&mut self, out: &mut TokenBuffer) -> bool {
        loop {
            let found = match self.in_unicode {
                true => self.unicode.next_token(out),
                false => self.ascii.next_token(out),
            };
            if found {
                return true;
            }
            match self.next_run() {
                None => return false,
                Some(ValidRun::Ascii(run)) => {
                    self.in_unicode = false;
                    self.ascii.reset(run);
                }
                Some(ValidRun::Unicode(run)) => {
                    self.in_unicode = true;
                    self.unicode.reset(run);
                }
            }
        }
    }
}

/// scikit-learn's word tokens of any text: maximal runs of at least two
/// Python `\w` characters of `text.lower()` (when `lowercase`).
pub(super) struct PythonWords<'a> {
    chars: LoweredChars<'a>,
    text: &'a str,
    /// The token being read: source range, characters, bytes (lowered).
    start: usize,
    end: usize,
    len: usize,
    bytes: Vec<u8>,
    done: bool,
}

impl<'a> PythonWords<'a> {
    pub(super) fn new(text: &'a str, lowercase: bool) -> Self {
        PythonWords {
            chars: LoweredChars::new(text, lowercase),
            text,
            start: 0,
            end: 0,
            len: 0,
            bytes: Vec::new(),
            done: false,
        }
    }

    /// Starts over on `text`, keeping the buffers' allocations.
    fn reset(&mut self, text: &'a str) {
        self.chars.reset(text);
        (self.text, self.start, self.end, self.len, self.done) = (text, 0, 0, 0, false);
        self.bytes.clear();
    }

    /// Appends the token just ended, if long enough.
    fn take(&mut self, out: &mut TokenBuffer) -> bool {
        if std::mem::take(&mut self.len) < 2 {
            return false;
        }
        if self.chars.lowercase {
            out.push(&self.bytes);
        } else {
            out.push_text(self.text.as_bytes(), self.start, self.end, false);
        }
        true
    }
}

impl TokenSource for PythonWords<'_> {
    fn next_token(&mut self, out: &mut TokenBuffer) -> bool {
        while !self.done {
            let Some((c, start, end, _)) = self.chars.next() else {
                self.done = true;
                return self.take(out);
            };
            let word = if c.is_ascii() {
                !ByteClass::NonWord.is_separator(c as u8)
            } else {
                is_python_word(c)
            };
            if word {
                if self.len == 0 {
                    self.start = start;
                    self.bytes.clear();
                }
                self.end = end;
                self.len += 1;
                if self.chars.lowercase {
                    let mut utf8 = [0u8; 4];
                    self.bytes
                        .extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                }
            } else if self.len > 0 && self.take(out) {
                return true;
            }
        }
        false
    }
}

/// scikit-learn `analyzer="char"`'s characters of any text: `text.lower()`
/// (when `lowercase`) with every run of two or more Python `\s` characters
/// replaced by one space.
pub(super) struct PythonChars<'a> {
    chars: LoweredChars<'a>,
    text: &'a str,
}

impl<'a> PythonChars<'a> {
    pub(super) fn new(text: &'a str, lowercase: bool) -> Self {
        PythonChars {
            chars: LoweredChars::new(text, lowercase),
            text,
        }
    }

    /// Length of the Python space at byte `pos`, if there is one.
    #[inline]
    fn space_at(&self, pos: usize) -> Option<usize> {
        let &lead = self.text.as_bytes().get(pos)?;
        if lead.is_ascii() {
            return ByteClass::PythonSpace.is_separator(lead).then_some(1);
        }
        let c = self.text.get(pos..)?.chars().next()?;
        is_python_space(c).then(|| c.len_utf8())
    }
}

impl TokenSource for PythonChars<'_> {
    #[inline]
    fn next_token(&mut self, out: &mut TokenBuffer) -> bool {
        let Some((c, start, end, same)) = self.chars.next() else {
            return false;
        };
        // Lowering neither makes nor unmakes spaces, so the runs are those
        // of the source text.
        let space = if c.is_ascii() {
            ByteClass::PythonSpace.is_separator(c as u8)
        } else {
            is_python_space(c)
        };
        if space && self.space_at(end).is_some() {
            let mut end = end;
            while let Some(len) = self.space_at(end) {
                end += len;
            }
            self.chars.pos = end;
            out.push(b" ");
        } else if same {
            out.push_text(self.text.as_bytes(), start, end, false);
        } else {
            let mut utf8 = [0u8; 4];
            out.push(c.encode_utf8(&mut utf8).as_bytes());
        }
        true
    }
}

/// scikit-learn `analyzer="char"`'s n-grams of an ASCII document, where
/// characters are bytes: lowercased (when `lowercase`), every run of two or
/// more spaces as one `' '`. The document is transformed a block at a time
/// into `buffer`, which keeps the last bytes for the n-grams that straddle
/// blocks; at each character, the n-grams of every width in `widths` that
/// end there are emitted, with the position of their width.
pub(super) fn ascii_collapsed_ngrams(
    doc: &[u8],
    lowercase: bool,
    widths: &[usize],
    buffer: &mut Vec<u8>,
    f: &mut impl FnMut(usize, &[u8]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    const BLOCK: usize = 4096;
    let widest = widths.iter().copied().max().unwrap_or(1);
    buffer.clear();
    // Stream positions of `buffer[0]` and of the end of the n-grams emitted.
    let mut base = 0;
    let mut emitted = 0;
    let mut after_space = false;
    let mut blocks = doc.chunks(BLOCK).peekable();
    while let Some(block) = blocks.next() {
        // Branch-free: a space after a space does not advance, and turns
        // the one written before it (the run's first) into ' '.
        let mut at = buffer.len();
        buffer.resize(at + block.len(), 0);
        for &b in block {
            let space = ByteClass::PythonSpace.is_separator(b);
            let repeat = space & after_space;
            at -= usize::from(repeat);
            buffer[at] = match (repeat, lowercase) {
                (true, _) => b' ',
                (false, true) => b.to_ascii_lowercase(),
                (false, false) => b,
            };
            at += 1;
            after_space = space;
        }
        buffer.truncate(at);
        // A space that ends the block may yet start a run: its n-grams wait.
        let last = blocks.peek().is_none();
        let done = base + at - usize::from(after_space && !last);
        for end in emitted + 1..=done {
            for (k, &width) in widths.iter().enumerate() {
                if let Some(start) = end.checked_sub(width) {
                    f(k, &buffer[start - base..end - base])?;
                }
            }
        }
        emitted = done;
        // Later n-grams reach back at most `widest - 1` bytes before `done`.
        let dropped = (done - base).saturating_sub(widest - 1);
        buffer.drain(..dropped);
        base += dropped;
    }
    ControlFlow::Continue(())
}

/// Byte n-grams: every window of each width, in order; with `lowercase`,
/// windows of ASCII-lowercased blocks (never the whole document at once).
pub(super) fn byte_ngrams(
    doc: &[u8],
    lowercase: bool,
    widths: &[usize],
    f: &mut impl FnMut(Gram<'_>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    const BLOCK: usize = 4096;
    /// A record this short is lowercased whole, in a buffer cheaper to
    /// clear than a block's (the clear showed in the profile of domain
    /// names).
    const SHORT: usize = 256;
    if !lowercase {
        for &width in widths {
            for start in 0..(doc.len() + 1).saturating_sub(width) {
                f(Gram::new(&doc[start..], width))?;
            }
        }
        return ControlFlow::Continue(());
    }
    if doc.len() <= SHORT {
        let mut lower = [0u8; SHORT];
        let lower = &mut lower[..doc.len()];
        lower.copy_from_slice(doc);
        lower.make_ascii_lowercase();
        return byte_ngrams(lower, false, widths, f);
    }
    let mut buffer = [0u8; BLOCK + MAX_NGRAM_WIDTH];
    for &width in widths {
        // Each block holds the n-grams starting in `pos..pos + BLOCK`.
        let mut pos = 0;
        while pos + width <= doc.len() {
            let chunk = &doc[pos..doc.len().min(pos + BLOCK + width - 1)];
            for (l, &b) in buffer.iter_mut().zip(chunk) {
                *l = b.to_ascii_lowercase();
            }
            for start in 0..=chunk.len() - width {
                f(Gram::new(&buffer[start..], width))?;
            }
            pos += BLOCK;
        }
    }
    ControlFlow::Continue(())
}

/// scikit-learn's `_char_wb_ngrams`: for each word of `str.split()` of
/// `text.lower()`, padded with a space on each side, the n-grams of each
/// width in order. A padded word no longer than a width is emitted once,
/// whole, and widths at least as long are skipped for it: for an
/// increasing range that is exactly scikit-learn's `break`, and any other
/// order of widths gives the n-grams of each width as scikit-learn gives
/// them for `ngram_range=(n, n)`.
///
/// Words are lowercased one at a time: the final-sigma rule never looks
/// past a space, so that is `text.lower()`'s result.
pub(super) fn char_wb_ngrams(
    doc: &[u8],
    lowercase: bool,
    widths: &[usize],
    f: &mut impl FnMut(Gram<'_>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut padded = Vec::new();
    if doc.is_ascii() {
        for (start, end) in AsciiTokens::new(doc, ByteClass::PythonSpace, 1) {
            padded.clear();
            padded.push(b' ');
            let word = &doc[start..end];
            if lowercase {
                padded.extend(word.iter().map(u8::to_ascii_lowercase));
            } else {
                padded.extend_from_slice(word);
            }
            padded.push(b' ');
            // Exact n-grams: ASCII n-grams of one width have one length, so
            // the general hash's branches on it are predicted.
            word_ngrams(&padded, padded.len(), |unit| unit, false, widths, f)?;
        }
        return ControlFlow::Continue(());
    }
    // Not ASCII: decoded a character at a time as `from_utf8_lossy` does,
    // each word written padded as it comes (no copy of the document) with
    // the start of each character, and cut at Python spaces. With
    // `lowercase` each character is lowered as it comes: that is
    // `str.lower()` but for the capital sigma, whose lowering depends on
    // the word around it; a word with one is decoded again, whole, and
    // lowered by `python_str_lower`.
    let mut word = String::from(" ");
    let mut starts = vec![0];
    let (mut word_start, mut ascii, mut sigma) = (0, true, false);
    let mut emit = |word: &mut String, starts: &mut Vec<usize>, span: &[u8], ascii, sigma| {
        if sigma {
            let mut raw = String::new();
            let mut at = 0;
            while at < span.len() {
                let (c, len) = next_char_lossy(&span[at..]);
                raw.push(c);
                at += len;
            }
            word.truncate(1);
            python_str_lower(&raw, word);
            starts.truncate(1);
            starts.extend(word.char_indices().skip(1).map(|(i, _)| i));
        }
        starts.push(word.len());
        word.push(' ');
        starts.push(word.len());
        let units = starts.len() - 1;
        if ascii {
            // As in an ASCII document.
            return word_ngrams(word.as_bytes(), units, |unit| unit, false, widths, f);
        }
        word.push_str(GRAM_SLACK);
        word_ngrams(word.as_bytes(), units, |unit| starts[unit], true, widths, f)
    };
    let mut at = 0;
    while let Some(&b) = doc.get(at) {
        let here = at;
        if b.is_ascii() {
            at += 1;
            if !ByteClass::PythonSpace.is_separator(b) {
                if word.len() == 1 {
                    word_start = here;
                }
                starts.push(word.len());
                word.push(char::from(if lowercase {
                    b.to_ascii_lowercase()
                } else {
                    b
                }));
                continue;
            }
        } else {
            let (c, len) = next_char_lossy(&doc[at..]);
            at += len;
            if c == char::REPLACEMENT_CHARACTER || !is_python_space(c) {
                if word.len() == 1 {
                    word_start = here;
                }
                ascii = false;
                let from = word.len();
                if !lowercase || c == char::REPLACEMENT_CHARACTER {
                    word.push(c);
                    starts.push(from);
                } else {
                    sigma |= c == CAPITAL_SIGMA;
                    python_lower(c, &mut word);
                    // 'İ' lowers to two characters.
                    starts.extend(word[from..].char_indices().map(|(i, _)| from + i));
                }
                continue;
            }
        }
        // A space.
        if word.len() > 1 {
            emit(&mut word, &mut starts, &doc[word_start..here], ascii, sigma)?;
        }
        word.truncate(1);
        starts.truncate(1);
        (ascii, sigma) = (true, false);
    }
    if word.len() > 1 {
        emit(&mut word, &mut starts, &doc[word_start..], ascii, sigma)?;
    }
    ControlFlow::Continue(())
}

/// The character that starts `bytes` (not empty) and its length in bytes,
/// or, where `bytes` does not start with valid UTF-8, U+FFFD and the
/// length of the maximal invalid prefix it replaces: the "substitution of
/// maximal subparts" of `String::from_utf8_lossy` and of Python's
/// `decode(errors="replace")`. One call per character of text that is
/// mostly not UTF-8 (compressed files, binaries), where `Utf8Chunks`
/// cost a call and a split per invalid byte.
#[inline]
pub(super) fn next_char_lossy(bytes: &[u8]) -> (char, usize) {
    const INVALID: (char, usize) = (char::REPLACEMENT_CHARACTER, 1);
    let Some(&lead) = bytes.first() else {
        return INVALID;
    };
    // Continuation bytes after the lead, and the range of the first (the
    // others are 0x80..=0xbf): no overlong forms, surrogates or code
    // points past U+10FFFF.
    let (continuations, first) = match lead {
        0x00..=0x7f => return (char::from(lead), 1),
        0xc2..=0xdf => (1, 0x80..=0xbf),
        0xe0 => (2, 0xa0..=0xbf),
        0xe1..=0xec | 0xee..=0xef => (2, 0x80..=0xbf),
        0xed => (2, 0x80..=0x9f),
        0xf0 => (3, 0x90..=0xbf),
        0xf1..=0xf3 => (3, 0x80..=0xbf),
        0xf4 => (3, 0x80..=0x8f),
        _ => return INVALID,
    };
    let mut code = u32::from(lead) & (0x7f >> (continuations + 1));
    for n in 1..=continuations {
        let valid = match bytes.get(n) {
            Some(&b) if n == 1 => first.contains(&b),
            Some(&b) => b & 0xc0 == 0x80,
            None => false,
        };
        if !valid {
            return (char::REPLACEMENT_CHARACTER, n);
        }
        code = code << 6 | u32::from(bytes[n] & 0x3f);
    }
    (
        char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER),
        continuations + 1,
    )
}

/// U+FFFD in UTF-8, and a byte of slack.
const REPLACEMENT: [u8; 4] = [0xef, 0xbf, 0xbd, 0];

/// [`next_char_lossy`] of a window of 4 bytes (the document goes on past
/// any character that starts it), with no branch on the bytes: the
/// character's UTF-8 (U+FFFD's where the window does not start with valid
/// UTF-8) in the first bytes of the result, the bytes it replaces, and
/// the length of its UTF-8. In compressed files and binaries every other
/// byte is not ASCII and the lengths are a coin toss, so the branches of
/// [`next_char_lossy`] missed one character in two: 2.7x slower than text.
#[inline]
pub(super) fn decode_lossy(window: [u8; 4]) -> ([u8; 4], usize, usize, bool) {
    // Per lead byte: whether it can lead, the continuation bytes it
    // needs, and the range of the first as (low, high - low).
    const fn lead_table() -> [(bool, u8, u8, u8); 256] {
        let mut table = [(false, 0, 0, 0); 256];
        let mut b = 0;
        while b < 256 {
            table[b] = match b {
                0x00..=0x7f => (true, 0, 0, 0),
                0xc2..=0xdf => (true, 1, 0x80, 0x3f),
                0xe0 => (true, 2, 0xa0, 0x1f),
                0xed => (true, 2, 0x80, 0x1f),
                0xe1..=0xef => (true, 2, 0x80, 0x3f),
                0xf0 => (true, 3, 0x90, 0x2f),
                0xf1..=0xf3 => (true, 3, 0x80, 0x3f),
                0xf4 => (true, 3, 0x80, 0x0f),
                _ => (false, 0, 0, 0),
            };
            b += 1;
        }
        table
    }
    static LEADS: [(bool, u8, u8, u8); 256] = lead_table();
    let [lead, b1, b2, b3] = window;
    let (leads, needed, low, span) = LEADS[usize::from(lead)];
    // Bitwise, not short-circuit: no branch to mispredict.
    let c1 = u32::from(b1.wrapping_sub(low) <= span);
    let c2 = c1 & u32::from(b2 & 0xc0 == 0x80);
    let c3 = c2 & u32::from(b3 & 0xc0 == 0x80);
    let got = (c1 + c2 + c3).min(u32::from(needed));
    let valid = u32::from(leads & (got == u32::from(needed)));
    let keep = valid.wrapping_neg();
    let utf8 = (u32::from_le_bytes(window) & keep) | (u32::from_le_bytes(REPLACEMENT) & !keep);
    let written = 3 ^ ((3 ^ (got + 1)) & keep);
    (
        utf8.to_le_bytes(),
        got as usize + 1,
        written as usize,
        valid == 1,
    )
}

/// Bytes after a word of `char_wb_ngrams` that is not ASCII, so that a
/// hash can load whole blocks of each of its n-grams (see [`Gram`]): the
/// lengths of n-grams of characters of 1-3 bytes are a coin toss.
const GRAM_SLACK: &str = "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0";

/// The n-grams of one padded word of `units` characters, the `i`-th
/// starting at byte `at(i)` (`at(units)` is the end); each n-gram runs on
/// to the end of `padded` when `slack` (the word is followed by
/// [`GRAM_SLACK`]), else it is exact.
fn word_ngrams<'a>(
    padded: &'a [u8],
    units: usize,
    at: impl Fn(usize) -> usize,
    slack: bool,
    widths: &[usize],
    f: &mut impl FnMut(Gram<'_>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let gram = |from: &'a [u8], len| {
        if slack {
            Gram::new(from, len)
        } else {
            Gram::exact(&from[..len])
        }
    };
    let mut emitted_whole = false;
    for &width in widths {
        if units <= width {
            if !emitted_whole {
                f(gram(padded, at(units)))?;
                emitted_whole = true;
            }
            continue;
        }
        for start in 0..=units - width {
            let first = at(start);
            f(gram(&padded[first..], at(start + width) - first))?;
        }
    }
    ControlFlow::Continue(())
}

/// Bytes decoded at a time by [`char_ngrams`] before their
/// n-grams are emitted (small under test, so documents cross it).
const CHAR_BLOCK: usize = if cfg!(test) { 61 } else { 4096 };

/// How many characters [`char_ngrams`] finds in `doc`: those of
/// `String::from_utf8_lossy(doc)`, a U+FFFD for each maximal invalid
/// sequence. Decoded in the steps of [`char_ngrams`] (`Utf8Chunks` stops
/// at every invalid byte, and a compressed file has one every few bytes).
pub(super) fn lossy_char_count(doc: &[u8]) -> usize {
    let (mut at, mut count) = (0, 0);
    while at < doc.len() {
        // Characters of one byte, then one decoded.
        let singles = single_byte_chars(doc, at).map_or(0, |(_, singles)| singles);
        (at, count) = (at + singles, count + singles);
        if at < doc.len() {
            let (_, read, _, _) = decode_lossy(window(doc, at));
            (at, count) = (at + read, count + 1);
        }
    }
    count
}

/// The high bit of each of 8 bytes.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The low bit of each of 8 bytes.
const LOW_BITS: u64 = 0x0101_0101_0101_0101;

/// The 8 bytes of `doc` at `at` (if there are 8), and how many of them
/// from the first are a character of their own when none before continues
/// into them: ASCII, or U+FFFD because no byte that could lead (0xC0 and
/// up) is followed by a continuation byte (0x80-0xBF). In a compressed
/// file most bytes are such, and each is 1 or 3 bytes of UTF-8 with
/// nothing to decode.
#[inline]
fn single_byte_chars(doc: &[u8], at: usize) -> Option<(&[u8; 8], usize)> {
    let word = doc.get(at..)?.first_chunk::<8>()?;
    let bits = u64::from_le_bytes(*word);
    let next = u64::from(doc.get(at + 8).copied().unwrap_or(0));
    let following = (bits >> 8) | (next << 56);
    // High bit set where a byte is 0b11xx_xxxx, and where the byte after
    // it is 0b10xx_xxxx.
    let leads = bits & (bits << 1) & HIGH_BITS;
    let continued = following & !(following << 1) & HIGH_BITS;
    Some((word, ((leads & continued).trailing_zeros() / 8) as usize))
}

/// The 8 bytes of `doc` at `at`, if there are 8 and all are ASCII.
#[inline]
fn ascii_word(doc: &[u8], at: usize) -> Option<&[u8]> {
    doc.get(at..at + 8)
        .filter(|word| u64::from_le_bytes((*word).try_into().expect("8 bytes")) & HIGH_BITS == 0)
}

/// Where the valid run around the first valid character beyond ASCII
/// from `from` on starts, if there is one. No lead byte (0xC2..=0xF4)
/// continues a character, so that character starts at the first lead
/// [`decode_lossy`] finds valid; every byte beyond ASCII before it belongs
/// to an invalid sequence, so its run starts after the last of those.
/// Found 64 bytes at a time from masks of the leads and of the bytes
/// beyond ASCII: a byte at a time, the same search was half of
/// `sklearn_word`'s time on compressed files.
fn first_valid_run_beyond_ascii(doc: &[u8], from: usize) -> Option<usize> {
    let mut valid_from = from;
    let mut at = from;
    while at < doc.len() {
        let rest = &doc[at..];
        let (non_ascii, mut leads) = match rest.first_chunk::<64>() {
            Some(block) => non_ascii_masks(block),
            None => non_ascii_masks(&padded_block(rest, 0)),
        };
        while leads != 0 {
            let lead = leads.trailing_zeros();
            let (_, read, _, valid) = decode_lossy(window(doc, at + lead as usize));
            if valid & (read > 1) {
                let before = non_ascii & ((1 << lead) - 1);
                return Some(match before {
                    0 => valid_from,
                    _ => at + 64 - before.leading_zeros() as usize,
                });
            }
            leads &= leads - 1;
        }
        if non_ascii != 0 {
            valid_from = at + 64 - non_ascii.leading_zeros() as usize;
        }
        at += 64;
    }
    None
}

/// The 4 bytes of `doc` from `at` for [`decode_lossy`],
/// zeros past the end (they continue nothing).
#[inline]
fn window(doc: &[u8], at: usize) -> [u8; 4] {
    match doc.get(at..at + 4) {
        Some(window) => window.try_into().expect("4 bytes"),
        None => std::array::from_fn(|i| doc.get(at + i).copied().unwrap_or(0)),
    }
}

/// Character n-grams of a document that is not ASCII (the `char`
/// tokenizer): each maximal invalid UTF-8 subsequence is one U+FFFD, as
/// `String::from_utf8_lossy` decodes it. The text is decoded a block at a
/// time into `text` (8 bytes a step, see the loop; ASCII-lowercased on
/// demand), with the start of each character in
/// `starts`; every n-gram is then a slice of `text`, as `byte_ngrams`' are
/// of the document. Copying each character into a [`TokenBuffer`] as a
/// token made binaries and compressed files (mostly invalid UTF-8, and
/// never on the ASCII path) twice as slow as text, and decoding them by
/// `Utf8Chunks` (a chunk per invalid byte) 2.7x. At each character, the
/// n-grams of every width in `widths` that end there, in order, `f`
/// getting the position of the width too: one pass of
/// [`TokenBuffer::emit_windows`].
pub(super) fn char_ngrams(
    doc: &[u8],
    lowercase: bool,
    widths: &[usize],
    text: &mut Vec<u8>,
    starts: &mut Vec<usize>,
    f: &mut impl FnMut(usize, Gram<'_>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let widest = widths.iter().copied().max().unwrap_or(1);
    text.clear();
    starts.clear();
    // Characters `..emitted` of `starts` have had their n-grams emitted.
    let mut emitted = 0;
    let mut emit = |text: &mut Vec<u8>, starts: &mut Vec<usize>, emitted: &mut usize| {
        // The end of the last character, so that character `i` ends where
        // `i + 1` starts, for every `i`.
        let chars = starts.len();
        starts.push(text.len());
        let emitting = match widths {
            // The n-grams of one width: a window of `starts` each, with no
            // width loop and no bounds to check (a fifth of compressed
            // files' time went to the loop below).
            &[width] => {
                let from = (*emitted + 1).max(width) - width;
                let ends = starts.get(from + width..).unwrap_or_default();
                starts[from..]
                    .iter()
                    .zip(ends)
                    .try_for_each(|(&start, &end)| f(0, Gram::new(&text[start..], end - start)))
            }
            _ => (*emitted..chars).try_for_each(|last| {
                let end = starts[last + 1];
                for (k, &width) in widths.iter().enumerate() {
                    if let Some(first) = (last + 1).checked_sub(width) {
                        let start = starts[first];
                        f(k, Gram::new(&text[start..], end - start))?;
                    }
                }
                ControlFlow::Continue(())
            }),
        };
        starts.pop();
        emitting?;
        // Keep the characters the n-grams still to come may start at.
        let drop = starts.len().saturating_sub(widest - 1);
        let dropped = starts.get(drop).copied().unwrap_or(text.len());
        text.drain(..dropped);
        starts.drain(..drop);
        starts.iter_mut().for_each(|start| *start -= dropped);
        *emitted = starts.len();
        ControlFlow::Continue(())
    };
    let mut at = 0;
    while at < doc.len() {
        // About a block. The buffers are sized for the worst case first (3
        // bytes of U+FFFD per input byte, and what a step started before
        // `stop` touches: up to 36 bytes and 9 starts), then cut to what was
        // written, so the loop only indexes.
        let stop = doc.len().min(at + CHAR_BLOCK);
        let (base, first) = (text.len(), starts.len());
        text.resize(base + 3 * (stop - at) + 40, 0);
        starts.resize(first + (stop - at) + 8, 0);
        let (mut pos, mut k) = (base, first);
        while at < stop {
            // Eight ASCII bytes at once: eight characters.
            if let Some(word) = ascii_word(doc, at) {
                text[pos..pos + 8].copy_from_slice(word);
                for (i, start) in starts[k..k + 8].iter_mut().enumerate() {
                    *start = pos + i;
                }
                (at, pos, k) = (at + 8, pos + 8, k + 8);
                continue;
            }
            // A step: the characters of one byte (ASCII or U+FFFD) up to
            // the first byte that may lead a longer one (all eight written,
            // without a branch; those after it are written over), then the
            // character there, decoded. Each step ends where a character
            // does, and which path a step takes does not hang on the bytes:
            // a branch between the two mispredicted every few bytes.
            if let Some((word, singles)) = single_byte_chars(doc, at) {
                // Where each of the eight starts, from their lengths (1, or
                // 3 for U+FFFD) summed a byte per character: the stores are
                // independent, with no chain of additions between them.
                let bits = u64::from_le_bytes(*word);
                let lens = LOW_BITS + 2 * ((bits >> 7) & LOW_BITS);
                let ends = lens.wrapping_mul(LOW_BITS);
                let offsets = ends - lens;
                let out: &mut [u8; 36] = (&mut text[pos..pos + 36]).try_into().expect("36 bytes");
                for (i, &b) in word.iter().enumerate() {
                    let off = (offsets >> (8 * i)) as usize & 31;
                    let high = u32::from(b >> 7).wrapping_neg();
                    let utf8 = (u32::from(b) & !high) | (u32::from_le_bytes(REPLACEMENT) & high);
                    out[off..off + 4].copy_from_slice(&utf8.to_le_bytes());
                }
                let eight: &mut [usize; 8] = (&mut starts[k..k + 8]).try_into().expect("8 starts");
                for (i, start) in eight.iter_mut().enumerate() {
                    *start = pos + ((offsets >> (8 * i)) & 0xff) as usize;
                }
                // The end of the last single kept (the others are written
                // over).
                let kept = pos + ((u128::from(ends) << 8) >> (8 * singles)) as u8 as usize;
                // The character after them, if the document goes on.
                let next = at + singles;
                let more = usize::from(next < doc.len());
                let (utf8, read, written, _) = decode_lossy(window(doc, next));
                text[kept..kept + 4].copy_from_slice(&utf8);
                starts[k + singles] = kept;
                pos = kept + (written & more.wrapping_neg());
                k += singles + more;
                at = next + (read & more.wrapping_neg());
                continue;
            }
            // The last 7 bytes or fewer, a character at a time (a step
            // ends where a character does).
            let (utf8, read, written, _) = decode_lossy(window(doc, at));
            text[pos..pos + 4].copy_from_slice(&utf8);
            starts[k] = pos;
            (at, pos, k) = (at + read, pos + written, k + 1);
        }
        text.truncate(pos);
        starts.truncate(k);
        if lowercase {
            text[base..].make_ascii_lowercase();
        }
        emit(text, starts, &mut emitted)?;
    }
    emit(text, starts, &mut emitted)
}
