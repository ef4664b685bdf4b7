"""Suite-wide setup."""

import signal

# A suite started in the background (`cmd &` in a script, some CI runners) inherits SIGINT
# ignored, and so would every child it starts: the tests that press Ctrl-C on a child would
# then wait for an interrupt that is never delivered. Catching it here (pytest's own default)
# gives the children SIGINT's default disposition again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Projects the tests adopt carry their own suites (run by Consort inside them, never by this one).
collect_ignore = ["fixtures"]
