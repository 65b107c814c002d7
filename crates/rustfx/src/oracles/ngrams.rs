//! The n-gram definitions, for [`crate::ngrams`], written the obvious way:
//! the whole document decoded and lowercased first, every token listed,
//! then the n-grams of each width (every window of `n` tokens).

use crate::hashing::{fingerprint64, murmur3_x86_32};
use crate::ngrams::{CountOptions, HashFamily, NgramConfig, Norm, Tokenizer};
use crate::unicode_classes::{is_python_space, is_python_word, python_str_lower};
use std::collections::BTreeMap;

/// Every n-gram of `doc` under `config`, widths in the order given.
pub fn grams(config: &NgramConfig, doc: &[u8]) -> Vec<Vec<u8>> {
    let widths = &config.widths;
    let lowercase = config.lowercase;
    match config.tokenizer {
        Tokenizer::Whitespace | Tokenizer::Word | Tokenizer::Byte | Tokenizer::Char => {
            let doc = if lowercase {
                doc.to_ascii_lowercase()
            } else {
                doc.to_vec()
            };
            let (tokens, joiner): (Vec<Vec<u8>>, &[u8]) = match config.tokenizer {
                Tokenizer::Whitespace => (
                    doc.split(|b| b" \t\n\x0b\x0c\r".contains(b))
                        .filter(|t| !t.is_empty())
                        .map(<[u8]>::to_vec)
                        .collect(),
                    b" ",
                ),
                Tokenizer::Word => (
                    doc.split(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
                        .filter(|t| !t.is_empty())
                        .map(<[u8]>::to_vec)
                        .collect(),
                    b" ",
                ),
                Tokenizer::Byte => (doc.iter().map(|&b| vec![b]).collect(), b""),
                Tokenizer::SklearnWord | Tokenizer::SklearnChar | Tokenizer::SklearnCharWb => {
                    unreachable!("the outer match handles the sklearn tokenizers")
                }
                Tokenizer::Char => (
                    String::from_utf8_lossy(&doc)
                        .chars()
                        .map(|c| c.to_string().into_bytes())
                        .collect(),
                    b"",
                ),
            };
            token_grams(&tokens, joiner, widths)
        }
        Tokenizer::SklearnWord => {
            let text = python_text(doc, lowercase);
            let mut tokens = Vec::new();
            let mut run = String::new();
            for c in text.chars().chain(std::iter::once(' ')) {
                if is_python_word(c) {
                    run.push(c);
                } else {
                    if run.chars().count() >= 2 {
                        tokens.push(run.clone().into_bytes());
                    }
                    run.clear();
                }
            }
            token_grams(&tokens, b" ", widths)
        }
        Tokenizer::SklearnChar => {
            let chars: Vec<Vec<u8>> = collapse(&python_text(doc, lowercase))
                .chars()
                .map(|c| c.to_string().into_bytes())
                .collect();
            token_grams(&chars, b"", widths)
        }
        Tokenizer::SklearnCharWb => {
            let mut out = Vec::new();
            let text = collapse(&python_text(doc, lowercase));
            for word in text.split(is_python_space).filter(|w| !w.is_empty()) {
                let padded: Vec<char> = format!(" {word} ").chars().collect();
                let mut whole = false;
                for &n in widths {
                    if padded.len() <= n {
                        if !whole {
                            out.push(padded.iter().collect::<String>().into_bytes());
                            whole = true;
                        }
                        continue;
                    }
                    for gram in padded.windows(n) {
                        out.push(gram.iter().collect::<String>().into_bytes());
                    }
                }
            }
            out
        }
    }
}

fn python_text(doc: &[u8], lowercase: bool) -> String {
    let text = String::from_utf8_lossy(doc).into_owned();
    if !lowercase {
        return text;
    }
    let mut lowered = String::new();
    python_str_lower(&text, &mut lowered);
    lowered
}

/// `re.sub(r"\s\s+", " ", text)`.
fn collapse(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let mut j = i;
        while j < chars.len() && is_python_space(chars[j]) {
            j += 1;
        }
        if j - i >= 2 {
            out.push(' ');
            i = j;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

fn token_grams(tokens: &[Vec<u8>], joiner: &[u8], widths: &[usize]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for &n in widths {
        for window in tokens.windows(n) {
            out.push(window.join(joiner));
        }
    }
    out
}

/// `(index, sign)` as `tf.strings.to_hash_bucket_fast` and scikit-learn
/// define them.
pub fn bucket(hash: HashFamily, num_buckets: u64, gram: &[u8]) -> (u64, i64) {
    match hash {
        HashFamily::Fingerprint64 => (fingerprint64(gram) % num_buckets, 1),
        HashFamily::Murmur3 => {
            let h = i64::from(murmur3_x86_32(gram, 0) as i32);
            let index = if h == i64::from(i32::MIN) {
                (i32::MAX as u64 - (num_buckets - 1)) % num_buckets
            } else {
                h.unsigned_abs() % num_buckets
            };
            (index, if h >= 0 { 1 } else { -1 })
        }
    }
}

/// scikit-learn's row: integer sums, then `binary`, then the norm added
/// up in ascending index order in f64.
pub fn counts(config: &NgramConfig, options: CountOptions, doc: &[u8]) -> Vec<(u64, f32)> {
    let mut sums = BTreeMap::new();
    for gram in grams(config, doc) {
        let (index, sign) = bucket(config.hash, config.num_buckets, &gram);
        *sums.entry(index).or_insert(0i64) += if options.alternate_sign { sign } else { 1 };
    }
    let values: Vec<(u64, f64)> = sums
        .into_iter()
        .map(|(i, v)| (i, if options.binary { 1.0 } else { v as f64 }))
        .collect();
    let scale = match options.norm {
        Norm::None => 1.0,
        Norm::L1 => values.iter().map(|(_, v)| v.abs()).sum::<f64>(),
        Norm::L2 => values.iter().map(|(_, v)| v * v).sum::<f64>().sqrt(),
    };
    values
        .into_iter()
        .map(|(i, v)| (i, if scale > 0.0 { v / scale } else { v } as f32))
        .collect()
}
