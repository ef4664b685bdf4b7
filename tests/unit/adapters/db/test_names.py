import pytest

from consort.adapters.db.names import IDENTIFIER_BYTES, map_branch
from consort.core.errors import UsageError


def test_plain_identifier_maps_to_itself():
    names = map_branch("main")
    assert names.database == "main"
    assert names.role == "main_user"


def test_other_names_are_sanitised_with_a_stable_hash_suffix():
    first = map_branch("feature/F1-Stock")
    assert first.database.startswith("feature_f1_stock_")
    assert first == map_branch("feature/F1-Stock")  # stable
    assert first != map_branch("feature/f1-stock")  # no collision after lower-casing


def test_names_that_sanitise_alike_do_not_collide():
    assert map_branch("a-b").database != map_branch("a_b").database
    assert map_branch("a.b").database != map_branch("a-b").database


def test_long_names_fit_postgres_identifiers_including_the_role():
    names = map_branch("feature/" + "x" * 300)
    assert len(names.database.encode()) <= IDENTIFIER_BYTES
    assert len(names.role.encode()) <= IDENTIFIER_BYTES
    assert names != map_branch("feature/" + "x" * 299)


def test_non_ascii_names_map_to_ascii_identifiers():
    names = map_branch("fix/größe")
    assert names.database.isascii()
    assert names.database.startswith("fix_gr")


def test_leading_digit_gets_a_prefix():
    assert map_branch("2024-cleanup").database.startswith("b_2024_cleanup_")


@pytest.mark.parametrize(
    "name", ["postgres", "template1", "consort_snap_x", "pg_catalog", "---", ""]
)
def test_unmappable_or_reserved_names_are_refused(name):
    with pytest.raises(UsageError):
        map_branch(name)


def test_namespace_prefixes_database_and_role():
    names = map_branch("main", namespace="shop_")
    assert names.database == "shop_main"
    assert names.role == "shop_main_user"


def test_a_throwaway_child_is_named_like_a_branch_database_of_its_parent():
    from consort.adapters.db.names import child_name

    story = map_branch("story/F1-counter/S1-answers", "app_").database
    child = child_name(story, "0a1b2c3d", "app_")
    # the parent's hash suffix gives way to the child's token: same shape, no marker of a run
    assert child == story[: -len("1234abcd")] + "0a1b2c3d"
    assert "eph" not in child and "consort" not in child
    assert child_name("main", "0a1b2c3d") == "main_0a1b2c3d"
    # a parent whose name ends in something else keeps it
    assert child_name("app_cafe", "0a1b2c3d", "app_") == "app_cafe_0a1b2c3d"
    long_parent = map_branch("feature/" + "x" * 300).database
    assert len((child_name(long_parent, "0a1b2c3d") + "_user").encode()) <= IDENTIFIER_BYTES
    with pytest.raises(ValueError, match="hex"):
        child_name("main", "not-hex!")
