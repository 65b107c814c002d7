//! The one table of extractors: name, parameters (type and default), output
//! version, and how each is built from a [`FeatureSpec`]'s parameters.
//!
//! Every host reads this table and no other list: the spec parser
//! ([`FeatureSpec`]), the TensorFlow ops (through `spec_query` and
//! `new_extractor` in the bridge), `rustfx-features`, `benches/core.rs`, and
//! Python, which builds its spec table, Keras layers and test cases from
//! [`registry_json`]. Adding an extractor is one entry here.
//!
//! **Output versions.** `output_version` is bumped whenever the output of
//! any input changes (a bug fix included). Specs carry it; a spec of another
//! version is refused everywhere, so features and models made by one rustfx
//! are never silently fed features of another. `tests/spec_versions.rs`
//! pins each extractor's output on a fixed corpus to its version.
//!
//! [`FeatureSpec`]: crate::spec::FeatureSpec

use crate::byte_features::{ByteEntropyHistogram, ByteHistogram, EmptyInput, StringFeatures};
use crate::byte_sequence::{sequence_extractor, ByteSequence, Preset, Sampling, SEQUENCE_DTYPES};
use crate::ember2024::general::GeneralFileInfo;
use crate::ember2024::strings::Ember2024Strings;
use crate::ember2024::{EmberFeatures, EmberGroup};
use crate::extractor::Extractor;
use crate::ngrams::{
    CountOptions, HashFamily, NgramConfig, NgramCounter, NgramCounts, NgramHasher, NgramSequence,
    Norm, Tokenizer,
};
use crate::output::{DType, Layout};
use crate::printable_strings::{PrintableStrings, StringEncoding};
use crate::spec::params::{int32, size, Default, ParamDecl, ParamType, ParamValue, Params};
use crate::{Error, Result};
use serde_json::{json, Value};

/// One extractor: everything a host needs to know of it.
pub struct ExtractorEntry {
    /// Its name in specs, Python (`rustfx.<name>`) and the CLI.
    pub name: &'static str,
    /// Bumped whenever the output of any input changes.
    pub output_version: u32,
    /// One line: what it computes.
    pub doc: &'static str,
    /// Its parameters, in the order of the Python signature.
    pub params: &'static [ParamDecl],
    /// Parameter sets (JSON objects) that tests and benches run: the first
    /// is the usual one; together they cover each output kind.
    pub examples: &'static [&'static str],
    /// Rough cycles per input byte, for splitting a batch between threads.
    pub cost_per_byte: u32,
    /// Fills in the values that follow from others (a preset's values), so
    /// a spec states exactly what runs. Most extractors: [`no_derived`].
    pub canonicalize: fn(&mut Params) -> Result<()>,
    /// Builds the extractor; its constructors check every rule.
    pub build: fn(&Params) -> Result<Extractor>,
}

impl std::fmt::Debug for ExtractorEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (output version {})", self.name, self.output_version)
    }
}

