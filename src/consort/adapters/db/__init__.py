"""Database substrate: PostgreSQL binaries, the local cluster, backends and branch databases."""
