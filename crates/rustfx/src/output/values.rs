//! The dtype axis of every output: [`DType`], and [`Values`], a column of
//! values of one dtype, whatever the layout that holds it.
//!
//! The numeric dtypes are one list ([`numeric_dtypes!`]): a new dtype is a
//! line there and a [`DType`] name, and every layout, extractor and host that
//! is generic over [`Element`] takes it. Hosts see values as native-endian
//! bytes ([`Values::as_bytes`], [`ValuesMut::from_bytes`]) plus the dtype, as
//! TensorFlow sees a tensor (`TF_DataType` and its buffer), so a host has one
//! arm per dtype in its own dtype table, not one call per dtype.
//!
//! ```
//! use rustfx::output::{DType, Values};
//! let mut values = Values::empty(DType::Int16);
//! values.resize(3);
//! assert_eq!((values.dtype(), values.len(), values.as_bytes().len()), (DType::Int16, 3, 6));
//! ```

use super::Offsets;
use crate::{Error, ErrorKind, Result};

/// The one list of numeric dtypes: calls `$m!` with `Variant type` pairs
/// (the [`DType`] variant and its Rust type).
#[macro_export]
macro_rules! numeric_dtypes {
    ($m:ident) => {
        $m! { Float32 f32, Int64 i64, Int32 i32, Int16 i16, UInt16 u16, UInt8 u8 }
    };
}

/// The element type of an output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// float32.
    Float32,
    /// int64.
    Int64,
    /// int32.
    Int32,
    /// int16.
    Int16,
    /// uint16.
    UInt16,
    /// uint8.
    UInt8,
    /// Byte strings (`tf.string`).
    String,
}

crate::names::named_values!(DType, "dtype", {
    Float32 => "float32",
    Int64 => "int64",
    Int32 => "int32",
    Int16 => "int16",
    UInt16 => "uint16",
    UInt8 => "uint8",
    String => "string",
});

impl DType {
    /// Bytes per value; `None` for strings, whose values vary in length.
    pub fn size(self) -> Option<usize> {
        macro_rules! size {
            ($($variant:ident $t:ty),+) => {
                match self {
                    $(DType::$variant => Some(std::mem::size_of::<$t>()),)+
                    DType::String => None,
                }
            };
        }
        numeric_dtypes!(size)
    }
}

/// Byte strings end to end: string `i` is `bytes[offsets.range(i)]`
/// (Arrow's `LargeBinary`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Strings {
    /// Every string's bytes, end to end.
    pub bytes: Vec<u8>,
    /// Where each string is in `bytes`.
    pub offsets: Offsets,
}