/// Every extractor, in the order of the README's table. (Not rustfmt'd:
/// one parameter per line reads as a table.)
#[rustfmt::skip]
pub const EXTRACTORS: &[ExtractorEntry] = &[
    ExtractorEntry {
        name: "hashed_ngrams",
        output_version: 1,
        doc: "hashed n-gram ids or counts of text (TF / Keras / scikit-learn parity)",
        params: &[
            decl("num_buckets", ParamType::Int, Default::Required, &[],
                 "number of buckets, >= 1; ids are in [0, num_buckets)"),
            decl("ngram_widths", ParamType::IntList, Default::IntList(&[1]), &[],
                 "n-gram widths, each in [1, 64], output grouped by width in this order"),
            decl("tokenizer", ParamType::Str, Default::Str("whitespace"), Tokenizer::NAMES,
                 "how text is split into tokens"),
            decl("lowercase", ParamType::Bool, Default::Bool(false), &[],
                 "lowercase first (ASCII; str.lower for sklearn_*)"),
            decl("hash", ParamType::Str, Default::Str("fingerprint64"), HashFamily::NAMES,
                 "fingerprint64 (TF, Keras) or murmur3 (scikit-learn)"),
            decl("output", ParamType::Str, Default::Str("ragged"), NgramOutput::NAMES,
                 "ragged ids, a padded sequence of ids, dense counts or sparse counts"),
            decl("max_tokens", ParamType::OptionalInt, Default::Null, &[],
                 "length of the sequence output, in [1, 2**24]"),
            decl("pad_value", ParamType::Int, Default::Int(-1), &[],
                 "pad id of the sequence output: < 0 or >= num_buckets"),
            decl("binary", ParamType::Bool, Default::Bool(false), &[],
                 "counts: every non-zero count becomes 1"),
            decl("alternate_sign", ParamType::Bool, Default::Bool(false), &[],
                 "counts: add each n-gram's hash sign (murmur3 only)"),
            decl("norm", ParamType::OptionalStr, Default::Null, Norm::NAMES,
                 "counts: row normalisation, null (none), l1 or l2"),
        ],
        examples: &[
            r#"{"num_buckets": 1000, "ngram_widths": [1, 2]}"#,
            r#"{"num_buckets": 1000, "tokenizer": "sklearn_char_wb", "ngram_widths": [2, 3],
                "hash": "murmur3", "output": "sequence", "max_tokens": 16, "pad_value": 1000}"#,
            r#"{"num_buckets": 64, "tokenizer": "byte", "hash": "murmur3", "output": "counts",
                "alternate_sign": true, "norm": "l2"}"#,
            r#"{"num_buckets": 262144, "tokenizer": "word", "lowercase": true,
                "output": "sparse", "binary": true}"#,
            r#"{"num_buckets": 4096, "tokenizer": "char", "ngram_widths": [3]}"#,
            r#"{"num_buckets": 4096, "tokenizer": "sklearn_word", "ngram_widths": [1, 2],
                "lowercase": true, "hash": "murmur3", "alternate_sign": true, "norm": "l2",
                "output": "sparse"}"#,
            r#"{"num_buckets": 4096, "tokenizer": "sklearn_char", "ngram_widths": [2, 3],
                "output": "counts", "norm": "l1"}"#,
        ],
        cost_per_byte: 20,
        canonicalize: canonical_norm,
        build: build_hashed_ngrams,
    },
    ExtractorEntry {
        name: "byte_histogram",
        output_version: 1,
        doc: "EMBER ByteHistogram: 256 normalised byte counts",
        params: &[EMPTY],
        examples: &["{}", r#"{"empty": "nan"}"#],
        cost_per_byte: 10,
        canonicalize: no_derived,
        build: |p| {
            let empty = EmptyInput::from_name(p.str("empty")?)?;
            Ok(Extractor::dense(ByteHistogram::new(empty)))
        },
    },
    ExtractorEntry {
        name: "byte_entropy_histogram",
        output_version: 1,
        doc: "EMBER ByteEntropyHistogram: 16x16 (window entropy, high nibble) histogram",
        params: &[
            decl("window", ParamType::Int, Default::Int(2048), &[],
                 "window length in bytes, in [1, 2**24]"),
            decl("step", ParamType::Int, Default::Int(1024), &[],
                 "step between windows in bytes, in [1, 2**24]"),
            EMPTY,
        ],
        examples: &["{}", r#"{"window": 64, "step": 16}"#],
        cost_per_byte: 10,
        canonicalize: no_derived,
        build: |p| {
            let empty = EmptyInput::from_name(p.str("empty")?)?;
            let (window, step) = (size(p.int("window")?), size(p.int("step")?));
            let extractor = ByteEntropyHistogram::new(window, step, empty)?;
            Ok(Extractor::dense(extractor))
        },
    },
    ExtractorEntry {
        name: "string_features",
        output_version: 1,
        doc: "EMBER StringExtractor: 104 printable-string statistics",
        params: &[],
        examples: &["{}"],
        cost_per_byte: 10,
        canonicalize: no_derived,
        build: |_| Ok(Extractor::dense(StringFeatures)),
    },
    ExtractorEntry {
        name: "general_file_info",
        output_version: 1,
        doc: "EMBER2024 general group without is_pe: size, entropy, first 4 bytes",
        params: &[],
        examples: &["{}"],
        cost_per_byte: 10,
        canonicalize: no_derived,
        build: |_| Ok(Extractor::dense(GeneralFileInfo)),
    },
    ExtractorEntry {
        name: "ember2024_string_features",
        output_version: 1,
        doc: "EMBER2024 strings group: 177 values (statistics and 77 pattern counts)",
        params: &[],
        examples: &["{}"],
        cost_per_byte: 10,
        canonicalize: no_derived,
        build: |_| Ok(Extractor::dense(Ember2024Strings::new()?)),
    },
    ExtractorEntry {
        name: "ember_features",
        output_version: 1,
        doc: "EMBER2024 (thrember, feature version 3) vectors: 2568 values, or chosen groups",
        params: &[
            decl("feature_version", ParamType::Int, Default::Int(3), &[],
                 "EMBER feature version; 3 (EMBER2024) is the one implemented"),
            decl("groups", ParamType::StrList, Default::StrList(&[]), EmberGroup::NAMES,
                 "the groups to compute, in thrember's order; empty for all"),
        ],
        examples: &["{}", r#"{"groups": ["header", "imports"]}"#],
        cost_per_byte: 10,
        canonicalize: no_derived,
        build: |p| {
            let groups = p
                .strs("groups")?
                .iter()
                .map(|g| EmberGroup::from_name(g))
                .collect::<Result<Vec<_>>>()?;
            let extractor = EmberFeatures::new(p.int("feature_version")?, &groups)?;
            Ok(Extractor::dense(extractor))
        },
    },
    ExtractorEntry {
        name: "byte_sequence",
        output_version: 1,
        doc: "MalConv-style raw bytes: byte + shift, in dense rows padded to max_len or ragged rows",
        params: &[
            decl("max_len", ParamType::OptionalInt, Default::Null, &[],
                 "row length, in [1, 2**26]; null: the preset's"),
            decl("preset", ParamType::Str, Default::Str("ember"), Preset::NAMES,
                 "fills the parameters left null: ember (2**20, 0, 256), malconv2 (4e6, 1, 0)"),
            decl("shift", ParamType::OptionalInt, Default::Null, &[],
                 "added to each byte; null: the preset's"),
            decl("pad_value", ParamType::OptionalInt, Default::Null, &[],
                 "pad value, outside shift..=shift+255; null: the preset's"),
            decl("sampling", ParamType::Str, Default::Str("head"), Sampling::NAMES,
                 "head: the first max_len bytes; head_tail: the first and last halves"),
            decl("dtype", ParamType::Str, Default::Str("int32"), SEQUENCE_DTYPES,
                 "the values' dtype: int16/uint16 hold any shift in -1..=32512 (MalConv2's 0..=256) at 2 bytes per byte"),
            decl("output", ParamType::Str, Default::Str("dense"), &["dense", "ragged"],
                 "dense: rows padded to max_len; ragged: the kept bytes only (a batch pads to its longest, as MalConv2 does)"),
        ],
        examples: &[
            r#"{"max_len": 48}"#,
            r#"{"max_len": 64, "preset": "malconv2", "sampling": "head_tail"}"#,
            r#"{"max_len": 64, "preset": "malconv2", "dtype": "int16", "output": "ragged"}"#,
            r#"{"max_len": 40, "preset": "malconv2", "dtype": "uint16", "output": "dense", "sampling": "head_tail"}"#,
            r#"{"max_len": 32, "shift": 0, "pad_value": -1, "dtype": "int16", "output": "ragged"}"#,
            r#"{"max_len": 32, "dtype": "uint8", "output": "ragged"}"#,
        ],
        cost_per_byte: 10,
        canonicalize: canonical_byte_sequence,
        build: |p| {
            let sequence = ByteSequence::new(
                size(p.optional_int("max_len")?.unwrap_or(0)),
                int32("shift", p.optional_int("shift")?.unwrap_or(0))?,
                int32("pad_value", p.optional_int("pad_value")?.unwrap_or(0))?,
                Sampling::from_name(p.str("sampling")?)?,
            )?;
            sequence_extractor(
                sequence,
                DType::from_name(p.str("dtype")?)?,
                Layout::from_name(p.str("output")?)?,
            )
        },
    },
    ExtractorEntry {
        name: "printable_strings",
        output_version: 1,
        doc: "the printable strings of a binary, as GNU strings -a finds them (ragged tf.string)",
        params: &[
            decl("min_len", ParamType::Int, Default::Int(4), &[],
                 "shortest string, in characters, in [1, 2**20] (strings -n)"),
            decl("encodings", ParamType::StrList, Default::StrList(&["ascii", "utf16le"]), StringEncoding::NAMES,
                 "ascii (strings -e s) and/or utf16le (strings -e l); output in this order"),
            decl("max_strings", ParamType::OptionalInt, Default::Null, &[],
                 "at most this many strings per document; null: no limit"),
            decl("max_bytes", ParamType::OptionalInt, Default::Null, &[],
                 "at most this many string bytes per document (the last one cut); null: no limit"),
        ],
        examples: &[
            "{}",
            r#"{"min_len": 6, "encodings": ["utf16le"], "max_strings": 100, "max_bytes": 4096}"#,
        ],
        cost_per_byte: 10,
        canonicalize: no_derived,
        build: |p| {
            let encodings = p
                .strs("encodings")?
                .iter()
                .map(|e| StringEncoding::from_name(e))
                .collect::<Result<Vec<_>>>()?;
            // A negative limit maps to 0, which PrintableStrings::new rejects.
            let limit = |name| -> Result<Option<usize>> { Ok(p.optional_int(name)?.map(size)) };
            let strings = PrintableStrings::new(
                size(p.int("min_len")?),
                &encodings,
                limit("max_strings")?,
                limit("max_bytes")?,
            )?;
            Ok(Extractor::ragged_strings(strings))
        },
    },
];

/// The extractor called `name`, or an error listing them all.
pub fn find(name: &str) -> Result<&'static ExtractorEntry> {
    EXTRACTORS.iter().find(|e| e.name == name).ok_or_else(|| {
        let names: Vec<_> = EXTRACTORS.iter().map(|e| e.name).collect();
        Error::invalid_argument(format!(
            "unknown extractor '{name}'; rustfx has: {}",
            names.join(", ")
        ))
    })
}

/// The whole table as JSON, for hosts in other languages (Python builds its
/// functions' checks, Keras layers and test cases from it):
/// `[{"name", "output_version", "doc", "params": [{"name", "type",
/// "default", "required", "names", "doc"}], "examples": [{...}]}]`.
pub fn registry_json() -> Value {
    let entries: Vec<Value> = EXTRACTORS
        .iter()
        .map(|entry| {
            let params: Vec<Value> = entry
                .params
                .iter()
                .map(|p| {
                    json!({
                        "name": p.name,
                        "type": p.ty.name(),
                        "default": p.default.value().map_or(Value::Null, |v| v.to_json()),
                        "required": p.default == Default::Required,
                        "names": p.names,
                        "doc": p.doc,
                    })
                })
                .collect();
            let examples: Vec<Value> = entry
                .examples
                .iter()
                .map(|e| serde_json::from_str(e).unwrap_or(Value::Null))
                .collect();
            json!({
                "name": entry.name,
                "output_version": entry.output_version,
                "doc": entry.doc,
                "params": params,
                "examples": examples,
            })
        })
        .collect();
    Value::Array(entries)
}

const fn decl(
    name: &'static str,
    ty: ParamType,
    default: Default,
    names: &'static [&'static str],
    doc: &'static str,
) -> ParamDecl {
    ParamDecl {
        name,
        ty,
        default,
        names,
        doc,
    }
}

