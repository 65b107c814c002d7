//! Times as asn1crypto reads them (UTCTime, GeneralizedTime, fractions rounded to a
//! microsecond) and as Python's `timedelta.total_seconds()` turns them into seconds.

use super::der::{Malformed, Parsed, TAG_GENERALIZED_TIME, TAG_UTC_TIME};

const MICROS_PER_SECOND: i128 = 1_000_000;

/// A UTCTime or GeneralizedTime as asn1crypto reads it, in microseconds since the
/// epoch (zone-less times as UTC).
pub(super) fn parse_time(tag: u8, content: &[u8]) -> Parsed<i128> {
    let text = match content {
        // Python's `$` also matches before one final newline.
        [head @ .., b'\n'] => head,
        _ => content,
    };
    let mut cursor = TimeText { rest: text };
    let generalized = match tag {
        TAG_UTC_TIME => false,
        TAG_GENERALIZED_TIME => true,
        _ => return Err(Malformed),
    };
    let year = if generalized {
        cursor.digits(4).ok_or(Malformed)?
    } else {
        // asn1crypto puts two-digit years in 1950..2049.
        let short = cursor.digits(2).ok_or(Malformed)?;
        if short < 50 {
            short + 2000
        } else {
            short + 1900
        }
    };
    let month = cursor.digits(2).ok_or(Malformed)?;
    let day = cursor.digits(2).ok_or(Malformed)?;
    let hour = cursor.digits(2).ok_or(Malformed)?;
    let (minute, second) = if generalized {
        match cursor.digits(2) {
            Some(minute) => (Some(minute), cursor.digits(2)),
            None => (None, None),
        }
    } else {
        (Some(cursor.digits(2).ok_or(Malformed)?), cursor.digits(2))
    };
    let mut fraction_micros = 0;
    if generalized && matches!(cursor.rest.first(), Some(b'.' | b',')) {
        cursor.rest = cursor.rest.get(1..).unwrap_or_default();
        let digits_len = cursor
            .rest
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits_len == 0 {
            return Err(Malformed);
        }
        let (digits, rest) = cursor.rest.split_at(digits_len);
        cursor.rest = rest;
        let unit_seconds = match (minute, second) {
            (None, _) => 3600,
            (Some(_), None) => 60,
            _ => 1,
        };
        fraction_micros = fraction_to_micros(digits, unit_seconds);
    }
    let offset_seconds: Option<i128> = match cursor.rest {
        b"Z" => Some(0),
        [sign @ (b'+' | b'-'), rest @ ..] => {
            cursor.rest = rest;
            let hours = cursor.digits(2).ok_or(Malformed)?;
            let minutes = if generalized {
                cursor.digits(2).unwrap_or(0)
            } else {
                cursor.digits(2).ok_or(Malformed)?
            };
            if !cursor.rest.is_empty() {
                return Err(Malformed);
            }
            let magnitude = i128::from(hours) * 3600 + i128::from(minutes) * 60;
            // Python's timezone() wants |offset| < 24 h.
            if magnitude >= 86_400 {
                return Err(Malformed);
            }
            Some(if *sign == b'-' { -magnitude } else { magnitude })
        }
        [] if generalized => None,
        _ => return Err(Malformed),
    };
    // datetime(): year 0 is asn1crypto's extended_datetime, which has no timestamp().
    if !(1..=9999).contains(&year)
        || !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute.unwrap_or(0) > 59
        || second.unwrap_or(0) > 59
    {
        return Err(Malformed);
    }
    let local_micros = (i128::from(days_from_civil(year, month, day)) * 86_400
        + i128::from(hour) * 3600
        + i128::from(minute.unwrap_or(0)) * 60
        + i128::from(second.unwrap_or(0)))
        * MICROS_PER_SECOND
        + fraction_micros;
    // Adding the fraction past 9999-12-31 is an OverflowError in Python.
    let max_local = (i128::from(days_from_civil(10_000, 1, 1)) * 86_400) * MICROS_PER_SECOND;
    if local_micros >= max_local {
        return Err(Malformed);
    }
    Ok(local_micros - offset_seconds.unwrap_or(0) * MICROS_PER_SECOND)
}

struct TimeText<'a> {
    pub(super) rest: &'a [u8],
}

impl TimeText<'_> {
    /// The next `count` ASCII digits as a number, consumed only if all are digits.
    pub(super) fn digits(&mut self, count: usize) -> Option<u32> {
        let digits = self.rest.get(..count)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.rest = self.rest.get(count..)?;
        Some(
            digits
                .iter()
                .fold(0, |value, digit| value * 10 + u32::from(digit - b'0')),
        )
    }
}

