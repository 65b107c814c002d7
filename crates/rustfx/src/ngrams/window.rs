//! n-grams as windows over bytes or characters, each a [`Gram`]: a slice
//! of a buffer, which a hash may read past.
//!
//! Bytes and the ASCII cases of `char` and `sklearn_char`, where characters
//! are bytes, have their own block-at-a-time paths (`byte_ngrams`,
//! `ascii_collapsed_ngrams`), and `char` on other text decodes a block at
//! a time into a buffer its n-grams are slices of (`char_ngrams`);
//! `sklearn_char_wb` forms its n-grams inside each word.

use super::config::MAX_NGRAM_WIDTH;
use super::scan::{AsciiTokens, ByteClass};
use super::utf8::{
    ascii_word, decode_lossy, next_char_lossy, single_byte_chars, window, LOW_BITS, REPLACEMENT,
};
use crate::unicode_classes::{is_python_space, python_lower, python_str_lower, CAPITAL_SIGMA};
use std::ops::ControlFlow;

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

/// Character n-grams of a document that is not ASCII (the `char`
/// tokenizer): each maximal invalid UTF-8 subsequence is one U+FFFD, as
/// `String::from_utf8_lossy` decodes it. The text is decoded a block at a
/// time into `text` (8 bytes a step, see the loop; ASCII-lowercased on
/// demand), with the start of each character in
/// `starts`; every n-gram is then a slice of `text`, as `byte_ngrams`' are
/// of the document. Copying each character into a
/// [`TokenBuffer`](super::token_buffer::TokenBuffer) as a token made
/// binaries and compressed files (mostly invalid UTF-8, and never on the
/// ASCII path) twice as slow as text, and decoding them by
/// `Utf8Chunks` (a chunk per invalid byte) 2.7x. At each character, the
/// n-grams of every width in `widths` that end there, in order, `f`
/// getting the position of the width too: one pass of
/// [`TokenBuffer::emit_windows`](super::token_buffer::TokenBuffer::emit_windows).
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