/// `empty`, shared by the EMBER histograms.
const EMPTY: ParamDecl = decl(
    "empty",
    ParamType::Str,
    Default::Str("zeros"),
    EmptyInput::NAMES,
    "an empty input gives zeros, or NaN like EMBER",
);

/// For extractors whose parameters are all independent.
pub fn no_derived(_: &mut Params) -> Result<()> {
    Ok(())
}

/// `hashed_ngrams`' output kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NgramOutput {
    /// Ragged int64 ids.
    Ragged,
    /// The first `max_tokens` ids, padded.
    Sequence,
    /// Dense float32 counts.
    Counts,
    /// Sparse float32 counts.
    Sparse,
}

crate::names::named_values!(NgramOutput, "output", {
    Ragged => "ragged",
    Sequence => "sequence",
    Counts => "counts",
    Sparse => "sparse",
});

/// `norm`: "none" and null are the same; the spec says null.
fn canonical_norm(params: &mut Params) -> Result<()> {
    if params.optional_str("norm")? == Some("none") {
        params.set("norm", ParamValue::Null);
    }
    Ok(())
}

/// The n-gram hasher of `hashed_ngrams` parameters, whatever the output
/// (benches time it alone).
pub fn ngram_hasher(p: &Params) -> Result<NgramHasher> {
    NgramHasher::new(NgramConfig {
        tokenizer: Tokenizer::from_name(p.str("tokenizer")?)?,
        widths: p.ints("ngram_widths")?.iter().map(|&w| size(w)).collect(),
        lowercase: p.bool("lowercase")?,
        hash: HashFamily::from_name(p.str("hash")?)?,
        // A negative count maps to 0, which NgramHasher::new rejects.
        num_buckets: u64::try_from(p.int("num_buckets")?).unwrap_or(0),
    })
}

