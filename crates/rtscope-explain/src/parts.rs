//! A traced spike's or gap's time in parts that add up: its largest causes, the other causes
//! together (`+ 107 other causes`), and for a gap what no cause covers (its unexplained rest),
//! each with a whole-percent share. The shares are rounded by largest remainder, so the parts
//! of a whole gap print as 100 % exactly, never 86 % hidden behind four causes. One rule for the
//! terminal's worst-gap lines (`render`) and the report's worst-gap table.

use crate::model::{Attribution, Category};

/// How many causes a line names before it sums the others (`+ N other causes`).
pub const SHOWN: usize = 4;

/// What a part is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartKind {
    /// One cause, named.
    Cause(Category),
    /// The causes beyond the named ones, together: how many.
    Others(usize),
    /// A gap's time charged to no cause: its `unexplained` charges and what no charge covers.
    Rest,
}

/// One part of a spike's or gap's time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// What it is.
    pub kind: PartKind,
    /// Its time, ns.
    pub ns: u64,
    /// Its share of the whole, in whole percent ([`percents`]).
    pub percent: u64,
}

/// The time of `a` charged to no cause: its `unexplained` charges and what no charge covers.
pub fn rest_ns(a: &Attribution) -> u64 {
    let charged: u64 = a.charges.iter().map(|c| c.ns).sum();
    let unexplained = a.ns_where(|c| matches!(c, Category::Unexplained));
    unexplained + a.spike.latency_ns().saturating_sub(charged)
}

/// The parts of `a`: its [`SHOWN`] largest charges (all of them when only one more would be
/// left), then the others together, then with `rest` (a gap) its unexplained rest
/// ([`rest_ns`], always shown, and its `unexplained` charges only there). Without `rest` (a
/// spike) the charges are the parts, `unexplained` among them.
pub fn parts(a: &Attribution, rest: bool) -> Vec<Part> {
    let mut causes: Vec<(Category, u64)> = a
        .charges
        .iter()
        .filter(|c| !(rest && matches!(c.category, Category::Unexplained)))
        .map(|c| (c.category.clone(), c.ns))
        .collect();
    // Largest first (the charges are stored so; a stable sort keeps their order on ties).
    causes.sort_by_key(|c| std::cmp::Reverse(c.1));
    let named = if causes.len() <= SHOWN + 1 {
        causes.len()
    } else {
        SHOWN
    };
    let others = &causes[named..];
    let mut kinds: Vec<(PartKind, u64)> = causes[..named]
        .iter()
        .map(|(c, ns)| (PartKind::Cause(c.clone()), *ns))
        .collect();
    if !others.is_empty() {
        let ns = others.iter().map(|c| c.1).sum();
        kinds.push((PartKind::Others(others.len()), ns));
    }
    if rest {
        kinds.push((PartKind::Rest, rest_ns(a)));
    }
    let ns: Vec<u64> = kinds.iter().map(|k| k.1).collect();
    let whole = a.spike.latency_ns().max(ns.iter().sum());
    let pct = percents(&ns, whole);
    kinds
        .into_iter()
        .zip(pct)
        .map(|((kind, ns), percent)| Part { kind, ns, percent })
        .collect()
}

