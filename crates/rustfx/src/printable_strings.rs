//! The printable strings of a binary, as GNU binutils `strings -a` finds
//! them, for `strings | tokenize` features.
//!
//! * [`StringEncoding::Ascii`] is `strings -a -n MIN_LEN -e s`: maximal runs
//!   of at least `min_len` graphic bytes, where graphic is GNU's
//!   `STRING_ISGRAPHIC` in the C locale: `0x20..=0x7E` or tab (`0x09`).
//!   Newline, carriage return, `0x7F` and bytes `>= 0x80` end a string.
//! * [`StringEncoding::Utf16le`] is `strings -a -n MIN_LEN -e l`: runs of at
//!   least `min_len` 16-bit little-endian characters whose high byte is 0
//!   and whose low byte is graphic; the output is the narrow string (the low
//!   bytes). GNU reads characters two bytes at a time from offset 0, but
//!   after *every* non-graphic character it steps back one byte
//!   (`unget_part_char`), so scanning resumes at the character's second
//!   byte: strings at odd offsets are found, and the next search starts one
//!   byte after the end of the previous string. A trailing odd byte is never
//!   part of a string. (Verified against binutils 2.40 and its source.)
//!
//! A run that reaches the end of the input is a string like any other. No
//! string is empty and none contains `\n`, so GNU's output split on `\n` is
//! exactly this list. With several encodings the output is every string of
//! the first encoding in `encodings`, then every string of the next, and so
//! on, each in `strings`' own (file) order, as if `strings` ran once per
//! encoding and the outputs were concatenated.
//!
//! Bounds, per document, over that concatenated order: at most
//! `max_strings` strings; at most `max_bytes` string bytes in total, the
//! string that would cross the cap being truncated to fit, after which
//! extraction stops. Scanning stops as soon as a bound is reached.
//!
//! How: one scanner for both encodings, on 64-byte blocks: a `u64` mask of
//! the positions whose character is graphic, then run starts and ends from
//! `trailing_zeros` (a UTF-16 run only ends at a position of its parity).
//! Tests compare it with a transliteration of binutils' loop.

use crate::output::Strings;
use crate::{Error, Result};

/// The largest `min_len` [`PrintableStrings::new`] accepts: 2^20 (GNU
/// `strings` itself allocates a buffer of `min_len` bytes and accepts up to
/// `u32::MAX - 1`; no real string threshold comes near 2^20).
pub const MAX_MIN_LEN: usize = 1 << 20;

/// The character encoding a string is looked for in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StringEncoding {
    /// 7-bit ASCII, one byte per character (`strings -e s`).
    Ascii,
    /// UTF-16 little-endian restricted to characters `U+0009` and
    /// `U+0020..=U+007E` (`strings -e l`), output as ASCII.
    Utf16le,
}

crate::names::named_values!(StringEncoding, "string encoding", {
    Ascii => "ascii",
    Utf16le => "utf16le",
});

/// GNU's `STRING_ISGRAPHIC` for 7-bit text: tab or `isprint` in the C locale.
const fn graphic_table() -> [bool; 256] {
    let mut table = [false; 256];
    let mut b = 0x20;
    while b <= 0x7e {
        table[b] = true;
        b += 1;
    }
    table[b'\t' as usize] = true;
    table
}

/// `GRAPHIC[b]`: whether byte `b` can be part of a string.
static GRAPHIC: [bool; 256] = graphic_table();

/// Whether `b` is a character of a string (tab or `0x20..=0x7E`).
fn is_graphic(b: u8) -> bool {
    GRAPHIC[usize::from(b)]
}

/// Validated parameters of a printable-strings extraction (immutable, so
/// one value serves any number of threads).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PrintableStrings {
    min_len: usize,
    encodings: Vec<StringEncoding>,
    max_strings: Option<usize>,
    max_bytes: Option<usize>,
}

