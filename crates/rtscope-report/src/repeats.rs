//! The spread of repeats: around a group's merged tail-latency line, a band from the lowest
//! to the highest of its runs' own percentiles, so ten repeats that agree read as a thin band
//! and one wild run as a wide one.

use crate::group::Grouping;
use crate::model::RunData;
use crate::plot::{Panel, Series, Shape};
use crate::scale::nines;
use rtscope_core::PERCENTILES;

/// The band of one group: (nines, lowest µs, highest µs) at each percentile that at least two
/// of its runs reach (with one sample or more beyond it).
pub fn tail_spread(runs: &[&RunData]) -> Vec<(f64, f64, f64)> {
    let mut out = Vec::new();
    for &(_, q) in &PERCENTILES {
        let vals: Vec<f64> = runs
            .iter()
            .map(|r| r.merged())
            .filter(|h| h.count() as f64 * (1.0 - q) >= 1.0)
            .filter_map(|h| h.value_at_quantile(q))
            .map(|v| v.0 as f64 / 1000.0)
            .collect();
        if vals.len() >= 2 {
            let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = vals.iter().copied().fold(0.0, f64::max);
            out.push((nines(q), lo, hi));
        }
    }
    out
}

/// Adds a band (drawn under the lines, in the line's colour) for every group of several runs
/// to a tail plot whose lines are the groups, in order.
pub fn add_tail_bands(panel: &mut Panel, runs: &[RunData], grouping: &Grouping) {
    let mut bands = Vec::new();
    for (i, g) in grouping.groups.iter().enumerate() {
        if g.runs.len() < 2 {
            continue;
        }
        let members: Vec<&RunData> = g.runs.iter().map(|&k| &runs[k]).collect();
        let spread = tail_spread(&members);
        if spread.len() < 2 {
            continue;
        }
        let mut outline: Vec<(f64, f64)> = spread.iter().map(|&(x, _, hi)| (x, hi)).collect();
        outline.extend(spread.iter().rev().map(|&(x, lo, _)| (x, lo)));
        bands.push(Series {
            shape: Shape::Band,
            ..Series::new("", i, outline)
        });
    }
    bands.append(&mut panel.series);
    panel.series = bands;
}

/// The quantiles a CDF band is drawn at: every 2 % of the body, then 3 points per decade of
/// the tail down to one sample in `n`.
fn band_quantiles(n: u64) -> Vec<f64> {
    let mut q: Vec<f64> = (1..50).map(|i| f64::from(i) / 50.0).collect();
    let decades = (n.max(10) as f64).log10();
    let mut k = 6.0;
    while k / 3.0 <= decades {
        q.push(1.0 - 10f64.powf(-k / 3.0));
        k += 1.0;
    }
    q
}

/// Adds to the CDF and exceedance plots (whose lines are the groups, in order) a band for
/// every group of several runs: at each fraction, from its fastest to its slowest run's
/// latency.
pub fn add_cdf_bands(cdf: &mut Panel, exc: &mut Panel, runs: &[RunData], grouping: &Grouping) {
    let (mut cb, mut eb) = (Vec::new(), Vec::new());
    for (i, g) in grouping.groups.iter().enumerate() {
        if g.runs.len() < 2 {
            continue;
        }
        let hists: Vec<_> = g.runs.iter().map(|&k| runs[k].merged()).collect();
        let n = hists.iter().map(|h| h.count()).min().unwrap_or(0);
        let mut edge: Vec<(f64, f64, f64)> = Vec::new();
        for q in band_quantiles(n) {
            let xs: Vec<f64> = hists
                .iter()
                .filter_map(|h| h.value_at_quantile(q))
                .map(|v| v.0 as f64 / 1000.0)
                .collect();
            if xs.len() == hists.len() {
                let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = xs.iter().copied().fold(0.0, f64::max);
                edge.push((q, lo, hi));
            }
        }
        if edge.len() < 2 {
            continue;
        }
        let outline = |y: &dyn Fn(f64) -> f64| -> Vec<(f64, f64)> {
            let mut o: Vec<(f64, f64)> = edge.iter().map(|&(q, lo, _)| (lo, y(q))).collect();
            o.extend(edge.iter().rev().map(|&(q, _, hi)| (hi, y(q))));
            o
        };
        let band = |pts| Series {
            shape: Shape::Band,
            ..Series::new("", i, pts)
        };
        cb.push(band(outline(&|q| q)));
        eb.push(band(outline(&|q| 1.0 - q)));
    }
    cb.append(&mut cdf.series);
    cdf.series = cb;
    eb.append(&mut exc.series);
    exc.series = eb;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::run_with;

    #[test]
    fn repeats_get_a_band_from_their_lowest_to_their_highest_percentile() {
        let runs = vec![
            run_with(1, &[("kernel", "rt")]),
            run_with(5, &[("kernel", "rt")]),
            run_with(9, &[("kernel", "std")]),
        ];
        let g = Grouping::new(&runs, None);
        let figs = crate::figures::all(&runs, &g);
        let tail = &figs
            .iter()
            .find(|f| f.name == "tail")
            .unwrap()
            .figure
            .panels[0];
        let bands: Vec<&Series> = tail
            .series
            .iter()
            .filter(|s| s.shape == Shape::Band)
            .collect();
        assert_eq!(bands.len(), 1, "one group repeats");
        let p50 = |r: &RunData| r.merged().value_at_quantile(0.5).unwrap().0 as f64 / 1000.0;
        let spread = tail_spread(&[&runs[0], &runs[1]]);
        assert_eq!(spread[0].1, p50(&runs[0]).min(p50(&runs[1])));
        assert_eq!(spread[0].2, p50(&runs[0]).max(p50(&runs[1])));
        assert!(
            spread[0].1 < spread[0].2,
            "different runs, a band of some width"
        );
        // The band is drawn in its group's colour, under the group's line.
        let line = tail
            .series
            .iter()
            .position(|s| s.name.starts_with("kernel=rt"))
            .unwrap();
        assert_eq!(bands[0].colour, tail.series[line].colour);
        let band = tail
            .series
            .iter()
            .position(|s| s.shape == Shape::Band)
            .unwrap();
        assert!(band < line);
    }
}
