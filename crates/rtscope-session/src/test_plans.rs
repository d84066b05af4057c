//! Plans the unit tests of several modules build alike.

use rtscope_core::Nanos;
use rtscope_engine::CpuSet;

/// The plan of a noise run on `cpus` of CPUs 0-1 with `spec` (one second, SCHED_OTHER).
pub(crate) fn noise_plan(
    cpus: &[usize],
    spec: crate::plan::NoiseSpec,
) -> Result<crate::plan::RunPlan, crate::plan::PlanError> {
    let s = crate::plan::PlanSpec {
        cpus: Some(CpuSet::from_cpus(cpus.iter().copied())),
        policy: crate::plan::PolicyChoice::Other,
        priority: 0,
        duration: Some(Nanos::from_secs(1)),
        workload: crate::plan::WorkloadSpec::Noise(spec),
        ..crate::plan::PlanSpec::default()
    };
    crate::plan::RunPlan::build(&s, &CpuSet::from_cpus([0, 1]))
}
