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
        Command::new("python3")
            .args(["-c", "import scipy"])
            .output()
            .is_ok_and(|o| o.status.success()),
        "python3 with scipy (pip install scipy; .ci/run installs it in its venv)"
    );
    let data = samples();
    let input: String = data
        .iter()
        .map(|y| format!("{}\n", serde_json_line(y)))
        .collect();
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run python3");
    use std::io::Write;
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
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
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
