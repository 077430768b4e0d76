//! The whole-analysis memory ceiling: what the analysis is estimated to
//! hold, and the default limit it is held to.

use crate::facts::Facts;

/// Estimated bytes held, per fact unit, until the graph is built: the
/// facts themselves and what resolution builds from them (points-to
/// nodes, constraints, Java lookups). Measured as peak RSS per unit
/// (docs/PERFORMANCE.md, "Adversarial input"): about 100 on Django and
/// sympy, 45 to 127 on the hostile shapes; the largest, rounded up.
pub(crate) const BYTES_PER_UNIT: u64 = 128;

/// The ceiling used when physical memory cannot be read (4 GiB).
const FALLBACK_CEILING: u64 = 4 << 30;

/// What the analysis held, as estimated, and the ceiling it ran under.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MemoryUse {
    pub estimate: u64,
    pub ceiling: u64,
    /// Fact units of the analysed files (cached ones included).
    pub fact_units: u64,
}

/// Estimated bytes one analysed file holds until the graph is built: its
/// text (kept in the graph) and its facts with their resolution.
pub(crate) fn estimate(text_len: usize, facts: &Facts) -> u64 {
    u64::try_from(text_len)
        .unwrap_or(u64::MAX)
        .saturating_add(facts.units.saturating_mul(BYTES_PER_UNIT))
}

/// The default [`crate::Analyzer::memory_ceiling`]: half of the memory
/// this process may use, which is the machine's physical memory
/// (`MemTotal` in `/proc/meminfo`) or, in a container, its cgroup's
/// `memory.max` if that is lower; 4 GiB where neither can be read.
///
/// Half, because the estimate counts what the analysis keeps, not the
/// transient syntax trees of the files being parsed (about 400 bytes per
/// byte of source for the largest file each worker thread parses: 0.8 GB
/// for a 2 MiB file), nor the caller's own memory.
///
/// ```
/// let ceiling = repo_graph::default_memory_ceiling();
/// assert!(ceiling >= 1 << 20);
/// ```
pub fn default_memory_ceiling() -> u64 {
    let physical = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| mem_total(&info));
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|max| max.trim().parse::<u64>().ok());
    match (physical, cgroup) {
        (Some(p), Some(c)) => p.min(c) / 2,
        (Some(limit), None) | (None, Some(limit)) => limit / 2,
        (None, None) => FALLBACK_CEILING,
    }
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line
        .trim_start_matches("MemTotal:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_total_is_read_in_bytes() {
        let info = "MemTotal:       24684084 kB\nMemFree:          259804 kB\n";
        assert_eq!(mem_total(info), Some(24_684_084 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total("MemTotal: lots\n"), None);
    }
}
