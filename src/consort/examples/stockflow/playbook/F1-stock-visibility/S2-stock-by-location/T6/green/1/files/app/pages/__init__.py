"""Pages: the HTML people see, built from service results. No HTTP, no SQL."""
