//! The byte sequences against the oracle, every dtype and layout.

use super::*;
use crate::extractor::{RaggedExtractor, RowExtractor};
use crate::oracles::byte_sequence::byte_sequence as oracle;
use proptest::prelude::*;

fn check(data: &[u8], max_len: usize, shift: i32, pad: i32, sampling: Sampling) {
    let seq = ByteSequence::new(max_len, shift, pad, sampling).unwrap();
    let mut out = vec![i32::MIN + 7; max_len];
    seq.write(data, &mut out).unwrap();
    assert_eq!(
        out,
        oracle(data, max_len, shift, pad, sampling),
        "len {} max_len {max_len} {sampling:?}",
        data.len()
    );
    let content = seq.content_len(data.len());
    assert!(out[content..].iter().all(|&x| x == pad));
    assert!(out[..content].iter().all(|&x| x != pad));
}

#[test]
fn every_alignment_length_and_max_len() {
    let buf: Vec<u8> = (0..64u32).map(|i| (i * 89 + 3) as u8).collect();
    for offset in 0..16 {
        for len in 0..=40 {
            let data = &buf[offset..offset + len];
            for max_len in [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 32, 33] {
                for sampling in [Sampling::Head, Sampling::HeadTail] {
                    check(data, max_len, 0, 256, sampling);
                    check(data, max_len, 1, 0, sampling);
                    check(data, max_len, -300, 5, sampling);
                }
            }
        }
    }
}

#[test]
fn head_tail_split() {
    let data: Vec<u8> = (0..10).collect();
    let mut out = [0i32; 5];
    let seq = ByteSequence::new(5, 0, -1, Sampling::HeadTail).unwrap();
    seq.write(&data, &mut out).unwrap();
    assert_eq!(out, [0, 1, 2, 8, 9]);
    let seq = ByteSequence::new(4, 1, 0, Sampling::HeadTail).unwrap();
    seq.write(&data, &mut out[..4]).unwrap();
    assert_eq!(out[..4], [1, 2, 9, 10]);
    let seq = ByteSequence::new(1, 0, -1, Sampling::HeadTail).unwrap();
    seq.write(&data, &mut out[..1]).unwrap();
    assert_eq!(out[0], 0);
    // Short inputs are kept whole and padded.
    let seq = ByteSequence::new(5, 0, -1, Sampling::HeadTail).unwrap();
    seq.write(&data[..3], &mut out).unwrap();
    assert_eq!(out, [0, 1, 2, -1, -1]);
}

#[test]
fn narrow_dtypes_are_refused_with_the_allowed_ones() {
    let malconv2 = ByteSequence::malconv2(16).unwrap();
    assert!(TypedSequence::<u16>::new(malconv2).is_ok());
    assert!(TypedSequence::<i16>::new(malconv2).is_ok());
    let e = TypedSequence::<u8>::new(malconv2).unwrap_err().to_string();
    assert!(
        e.contains("uint8") && e.contains("1..=256") && e.contains("int16"),
        "{e}"
    );
    let e = TypedSequence::<u8>::new(ByteSequence::ember())
        .unwrap_err()
        .to_string();
    assert!(e.contains("pad_value is 256"), "{e}");
    // Ragged rows hold no pad: uint8 holds raw bytes.
    let raw = TypedSequence::<u8>::unpadded(ByteSequence::ember()).unwrap();
    let mut values = Vec::new();
    RaggedExtractor::append_values(&raw, b"\x00\x7f\xff", &mut values);
    assert_eq!(values, [0, 0x7f, 0xff]);
    assert!(TypedSequence::<u8>::unpadded(malconv2).is_err());
}

#[test]
fn presets() {
    let e = ByteSequence::ember();
    assert_eq!(
        (e.max_len(), e.shift(), e.pad_value(), e.sampling()),
        (1 << 20, 0, 256, Sampling::Head)
    );
    assert_eq!(ByteSequence::new(1 << 20, 0, 256, Sampling::Head), Ok(e));
    let mut out = vec![0i32; 1 << 20];
    e.write(&[0, 255, 7], &mut out).unwrap();
    assert_eq!(out[..4], [0, 255, 7, 256]);
    assert_eq!(out[(1 << 20) - 1], 256);

    let m = ByteSequence::malconv2(MALCONV2_MAX_LEN).unwrap();
    assert_eq!(
        (m.max_len(), m.shift(), m.pad_value(), m.sampling()),
        (4_000_000, 1, 0, Sampling::Head)
    );
    let m = ByteSequence::malconv2(4).unwrap();
    let mut out = [9i32; 4];
    m.write(&[0, 255], &mut out).unwrap();
    assert_eq!(out, [1, 256, 0, 0]);
    assert_eq!(m.content_len(2), 2);
    assert_eq!(m.content_len(10), 4);
    assert!(ByteSequence::malconv2(0).is_err());
    assert!(ByteSequence::malconv2(MAX_SEQUENCE_LEN + 1).is_err());
}

