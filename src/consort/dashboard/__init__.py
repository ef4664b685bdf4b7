"""`consort dashboard`: a live web view of the project over the command API, on 127.0.0.1 only,
updated by server-sent events as the ledger grows."""
