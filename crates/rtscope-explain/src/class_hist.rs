//! Per-cause histograms of the traced spikes or gaps: for each CPU and [`Class`], how long each
//! traced gap's share of that class was — how long a CPU's interrupts, softirqs, other threads
//! or hypervisor exits take, not only their sum. Buckets are powers of two of nanoseconds
//! (`[2^k, 2^(k+1))`, stored by their lower bound): a count per bucket is a bound on a length,
//! never a length made up, and 40-odd buckets cover 1 ns to 18 minutes.

use crate::classes::Class;
use crate::model::Attribution;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One CPU's histogram of one class: `(lower bound ns, count)` per non-empty power-of-two
/// bucket, ascending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassHistogram {
    /// The CPU.
    pub cpu: usize,
    /// The class ([`Class::key`]: `thread`, `irq`, `softirq`, `nmi`, `switch`, `throttling`,
    /// `hypervisor`, `firmware`, `unexplained`).
    pub class: String,
    /// `(lower bound ns, count)` per non-empty bucket, ascending: the bucket of a share of
    /// `ns` is `[2^k, 2^(k+1))` with `2^k <= ns`.
    pub buckets: Vec<(u64, u64)>,
}

impl ClassHistogram {
    /// Gaps counted.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|&(_, n)| n).sum()
    }

    /// The bucket holding the `q`-quantile (0–1) of the shares, as `(lower, upper)` ns bounds:
    /// the share is at least `lower` and below `upper`. `None` when empty.
    pub fn quantile_bounds(&self, q: f64) -> Option<(u64, u64)> {
        let total = self.count();
        // The rank of the q-quantile among `total` ordered shares, 1-based.
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total.max(1));
        let mut seen = 0;
        for &(lower, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return Some((lower, lower.saturating_mul(2)));
            }
        }
        None
    }
}

/// The lower bound of the power-of-two bucket of `ns` (> 0).
pub fn bucket_of(ns: u64) -> u64 {
    1u64 << (63 - ns.leading_zeros())
}

/// The per-cause histograms being filled, by CPU and class.
#[derive(Debug, Clone, Default)]
pub struct ClassHistograms {
    // (cpu, class order) -> lower bound -> count
    counts: BTreeMap<(usize, usize), BTreeMap<u64, u64>>,
}

impl ClassHistograms {
    /// Counts one traced gap: each class with time in it, once, at the bucket of that time.
    pub fn add(&mut self, a: &Attribution) {
        let mut per_class = [0u64; Class::ALL.len()];
        for c in &a.charges {
            per_class[Class::of(&c.category).index()] += c.ns;
        }
        for (i, ns) in per_class.into_iter().enumerate().filter(|&(_, ns)| ns > 0) {
            *self
                .counts
                .entry((a.spike.cpu, i))
                .or_default()
                .entry(bucket_of(ns))
                .or_default() += 1;
        }
    }

    /// The histograms, by CPU, then in the classes' printed order.
    pub fn finish(&self) -> Vec<ClassHistogram> {
        self.counts
            .iter()
            .map(|(&(cpu, i), b)| ClassHistogram {
                cpu,
                class: Class::ALL[i].key().to_owned(),
                buckets: b.iter().map(|(&lo, &n)| (lo, n)).collect(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Category, Charge, Spike, Task};

    fn gap(cpu: usize, charges: &[(Category, u64)]) -> Attribution {
        let latency: u64 = charges.iter().map(|c| c.1).sum();
        Attribution {
            spike: Spike {
                cpu,
                tid: 1,
                deadline_ns: 1_000_000,
                wakeup_ns: 1_000_000 + latency,
                smis: None,
            },
            charges: charges
                .iter()
                .map(|(category, ns)| Charge::new(category.clone(), *ns))
                .collect(),
            complete: true,
            lost_events: false,
            siblings: Vec::new(),
            stack: None,
            handler: None,
        }
    }

    #[test]
    fn each_class_of_a_gap_counts_once_at_the_bucket_of_its_summed_time() {
        let spinner = Category::Thread {
            task: Task {
                comm: "spin".into(),
                pid: 7,
                prio: 10,
            },
        };
        let irq = |n: u32| Category::Irq {
            name: format!("irq{n}"),
        };
        let mut h = ClassHistograms::default();
        // 50 µs of thread and two interrupts of 3 and 2 µs: irq once, at 5 µs's bucket.
        h.add(&gap(
            1,
            &[(spinner.clone(), 50_000), (irq(1), 3_000), (irq(2), 2_000)],
        ));
        h.add(&gap(1, &[(spinner.clone(), 500_000)]));
        h.add(&gap(1, &[(spinner, 5_000_000), (Category::Hypervisor, 1)]));
        h.add(&gap(0, &[(irq(3), 4_096)]));
        let out = h.finish();
        let find = |cpu, class: &str| {
            out.iter()
                .find(|x| x.cpu == cpu && x.class == class)
                .unwrap_or_else(|| panic!("no {class} on {cpu}: {out:?}"))
        };
        assert_eq!(
            find(1, "thread").buckets,
            vec![(32_768, 1), (262_144, 1), (4_194_304, 1)],
            "50, 500 and 5000 µs, each in its power of two"
        );
        assert_eq!(find(1, "irq").buckets, vec![(4_096, 1)]);
        assert_eq!(find(1, "hypervisor").buckets, vec![(1, 1)]);
        assert_eq!(
            find(0, "irq").buckets,
            vec![(4_096, 1)],
            "4096 is its own bound"
        );
        assert_eq!(out.len(), 4, "no class without time: {out:?}");
        assert_eq!(out[0].cpu, 0, "by CPU first");
        // The median of the thread's three shares lies in 262,144..524,288 ns.
        assert_eq!(
            find(1, "thread").quantile_bounds(0.5),
            Some((262_144, 524_288))
        );
        assert_eq!(
            find(1, "thread").quantile_bounds(1.0),
            Some((4_194_304, 8_388_608))
        );
        let json = serde_json::to_string(&out).unwrap();
        let back: Vec<ClassHistogram> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, out);
    }

    #[test]
    fn a_class_index_is_its_place_and_its_key_names_it_back() {
        for (i, c) in Class::ALL.into_iter().enumerate() {
            assert_eq!(c.index(), i, "{c:?}");
            assert_eq!(Class::of_key(c.key()), Some(c));
        }
        assert_eq!(Class::of_key("switch back"), None);
    }

    #[test]
    fn the_bucket_of_a_length_is_the_largest_power_of_two_not_above_it() {
        assert_eq!(bucket_of(1), 1);
        assert_eq!(bucket_of(1023), 512);
        assert_eq!(bucket_of(1024), 1024);
        assert_eq!(bucket_of(u64::MAX), 1 << 63);
    }
}
