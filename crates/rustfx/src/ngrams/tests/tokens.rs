//! The byte scanner's edges: byte classes, masks and lowercasing in every
//! lane, tokens across chunk and block boundaries, documents of separators
//! only, long documents and long tokens; decoding text that is not UTF-8.

use super::oracle::check_against_naive;
use super::*;

#[test]
fn byte_classes_are_the_documented_sets() {
    for b in 0..=255u8 {
        assert_eq!(
            scan::ByteClass::Whitespace.is_separator(b),
            b" \t\n\x0b\x0c\r".contains(&b),
            "{b}"
        );
        assert_eq!(
            scan::ByteClass::NonWord.is_separator(b),
            !(b.is_ascii_alphanumeric() || b == b'_'),
            "{b}"
        );
        assert_eq!(
            scan::ByteClass::PythonSpace.is_separator(b),
            b.is_ascii() && crate::unicode_classes::is_python_space(char::from(b)),
            "{b}"
        );
    }
}

/// Block masks against the byte definitions: every byte value in every
/// lane, next to each other byte value.
#[test]
fn block_masks_are_the_byte_classes_in_every_lane() {
    for class in [
        scan::ByteClass::Whitespace,
        scan::ByteClass::NonWord,
        scan::ByteClass::PythonSpace,
    ] {
        for b in 0..=255u8 {
            for lane in 0..64 {
                let block: [u8; 64] =
                    std::array::from_fn(|i| if i == lane { b } else { (i * 4 + lane) as u8 });
                let want = block.iter().enumerate().fold(0u64, |m, (i, &x)| {
                    m | (u64::from(class.is_separator(x)) << i)
                });
                assert_eq!(class.mask(&block), want, "{class:?} byte {b} lane {lane}");
            }
        }
    }
}

#[test]
fn chunk_lowercasing_is_ascii_lowercasing_in_every_lane() {
    for b in 0..=255u8 {
        for lane in 0..scan::CHUNK {
            let mut chunk = [b'Q'; scan::CHUNK];
            chunk[lane] = b;
            let mut want = chunk;
            want.make_ascii_lowercase();
            let got = scan::ascii_lowercase_chunk(chunk);
            assert_eq!(got, want, "byte {b} in lane {lane}");
        }
    }
}

/// Tokens and separators of every length around the 16-byte copy chunk and
/// the 64-byte classification block, at every offset of the first block,
/// including tokens that end the document and documents of whole blocks.
#[test]
fn tokens_straddling_chunks_and_blocks() {
    let mut scratch = CountScratch::new();
    let options = CountOptions {
        binary: false,
        alternate_sign: true,
        norm: Norm::L2,
    };
    let lengths = [1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 130];
    for lead in 0..=66 {
        for &len in &lengths {
            for tail in [0, 1, 2, 64 - (lead + len + 2) % 64] {
                let mut doc = vec![b' '; lead];
                doc.extend(std::iter::repeat_n(b'Q', len));
                doc.extend_from_slice(b"\t\n");
                doc.extend(std::iter::repeat_n(b'w', tail));
                for &tokenizer in Tokenizer::VALUES {
                    for widths in [vec![1, 2, 3], vec![3, 1, 3]] {
                        let hash = [HashFamily::Murmur3, HashFamily::Fingerprint64][len % 2];
                        let config = NgramConfig {
                            tokenizer,
                            widths,
                            lowercase: len % 2 == 0,
                            hash,
                            num_buckets: 97,
                        };
                        let options = CountOptions {
                            alternate_sign: hash == HashFamily::Murmur3,
                            ..options
                        };
                        check_against_naive(&config, options, &doc, 5, &mut scratch).unwrap();
                    }
                }
            }
        }
    }
}

#[test]
fn all_separators_and_no_separators() {
    let mut scratch = CountScratch::new();
    let options = CountOptions {
        binary: true,
        alternate_sign: false,
        norm: Norm::L1,
    };
    for len in 0..=200 {
        for byte in [b' ', b'\t', b'\x1c', b'.', b'a', b'A', b'_'] {
            let doc = vec![byte; len];
            for &tokenizer in Tokenizer::VALUES {
                for lowercase in [false, true] {
                    let config = NgramConfig {
                        tokenizer,
                        widths: vec![2, 1],
                        lowercase,
                        hash: HashFamily::Fingerprint64,
                        num_buckets: 1 << 12,
                    };
                    check_against_naive(&config, options, &doc, 3, &mut scratch).unwrap();
                }
            }
        }
    }
}

