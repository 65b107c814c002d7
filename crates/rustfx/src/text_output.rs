//! The text forms the command-line programs print: `rustfx-predict` and
//! `rustfx-sensor` one line per file, the path first, then `\tKEY=values`
//! per output (docs/serving.md), shared so both print exactly the same way;
//! `rustfx-features` a [`Batch`]'s rows ([`text_rows`]).

use crate::output::{row_range, Batch, Values};
use std::fmt::{Display, Write as _};
use std::io::Write;

/// Writes a path's bytes as they are, except `\`, tab, newline and CR,
/// escaped so that one file is always one line with the path first.
pub fn write_path(out: &mut impl Write, path: &[u8]) -> std::io::Result<()> {
    for &byte in path {
        match byte {
            b'\\' => out.write_all(b"\\\\")?,
            b'\t' => out.write_all(b"\\t")?,
            b'\n' => out.write_all(b"\\n")?,
            b'\r' => out.write_all(b"\\r")?,
            _ => out.write_all(&[byte])?,
        }
    }
    Ok(())
}

/// Writes bytes of unknown content (a string or n-gram of a hostile file)
/// as printable ASCII: `\\`, `\t`, `\n`, `\r`, and `\xHH` for every other
/// byte outside `0x20..=0x7e`, so a field never breaks a TSV line and
/// reads back exactly (`rustfx-features --explain`).
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
            let s = String::from_utf8_lossy(&strings.bytes[row_range(&strings.ends, j)]);
            serde_json::Value::from(s.as_ref()).to_string()
        }
        _ => values.value_text(j).unwrap_or_default(),
    };
    let ragged = |row_ends: &[u64], cell: &dyn Fn(usize) -> String| -> Vec<Vec<String>> {
        (0..row_ends.len())
            .map(|i| row_range(row_ends, i).map(cell).collect())
            .collect()
    };
    match batch {
        Batch::Dense { rows, width, .. } => (0..*rows)
            .map(|i| (i * width..(i + 1) * width).map(text).collect())
            .collect(),
        Batch::Ragged { row_ends, .. } => ragged(row_ends, &text),
        Batch::Sparse {
            indices, row_ends, ..
        } => ragged(row_ends, &|j| format!("{}:{}", indices[j], text(j))),
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
    fn paths_stay_on_one_line() {
        let mut out = Vec::new();
        write_path(&mut out, b"a\tb\nc\\d\re\xff").unwrap();
        assert_eq!(out, b"a\\tb\\nc\\\\d\\re\xff");
    }
}
