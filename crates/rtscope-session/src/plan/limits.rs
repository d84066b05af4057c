//! The plan's limits checked against a run's results: per thread (named `cpu N` when the plan
//! measures one thread per CPU, else `thread I (cpu N)`) and over all threads.

use super::RunPlan;
use rtscope_common::limits::{self, Check};
use rtscope_engine::RunResult;

impl RunPlan {
    /// Every limit of the plan checked on every thread of `r` and on all of them together
    /// (empty without limits).
    pub fn check_limits(&self, r: &RunResult) -> Vec<Check> {
        let mut checks = Vec::new();
        if self.limits.is_empty() {
            return checks;
        }
        let named_by_cpu = self.per_cpu && r.threads.len() == self.config.threads.len();
        for t in &r.threads {
            let scope = t.cpu.map_or(format!("thread {}", t.index), |cpu| {
                if named_by_cpu {
                    format!("cpu {cpu}")
                } else {
                    format!("thread {} (cpu {cpu})", t.index)
                }
            });
            checks.extend(limits::check(&self.limits, &scope, &t.stats, &t.histogram));
        }
        let (s, h) = (r.total_stats(), r.total_histogram());
        checks.extend(limits::check(&self.limits, "all", &s, &h));
        checks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::{Histogram, Nanos, Stats};
    use rtscope_engine::{Policy, RunConfig, ThreadResult, ThreadSpec};
    use std::time::SystemTime;

    /// A finished thread on `cpu` whose wake-ups took `lat_us` µs.
    fn thread(index: usize, cpu: Option<usize>, lat_us: &[u64]) -> ThreadResult {
        let mut histogram = Histogram::new();
        let lat: Vec<Nanos> = lat_us.iter().map(|&l| Nanos::from_us(l)).collect();
        lat.iter().for_each(|&l| histogram.record(l));
        let stats = Stats {
            count: lat.len() as u64,
            min: lat.iter().copied().min().unwrap_or_default(),
            max: lat.iter().copied().max().unwrap_or_default(),
            sum_ns: lat.iter().map(|l| u128::from(l.0)).sum(),
            ..Stats::default()
        };
        ThreadResult {
            index,
            tid: 100 + index as i32,
            cpu,
            interval: Nanos::from_us(1000),
            policy: Policy::Fifo,
            priority: 95,
            stats,
            histogram,
            linear: None,
            events: Vec::new(),
            events_dropped: 0,
            samples_dropped: 0,
            last: Nanos::ZERO,
        }
    }

    fn result(threads: Vec<ThreadResult>) -> RunResult {
        RunResult {
            threads,
            started: SystemTime::UNIX_EPOCH,
            ended: SystemTime::UNIX_EPOCH,
            clock_start: Nanos::ZERO,
            stopped_early: false,
            break_fired: None,
        }
    }

    fn plan(limits: &[&str], threads: usize, per_cpu: bool) -> RunPlan {
        let spec = ThreadSpec {
            affinity: None,
            policy: Policy::Fifo,
            priority: 95,
            interval: Nanos::from_us(1000),
        };
        let mut p = RunPlan::from_config(RunConfig::new(vec![spec; threads]), None);
        p.limits = limits.iter().map(|l| limits::parse(l).unwrap()).collect();
        p.per_cpu = per_cpu;
        p
    }

    fn summary(checks: &[Check]) -> Vec<(String, String, u64, bool)> {
        checks
            .iter()
            .map(|c| (c.scope.clone(), c.stat.clone(), c.value, c.passed))
            .collect()
    }

    #[test]
    fn limits_are_checked_per_cpu_and_over_all_threads_without_a_run() {
        let r = result(vec![
            thread(0, Some(0), &[5, 7, 9]),
            thread(1, Some(1), &[6, 8, 120]),
        ]);
        let checks = plan(&["max=100us"], 2, true).check_limits(&r);
        let want = [
            ("cpu 0", 9_000, true),
            ("cpu 1", 120_000, false),
            ("all", 120_000, false),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|&(s, v, ok)| (s.to_string(), "max".to_string(), v, ok))
            .collect();
        assert_eq!(summary(&checks), want);
    }

    #[test]
    fn threads_are_named_by_index_when_the_plan_is_not_one_per_cpu() {
        let r = result(vec![thread(0, Some(3), &[5]), thread(1, None, &[6])]);
        let scopes: Vec<String> = plan(&["max=1ms", "missed=0"], 2, false)
            .check_limits(&r)
            .into_iter()
            .map(|c| c.scope)
            .collect();
        let want = [
            "thread 0 (cpu 3)",
            "thread 0 (cpu 3)",
            "thread 1",
            "thread 1",
            "all",
            "all",
        ];
        assert_eq!(scopes, want);
        // A plan measuring one thread per CPU whose run lost a thread names them by index too.
        let r = result(vec![thread(0, Some(3), &[5])]);
        let c = plan(&["max=1ms"], 2, true).check_limits(&r);
        assert_eq!(c[0].scope, "thread 0 (cpu 3)");
        assert!(plan(&[], 1, true).check_limits(&r).is_empty());
    }
}
