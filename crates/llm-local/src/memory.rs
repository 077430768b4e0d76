//! How much memory the key/value cache may take, which caps the context
//! window below what a model declares.
//!
//! The cache grows with the conversation (f16 keys and values of every
//! layer: 28 KB a position for Qwen2.5-1.5B, 11.5 KB for SmolLM2-135M),
//! so a model declaring 32,768 positions could need 0.9 GB for a full
//! one.
//! The window is the declared one, capped so that a full cache takes at
//! most a quarter of the memory available once the weights are loaded
//! (the rest is for the cache's growth by doubling, the prompt's scratch
//! buffers, and the agent itself), and never below 2,048 positions.

/// Share of the available memory a full cache may take.
const CACHE_SHARE: u64 = 4;

/// The window where memory cannot be read, or is very short.
const MIN_POSITIONS: usize = 2048;

/// Where neither `/proc/meminfo` nor the cgroup can be read.
const FALLBACK_AVAILABLE: u64 = 2 << 30;

/// Positions whose cache fits in a quarter of `available` bytes, at
/// `per_position` bytes each (at least [`MIN_POSITIONS`]).
pub(crate) fn kv_positions(per_position: usize, available: u64) -> usize {
    let per_position = u64::try_from(per_position.max(1)).unwrap_or(u64::MAX);
    let fits = available / CACHE_SHARE / per_position;
    usize::try_from(fits)
        .unwrap_or(usize::MAX)
        .max(MIN_POSITIONS)
}

/// Bytes this process may still allocate: `MemAvailable` of
/// `/proc/meminfo`, or what the cgroup's `memory.max` leaves above its
/// `memory.current` if that is lower; 2 GiB where neither can be read.
pub(crate) fn available_bytes() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| meminfo_bytes(&info, "MemAvailable:"));
    let read = |file: &str| {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{file}"))
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    // "max" (no limit) does not parse and leaves the cgroup out.
    let cgroup =
        read("memory.max").map(|max| max.saturating_sub(read("memory.current").unwrap_or(0)));
    match (meminfo, cgroup) {
        (Some(m), Some(c)) => m.min(c),
        (Some(bytes), None) | (None, Some(bytes)) => bytes,
        (None, None) => FALLBACK_AVAILABLE,
    }
}

/// The value of `key` (e.g. `MemAvailable:`) in `/proc/meminfo`, in bytes.
fn meminfo_bytes(meminfo: &str, key: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line
        .trim_start_matches(key)
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
    fn meminfo_is_read_in_bytes() {
        let info = "MemTotal:       24684084 kB\nMemAvailable:    1000 kB\n";
        assert_eq!(meminfo_bytes(info, "MemAvailable:"), Some(1000 * 1024));
        assert_eq!(meminfo_bytes(info, "MemFree:"), None);
        assert_eq!(meminfo_bytes("MemAvailable: lots\n", "MemAvailable:"), None);
    }

    #[test]
    fn the_cache_takes_a_quarter_of_the_available_memory() {
        // Qwen2.5-1.5B: 28 layers x 2 x 256 values x 4 bytes.
        let per_position = 28 * 2 * 256 * 4;
        // 8 GiB available: 2 GiB for the cache, 37,449 positions.
        assert_eq!(kv_positions(per_position, 8 << 30), 37_449);
        assert_eq!(kv_positions(per_position, 1 << 30), 4_681);
        assert_eq!(kv_positions(per_position, 0), MIN_POSITIONS);
        assert_eq!(kv_positions(0, 1 << 20), 262_144);
    }

    #[test]
    fn available_memory_is_positive() {
        assert!(available_bytes() > 0);
    }
}