/// A numeric element type: the Rust type of one of [`numeric_dtypes!`].
/// What a layout or an extractor is generic over.
pub trait Element: bytemuck::Pod + Default + PartialEq + std::fmt::Debug + Send + Sync {
    /// Its dtype.
    const DTYPE: DType;
    /// The values of `values` when they are of this type.
    fn of(values: &Values) -> Option<&Vec<Self>>;
    /// The values of `values` when they are of this type.
    fn of_mut(values: &mut Values) -> Option<&mut Vec<Self>>;
    /// The slice of `values` when it is of this type.
    fn slice_of(values: ValuesMut<'_>) -> Option<&mut [Self]>;
    /// `values` as [`Values`].
    fn into_values(values: Vec<Self>) -> Values;
    /// `self` converted to `f32` (exact for every dtype but int64 and
    /// int32 above 2^24): what a model that takes float32 input reads.
    fn to_f32(self) -> f32;
    /// `self` converted to `i64` (exact but for float32, truncated).
    fn to_i64(self) -> i64;
    /// `v` converted to this type (`as`: saturating, truncated).
    fn from_f64(v: f64) -> Self;
}

macro_rules! define_values {
    ($($variant:ident $t:ty),+) => {
        /// A column of values of one dtype.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Values {
            $(
                #[doc = concat!("`", stringify!($t), "` values.")]
                $variant(Vec<$t>),
            )+
            /// Byte strings.
            String(Strings),
        }

        /// A mutable slice of values of one dtype: where an extractor writes
        /// rows in a host's memory (a tensor's buffer).
        #[derive(Debug)]
        pub enum ValuesMut<'a> {
            $(
                #[doc = concat!("`", stringify!($t), "` values.")]
                $variant(&'a mut [$t]),
            )+
        }

        $(
            impl Element for $t {
                const DTYPE: DType = DType::$variant;
                fn of(values: &Values) -> Option<&Vec<Self>> {
                    if let Values::$variant(v) = values { Some(v) } else { None }
                }
                fn of_mut(values: &mut Values) -> Option<&mut Vec<Self>> {
                    if let Values::$variant(v) = values { Some(v) } else { None }
                }
                fn slice_of(values: ValuesMut<'_>) -> Option<&mut [Self]> {
                    #[allow(irrefutable_let_patterns, unreachable_patterns)]
                    if let ValuesMut::$variant(v) = values { Some(v) } else { None }
                }
                fn into_values(values: Vec<Self>) -> Values {
                    Values::$variant(values)
                }
                fn to_f32(self) -> f32 {
                    self as f32
                }
                fn to_i64(self) -> i64 {
                    self as i64
                }
                fn from_f64(v: f64) -> Self {
                    v as $t
                }
            }
        )+

        impl Values {
            /// No values of `dtype`.
            pub fn empty(dtype: DType) -> Values {
                match dtype {
                    $(DType::$variant => Values::$variant(Vec::new()),)+
                    DType::String => Values::String(Strings::default()),
                }
            }

            /// The dtype of the values.
            pub fn dtype(&self) -> DType {
                match self {
                    $(Values::$variant(_) => DType::$variant,)+
                    Values::String(_) => DType::String,
                }
            }

            /// How many values (strings: how many strings).
            pub fn len(&self) -> usize {
                match self {
                    $(Values::$variant(v) => v.len(),)+
                    Values::String(s) => s.offsets.rows(),
                }
            }

            /// The numeric values as native-endian bytes (a host copies them
            /// into a buffer of the dtype); strings: their bytes end to end.
            pub fn as_bytes(&self) -> &[u8] {
                match self {
                    $(Values::$variant(v) => bytemuck::cast_slice(v),)+
                    Values::String(s) => &s.bytes,
                }
            }

            /// Removes every value, keeping the buffers.
            pub fn clear(&mut self) {
                match self {
                    $(Values::$variant(v) => v.clear(),)+
                    Values::String(s) => {
                        s.bytes.clear();
                        s.offsets.clear();
                    }
                }
            }

            /// Exactly `len` numeric values: cut, or grown with zeros
            /// (strings are left as they are). An empty buffer too small is
            /// replaced by a zeroed allocation, whose pages the system
            /// zeroes as they are first written, instead of a pass of
            /// zeros before the values.
            pub fn resize(&mut self, len: usize) {
                match self {
                    $(Values::$variant(v) => {
                        if v.is_empty() && v.capacity() < len {
                            *v = vec![<$t>::default(); len];
                            if super::huge_pages::is_large(std::mem::size_of_val(v.as_slice())) {
                                super::huge_pages::advise_huge_pages(bytemuck::cast_slice_mut(v));
                            }
                        } else {
                            v.resize(len, <$t>::default());
                        }
                    })+
                    Values::String(_) => {}
                }
            }

            /// The numeric values from `start` on, to be written; `None`
            /// for strings.
            pub fn tail_mut(&mut self, start: usize) -> Option<ValuesMut<'_>> {
                match self {
                    $(Values::$variant(v) => v.get_mut(start..).map(ValuesMut::$variant),)+
                    Values::String(_) => None,
                }
            }

            /// Whether `other` holds the same values bit for bit: NaN
            /// payloads and the sign of zero count, which `==` on floats
            /// ignores.
            pub fn same_bits(&self, other: &Values) -> bool {
                self.dtype() == other.dtype()
                    && self.len() == other.len()
                    && self.as_bytes() == other.as_bytes()
                    && match (self, other) {
                        (Values::String(a), Values::String(b)) => a.offsets == b.offsets,
                        _ => true,
                    }
            }

            /// Value `i` as text (numbers as Rust prints them, so floats
            /// round-trip; strings: `None`, a host escapes their bytes).
            pub fn value_text(&self, i: usize) -> Option<String> {
                match self {
                    $(Values::$variant(v) => v.get(i).map(|x| format!("{x:?}")),)+
                    Values::String(_) => None,
                }
            }

            /// Appends the values in `range`, space-separated, with
            /// `Display` (floats in Rust's shortest round-trip form, which
            /// parses back to the same bits); strings append nothing.
            pub fn push_display(&self, range: std::ops::Range<usize>, out: &mut String) {
                use std::fmt::Write as _;
                match self {
                    $(Values::$variant(v) => {
                        for (i, x) in v[range].iter().enumerate() {
                            let sep = if i > 0 { " " } else { "" };
                            let _ = write!(out, "{sep}{x}");
                        }
                    })+
                    Values::String(_) => {}
                }
            }

            /// Ragged rows (at `offsets`) as dense rows of the longest
            /// row's length, each padded with `pad` (converted to the
            /// dtype): `(width, values)`; `None` for strings.
            pub fn padded_rows(&self, offsets: &Offsets, pad: f64) -> Option<(usize, Values)> {
                let width = offsets.ranges().map(|r| r.len()).max().unwrap_or(0);
                match self {
                    $(Values::$variant(v) => {
                        let mut out = vec![<$t>::from_f64(pad); width * offsets.rows()];
                        for (row, range) in out.chunks_exact_mut(width.max(1)).zip(offsets.ranges()) {
                            row[..range.len()].copy_from_slice(&v[range]);
                        }
                        Some((width, Values::$variant(out)))
                    })+
                    Values::String(_) => None,
                }
            }

            /// Every numeric value as `f32` (a model's float input);
            /// `None` for strings.
            pub fn to_f32(&self) -> Option<Vec<f32>> {
                match self {
                    $(Values::$variant(v) => Some(v.iter().map(|x| x.to_f32()).collect()),)+
                    Values::String(_) => None,
                }
            }

            /// Values of a numeric `dtype` copied from a host's bytes (native
            /// byte order, any alignment): `InvalidArgument` if they are not
            /// a whole number of values or `dtype` is strings.
            pub fn from_host_bytes(dtype: DType, bytes: &[u8]) -> Result<Values> {
                let size = dtype.size().unwrap_or(0);
                if size == 0 || bytes.len() % size != 0 {
                    return Err(Error::invalid_argument(format!(
                        "{} bytes are not a whole number of {} values",
                        bytes.len(),
                        dtype.name()
                    )));
                }
                Ok(match dtype {
                    $(DType::$variant => Values::$variant(
                        bytes.chunks_exact(size).map(bytemuck::pod_read_unaligned).collect(),
                    ),)+
                    DType::String => unreachable!("strings have no size"),
                })
            }

            /// Every numeric value as `i64` (a model's integer input);
            /// `None` for strings.
            pub fn to_i64(&self) -> Option<Vec<i64>> {
                match self {
                    $(Values::$variant(v) => Some(v.iter().map(|x| x.to_i64()).collect()),)+
                    Values::String(_) => None,
                }
            }
        }

