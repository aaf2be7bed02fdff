//! `--check` and `--save-baseline`: each workload's API/raw ratio against the ratios committed
//! in [`BASELINE`]. Not a gate of CI (the machines are too noisy for a timed gate), but a
//! check to run before resolving an issue: a ratio that fell by more than a third fails it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::report::Report;

/// The committed ratios, written by `cargo xtask bench --quick --save-baseline`.
pub const BASELINE: &str = "xtask/bench-baseline.json";

/// A ratio under this share of its baseline fails the check.
const KEEP: f64 = 2.0 / 3.0;

#[derive(Serialize, Deserialize)]
pub struct Baseline {
    pub date: String,
    /// Whether the ratios come from a `--quick` run (compare like with like).
    pub quick: bool,
    pub ratios: Vec<Ratio>,
}

#[derive(Serialize, Deserialize)]
pub struct Ratio {
    pub number: u8,
    pub name: String,
    pub api_raw_ratio: f64,
}

impl Baseline {
    pub fn of(report: &Report, quick: bool) -> Self {
        let ratios = report
            .workloads
            .iter()
            .map(|w| Ratio { number: w.number, name: w.name.clone(), api_raw_ratio: round(w.api_raw_ratio) })
            .collect();
        Self { date: report.date.clone(), quick, ratios }
    }

    pub fn load(root: &Path) -> Result<Self, String> {
        let path = root.join(BASELINE);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn save(&self, root: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())? + "\n";
        std::fs::write(root.join(BASELINE), text).map_err(|e| format!("{BASELINE}: {e}"))
    }

    /// The comparison as a markdown table, and the rows that fell by more than a third.
    pub fn check(&self, report: &Report, quick: bool) -> (String, Vec<String>) {
        let mut out = format!(
            "API/raw against {BASELINE} ({}, {} run):\n\n| workload | baseline | now | now/baseline | |\n| --- | ---: | ---: | ---: | --- |\n",
            self.date,
            if self.quick { "a --quick" } else { "a full" }
        );
        if self.quick != quick {
            out.push_str("\n(the baseline and this run differ in --quick: their ratios are not alike)\n\n");
        }
        let mut fell = Vec::new();
        for now in &report.workloads {
            let label = format!("{}. {}", now.number, now.name);
            let Some(then) = self.ratios.iter().find(|r| r.number == now.number && r.name == now.name) else {
                out.push_str(&format!("| {label} | - | {:.2} | - | new |\n", now.api_raw_ratio));
                continue;
            };
            let share = now.api_raw_ratio / then.api_raw_ratio;
            let verdict = if share < KEEP {
                fell.push(format!("{label}: {:.2} against {:.2}", now.api_raw_ratio, then.api_raw_ratio));
                "**fell by more than a third**"
            } else {
                "ok"
            };
            out.push_str(&format!(
                "| {label} | {:.2} | {:.2} | {share:.2} | {verdict} |\n",
                then.api_raw_ratio, now.api_raw_ratio
            ));
        }
        (out, fell)
    }
}

fn round(ratio: f64) -> f64 {
    (ratio * 1000.0).round() / 1000.0
}
