//! Interrupt checks: irqbalance and the device interrupts routed to the measured CPUs.

use super::{join_limited, Ctx};
use crate::sys::{format_cpulist, parse_cpulist};
use crate::{CheckId, Finding, Verdict};

/// CPUs that irqbalance leaves alone on its own: isolated and nohz_full CPUs.
fn auto_banned(ctx: &Ctx) -> Vec<u32> {
    ["isolated", "nohz_full"]
        .iter()
        .filter_map(|f| ctx.sys.read(&format!("/sys/devices/system/cpu/{f}")))
        .filter_map(|s| parse_cpulist(&s))
        .flatten()
        .collect()
}

/// `IRQBALANCE_BANNED_CPULIST` or the hex `IRQBALANCE_BANNED_CPUS` in a process environment.
fn banned_in_environ(environ: &[u8]) -> Option<(String, Vec<u32>)> {
    for var in environ.split(|&b| b == 0) {
        let var = String::from_utf8_lossy(var);
        if let Some(list) = var.strip_prefix("IRQBALANCE_BANNED_CPULIST=") {
            return Some((var.to_string(), parse_cpulist(list)?));
        }
        if let Some(mask) = var.strip_prefix("IRQBALANCE_BANNED_CPUS=") {
            return Some((var.to_string(), parse_hex_mask(mask)?));
        }
    }
    None
}

/// Parses a hex CPU mask (`ff`, `00000000,0000000c`).
fn parse_hex_mask(mask: &str) -> Option<Vec<u32>> {
    let digits: String = mask.chars().filter(|c| *c != ',').collect();
    let mut cpus = Vec::new();
    for (i, c) in digits.chars().rev().enumerate() {
        let v = c.to_digit(16)?;
        for bit in 0..4 {
            if v & (1 << bit) != 0 {
                cpus.push(u32::try_from(i * 4 + bit).ok()?);
            }
        }
    }
    Some(cpus)
}

pub(crate) fn irqbalance(ctx: &Ctx) -> Finding {
    // The thread scan of rt_tasks already read every main thread's name.
    let running: Vec<u32> = ctx
        .tasks()
        .iter()
        .filter(|t| t.tid == t.pid && t.comm == "irqbalance")
        .map(|t| t.pid)
        .collect();
    let Some(&pid) = running.first() else {
        return Finding::new(
            CheckId::Irqbalance,
            Verdict::Ok,
            "no process named irqbalance in /proc/*/task/*/stat",
        )
        .setting("not running");
    };
    let mut banned = auto_banned(ctx);
    let mut evidence = format!("irqbalance running (pid {pid})");
    if let Some((var, cpus)) = ctx
        .sys
        .read_bytes(&format!("/proc/{pid}/environ"))
        .and_then(|e| banned_in_environ(&e))
    {
        evidence.push_str(&format!("; {var}"));
        banned.extend(cpus);
    }
    if !banned.is_empty() {
        evidence.push_str(&format!(
            "; leaves CPUs {} alone (banned, isolated or nohz_full)",
            format_cpulist(&banned)
        ));
    }
    let exposed: Vec<u32> = ctx
        .cpus
        .iter()
        .copied()
        .filter(|c| !banned.contains(c))
        .collect();
    let verdict = if exposed.is_empty() {
        Verdict::Ok
    } else {
        evidence.push_str(&format!(
            "; may move IRQs onto measured CPUs {}",
            format_cpulist(&exposed)
        ));
        Verdict::Warn
    };
    Finding::new(CheckId::Irqbalance, verdict, evidence)
        .fix_if_needed(format!(
            "systemctl disable --now irqbalance, or set IRQBALANCE_BANNED_CPULIST={} in /etc/default/irqbalance",
            format_cpulist(&exposed)
        ))
        .setting("running")
}

