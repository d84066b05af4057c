//! Everything recorded about one run, read in one go: what reports, exports and comparisons
//! are drawn from. The one reader of a whole run, so they never disagree about what a run is.

use crate::codec::RawSample;
use crate::{
    CampaignRun, CampaignSummary, EventRow, LoadRow, MonitorSeries, MonitorState, Result,
    RunDetail, RunId, SeriesRow, Store, TopThread,
};

/// One run as recorded.
#[derive(Debug, Clone)]
pub struct RunBundle {
    /// Summary, threads (statistics and histograms), environment, command line, settings.
    pub detail: RunDetail,
    /// Per-thread, per-interval statistics.
    pub series: Vec<SeriesRow>,
    /// Samples above the event threshold.
    pub events: Vec<EventRow>,
    /// System-monitor series.
    pub monitors: Vec<MonitorSeries>,
    /// Text states of the monitors (changes only).
    pub states: Vec<MonitorState>,
    /// The busiest threads of every monitor sample.
    pub top: Vec<TopThread>,
    /// The loads the run was measured under.
    pub loads: Vec<LoadRow>,
    /// The campaign the run belongs to, with its place in it.
    pub campaign: Option<(CampaignSummary, CampaignRun)>,
    /// Raw samples per thread (index = thread); empty unless asked for and stored.
    pub raw: Vec<Vec<RawSample>>,
    /// Why its spikes were late, when it was recorded with `--explain`.
    pub spikes: Option<crate::SpikeSummaryRow>,
    /// What the explanation observed with: its recorder, trace events and kernel stacks
    /// ([`crate::Recorded::None`]: not explained, no recorder ran).
    pub recorder: crate::Recorded,
    /// The preflight audit the run was started with (empty if none was recorded).
    pub checks: Vec<crate::CheckRow>,
}

impl Store {
    /// Reads run `id`; with `raw`, also its raw samples (when it has any).
    pub fn bundle(&self, id: RunId, raw: bool) -> Result<RunBundle> {
        let campaign = self.campaign_of(id)?;
        self.bundle_with(id, raw, campaign)
    }

    /// Reads runs `ids` in order. The campaign of the first run is read once for all its runs
    /// (looking it up per run would read every run of the campaign again for each).
    pub fn bundles(&self, ids: &[RunId], raw: bool) -> Result<Vec<RunBundle>> {
        let mut places: Vec<(CampaignSummary, CampaignRun)> = Vec::new();
        if let Some(&first) = ids.first() {
            if let Some((c, _)) = self.campaign_of(first)? {
                for r in self.campaign_runs(c.id)? {
                    places.push((c.clone(), r));
                }
            }
        }
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let known = places.iter().rev().find(|(_, r)| r.run_id == id).cloned();
            let campaign = match known {
                Some(p) => Some(p),
                None => self.campaign_of(id)?,
            };
            out.push(self.bundle_with(id, raw, campaign)?);
        }
        Ok(out)
    }

    fn bundle_with(
        &self,
        id: RunId,
        raw: bool,
        campaign: Option<(CampaignSummary, CampaignRun)>,
    ) -> Result<RunBundle> {
        let detail = self.run(id)?;
        let mut samples = Vec::new();
        if raw && detail.raw_samples > 0 {
            for t in &detail.threads {
                samples.push(self.raw_samples(id, t.thread)?);
            }
        }
        Ok(RunBundle {
            series: self.series(id)?,
            events: self.events(id)?,
            monitors: self.monitor_series(id)?,
            states: self.monitor_states(id)?,
            top: self.monitor_top(id)?,
            loads: self.loads(id)?,
            checks: self.checks(id)?,
            campaign,
            spikes: self.spike_summary(id)?,
            recorder: self.recorder(id)?,
            detail,
            raw: samples,
        })
    }
}
