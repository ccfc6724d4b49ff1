//! The cargo-fuzz target's source of choices: libFuzzer's input bytes, so that its
//! mutations of the input become structured changes of the trace.

use podstatus_backends::rng::{Entropy, SplitMix64};

/// Choices read from a fuzzer's input, two bytes per choice; once the input runs out,
/// a PRNG seeded from the whole input continues, so every input makes a whole trace
/// and small inputs still explore.
pub struct ByteEntropy<'a> {
    bytes: &'a [u8],
    fallback: SplitMix64,
}

impl<'a> ByteEntropy<'a> {
    /// Choices from `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        // FNV-1a of the input seeds the continuation.
        let seed =
            bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        ByteEntropy { bytes, fallback: SplitMix64::new(seed) }
    }
}

impl Entropy for ByteEntropy<'_> {
    fn next_u64(&mut self) -> u64 {
        match self.bytes {
            [a, b, rest @ ..] => {
                self.bytes = rest;
                u64::from(u16::from_le_bytes([*a, *b]))
            }
            _ => self.fallback.next_u64(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_come_first_then_the_continuation() {
        let mut e = ByteEntropy::new(&[1, 0, 2, 0, 9]);
        assert_eq!(e.next_u64(), 1);
        assert_eq!(e.next_u64(), 2);
        let next = e.next_u64();
        assert_eq!(next, ByteEntropy::new(&[1, 0, 2, 0, 9]).fallback.next_u64());
        assert_eq!((&mut e as &mut dyn Entropy).weighted(&[0, 5, 0]), 1);
    }
}
