//! Per-CPU counter tables: `/proc/interrupts` and `/proc/softirqs`.
//!
//! Both files are a header of `CPU<N>` columns (online CPUs only) followed by one line per
//! source: `label: count count ... [description]`. A sample parses the file into a table whose
//! rows and strings are reused from two samples ago (double buffering), so a steady system
//! parses without allocating; rates come from the previous table.

use crate::text::{offset_in, push_collapsed, read_into};
use crate::{unit, Sample, Status};
use std::path::{Path, PathBuf};

/// One source line: its stable name, counts per column and cached metric names.
#[derive(Default)]
struct Row {
    /// `39 dwc_otg` for numbered IRQs, the label (`LOC`, `TIMER`) otherwise.
    name: String,
    counts: Vec<u64>,
    /// The metric name of each count, built when `name` or the columns change.
    metrics: Vec<String>,
}

/// One parsed file.
#[derive(Default)]
struct Table {
    /// CPU number of each count column, from the header.
    cpus: Vec<u32>,
    rows: Vec<Row>,
}

/// Which of the two files, deciding the metric prefix and how names are formed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// `/proc/interrupts`: `irq_rate.<source>.cpu<N>`.
    Interrupts,
    /// `/proc/softirqs`: `softirq_rate.<NAME>.cpu<N>`.
    Softirqs,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::Interrupts => "irq_rate",
            Kind::Softirqs => "softirq_rate",
        }
    }

    fn file(self) -> &'static str {
        match self {
            Kind::Interrupts => "proc/interrupts",
            Kind::Softirqs => "proc/softirqs",
        }
    }
}

/// A counter-table source with its previous and scratch tables.
pub(crate) struct Counters {
    kind: Kind,
    path: PathBuf,
    prev: Table,
    cur: Table,
    have_prev: bool,
    scratch: String,
    pub(crate) status: Status,
}

impl Counters {
    pub(crate) fn discover(root: &Path, kind: Kind, buf: &mut String) -> Self {
        let path = root.join(kind.file());
        let mut c = Counters {
            kind,
            path,
            prev: Table::default(),
            cur: Table::default(),
            have_prev: false,
            scratch: String::new(),
            status: Status::unavailable(String::new()),
        };
        c.status = match read_into(&c.path, buf) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Status::unavailable(format!("no /{}", kind.file()))
            }
            Err(e) => Status::unavailable(format!("cannot read /{}: {e}", kind.file())),
            Ok(()) => match parse(buf, kind, &mut c.cur, &mut c.scratch) {
                Some(n) => Status::available(format!("{n} sources")),
                None => Status::unavailable(format!("/{} has no CPU header", kind.file())),
            },
        };
        c
    }

    /// Parses the file and pushes the rate of every (source, CPU) present in both this and
    /// the previous sample, over `dt` seconds. Without `dt` only the table is remembered.
    pub(crate) fn sample(&mut self, buf: &mut String, dt: Option<f64>, out: &mut Sample) {
        let parsed = read_into(&self.path, buf)
            .ok()
            .and_then(|()| parse(buf, self.kind, &mut self.cur, &mut self.scratch));
        let file = self.kind.file();
        self.status.update(parsed.is_some(), || {
            format!("/{file} unreadable or has no CPU header")
        });
        if parsed.is_none() {
            self.have_prev = false;
            return;
        }
        if let (Some(dt), true) = (dt, self.have_prev) {
            push_rates(&self.prev, &self.cur, dt, out);
        }
        std::mem::swap(&mut self.prev, &mut self.cur);
        self.have_prev = true;
    }
}

/// Pushes `(cur - prev) / dt` for every row and column present in both tables. Rows are
/// matched by name (usually at the same index); a counter that went backwards is skipped.
fn push_rates(prev: &Table, cur: &Table, dt: f64, out: &mut Sample) {
    if prev.cpus != cur.cpus {
        return; // CPU hotplug between samples: columns do not line up.
    }
    for (i, row) in cur.rows.iter().enumerate() {
        let old = match prev.rows.get(i) {
            Some(r) if r.name == row.name => r,
            _ => match prev.rows.iter().find(|r| r.name == row.name) {
                Some(r) => r,
                None => continue,
            },
        };
        for ((now, then), metric) in row.counts.iter().zip(&old.counts).zip(&row.metrics) {
            if let Some(d) = now.checked_sub(*then) {
                out.push(metric.clone(), d as f64 / dt, unit::PER_SECOND);
            }
        }
    }
}

