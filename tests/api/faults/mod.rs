//! Faults (issue 15): the database going away under load, providers and receivers that hang,
//! clients that trickle. Each test drives a real `gateway serve` process (`crate::process`)
//! over real sockets on 127.0.0.1, since timeouts live in the server, not in the app.

mod hanging;
mod held_locks;
mod outage;
mod slow_clients;
