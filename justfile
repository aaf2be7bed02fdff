# Short aliases for the xtask commands; arguments pass through (`just test -p kernel`).
# just takes a first `--` for itself: `just test -p kernel -- -- --nocapture`.

# Hand arguments over as they are, spaces and all.
set positional-arguments

# Local PostgreSQL, migrations, a demo key, and the gateway on 127.0.0.1:8080
run *ARGS:
    cargo xtask run "$@"

# Every test against a throwaway PostgreSQL cluster
test *ARGS:
    cargo xtask test "$@"

# What CI runs: format check, clippy with warnings denied, then the tests
ci *ARGS:
    cargo xtask ci "$@"

# Speed and memory against raw SQL
bench *ARGS:
    cargo xtask bench "$@"
