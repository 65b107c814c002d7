//! thrember's PE groups, written from its definitions over [`Pe`](crate::pe::Pe).
//!
//! Each `write_*` fills one group's slice of the row; a file pefile rejects
//! (`pe == None`) gets zeros in every PE group, as in thrember. Values are
//! computed in float64 (Python's ints and floats, scikit-learn's float64
//! `FeatureHasher`) and cast to float32 once, as thrember's `astype` does.
//!
//! The groups are in header.rs, section.rs, directories.rs (imports,
//! exports, datadirectories, richheader) and warnings.rs (pefilewarnings);
//! this file holds the hashing they share.

use crate::hashing::{murmur3_x86_32, sklearn_bucket_of_i32_min};

mod directories;
pub(crate) mod explain;
mod explain_headers;
mod explain_tables;
#[cfg(test)]
mod explain_tests;
mod header;
mod section;
mod warnings;

pub use directories::{
    data_directory_names, write_data_directories, write_exports, write_imports, write_rich_header,
};
pub use header::{header_names, write_header};
pub use section::{section_names, write_section};
pub use warnings::{warning_id, write_pefile_warnings, PEFILE_WARNINGS};

/// scikit-learn's `FeatureHasher`: adds `value` for `feature` into `out`
/// (its bucket and, with `alternate_sign`, its sign). A zero value is
/// skipped, as scikit-learn skips it.
pub(crate) fn feature_hash(out: &mut [f64], feature: &[u8], value: f64, alternate_sign: bool) {
    if value == 0.0 {
        return;
    }
    let (index, sign) = hashed_slot(feature, out.len(), alternate_sign);
    out[index] += value * sign;
}

/// Where `FeatureHasher` with `n` buckets puts `feature`: its bucket and
/// its sign (always 1 without `alternate_sign`).
pub(crate) fn hashed_slot(feature: &[u8], n: usize, alternate_sign: bool) -> (usize, f64) {
    let h = murmur3_x86_32(feature, 0) as i32;
    let index = if h == i32::MIN {
        sklearn_bucket_of_i32_min(n as u64)
    } else {
        u64::from(h.unsigned_abs()) % n as u64
    };
    let sign = if alternate_sign && h < 0 { -1.0 } else { 1.0 };
    (index as usize, sign)
}

fn put(out: &mut [f32], values: &[f64]) {
    for (slot, &v) in out.iter_mut().zip(values) {
        *slot = v as f32;
    }
}
