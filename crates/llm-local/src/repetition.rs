//! Greedy decoding's loops, caught while they are written.
//!
//! A small model decoding greedily falls into cycles: the same block of
//! lines, token for token, until the output limit (GitTaskBench's
//! Stegano_01 with Qwen2.5-Coder-1.5B: a five-line import block, 19 times,
//! 1,026 tokens and about 200 s of a 2-core machine, for code that could
//! not run). [`LoopGuard`] watches the generated tokens; once their tail
//! is periodic long enough to be a loop and not code, it says where the
//! repeat began. The decoder then goes back there and takes another token
//! than the one that started the repeat ([`LoopGuard::rewind`] bans it at
//! that position), so the reply keeps one copy and goes on.
//!
//! # Example
//! ```text
//! tokens   a b c d e f g h | a b c d e f g h | a b c ...
//! run[8]                     1 2 3 4 5 6 7 8   9 ...
//! ```
//! With period 8 the loop is reported when the run reaches 32 tokens
//! (four copies in all), and the rewind goes back to the second `a`.

/// Longest period looked for, in tokens (a loop of a few functions).
pub(crate) const MAX_PERIOD: usize = 256;

/// Fewest repeated tokens that count as a loop, whatever the period: a
/// short run of a short period is code (`[0, 0, 0, 0]`, `----`).
const MIN_RUN: usize = 32;

/// Repeated tokens past one period that count as a loop for a long period,
/// where two full periods would waste hundreds of tokens: an exact copy of
/// a long block, and 64 tokens more of a third one, is not code.
const LONG_EXTRA: usize = 64;

/// How many times a reply is sent back to the start of its loop; the next
/// loop ends the reply there instead.
pub(crate) const MAX_REWINDS: u32 = 4;

/// Watches one reply's tokens for a loop. See the module documentation.
#[derive(Debug, Clone, Default)]
pub(crate) struct LoopGuard {
    tokens: Vec<u32>,
    /// `runs[p - 1]`: how many of the last tokens equal the token `p`
    /// before them.
    runs: Vec<usize>,
    /// Tokens not to be picked again at a position: `(position, token)`.
    banned: Vec<(usize, u32)>,
    rewinds: u32,
}

impl LoopGuard {
    /// A guard for a new reply.
    pub(crate) fn new() -> Self {
        Self {
            runs: vec![0; MAX_PERIOD],
            ..Self::default()
        }
    }

    /// Tokens of the reply so far.
    pub(crate) fn len(&self) -> usize {
        self.tokens.len()
    }

    /// How many rewinds this reply has had.
    pub(crate) fn rewinds(&self) -> u32 {
        self.rewinds
    }

    /// Whether `token` may not be picked as the token at `position`.
    pub(crate) fn is_banned(&self, position: usize, token: u32) -> bool {
        self.banned.contains(&(position, token))
    }

    /// Adds the next token; when the tail has become a loop, where its
    /// first repeat begins (the shortest period's, so one copy is kept).
    pub(crate) fn push(&mut self, token: u32) -> Option<usize> {
        self.tokens.push(token);
        let n = self.tokens.len();
        let mut found = None;
        for (i, run) in self.runs.iter_mut().enumerate() {
            let period = i + 1;
            *run = match n.checked_sub(period + 1).map(|j| self.tokens[j]) {
                Some(earlier) if earlier == token => *run + 1,
                _ => 0,
            };
            if found.is_none() && is_loop(period, *run) {
                found = Some(n - *run);
            }
        }
        found
    }

    /// Goes back to `position` (tokens from it on are dropped) and bans the
    /// token that was there, so the next pick there is another. Bans made
    /// at later positions belonged to the dropped tokens and are lifted.
    pub(crate) fn rewind(&mut self, position: usize) {
        let Some(&token) = self.tokens.get(position) else {
            return;
        };
        self.tokens.truncate(position);
        self.banned.retain(|&(at, _)| at <= position);
        self.banned.push((position, token));
        self.rewinds += 1;
        self.recount();
    }

    /// The runs of the kept tokens, from scratch (after a rewind).
    fn recount(&mut self) {
        let tokens = &self.tokens;
        for (i, run) in self.runs.iter_mut().enumerate() {
            let period = i + 1;
            *run = tokens
                .iter()
                .rev()
                .zip(tokens.iter().rev().skip(period))
                .take_while(|(a, b)| a == b)
                .count();
        }
    }
}

