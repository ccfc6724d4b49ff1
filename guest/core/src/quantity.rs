//! Comparing Kubernetes resource quantities by value.
//!
//! Go's `apiequality.Semantic.DeepEqual` compares two `resource.Quantity` values with
//! `a.Cmp(b) == 0`, so `"1"` equals `"1000m"` and `"1Ki"` equals `"1024"`. k8s-openapi keeps
//! a quantity as the string it was given, so this module parses that string the way
//! `resource.ParseQuantity` does and compares exact values.
//!
//! Every suffix scales by a power of two (`Ki` .. `Ei`) or of ten (`n` .. `E`, `e<exp>`),
//! and so does the decimal point. A non-zero value is therefore held exactly as
//! `±odd × 2^twos × 5^fives`, with `odd` divisible by neither 2 nor 5: that form is unique,
//! so two values are equal exactly when their forms are. No floating point, no big
//! integers, and no digit limit beyond a 128-bit mantissa once zeros are trimmed off.
//!
//! Like `ParseQuantity`, a non-zero value finer than one nano is rounded away from zero to
//! a whole number of nanos (`"0.1n"` is `"1n"`), and a quantity with a binary suffix is
//! capped at 2^63-1 in magnitude (`"8Ei"` is `"9223372036854775807"`).
//!
//! A string that does not follow the grammar, or whose mantissa does not fit 128 bits even
//! after trimming zeros, is compared as text (trimmed, as Go's decoder trims), so such a
//! quantity equals only the same spelling: never a false "equal", at worst a redundant
//! status update.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Whether two quantities hold the same value, as Go's `Quantity.Cmp` sees it.
///
/// Falls back to comparing the trimmed strings when either side cannot be parsed exactly
/// (see the module documentation). Never panics.
pub fn quantities_equal(a: &Quantity, b: &Quantity) -> bool {
    let (a, b) = (a.0.trim(), b.0.trim());
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// The canonical form Go marshals a quantity in (`Quantity.String`, so its JSON): the
/// value with the largest suffix of its format that keeps the number whole, where the
/// format is the parsed string's (binary for `Ki` .. `Ei`, a decimal exponent for
/// `e`/`E`, decimal SI otherwise) and a binary quantity below 1024 in magnitude or not
/// a whole number is written in decimal SI: `"1000m"` is `"1"`, `"1024"` stays `"1024"`,
/// `"1Ki"` stays `"1Ki"`, `"2048Ki"` is `"2Mi"`, `"0.5Ki"` is `"512"`, `"1500m"` is
/// `"1500m"`, `"2e3"` stays `"2e3"`.
///
/// `None` when the string cannot be parsed exactly, or the form needs more than 128 bits
/// of nanos or a decimal SI suffix beyond `E`: such a quantity is compared as written.
pub fn go_canonical(quantity: &Quantity) -> Option<String> {
    let text = quantity.0.trim();
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (_, rest) = split_digits(unsigned);
    let (_, suffix) = split_digits(rest.strip_prefix('.').unwrap_or(rest));
    let Value::NonZero { negative, magnitude } = parse(text)? else {
        return Some("0".into());
    };
    let sign = if negative { "-" } else { "" };
    let nanos = magnitude
        .odd
        .checked_mul(pow(2, magnitude.twos.checked_add(9)?)?)?
        .checked_mul(pow(5, magnitude.fives.checked_add(9)?)?)?;
    const NANOS: u128 = 1_000_000_000;

    let binary = interpret_suffix(suffix)?.twos > 0;
    if binary && nanos >= 1024 * NANOS && nanos % NANOS == 0 {
        let (mut number, mut power) = (nanos / NANOS, 0);
        while number % 1024 == 0 && power < 6 {
            number /= 1024;
            power += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
        return Some(format!("{sign}{number}{suffix}"));
    }
    let (mut number, mut exponent) = (nanos, -9i64);
    while number % 10 == 0 {
        number /= 10;
        exponent += 1;
    }
    match exponent.rem_euclid(3) {
        1 => (number, exponent) = (number.checked_mul(10)?, exponent - 1),
        2 => (number, exponent) = (number.checked_mul(100)?, exponent - 2),
        _ => {}
    }
    let suffix = if suffix.len() > 1 && suffix.starts_with(['e', 'E']) {
        if exponent == 0 { String::new() } else { format!("e{exponent}") }
    } else {
        let index = usize::try_from(exponent / 3 + 3).ok()?;
        (*["n", "u", "m", "", "k", "M", "G", "T", "P", "E"].get(index)?).to_string()
    };
    Some(format!("{sign}{number}{suffix}"))
}

/// A quantity as `resource.ParseQuantity` reads it, for checking what a user gives
/// (a node's capacity, a size): its sign, and its value in whole units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedQuantity {
    /// Below zero.
    pub negative: bool,
    /// The magnitude rounded up to a whole unit (`500m` is 1, `1Ki` is 1024, `1.5` is
    /// 2); `None` when it takes more than 128 bits in nanos.
    pub whole: Option<u128>,
}

/// `text` read as a quantity of Kubernetes' grammar (`<sign>? <number> <suffix>`, the
/// suffix one of `Ki` .. `Ei`, `n` .. `E`, or `e`/`E` and an exponent), exactly as
/// written (no spaces around it); `None` when it is not one (`lots`, `32GB`).
pub fn parse_quantity(text: &str) -> Option<ParsedQuantity> {
    const NANOS: u128 = 1_000_000_000;
    match parse(text)? {
        Value::Zero => Some(ParsedQuantity { negative: false, whole: Some(0) }),
        Value::NonZero { negative, magnitude } => {
            // Whole nanos (rounded so by `parse`): both exponents are at least -9.
            let nanos = magnitude
                .odd
                .checked_mul(pow(2, magnitude.twos.checked_add(9)?)?)
                .and_then(|n| n.checked_mul(pow(5, magnitude.fives.checked_add(9)?)?));
            Some(ParsedQuantity { negative, whole: nanos.map(|n| n.div_ceil(NANOS)) })
        }
    }
}

/// The exact value of a quantity, in a form where equal values are equal structs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    /// Zero has no sign (`"-0"` equals `"0"`) and no canonical `odd` part.
    Zero,
    NonZero {
        negative: bool,
        magnitude: Magnitude,
    },
}

