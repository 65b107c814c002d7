//! The text forms the command-line programs print: one line per file, the
//! path first, escaped ([`write_escaped`]), then `\tKEY=values` per output
//! for `rustfx-predict` and `rustfx-sensor` ([`push_values`]: shared so both
//! print exactly the same way), `\tvalues` for `rustfx-features` (a
//! [`Batch`]'s rows, [`text_rows`]).

use rustfx::output::{Batch, Offsets, Values};
use std::fmt::{Display, Write as _};
use std::io::Write;

/// Writes bytes of unknown content (a path, a string or n-gram of a hostile
/// file) as printable ASCII: `\\`, `\t`, `\n`, `\r`, and `\xHH` for every
/// other byte outside `0x20..=0x7e`, so a field never breaks a TSV line and
/// reads back exactly ([`unescape`]). A path is bytes: a file name that is
/// not UTF-8 (`bad\xffname`) prints as such and reads back as the same name.
pub fn write_escaped(out: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    for &byte in bytes {
        match byte {
            b'\\' => out.write_all(b"\\\\")?,
            b'\t' => out.write_all(b"\\t")?,
            b'\n' => out.write_all(b"\\n")?,
            b'\r' => out.write_all(b"\\r")?,
            0x20..=0x7e => out.write_all(&[byte])?,
            _ => write!(out, "\\x{byte:02x}")?,
        }
    }
    Ok(())
}

/// `bytes` as [`write_escaped`] writes them, for a message.
pub fn escaped(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    // Writing to a Vec cannot fail; the escape is ASCII.
    let _ = write_escaped(&mut out, bytes);
    String::from_utf8_lossy(&out).into_owned()
}

/// The bytes [`write_escaped`] wrote as `text`; `None` if `text` is not
/// such an escape (a lone `\`, an unknown escape, a byte outside
/// `0x20..=0x7e`).
pub fn unescape(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(byte) = bytes.next() {
        if byte != b'\\' {
            (0x20..=0x7e).contains(&byte).then_some(())?;
            out.push(byte);
            continue;
        }
        out.push(match bytes.next()? {
            b'\\' => b'\\',
            b't' => b'\t',
            b'n' => b'\n',
            b'r' => b'\r',
            b'x' => {
                let hex = [bytes.next()?, bytes.next()?];
                u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?
            }
            _ => return None,
        });
    }
    Some(out)
}

/// Appends `values`, space-separated, with `Display`: for floats Rust's
/// shortest round-trip form (`0.1`, `-0`, `NaN`, `inf`), which parses back
/// to the same bits.
pub fn push_values<T: Display>(values: &[T], out: &mut String) {
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{v}");
    }
}

/// Each document of `batch` as text values, one per value: numbers in
/// Rust's `Debug` form (floats shortest round-trip, so exact), a sparse
/// value as `index:value`, a string as JSON. What `rustfx-features` prints,
/// space-separated, one line per file.
pub fn text_rows(batch: &Batch) -> Vec<Vec<String>> {
    let values = batch.values();
    let text = |j: usize| match values {
        Values::String(strings) => {
            let s = String::from_utf8_lossy(&strings.bytes[strings.offsets.range(j)]);
            serde_json::Value::from(s.as_ref()).to_string()
        }
        _ => values.value_text(j).unwrap_or_default(),
    };
    let ragged = |offsets: &Offsets, cell: &dyn Fn(usize) -> String| -> Vec<Vec<String>> {
        offsets
            .ranges()
            .map(|range| range.map(cell).collect())
            .collect()
    };
    match batch {
        Batch::Dense { rows, width, .. } => (0..*rows)
            .map(|i| (i * width..(i + 1) * width).map(text).collect())
            .collect(),
        Batch::Ragged { offsets, .. } => ragged(offsets, &text),
        Batch::Sparse {
            indices, offsets, ..
        } => ragged(offsets, &|j| format!("{}:{}", indices[j], text(j))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_exactly() {
        let values = [0.1f32, -0.0, 1e-45, f32::MAX, f32::NAN, f32::INFINITY];
        let mut out = String::new();
        push_values(&values, &mut out);
        assert_eq!(out, "0.1 -0 0.000000000000000000000000000000000000000000001 340282350000000000000000000000000000000 NaN inf");
        for (text, want) in out.split(' ').zip(values).take(4) {
            assert_eq!(text.parse::<f32>().unwrap().to_bits(), want.to_bits());
        }
    }

    #[test]
    fn any_bytes_stay_on_one_line_and_read_back() {
        let name = b"a\tb\nc\\d\re\xff\x00 \xc3\xa9~";
        let mut out = Vec::new();
        write_escaped(&mut out, name).unwrap();
        assert_eq!(out, b"a\\tb\\nc\\\\d\\re\\xff\\x00 \\xc3\\xa9~");
        assert_eq!(escaped(name).as_bytes(), out);
        assert_eq!(unescape(&escaped(name)).unwrap(), name);
        for byte in 0..=255u8 {
            assert_eq!(unescape(&escaped(&[byte])).unwrap(), [byte]);
        }
        for bad in ["\\", "\\x", "\\xf", "\\xgg", "\\q", "\t", "\u{e9}"] {
            assert_eq!(unescape(bad), None, "{bad:?}");
        }
    }
}
