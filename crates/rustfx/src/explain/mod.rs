//! Explanations: from an extractor's output back to the bytes of the
//! document that made it.
//!
//! [`Extractor::explain`] lists the *contributions* of one document: each
//! says which output index it went to (a bucket, a dimension, a position),
//! where in the document its bytes are (offset and length), what it added,
//! and for tokens and strings their text. The hashing trick cannot be
//! inverted, but rustfx computes every feature itself, so it can record
//! each increment as it makes it.
//!
//! **Exact by construction.** Summing the contributions per output index,
//! then finishing the sums in the extractor's own arithmetic (a histogram's
//! division by the length, a row norm), gives the extractor's output bit
//! for bit: [`Explanation::reassemble`] does exactly that, and
//! `tests/explain.rs` checks it against extraction for every registry
//! example, random inputs and the PE corpus. What each extractor's values
//! mean is in docs/explain.md and in [`Explanation::combine`].
//!
//! **Bounded.** At most [`ExplainOptions::max_contributions`] contributions
//! (default [`DEFAULT_MAX_CONTRIBUTIONS`], at most [`MAX_CONTRIBUTIONS`]),
//! each text cut at [`ExplainOptions::max_text_bytes`]. A capped
//! explanation says so ([`Explanation::truncated`]) and does not reassemble.
//!
//! ```
//! use rustfx::spec::FeatureSpec;
//! let spec = FeatureSpec::from_json(r#"{"extractor": "byte_histogram"}"#).unwrap();
//! let explanation = spec.build().unwrap().explain(b"aab").unwrap();
//! // One contribution per byte value: its count, at its first offset.
//! let a = &explanation.contributions[0];
//! assert_eq!((a.index, a.offset, a.value), (u64::from(b'a'), 0, 2.0));
//! ```
//!
//! [`Extractor::explain`]: crate::extractor::Extractor::explain

use crate::extractor::Extractor;
use crate::output::Batch;
use crate::{Error, Result};

/// Contributions per document unless a caller asks for another cap.
pub const DEFAULT_MAX_CONTRIBUTIONS: usize = 100_000;
/// The largest cap a caller may ask for. An explanation holds at most
/// `max_contributions * (56 + max_text_bytes)` bytes (a contribution is 56
/// bytes plus its text): 31 MB at the defaults.
pub const MAX_CONTRIBUTIONS: usize = 10_000_000;
/// A contribution's text is cut at this many bytes unless a caller asks
/// otherwise (its offset and length stay those of the whole span).
pub const DEFAULT_MAX_TEXT_BYTES: usize = 256;
/// The longest text a caller may ask for.
pub const MAX_TEXT_BYTES: usize = 1 << 16;

/// One increment of one output index, and the bytes that made it.
#[derive(Clone, Debug, PartialEq)]
pub struct Contribution {
    /// The output index: a bucket id, a dimension, or a position in the
    /// row (sequences, strings).
    pub index: u64,
    /// Where its bytes start in the document.
    pub offset: u64,
    /// How many bytes of the document it covers (0: none, e.g. a value
    /// of the document as a whole on an empty one).
    pub length: u64,
    /// What it added to the extractor's sum at `index` (see
    /// [`Explanation::combine`] for how sums become the output).
    pub value: f64,
    /// For tokens, n-grams, strings and names: their text as the extractor
    /// saw it (lowercased, joined), cut at the text cap; empty otherwise.
    pub text: Vec<u8>,
}

/// How to explain: the caps, and whether byte histograms list every byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExplainOptions {
    /// At most this many contributions; then the explanation is truncated.
    pub max_contributions: usize,
    /// Each text is cut at this many bytes.
    pub max_text_bytes: usize,
    /// Byte histograms: one contribution per byte (offsets of every byte)
    /// instead of one per byte value (its count, at its first offset).
    pub byte_offsets: bool,
}

impl Default for ExplainOptions {
    fn default() -> Self {
        ExplainOptions {
            max_contributions: DEFAULT_MAX_CONTRIBUTIONS,
            max_text_bytes: DEFAULT_MAX_TEXT_BYTES,
            byte_offsets: false,
        }
    }
}

impl ExplainOptions {
    /// Checked options: `max_contributions` in [1, [`MAX_CONTRIBUTIONS`]],
    /// `max_text_bytes` in [0, [`MAX_TEXT_BYTES`]].
    pub fn new(
        max_contributions: usize,
        max_text_bytes: usize,
        byte_offsets: bool,
    ) -> Result<Self> {
        if !(1..=MAX_CONTRIBUTIONS).contains(&max_contributions) {
            return Err(Error::invalid_argument(format!(
                "max_contributions must be in [1, {MAX_CONTRIBUTIONS}], got {max_contributions}"
            )));
        }
        if max_text_bytes > MAX_TEXT_BYTES {
            return Err(Error::invalid_argument(format!(
                "max_text_bytes must be in [0, {MAX_TEXT_BYTES}], got {max_text_bytes}"
            )));
        }
        Ok(ExplainOptions {
            max_contributions,
            max_text_bytes,
            byte_offsets,
        })
    }
}

