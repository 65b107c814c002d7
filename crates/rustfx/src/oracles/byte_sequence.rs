//! The MalConv byte sequence as the most obvious loop, for
//! [`crate::byte_sequence`].

use crate::byte_sequence::Sampling;

/// The row of `max_len` values `ByteSequence::new(max_len, shift, pad,
/// sampling)` writes for `data`: the kept bytes (all of them if they fit;
/// else the head, or the head's `ceil(max_len/2)` then the tail's
/// `floor(max_len/2)`), each plus `shift`, then `pad` up to `max_len`.
pub fn byte_sequence(
    data: &[u8],
    max_len: usize,
    shift: i32,
    pad: i32,
    sampling: Sampling,
) -> Vec<i32> {
    let kept: Vec<u8> = if data.len() <= max_len {
        data.to_vec()
    } else {
        match sampling {
            Sampling::Head => data[..max_len].to_vec(),
            Sampling::HeadTail => {
                let head = max_len.div_ceil(2);
                let tail = max_len / 2;
                let mut v = data[..head].to_vec();
                v.extend_from_slice(&data[data.len() - tail..]);
                v
            }
        }
    };
    let mut out: Vec<i32> = kept.iter().map(|&b| i32::from(b) + shift).collect();
    out.resize(max_len, pad);
    out
}
