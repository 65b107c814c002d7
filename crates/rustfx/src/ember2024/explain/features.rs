//! `ember_features`' explanation: each group's contributions, their indices
//! offset by the group's start in the row, and each group's slice rebuilt
//! in that group's arithmetic.

use super::counts_of;
use super::general::{assemble_general, explain_general};
use super::strings::{assemble_strings, explain_strings};
use crate::byte_features::{
    byte_counts, explain_byte_values, explain_entropy_blocks, normalise_like_numpy_f32,
};
use crate::ember2024::pe_groups::explain::{assemble_pe_group, explain_pe_group};
use crate::ember2024::{EmberFeatures, EmberGroup};
use crate::explain::sums_from;
use crate::explain::{
    float32_row, Contribution, Contributions, Explain, ExplainOptions, Explanation,
};
use crate::output::Batch;
use crate::pe::Pe;
use crate::{Error, ErrorKind, Result};

/// What the contributions mean, group by group.
const COMBINE: &str = "general: size, entropy terms, start bytes as general_file_info, is_pe 1 \
     over the whole document when pefile parses it; histogram: the count of the byte value (or \
     1 per byte with byte_offsets), byteentropy: the count of the high nibble in a block of \
     that entropy bin, both output = float32(count) / numpy float32 sum; strings: as \
     ember2024_string_features; PE groups: the header field, section, import, export, \
     directory, certificate or warning behind each value";

impl Explain for EmberFeatures {
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        let mut out = Contributions::new(options);
        // The PE parse of `write_row`, once (pefile's warnings need the
        // byte counts).
        let counts = self.needs_byte_counts.then(|| byte_counts(doc));
        let pe = if self.needs_pe {
            Pe::parse_with_byte_counts(doc, counts.as_ref()).ok()
        } else {
            None
        };
        let mut base = 0u64;
        for &group in &self.groups {
            let more = match group {
                EmberGroup::General => {
                    let at = [0, 1, 3, 4, 5, 6].map(|k| base + k);
                    explain_general(doc, at, &mut out)
                        && (pe.is_none() || out.push(base + 2, 0, doc.len() as u64, 1.0, &[]))
                }
                EmberGroup::Histogram => {
                    explain_byte_values(doc, base, options.byte_offsets, &mut out)
                }
                EmberGroup::ByteEntropy => {
                    explain_entropy_blocks(&self.byte_entropy, doc, base, &mut out)
                }
                EmberGroup::Strings => explain_strings(&self.strings, doc, base, &mut out)?,
                EmberGroup::Pe(group) => {
                    explain_pe_group(group, pe.as_ref(), base, &mut out)?;
                    !out.is_full()
                }
            };
            if !more {
                break;
            }
            base += group.width() as u64;
        }
        let groups = self.groups.clone();
        Ok(Explanation::new(
            out,
            COMBINE,
            Box::new(move |contributions: &[Contribution]| assemble(&groups, contributions)),
        ))
    }
}

/// The row from the contributions: each group's (they come group after
/// group, in the row's order) finished into its slice.
fn assemble(groups: &[EmberGroup], contributions: &[Contribution]) -> Result<Batch> {
    let width = groups.iter().map(|g| g.width()).sum();
    let mut row = vec![0f32; width];
    let mut rest_row = row.as_mut_slice();
    let mut rest = contributions;
    let mut base = 0u64;
    for &group in groups {
        let internal = || Error::new(ErrorKind::Internal, "ember_features row width");
        let (slot, tail) = std::mem::take(&mut rest_row)
            .split_at_mut_checked(group.width())
            .ok_or_else(internal)?;
        rest_row = tail;
        let end = base + group.width() as u64;
        let mine = rest
            .iter()
            .position(|c| !(base..end).contains(&c.index))
            .unwrap_or(rest.len());
        let (mine, others) = rest.split_at_checked(mine).ok_or_else(internal)?;
        rest = others;
        match group {
            EmberGroup::General => assemble_general(mine, base, slot)?,
            // thrember's float32 normalisation, as `write_row`.
            EmberGroup::Histogram | EmberGroup::ByteEntropy => {
                let sums = sums_from(mine, base, 256)?;
                normalise_like_numpy_f32(&counts_of(&sums), slot)
            }
            EmberGroup::Strings => assemble_strings(mine, base, slot)?,
            EmberGroup::Pe(group) => assemble_pe_group(group, mine, base, slot)?,
        }
        base = end;
    }
    match rest.first() {
        Some(c) => Err(Error::new(
            ErrorKind::Internal,
            format!(
                "contribution to index {} out of its group's order (a bug in rustfx)",
                c.index
            ),
        )),
        None => Ok(float32_row(row)),
    }
}
