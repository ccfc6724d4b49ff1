//! The process metrics every Prometheus client exports (`process_cpu_seconds_total`,
//! `process_resident_memory_bytes`, ...), read from `/proc/self` at scrape time.
//! prometheus-client has no process collector (the `prometheus` crate's needs procfs
//! and its dependencies), and these are six numbers from three files: read here.
//! On systems without `/proc` they are left out.

/// One reading of the process's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct ProcessStats {
    /// User and system CPU time, seconds.
    pub cpu_seconds: f64,
    /// Resident set size, bytes.
    pub resident_memory_bytes: u64,
    /// Virtual memory size, bytes.
    pub virtual_memory_bytes: u64,
    /// Start time since the Unix epoch, seconds.
    pub start_time_seconds: f64,
    /// Open file descriptors.
    pub open_fds: u64,
    /// The soft limit on open file descriptors.
    pub max_fds: u64,
}

impl ProcessStats {
    /// The figures of this process now; None without `/proc` (not Linux).
    pub(super) fn read() -> Option<ProcessStats> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let boot_time = boot_time(&std::fs::read_to_string("/proc/stat").ok()?)?;
        // SAFETY: sysconf has no preconditions; it answers -1 for an unknown name.
        let (ticks, page) = unsafe { (libc::sysconf(libc::_SC_CLK_TCK), libc::sysconf(libc::_SC_PAGESIZE)) };
        let (ticks, page) = (u64::try_from(ticks).ok()?, u64::try_from(page).ok()?);
        let mut stats = parse_stat(&stat, ticks, page, boot_time)?;
        stats.open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
        // SAFETY: getrlimit writes the limit into the struct it is given.
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            stats.max_fds = limit.rlim_cur;
        }
        Some(stats)
    }
}

/// `btime` of `/proc/stat`: the boot time, seconds since the epoch.
fn boot_time(proc_stat: &str) -> Option<u64> {
    proc_stat.lines().find_map(|line| line.strip_prefix("btime ")?.trim().parse().ok())
}

/// The fields of `/proc/self/stat` (proc(5)) after the command name, which may hold
/// spaces and parentheses and so ends at the last `)`: utime and stime (fields 14, 15,
/// in ticks), starttime (22, ticks since boot), vsize (23, bytes), rss (24, pages).
fn parse_stat(stat: &str, ticks: u64, page: u64, boot_time: u64) -> Option<ProcessStats> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first after the name.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |n: usize| -> Option<u64> { fields.get(n - 3)?.parse().ok() };
    let ticks = ticks.max(1) as f64;
    Some(ProcessStats {
        cpu_seconds: (field(14)? + field(15)?) as f64 / ticks,
        start_time_seconds: boot_time as f64 + field(22)? as f64 / ticks,
        virtual_memory_bytes: field(23)?,
        resident_memory_bytes: field(24)? * page,
        ..ProcessStats::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_name_with_spaces_and_parentheses() {
        let stat = "4242 (pod (status) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 9 0 \
                    12000 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0";
        let stats = parse_stat(stat, 100, 4096, 1_700_000_000).expect("parses");
        assert_eq!(stats.cpu_seconds, 3.0);
        assert_eq!(stats.start_time_seconds, 1_700_000_120.0);
        assert_eq!(stats.virtual_memory_bytes, 104_857_600);
        assert_eq!(stats.resident_memory_bytes, 2560 * 4096);
        assert_eq!(boot_time("cpu 1 2 3\nbtime 1700000000\nprocesses 9\n"), Some(1_700_000_000));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_memory_and_file_descriptors() {
        let stats = ProcessStats::read().expect("/proc is there");
        assert!(stats.resident_memory_bytes > 0 && stats.virtual_memory_bytes >= stats.resident_memory_bytes);
        assert!(stats.open_fds > 0 && stats.max_fds >= stats.open_fds, "{stats:?}");
        assert!(stats.start_time_seconds > 1_600_000_000.0, "{stats:?}");
    }
}