impl PrintableStrings {
    /// Strings of at least `min_len` characters (`1..=`[`MAX_MIN_LEN`]) in
    /// each of `encodings` (non-empty, no duplicates, output in this order),
    /// at most `max_strings` strings and `max_bytes` string bytes per
    /// document (`None`: unlimited; `Some(n)` needs `n >= 1`).
    ///
    /// ```
    /// use rustfx::printable_strings::{PrintableStrings, StringEncoding};
    /// let gnu = PrintableStrings::new(4, &[StringEncoding::Ascii], None, None).unwrap();
    /// assert_eq!(gnu.min_len(), 4);
    /// assert!(PrintableStrings::new(0, &[StringEncoding::Ascii], None, None).is_err());
    /// ```
    pub fn new(
        min_len: usize,
        encodings: &[StringEncoding],
        max_strings: Option<usize>,
        max_bytes: Option<usize>,
    ) -> Result<Self> {
        if !(1..=MAX_MIN_LEN).contains(&min_len) {
            return Err(Error::invalid_argument(format!(
                "printable strings min_len must be in 1..={MAX_MIN_LEN}, got {min_len}"
            )));
        }
        if encodings.is_empty() {
            return Err(Error::invalid_argument(format!(
                "printable strings encodings must name at least one of {}, got none",
                StringEncoding::NAMES.join(", ")
            )));
        }
        for (i, e) in encodings.iter().enumerate() {
            if encodings[..i].contains(e) {
                return Err(Error::invalid_argument(format!(
                    "printable strings encodings must not repeat a value, got '{}' twice",
                    e.name()
                )));
            }
        }
        for (what, value) in [("max_strings", max_strings), ("max_bytes", max_bytes)] {
            if value == Some(0) {
                return Err(Error::invalid_argument(format!(
                    "printable strings {what} must be at least 1 (or unset for no limit), got 0"
                )));
            }
        }
        Ok(PrintableStrings {
            min_len,
            encodings: encodings.to_vec(),
            max_strings,
            max_bytes,
        })
    }

    /// The minimum string length, in characters.
    pub fn min_len(&self) -> usize {
        self.min_len
    }

    /// The encodings, in output order.
    pub fn encodings(&self) -> &[StringEncoding] {
        &self.encodings
    }

    /// The most strings per document (`None`: unlimited).
    pub fn max_strings(&self) -> Option<usize> {
        self.max_strings
    }

    /// The most string bytes per document (`None`: unlimited).
    pub fn max_bytes(&self) -> Option<usize> {
        self.max_bytes
    }

    /// Appends each string of `doc` to `bytes` and, after each string,
    /// ends it there in `strings.offsets` (after whatever both held
    /// before). Never fails; the memory used is the output's.
    ///
    /// ```
    /// use rustfx::output::Strings;
    /// use rustfx::printable_strings::{PrintableStrings, StringEncoding};
    /// let s = PrintableStrings::new(3, &[StringEncoding::Ascii, StringEncoding::Utf16le], None, None)
    ///     .unwrap();
    /// let mut strings = Strings::default();
    /// s.append_strings(b"ab\0xyz\x7fw\0i\0d\0e\0", &mut strings);
    /// assert_eq!(strings.bytes, b"xyzwide");
    /// assert_eq!(strings.offsets.as_slice(), [0, 3, 7]);
    /// ```
    pub fn append_strings(&self, doc: &[u8], strings: &mut Strings) {
        let mut sink = Sink {
            strings,
            strings_left: self.max_strings.unwrap_or(usize::MAX),
            bytes_left: self.max_bytes.unwrap_or(usize::MAX),
        };
        for &encoding in &self.encodings {
            let width = match encoding {
                StringEncoding::Ascii => 1,
                StringEncoding::Utf16le => 2,
            };
            if !scan(doc, width, self.min_len, &mut sink) {
                return;
            }
        }
    }

    /// The strings of `doc`, one `Vec` each.
    ///
    /// ```
    /// use rustfx::printable_strings::{PrintableStrings, StringEncoding};
    /// let s = PrintableStrings::new(4, &[StringEncoding::Ascii], Some(2), None).unwrap();
    /// assert_eq!(s.strings(b"one\0four\tfive\nsix!\nseven"), [&b"four\tfive"[..], b"six!"]);
    /// ```
    pub fn strings(&self, doc: &[u8]) -> Vec<Vec<u8>> {
        let mut strings = Strings::default();
        self.append_strings(doc, &mut strings);
        strings
            .offsets
            .ranges()
            .map(|range| strings.bytes[range].to_vec())
            .collect()
    }
}

/// The output and what the bounds still allow.
struct Sink<'a> {
    strings: &'a mut Strings,
    strings_left: usize,
    bytes_left: usize,
}

impl Sink<'_> {
    /// Writes the string whose characters are `run` (`width` bytes each, the
    /// low byte first), at most `bytes_left` of them; false once a bound is
    /// reached.
    fn push(&mut self, run: &[u8], width: usize) -> bool {
        let take = (run.len() / width).min(self.bytes_left);
        let bytes = &mut self.strings.bytes;
        if width == 1 {
            bytes.extend_from_slice(&run[..take]);
        } else {
            bytes.extend(run.iter().step_by(width).take(take));
        }
        self.strings.offsets.push(bytes.len());
        self.bytes_left -= take;
        self.strings_left -= 1;
        self.strings_left > 0 && self.bytes_left > 0
    }
}

/// Bytes per block: one bit of a `u64` mask per position.
const BLOCK: usize = 64;

