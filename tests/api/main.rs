//! Black-box tests of the composed gateway: real HTTP handling, real PostgreSQL.

mod smoke;
