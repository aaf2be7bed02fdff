//! What Linux's /proc tells about the machine and the processes under load: the gateway's
//! peak resident memory, and how the CPU was shared between gateway, PostgreSQL and the load
//! generator (this process).

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde::Serialize;

use crate::Result;

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpus: usize,
    pub memory_mb: u64,
    pub cpu_model: String,
}

impl Machine {
    pub fn describe() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_kb = field(&meminfo, "MemTotal:").and_then(first_number).unwrap_or(0);
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = field(&cpuinfo, "model name").map_or_else(|| "unknown".to_owned(), |v| v.to_owned());
        Self { cpus, memory_mb: memory_kb / 1024, cpu_model }
    }
}

/// The value after `name` and any `:` on the first line starting with `name`.
fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let line = text.lines().find(|line| line.starts_with(name))?;
    Some(line[name.len()..].trim_start_matches([' ', '\t', ':']).trim())
}

fn first_number(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// Peak resident memory (VmHWM) of `pid`, in MB.
pub fn peak_rss_mb(pid: u32) -> Result<f64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb = field(&status, "VmHWM:").and_then(first_number).ok_or("no VmHWM in /proc/<pid>/status")?;
    Ok(kb as f64 / 1024.0)
}

/// Resident memory (VmRSS) of `pid` now, in MB.
pub fn rss_mb(pid: u32) -> Result<f64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb = field(&status, "VmRSS:").and_then(first_number).ok_or("no VmRSS in /proc/<pid>/status")?;
    Ok(kb as f64 / 1024.0)
}

/// CPU time used so far, in clock ticks, by the gateway, by the PostgreSQL server (postmaster
/// and its children) and by this process.
pub struct CpuTimes {
    at: Instant,
    /// Busy time of every CPU of the machine, whoever used it.
    machine: u64,
    gateway: u64,
    postgres: HashMap<u32, u64>,
    own: u64,
}

/// CPU use between two [`CpuTimes`], in percent of one core (100 × cores = all busy).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CpuShare {
    pub gateway_pct: f64,
    pub postgres_pct: f64,
    pub load_generator_pct: f64,
    /// Everything else that ran on the machine meanwhile: a large share skews the run.
    pub other_pct: f64,
}

pub struct CpuMeter {
    postmaster: u32,
    ticks_per_second: f64,
}

impl CpuMeter {
    pub fn new(postgres_data: &Path) -> Result<Self> {
        let pid_file = fs::read_to_string(postgres_data.join("postmaster.pid"))?;
        let postmaster =
            pid_file.lines().next().and_then(|l| l.trim().parse().ok()).ok_or("no pid in postmaster.pid")?;
        let ticks_per_second = Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse().ok())
            .unwrap_or(100.0);
        Ok(Self { postmaster, ticks_per_second })
    }

    pub fn read(&self, gateway: u32) -> CpuTimes {
        let mut postgres = HashMap::new();
        if let Ok(entries) = fs::read_dir("/proc") {
            for entry in entries.flatten() {
                let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else {
                    continue;
                };
                if let Some(stat) = read_stat(pid)
                    && (pid == self.postmaster || stat.parent == self.postmaster)
                {
                    postgres.insert(pid, stat.ticks);
                }
            }
        }
        CpuTimes {
            at: Instant::now(),
            machine: machine_busy_ticks().unwrap_or(0),
            gateway: read_stat(gateway).map_or(0, |s| s.ticks),
            postgres,
            own: read_stat(std::process::id()).map_or(0, |s| s.ticks),
        }
    }

    /// A backend that ended in between is missed; the bench's connections live through a run.
    pub fn share(&self, before: &CpuTimes, after: &CpuTimes) -> CpuShare {
        let seconds = (after.at - before.at).as_secs_f64().max(1e-9);
        let pct = |ticks: u64| ticks as f64 / self.ticks_per_second / seconds * 100.0;
        let postgres: u64 = after
            .postgres
            .iter()
            .map(|(pid, ticks)| ticks.saturating_sub(before.postgres.get(pid).copied().unwrap_or(0)))
            .sum();
        let gateway = after.gateway.saturating_sub(before.gateway);
        let own = after.own.saturating_sub(before.own);
        let machine = after.machine.saturating_sub(before.machine);
        CpuShare {
            gateway_pct: pct(gateway),
            postgres_pct: pct(postgres),
            load_generator_pct: pct(own),
            other_pct: pct(machine.saturating_sub(gateway + postgres + own)),
        }
    }
}

/// The first line of /proc/stat: `cpu user nice system idle iowait irq softirq steal ...`;
/// busy is all but idle and iowait.
fn machine_busy_ticks() -> Option<u64> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> =
        stat.lines().next()?.split_whitespace().skip(1).take(8).map(|f| f.parse().ok()).collect::<Option<_>>()?;
    let [user, nice, system, _idle, _iowait, irq, softirq, steal] = fields[..] else {
        return None;
    };
    Some(user + nice + system + irq + softirq + steal)
}

struct Stat {
    parent: u32,
    /// User plus system time.
    ticks: u64,
}

fn read_stat(pid: u32) -> Option<Stat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so fields are counted
/// from the last `)`. utime and stime are fields 14 and 15.
fn parse_stat(stat: &str) -> Option<Stat> {
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let number = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some(Stat { parent: u32::try_from(number(1)?).ok()?, ticks: number(11)? + number(12)? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        let stat = "4242 (post gres) (x)) S 17 4242 4242 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 1 0";
        let parsed = parse_stat(stat).expect("parses");
        assert_eq!(parsed.parent, 17);
        assert_eq!(parsed.ticks, 300);
    }

    #[test]
    fn status_fields_are_found_by_name() {
        let status = "Name:\tgateway\nVmPeak:\t  9000 kB\nVmHWM:\t   20480 kB\n";
        assert_eq!(field(status, "VmHWM:").and_then(first_number), Some(20480));
        assert_eq!(field("model name\t: Some CPU @ 2.0GHz\n", "model name"), Some("Some CPU @ 2.0GHz"));
    }

    #[test]
    fn the_machine_has_been_busy() {
        assert!(machine_busy_ticks().expect("reads /proc/stat") > 0);
    }

    #[test]
    fn this_process_has_a_peak_rss() {
        assert!(peak_rss_mb(std::process::id()).expect("reads /proc") > 0.0);
        assert!(rss_mb(std::process::id()).expect("reads /proc") > 0.0);
    }
}
