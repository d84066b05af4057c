//! Whether the kernel runs in a virtual machine, and the evidence: one list for the audit
//! (`rtscope check`'s virtualization verdict) and the spike attribution (an idle exit longer
//! than any idle state is the hypervisor's only on a guest).
//!
//! No I/O here: the caller's `read` returns a file's trimmed, non-empty text by absolute path
//! (`/proc/cpuinfo`), so a fixture tree or another root serves as well as the live system.

/// DMI vendors and products of hypervisors.
pub const VM_DMI: &[&str] = &[
    "QEMU",
    "KVM",
    "VMware",
    "VirtualBox",
    "innotek",
    "Xen",
    "Bochs",
    "BHYVE",
    "Parallels",
    "Virtual Machine",
    "Google Compute Engine",
    "OpenStack",
    "Amazon EC2",
    "Cloud Hypervisor",
    "Firecracker",
];

/// Each sign of a hypervisor `read` finds, in words; empty on bare metal.
pub fn evidence(read: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut evidence = Vec::new();
    if let Some(info) = read("/proc/cpuinfo") {
        let flagged = info
            .lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|w| w == "hypervisor"));
        if flagged {
            evidence.push("/proc/cpuinfo: hypervisor CPU flag".to_owned());
        }
    }
    if let Some(t) = read("/sys/hypervisor/type") {
        evidence.push(format!("/sys/hypervisor/type = {t}"));
    }
    if let Some(c) = read("/proc/device-tree/hypervisor/compatible") {
        evidence.push(format!(
            "device tree hypervisor node: {}",
            c.replace('\0', " ").trim()
        ));
    }
    if let Some(c) = read("/proc/device-tree/compatible") {
        if c.split('\0').any(|w| w == "linux,dummy-virt") {
            evidence
                .push("device tree compatible linux,dummy-virt (QEMU's virt machine)".to_owned());
        }
    }
    for f in ["sys_vendor", "product_name"] {
        if let Some(v) = read(&format!("/sys/class/dmi/id/{f}")) {
            if VM_DMI.iter().any(|k| v.contains(k)) {
                evidence.push(format!("/sys/class/dmi/id/{f} = {v}"));
            }
        }
    }
    let cs = read("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    if let Some(cs) =
        cs.filter(|c| ["kvm-clock", "hyperv_clocksource_tsc_page", "xen"].contains(&c.as_str()))
    {
        evidence.push(format!("clocksource {cs}"));
    }
    evidence
}

#[cfg(test)]
mod tests {
    use super::evidence;

    fn from(files: &'static [(&'static str, &'static str)]) -> Vec<String> {
        evidence(&|p| files.iter().find(|f| f.0 == p).map(|f| f.1.to_owned()))
    }

    #[test]
    fn each_kind_of_evidence_is_found_and_bare_metal_has_none() {
        assert!(from(&[("/proc/cpuinfo", "flags\t: fpu sse2")]).is_empty());
        assert_eq!(
            from(&[("/proc/cpuinfo", "flags\t: fpu hypervisor")]),
            ["/proc/cpuinfo: hypervisor CPU flag"]
        );
        // QEMU's arm64 virt machine under TCG: no CPU flag, no DMI, only its device tree.
        assert_eq!(
            from(&[("/proc/device-tree/compatible", "linux,dummy-virt\0")]),
            ["device tree compatible linux,dummy-virt (QEMU's virt machine)"]
        );
        assert!(from(&[(
            "/proc/device-tree/compatible",
            "raspberrypi,4-model-b\0brcm,bcm2711\0"
        )])
        .is_empty());
        assert_eq!(
            from(&[("/sys/class/dmi/id/sys_vendor", "QEMU")]),
            ["/sys/class/dmi/id/sys_vendor = QEMU"]
        );
        assert_eq!(
            from(&[(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                "kvm-clock"
            )]),
            ["clocksource kvm-clock"]
        );
    }
}
