//! The random machinery of ANALYZE's two-stage sample: a small PRNG, Knuth's Algorithm S
//! over a table's blocks, and Vitter's reservoir over the rows of those blocks.
//!
//! # Stage one: which blocks (Algorithm S)
//!
//! We want `n` of the table's `N` blocks, every block equally likely, in ascending order
//! (so the read stream sees a forward pattern it can combine and prefetch). Algorithm S
//! walks the blocks once: with `K` blocks left and `k` still wanted, it takes the next
//! block with probability `k / K`. Taking a block when `k ≥ K` is forced, so the walk
//! always ends with exactly `min(n, N)` blocks. One uniform draw `V` serves a whole run of
//! skipped blocks: skipping with probability `p = 1 − k/K` means `V < p`; conditioned on
//! that, `V` is uniform on `[0, p)`, so the next test is `V < p · (1 − k/K′)` with the same
//! `V` — one random number per *selected* block, as PostgreSQL's `BlockSampler_Next` does.
//!
//! # Stage two: which rows (Vitter's reservoir, Algorithm Z)
//!
//! The chosen blocks hold more rows than we want (`targrows`). The first `targrows` rows
//! fill the reservoir; afterwards, after `t` rows seen, the next row should enter with
//! probability `targrows / (t + 1)`, replacing a uniformly chosen slot. Rather than drawing
//! for every row, Vitter's algorithms draw `S`, the number of rows to skip before the next
//! one that enters: Algorithm X (sequential search over the skip distribution) while
//! `t ≤ 22 · n`, then Algorithm Z (rejection sampling with the state `W`), which needs a
//! constant expected number of draws however far the scan goes. At every moment the
//! reservoir is a uniform sample of the rows seen so far.
//!
//! ```text
//!   blocks:  0  1  2  3  4  5  6  7  8  9      Algorithm S picks n of N (here 4 of 10),
//!            .  X  .  .  X  X  .  .  .  X      ascending, fed to a maintenance read stream
//!   rows of picked blocks: r r r r | r r | r r r | r r      reservoir of targrows slots:
//!   [r0 r1 r2 r3]  fill, then skip S rows, replace slot ⌊targrows·U⌋, skip S′ rows, …
//! ```
//!
//! # Random numbers
//!
//! [`Prng`] is xoroshiro128** seeded through splitmix64, the generator behind PostgreSQL's
//! `pg_prng`; `random_fract` rejects 0 so logarithms stay finite. ANALYZE seeds it from the
//! process's random state; tests seed it explicitly and get the same sample every time.

/// xoroshiro128**: 128 bits of state, period 2^128 − 1.
#[derive(Clone, Debug)]
pub struct Prng {
    s0: u64,
    s1: u64,
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Prng {
    /// A generator whose sequence is fixed by `seed`.
    pub fn seeded(seed: u64) -> Prng {
        let mut sm = seed;
        let s0 = splitmix64(&mut sm);
        let s1 = splitmix64(&mut sm);
        // The all-zero state is the one state xoroshiro never leaves.
        if s0 == 0 && s1 == 0 {
            return Prng { s0: 1, s1: 0 };
        }
        Prng { s0, s1 }
    }

    /// A generator seeded from the process's random state (different on every call).
    pub fn from_entropy() -> Prng {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        Prng::seeded(h.finish())
    }

    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let mut s1 = self.s1;
        let result = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        s1 ^= s0;
        self.s0 = s0.rotate_left(24) ^ s1 ^ (s1 << 16);
        self.s1 = s1.rotate_left(37);
        result
    }

    /// Uniform in `[0, 1)` with 52 random bits.
    pub fn next_double(&mut self) -> f64 {
        (self.next_u64() >> 12) as f64 * (1.0 / (1u64 << 52) as f64)
    }

    /// Uniform in `(0, 1)`: zero is rejected (PostgreSQL's `sampler_random_fract`).
    pub fn random_fract(&mut self) -> f64 {
        loop {
            let r = self.next_double();
            if r != 0.0 {
                return r;
            }
        }
    }
}

/// Knuth's Algorithm S over block numbers `0..nblocks` (see the module comment).
#[derive(Clone, Debug)]
pub struct BlockSampler {
    /// Blocks in the table (`N`).
    nblocks: u32,
    /// Blocks wanted (`n`).
    target: u32,
    /// Next block to consider (`t`): blocks `< t` are decided.
    next: u32,
    /// Blocks selected so far (`m`).
    selected: u32,
    rng: Prng,
}

impl BlockSampler {
    pub fn new(nblocks: u32, target: u32, rng: Prng) -> BlockSampler {
        BlockSampler {
            nblocks,
            target,
            next: 0,
            selected: 0,
            rng,
        }
    }

    /// How many blocks the sampler returns in all: `min(target, nblocks)`.
    pub fn sample_size(&self) -> u32 {
        self.target.min(self.nblocks)
    }

    /// Blocks returned so far.
    pub fn selected(&self) -> u32 {
        self.selected
    }

    fn has_more(&self) -> bool {
        self.next < self.nblocks && self.selected < self.target
    }
}

