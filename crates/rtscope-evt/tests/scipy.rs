//! The fit against an independent implementation: scipy.stats.genpareto fitted by maximum
//! likelihood to the same excesses (python3 with `pip install scipy`; .ci/run installs it
//! in its venv). Parameters, log-likelihood and return levels must agree.

use rtscope_evt::diag::generator;
use rtscope_evt::gpd::{self, Gpd};
use std::process::Command;

const SCRIPT: &str = r#"
import sys, json
from scipy import stats
for line in sys.stdin:
    y = json.loads(line)
    c, loc, scale = stats.genpareto.fit(y, floc=0)
    ll = float(stats.genpareto.logpdf(y, c, loc=0, scale=scale).sum())
    # The excess exceeded with probability q: isf.
    levels = [float(stats.genpareto.isf(q, c, loc=0, scale=scale)) for q in (1e-3, 1e-6)]
    print(json.dumps({"xi": c, "sigma": scale, "ll": ll, "levels": levels}))
"#;

fn samples() -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for (seed, xi, sigma, n) in [
        (1, 0.2, 1500.0, 500),
        (2, -0.3, 800.0, 400),
        (3, 0.0, 50.0, 300),
        (4, 0.5, 10.0, 1000),
    ] {
        let g = Gpd { sigma, xi };
        let mut r = generator(seed);
        out.push((0..n).map(|_| g.draw(r.unit())).collect());
    }
    // Excesses of a lognormal run above its 95th percentile: not exactly a GPD.
    let mut r = generator(5);
    let mut v: Vec<f64> = (0..10_000)
        .map(|_| {
            let z = (-2.0 * r.unit().ln()).sqrt() * (std::f64::consts::TAU * r.unit()).cos();
            (8.5 + 0.4 * z).exp()
        })
        .collect();
    v.sort_by(|a, b| b.total_cmp(a));
    let u = v[500];
    out.push(v[..500].iter().map(|x| x - u).collect());
    out
}

#[test]
fn the_fit_agrees_with_scipy_genpareto() {
    rtscope_testkit::require!(
        rtscope_testkit::python3_imports("scipy"),
        "python3 with scipy (pip install scipy; .ci/run installs it in its venv)"
    );
    let data = samples();
    let input: String = data
        .iter()
        .map(|y| format!("{}\n", serde_json_line(y)))
        .collect();
    let lines = scipy_lines(SCRIPT, &input);
    assert_eq!(lines.len(), data.len());
    for (y, s) in data.iter().zip(&lines) {
        let f = gpd::fit(y).unwrap();
        let (xi, sigma, ll) = (
            s["xi"].as_f64().unwrap(),
            s["sigma"].as_f64().unwrap(),
            s["ll"].as_f64().unwrap(),
        );
        // Our maximum is at least as high as scipy's (both maximise the same likelihood)…
        assert!(
            f.log_likelihood >= ll - 1e-3,
            "ours {} < scipy {ll}",
            f.log_likelihood
        );
        // …and at the same place.
        assert!((f.gpd.xi - xi).abs() < 0.01, "ξ {} vs scipy {xi}", f.gpd.xi);
        assert!(
            (f.gpd.sigma / sigma - 1.0).abs() < 0.01,
            "σ {} vs scipy {sigma}",
            f.gpd.sigma
        );
        for (q, level) in [1e-3, 1e-6].iter().zip(s["levels"].as_array().unwrap()) {
            let ours = f.gpd.excess_at(*q);
            let theirs = level.as_f64().unwrap();
            assert!(
                (ours / theirs - 1.0).abs() < 0.02,
                "level at {q}: {ours} vs scipy {theirs}"
            );
        }
    }
}

fn serde_json_line(y: &[f64]) -> String {
    serde_json::to_string(y).unwrap()
}