/// A document long enough that the token buffer drops old tokens many
/// times, with tokens longer than the buffer, the widest n-grams, and more
/// n-grams than one counting batch.
#[test]
fn long_documents_and_long_tokens() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut doc = Vec::new();
    while doc.len() < 150_000 {
        let r = next();
        let len = match r % 50 {
            0 => 5000,
            1..=5 => 20 + (r >> 8) as usize % 50,
            _ => 1 + (r >> 8) as usize % 12,
        };
        let letter = b"aBcDeF_9\xc3\xa9"[(r >> 20) as usize % 10];
        doc.extend(std::iter::repeat_n(letter, len));
        doc.extend_from_slice(&b" \t\n  \x1c"[..1 + (r >> 30) as usize % 5]);
    }
    // Space runs straddling the 4 KiB blocks of the byte and ASCII paths.
    for block in [4096, 8192] {
        doc[block - 2..block + 3].copy_from_slice(b" \t \x1c ");
    }
    doc[3 * 4096 - 1] = b' ';
    let ascii: Vec<u8> = doc
        .iter()
        .map(|&b| if b.is_ascii() { b } else { b'x' })
        .collect();
    let mut scratch = CountScratch::new();
    for (tokenizer, doc) in Tokenizer::VALUES
        .iter()
        .flat_map(|&t| [(t, &doc), (t, &ascii)])
    {
        let widths = if tokenizer == Tokenizer::Byte {
            vec![1, 3]
        } else {
            vec![1, 64, 7]
        };
        for hash in [HashFamily::Murmur3, HashFamily::Fingerprint64] {
            let config = NgramConfig {
                tokenizer,
                widths: widths.clone(),
                lowercase: true,
                hash,
                num_buckets: 1 << 20,
            };
            let options = CountOptions {
                binary: false,
                alternate_sign: hash == HashFamily::Murmur3,
                norm: Norm::L1,
            };
            check_against_naive(&config, options, doc, 1000, &mut scratch).unwrap();
        }
    }
}

/// Decodes `bytes` with `next_char_lossy`, one character at a time.
fn decode_with_next_char_lossy(bytes: &[u8]) -> String {
    let (mut out, mut at) = (String::new(), 0);
    while at < bytes.len() {
        let (c, len) = super::utf8::next_char_lossy(&bytes[at..]);
        assert!((1..=4).contains(&len), "{bytes:x?} at {at}");
        out.push(c);
        at += len;
    }
    out
}

/// `next_char_lossy` decodes as `String::from_utf8_lossy` does: every lead
/// byte followed by every second byte, then each of the 2-byte prefixes
/// that can start a longer sequence followed by every third and fourth
/// byte of interest, and each of those cut short.
#[test]
fn next_char_lossy_is_from_utf8_lossy() {
    let check = |bytes: &[u8]| {
        assert_eq!(
            decode_with_next_char_lossy(bytes),
            String::from_utf8_lossy(bytes),
            "{bytes:x?}"
        );
    };
    let edges: Vec<u8> = vec![
        0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed,
        0xef, 0xf0, 0xf4, 0xf5, 0xff,
    ];
    for a in 0..=255u8 {
        for b in 0..=255u8 {
            check(&[a, b]);
            check(&[a, b, b'x']);
        }
        for &b in &edges {
            for &c in &edges {
                check(&[a, b, c]);
                for &d in &edges {
                    check(&[a, b, c, d]);
                    check(&[a, b, c, d, 0x80]);
                }
            }
        }
    }
}

/// The characters counted up front for `char` n-grams are those
/// `from_utf8_lossy` gives, on a document longer than the decoding block.
#[test]
fn lossy_char_count_counts_from_utf8_lossy() {
    let long: Vec<u8> = (0..40_000u32)
        .flat_map(|i| match i % 7 {
            0 => vec![0xe2, 0x82],
            1 => "é".as_bytes().to_vec(),
            2 => vec![0xff],
            3 => "\u{1f600}".as_bytes().to_vec(),
            _ => vec![b'a' + (i % 26) as u8],
        })
        .collect();
    for doc in [
        &b""[..],
        b"abc",
        b"\xc3",
        "a\u{e9}\u{1f600}".as_bytes(),
        &long,
    ] {
        let want = String::from_utf8_lossy(doc).chars().count();
        assert_eq!(super::utf8::lossy_char_count(doc), want);
    }
}

proptest::proptest! {
    #[test]
    fn next_char_lossy_decodes_any_bytes(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
        proptest::prop_assert_eq!(decode_with_next_char_lossy(&bytes), String::from_utf8_lossy(&bytes));
        proptest::prop_assert_eq!(
            super::utf8::lossy_char_count(&bytes),
            String::from_utf8_lossy(&bytes).chars().count()
        );
    }
}

