//! UTF-8 decoded as `String::from_utf8_lossy` (and Python's
//! `decode(errors="replace")`) decodes it: U+FFFD for each maximal invalid
//! subsequence. In compressed files and binaries, mostly not UTF-8, a
//! branch on the bytes is a coin toss, so the hot steps
//! ([`decode_lossy`], [`single_byte_chars`]) have none.

use super::scan::{non_ascii_masks, padded_block};

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
pub(super) const REPLACEMENT: [u8; 4] = [0xef, 0xbf, 0xbd, 0];

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

/// How many characters [`char_ngrams`](super::window::char_ngrams) finds
/// in `doc`: those of
/// `String::from_utf8_lossy(doc)`, a U+FFFD for each maximal invalid
/// sequence. Decoded in the steps of
/// [`char_ngrams`](super::window::char_ngrams) (`Utf8Chunks` stops
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
pub(super) const LOW_BITS: u64 = 0x0101_0101_0101_0101;

/// The 8 bytes of `doc` at `at` (if there are 8), and how many of them
/// from the first are a character of their own when none before continues
/// into them: ASCII, or U+FFFD because no byte that could lead (0xC0 and
/// up) is followed by a continuation byte (0x80-0xBF). In a compressed
/// file most bytes are such, and each is 1 or 3 bytes of UTF-8 with
/// nothing to decode.
#[inline]
pub(super) fn single_byte_chars(doc: &[u8], at: usize) -> Option<(&[u8; 8], usize)> {
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
pub(super) fn ascii_word(doc: &[u8], at: usize) -> Option<&[u8]> {
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
pub(super) fn first_valid_run_beyond_ascii(doc: &[u8], from: usize) -> Option<usize> {
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
pub(super) fn window(doc: &[u8], at: usize) -> [u8; 4] {
    match doc.get(at..at + 4) {
        Some(window) => window.try_into().expect("4 bytes"),
        None => std::array::from_fn(|i| doc.get(at + i).copied().unwrap_or(0)),
    }
}