/// A positive number `odd × 2^twos × 5^fives` where `odd` is divisible by neither 2 nor 5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Magnitude {
    odd: u128,
    twos: i64,
    fives: i64,
}

/// Go's `maxAllowed` (2^63-1), the cap on binary-suffixed quantities, in nanos.
const MAX_ALLOWED_NANOS: u128 = (i64::MAX as u128) * 1_000_000_000;

/// Parses `<sign>? <digits>? (. <digits>?)? <suffix>` with at least one digit, as in the
/// grammar of the `Quantity` documentation. `None` when the string does not follow it or
/// the mantissa overflows.
fn parse(s: &str) -> Option<Value> {
    let (negative, unsigned) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (int_digits, rest) = split_digits(unsigned);
    let (frac_digits, suffix) = match rest.strip_prefix('.') {
        Some(after_point) => split_digits(after_point),
        None => ("", rest),
    };
    if int_digits.is_empty() && frac_digits.is_empty() {
        return None;
    }
    let Suffix { tens, twos } = interpret_suffix(suffix)?;

    // The digits as one integer mantissa, without the leading and trailing zeros (the
    // trailing ones move into the power of ten) so that long round numbers still fit.
    let digits = || int_digits.bytes().chain(frac_digits.bytes());
    let Some(leading_zeros) = digits().position(|d| d != b'0') else {
        return Some(Value::Zero);
    };
    let trailing_zeros = digits().rev().take_while(|&d| d == b'0').count();
    let significant = digits().count() - leading_zeros - trailing_zeros;
    let mantissa = digits()
        .skip(leading_zeros)
        .take(significant)
        .try_fold(0u128, |m, d| m.checked_mul(10)?.checked_add(u128::from(d - b'0')))?;

    let tens =
        tens.checked_sub(i64::try_from(frac_digits.len()).ok()?)?.checked_add(i64::try_from(trailing_zeros).ok()?)?;
    let mut magnitude = Magnitude::new(mantissa, twos.checked_add(tens)?, tens)?;

    magnitude = magnitude.round_up_to_nano()?;
    if twos > 0 {
        // Only the binary suffixes (`Ki` .. `Ei`) scale by a power of two.
        magnitude = magnitude.cap_binary_si();
    }
    Some(Value::NonZero { negative, magnitude })
}

/// Splits `s` after its leading ASCII digits.
fn split_digits(s: &str) -> (&str, &str) {
    // `find` returns a character boundary, so the split cannot panic.
    s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()))
}

/// The scale a suffix applies: `10^tens × 2^twos`.
struct Suffix {
    tens: i64,
    twos: i64,
}

fn interpret_suffix(suffix: &str) -> Option<Suffix> {
    let decimal = |tens| Some(Suffix { tens, twos: 0 });
    let binary = |twos| Some(Suffix { tens: 0, twos });
    match suffix {
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "" => decimal(0),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        // A decimal exponent: `e` or `E` then a signed integer (Go keeps it as an int32).
        _ => {
            let exponent = suffix.strip_prefix('e').or_else(|| suffix.strip_prefix('E'))?;
            // `parse` also takes a leading `+` or `-`, as Go's `strconv.ParseInt` does.
            decimal(i64::from(exponent.parse::<i32>().ok()?))
        }
    }
}

