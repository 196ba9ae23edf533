//! Restart backoff: 1 s doubling to 60 s with ±20 % jitter, so a crash loop neither hammers the
//! machine nor leaves a server down for long after its cause is fixed.

use std::time::Duration;

/// The delay before restart number `failures` (1-based count of consecutive failures).
/// `jitter` is a number in [0, 1) (random in production, fixed in tests).
pub fn delay(base: Duration, max: Duration, failures: u32, jitter: f64) -> Duration {
    let exp = failures.saturating_sub(1).min(20);
    let nominal = base.saturating_mul(1u32 << exp).min(max);
    // Map jitter [0,1) to a factor in [0.8, 1.2).
    nominal.mul_f64(0.8 + 0.4 * jitter.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);
    const MAX: Duration = Duration::from_secs(60);

    #[test]
    fn doubles_from_one_second_to_sixty() {
        let nominal: Vec<u64> = (1..=9).map(|n| delay(S, MAX, n, 0.5).as_secs()).collect();
        assert_eq!(nominal, vec![1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(delay(S, MAX, u32::MAX, 0.5), MAX);
    }

    #[test]
    fn jitter_is_plus_minus_twenty_percent() {
        assert_eq!(delay(S, MAX, 4, 0.0), Duration::from_millis(6400));
        assert_eq!(delay(S, MAX, 4, 1.0), Duration::from_millis(9600));
        assert_eq!(delay(S, MAX, 7, 0.0), Duration::from_secs(48));
        assert_eq!(delay(S, MAX, 7, 1.0), Duration::from_secs(72));
        assert_eq!(delay(Duration::ZERO, MAX, 3, 0.7), Duration::ZERO);
    }
}
