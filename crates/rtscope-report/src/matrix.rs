//! The studies' table: the maximum latency per load case (rows; scenario when all runs share
//! their load case) and group (columns, e.g. one per kernel), repeats merged.

use crate::group::Grouping;
use crate::model::RunData;
use crate::table::us1;

/// A cell: the largest max of its runs (ns) and the number of runs.
pub type Cell = Option<(u64, usize)>;

/// Maximum latency per load case × group. Latencies in ns.
#[derive(Debug, Clone, PartialEq)]
pub struct MaxMatrix {
    /// What the rows are: `case`, or `scenario` when all runs share their load case.
    pub rows_by: String,
    /// The column headers: the group's values in the keys other than the load case
    /// (`kernel=rt`).
    pub columns: Vec<String>,
    /// Load case, then one cell per column: (largest max of its runs, number of runs).
    pub rows: Vec<(String, Vec<Cell>)>,
}

impl MaxMatrix {
    /// The table, when the runs differ in their load case and in at least one other key.
    pub fn of(runs: &[RunData], g: &Grouping) -> Option<MaxMatrix> {
        let case = g.row_key()?;
        let row_key = g.keys[case].clone();
        let column_of = |r: &RunData| -> String {
            g.keys
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != case)
                .map(|(_, k)| k.show(r))
                .collect::<Vec<_>>()
                .join(" · ")
        };
        let mut columns: Vec<String> = Vec::new();
        let mut rows: Vec<(String, Vec<Cell>)> = Vec::new();
        for r in runs {
            let col = column_of(r);
            let c = match columns.iter().position(|x| *x == col) {
                Some(c) => c,
                None => {
                    columns.push(col);
                    columns.len() - 1
                }
            };
            let name = row_key.value(r);
            let row = match rows.iter().position(|x| x.0 == name) {
                Some(i) => i,
                None => {
                    rows.push((name, Vec::new()));
                    rows.len() - 1
                }
            };
            let cells = &mut rows[row].1;
            cells.resize(columns.len().max(cells.len()), None);
            let max = r.detail.summary.max_ns.unwrap_or(0);
            cells[c] = Some(match cells[c] {
                Some((m, n)) => (m.max(max), n + 1),
                None => (max, 1),
            });
        }
        for (_, cells) in &mut rows {
            cells.resize(columns.len(), None);
        }
        Some(MaxMatrix {
            rows_by: row_key.name().to_string(),
            columns,
            rows,
        })
    }

    /// A cell as text: `12.3`, with the number of runs merged when more than one (`12.3 (3)`).
    pub fn cell(c: Cell) -> String {
        match c {
            None => "-".into(),
            Some((m, 1)) => us1(Some(m)),
            Some((m, n)) => format!("{} ({n})", us1(Some(m))),
        }
    }

    /// The table in Markdown (µs).
    pub fn markdown(&self) -> String {
        let mut out = format!("| {} | {} |\n", self.rows_by, self.columns.join(" | "));
        out.push_str(&format!("|---|{}\n", "---|".repeat(self.columns.len())));
        for (case, cells) in &self.rows {
            let cells: Vec<String> = cells.iter().map(|c| Self::cell(*c)).collect();
            out.push_str(&format!("| {} | {} |\n", case, cells.join(" | ")));
        }
        out.push_str(
            "\nThe largest latency of the runs of each load case and group; (n): runs merged.\n",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::run_with;

    #[test]
    fn one_column_per_kernel_one_row_per_case() {
        let runs = vec![
            run_with(11, &[("kernel", "std"), ("case", "idle")]),
            run_with(12, &[("kernel", "rt"), ("case", "idle")]),
            run_with(13, &[("kernel", "std"), ("case", "cpu")]),
            run_with(14, &[("kernel", "rt"), ("case", "cpu")]),
            run_with(15, &[("kernel", "rt"), ("case", "cpu")]),
        ];
        let g = Grouping::new(&runs, None);
        let m = MaxMatrix::of(&runs, &g).unwrap();
        assert_eq!(m.columns, ["kernel=std", "kernel=rt"]);
        assert_eq!(m.rows.len(), 2);
        assert_eq!(m.rows[0].0, "idle");
        let max = |i: usize| runs[i].detail.summary.max_ns.unwrap();
        assert_eq!(m.rows[1].1[1], Some((max(3).max(max(4)), 2)));
        assert_eq!(m.rows[0].1[0], Some((max(0), 1)));
        assert!(m.markdown().contains("| case | kernel=std | kernel=rt |"));
        let one = Grouping::new(&runs[..2], None);
        assert!(MaxMatrix::of(&runs[..2], &one).is_none());
    }
}
