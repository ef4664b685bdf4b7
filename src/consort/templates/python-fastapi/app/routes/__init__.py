"""Routes: HTTP in and out. They call services, never repositories."""