/// Parses `text` into `table`, reusing its rows. Returns the number of rows, or `None` when
/// the header is missing. Lines that do not parse are skipped.
fn parse(text: &str, kind: Kind, table: &mut Table, scratch: &mut String) -> Option<usize> {
    let mut lines = text.lines();
    let header = lines.next()?;
    let mut cpus_changed = false;
    let mut ncpus = 0;
    for (j, tok) in header.split_ascii_whitespace().enumerate() {
        let id: u32 = tok.strip_prefix("CPU")?.parse().ok()?;
        if table.cpus.get(j) != Some(&id) {
            table.cpus.truncate(j);
            table.cpus.push(id);
            cpus_changed = true;
        }
        ncpus = j + 1;
    }
    if ncpus == 0 {
        return None;
    }
    cpus_changed |= table.cpus.len() != ncpus;
    table.cpus.truncate(ncpus);
    let mut n = 0;
    for line in lines {
        if n == table.rows.len() {
            table.rows.push(Row::default());
        }
        let row = &mut table.rows[n];
        if parse_line(line, kind, ncpus, row, scratch) {
            if cpus_changed || row.metrics.len() != row.counts.len() {
                build_metrics(row, kind, &table.cpus);
            }
            n += 1;
        }
    }
    table.rows.truncate(n);
    Some(n)
}

/// Parses one source line into `row`, reusing its strings. Returns false (row untouched in
/// meaning) when the line has no `label:` or no count.
fn parse_line(line: &str, kind: Kind, ncpus: usize, row: &mut Row, scratch: &mut String) -> bool {
    let Some((label, rest)) = line.split_once(':') else {
        return false;
    };
    let label = label.trim();
    if label.is_empty() || label.contains(char::is_whitespace) {
        return false;
    }
    row.counts.clear();
    let mut desc_at = rest.len();
    for tok in rest.split_ascii_whitespace() {
        match tok.parse::<u64>() {
            Ok(v) if row.counts.len() < ncpus => row.counts.push(v),
            _ => {
                desc_at = offset_in(rest, tok);
                break;
            }
        }
    }
    if row.counts.is_empty() {
        return false;
    }
    let desc = &rest[desc_at..];
    scratch.clear();
    scratch.push_str(label);
    if kind == Kind::Interrupts && label.bytes().all(|b| b.is_ascii_digit()) {
        let actions = actions(desc);
        if !actions.is_empty() {
            scratch.push(' ');
            push_collapsed(scratch, actions);
        }
    }
    if row.name != *scratch {
        row.name.clone_from(scratch);
        row.metrics.clear(); // rebuilt by the caller
    }
    true
}

/// The handler (action) names of a numbered IRQ's description: what follows the trigger
/// column (`Level`, `Edge`, or x86's `<hwirq>-edge` / `<hwirq>-fasteoi`), else the whole
/// description. The chip column before it may itself contain spaces (`BRCM STB PCIe MSI`).
fn actions(desc: &str) -> &str {
    let trigger = desc.split_ascii_whitespace().find(|t| {
        *t == "Level"
            || *t == "Edge"
            || t.split_once('-').is_some_and(|(hw, handler)| {
                !hw.is_empty() && hw.bytes().all(|b| b.is_ascii_digit()) && !handler.is_empty()
            })
    });
    match trigger {
        Some(t) => desc[offset_in(desc, t) + t.len()..].trim(),
        None => desc.trim(),
    }
}

