//! Explanations of the printable strings.

use super::PrintableStrings;
use crate::explain::{not_explained, Explain, ExplainOptions, Explanation};
use crate::Result;

impl Explain for PrintableStrings {
    fn explain(&self, _doc: &[u8], _options: &ExplainOptions) -> Result<Explanation> {
        Err(not_explained("printable_strings", "not yet"))
    }
}
