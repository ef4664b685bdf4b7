"""The command line: click only, over the command API in `consort.app`."""