impl Magnitude {
    /// `mantissa × 2^twos × 5^fives` in canonical form; `None` for a zero mantissa or an
    /// exponent overflow.
    fn new(mantissa: u128, twos: i64, fives: i64) -> Option<Self> {
        if mantissa == 0 {
            return None;
        }
        let shift = mantissa.trailing_zeros();
        let (mut odd, twos) = (mantissa >> shift, twos.checked_add(i64::from(shift))?);
        let mut fives = fives;
        while odd % 5 == 0 {
            odd /= 5;
            fives = fives.checked_add(1)?;
        }
        Some(Self { odd, twos, fives })
    }

    /// Go's `amount.Round(amount, Nano, inf.RoundUp)`: a value that is not a whole number
    /// of nanos becomes the next one away from zero. `None` if that cannot be computed in
    /// 128 bits.
    fn round_up_to_nano(self) -> Option<Self> {
        // self × 10^9 = odd × 2^twos9 × 5^fives9: a whole number when neither is negative.
        let twos9 = self.twos.checked_add(9)?;
        let fives9 = self.fives.checked_add(9)?;
        if twos9 >= 0 && fives9 >= 0 {
            return Some(self);
        }
        let numerator = self.odd.checked_mul(pow(2, twos9.max(0))?)?.checked_mul(pow(5, fives9.max(0))?)?;
        let denominator =
            pow(2, twos9.min(0).checked_neg()?).and_then(|d| d.checked_mul(pow(5, fives9.min(0).checked_neg()?)?));
        // A denominator beyond 128 bits exceeds the numerator, so the quotient rounds up to 1.
        let nanos = denominator.map_or(1, |d| numerator.div_ceil(d));
        Self::new(nanos, -9, -9)
    }

    /// Go's cap on binary-suffixed quantities: nothing above 2^63-1 in magnitude. Expects a
    /// whole number of nanos (after `round_up_to_nano`).
    fn cap_binary_si(self) -> Self {
        let nanos = self
            .twos
            .checked_add(9)
            .zip(self.fives.checked_add(9))
            .and_then(|(twos9, fives9)| self.odd.checked_mul(pow(2, twos9)?)?.checked_mul(pow(5, fives9)?));
        match nanos {
            Some(nanos) if nanos <= MAX_ALLOWED_NANOS => self,
            // Too large for 128 bits is certainly above the cap.
            _ => Self::new(i64::MAX.unsigned_abs().into(), 0, 0).unwrap_or(self),
        }
    }
}

/// `base^exponent`, or `None` when the exponent is negative or the result overflows.
fn pow(base: u128, exponent: i64) -> Option<u128> {
    base.checked_pow(u32::try_from(exponent).ok()?)
}

#[cfg(test)]
mod parse_quantity_tests {
    use super::*;

    #[test]
    fn quantities_of_the_grammar_read_as_whole_units() {
        let whole = |text: &str| parse_quantity(text).and_then(|q| q.whole);
        assert_eq!(whole("8"), Some(8));
        assert_eq!(whole("500m"), Some(1));
        assert_eq!(whole("1.5"), Some(2));
        assert_eq!(whole("32Gi"), Some(32 << 30));
        assert_eq!(whole("64Mi"), Some(64 << 20));
        assert_eq!(whole("2e3"), Some(2000));
        assert_eq!(whole("1k"), Some(1000));
        assert_eq!(whole("0"), Some(0));
        assert_eq!(parse_quantity("-1").map(|q| q.negative), Some(true));
        assert_eq!(parse_quantity("1e40").map(|q| q.whole), Some(None), "a quantity, too large for 128 bits");
    }

    #[test]
    fn anything_else_is_not_a_quantity() {
        for bad in ["lots", "32GB", "", " 8", "8 ", "1.2.3", "Gi", "1gi", "1KiB", "0x10", "--1", "1e"] {
            assert_eq!(parse_quantity(bad), None, "{bad:?}");
        }
    }
}

#[cfg(test)]
mod canonical_tests {
    use super::*;

    fn canonical(text: &str) -> Option<String> {
        go_canonical(&Quantity(text.to_string()))
    }

