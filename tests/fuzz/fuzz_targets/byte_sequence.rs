//! Fuzz target `byte_sequence`: MalConv-style sequences with random
//! `max_len`, `shift`, `pad_value` and sampling (valid and invalid).
//!
//! Checks:
//! - `ByteSequence::new` is `Err(InvalidArgument)` exactly when `max_len` is
//!   outside `1..=MAX_SEQUENCE_LEN`, `shift > i32::MAX - 255`, or the pad
//!   lies in `shift..=shift + 255`; never panics;
//! - `write` into a slice of exactly `max_len` equals the unit tests' oracle,
//!   `rustfx::oracles::byte_sequence` (head, or head `ceil(max_len/2)` +
//!   tail `floor(max_len/2)`, each byte `+ shift`, then the pad), and every
//!   value is a shifted byte or the pad;
//! - `write` into a slice of any other length is `Err(InvalidArgument)` and
//!   leaves the slice untouched;
//! - `content_len` is `min(len, max_len)` and is exactly where the pad
//!   starts; `malconv2(n)` equals `new(n, 1, 0, Head)`; `ember()` equals
//!   `new(2^20, 0, 256, Head)` and (for about one input in 512) writes the
//!   input unshifted then 256 up to 2^20.
//!
//! Rows are only materialised for `max_len <= 2^16` (plus that occasional
//! `ember()` row), to keep the fuzzer fast; larger valid lengths are only
//! validated.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use rustfx::output::{DType, Layout};
use rustfx::byte_sequence::{sequence_extractor, 
    ByteSequence, Sampling, EMBER_MALCONV_MAX_LEN, EMBER_MALCONV_PAD, MALCONV2_MAX_LEN,
    MAX_SEQUENCE_LEN,
};
use rustfx::oracles;
use rustfx::ErrorKind;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Len {
    Small(u8),
    /// 0..=8192 (around the usual input sizes).
    Medium(u16),
    /// The largest length that is materialised.
    Limit,
    Ember,
    Malconv2,
    Max,
    MaxPlus1,
    Any(u64),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Shift {
    Zero,
    One,
    Small(i8),
    Any(i32),
    Top,
    TopPlus1,
    Min,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Pad {
    Any(i32),
    /// shift + k - 1 for k in 0..=257: the edges of the byte range.
    Near(u16),
    Ember,
    Zero,
    MinusOne,
    Min,
    Max,
}

#[derive(Arbitrary, Debug)]
struct Input {
    len: Len,
    shift: Shift,
    pad: Pad,
    head_tail: bool,
    ember: bool,
    wrong_len_delta: i8,
    data: Vec<u8>,
}

const MATERIALISE_LIMIT: usize = 1 << 16;

fuzz_target!(|input: Input| {
    let data = &input.data[..];
    let max_len = match input.len {
        Len::Small(x) => usize::from(x),
        Len::Medium(x) => usize::from(x) % 8193,
        Len::Limit => MATERIALISE_LIMIT,
        Len::Ember => EMBER_MALCONV_MAX_LEN,
        Len::Malconv2 => MALCONV2_MAX_LEN,
        Len::Max => MAX_SEQUENCE_LEN,
        Len::MaxPlus1 => MAX_SEQUENCE_LEN + 1,
        Len::Any(x) => x as usize,
    };
    let shift = match input.shift {
        Shift::Zero => 0,
        Shift::One => 1,
        Shift::Small(x) => i32::from(x),
        Shift::Any(x) => x,
        Shift::Top => i32::MAX - 255,
        Shift::TopPlus1 => i32::MAX - 254,
        Shift::Min => i32::MIN,
    };
    let pad = match input.pad {
        Pad::Any(x) => x,
        Pad::Near(k) => shift.wrapping_add(i32::from(k % 258)).wrapping_sub(1),
        Pad::Ember => EMBER_MALCONV_PAD,
        Pad::Zero => 0,
        Pad::MinusOne => -1,
        Pad::Min => i32::MIN,
        Pad::Max => i32::MAX,
    };
    let sampling = if input.head_tail {
        Sampling::HeadTail
    } else {
        Sampling::Head
    };

    let valid = (1..=MAX_SEQUENCE_LEN).contains(&max_len)
        && shift <= i32::MAX - 255
        && !(i64::from(shift)..=i64::from(shift) + 255).contains(&i64::from(pad));
    let seq = match ByteSequence::new(max_len, shift, pad, sampling) {
        Ok(s) => {
            assert!(valid, "accepted max_len {max_len} shift {shift} pad {pad}");
            s
        }
        Err(e) => {
            assert!(
                !valid,
                "rejected max_len {max_len} shift {shift} pad {pad}: {e}"
            );
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(!e.message().is_empty());
            return;
        }
    };
    assert_eq!(
        (seq.max_len(), seq.shift(), seq.pad_value(), seq.sampling()),
        (max_len, shift, pad, sampling)
    );
    assert_eq!(seq.content_len(data.len()), data.len().min(max_len));
    if sampling == Sampling::Head && shift == 1 && pad == 0 {
        assert_eq!(ByteSequence::malconv2(max_len).unwrap(), seq);
    }

    if max_len <= MATERIALISE_LIMIT {
        let mut out = vec![0x1234_5678; max_len];
        seq.write(data, &mut out).unwrap();
        assert_eq!(
            out,
            oracles::byte_sequence::byte_sequence(data, max_len, shift, pad, sampling)
        );
        let content = seq.content_len(data.len());
        assert!(out[..content]
            .iter()
            .all(|&v| (i64::from(shift)..=i64::from(shift) + 255).contains(&i64::from(v))));
        assert!(out[content..].iter().all(|&v| v == pad));

        // Every dtype and both layouts, through the extractor a spec
        // builds: the oracle's values in the dtype (ragged rows: the kept
        // bytes only), or a refusal exactly when a value does not fit.
        let kept = seq.content_len(data.len());
        for dtype in [DType::Int32, DType::Int64, DType::Int16, DType::UInt16, DType::UInt8] {
            for layout in [Layout::Dense, Layout::Ragged] {
                let wanted = if layout == Layout::Ragged { &out[..kept] } else { &out[..] };
                let fits = |v: i64| match dtype {
                    DType::Int16 => i16::try_from(v).is_ok(),
                    DType::UInt16 => u16::try_from(v).is_ok(),
                    DType::UInt8 => u8::try_from(v).is_ok(),
                    DType::Int32 => i32::try_from(v).is_ok(),
                    _ => true,
                };
                let ok = fits(i64::from(shift))
                    && fits(i64::from(shift) + 255)
                    && (layout == Layout::Ragged || fits(i64::from(pad)));
                match sequence_extractor(seq, dtype, layout) {
                    Ok(e) => {
                        assert!(ok, "{dtype:?} {layout:?} accepted shift {shift} pad {pad}");
                        let batch = e.extract_batch(&[data]).unwrap();
                        assert_eq!(
                            (batch.layout(), batch.values().dtype()),
                            (layout, dtype)
                        );
                        let got = batch.values().to_i64().unwrap();
                        let want: Vec<i64> = wanted.iter().map(|&v| i64::from(v)).collect();
                        assert_eq!(got, want, "{dtype:?} {layout:?}");
                    }
                    Err(e) => {
                        assert!(!ok, "{dtype:?} {layout:?} refused: {e}");
                        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
                    }
                }
            }
        }

        // A slice of the wrong length: error, untouched.
        let wrong = max_len.saturating_add_signed(isize::from(input.wrong_len_delta));
        if wrong != max_len && wrong <= MATERIALISE_LIMIT + 128 {
            let mut out = vec![0x1234_5678; wrong];
            let e = seq.write(data, &mut out).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(out.iter().all(|&v| v == 0x1234_5678));
        }
    }

    // ember() is new(2^20, 0, 256, Head); its 4 MiB row is written only for
    // one input in 512 or so (the write path is the same as above).
    let ember = ByteSequence::ember();
    assert_eq!(
        ember,
        ByteSequence::new(EMBER_MALCONV_MAX_LEN, 0, EMBER_MALCONV_PAD, Sampling::Head).unwrap()
    );
    if input.ember && input.wrong_len_delta == 0 {
        let mut out = vec![-7; EMBER_MALCONV_MAX_LEN];
        ember.write(data, &mut out).unwrap();
        let n = data.len().min(EMBER_MALCONV_MAX_LEN);
        assert!(out[..n].iter().zip(data).all(|(&v, &b)| v == i32::from(b)));
        assert!(out[n..].iter().all(|&v| v == EMBER_MALCONV_PAD));
    }
});
