//! Deterministic choices for whatever plays a world: fault injection, the simulated
//! node's pod lives, the fuzzer's trace generator. A seeded PRNG, so a run follows from
//! its seed on every platform; [`Entropy`] lets the fuzzer feed its own bytes instead.

/// A source of choices. The helpers (on `dyn Entropy`) all derive from
/// [`Entropy::next_u64`].
pub trait Entropy {
    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64;
}

impl dyn Entropy + '_ {
    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// An index into a collection of `len` elements (`len` > 0).
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// A number in `low..=high`.
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.below(high - low + 1)
    }

    /// A number in `[0, 1)`, from the top 53 bits (every value an `f64` holds exactly).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One of `items`, which must not be empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    /// An index chosen with the given weights (at least one non-zero).
    pub fn weighted(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut roll = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if roll < w {
                return i;
            }
            roll -= w;
        }
        weights.len() - 1
    }
}

/// SplitMix64 (Steele, Lea and Flood): tiny, fast, and good enough to drive a
/// generator; the same seed always gives the same sequence on every platform.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }
}

impl Entropy for SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_is_deterministic_and_spreads() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = SplitMix64::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = SplitMix64::new(7);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(SplitMix64::new(8).next_u64(), a[0]);
        let mut r = SplitMix64::new(1);
        let r: &mut dyn Entropy = &mut r;
        let counts = (0..1000).fold([0u32; 4], |mut c, _| {
            c[r.index(4)] += 1;
            c
        });
        assert!(counts.iter().all(|&c| c > 150), "{counts:?}");
    }
}
