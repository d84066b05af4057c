//! Sources under /sys: thermal zones, hwmon temperatures, cpufreq, x86 thermal throttle
//! counters and the Raspberry Pi firmware's throttled flags.
//!
//! Each is discovered once (in [`crate::Monitor::new`]); a sample then reads one small file per
//! reading. A file that cannot be read or parsed at sample time (a thermal zone answering
//! `ENODATA`, a CPU gone offline) is skipped for that sample.

use crate::text::{disambiguate, first_i64, numbered, numbered_entries, read_into, read_trimmed};
use crate::{unit, Sample, Status};
use std::path::{Path, PathBuf};

/// One numeric file read each sample: `value = number in file / divisor`.
struct Probe {
    path: PathBuf,
    metric: String,
    divisor: f64,
    unit: &'static str,
}

/// One text file read each sample (trimmed), reported as a text state.
struct TextProbe {
    path: PathBuf,
    metric: String,
}

/// A set of numeric and text probes discovered together (one monitor source).
pub(crate) struct ProbeSet {
    probes: Vec<Probe>,
    texts: Vec<TextProbe>,
    pub(crate) status: Status,
}

impl ProbeSet {
    fn new(probes: Vec<Probe>, texts: Vec<TextProbe>, what: &str, missing: &str) -> Self {
        let status = if probes.is_empty() && texts.is_empty() {
            Status::unavailable(format!("no {missing}"))
        } else {
            Status::available(format!("{} {what}", probes.len() + texts.len()))
        };
        ProbeSet {
            probes,
            texts,
            status,
        }
    }

    /// Reads every probe once; unreadable or malformed files are skipped.
    pub(crate) fn sample(&self, buf: &mut String, out: &mut Sample) {
        for p in &self.probes {
            if read_into(&p.path, buf).is_ok() {
                if let Some(v) = first_i64(buf) {
                    out.push(p.metric.clone(), v as f64 / p.divisor, p.unit);
                }
            }
        }
        for t in &self.texts {
            if read_into(&t.path, buf).is_ok() {
                let v = buf.trim();
                if !v.is_empty() {
                    out.states.push((t.metric.clone(), v.to_owned()));
                }
            }
        }
    }
}

/// Thermal zones: `temp.<type>` in degC from `/sys/class/thermal/thermal_zone<N>/temp`
/// (millidegrees). Two zones of the same type become `temp.<type>.zone<N>`.
pub(crate) fn thermal(root: &Path) -> ProbeSet {
    let dir = root.join("sys/class/thermal");
    let mut items = Vec::new();
    let mut paths = Vec::new();
    for (n, name) in numbered_entries(&dir, "thermal_zone") {
        let zone = dir.join(&name);
        let temp = zone.join("temp");
        if !temp.is_file() {
            continue;
        }
        let ty = read_trimmed(&zone.join("type")).unwrap_or(name);
        items.push((format!("temp.{ty}"), format!("zone{n}")));
        paths.push(temp);
    }
    disambiguate(&mut items);
    let probes = milli_probes(items, paths);
    ProbeSet::new(
        probes,
        Vec::new(),
        "thermal zones",
        "/sys/class/thermal/thermal_zone*",
    )
}

/// hwmon temperatures: `hwmon.<chip name>.<label>` in degC from
/// `/sys/class/hwmon/hwmon<N>/temp<K>_input` (millidegrees); the label is `temp<K>_label`,
/// or `temp<K>` when the chip has none.
pub(crate) fn hwmon(root: &Path) -> ProbeSet {
    let dir = root.join("sys/class/hwmon");
    let mut items = Vec::new();
    let mut paths = Vec::new();
    for (n, name) in numbered_entries(&dir, "hwmon") {
        let base = dir.join(&name);
        // Old drivers keep their attributes in hwmon<N>/device/ instead.
        let attrs = if base.join("name").is_file() {
            base
        } else {
            base.join("device")
        };
        let chip = read_trimmed(&attrs.join("name")).unwrap_or_else(|| name.clone());
        for k in temp_inputs(&attrs) {
            let label = read_trimmed(&attrs.join(format!("temp{k}_label")))
                .unwrap_or_else(|| format!("temp{k}"));
            items.push((format!("hwmon.{chip}.{label}"), format!("hwmon{n}.temp{k}")));
            paths.push(attrs.join(format!("temp{k}_input")));
        }
    }
    disambiguate(&mut items);
    let probes = milli_probes(items, paths);
    ProbeSet::new(
        probes,
        Vec::new(),
        "hwmon temperatures",
        "/sys/class/hwmon/hwmon*/temp*_input",
    )
}

/// The `K` of every `temp<K>_input` file in `dir`, sorted.
fn temp_inputs(dir: &Path) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut ks: Vec<u32> = rd
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            numbered(name.strip_suffix("_input")?, "temp")
        })
        .collect();
    ks.sort_unstable();
    ks
}

fn milli_probes(items: Vec<(String, String)>, paths: Vec<PathBuf>) -> Vec<Probe> {
    items
        .into_iter()
        .zip(paths)
        .map(|((metric, _), path)| Probe {
            path,
            metric,
            divisor: 1000.0,
            unit: unit::DEG_C,
        })
        .collect()
}

fn cpu_dirs(root: &Path) -> Vec<(u32, PathBuf)> {
    let dir = root.join("sys/devices/system/cpu");
    numbered_entries(&dir, "cpu")
        .into_iter()
        .map(|(n, name)| (n, dir.join(name)))
        .collect()
}