#[test]
fn validation_messages() {
    let e = ByteSequence::new(0, 0, 256, Sampling::Head).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
    assert!(
        e.message()
            .contains("max_len must be in 1..=67108864, got 0"),
        "{e}"
    );
    let e = ByteSequence::new(MAX_SEQUENCE_LEN + 1, 0, 256, Sampling::Head).unwrap_err();
    assert!(e.message().contains("got 67108865"), "{e}");
    assert!(ByteSequence::new(MAX_SEQUENCE_LEN, 0, 256, Sampling::Head).is_ok());
    for pad in [0, 1, 128, 255] {
        let e = ByteSequence::new(8, 0, pad, Sampling::Head).unwrap_err();
        assert!(e.message().contains("bytes map to 0..=255"), "{e}");
        assert!(e.message().contains("below 0 or above 255"), "{e}");
    }
    assert!(ByteSequence::new(8, 1, 256, Sampling::Head).is_err());
    assert!(ByteSequence::new(8, 1, 257, Sampling::Head).is_ok());
    assert!(ByteSequence::new(8, 0, -1, Sampling::Head).is_ok());
    assert!(ByteSequence::new(8, i32::MIN, i32::MAX, Sampling::Head).is_ok());
    assert!(ByteSequence::new(8, i32::MAX - 255, i32::MIN, Sampling::Head).is_ok());
    let e = ByteSequence::new(8, i32::MAX - 254, 0, Sampling::Head).unwrap_err();
    assert!(
        e.message().contains("shift must be at most 2147483392"),
        "{e}"
    );
    // Extreme shifts map bytes without overflow.
    let s = ByteSequence::new(2, i32::MAX - 255, 0, Sampling::Head).unwrap();
    let mut out = [0i32; 2];
    s.write(&[255], &mut out).unwrap();
    assert_eq!(out, [i32::MAX, 0]);
}

#[test]
fn wrong_output_length_is_an_error_and_leaves_out_untouched() {
    let seq = ByteSequence::new(4, 0, 256, Sampling::Head).unwrap();
    for len in [0, 3, 5, 100] {
        let mut out = vec![-7i32; len];
        let e = seq.write(b"abcdef", &mut out).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        assert!(e.message().contains("must be max_len = 4"), "{e}");
        assert!(out.iter().all(|&x| x == -7));
    }
}

proptest! {
    #[test]
    fn prop_equals_oracle(
        data in proptest::collection::vec(any::<u8>(), 0..300),
        max_len in 1usize..200,
        shift in -1000i32..1000,
        pad_choice in any::<bool>(),
        head_tail in any::<bool>(),
    ) {
        let pad = if pad_choice { shift - 1 } else { shift + 256 };
        let sampling = if head_tail { Sampling::HeadTail } else { Sampling::Head };
        check(&data, max_len, shift, pad, sampling);
    }

    #[test]
    fn prop_never_panics(
        data in proptest::collection::vec(any::<u8>(), 0..100),
        max_len in 0usize..120,
        shift in any::<i32>(),
        pad in any::<i32>(),
        out_len in 0usize..120,
        head_tail in any::<bool>(),
    ) {
        let sampling = if head_tail { Sampling::HeadTail } else { Sampling::Head };
        if let Ok(seq) = ByteSequence::new(max_len, shift, pad, sampling) {
            let mut out = vec![0i32; out_len];
            let r = seq.write(&data, &mut out);
            prop_assert_eq!(r.is_ok(), out_len == max_len);
        }
    }

    /// Every dtype and both layouts hold the oracle's values: dense rows
    /// its whole row in the dtype, ragged rows its kept bytes only; and
    /// a dtype too narrow for the values is refused at construction.
    #[test]
    fn prop_typed_rows_equal_the_oracle(
        data in proptest::collection::vec(any::<u8>(), 0..300),
        max_len in 1usize..200,
        shift in -300i32..300,
        pad_choice in any::<bool>(),
        head_tail in any::<bool>(),
    ) {
        let pad = if pad_choice { shift - 1 } else { shift + 256 };
        let sampling = if head_tail { Sampling::HeadTail } else { Sampling::Head };
        let sequence = ByteSequence::new(max_len, shift, pad, sampling).unwrap();
        let want = oracle(&data, max_len, shift, pad, sampling);
        let kept = sequence.content_len(data.len());
        fn typed<T: SequenceValue>(
            sequence: ByteSequence, data: &[u8], want: &[i32], kept: usize,
        ) -> std::result::Result<(), TestCaseError> {
            let fits = want.iter().all(|&v| T::try_from(v).is_ok())
                && T::try_from(sequence.shift() + 255).is_ok()
                && T::try_from(sequence.shift()).is_ok()
                && T::try_from(sequence.pad_value()).is_ok();
            let Ok(typed) = TypedSequence::<T>::new(sequence) else {
                prop_assert!(!fits, "{:?} refused", T::DTYPE);
                return Ok(());
            };
            prop_assert!(fits);
            let as_t: Vec<T> = want.iter().map(|&v| T::try_from(v).ok().unwrap()).collect();
            prop_assert_eq!(RowExtractor::row(&typed, data), as_t.clone());
            let mut ragged = Vec::new();
            let docs = [data, data];
            RaggedExtractor::append_rows(&typed, &docs, &mut ragged, &mut crate::output::Offsets::new());
            let mut twice = as_t[..kept].to_vec();
            twice.extend_from_slice(&as_t[..kept]);
            prop_assert_eq!(&ragged, &twice);
            let mut direct = vec![T::default(); 2 * kept];
            RaggedExtractor::write_values(&typed, &docs, &mut direct).unwrap();
            prop_assert_eq!(direct, twice);
            Ok(())
        }
        typed::<i32>(sequence, &data, &want, kept)?;
        typed::<i64>(sequence, &data, &want, kept)?;
        typed::<i16>(sequence, &data, &want, kept)?;
        typed::<u16>(sequence, &data, &want, kept)?;
        typed::<u8>(sequence, &data, &want, kept)?;
    }
}