impl Iterator for BlockSampler {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if !self.has_more() {
            return None;
        }
        let remaining = self.nblocks - self.next; // K > 0
        let wanted = self.target - self.selected; // k > 0
        if wanted < remaining {
            let v = self.rng.random_fract();
            let mut k_remaining = remaining as f64;
            let mut p = 1.0 - wanted as f64 / k_remaining;
            while v < p {
                // skip this block
                self.next += 1;
                k_remaining -= 1.0;
                p *= 1.0 - wanted as f64 / k_remaining;
            }
            debug_assert!(
                self.nblocks - self.next >= wanted,
                "Algorithm S kept enough blocks"
            );
        }
        self.selected += 1;
        self.next += 1;
        Some(self.next - 1)
    }
}

/// Vitter's skip-count generator for a reservoir of `n` rows (PostgreSQL's
/// `ReservoirStateData`: the Algorithm Z state `W` and a PRNG).
#[derive(Clone, Debug)]
pub struct ReservoirState {
    n: f64,
    w: f64,
    rng: Prng,
}

/// Vitter's threshold `T`: Algorithm X is used while `t ≤ T · n`.
const ALGORITHM_X_LIMIT: f64 = 22.0;

impl ReservoirState {
    pub fn new(n: usize, mut rng: Prng) -> ReservoirState {
        assert!(n > 0, "a reservoir holds at least one row");
        let n = n as f64;
        let w = (-rng.random_fract().ln() / n).exp();
        ReservoirState { n, w, rng }
    }

    /// A uniform draw in `(0, 1)` from the reservoir's generator.
    pub fn random_fract(&mut self) -> f64 {
        self.rng.random_fract()
    }

    /// After `t` rows (`t ≥ n`), the number of rows to skip before the next one that
    /// enters the reservoir.
    pub fn next_skip(&mut self, t: f64) -> f64 {
        let n = self.n;
        if t <= ALGORITHM_X_LIMIT * n {
            // Algorithm X: the smallest S with P(skip > S) ≤ V.
            let v = self.rng.random_fract();
            let mut s = 0.0;
            let mut t = t + 1.0;
            let mut quot = (t - n) / t;
            while quot > v {
                s += 1.0;
                t += 1.0;
                quot *= (t - n) / t;
            }
            return s;
        }
        // Algorithm Z.
        let mut w = self.w;
        let term = t - n + 1.0;
        let s = loop {
            let u = self.rng.random_fract();
            let x = t * (w - 1.0);
            let s = x.floor();
            // Accept if U ≤ h(S) / c·g(X).
            let tmp = (t + 1.0) / term;
            let lhs = (((u * tmp * tmp) * (term + s)) / (t + x)).ln() / n;
            let lhs = lhs.exp();
            let rhs = (((t + x) / (term + s)) * term) / t;
            if lhs <= rhs {
                w = rhs / lhs;
                break s;
            }
            // Accept if U ≤ f(S) / c·g(X).
            let mut y = (((u * (t + 1.0)) / term) * (t + s + 1.0)) / (t + x);
            let (mut denom, numer_lim) = if n < s {
                (t, term + s)
            } else {
                (t - n + s, t + 1.0)
            };
            let mut numer = t + s;
            while numer >= numer_lim {
                y *= numer / denom;
                denom -= 1.0;
                numer -= 1.0;
            }
            w = (-self.rng.random_fract().ln() / n).exp();
            if (y.ln() / n).exp() <= (t + x) / t {
                break s;
            }
        };
        self.w = w;
        s
    }
}

/// A reservoir of at most `capacity` items, a uniform sample of every item offered.
///
/// `offer` takes a closure so that an item is built (a tuple copied) only when it enters.
#[derive(Debug)]
pub struct Reservoir<T> {
    items: Vec<T>,
    capacity: usize,
    /// Items offered so far (`samplerows`).
    seen: f64,
    /// Items still to skip before the next one enters; negative = not drawn yet.
    to_skip: f64,
    state: ReservoirState,
}

impl<T> Reservoir<T> {
    pub fn new(capacity: usize, rng: Prng) -> Reservoir<T> {
        Reservoir {
            items: Vec::with_capacity(capacity.min(1 << 20)),
            capacity,
            seen: 0.0,
            to_skip: -1.0,
            state: ReservoirState::new(capacity, rng),
        }
    }

    /// Offers one item; `make` is called only if it enters the reservoir.
    pub fn offer(&mut self, make: impl FnOnce() -> T) {
        if self.items.len() < self.capacity {
            self.items.push(make());
        } else {
            if self.to_skip < 0.0 {
                self.to_skip = self.state.next_skip(self.seen);
            }
            if self.to_skip <= 0.0 {
                let k = (self.capacity as f64 * self.state.random_fract()) as usize;
                assert!(k < self.capacity, "replacement slot inside the reservoir");
                self.items[k] = make();
            }
            self.to_skip -= 1.0;
        }
        self.seen += 1.0;
    }

    /// Items offered so far.
    pub fn seen(&self) -> f64 {
        self.seen
    }