    #[test]
    fn canonical_forms_are_gos() {
        for (given, go) in [
            ("1000m", "1"),
            ("1", "1"),
            ("1024", "1024"),
            ("1Ki", "1Ki"),
            ("2048Ki", "2Mi"),
            ("1536", "1536"),
            ("1.5Ki", "1536"),
            ("0.5Ki", "512"),
            ("1023Ki", "1023Ki"),
            ("1500m", "1500m"),
            ("1.5", "1500m"),
            ("2000", "2k"),
            ("0.1", "100m"),
            ("10", "10"),
            ("100", "100"),
            ("12e3", "12e3"),
            ("1e3", "1e3"),
            ("1E3", "1e3"),
            ("1000e0", "1e3"),
            ("100e-2", "1"),
            ("0.1n", "1n"),
            ("-1Ki", "-1Ki"),
            ("-0.5", "-500m"),
            ("0", "0"),
            ("0Gi", "0"),
            (" 1G ", "1G"),
            ("1000M", "1G"),
            ("2E", "2E"),
            ("8Ei", "9223372036854775807"),
        ] {
            assert_eq!(canonical(given).as_deref(), Some(go), "{given}");
        }
        assert_eq!(canonical("1 Ki"), None);
        assert_eq!(canonical("1000E"), None, "beyond the largest decimal SI suffix");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity(s.to_owned())
    }

    #[test]
    fn equal_by_value() {
        let cases = [
            ("1", "1000m"),
            ("1Ki", "1024"),
            ("1e3", "1k"),
            ("0.5", "500m"),
            ("+1", "1"),
            ("1.0", "1"),
            (".5", "500m"),
            ("1.", "1"),
            ("0", "-0"),
            ("0", "0m"),
            ("0", "0Ki"),
            ("0", "0.000"),
            ("1.5Gi", "1536Mi"),
            ("100Mi", "104857600"),
            ("1E", "1e18"),
            ("1E+3", "1k"),
            ("1e-3", "1m"),
            ("-1.5", "-1500m"),
            ("250m", "0.25"),
            ("1n", "0.000000001"),
            ("1e100", "10e99"),
            // 45 digits: fits once the trailing zeros move into the exponent.
            ("100000000000000000000000000000000000000000000", "1e44"),
            ("0000000000000000000000000000000000000000000000012", "12"),
            ("128974848", "123Mi"),
            ("129e6", "129M"),
            ("1Gi", "1073741824"),
            (" 1 ", "1"),
        ];
        for (a, b) in cases {
            assert!(quantities_equal(&q(a), &q(b)), "{a:?} should equal {b:?}");
            assert!(quantities_equal(&q(b), &q(a)), "{b:?} should equal {a:?}");
        }
    }

    #[test]
    fn different_values() {
        let cases = [
            ("1Ki", "1000"),
            ("1k", "1024"),
            ("1", "-1"),
            ("1", "1001m"),
            ("1m", "1u"),
            ("1M", "1Mi"),
            ("0", "1n"),
            ("1e18", "1e19"),
            ("", "0"),
            ("abc", "abd"),
        ];
        for (a, b) in cases {
            assert!(!quantities_equal(&q(a), &q(b)), "{a:?} should differ from {b:?}");
            assert!(!quantities_equal(&q(b), &q(a)), "{b:?} should differ from {a:?}");
        }
    }

    #[test]
    fn go_parse_rounding_and_cap() {
        let cases = [
            // Finer than a nano rounds away from zero.
            ("0.1n", "1n", true),
            ("1.5n", "2n", true),
            ("-0.1n", "-1n", true),
            ("1e-1000000", "1n", true),
            ("1.0000000001", "1.000000001", true),
            ("1.0000000001", "1", false),
            // Binary suffixes are capped at 2^63-1; decimal ones are not.
            ("8Ei", "9223372036854775807", true),
            ("16Ei", "8Ei", true),
            ("-8Ei", "-9223372036854775807", true),
            ("7Ei", "8070450532247928832", true),
            ("1e19", "9223372036854775807", false),
        ];
        for (a, b, equal) in cases {
            assert_eq!(quantities_equal(&q(a), &q(b)), equal, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn unparsable_compares_as_text() {
        let huge = "123456789012345678901234567890123456789012345";
        let cases = [
            ("abc", "abc", true),
            ("1Kb", "1Kb", true),
            ("1Kb", "1Ki", false),
            ("", "", true),
            ("-", "0", false),
            (".", "0", false),
            ("1e", "1e", true),
            ("1e+", "1", false),
            ("1e99999999999", "1e99999999999", true),
            ("1e3k", "1M", false),
            ("1..0", "1", false),
            ("1é", "1é", true),
            ("é", "1", false),
            ("١", "1", false),
            // A mantissa beyond 128 bits: only the same spelling is equal.
            (huge, huge, true),
            (huge, "1.23456789012345678901234567890123456789012345e44", false),
        ];
        for (a, b, equal) in cases {
            assert_eq!(quantities_equal(&q(a), &q(b)), equal, "{a:?} vs {b:?}");
        }
    }
}
