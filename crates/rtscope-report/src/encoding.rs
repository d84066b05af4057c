//! How the shared plots (tail, CDF, exceedance) carry a grouping of two keys: a colour per
//! value of one key (the load case or scenario, the rows of the grids) and a dash pattern per
//! value of the others (the kernel), with a legend that names each colour and each pattern
//! once — 5 load cases × 2 kernels read from 7 legend rows, not 10 unrelated colours.
//!
//! Also here: the exact-maximum markers of the tail plot spread sideways where several would
//! fall on one spot (runs of one length put their × at one x).

use crate::group::{Grouping, Key};
use crate::plot::{Dash, Panel, Series, Shape, NEUTRAL, PALETTE};

/// The colour and dash of every group of a grouping, when two channels carry it.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoding {
    /// The key whose values get colours, as an index into [`Grouping::keys`].
    pub colour_key: usize,
    /// The keys whose values (together) get dash patterns.
    pub dash_keys: Vec<usize>,
    /// The colour key's values as shown (`idle`, `stress-m4`), in first-seen order; value `i`
    /// has palette colour `i`.
    pub colours: Vec<String>,
    /// The dash keys' values as shown (`kernel=rt`), in first-seen order; value `i` has
    /// [`Dash::ALL`]`[i]`.
    pub dashes: Vec<String>,
    /// Per group (in [`Grouping::groups`] order): its palette index and dash.
    pub per_group: Vec<(usize, Dash)>,
}

impl Encoding {
    /// The encoding of `g`: when its groups differ in two keys or more, the row key (load
    /// case, else scenario, else the key of most values) by colour and the others by dash —
    /// as long as the colours stay apart (at most 8 values) and the patterns too (at most 4);
    /// `None` otherwise (one colour per group).
    pub fn of(g: &Grouping) -> Option<Encoding> {
        if g.keys.len() < 2 || g.groups.len() < 3 {
            return None;
        }
        let distinct = |k: usize| {
            let mut v: Vec<&str> = Vec::new();
            for x in &g.groups {
                if !v.contains(&x.values[k].as_str()) {
                    v.push(&x.values[k]);
                }
            }
            v.len()
        };
        let most = (0..g.keys.len()).max_by_key(|&k| (distinct(k), usize::MAX - k))?;
        let first = g.row_key().unwrap_or(most);
        let mut tried = vec![first];
        if most != first {
            tried.push(most);
        }
        tried
            .into_iter()
            .filter_map(|c| Self::with_colour_key(g, c))
            .next()
    }

    fn with_colour_key(g: &Grouping, colour_key: usize) -> Option<Encoding> {
        let dash_keys: Vec<usize> = (0..g.keys.len()).filter(|&k| k != colour_key).collect();
        let show = |k: usize, v: &str| match &g.keys[k] {
            Key::Tag(t) => format!("{t}={v}"),
            _ => v.to_string(),
        };
        let (mut colours, mut dashes) = (Vec::<String>::new(), Vec::<String>::new());
        let mut per_group = Vec::new();
        for x in &g.groups {
            let c = show(colour_key, &x.values[colour_key]);
            let d: Vec<String> = dash_keys.iter().map(|&k| show(k, &x.values[k])).collect();
            let d = d.join(" · ");
            let ci = position_or_push(&mut colours, c);
            let di = position_or_push(&mut dashes, d);
            per_group.push((ci, *Dash::ALL.get(di).unwrap_or(&Dash::Solid)));
        }
        (colours.len() <= PALETTE.len() && dashes.len() <= Dash::ALL.len() && dashes.len() > 1)
            .then_some(Encoding {
                colour_key,
                dash_keys,
                colours,
                dashes,
                per_group,
            })
    }

    /// Recolours the lines of `panel` (a tail, CDF or exceedance plot whose series' colours
    /// are line numbers; line `i` draws group `line_group[i]`): each line takes its group's
    /// colour and dash and leaves the legend, which names each colour and each pattern once
    /// instead ([`Encoding::key`]). Bands take their line's colour, max markers its colour and
    /// dash (drawn × for a solid line, + for a dashed one).
    pub fn apply(&self, panel: &mut Panel, line_group: &[usize]) {
        for s in &mut panel.series {
            let Some(&(c, d)) = line_group
                .get(s.colour)
                .and_then(|&g| self.per_group.get(g))
            else {
                continue;
            };
            s.colour = c;
            match s.shape {
                Shape::Line => {
                    s.dash = d;
                    s.name.clear();
                }
                // × for the first dash's maxima, + for the others (draw.rs).
                Shape::MaxMarker => s.dash = d,
                _ => {}
            }
        }
        let plus = panel
            .series
            .iter()
            .any(|s| s.shape == Shape::MaxMarker && s.dash != Dash::Solid);
        if plus {
            panel.x.label = panel
                .x
                .label
                .replace("× = exact max", "× and + = exact max");
        }
        panel.series.extend(self.key());
    }

    /// The legend of the encoding: one entry per colour (a swatch of its colour), then one per
    /// dash pattern (a dark line in its pattern); entries without points.
    pub fn key(&self) -> Vec<Series> {
        let colours = self
            .colours
            .iter()
            .enumerate()
            .map(|(i, name)| Series::new(name.clone(), i, Vec::new()));
        let dashes = self
            .dashes
            .iter()
            .zip(Dash::ALL)
            .map(|(name, dash)| Series {
                dash,
                ..Series::new(name.clone(), NEUTRAL, Vec::new())
            });
        colours.chain(dashes).collect()
    }
}

fn position_or_push(v: &mut Vec<String>, s: String) -> usize {
    match v.iter().position(|x| *x == s) {
        Some(i) => i,
        None => {
            v.push(s);
            v.len() - 1
        }
    }
}

/// Which group each line of the shared plots draws: one line per group when they merge
/// repeats, else one per run (its group's index).
pub fn line_groups(g: &Grouping, runs: usize, merged: bool) -> Vec<usize> {
    if merged {
        return (0..g.groups.len()).collect();
    }
    (0..runs)
        .map(|i| {
            g.groups
                .iter()
                .position(|x| x.runs.contains(&i))
                .unwrap_or(0)
        })
        .collect()
}

/// Nines between two max markers spread side by side.
pub const MARKER_STEP: f64 = 0.07;

/// Spreads the tail plot's exact-maximum markers ([`Shape::MaxMarker`]) that fall within
/// [`MARKER_STEP`] of each other on the x axis: each cluster is laid side by side around its
/// middle, in the order of its values (the lowest left), so ten runs of one length show ten
/// × instead of one pile.
pub fn dodge_max_markers(series: &mut [Series]) {
    let mut marks: Vec<(usize, f64, f64)> = series
        .iter()
        .enumerate()
        .filter(|(_, s)| s.shape == Shape::MaxMarker && s.points.len() == 1)
        .map(|(i, s)| (i, s.points[0].0, s.points[0].1))
        .collect();
    marks.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.2.total_cmp(&b.2)));
    let mut start = 0;
    while start < marks.len() {
        let mut end = start + 1;
        while end < marks.len() && marks[end].1 - marks[end - 1].1 < MARKER_STEP {
            end += 1;
        }
        let cluster = &marks[start..end];
        if cluster.len() > 1 {
            let mid = cluster.iter().map(|m| m.1).sum::<f64>() / cluster.len() as f64;
            let half = (cluster.len() - 1) as f64 / 2.0;
            for (k, &(i, _, _)) in cluster.iter().enumerate() {
                series[i].points[0].0 = mid + (k as f64 - half) * MARKER_STEP;
            }
        }
        start = end;
    }
}