/// The branch-free `decode_lossy` of `char` n-grams decodes every 4-byte
/// window as `next_char_lossy` does: every lead and second byte, with the
/// third and fourth bytes of interest.
#[test]
fn decode_lossy_is_next_char_lossy() {
    let thirds = [
        0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xe0, 0xf0, 0xff,
    ];
    for a in 0..=255u8 {
        for b in 0..=255u8 {
            for c in thirds {
                for d in [0x41, 0x80, 0xbf, 0xc0] {
                    let window = [a, b, c, d];
                    let (want, read) = super::utf8::next_char_lossy(&window);
                    let mut utf8 = [0; 4];
                    let want = want.encode_utf8(&mut utf8).as_bytes();
                    let (got, got_read, written, valid) = super::utf8::decode_lossy(window);
                    assert_eq!((&got[..written], got_read), (want, read), "{window:x?}");
                    // Valid: the window's own bytes (U+FFFD's too).
                    assert_eq!(valid, &window[..read] == want, "{window:x?}");
                }
            }
        }
    }
}

proptest::proptest! {
    /// `char` n-grams of any bytes (compressed data: every other byte is
    /// not ASCII), crossing the decoding block, are those of the
    /// definition: `from_utf8_lossy`'s characters.
    #[test]
    fn char_ngrams_of_any_bytes(
        doc in proptest::collection::vec(proptest::prop_oneof![
            proptest::num::u8::ANY,
            proptest::sample::select(vec![0x80u8, 0xbf, 0xc3, 0xe2, 0xed, 0xf0, 0xf4, b'A']),
        ], 0..400),
        widths in proptest::collection::vec(1usize..5, 1..3),
        lowercase in proptest::prelude::any::<bool>(),
    ) {
        let config = NgramConfig {
            tokenizer: Tokenizer::Char,
            widths,
            lowercase,
            hash: HashFamily::Fingerprint64,
            num_buckets: 1 << 40,
        };
        let h = NgramHasher::new(config.clone()).unwrap();
        let mut got: Vec<Vec<u8>> = Vec::new();
        h.for_each_gram(&doc, |g| {
            got.push(g.to_vec());
            ControlFlow::Continue(())
        });
        got.sort();
        let mut want = super::naive::grams(&config, &doc);
        want.sort();
        proptest::prop_assert_eq!(got, want);
    }
}

/// A document whose tokens fit in one block gets its n-grams in output
/// order, in group 0; a longer one, block by block, each n-gram in its
/// width's group (the ids' order then comes from the groups).
#[test]
fn one_pass_is_in_output_order_within_a_block() {
    use token_buffer::TokenBuffer;
    use tokenize::AsciiWords;
    let emitted = |doc: &[u8]| {
        let mut buffer = TokenBuffer::new();
        let mut words = AsciiWords::new(doc, scan::ByteClass::Whitespace, true, 1);
        let mut got = Vec::new();
        let flow = buffer.emit_windows(Some(b' '), &mut words, &[2, 1, 3], &mut |group, gram| {
            got.push((group, String::from_utf8(gram.bytes().to_vec()).unwrap()));
            ControlFlow::Continue(())
        });
        assert_eq!(flow, ControlFlow::Continue(()));
        got
    };
    let want = ["x yy", "yy zzz", "x", "yy", "zzz", "x yy zzz"];
    assert_eq!(
        emitted(b"x\tyy  Zzz"),
        want.map(|gram| (0, gram.to_string()))
    );

    let words: Vec<String> = (0..token_buffer::SHORT_DOC)
        .map(|i| format!("w{i}"))
        .collect();
    let got = emitted(words.join(" ").as_bytes());
    let width_of = |gram: &str| gram.split(' ').count();
    assert!(got
        .iter()
        .all(|(group, gram)| [2, 1, 3][*group] == width_of(gram)));
    let mut grouped: Vec<&(usize, String)> = got.iter().collect();
    grouped.sort_by_key(|(group, _)| *group);
    let in_order: Vec<String> = grouped.into_iter().map(|(_, gram)| gram.clone()).collect();
    let tf_order: Vec<String> = [2, 1, 3]
        .iter()
        .flat_map(|&n| words.windows(n).map(|w| w.join(" ")))
        .collect();
    assert_eq!(in_order, tf_order);
    assert!(got.iter().any(|(group, _)| *group > 0));
}
