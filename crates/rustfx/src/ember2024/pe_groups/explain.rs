//! Explanations of thrember's PE groups: the header field, section, import,
//! export, directory or warning behind each value, at its place in the file.
//!
//! Each group is a walk over the parsed [`Pe`] of its own, apart from the
//! `write_*` functions, so that `explain_tests.rs` (and tests/explain.rs)
//! comparing the two means something. A value is either
//! - a sum of items, one contribution per item: counts (value 1 per item
//!   counted) and `FeatureHasher` buckets (one per hashed feature, its
//!   value times the feature's sign, the text the exact bytes hashed); or
//! - one contribution carrying the final float64 value (a header field, a
//!   maximum, a ratio, an entropy), at the bytes it is read or computed
//!   from.
//!
//! Either way, summing a group's contributions per index in float64 in the
//! order they were made, then one cast to float32, is thrember's arithmetic
//! (`feature_hash` and `put` in mod.rs; `0.0 + v == v` for a final value):
//! [`assemble_pe_group`] does only that. Where a value has no single place
//! in the file, each group's function says which span it uses instead.
//!
//! None of this calls pefile's section lookup (`offset_from_rva`): its
//! last-used cache decides overlapping sections, and the section group's
//! `overlay()` must see it as extraction does. Spans come from what the
//! parser recorded ([`crate::pe::FileSpan`]) and from the headers' fixed
//! layout.

use super::super::authenticode::{authenticode_by_record, Authenticode};
use super::super::PeGroup;
use super::warnings::warning_id;
use super::{explain_headers, explain_tables, hashed_slot};
use crate::explain::{sums_from, Contribution, Contributions};
use crate::pe::{FileSpan, Pe};
use crate::{Error, ErrorKind, Result};

/// Pushes the contributions of PE group `group` of `pe` (none when pefile
/// would reject the file: the group is zeros), their indices offset by
/// `base`, the group's first index in the row. Stops quietly at the cap
/// (`out.is_full()`).
pub(crate) fn explain_pe_group(
    group: PeGroup,
    pe: Option<&Pe>,
    base: u64,
    out: &mut Contributions,
) -> Result<()> {
    let Some(pe) = pe else {
        return Ok(());
    };
    let mut sink = Sink {
        out,
        base,
        file_len: pe.data().len() as u64,
    };
    // `None` is the cap reached: the explanation is truncated, not wrong.
    let _ = match group {
        PeGroup::Header => explain_headers::header(pe, &mut sink),
        PeGroup::Section => explain_tables::section(pe, &mut sink),
        PeGroup::Imports => explain_tables::imports(pe, &mut sink),
        PeGroup::Exports => explain_tables::exports(pe, &mut sink),
        PeGroup::DataDirectories => explain_headers::data_directories(pe, &mut sink),
        PeGroup::RichHeader => explain_headers::rich_header(pe, &mut sink),
        PeGroup::Authenticode => explain_authenticode(pe, &mut sink),
        PeGroup::PefileWarnings => explain_warnings(pe, &mut sink),
    };
    Ok(())
}

/// Writes the values of PE group `group` (`out`, its slice of the row) from
/// its contributions (indices offset by `base`), in the group's own
/// arithmetic: every PE group sums in float64 in order and casts once (see
/// the module's doc).
pub(crate) fn assemble_pe_group(
    group: PeGroup,
    contributions: &[Contribution],
    base: u64,
    out: &mut [f32],
) -> Result<()> {
    let width = group.width();
    if out.len() != width {
        return Err(internal(format!(
            "group {} has {width} values, given a slice of {}",
            group.name(),
            out.len()
        )));
    }
    let sums = sums_from(contributions, base, width)?;
    super::put(out, &sums);
    Ok(())
}

fn internal(message: String) -> Error {
    Error::new(ErrorKind::Internal, format!("{message} (a bug in rustfx)"))
}

/// One group's contributions: local indices offset by `base`, spans cut to
/// the file (pefile zero-pads a short optional header, whose fields can lie
/// past the end).
pub(super) struct Sink<'o> {
    out: &'o mut Contributions,
    base: u64,
    file_len: u64,
}