fn build_hashed_ngrams(p: &Params) -> Result<Extractor> {
    let output = NgramOutput::from_name(p.str("output")?)?;
    let hasher = ngram_hasher(p)?;
    let counts = || -> Result<NgramCounter> {
        let options = CountOptions {
            binary: p.bool("binary")?,
            alternate_sign: p.bool("alternate_sign")?,
            norm: Norm::from_name(p.optional_str("norm")?.unwrap_or("none"))?,
        };
        NgramCounter::new(hasher.clone(), options)
    };
    Ok(match output {
        NgramOutput::Ragged => Extractor::ragged(hasher),
        NgramOutput::Sequence => {
            let max_tokens = p.optional_int("max_tokens")?.ok_or_else(|| {
                Error::invalid_argument("output='sequence' needs max_tokens in [1, 2**24]")
            })?;
            let pad = p.int("pad_value")?;
            let sequence = NgramSequence::new(hasher.clone(), size(max_tokens), pad)?;
            Extractor::dense(sequence)
        }
        NgramOutput::Counts => Extractor::dense(NgramCounts::new(counts()?)?),
        NgramOutput::Sparse => Extractor::Sparse(Box::new(counts()?)),
    })
}

/// Fills `max_len`, `shift` and `pad_value` left null from the preset.
fn canonical_byte_sequence(params: &mut Params) -> Result<()> {
    let (max_len, shift, pad_value) = Preset::from_name(params.str("preset")?)?.parameters();
    for (name, value) in [
        ("max_len", max_len as i64),
        ("shift", i64::from(shift)),
        ("pad_value", i64::from(pad_value)),
    ] {
        if params.optional_int(name)?.is_none() {
            params.set(name, ParamValue::Int(value));
        }
    }
    Ok(())
}
