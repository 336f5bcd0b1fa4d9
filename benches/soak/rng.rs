//! The soak's randomness: SplitMix64, seeded from `--seed` and a name per part, so that a part's
//! choices do not shift when another part draws more or fewer numbers. Not for anything secret.

pub struct Rng(u64);

impl Rng {
    /// The generator of one part of the soak (`"traffic"`, `"chaos"`, …) for `seed`.
    pub fn new(seed: u64, part: &str) -> Rng {
        let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
        for byte in part.bytes() {
            state = (state ^ u64::from(byte)).wrapping_mul(0x100_0000_01B3);
        }
        Rng(state)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// A duration between `low` and `high` seconds.
    pub fn secs(&mut self, low: f64, high: f64) -> std::time::Duration {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        std::time::Duration::from_secs_f64(low + (high - low) * unit)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() { None } else { items.get(self.below(items.len() as u64) as usize) }
    }
}
