//! [`Offsets`]: where each row (or string) of a column starts and ends, the
//! one offsets type of every layout and host.
//!
//! As arrow-rs's `OffsetBuffer<i64>`: N+1 `i64` values from 0, never going
//! back, so row `i` is `offsets[i]..offsets[i + 1]`. That is the form of
//! Arrow's `LargeList` and `LargeBinary`, of `tf.RaggedTensor`'s row
//! splits and of scipy's CSR `indptr`, so every host hands the buffer on as
//! it is. The invariant is kept by construction: [`Offsets::push`] checks
//! one comparison per row (what the core's extractors call), and
//! [`Offsets::try_from_vec`] checks a whole vector once (what a host calls
//! on offsets made elsewhere). Nobody re-checks a bare vector; what a
//! batch still checks is that the last offset is its values' length
//! (`Batch::check`), one comparison.
//!
//! ```
//! use rustfx::output::Offsets;
//! let mut offsets = Offsets::new();
//! offsets.push(2);
//! offsets.push(2);
//! offsets.push(5);
//! assert_eq!(offsets.as_slice(), [0, 2, 2, 5]);
//! assert_eq!((offsets.rows(), offsets.range(2)), (3, 2..5));
//! assert!(Offsets::try_from_vec(vec![0, 3, 1]).is_err());
//! ```

use crate::{Error, Result};

/// N+1 non-decreasing `i64` offsets from 0 (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Offsets(Vec<i64>);

impl Default for Offsets {
    fn default() -> Self {
        Offsets::new()
    }
}

impl Offsets {
    /// No rows: `[0]`.
    pub fn new() -> Offsets {
        Offsets(vec![0])
    }

    /// No rows, with room for `rows` more.
    pub fn with_capacity(rows: usize) -> Offsets {
        let mut offsets = Vec::with_capacity(rows.saturating_add(1));
        offsets.push(0);
        Offsets(offsets)
    }

    /// `offsets` checked: `InvalidArgument` unless they start at 0 and
    /// never go back.
    pub fn try_from_vec(offsets: Vec<i64>) -> Result<Offsets> {
        if offsets.first() != Some(&0) {
            return Err(Error::invalid_argument(
                "offsets must start at 0 (N+1 values for N rows)",
            ));
        }
        if offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::invalid_argument("offsets must never go back"));
        }
        Ok(Offsets(offsets))
    }

    /// Offsets of rows of these lengths.
    pub fn from_lengths(lengths: impl IntoIterator<Item = usize>) -> Offsets {
        let lengths = lengths.into_iter();
        let mut offsets = Offsets::with_capacity(lengths.size_hint().0);
        for length in lengths {
            offsets.push(offsets.last() + length);
        }
        offsets
    }

    /// Ends one more row at `end`. Panics if `end` is before the last end
    /// (a bug in the caller: every entry point catches the panic).
    pub fn push(&mut self, end: usize) {
        let end = i64::try_from(end).expect("an offset past i64::MAX");
        let last = self.0[self.0.len() - 1];
        assert!(end >= last, "offset {end} before the last, {last}");
        self.0.push(end);
    }

    /// Room for `rows` more rows.
    pub fn reserve(&mut self, rows: usize) {
        self.0.reserve(rows);
    }

    /// Back to no rows.
    pub fn clear(&mut self) {
        self.0.truncate(1);
    }

    /// How many rows.
    pub fn rows(&self) -> usize {
        self.0.len() - 1
    }

    /// The last offset: where the last row ends (0 for no rows).
    pub fn last(&self) -> usize {
        self.0[self.0.len() - 1] as usize
    }

    /// The range of row `i`.
    pub fn range(&self, i: usize) -> std::ops::Range<usize> {
        self.0[i] as usize..self.0[i + 1] as usize
    }

    /// Every row's range, in order.
    pub fn ranges(&self) -> impl ExactSizeIterator<Item = std::ops::Range<usize>> + '_ {
        self.0.windows(2).map(|w| w[0] as usize..w[1] as usize)
    }

    /// The N+1 offsets.
    pub fn as_slice(&self) -> &[i64] {
        &self.0
    }

    /// Where each row ends (the N offsets after the first).
    pub fn ends(&self) -> &[i64] {
        &self.0[1..]
    }
}

#[cfg(test)]
mod tests {
    use super::Offsets;

    #[test]
    fn built_and_checked_offsets_agree() {
        let offsets = Offsets::from_lengths([3, 0, 2]);
        assert_eq!(offsets.as_slice(), [0, 3, 3, 5]);
        assert_eq!(offsets.ends(), [3, 3, 5]);
        assert_eq!(offsets.ranges().collect::<Vec<_>>(), [0..3, 3..3, 3..5]);
        assert_eq!(Offsets::try_from_vec(vec![0, 3, 3, 5]).unwrap(), offsets);
        assert!(Offsets::try_from_vec(vec![]).is_err());
        assert!(Offsets::try_from_vec(vec![1, 3]).is_err());
        assert!(Offsets::try_from_vec(vec![0, 3, 2]).is_err());
        let mut cleared = offsets.clone();
        cleared.clear();
        assert_eq!((cleared.rows(), cleared.last()), (0, 0));
        assert_eq!(Offsets::default(), cleared);
    }

    #[test]
    #[should_panic(expected = "before the last")]
    fn a_push_that_goes_back_panics() {
        let mut offsets = Offsets::from_lengths([4]);
        offsets.push(3);
    }
}
