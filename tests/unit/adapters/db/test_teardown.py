"""Which databases and roles on a shared server are one project's: by name *and* by record."""

from __future__ import annotations

import json

from consort.adapters.db.branching import ROLE_COMMENT
from consort.adapters.db.names import map_branch
from consort.adapters.db.teardown import CatalogDatabase, CatalogRole, select_owned


def _record(kind: str, role: str, branch: str | None = None, parent: str | None = None) -> str:
    return json.dumps(
        {"consort": 1, "kind": kind, "role": role, "branch": branch, "parent": parent}
    )


def _branch(namespace: str, branch: str) -> CatalogDatabase:
    names = map_branch(branch, namespace)
    return CatalogDatabase(names.database, _record("branch", names.role, branch=branch))


def _role(name: str, comment: str | None = ROLE_COMMENT) -> CatalogRole:
    return CatalogRole(name, comment)


def test_only_this_projects_records_and_their_roles_are_selected():
    databases = [
        _branch("app_", "main"),
        _branch("app_", "feature/F1-Stock"),
        CatalogDatabase(
            "app_consort_eph_12_ab",
            _record("ephemeral", "app_consort_eph_12_ab_user", parent="app_main"),
        ),
        CatalogDatabase(
            "app_consort_snap_cafe", _record("snapshot", "app_main_user", parent="app_main")
        ),
        CatalogDatabase("app_consort_new_99_ff", None),  # a staging copy a crash left
        # another project whose prefix starts like ours
        _branch("app_x_", "main"),
        CatalogDatabase(
            "app_x_consort_eph_1_aa", _record("ephemeral", "app_x_consort_eph_1_aa_user")
        ),
        # prefixed, but not Consort's, or not what our naming makes
        CatalogDatabase("app_reports", None),
        CatalogDatabase("app_hand_made", _record("branch", "app_hand_made_user", branch="other")),
        CatalogDatabase("postgres", None),
        CatalogDatabase("billing", None),
    ]
    roles = [
        _role("app_main_user"),
        _role(map_branch("feature/F1-Stock", "app_").role),
        _role("app_consort_eph_12_ab_user"),
        _role("app_consort_eph_77_cd_user"),  # orphan of our throwaway child
        _role("app_x_main_user"),
        _role("app_x_consort_eph_1_aa_user"),
        _role("app_reports_user", comment=None),  # not Consort's
        _role("app_hand_made_user"),
        _role("postgres", comment=None),
    ]
    owned = select_owned("app_", databases, roles)
    assert owned.databases == tuple(
        sorted(
            [
                "app_main",
                map_branch("feature/F1-Stock", "app_").database,
                "app_consort_eph_12_ab",
                "app_consort_snap_cafe",
                "app_consort_new_99_ff",
            ]
        )
    )
    assert owned.roles == tuple(
        sorted(
            [
                "app_main_user",
                map_branch("feature/F1-Stock", "app_").role,
                "app_consort_eph_12_ab_user",
                "app_consort_eph_77_cd_user",
            ]
        )
    )


def test_the_other_project_sees_only_its_own():
    databases = [_branch("app_", "main"), _branch("app_x_", "main")]
    roles = [_role("app_main_user"), _role("app_x_main_user")]
    owned = select_owned("app_x_", databases, roles)
    assert owned.databases == ("app_x_main",)
    assert owned.roles == ("app_x_main_user",)


def test_an_internal_name_with_the_wrong_record_is_not_ours():
    # a branch named "eph_1" of a project prefixed "app_consort_" is named like our child
    other = CatalogDatabase(
        "app_consort_eph_1", _record("branch", "app_consort_eph_1_user", branch="eph_1")
    )
    owned = select_owned("app_", [other], [_role("app_consort_eph_1_user")])
    assert owned.databases == ()
    assert owned.roles == ()  # its database is kept, so its role is too


def test_an_empty_namespace_selects_nothing():
    owned = select_owned("", [_branch("", "main")], [_role("main_user")])
    assert owned.databases == () and owned.roles == ()


def test_a_throwaway_child_named_like_a_branch_is_ours_only_through_its_parent():
    from consort.adapters.db.names import child_name

    ours = _branch("app_", "story/F1/S1")
    theirs = _branch("app_x_", "main")
    child = child_name(ours.name, "0badcafe", "app_")
    # another project's child whose name, read with our prefix, is shaped like ours
    their_child = child_name(theirs.name, "1badcafe", "app_x_")
    # a record that names our database as parent, under a name our naming does not make
    forged = "app_story_f1_s1_notahash"
    databases = [
        ours,
        theirs,
        CatalogDatabase(child, _record("ephemeral", child + "_user", parent=ours.name)),
        CatalogDatabase(
            their_child, _record("ephemeral", their_child + "_user", parent=theirs.name)
        ),
        CatalogDatabase(forged, _record("ephemeral", forged + "_user", parent=ours.name)),
    ]
    roles = [_role(child + "_user"), _role(their_child + "_user"), _role(forged + "_user")]
    owned = select_owned("app_", databases, roles)
    assert owned.databases == tuple(sorted([ours.name, child]))
    assert child + "_user" in owned.roles
    assert their_child + "_user" not in owned.roles and forged + "_user" not in owned.roles
