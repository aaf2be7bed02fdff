//! `--explain`: the database's own account of a run, to find where a workload's time goes.
//! The bench's server loads `pg_stat_statements` and `auto_explain` (the plan of every
//! statement over 30 ms, with its timings and buffers, in the server's log), and the run ends
//! with the statements that took most of the database's time, in target/bench/statements.md.
//! With `--only N` that is one workload's (setup included: the contacts it loads, if any).

use super::sql;
use crate::Result;

/// Added to the server's settings.
pub const SETTINGS: &[&str] = &[
    "shared_preload_libraries=pg_stat_statements,auto_explain",
    "pg_stat_statements.track=all",
    "auto_explain.log_min_duration=30",
    "auto_explain.log_analyze=on",
    "auto_explain.log_buffers=on",
    "auto_explain.log_nested_statements=on",
];

/// Statements in the report.
const TOP: i64 = 30;
/// Characters of each statement's text in the report.
const TEXT: usize = 240;

/// Installs the view in a schema of its own, clear of the service's, and starts counting.
pub async fn install(url: &str) -> Result<()> {
    let client = sql::connect(url).await?;
    client
        .batch_execute(
            "CREATE SCHEMA IF NOT EXISTS bench_stats;
             CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA bench_stats;
             SELECT bench_stats.pg_stat_statements_reset();",
        )
        .await?;
    Ok(())
}

/// The statements that took most of the database's time since `install`, as Markdown.
pub async fn report(url: &str) -> Result<String> {
    let client = sql::connect(url).await?;
    let rows = client
        .query(
            "SELECT calls, total_exec_time, mean_exec_time, rows, regexp_replace(query, '\\s+', ' ', 'g')
             FROM bench_stats.pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
             ORDER BY total_exec_time DESC LIMIT $1",
            &[&TOP],
        )
        .await?;
    let mut out =
        String::from("| calls | total ms | mean ms | rows | statement |\n| ---: | ---: | ---: | ---: | --- |\n");
    for row in rows {
        let (calls, total, mean, count, full): (i64, f64, f64, i64, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        let mut text: String = full.chars().take(TEXT).collect();
        if full.chars().count() > TEXT {
            text.push('…');
        }
        let text = text.replace('|', "\\|");
        out.push_str(&format!("| {calls} | {total:.0} | {mean:.2} | {count} | `{text}` |\n"));
    }
    Ok(out)
}