const GEV_SCRIPT: &str = r#"
import sys, json
from scipy import stats
import numpy as np
for line in sys.stdin:
    d = json.loads(line)
    x = sorted(d["x"])
    k = int(d["censor"] * len(x))
    # scipy's own start: the Gumbel of the sample's moments (its default start diverges on
    # maxima of tens of thousands of ns).
    m, sd = float(np.mean(x)), float(np.std(x))
    start = dict(loc=m - 0.45 * sd, scale=0.78 * sd)
    if k == 0:
        c, loc, scale = stats.genextreme.fit(x, 0.0, **start)
        ll = float(stats.genextreme.logpdf(x, c, loc=loc, scale=scale).sum())
    else:
        # Left-censored at the k-th smallest: those at or below it count as "at most".
        at = x[k - 1]
        above = [v for v in x if v > at]
        n_cens = len(x) - len(above)
        data = stats.CensoredData(uncensored=above, left=[at] * n_cens)
        c, loc, scale = stats.genextreme.fit(data, 0.0, **start)
        ll = float(stats.genextreme.logpdf(above, c, loc=loc, scale=scale).sum()
                   + n_cens * stats.genextreme.logcdf(at, c, loc=loc, scale=scale))
    # The level a block maximum exceeds with probability q: isf.
    levels = [float(stats.genextreme.isf(q, c, loc=loc, scale=scale)) for q in (1e-2, 1e-4)]
    print(json.dumps({"xi": -c, "mu": loc, "sigma": scale, "ll": ll, "levels": levels}))
"#;

/// Block maxima: GEVs of three shapes, and the 1 s maxima of an exponential base with rare
/// GPD spikes (not exactly a GEV), each fitted exactly and censored below its 80th percentile.
fn block_samples() -> Vec<Vec<f64>> {
    use rtscope_evt::gev::Gev;
    let mut out = Vec::new();
    for (seed, xi, n) in [(11, -0.2, 300), (12, 0.0, 500), (13, 0.3, 1000)] {
        let g = Gev {
            mu: 40_000.0,
            sigma: 3_000.0,
            xi,
        };
        let mut r = generator(seed);
        out.push((0..n).map(|_| g.level(r.unit())).collect());
    }
    let mut r = generator(14);
    let spike = Gpd {
        sigma: 5_000.0,
        xi: 0.1,
    };
    out.push(
        (0..600)
            .map(|_| {
                (0..1000)
                    .map(|_| match r.unit() {
                        u if u < 1e-3 => 20_000.0 + spike.draw(r.unit()),
                        _ => 10_000.0 - 2_000.0 * r.unit().ln(),
                    })
                    .fold(0.0, f64::max)
            })
            .collect(),
    );
    out
}

#[test]
fn the_block_maxima_fit_agrees_with_scipy_genextreme() {
    use rtscope_evt::gev;
    rtscope_testkit::require!(
        rtscope_testkit::python3_imports("scipy"),
        "python3 with scipy (pip install scipy; .ci/run installs it in its venv)"
    );
    let data: Vec<(Vec<f64>, f64)> = block_samples()
        .into_iter()
        .flat_map(|x| [(x.clone(), 0.0), (x, gev::CENSORED_SHARES[1])])
        .collect();
    let input: String = data
        .iter()
        .map(|(x, c)| format!("{}\n", serde_json::json!({"x": x, "censor": c})))
        .collect();
    let lines = scipy_lines(GEV_SCRIPT, &input);
    assert_eq!(lines.len(), data.len());
    for ((x, censor), s) in data.iter().zip(&lines) {
        let f = gev::fit(&gev::Sample::censored(x, *censor)).unwrap();
        let num = |k: &str| s[k].as_f64().unwrap();
        // Our maximum is at least as high as scipy's (the same likelihood)…
        assert!(
            f.log_likelihood >= num("ll") - 1e-3,
            "ours {} < scipy {}",
            f.log_likelihood,
            num("ll")
        );
        // …and at the same place.
        assert!(
            (f.gev.xi - num("xi")).abs() < 0.01,
            "ξ {} vs scipy {}",
            f.gev.xi,
            num("xi")
        );
        for (ours, k) in [(f.gev.mu, "mu"), (f.gev.sigma, "sigma")] {
            assert!(
                (ours / num(k) - 1.0).abs() < 0.01,
                "{k} {ours} vs scipy {}",
                num(k)
            );
        }
        for (q, level) in [1e-2, 1e-4].iter().zip(s["levels"].as_array().unwrap()) {
            let (ours, theirs) = (f.gev.level(*q), level.as_f64().unwrap());
            assert!(
                (ours / theirs - 1.0).abs() < 0.01,
                "level at {q}: {ours} vs scipy {theirs}"
            );
        }
    }
}

/// Runs the Python `script` with `input` on its stdin and reads one JSON value per line it
/// prints (the scipy side of each comparison).
fn scipy_lines(script: &str, input: &str) -> Vec<serde_json::Value> {
    use std::io::Write;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run python3");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "scipy failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
