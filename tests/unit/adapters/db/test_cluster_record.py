"""`.consort/db/cluster.json` remembers the `[db] binaries` that made the cluster; a record
written before it did still loads."""

import json

from consort.adapters.db.backend import ClusterRecord


def test_the_record_keeps_the_binaries_that_made_the_cluster(tmp_path):
    path = tmp_path / "cluster.json"
    ClusterRecord("/var/lib/consort/clusters/x", 5433, "consort", "system").save(path)
    assert ClusterRecord.load(path) == ClusterRecord(
        "/var/lib/consort/clusters/x", 5433, "consort", "system"
    )


def test_an_older_record_without_binaries_still_loads(tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"home": "/h", "port": 5433, "run_as": None}))
    assert ClusterRecord.load(path).binaries is None
    ClusterRecord.load(path).save(path)
    assert "binaries" not in json.loads(path.read_text())