/// Bit `i`: whether the character of `width` bytes starting at
/// `doc[base + i]` is graphic (0 for a position past the end or a character
/// cut by it).
fn graphic_mask(doc: &[u8], base: usize, width: usize) -> u64 {
    let mut mask = 0;
    if width == 1 {
        if let Some(block) = doc.get(base..base + BLOCK) {
            for (k, word) in block.chunks_exact(8).enumerate() {
                mask |= gather_high_bits(graphic_bytes(load(word))) << (8 * k);
            }
            return mask;
        }
    } else if let Some(block) = doc.get(base..base + BLOCK + 1) {
        for k in 0..BLOCK / 8 {
            let low = graphic_bytes(load(&block[8 * k..]));
            let high = zero_bytes(load(&block[8 * k + 1..]));
            mask |= gather_high_bits(low & high) << (8 * k);
        }
        return mask;
    }
    // The last, partial block.
    let rest = doc.get(base..).unwrap_or(&[]);
    for (i, c) in rest.windows(width).take(BLOCK).enumerate() {
        let graphic = if width == 1 {
            is_graphic(c[0])
        } else {
            utf16le_graphic(c)
        };
        mask |= u64::from(graphic) << i;
    }
    mask
}

const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HIGH: u64 = 0x8080_8080_8080_8080;
const ONES: u64 = 0x0101_0101_0101_0101;

/// The first 8 bytes of `bytes` as a little-endian word (byte `i` in bits
/// `8i..8i+8`).
fn load(bytes: &[u8]) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(word)
}

/// Bit 7 of each byte of the result: whether that byte of `x` is graphic
/// (SWAR: on the low 7 bits no sum carries out of its byte).
fn graphic_bytes(x: u64) -> u64 {
    let t = x & LOW7;
    let at_least_20 = t + 0x60 * ONES;
    let below_7f = !(t + ONES);
    let tab = zero_bytes(t ^ (0x09 * ONES));
    !x & ((at_least_20 & below_7f) | tab) & HIGH
}

/// Bit 7 of each byte of the result: whether that byte of `x` is 0 (exact).
fn zero_bytes(x: u64) -> u64 {
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// Bit 7 of byte `i` of `x` (other bits 0) moved to bit `i`.
fn gather_high_bits(x: u64) -> u64 {
    ((x >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// Whether the 16-bit little-endian character at `pair` (2 bytes) is
/// graphic: high byte 0, low byte graphic.
fn utf16le_graphic(pair: &[u8]) -> bool {
    pair[1] == 0 && is_graphic(pair[0])
}

/// GNU's scan for characters of `width` bytes (1: `-e s`, 2: `-e l`): from
/// position `p`, a run of graphic characters at stride `width` starting at
/// the first position whose character is graphic; the run ends at the
/// first position `q` of its parity whose character is not graphic (or is
/// cut by the end), and the search resumes at `q + 1` (binutils'
/// `unget_part_char`). Runs of at least `min_len` characters are strings.
///
/// Done on 64-byte blocks: a mask of the positions whose character is
/// graphic, runs from `trailing_zeros`. False once a bound stops the
/// extraction.
fn scan(doc: &[u8], width: usize, min_len: usize, sink: &mut Sink) -> bool {
    let mut emit = |start: usize, end: usize| {
        let run = &doc[start..end];
        run.len() / width < min_len || sink.push(run, width)
    };
    let mut run_start: Option<usize> = None;
    for base in (0..doc.len()).step_by(BLOCK) {
        let mask = graphic_mask(doc, base, width);
        let mut bit = 0;
        while bit < BLOCK as u32 {
            let from = !0u64 << bit;
            match run_start {
                None => {
                    let starts = mask & from;
                    if starts == 0 {
                        break;
                    }
                    bit = starts.trailing_zeros();
                    run_start = Some(base + bit as usize);
                }
                Some(start) => {
                    // Only positions of the run's parity can end it.
                    let parity = if width == 1 {
                        !0
                    } else {
                        0x5555_5555_5555_5555u64 << (start & 1)
                    };
                    let ends = !mask & parity & from;
                    if ends == 0 {
                        break;
                    }
                    let end = ends.trailing_zeros();
                    if !emit(start, base + end as usize) {
                        return false;
                    }
                    run_start = None;
                    bit = end + 1;
                }
            }
        }
    }
    // A run still open ends exactly at the end of the input: any earlier end
    // position of its parity has a 0 bit in the last block.
    match run_start {
        Some(start) => emit(start, doc.len()),
        None => true,
    }
}

mod explain;
#[cfg(test)]
mod tests;

/// The ragged string output of `printable_strings`.
impl crate::extractor::RaggedStringsExtractor for PrintableStrings {
    fn append_strings(&self, doc: &[u8], strings: &mut Strings) {
        PrintableStrings::append_strings(self, doc, strings);
    }
}
