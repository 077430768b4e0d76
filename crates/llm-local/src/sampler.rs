//! Choosing the next token: greedy (the default, deterministic) or
//! temperature with nucleus (top-p) sampling from a seeded generator,
//! always among the tokens a constraint allows.

/// How candidates are examined: the best `WINDOW` by logit first, then the
/// rest only if none of those is allowed.
const WINDOW: usize = 256;

/// Picks tokens.
#[derive(Debug, Clone)]
pub(crate) struct Sampler {
    temperature: f32,
    top_p: f32,
    rng: fastrand::Rng,
}

impl Sampler {
    /// Greedy when `temperature` is zero or less (or not finite).
    pub(crate) fn new(temperature: f32, top_p: f32, seed: u64) -> Self {
        Self {
            temperature: if temperature.is_finite() {
                temperature.max(0.0)
            } else {
                0.0
            },
            top_p: if top_p.is_finite() && top_p > 0.0 {
                top_p.min(1.0)
            } else {
                1.0
            },
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// Whether this sampler always picks the most likely allowed token.
    pub(crate) fn is_greedy(&self) -> bool {
        self.temperature == 0.0
    }

    /// The next token among those `allowed` accepts; `None` if it accepts
    /// none.
    pub(crate) fn pick(
        &mut self,
        logits: &[f32],
        mut allowed: impl FnMut(u32) -> bool,
    ) -> Option<u32> {
        let n = u32::try_from(logits.len()).ok()?;
        let logit = |i: u32| logits.get(i as usize).copied().unwrap_or(f32::NEG_INFINITY);
        let by_logit = |a: &u32, b: &u32| logit(*b).total_cmp(&logit(*a)).then(a.cmp(b));
        let mut order: Vec<u32> = (0..n).collect();
        let window = WINDOW.min(order.len());
        if window > 0 && window < order.len() {
            order.select_nth_unstable_by(window - 1, by_logit);
        }
        order[..window].sort_unstable_by(by_logit);
        let mut candidates: Vec<u32> = Vec::new();
        for &id in &order[..window] {
            if allowed(id) {
                if self.is_greedy() {
                    return Some(id);
                }
                candidates.push(id);
            }
        }
        if candidates.is_empty() {
            let mut rest = order[window..].to_vec();
            rest.sort_unstable_by(by_logit);
            for id in rest {
                if allowed(id) {
                    if self.is_greedy() {
                        return Some(id);
                    }
                    candidates.push(id);
                    if candidates.len() >= WINDOW {
                        break;
                    }
                }
            }
        }
        let first = *candidates.first()?;
        // Softmax over the allowed candidates (sorted, best first), then the
        // smallest prefix whose probability reaches top_p.
        let max = logit(first);
        let weights: Vec<f32> = candidates
            .iter()
            .map(|&id| ((logit(id) - max) / self.temperature).exp())
            .collect();
        let total: f32 = weights.iter().sum();
        if !(total.is_finite() && total > 0.0) {
            return Some(first);
        }
        let mut kept = 0.0;
        let mut cut = weights.len();
        for (i, w) in weights.iter().enumerate() {
            kept += w / total;
            if kept >= self.top_p {
                cut = i + 1;
                break;
            }
        }
        let kept_total: f32 = weights[..cut].iter().sum();
        let mut target = self.rng.f32() * kept_total;
        for (i, w) in weights[..cut].iter().enumerate() {
            if target < *w {
                return candidates.get(i).copied();
            }
            target -= w;
        }
        candidates.get(cut - 1).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_best_allowed_token() {
        let logits: Vec<f32> = (0..1000).map(|i| (i % 97) as f32).collect();
        let mut s = Sampler::new(0.0, 1.0, 1);
        assert_eq!(s.pick(&logits, |_| true), Some(96));
        assert_eq!(s.pick(&logits, |id| id % 97 < 50), Some(49));
        // Found outside the first window.
        assert_eq!(s.pick(&logits, |id| id == 3), Some(3));
        assert_eq!(s.pick(&logits, |_| false), None);
        assert_eq!(s.pick(&[], |_| true), None);
        assert_eq!(s.pick(&[f32::NAN, 1.0], |_| true), Some(0));
    }

    #[test]
    fn sampling_is_seeded_and_respects_top_p() {
        let logits = vec![10.0, 9.0, 0.0, -5.0];
        let draw = |seed| {
            let mut s = Sampler::new(1.0, 0.9, seed);
            (0..50)
                .map(|_| s.pick(&logits, |_| true).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        let tokens = draw(7);
        assert!(tokens.iter().all(|&t| t <= 1), "top-p keeps the two best");
        assert!(tokens.contains(&0) && tokens.contains(&1));
        let mut s = Sampler::new(1.0, 1.0, 3);
        assert!((0..20).all(|_| s.pick(&logits, |id| id == 2) == Some(2)));
    }
}
