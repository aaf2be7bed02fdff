//! Prometheus metrics: requests by route and status with latency histograms, the job queue's
//! depth and oldest due job, the webhook deliveries waiting, the database pool's use and the key
//! cache.

use prometheus::{
    Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};

#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
    jobs: IntGaugeVec,
    oldest_job: GaugeVec,
    webhooks_pending: IntGaugeVec,
    oldest_delivery: GaugeVec,
    pool: IntGaugeVec,
    auth_cache: IntGaugeVec,
}

impl Metrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new("http_requests_total", "HTTP requests by route pattern, method and status"),
            &["route", "method", "status"],
        )?;
        let latency = HistogramVec::new(
            HistogramOpts::new("http_request_duration_seconds", "HTTP request latency by route pattern")
                .buckets(vec![0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0]),
            &["route", "method"],
        )?;
        let jobs = IntGaugeVec::new(Opts::new("job_queue_jobs", "Jobs in the queue by state"), &["state"])?;
        let oldest_job = GaugeVec::new(
            Opts::new("job_queue_oldest_ready_age_seconds", "How long the oldest due job has waited"),
            &[],
        )?;
        let webhooks_pending = IntGaugeVec::new(
            Opts::new("webhook_deliveries_pending", "Webhook deliveries waiting for an attempt"),
            &[],
        )?;
        let oldest_delivery = GaugeVec::new(
            Opts::new("webhook_oldest_due_age_seconds", "How long the oldest due webhook delivery has waited"),
            &[],
        )?;
        let pool = IntGaugeVec::new(Opts::new("db_pool_connections", "Database pool connections"), &["kind"])?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(latency.clone()))?;
        registry.register(Box::new(jobs.clone()))?;
        registry.register(Box::new(oldest_job.clone()))?;
        registry.register(Box::new(webhooks_pending.clone()))?;
        registry.register(Box::new(oldest_delivery.clone()))?;
        let auth_cache = IntGaugeVec::new(
            Opts::new("auth_cache", "The key cache: hits and misses since start, keys kept, listening (1 or 0)"),
            &["kind"],
        )?;
        registry.register(Box::new(pool.clone()))?;
        registry.register(Box::new(auth_cache.clone()))?;
        Ok(Self { registry, requests, latency, jobs, oldest_job, webhooks_pending, oldest_delivery, pool, auth_cache })
    }

    pub fn observe(&self, route: &str, method: &str, status: u16, seconds: f64) {
        self.requests.with_label_values(&[route, method, &status.to_string()]).inc();
        self.latency.with_label_values(&[route, method]).observe(seconds);
    }

    pub fn set_queue(&self, stats: &store::jobs::QueueStats) {
        self.jobs.with_label_values(&["queued"]).set(stats.queued);
        self.jobs.with_label_values(&["running"]).set(stats.running);
        self.jobs.with_label_values(&["dead"]).set(stats.dead);
        self.oldest_job.with_label_values(&[] as &[&str]).set(stats.oldest_ready_age_seconds);
    }

    pub fn set_webhooks(&self, backlog: &webhooks::deliver::Backlog) {
        self.webhooks_pending.with_label_values(&[] as &[&str]).set(backlog.pending);
        self.oldest_delivery.with_label_values(&[] as &[&str]).set(backlog.oldest_due_age_seconds);
    }

    pub fn set_auth_cache(&self, stats: accounts::key_cache::CacheStats) {
        self.auth_cache.with_label_values(&["hits"]).set(stats.hits as i64);
        self.auth_cache.with_label_values(&["misses"]).set(stats.misses as i64);
        self.auth_cache.with_label_values(&["keys"]).set(stats.keys as i64);
        self.auth_cache.with_label_values(&["listening"]).set(i64::from(stats.listening));
    }

    pub fn set_pool(&self, pool: &store::Pool) {
        let status = pool.status();
        self.pool.with_label_values(&["max"]).set(status.max_size as i64);
        self.pool.with_label_values(&["open"]).set(status.size as i64);
        self.pool.with_label_values(&["idle"]).set(status.available as i64);
        self.pool.with_label_values(&["in_use"]).set(status.size.saturating_sub(status.available) as i64);
        self.pool.with_label_values(&["waiting"]).set(status.waiting as i64);
    }

    pub fn render(&self) -> String {
        let mut out = Vec::new();
        if let Err(error) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!(%error, "encoding metrics failed");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}