/// Whole-percent shares of `whole` that add up as the parts do: each part's share rounded down,
/// then the points the rounding lost (the rounded share of all the parts together, less their
/// sum) given one each to the parts with the largest remainders, the earlier on a tie. Parts
/// that make up the whole give 100 exactly; all zeros when `whole` is 0.
pub fn percents(parts: &[u64], whole: u64) -> Vec<u64> {
    if whole == 0 {
        return vec![0; parts.len()];
    }
    let w = u128::from(whole);
    let scaled: Vec<u128> = parts.iter().map(|&p| u128::from(p) * 100).collect();
    let mut out: Vec<u64> = scaled.iter().map(|s| (s / w) as u64).collect();
    let sum: u128 = scaled.iter().sum();
    let target = ((sum + w / 2) / w) as u64;
    let lost = target.saturating_sub(out.iter().sum());
    let mut by_rest: Vec<usize> = (0..parts.len()).collect();
    by_rest.sort_by_key(|&i| std::cmp::Reverse(scaled[i] % w));
    for &i in by_rest.iter().take(lost as usize) {
        out[i] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Charge, Spike, Task};

    fn gap(latency: u64, charges: Vec<Charge>) -> Attribution {
        Attribution {
            spike: Spike {
                cpu: 1,
                tid: 9,
                deadline_ns: 1_000_000,
                wakeup_ns: 1_000_000 + latency,
                smis: None,
            },
            charges,
            complete: true,
            lost_events: false,
            siblings: Vec::new(),
            stack: None,
            handler: None,
        }
    }

    fn thread(pid: i32) -> Category {
        Category::Thread {
            task: Task {
                comm: format!("t{pid}"),
                pid,
                prio: 120,
            },
        }
    }

    #[test]
    fn the_shares_of_parts_that_make_the_whole_sum_to_100() {
        assert_eq!(percents(&[1, 1, 1], 3), vec![34, 33, 33]);
        assert_eq!(percents(&[2, 1], 3), vec![67, 33]);
        assert_eq!(percents(&[2_300, 80], 2_380), vec![97, 3]);
        assert_eq!(percents(&[5, 5], 0), vec![0, 0]);
        // Parts short of the whole keep their rounded total: 50 of 100 is 50 %.
        assert_eq!(percents(&[25, 25], 100).iter().sum::<u64>(), 50);
        // 111 equal causes of a 103.05 ms gap: 100 %, not 0 % each and a lost 100.
        let many = vec![103_050_000 / 111; 111];
        let whole: u64 = many.iter().sum();
        assert_eq!(percents(&many, whole).iter().sum::<u64>(), 100);
    }

    #[test]
    fn a_gap_of_many_causes_names_four_sums_the_others_and_ends_with_its_rest() {
        // The gap: 103.05 ms, four large causes, 107 small threads and 2 ms no event
        // covers, 1 ms of it charged as unexplained.
        let mut charges = vec![
            Charge::new(thread(1), 7_880_000),
            Charge::new(thread(2), 4_310_000),
            Charge::new(Category::TimerIrqHandler, 3_030_000),
            Charge::new(thread(3), 1_540_000),
            Charge::new(Category::Unexplained, 1_000_000),
        ];
        let small = 84_290_000 / 107;
        charges.extend((10..117).map(|pid| Charge::new(thread(pid), small)));
        let charged: u64 = charges.iter().map(|c| c.ns).sum();
        let a = gap(charged + 1_000_000, charges);
        let p = parts(&a, true);
        assert_eq!(p.len(), SHOWN + 2);
        assert_eq!(p[SHOWN].kind, PartKind::Others(107));
        assert_eq!(p[SHOWN].ns, small * 107);
        assert_eq!(p[SHOWN + 1].kind, PartKind::Rest);
        assert_eq!(p[SHOWN + 1].ns, 2_000_000);
        assert_eq!(p.iter().map(|x| x.ns).sum::<u64>(), a.spike.latency_ns());
        assert_eq!(p.iter().map(|x| x.percent).sum::<u64>(), 100);
        assert_eq!(p[SHOWN].percent, 82, "{p:?}");
        // A spike keeps its unexplained charge among its causes and has no rest.
        let s = parts(&a, false);
        assert!(s.iter().all(|x| x.kind != PartKind::Rest));
        assert_eq!(s[SHOWN].kind, PartKind::Others(108));
    }

    #[test]
    fn five_causes_are_all_named_rather_than_one_other() {
        let charges = (1..=5).map(|pid| Charge::new(thread(pid), 200)).collect();
        let p = parts(&gap(1_000, charges), true);
        assert_eq!(p.len(), 6);
        assert!(p[..5].iter().all(|x| matches!(x.kind, PartKind::Cause(_))));
        assert_eq!(
            p[5],
            Part {
                kind: PartKind::Rest,
                ns: 0,
                percent: 0
            }
        );
        assert_eq!(p.iter().map(|x| x.percent).sum::<u64>(), 100);
    }

    #[test]
    fn synthetic_gaps_of_every_size_sum_to_100_within_one_point() {
        // Seeded: gaps of 1 to 300 charges of random sizes, some of the gap uncovered.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in 1..300u64 {
            let charges: Vec<Charge> = (0..n)
                .map(|i| Charge::new(thread(i as i32), 1 + next() % 5_000_000))
                .collect();
            let uncovered = next() % 1_000_000;
            let latency = charges.iter().map(|c| c.ns).sum::<u64>() + uncovered;
            let a = gap(latency, charges);
            for rest in [true, false] {
                let p = parts(&a, rest);
                let pct: u64 = p.iter().map(|x| x.percent).sum();
                let ns: u64 = p.iter().map(|x| x.ns).sum();
                if rest {
                    assert_eq!(ns, latency);
                    assert_eq!(pct, 100, "{n} charges: {p:?}");
                } else {
                    let whole = (latency - uncovered) as f64 * 100.0 / latency as f64;
                    assert!((pct as f64 - whole).abs() <= 1.0, "{n}: {pct} vs {whole}");
                }
                assert!(p.len() <= SHOWN + 2);
            }
        }
    }
}