/// Finishes summed contributions into the extractor's output for the one
/// document (a batch of one row), in the extractor's own arithmetic.
pub type Assemble = Box<dyn Fn(&[Contribution]) -> Result<Batch> + Send + Sync>;

/// The contributions of one document to an extractor's output.
pub struct Explanation {
    /// In the order the extractor made them.
    pub contributions: Vec<Contribution>,
    /// Whether the cap stopped the explanation before the document's end
    /// (then [`reassemble`](Self::reassemble) refuses).
    pub truncated: bool,
    /// One line: how the contributions at an index make its output value.
    pub combine: &'static str,
    assemble: Assemble,
}

impl std::fmt::Debug for Explanation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Explanation")
            .field("contributions", &self.contributions)
            .field("truncated", &self.truncated)
            .field("combine", &self.combine)
            .finish()
    }
}

impl Explanation {
    /// An explanation from its contributions and the extractor's finishing
    /// step.
    pub fn new(contributions: Contributions, combine: &'static str, assemble: Assemble) -> Self {
        Explanation {
            truncated: contributions.truncated,
            contributions: contributions.list,
            combine,
            assemble,
        }
    }

    /// The extractor's output for the document, rebuilt from the
    /// contributions alone: equal to extraction bit for bit (a `Batch` of
    /// one row). An error when the explanation was truncated.
    pub fn reassemble(&self) -> Result<Batch> {
        if self.truncated {
            return Err(Error::invalid_argument(
                "a truncated explanation does not reassemble; raise max_contributions",
            ));
        }
        (self.assemble)(&self.contributions)
    }
}

/// Contributions gathered under the caps: an explainer pushes until
/// [`push`](Self::push) says the cap is reached, then stops.
#[derive(Debug)]
pub struct Contributions {
    list: Vec<Contribution>,
    max: usize,
    max_text: usize,
    truncated: bool,
}

impl Contributions {
    /// An empty list under `options`' caps.
    pub fn new(options: &ExplainOptions) -> Self {
        Contributions {
            list: Vec::new(),
            max: options.max_contributions,
            max_text: options.max_text_bytes,
            truncated: false,
        }
    }

    /// Adds a contribution (its text cut at the cap). `false` once the cap
    /// is reached: this one was dropped and the explanation is truncated.
    pub fn push(&mut self, index: u64, offset: u64, length: u64, value: f64, text: &[u8]) -> bool {
        if self.list.len() >= self.max {
            self.truncated = true;
            return false;
        }
        self.list.push(Contribution {
            index,
            offset,
            length,
            value,
            text: text[..text.len().min(self.max_text)].to_vec(),
        });
        true
    }

    /// Whether the cap has stopped it.
    pub fn is_full(&self) -> bool {
        self.truncated
    }

    /// How many so far.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there are none yet.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// What every extractor implements: its explanation of one document, or
/// an error saying why it has none.
pub trait Explain {
    /// The contributions of `doc` under `options`' caps.
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation>;
}

/// The error of an extractor that does not explain, saying why.
pub fn not_explained(extractor: &str, why: &str) -> Error {
    Error::invalid_argument(format!("{extractor} does not explain: {why}"))
}

/// The sum of the contributions' values at each index below `width`, in
/// the order they were made (the order of the extractor's own additions).
/// Indices beyond `width` are an `Internal` error.
pub fn sums_by_index(contributions: &[Contribution], width: usize) -> Result<Vec<f64>> {
    sums_from(contributions, 0, width)
}

/// [`sums_by_index`] of a slice of a row, the indices `base..base + width`
/// (a group of `ember_features`), indexed from 0.
pub fn sums_from(contributions: &[Contribution], base: u64, width: usize) -> Result<Vec<f64>> {
    let mut sums = vec![0.0f64; width];
    for c in contributions {
        sums[slot_of(c, base, width)?] += c.value;
    }
    Ok(sums)
}

/// `c`'s index as a slot of the indices `base..base + width`, counted from
/// 0; outside them an `Internal` error (a bug in the explainer).
pub fn slot_of(c: &Contribution, base: u64, width: usize) -> Result<usize> {
    c.index
        .checked_sub(base)
        .and_then(|i| usize::try_from(i).ok())
        .filter(|&i| i < width)
        .ok_or_else(|| {
            Error::new(
                crate::ErrorKind::Internal,
                format!(
                    "contribution to index {} outside {base}..{base}+{width} (a bug in rustfx)",
                    c.index
                ),
            )
        })
}

/// A batch of one dense float32 row.
pub fn float32_row(values: Vec<f32>) -> Batch {
    Batch::dense_row(values)
}

impl Extractor {
    /// The contributions of `doc` to this extractor's output, under the
    /// default caps ([`ExplainOptions::default`]); an `InvalidArgument`
    /// error saying why for an extractor that does not explain.
    pub fn explain(&self, doc: &[u8]) -> Result<Explanation> {
        self.explain_with(doc, &ExplainOptions::default())
    }

    /// [`explain`](Self::explain) under `options`.
    pub fn explain_with(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        self.explainer().explain(doc, options)
    }
}

#[cfg(test)]
mod tests;
