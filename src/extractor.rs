//! The one abstraction every fixed-width extractor implements.
//!
//! A fixed-width extractor turns each document into one row of exactly
//! [`RowExtractor::width`] values. The TensorFlow bridge, the C++ row kernel,
//! `rustfx-features` and the benches all drive extractors through this trait,
//! so a new one is a new implementation, not a new arm in a shared switch.
//! Parameters are checked when the extractor is built (its `new`), so a
//! built extractor cannot fail on any input: `write_row` only fails when the
//! caller's row has the wrong length.
//!
//! ```
//! use rustfx::byte_features::{ByteHistogram, EmptyInput};
//! use rustfx::extractor::RowExtractor;
//! let histogram = ByteHistogram::new(EmptyInput::Zeros);
//! let row = histogram.row(b"aab");
//! assert_eq!(row.len(), histogram.width());
//! assert_eq!(row[usize::from(b'a')], 2.0 / 3.0);
//! ```

use crate::{Error, ErrorKind, Result};

/// A validated extractor with a fixed output width. Immutable, so one
/// instance serves many threads at once.
pub trait RowExtractor: Send + Sync {
    /// The value type of a row: `f32` features, `i32` or `i64` ids.
    type Value: Copy + Default + Send;

    /// Values per row, fixed when the extractor was built.
    fn width(&self) -> usize;

    /// Writes the row of `doc` into `out`, which must hold exactly
    /// [`width`](Self::width) values (otherwise an `Internal` error, with
    /// `out` untouched).
    fn write_row(&self, doc: &[u8], out: &mut [Self::Value]) -> Result<()>;

    /// At most how many bytes of a document computing its row costs, when
    /// the extractor stops early (a sequence of `max_tokens` ids, the first
    /// `max_len` bytes); `None`: the whole document. Only a hint: kernels
    /// split a batch between threads by each document's cost, and without
    /// the cap one long document would count as far more work than it is.
    fn work_bytes_hint(&self) -> Option<usize> {
        None
    }

    /// The row of `doc` in a new vector.
    fn row(&self, doc: &[u8]) -> Vec<Self::Value> {
        let mut out = vec![Self::Value::default(); self.width()];
        // Cannot fail: `out` has exactly `width()` values.
        let _ = self.write_row(doc, &mut out);
        out
    }
}

/// `out` as a fixed-size array of `N` values, or the `Internal` error that
/// [`RowExtractor::write_row`] reports for a row of the wrong length.
pub fn fixed_row<T, const N: usize>(out: &mut [T]) -> Result<&mut [T; N]> {
    let got = out.len();
    out.try_into().map_err(|_| wrong_width(got, N))
}

/// Checks that a row of `got` values fits an extractor of `width`.
pub fn check_width(got: usize, width: usize) -> Result<()> {
    if got == width {
        Ok(())
    } else {
        Err(wrong_width(got, width))
    }
}

fn wrong_width(got: usize, width: usize) -> Error {
    Error::new(
        ErrorKind::Internal,
        format!("output row has {got} values, expected {width}"),
    )
}