impl Sink<'_> {
    /// Pushes one contribution at local index `local`; `None` once the cap
    /// is reached, so that walks stop with `?`.
    pub(super) fn push(
        &mut self,
        local: usize,
        span: FileSpan,
        value: f64,
        text: &[u8],
    ) -> Option<()> {
        let start = span.offset.min(self.file_len);
        let end = span.offset.saturating_add(span.length).min(self.file_len);
        self.out
            .push(self.base + local as u64, start, end - start, value, text)
            .then_some(())
    }

    /// `feature_hash` into the `width` buckets from local index `first`:
    /// one contribution of the signed value, the feature as its text; none
    /// for a zero value, which `FeatureHasher` skips.
    pub(super) fn hashed(
        &mut self,
        first: usize,
        width: usize,
        feature: &[u8],
        value: f64,
        alternate_sign: bool,
        span: FileSpan,
    ) -> Option<()> {
        if value == 0.0 {
            return Some(());
        }
        let (bucket, sign) = hashed_slot(feature, width, alternate_sign);
        self.push(first + bucket, span, value * sign, feature)
    }
}

/// `length` bytes at `offset`.
pub(super) fn span(offset: u64, length: u64) -> FileSpan {
    FileSpan { offset, length }
}

/// `authenticode`, at the WIN_CERTIFICATE records signify reads: each
/// record's SignedData structures (nested ones included) are one
/// contribution to `num_certs`; each flag set (`parse_error` included) one
/// contribution of 1 at the first record that set it; `chain_max_depth`,
/// `latest_signing_time` and `signing_time_diff` one contribution carrying
/// the final value, at the last record that changed it.
fn explain_authenticode(pe: &Pe, sink: &mut Sink) -> Option<()> {
    let record_span = |(start, end): (u64, u64)| span(start, end.saturating_sub(start));
    let flags = |a: &Authenticode| {
        [
            a.self_signed,
            a.empty_program_name,
            a.no_countersigner,
            a.parse_error,
        ]
    };
    let finals = |a: &Authenticode| {
        [
            f64::from(a.chain_max_depth),
            a.latest_signing_time,
            a.signing_time_diff,
        ]
    };
    let mut counted = Vec::new();
    let mut flag_set_at = [FileSpan::default(); 4];
    let mut final_set_at = [FileSpan::default(); 3];
    let last = authenticode_by_record(
        pe.data(),
        pe.file_header.time_date_stamp,
        |at, before, after| {
            let at = record_span(at);
            counted.push((at, after.num_certs.saturating_sub(before.num_certs)));
            for (k, (was, is)) in flags(before).into_iter().zip(flags(after)).enumerate() {
                if is && !was {
                    flag_set_at[k] = at;
                }
            }
            for (k, (was, is)) in finals(before).into_iter().zip(finals(after)).enumerate() {
                if is.to_bits() != was.to_bits() {
                    final_set_at[k] = at;
                }
            }
        },
    );
    for (at, count) in counted {
        if count > 0 {
            sink.push(0, at, f64::from(count), b"")?;
        }
    }
    for (k, (set, at)) in flags(&last).into_iter().zip(flag_set_at).enumerate() {
        if set {
            sink.push(1 + k, at, 1.0, b"")?;
        }
    }
    for (k, (value, at)) in finals(&last).into_iter().zip(final_set_at).enumerate() {
        if value != 0.0 {
            sink.push(5 + k, at, value, b"")?;
        }
    }
    Some(())
}

/// `pefilewarnings`: for each warning kind seen, one contribution of 1 to
/// its flag and one to the count (index 87), both from the first warning
/// of that kind, whose message is the text. pefile's warnings carry no
/// position, so the span is empty (offset 0, length 0).
fn explain_warnings(pe: &Pe, sink: &mut Sink) -> Option<()> {
    let mut seen = [false; 87];
    for warning in pe.warnings() {
        let Some(id) = warning_id(warning) else {
            continue;
        };
        let Some(first) = seen.get_mut(id).filter(|s| !**s) else {
            continue;
        };
        *first = true;
        sink.push(id, FileSpan::default(), 1.0, warning.as_bytes())?;
        sink.push(87, FileSpan::default(), 1.0, warning.as_bytes())?;
    }
    Some(())
}