/// Builds `<prefix>.<name>.cpu<N>` for each count; a single count on a multi-CPU table
/// (`ERR:`, `MIS:`) is a system-wide total, `<prefix>.<name>.all`.
fn build_metrics(row: &mut Row, kind: Kind, cpus: &[u32]) {
    row.metrics.clear();
    let prefix = kind.prefix();
    if row.counts.len() == 1 && cpus.len() > 1 {
        row.metrics.push(format!("{prefix}.{}.all", row.name));
        return;
    }
    for cpu in &cpus[..row.counts.len()] {
        row.metrics.push(format!("{prefix}.{}.cpu{cpu}", row.name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str, kind: Kind) -> Vec<String> {
        let mut t = Table::default();
        parse(text, kind, &mut t, &mut String::new()).expect("header");
        t.rows.iter().flat_map(|r| r.metrics.clone()).collect()
    }

    #[test]
    fn interrupt_names() {
        let text = "           CPU0       CPU2\n\
             0:         22          0   IO-APIC   2-edge      timer\n\
             136:    1        2  IR-PCI-MSI 333824-edge      iwlwifi: default queue\n\
             55:  57  0  BRCM STB PCIe MSI 524288 Edge      xhci_hcd\n\
             39:  5  0  GICv2  73 Level     dwc_otg, dwc_otg_pcd, dwc_otg_hcd:usb1\n\
             7:   0  0\n\
             LOC:   10   20   Local timer interrupts\n\
             ERR:          3\n";
        assert_eq!(
            names(text, Kind::Interrupts),
            [
                "irq_rate.0 timer.cpu0",
                "irq_rate.0 timer.cpu2",
                "irq_rate.136 iwlwifi: default queue.cpu0",
                "irq_rate.136 iwlwifi: default queue.cpu2",
                "irq_rate.55 xhci_hcd.cpu0",
                "irq_rate.55 xhci_hcd.cpu2",
                "irq_rate.39 dwc_otg, dwc_otg_pcd, dwc_otg_hcd:usb1.cpu0",
                "irq_rate.39 dwc_otg, dwc_otg_pcd, dwc_otg_hcd:usb1.cpu2",
                "irq_rate.7.cpu0",
                "irq_rate.7.cpu2",
                "irq_rate.LOC.cpu0",
                "irq_rate.LOC.cpu2",
                "irq_rate.ERR.all",
            ]
        );
    }

    #[test]
    fn malformed_lines_are_skipped() {
        let text = "CPU0 CPU1\n\n:\nfoo\nbar baz: 1 2\nNMI: x y\n 5: 18446744073709551616 1\n\
                    TIMER: 1 2 3 4 5\n";
        // Only "TIMER" parses; it keeps its two columns. IRQ 5 (count overflows u64) is skipped.
        assert_eq!(
            names(text, Kind::Softirqs),
            ["softirq_rate.TIMER.cpu0", "softirq_rate.TIMER.cpu1"]
        );
        let mut t = Table::default();
        assert!(parse("", Kind::Softirqs, &mut t, &mut String::new()).is_none());
        assert!(parse("garbage\n", Kind::Softirqs, &mut t, &mut String::new()).is_none());
    }

    #[test]
    fn rates_match_rows_by_name_and_skip_wraps() {
        let mut a = Table::default();
        let mut b = Table::default();
        let mut s = String::new();
        parse(
            "CPU0 CPU1\nHI: 10 10\nTIMER: 100 200\n",
            Kind::Softirqs,
            &mut a,
            &mut s,
        );
        parse(
            "CPU0 CPU1\nNEW: 1 1\nTIMER: 150 300\nHI: 5 30\n",
            Kind::Softirqs,
            &mut b,
            &mut s,
        );
        let mut out = Sample::default();
        push_rates(&a, &b, 0.5, &mut out);
        let got: Vec<(&str, f64)> = out
            .readings
            .iter()
            .map(|r| (r.metric.as_str(), r.value))
            .collect();
        assert_eq!(
            got,
            [
                ("softirq_rate.TIMER.cpu0", 100.0),
                ("softirq_rate.TIMER.cpu1", 200.0),
                ("softirq_rate.HI.cpu1", 40.0)
            ]
        );
    }
}
