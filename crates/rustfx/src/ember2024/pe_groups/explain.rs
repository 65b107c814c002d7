//! Explanations of thrember's PE groups: the header field, section, import,
//! export, directory or warning behind each value, at its place in the file.

use super::super::EmberGroup;
use crate::explain::{not_explained, Contribution, Contributions};
use crate::pe::Pe;
use crate::Result;

/// Pushes the contributions of PE group `group` of `pe` (none when pefile
/// would reject the file: the group is zeros), their indices offset by
/// `base`, the group's first index in the row. Stops quietly at the cap
/// (`out.is_full()`).
pub(crate) fn explain_pe_group(
    group: EmberGroup,
    _pe: Option<&Pe>,
    _base: u64,
    _out: &mut Contributions,
) -> Result<()> {
    Err(not_explained(
        "ember_features",
        &format!("group {} not yet", group.name()),
    ))
}

/// Writes the values of PE group `group` (`out`, its slice of the row) from
/// its contributions (indices offset by `base`), in the group's own
/// arithmetic.
pub(crate) fn assemble_pe_group(
    group: EmberGroup,
    _contributions: &[Contribution],
    _base: u64,
    _out: &mut [f32],
) -> Result<()> {
    Err(not_explained(
        "ember_features",
        &format!("group {} not yet", group.name()),
    ))
}
