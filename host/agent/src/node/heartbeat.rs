//! When a node's periodic work comes due: its Lease renewals and its status checks.
//!
//! The kubelet runs both loops with `wait.JitterUntil(f, period, 0.04, true, stop)`:
//! each wait is the period plus up to 4% of it, drawn anew, counted from the end of the
//! last round. One kubelet per machine needs nothing more. A fleet of virtual nodes in
//! one process starts its nodes a millisecond apart, so without more their renewals
//! would all fall in the same second of every interval, a thousand requests at once
//! against the API server and the fleet's call threads. A node's *phase* places its
//! rounds within the interval: the first wait after the first round is shortened by
//! that fraction of the period, and the jitter then keeps the rounds from drifting back
//! into step. A fleet gives node `i` of `n` the phase `i / n`.

use std::time::Duration;

use podstatus_backends::rng::{Entropy, SplitMix64};

/// The kubelet's jitter factor for its heartbeat loops (`wait.JitterUntil`'s 0.04).
pub const JITTER: f64 = 0.04;

/// The waits of one periodic loop.
#[derive(Debug)]
pub struct Pacer {
    period: Duration,
    /// Taken once, by the first wait.
    phase: Option<f64>,
    rng: SplitMix64,
}

impl Pacer {
    /// Waits of `period` (plus jitter) for the node named `node` at `phase` (a fraction of
    /// the period, 0 up to but excluding 1; anything else counts as 0). The jitter is
    /// drawn from a sequence seeded by the node's name: nodes differ from one another,
    /// and a run is the same every time.
    pub fn new(node: &str, period: Duration, phase: f64) -> Self {
        let phase = if (0.0..1.0).contains(&phase) { phase } else { 0.0 };
        // FNV-1a of the name: any stable spread of names over seeds will do.
        let seed =
            node.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        Pacer { period, phase: Some(phase), rng: SplitMix64::new(seed) }
    }

    /// How long to wait before the next round: the period with up to [`JITTER`] of it
    /// added, the first time less the phase's share of the period.
    pub fn next_wait(&mut self) -> Duration {
        let jitter = (&mut self.rng as &mut dyn Entropy).unit() * JITTER;
        let share = 1.0 - self.phase.take().unwrap_or(0.0) + jitter;
        self.period.mul_f64(share)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERIOD: Duration = Duration::from_secs(10);

    #[test]
    fn a_wait_is_the_period_plus_at_most_four_percent() {
        let mut pacer = Pacer::new("n-0", PERIOD, 0.0);
        let waits: Vec<Duration> = (0..200).map(|_| pacer.next_wait()).collect();
        assert!(waits.iter().all(|w| *w >= PERIOD && *w <= PERIOD.mul_f64(1.0 + JITTER)), "{waits:?}");
        assert!(waits.windows(2).any(|w| w[0] != w[1]), "the jitter is drawn anew for every wait");
    }

    #[test]
    fn the_phase_shortens_only_the_first_wait() {
        let mut pacer = Pacer::new("n-0", PERIOD, 0.75);
        let first = pacer.next_wait();
        assert!(first >= PERIOD.mul_f64(0.25) && first <= PERIOD.mul_f64(0.25 + JITTER), "{first:?}");
        assert!(pacer.next_wait() >= PERIOD, "later waits are whole periods again");
    }

    #[test]
    fn a_fleet_spreads_its_first_rounds_over_the_period() {
        let n = 1000;
        let mut firsts: Vec<Duration> =
            (0..n).map(|i| Pacer::new(&format!("fleet-{i}"), PERIOD, i as f64 / n as f64).next_wait()).collect();
        firsts.sort();
        // Every tenth of the period holds about a tenth of the nodes' next rounds.
        for tenth in 0..10 {
            let (from, to) = (PERIOD.mul_f64(tenth as f64 / 10.0), PERIOD.mul_f64((tenth + 1) as f64 / 10.0));
            let within = firsts.iter().filter(|w| **w > from && **w <= to).count();
            assert!((60..=140).contains(&within), "{within} of {n} nodes in tenth {tenth}");
        }
    }

    #[test]
    fn a_phase_out_of_range_counts_as_none() {
        for phase in [-0.5, 1.0, 7.0, f64::NAN] {
            assert!(Pacer::new("n-0", PERIOD, phase).next_wait() >= PERIOD, "{phase}");
        }
    }

    #[test]
    fn nodes_draw_different_jitter_and_a_node_the_same_every_time() {
        let waits = |node: &str| {
            let mut pacer = Pacer::new(node, PERIOD, 0.0);
            (0..5).map(|_| pacer.next_wait()).collect::<Vec<_>>()
        };
        assert_eq!(waits("n-1"), waits("n-1"));
        assert_ne!(waits("n-1"), waits("n-2"));
    }
}