/// Whether `run` tokens equal to the ones `period` before them are a loop.
fn is_loop(period: usize, run: usize) -> bool {
    run >= MIN_RUN && run >= (2 * period).min(period + LONG_EXTRA)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `tokens`; the position of the first loop reported.
    fn first_loop(guard: &mut LoopGuard, tokens: &[u32]) -> Option<(usize, usize)> {
        tokens
            .iter()
            .enumerate()
            .find_map(|(i, &t)| guard.push(t).map(|start| (i + 1, start)))
    }

    #[test]
    fn a_block_repeated_is_reported_at_its_first_repeat() {
        // Stegano_01's shape: a prelude, then a block of 50 tokens again and again.
        let prelude: Vec<u32> = (1000..1030).collect();
        let block: Vec<u32> = (0..50).collect();
        let mut tokens = prelude.clone();
        for _ in 0..20 {
            tokens.extend(&block);
        }
        let mut guard = LoopGuard::new();
        let (seen, start) = first_loop(&mut guard, &tokens).expect("a loop");
        assert_eq!(start, prelude.len() + block.len(), "one copy is kept");
        // Reported after two full periods past the first copy, not at the limit.
        assert_eq!(seen, prelude.len() + 3 * block.len());
    }

    #[test]
    fn a_long_block_is_reported_before_a_third_copy() {
        let block: Vec<u32> = (0..200).collect();
        let tokens: Vec<u32> = block.iter().chain(&block).chain(&block).copied().collect();
        let mut guard = LoopGuard::new();
        let (seen, start) = first_loop(&mut guard, &tokens).expect("a loop");
        assert_eq!(start, 200);
        assert_eq!(seen, 200 + 200 + LONG_EXTRA);
    }

    #[test]
    fn code_that_repeats_a_little_is_not_a_loop() {
        let mut guard = LoopGuard::new();
        // `[0, 0, 0, ...]`: period 2, 30 tokens of run.
        let zeros: Vec<u32> = std::iter::repeat_n([7, 8], 16).flatten().collect();
        assert_eq!(first_loop(&mut guard, &zeros), None);
        // A path written twice (40 tokens each), with other code around.
        let path: Vec<u32> = (500..540).collect();
        let mut code: Vec<u32> = (1..20).collect();
        code.extend(&path);
        code.extend(60..70);
        code.extend(&path);
        code.extend(80..90);
        assert_eq!(first_loop(&mut LoopGuard::new(), &code), None);
        // Distinct lines that share most tokens are not one block repeated.
        let mut lines = Vec::new();
        for i in 0..40u32 {
            lines.extend([1, 2, 3, 4, 100 + i, 5]);
        }
        assert_eq!(first_loop(&mut LoopGuard::new(), &lines), None);
    }

    #[test]
    fn a_rewind_bans_the_repeat_and_lifts_later_bans() {
        let block: Vec<u32> = (0..20).collect();
        let tokens: Vec<u32> = std::iter::repeat_n(block.clone(), 5).flatten().collect();
        let mut guard = LoopGuard::new();
        let (_, start) = first_loop(&mut guard, &tokens).expect("a loop");
        assert_eq!(start, 20);
        guard.rewind(start);
        assert_eq!((guard.len(), guard.rewinds()), (20, 1));
        assert!(guard.is_banned(20, 0));
        assert!(!guard.is_banned(21, 0) && !guard.is_banned(20, 1));
        // Going on from the kept copy with other tokens finds nothing.
        assert_eq!(first_loop(&mut guard, &[900, 901, 902]), None);
        // A rewind to an earlier position lifts the ban after it.
        guard.rewind(10);
        assert!(guard.is_banned(10, 10));
        assert!(!guard.is_banned(20, 0));
        // The recounted runs are those of the kept tokens: a repeat of the
        // kept ten tokens is counted from where they end.
        let again: Vec<u32> = std::iter::repeat_n((0..10).collect::<Vec<u32>>(), 4)
            .flatten()
            .collect();
        let (_, start) = first_loop(&mut guard, &again).expect("a loop");
        assert_eq!(start, 10);
    }
}