/// Interrupt counts per CPU from /proc/interrupts, by IRQ number.
fn counts(ctx: &Ctx) -> Vec<(u32, Vec<(u32, u64)>)> {
    let Some(text) = ctx.sys.read("/proc/interrupts") else {
        return Vec::new();
    };
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let cpus: Vec<u32> = header
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("CPU")?.parse().ok())
        .collect();
    lines
        .filter_map(|l| {
            let (irq, rest) = l.trim_start().split_once(':')?;
            let irq: u32 = irq.parse().ok()?;
            let per_cpu = cpus
                .iter()
                .zip(rest.split_whitespace())
                .filter_map(|(&c, n)| Some((c, n.parse().ok()?)))
                .collect();
            Some((irq, per_cpu))
        })
        .collect()
}

/// The handler names of IRQ `n`: the subdirectories of /proc/irq/N.
fn handlers(ctx: &Ctx, n: u32) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(ctx.sys.path(&format!("/proc/irq/{n}"))) else {
        return Vec::new();
    };
    let mut names: Vec<String> = rd
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

pub(crate) fn irq_affinity(ctx: &Ctx) -> Finding {
    let irqs = ctx.sys.numbered("/proc/irq", "");
    if irqs.is_empty() {
        return Finding::unavailable(CheckId::IrqAffinity, "no /proc/irq/N directories");
    }
    let counts = counts(ctx);
    let mut hits: Vec<(u64, String)> = Vec::new();
    for n in irqs {
        let names = handlers(ctx, n);
        if names.is_empty() {
            continue;
        }
        let dir = format!("/proc/irq/{n}");
        let allowed = ctx.sys.read(&format!("{dir}/smp_affinity_list"));
        let effective = ctx.sys.read(&format!("{dir}/effective_affinity_list"));
        let Some(cpus) = effective
            .as_deref()
            .or(allowed.as_deref())
            .and_then(parse_cpulist)
        else {
            continue;
        };
        let file = match (&allowed, &effective) {
            (Some(a), Some(e)) if a != e => format!("allowed CPUs {a}, effective"),
            (_, Some(_)) => "effective".to_owned(),
            _ => "allowed".to_owned(),
        };
        let on: Vec<u32> = ctx
            .cpus
            .iter()
            .copied()
            .filter(|c| cpus.contains(c))
            .collect();
        if on.is_empty() {
            continue;
        }
        let fired: u64 = counts.iter().find(|(i, _)| *i == n).map_or(0, |(_, per)| {
            per.iter()
                .filter(|(c, _)| on.contains(c))
                .map(|(_, k)| k)
                .sum()
        });
        hits.push((
            fired,
            format!(
                "{n} {} ({file} CPUs {}, {fired} on measured CPUs)",
                names.join(","),
                format_cpulist(&cpus)
            ),
        ));
    }
    hits.sort_by_key(|h| std::cmp::Reverse(h.0));
    let list: Vec<String> = hits.iter().map(|(_, s)| s.clone()).collect();
    let verdict = if list.is_empty() {
        Verdict::Ok
    } else {
        Verdict::Warn
    };
    let evidence = if list.is_empty() {
        format!("no device IRQ handled on CPUs {}", ctx.cpu_list())
    } else {
        format!("{} device IRQs: {}", list.len(), join_limited(&list, 5))
    };
    let others = format_cpulist(&ctx.others());
    let fix = if others.is_empty() {
        "measure a subset of the CPUs and move device IRQs to the rest (every online CPU is measured now)".to_owned()
    } else {
        format!("for each IRQ N: echo {others} > /proc/irq/N/smp_affinity_list (at boot: irqaffinity={others}; managed IRQs: isolcpus=managed_irq,...)")
    };
    Finding::new(CheckId::IrqAffinity, verdict, evidence)
        .fix_if_needed(fix)
        .setting(list.len().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn irqbalance_banned_cpus() {
        assert_eq!(parse_hex_mask("c"), Some(vec![2, 3]));
        assert_eq!(parse_hex_mask("1,00000001"), Some(vec![0, 32]));
        assert_eq!(parse_hex_mask("xz"), None);
        let env = b"PATH=/bin\0IRQBALANCE_BANNED_CPULIST=2-3\0";
        assert_eq!(banned_in_environ(env).map(|(_, c)| c), Some(vec![2, 3]));
        assert!(banned_in_environ(b"A=1\0").is_none());
    }
}
