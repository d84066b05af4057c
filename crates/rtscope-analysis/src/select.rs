//! Choosing runs for `report` and `compare`: by id, label, campaign or tags.
//!
//! A selector is one of:
//! * `17` — run 17;
//! * `last` — the newest run;
//! * `campaign:NAME` — every run of the newest campaign named NAME, in plan order (for a
//!   position that was resumed, its latest run);
//! * `KEY=VALUE[,KEY=VALUE…]` — every run with all these tags, oldest first;
//! * `label:TEXT` or any other text — the runs with that label, oldest first; failing that, the
//!   campaign of that name.

use rtscope_common::error::UsageError;
use rtscope_store::{CampaignSummary, RunId, RunSummary, Store};

/// Whether tag `key` only numbers repeats (`round`, `repeat`, …): grouping never splits runs
/// by it. The list is [`rtscope_report::group::REPEAT_KEYS`], the one place it is defined.
pub fn is_repeat_key(key: &str) -> bool {
    rtscope_report::group::is_repeat_key(key)
}

/// A parsed selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// One run by id.
    Id(RunId),
    /// The newest run.
    Last,
    /// The runs of the newest campaign with this name.
    Campaign(String),
    /// Runs having all these tags.
    Tags(Vec<(String, String)>),
    /// Runs with this label (or else the campaign of this name).
    Label(String),
}

impl Selector {
    /// Parses a selector as typed on the command line.
    pub fn parse(text: &str) -> Result<Selector, UsageError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(UsageError::new("an empty run selector").hint(HINT));
        }
        if let Ok(id) = t.parse::<RunId>() {
            return Ok(Selector::Id(id));
        }
        if t == "last" {
            return Ok(Selector::Last);
        }
        if let Some(name) = t.strip_prefix("campaign:") {
            return Ok(Selector::Campaign(name.to_string()));
        }
        if let Some(label) = t.strip_prefix("label:") {
            return Ok(Selector::Label(label.to_string()));
        }
        if t.contains('=') {
            let tags = t
                .split(',')
                .map(rtscope_common::names::parse_tag)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| {
                    UsageError::new(format!("invalid tag filter '{t}': expected KEY=VALUE[,KEY=VALUE…], e.g. kernel=rt,case=idle")).hint(HINT)
                })?;
            return Ok(Selector::Tags(tags));
        }
        Ok(Selector::Label(t.to_string()))
    }
}

const HINT: &str = "select runs by id (17), 'last', campaign:NAME, label:TEXT or tags (kernel=rt); `rtscope runs` lists them";

/// The runs a selector names, never empty.
pub fn resolve(store: &Store, sel: &Selector, text: &str) -> Result<Vec<RunId>, UsageError> {
    let err = |e: rtscope_store::StoreError| UsageError::from_error(e);
    let ids = match sel {
        Selector::Id(id) => {
            store.summary(*id).map_err(err)?;
            vec![*id]
        }
        Selector::Last => store.last_run().map_err(err)?.into_iter().collect(),
        Selector::Campaign(name) => match store.campaign_by_name(name).map_err(err)? {
            Some(c) => campaign_runs(store, &c)?,
            None => Vec::new(),
        },
        Selector::Tags(tags) => oldest_first(store.list_runs().map_err(err)?, |r| {
            tags.iter()
                .all(|(k, v)| r.tags.iter().any(|(rk, rv)| rk == k && rv == v))
        }),
        Selector::Label(label) => {
            let runs = oldest_first(store.list_runs().map_err(err)?, |r| {
                r.label.as_deref() == Some(label.as_str())
            });
            if runs.is_empty() {
                match store.campaign_by_name(label).map_err(err)? {
                    Some(c) => campaign_runs(store, &c)?,
                    None => runs,
                }
            } else {
                runs
            }
        }
    };
    if ids.is_empty() {
        return Err(UsageError::new(format!(
            "no run matches '{text}' in {}",
            store.path().display()
        ))
        .hint(HINT));
    }
    Ok(ids)
}

fn oldest_first(runs: Vec<RunSummary>, keep: impl Fn(&RunSummary) -> bool) -> Vec<RunId> {
    let mut ids: Vec<RunId> = runs.iter().filter(|r| keep(r)).map(|r| r.id).collect();
    ids.sort_unstable();
    ids
}

/// A campaign's runs in plan order; for a position run more than once (resumed), the newest.
pub fn campaign_runs(store: &Store, c: &CampaignSummary) -> Result<Vec<RunId>, UsageError> {
    let runs = store.campaign_runs(c.id).map_err(UsageError::from_error)?;
    let mut out: Vec<(u32, RunId)> = Vec::new();
    for r in runs {
        match out.last_mut() {
            Some(last) if last.0 == r.seq => last.1 = last.1.max(r.run_id),
            _ => out.push((r.seq, r.run_id)),
        }
    }
    Ok(out.into_iter().map(|(_, id)| id).collect())
}

/// The newest run; when it belongs to a campaign, every run of that campaign.
pub fn last_with_campaign(store: &Store) -> Result<Vec<RunId>, UsageError> {
    let err = |e: rtscope_store::StoreError| UsageError::from_error(e);
    let Some(last) = store.last_run().map_err(err)? else {
        return Ok(Vec::new());
    };
    match store.campaign_of(last).map_err(err)? {
        Some((c, _)) => campaign_runs(store, &c),
        None => Ok(vec![last]),
    }
}

/// The runs a report names, in order, each once: the campaign `campaign`'s, then with `last`
/// (or nothing else named) the newest run with its campaign, then each selector of `runs`.
pub fn chosen(
    store: &Store,
    campaign: Option<&str>,
    runs: &[String],
    last: bool,
) -> Result<Vec<RunId>, UsageError> {
    let mut ids: Vec<RunId> = Vec::new();
    if let Some(name) = campaign {
        let c = store
            .campaign_by_name(name)
            .map_err(UsageError::from_error)?
            .ok_or_else(|| {
                UsageError::new(format!(
                    "no campaign named '{name}' in {}",
                    store.path().display()
                ))
                .hint("`rtscope run` records campaigns; `rtscope runs` lists the runs")
            })?;
        ids.extend(campaign_runs(store, &c)?);
    }
    if last || (runs.is_empty() && campaign.is_none()) {
        ids.extend(last_with_campaign(store)?);
    }
    for t in runs {
        let sel = Selector::parse(t)?;
        ids.extend(resolve(store, &sel, t)?);
    }
    let mut seen = std::collections::HashSet::new();
    ids.retain(|id| seen.insert(*id));
    if ids.is_empty() {
        return Err(
            UsageError::new(format!("no run to report in {}", store.path().display()))
                .hint("record a run with `rtscope measure` first"),
        );
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse() {
        assert_eq!(Selector::parse("17").unwrap(), Selector::Id(17));
        assert_eq!(Selector::parse("last").unwrap(), Selector::Last);
        assert_eq!(
            Selector::parse("campaign:quick").unwrap(),
            Selector::Campaign("quick".into())
        );
        assert_eq!(
            Selector::parse("kernel=rt,case=idle").unwrap(),
            Selector::Tags(vec![
                ("kernel".into(), "rt".into()),
                ("case".into(), "idle".into())
            ])
        );
        assert_eq!(
            Selector::parse("label:a=b").unwrap(),
            Selector::Label("a=b".into())
        );
        assert_eq!(
            Selector::parse("stock kernel").unwrap(),
            Selector::Label("stock kernel".into())
        );
        assert!(Selector::parse("=rt").is_err());
        assert!(Selector::parse(" ").is_err());
    }
}
