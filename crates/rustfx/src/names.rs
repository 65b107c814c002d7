//! Names of closed sets of values (tokenizers, hashes, norms, ...), each
//! parsed in exactly one place.
//!
//! `named_values!` writes `from_name`, `name`, `NAMES` and
//! `VALUES` from one table, so the Rust API, `rustfx-features`, the bridge and
//! the TensorFlow ops accept the same names with the same message. `name` is
//! an exhaustive match: a variant added without a name does not compile.

/// Implements `NAMES`, `VALUES`, `from_name` and `name` for a fieldless enum from a
/// `Variant => "name"` table. `$what` is the parameter's name in messages.
macro_rules! named_values {
    ($ty:ident, $what:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every accepted name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            /// Every value, in declaration order (the order of `NAMES`).
            pub const VALUES: &'static [Self] = &[$($ty::$variant),+];

            /// Parses a name; the error says which names are allowed.
            pub fn from_name(name: &str) -> $crate::Result<Self> {
                match name {
                    $($name => Ok($ty::$variant),)+
                    _ => Err($crate::Error::invalid_argument(format!(
                        "{} must be one of {}, got '{}'",
                        $what,
                        Self::NAMES.join(", "),
                        name
                    ))),
                }
            }

            /// The name [`from_name`](Self::from_name) parses to this value.
            pub const fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }
        }
    };
}
pub(crate) use named_values;

#[cfg(test)]
mod tests {
    use crate::byte_features::EmptyInput;
    use crate::byte_sequence::Sampling;
    use crate::ngrams::{HashFamily, Norm, Tokenizer};
    use crate::printable_strings::StringEncoding;
    use crate::read::OnError;

    /// Every name parses to the value whose name it is.
    macro_rules! round_trip {
        ($($ty:ty),+) => {$(
            for &name in <$ty>::NAMES {
                assert_eq!(<$ty>::from_name(name).unwrap().name(), name);
            }
            let names: Vec<&str> = <$ty>::VALUES.iter().map(|v| v.name()).collect();
            assert_eq!(names, <$ty>::NAMES);
        )+};
    }

    #[test]
    fn names_round_trip_and_errors_list_them() {
        round_trip!(
            Tokenizer,
            HashFamily,
            Norm,
            EmptyInput,
            Sampling,
            OnError,
            StringEncoding
        );
        let e = Norm::from_name("l3").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        assert_eq!(e.message(), "norm must be one of none, l1, l2, got 'l3'");
        let e = Tokenizer::from_name("").unwrap_err();
        assert!(e.message().contains("sklearn_char_wb"), "{e}");
    }
}