/// cpufreq: `freq.cpu<N>` in kHz (`scaling_cur_freq`) and the text state `governor.cpu<N>`
/// (`scaling_governor`).
pub(crate) fn cpufreq(root: &Path) -> ProbeSet {
    let mut probes = Vec::new();
    let mut texts = Vec::new();
    for (n, dir) in cpu_dirs(root) {
        let d = dir.join("cpufreq");
        let cur = d.join("scaling_cur_freq");
        if cur.is_file() {
            probes.push(Probe {
                path: cur,
                metric: format!("freq.cpu{n}"),
                divisor: 1.0,
                unit: unit::KHZ,
            });
        }
        let gov = d.join("scaling_governor");
        if gov.is_file() {
            texts.push(TextProbe {
                path: gov,
                metric: format!("governor.cpu{n}"),
            });
        }
    }
    ProbeSet::new(
        probes,
        texts,
        "cpufreq files",
        "/sys/devices/system/cpu/cpu*/cpufreq",
    )
}

/// x86 thermal throttling: `throttle.core_count.cpu<N>` (per CPU) and
/// `throttle.package_count.pkg<P>` (once per physical package), cumulative event counts.
pub(crate) fn throttle(root: &Path) -> ProbeSet {
    let mut probes = Vec::new();
    let mut packages: Vec<i64> = Vec::new();
    for (n, dir) in cpu_dirs(root) {
        let t = dir.join("thermal_throttle");
        let core = t.join("core_throttle_count");
        if core.is_file() {
            probes.push(count_probe(core, format!("throttle.core_count.cpu{n}")));
        }
        let pkg_file = t.join("package_throttle_count");
        if !pkg_file.is_file() {
            continue;
        }
        let pkg = read_trimmed(&dir.join("topology/physical_package_id"))
            .and_then(|s| first_i64(&s))
            .unwrap_or(0);
        if !packages.contains(&pkg) {
            packages.push(pkg);
            probes.push(count_probe(
                pkg_file,
                format!("throttle.package_count.pkg{pkg}"),
            ));
        }
    }
    ProbeSet::new(
        probes,
        Vec::new(),
        "throttle counters",
        "/sys/devices/system/cpu/cpu*/thermal_throttle (x86 only)",
    )
}

fn count_probe(path: PathBuf, metric: String) -> Probe {
    Probe {
        path,
        metric,
        divisor: 1.0,
        unit: unit::EVENTS,
    }
}

/// The bits of the Raspberry Pi firmware's `get_throttled` word, with their metric names.
pub(crate) const RPI_BITS: [(u32, &str); 8] = [
    (0, "rpi.under_voltage"),
    (1, "rpi.freq_capped"),
    (2, "rpi.throttled"),
    (3, "rpi.soft_temp_limit"),
    (16, "rpi.under_voltage_occurred"),
    (17, "rpi.freq_capped_occurred"),
    (18, "rpi.throttled_occurred"),
    (19, "rpi.soft_temp_limit_occurred"),
];

/// The Raspberry Pi firmware's throttled flags
/// (`/sys/devices/platform/soc/soc:firmware/get_throttled`, a hex word).
pub(crate) struct RpiThrottled {
    path: PathBuf,
    pub(crate) status: Status,
}

impl RpiThrottled {
    const FILE: &'static str = "sys/devices/platform/soc/soc:firmware/get_throttled";

    pub(crate) fn discover(root: &Path) -> Self {
        let path = root.join(Self::FILE);
        let status = if path.is_file() {
            Status::available("get_throttled".to_owned())
        } else {
            Status::unavailable(format!("no /{} (not a Raspberry Pi)", Self::FILE))
        };
        RpiThrottled { path, status }
    }

    /// Pushes one 0/1 flag per bit of [`RPI_BITS`] and the text state `rpi.get_throttled`.
    pub(crate) fn sample(&self, buf: &mut String, out: &mut Sample) {
        if !self.status.available || read_into(&self.path, buf).is_err() {
            return;
        }
        let Some(word) = parse_hex(buf) else {
            return;
        };
        for (bit, metric) in RPI_BITS {
            let on = (word >> bit) & 1;
            out.push(metric.to_owned(), f64::from(on), unit::FLAG);
        }
        out.states
            .push(("rpi.get_throttled".to_owned(), format!("{word:#x}")));
    }
}

/// Parses a hex word with or without a `0x` prefix, as the firmware driver prints it.
pub(crate) fn parse_hex(s: &str) -> Option<u32> {
    let t = s.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    u32::from_str_radix(t, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_words() {
        assert_eq!(parse_hex("50005\n"), Some(0x50005));
        assert_eq!(parse_hex("0x50005"), Some(0x50005));
        assert_eq!(parse_hex("0"), Some(0));
        assert_eq!(parse_hex(""), None);
        assert_eq!(parse_hex("zz"), None);
        assert_eq!(parse_hex("123456789"), None);
    }

    #[test]
    fn missing_root_is_unavailable_not_an_error() {
        let root = Path::new("/nonexistent-rtscope-monitor-root");
        for set in [thermal(root), hwmon(root), cpufreq(root), throttle(root)] {
            assert!(!set.status.available);
            assert!(set.status.why.starts_with("no /sys/"), "{}", set.status.why);
        }
        assert!(!RpiThrottled::discover(root).status.available);
    }
}