    /// Whether the reservoir reached its capacity (and so is no longer in offer order).
    pub fn is_full(&self) -> bool {
        self.items.len() == self.capacity
    }

    pub fn into_items(self) -> Vec<T> {
        self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prng_is_deterministic_and_in_range() {
        let mut a = Prng::seeded(42);
        let mut b = Prng::seeded(42);
        for _ in 0..1000 {
            let x = a.random_fract();
            assert_eq!(x, b.random_fract());
            assert!(x > 0.0 && x < 1.0);
        }
        assert_ne!(Prng::seeded(1).next_u64(), Prng::seeded(2).next_u64());
    }

    #[test]
    fn block_sampler_sizes() {
        for (nblocks, target) in [(0, 10), (5, 10), (10, 10), (1000, 10), (7408, 3000), (1, 1)] {
            let sampler = BlockSampler::new(nblocks, target, Prng::seeded(7));
            let expected = sampler.sample_size();
            let blocks: Vec<u32> = sampler.collect();
            assert_eq!(
                blocks.len() as u32,
                expected,
                "{nblocks} blocks, target {target}"
            );
            assert_eq!(expected, target.min(nblocks));
            assert!(
                blocks.windows(2).all(|w| w[0] < w[1]),
                "ascending, no repeats"
            );
            assert!(blocks.iter().all(|&b| b < nblocks));
        }
        // A table smaller than the target is read whole.
        let all: Vec<u32> = BlockSampler::new(5, 30000, Prng::seeded(1)).collect();
        assert_eq!(all, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn block_sampler_is_deterministic_with_a_seed() {
        let a: Vec<u32> = BlockSampler::new(100_000, 300, Prng::seeded(99)).collect();
        let b: Vec<u32> = BlockSampler::new(100_000, 300, Prng::seeded(99)).collect();
        let c: Vec<u32> = BlockSampler::new(100_000, 300, Prng::seeded(100)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn block_sampler_is_uniform() {
        // 2000 samples of 10 of 100 blocks: each block should be chosen ≈ 200 times.
        let mut counts = [0u32; 100];
        let mut rng = Prng::seeded(2024);
        for _ in 0..2000 {
            let seed = rng.next_u64();
            for b in BlockSampler::new(100, 10, Prng::seeded(seed)) {
                counts[b as usize] += 1;
            }
        }
        // Binomial(2000, 0.1): sd ≈ 13.4; 6 sd either side never trips by chance.
        for (b, &c) in counts.iter().enumerate() {
            assert!((120..=280).contains(&c), "block {b} chosen {c} times");
        }
        // First and second halves get the same share (no drift toward either end).
        let first: u32 = counts[..50].iter().sum();
        let second: u32 = counts[50..].iter().sum();
        assert!(
            (first as i64 - second as i64).abs() < 600,
            "{first} vs {second}"
        );
    }

    #[test]
    fn reservoir_keeps_capacity_and_all_when_small() {
        let mut r = Reservoir::new(100, Prng::seeded(5));
        for i in 0..50 {
            r.offer(|| i);
        }
        assert!(!r.is_full());
        assert_eq!(r.into_items(), (0..50).collect::<Vec<_>>());

        let mut r = Reservoir::new(100, Prng::seeded(5));
        for i in 0..100_000 {
            r.offer(|| i);
        }
        assert_eq!(r.seen(), 100_000.0);
        let items = r.into_items();
        assert_eq!(items.len(), 100);
        let mut sorted = items.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 100, "no item twice");
    }

    #[test]
    fn reservoir_is_deterministic_with_a_seed() {
        let run = |seed| {
            let mut r = Reservoir::new(300, Prng::seeded(seed));
            for i in 0..1_000_000u32 {
                r.offer(|| i);
            }
            r.into_items()
        };
        assert_eq!(run(11), run(11));
        assert_ne!(run(11), run(12));
    }

    #[test]
    fn reservoir_is_uniform() {
        // Both algorithms (X below 22·n rows, Z beyond): 200 000 items into 1000 slots,
        // counted in 10 deciles of the offer order; each decile should hold ≈ 100.
        // Repeated over seeds, each decile's mean share must be close to 10%.
        let mut per_decile = [0u64; 10];
        let runs = 40;
        for seed in 0..runs {
            let mut r = Reservoir::new(1000, Prng::seeded(seed));
            for i in 0..200_000u32 {
                r.offer(|| i);
            }
            for item in r.into_items() {
                per_decile[(item / 20_000) as usize] += 1;
            }
        }
        let expected = runs * 100;
        for (d, &c) in per_decile.iter().enumerate() {
            // sd of one decile's total ≈ sqrt(40 · 90) ≈ 60.
            assert!(
                (c as i64 - expected as i64).abs() < 360,
                "decile {d}: {c} items, expected ≈ {expected}"
            );
        }
        // The Algorithm Z region alone (t > 22 000) also gets its share: deciles 2..9.
        let late: u64 = per_decile[2..].iter().sum();
        assert!((late as i64 - (runs * 800) as i64).abs() < 600, "{late}");
    }
}