/// asn1crypto's `int(Fraction(0.digits) * 10**6 * unit_seconds).limit_denominator(1))`:
/// the microseconds, rounded to the nearest with halves rounded down. Works digit by
/// digit, so any number of digits is exact.
pub(super) fn fraction_to_micros(digits: &[u8], unit_seconds: i128) -> i128 {
    // 10**6 * 0.d1d2... = d1..d6 . d7...: whole micros, then a tail fraction.
    let mut whole: i128 = 0;
    for index in 0..6 {
        let digit = digits.get(index).map_or(0, |d| i128::from(d - b'0'));
        whole = whole * 10 + digit;
    }
    // unit_seconds * 0.d7d8...: multiply right to left, tracking the result's digits.
    let mut carry: i128 = 0;
    let mut first_digit: i128 = 0;
    let mut later_nonzero = false;
    let tail = digits.get(6..).unwrap_or_default();
    for (position, &digit) in tail.iter().enumerate().rev() {
        let product = i128::from(digit - b'0') * unit_seconds + carry;
        let result_digit = product % 10;
        carry = product / 10;
        if position == 0 {
            first_digit = result_digit;
        } else if result_digit != 0 {
            later_nonzero = true;
        }
    }
    let above_half = first_digit > 5 || (first_digit == 5 && later_nonzero);
    whole * unit_seconds + carry + i128::from(above_half)
}

fn is_leap(year: u32) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: u32, month: u32, day: u32) -> i64 {
    let year = i64::from(year) - i64::from(month <= 2);
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Python's `timedelta.total_seconds()`: `micros / 10**6`, correctly rounded.
pub(super) fn micros_to_seconds(micros: i128) -> f64 {
    const EXACT: i128 = 1 << 53;
    let approximate = micros as f64 / 1e6;
    if micros.abs() <= EXACT {
        // Both operands exact: IEEE division rounds correctly.
        return approximate;
    }
    // Pick, among the neighbours, the double nearest to micros / 10**6 (ties to even).
    let candidates = [
        f64::from_bits(approximate.to_bits().wrapping_sub(1)),
        approximate,
        f64::from_bits(approximate.to_bits().wrapping_add(1)),
    ];
    let mut best = approximate;
    let mut best_error: Option<(i128, i32)> = None;
    for candidate in candidates {
        let Some(error) = scaled_error(candidate, micros) else {
            continue;
        };
        let better = match best_error {
            None => true,
            Some(current) => {
                compare_scaled(error, current).is_lt()
                    || (compare_scaled(error, current).is_eq() && candidate.to_bits() % 2 == 0)
            }
        };
        if better {
            best = candidate;
            best_error = Some(error);
        }
    }
    best
}

/// |candidate * 10**6 - micros| as (numerator, shift): the error is numerator / 2**shift.
fn scaled_error(candidate: f64, micros: i128) -> Option<(i128, i32)> {
    if !candidate.is_finite() {
        return None;
    }
    let bits = candidate.to_bits();
    let exponent = ((bits >> 52) & 0x7FF) as i32;
    let fraction = (bits & ((1 << 52) - 1)) as i128;
    let mantissa = if exponent == 0 {
        fraction
    } else {
        fraction | (1 << 52)
    };
    let signed = if candidate < 0.0 { -mantissa } else { mantissa };
    let power = exponent.max(1) - 1075; // candidate = signed * 2**power
    if power >= 0 {
        let product = signed
            .checked_mul(MICROS_PER_SECOND)?
            .checked_shl(power as u32)?;
        Some(((product - micros).abs(), 0))
    } else {
        let shift = -power;
        if shift > 60 {
            return None;
        }
        let scaled_micros = micros.checked_mul(1 << shift)?;
        Some(((signed * MICROS_PER_SECOND - scaled_micros).abs(), shift))
    }
}

fn compare_scaled(a: (i128, i32), b: (i128, i32)) -> std::cmp::Ordering {
    // Neighbouring doubles share an exponent, except across a power of two.
    let shift = a.1.max(b.1);
    let left = a.0.checked_shl((shift - a.1) as u32).unwrap_or(i128::MAX);
    let right = b.0.checked_shl((shift - b.1) as u32).unwrap_or(i128::MAX);
    left.cmp(&right)
}
