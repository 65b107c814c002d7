//! Explanations of the printable strings: one contribution per output
//! string, at the offset GNU `strings -a -t d` prints for it.
//!
//! The walk is GNU's loop one character at a time (not extraction's 64-byte
//! masks), so the exactness test compares two implementations; the offsets
//! are checked against `strings -t d` itself (tests/printable_strings.rs).

use super::{is_graphic, PrintableStrings, StringEncoding};
use crate::explain::{Contribution, Contributions, Explain, ExplainOptions, Explanation};
use crate::output::{Batch, Strings, Values};
use crate::{Error, ErrorKind, Result};

/// Whether the character of `width` bytes at `doc[p..]` is graphic (false
/// when the end cuts it): a graphic low byte, then zeros.
fn graphic_at(doc: &[u8], p: usize, width: usize) -> bool {
    match doc.get(p..p.saturating_add(width)) {
        Some([low, high @ ..]) => is_graphic(*low) && high.iter().all(|&b| b == 0),
        _ => false,
    }
}

/// GNU's scan for characters of `width` bytes: a run starts at the first
/// position whose character is graphic, goes on at stride `width` and ends
/// at the first character that is not (or is cut by the end); the search
/// resumes one byte after that end (`unget_part_char`). Calls `f(start,
/// end)` for each run of at least `min_len` characters; stops when `f`
/// returns false, and then returns false.
fn for_each_string(
    doc: &[u8],
    width: usize,
    min_len: usize,
    mut f: impl FnMut(usize, usize) -> bool,
) -> bool {
    let mut p = 0;
    while p < doc.len() {
        if !graphic_at(doc, p, width) {
            p += 1;
            continue;
        }
        let start = p;
        let mut end = p;
        while graphic_at(doc, end, width) {
            end += width;
        }
        if (end - start) / width >= min_len && !f(start, end) {
            return false;
        }
        p = end + 1;
    }
    true
}

impl Explain for PrintableStrings {
    /// Index: the string's position in the row. One contribution per
    /// string: offset = where `strings -a -t d` says it starts (its first
    /// byte, for utf16le too), length = its bytes in the document (two per
    /// utf16le character; the kept part of a string cut by `max_bytes`),
    /// value 1, text = the string as output.
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        let mut out = Contributions::new(options);
        let mut strings_left = self.max_strings.unwrap_or(usize::MAX);
        let mut bytes_left = self.max_bytes.unwrap_or(usize::MAX);
        // Whether some text is longer than max_text_bytes (then the texts
        // do not rebuild the output).
        let mut cut = false;
        let mut index = 0u64;
        for &encoding in &self.encodings {
            let width = match encoding {
                StringEncoding::Ascii => 1,
                StringEncoding::Utf16le => 2,
            };
            let go_on = for_each_string(doc, width, self.min_len, |start, end| {
                let take = ((end - start) / width).min(bytes_left);
                cut |= take > options.max_text_bytes;
                // Only the bytes the text cap keeps: a utf16le string's
                // narrow text is built, so never more than the cap.
                let shown = take.min(options.max_text_bytes);
                let text: Vec<u8> = doc
                    .get(start..)
                    .unwrap_or(&[])
                    .iter()
                    .step_by(width)
                    .take(shown)
                    .copied()
                    .collect();
                let length = (take * width) as u64;
                if !out.push(index, start as u64, length, 1.0, &text) {
                    return false;
                }
                index += 1;
                bytes_left -= take;
                strings_left -= 1;
                strings_left > 0 && bytes_left > 0
            });
            if !go_on {
                break;
            }
        }
        let max_text_bytes = options.max_text_bytes;
        let assemble = move |contributions: &[Contribution]| {
            if cut {
                return Err(Error::invalid_argument(format!(
                    "a string is longer than max_text_bytes = {max_text_bytes}, so its text \
                     was cut: raise max_text_bytes to reassemble"
                )));
            }
            strings_row(contributions)
        };
        Ok(Explanation::new(
            out,
            "the string at that position of the row; output = the texts in index order",
            Box::new(assemble),
        ))
    }
}

/// The row of one document: the texts, in index order.
fn strings_row(contributions: &[Contribution]) -> Result<Batch> {
    let mut strings = Strings::default();
    for (i, c) in contributions.iter().enumerate() {
        if c.index != i as u64 {
            return Err(Error::new(
                ErrorKind::Internal,
                format!("string {i} has index {} (a bug in rustfx)", c.index),
            ));
        }
        strings.bytes.extend_from_slice(&c.text);
        strings.offsets.push(strings.bytes.len());
    }
    Ok(Batch::ragged_row(Values::String(strings)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explained(s: &PrintableStrings, doc: &[u8]) -> Vec<(u64, u64, Vec<u8>)> {
        let e = s.explain(doc, &ExplainOptions::default()).unwrap();
        e.contributions
            .into_iter()
            .map(|c| (c.offset, c.length, c.text))
            .collect()
    }

    #[test]
    fn offsets_lengths_and_texts() {
        let both = [StringEncoding::Ascii, StringEncoding::Utf16le];
        let s = PrintableStrings::new(3, &both, None, None).unwrap();
        let doc = b"ab\0xyz\x7fw\0i\0d\0e\0";
        assert_eq!(
            explained(&s, doc),
            [(3, 3, b"xyz".to_vec()), (7, 8, b"wide".to_vec())]
        );
    }

    #[test]
    fn the_bounds_cut_like_extraction() {
        let s = PrintableStrings::new(2, &[StringEncoding::Utf16le], Some(5), Some(3)).unwrap();
        let doc = b"\x01a\0b\0\0\0c\0d\0";
        assert_eq!(
            explained(&s, doc),
            [(1, 4, b"ab".to_vec()), (7, 2, b"c".to_vec())]
        );
        let s = PrintableStrings::new(1, &[StringEncoding::Ascii], Some(2), None).unwrap();
        assert_eq!(explained(&s, b"a\nb\nc").len(), 2);
    }

    #[test]
    fn a_cut_text_does_not_reassemble() {
        let s = PrintableStrings::new(1, &[StringEncoding::Ascii], None, None).unwrap();
        let options = ExplainOptions::new(10, 2, false).unwrap();
        let e = s.explain(b"abc", &options).unwrap();
        assert_eq!(e.contributions[0].text, b"ab");
        let error = e.reassemble().unwrap_err();
        assert!(error.message().contains("raise max_text_bytes"), "{error}");
        let e = s.explain(b"ab", &options).unwrap();
        assert!(e.reassemble().is_ok());
    }
}
