//! Explanations of the hashed n-grams.

use super::{NgramCounter, NgramCounts, NgramHasher, NgramSequence};
use crate::explain::{not_explained, Explain, ExplainOptions, Explanation};
use crate::Result;

impl Explain for NgramHasher {
    fn explain(&self, _doc: &[u8], _options: &ExplainOptions) -> Result<Explanation> {
        Err(not_explained("hashed_ngrams", "not yet"))
    }
}

impl Explain for NgramCounter {
    fn explain(&self, _doc: &[u8], _options: &ExplainOptions) -> Result<Explanation> {
        Err(not_explained("hashed_ngrams", "not yet"))
    }
}

impl Explain for NgramCounts {
    fn explain(&self, _doc: &[u8], _options: &ExplainOptions) -> Result<Explanation> {
        Err(not_explained("hashed_ngrams", "not yet"))
    }
}

impl Explain for NgramSequence {
    fn explain(&self, _doc: &[u8], _options: &ExplainOptions) -> Result<Explanation> {
        Err(not_explained("hashed_ngrams", "not yet"))
    }
}
