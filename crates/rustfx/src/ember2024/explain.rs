//! Explanations of the EMBER2024 groups.

use super::general::GeneralFileInfo;
use super::strings::Ember2024Strings;
use super::EmberFeatures;
use crate::explain::{not_explained, Explain, ExplainOptions, Explanation};
use crate::Result;

impl Explain for GeneralFileInfo {
    fn explain(&self, _doc: &[u8], _options: &ExplainOptions) -> Result<Explanation> {
        Err(not_explained("general_file_info", "not yet"))
    }
}

impl Explain for Ember2024Strings {
    fn explain(&self, _doc: &[u8], _options: &ExplainOptions) -> Result<Explanation> {
        Err(not_explained("ember2024_string_features", "not yet"))
    }
}

impl Explain for EmberFeatures {
    fn explain(&self, _doc: &[u8], _options: &ExplainOptions) -> Result<Explanation> {
        Err(not_explained("ember_features", "not yet"))
    }
}
