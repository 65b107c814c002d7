//! thrember's `authenticode` feature group (EMBER2024 feature version 3): 8 values
//! describing a PE's Authenticode signatures, bit-exact with thrember, which reads them
//! with signify 0.7.1 (`SignedPEFile(..).iter_signed_datas()`) on top of asn1crypto.
//!
//! What is mirrored, and why it matters for the values:
//! - signify's own PE header walk to the certificate table (not pefile's): any problem
//!   there, or in a WIN_CERTIFICATE record, or a record revision other than 0x200, ends
//!   the walk *silently* (signify swallows `SignedPEParseError`), keeping what was counted.
//! - Every type-2 record is a PKCS#7 ContentInfo holding an Authenticode SignedData. signify
//!   builds the whole tree (nested signatures 1.3.6.1.4.1.311.2.4.1, countersigners) before
//!   yielding anything, so a malformation anywhere in a record means nothing of that record
//!   is counted and `parse_error` is set; earlier records stay counted.
//! - The signature checks signify makes while parsing (one digest algorithm from a fixed
//!   list, the content types, one SignerInfo, no CRLs, issuer-and-serial signer ids, the
//!   required attributes and their counts, never both a PKCS#9 countersignature and an
//!   RFC 3161 token) and the time formats asn1crypto accepts, down to its rounding of
//!   fractional seconds (round half down to a microsecond).
//! - Issuer/subject names are decoded lazily by signify, so a bad name sets `parse_error`
//!   only after that signature's other values were counted; so here too.
//!
//! Where thrember would crash (an exception it does not catch: NotImplementedError,
//! AssertionError, TypeError, OverflowError, RecursionError), there is no value to match;
//! this module then reports `parse_error` like the exceptions thrember does catch;
//! nested signatures deeper than thrember can follow are cut the same way. Times
//! without a zone (which Python reads as local time) are read as UTC, the zone of the
//! machines the goldens come from. Not mirrored (deviations on malformed input only):
//! BER indefinite lengths are rejected; of asn1crypto's typed parsing, a certificate's
//! known extension values are only checked to be well-formed DER (not their types), and
//! attribute values signify never reads are not parsed. On 720 randomly mutated
//! signatures, 716 give thrember's values (see `matches_thrember_bit_for_bit`).
//!
//! The files follow signify's layers: `cert_table` walks the PE to the
//! WIN_CERTIFICATE records; `der` is a bounded DER reader; `signed_data` reads
//! the ContentInfo, SignedData and SignerInfo of a record, `certificate` its
//! X.509 certificates; `names` compares names as signify does, and `time` reads
//! times as asn1crypto does.

mod cert_table;
mod certificate;
mod der;
mod names;
mod signed_data;
#[cfg(test)]
mod tests;
mod time;

use cert_table::{certificate_table, WinCertificates, WIN_CERT_TYPE_PKCS_SIGNED_DATA};
use der::Malformed;
use names::names_equal;
use signed_data::{parse_authenticode_content_info, Signature};
use time::micros_to_seconds;

/// thrember's `authenticode` group, in its order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Authenticode {
    /// Number of SignedData structures, nested signatures included.
    pub num_certs: u32,
    /// Some certificate other than the last of a SignedData's list has issuer == subject.
    pub self_signed: bool,
    /// Some signature has no SpcSpOpusInfo programName.
    pub empty_program_name: bool,
    /// Some signature has no countersigner (neither PKCS#9 nor RFC 3161).
    pub no_countersigner: bool,
    /// signify raised a parse error (the values counted before it stay).
    pub parse_error: bool,
    /// Largest number of certificates in one SignedData.
    pub chain_max_depth: u32,
    /// Latest countersigning time, POSIX seconds (stays 0 for times before 1970).
    pub latest_signing_time: f64,
    /// Countersigning time of the last countersigned SignedData minus the COFF timestamp.
    pub signing_time_diff: f64,
}

/// Number of values [`Authenticode::write`] fills.
pub const AUTHENTICODE_WIDTH: usize = 8;

impl Authenticode {
    /// Writes the 8 values into `out[..8]` as thrember's `astype(np.float32)` does.
    pub fn write(&self, out: &mut [f32]) {
        let values = [
            f64::from(self.num_certs),
            f64::from(u8::from(self.self_signed)),
            f64::from(u8::from(self.empty_program_name)),
            f64::from(u8::from(self.no_countersigner)),
            f64::from(u8::from(self.parse_error)),
            f64::from(self.chain_max_depth),
            self.latest_signing_time,
            self.signing_time_diff,
        ];
        for (slot, value) in out.iter_mut().zip(values) {
            *slot = value as f32;
        }
    }
}

/// `data` is the whole file; `pe_timestamp` is the COFF TimeDateStamp pefile read.
pub fn authenticode(data: &[u8], pe_timestamp: u32) -> Authenticode {
    authenticode_by_record(data, pe_timestamp, |_, _, _| {})
}

/// [`authenticode`], calling `after_record(span, before, after)` for each
/// SignedData record it reads, with where the record is in the file
/// (start, end) and the values before and after it: where each value comes
/// from, for explanations.
pub(crate) fn authenticode_by_record(
    data: &[u8],
    pe_timestamp: u32,
    mut after_record: impl FnMut((u64, u64), &Authenticode, &Authenticode),
) -> Authenticode {
    let mut features = Authenticode::default();
    let Some(table) = certificate_table(data) else {
        return features;
    };
    for record in WinCertificates::new(data, table) {
        if record.revision != 0x200 {
            break;
        }
        if record.certificate_type != WIN_CERT_TYPE_PKCS_SIGNED_DATA {
            continue;
        }
        let before = features.clone();
        let mut signatures = Vec::new();
        let outcome = parse_authenticode_content_info(record.certificate, 0, &mut signatures)
            .and_then(|()| count_signatures(&signatures, pe_timestamp, &mut features));
        if outcome.is_err() {
            features.parse_error = true;
        }
        after_record(record.span, &before, &features);
        if outcome.is_err() {
            break;
        }
    }
    features
}

/// The body of thrember's loop over `iter_signed_datas()`, in its order.
fn count_signatures(
    signatures: &[Signature],
    pe_timestamp: u32,
    features: &mut Authenticode,
) -> Result<(), Malformed> {
    for signature in signatures {
        features.num_certs = features.num_certs.saturating_add(1);
        if !signature.has_program_name {
            features.empty_program_name = true;
        }
        match signature.countersigned_at {
            Some(micros) => {
                let seconds = micros_to_seconds(micros);
                if seconds >= features.latest_signing_time {
                    features.latest_signing_time = seconds;
                }
                features.signing_time_diff = seconds - f64::from(pe_timestamp);
            }
            None => features.no_countersigner = true,
        }
        let depth = u32::try_from(signature.certificate_names.len()).unwrap_or(u32::MAX);
        features.chain_max_depth = features.chain_max_depth.max(depth);
        let all_but_last = signature.certificate_names.len().saturating_sub(1);
        for (issuer, subject) in signature.certificate_names.iter().take(all_but_last) {
            if names_equal(issuer, subject)? {
                features.self_signed = true;
            }
        }
    }
    Ok(())
}
