"""Services: the business rules. No HTTP, no SQL."""