        impl<'a> ValuesMut<'a> {
            /// A host's buffer of `len` bytes as values of `dtype`: an
            /// `Internal` error if `dtype` is strings, or the buffer is not
            /// aligned or not a whole number of values (a host's bug).
            pub fn from_bytes(dtype: DType, bytes: &'a mut [u8]) -> Result<ValuesMut<'a>> {
                let misfit = |e: bytemuck::PodCastError| {
                    Error::new(
                        ErrorKind::Internal,
                        format!("a {} buffer: {e:?} (a bug in rustfx)", dtype.name()),
                    )
                };
                match dtype {
                    $(DType::$variant => bytemuck::try_cast_slice_mut(bytes)
                        .map(ValuesMut::$variant)
                        .map_err(misfit),)+
                    DType::String => Err(Error::new(
                        ErrorKind::Internal,
                        "strings are not written into a buffer (a bug in rustfx)",
                    )),
                }
            }

            /// The dtype of the values.
            pub fn dtype(&self) -> DType {
                match self {
                    $(ValuesMut::$variant(_) => DType::$variant,)+
                }
            }

            /// How many values.
            pub fn len(&self) -> usize {
                match self {
                    $(ValuesMut::$variant(v) => v.len(),)+
                }
            }

            /// Whether there are none.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
        }
    };
}
numeric_dtypes!(define_values);

impl Values {
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for Values {
    fn default() -> Self {
        Values::Float32(Vec::new())
    }
}

impl<T: Element> From<Vec<T>> for Values {
    fn from(values: Vec<T>) -> Values {
        T::into_values(values)
    }
}

/// The `Internal` error of a host or layout that asked for values of
/// `asked` from values of `got`.
pub(crate) fn wrong_dtype(asked: DType, got: DType) -> Error {
    Error::new(
        ErrorKind::Internal,
        format!(
            "{} values asked of {} values (a bug in rustfx)",
            asked.name(),
            got.name()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_numeric_dtype_round_trips_through_bytes() {
        for &name in DType::NAMES {
            let dtype = DType::from_name(name).unwrap();
            let mut values = Values::empty(dtype);
            assert_eq!(values.dtype(), dtype);
            let Some(size) = dtype.size() else {
                assert!(values.tail_mut(0).is_none());
                continue;
            };
            values.resize(4);
            assert_eq!(values.as_bytes().len(), 4 * size);
            // A buffer of 4 values, aligned for any dtype.
            let mut buffer = vec![0u64; 4];
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut buffer);
            let slice = ValuesMut::from_bytes(dtype, &mut bytes[..4 * size]).unwrap();
            assert_eq!((slice.dtype(), slice.len()), (dtype, 4));
            assert!(ValuesMut::from_bytes(dtype, &mut bytes[1..1 + size]).is_err() || size == 1);
        }
        assert!(ValuesMut::from_bytes(DType::String, &mut []).is_err());
    }

    #[test]
    fn same_bits_counts_nan_payloads_and_signed_zeros() {
        let f = |v: Vec<f32>| Values::from(v);
        assert!(f(vec![f32::NAN, 1.0]).same_bits(&f(vec![f32::NAN, 1.0])));
        assert!(!f(vec![0.0]).same_bits(&f(vec![-0.0])));
        assert!(!f(vec![1.0]).same_bits(&Values::from(vec![1i32])));
        assert_eq!(Values::from(vec![-3i16]).to_i64(), Some(vec![-3]));
        assert_eq!(Values::from(vec![256u16]).to_f32(), Some(vec![256.0]));
    }
}
