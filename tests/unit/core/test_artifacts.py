"""The typed artifacts: models, validation messages, cross-checks, canonical hashing, schemas and
`consort schema`. The valid examples are the StockFlow artifacts in tests/fixtures/artifacts/."""

import copy
import hashlib
import json
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from consort.cli.main import cli
from consort.core.artifacts import (
    MODELS,
    Architecture,
    ArtifactKind,
    CyclePlan,
    DbDesign,
    FailureKind,
    FeatureRequest,
    FeatureSpec,
    InvalidArtifact,
    Layer,
    NotCanonicalJson,
    ReviewVerdict,
    TestKind,
    TestList,
    UxDesign,
    artifact_hash,
    canonical_json,
    check_db_design_against_spec,
    check_test_list_against_spec,
    check_ux_against_spec,
    condense,
    default_filename,
    json_schema,
    load_artifact,
    parse_kind,
    sha256_canonical,
    validation_errors,
    write_artifact,
)
from consort.core.errors import ExitCode, UsageError
from tests import helpers

FIXTURES = helpers.FIXTURES / "artifacts"


def example(kind: ArtifactKind) -> dict[str, Any]:
    """A fresh, mutable copy of the StockFlow example of `kind`."""
    data: dict[str, Any] = json.loads((FIXTURES / default_filename(kind)).read_text("utf-8"))
    return data


def problems_of(kind: ArtifactKind, data: Any) -> list[str]:
    """The condensed validation problems of `data` as an artifact of `kind` (must be invalid)."""
    with pytest.raises(ValidationError) as caught:
        MODELS[kind].model_validate(data)
    return condense(caught.value)


def assert_rejected(kind: ArtifactKind, data: Any, *fragments: str) -> None:
    text = "\n".join(problems_of(kind, data))
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in:\n{text}"


def spec() -> FeatureSpec:
    return FeatureSpec.model_validate(example(ArtifactKind.FEATURE_SPEC))


# ---- the StockFlow examples ---------------------------------------------------------------


@pytest.mark.parametrize("kind", list(ArtifactKind))
def test_stockflow_example_is_valid(kind):
    path = FIXTURES / default_filename(kind)
    assert validation_errors(kind, path) == []
    model = load_artifact(kind, path)
    assert type(model) is MODELS[kind]
    # A dump re-validates to the same model: nothing is lost or coerced on the way.
    assert MODELS[kind].model_validate(model.model_dump(mode="json")) == model


def test_stockflow_examples_are_consistent_with_the_spec():
    the_spec = spec()
    test_list = TestList.model_validate(example(ArtifactKind.TEST_LIST))
    design = DbDesign.model_validate(example(ArtifactKind.DB_DESIGN))
    ux = UxDesign.model_validate(example(ArtifactKind.UX))
    assert check_test_list_against_spec(test_list, the_spec) == []
    assert check_db_design_against_spec(design, the_spec) == []
    assert check_ux_against_spec(ux, the_spec) == []


def test_loaded_models_are_typed_and_navigable():
    the_spec = load_artifact(ArtifactKind.FEATURE_SPEC, FIXTURES / "feature-spec.json")
    story = the_spec.story("S2")
    assert story is not None
    assert story.key == "S2-stock-by-location"
    assert [ac.id for _, ac in the_spec.criteria()][:3] == ["AC1", "AC2", "AC3"]
    assert story.acceptance_criteria[1].layer is Layer.UI
    request = load_artifact(ArtifactKind.FEATURE_REQUEST, FIXTURES / "feature-request.json")
    assert request.key == "F1-stock-visibility"
    test_list = load_artifact(ArtifactKind.TEST_LIST, FIXTURES / "test-list.json")
    assert [i.id for i in test_list.for_story("S1")] == ["T1", "T2", "T3", "T4"]
    assert test_list.items[-1].kind is TestKind.E2E
    plan = load_artifact(ArtifactKind.CYCLE_PLAN, FIXTURES / "cycle-plan.json")
    assert plan.expected_failure.kind is FailureKind.ASSERTION


def test_models_are_immutable():
    request = FeatureRequest.model_validate(example(ArtifactKind.FEATURE_REQUEST))
    with pytest.raises(ValidationError):
        request.title = "changed"  # type: ignore[misc]


# ---- feature request ----------------------------------------------------------------------


def test_feature_request_rejects_unknown_keys():
    data = example(ArtifactKind.FEATURE_REQUEST) | {"priority": "high"}
    assert_rejected(ArtifactKind.FEATURE_REQUEST, data, "priority: Extra inputs are not permitted")


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("user_facing", "yes", "user_facing: Input should be a valid boolean"),
        ("user_facing", 1, "user_facing: Input should be a valid boolean"),
        ("created", "2025-03-04T09:15:00", "created: Input should have timezone info"),
        ("id", "F0", "id: String should match pattern"),
        ("id", "feature-1", "id: String should match pattern"),
        ("slug", "Stock Visibility", "slug: String should match pattern"),
        ("text", "   ", "text: must not be blank"),
    ],
)
def test_feature_request_rejects_bad_fields(field, value, fragment):
    data = example(ArtifactKind.FEATURE_REQUEST) | {field: value}
    assert_rejected(ArtifactKind.FEATURE_REQUEST, data, fragment)


def test_feature_request_needs_the_product_owners_text():
    data = example(ArtifactKind.FEATURE_REQUEST)
    del data["text"]
    assert_rejected(ArtifactKind.FEATURE_REQUEST, data, "text: Field required")


# ---- feature spec -------------------------------------------------------------------------


def test_spec_needs_a_story():
    data = example(ArtifactKind.FEATURE_SPEC) | {"stories": []}
    assert_rejected(ArtifactKind.FEATURE_SPEC, data, "stories: List should have at least 1 item")


def test_every_story_needs_an_acceptance_criterion():
    data = example(ArtifactKind.FEATURE_SPEC)
    data["stories"][1]["acceptance_criteria"] = []
    assert_rejected(
        ArtifactKind.FEATURE_SPEC,
        data,
        "stories[1].acceptance_criteria: List should have at least 1 item",
    )


def test_story_ids_are_unique():
    data = example(ArtifactKind.FEATURE_SPEC)
    data["stories"][2]["id"] = "S1"
    assert_rejected(ArtifactKind.FEATURE_SPEC, data, "story id S1 is used by more than one story")


def test_ac_ids_are_unique_across_the_feature_not_only_the_story():
    data = example(ArtifactKind.FEATURE_SPEC)
    data["stories"][2]["acceptance_criteria"][0]["id"] = "AC1"  # AC1 is in story S1
    assert_rejected(ArtifactKind.FEATURE_SPEC, data, "acceptance criterion id AC1 is used more")


@pytest.mark.parametrize("bad_id", ["S1-AC1", "ac1", "AC0", "AC", "AC-1"])
def test_ac_ids_are_well_formed(bad_id):
    data = example(ArtifactKind.FEATURE_SPEC)
    data["stories"][0]["acceptance_criteria"][0]["id"] = bad_id
    assert_rejected(
        ArtifactKind.FEATURE_SPEC,
        data,
        "stories[0].acceptance_criteria[0].id: String should match pattern",
    )


def test_ac_layer_must_be_a_known_layer():
    data = example(ArtifactKind.FEATURE_SPEC)
    data["stories"][0]["acceptance_criteria"][1]["layer"] = "controller"
    assert_rejected(
        ArtifactKind.FEATURE_SPEC,
        data,
        "stories[0].acceptance_criteria[1].layer: Input should be 'route'",
    )


def test_acceptance_criteria_need_given_when_then():
    data = example(ArtifactKind.FEATURE_SPEC)
    del data["stories"][0]["acceptance_criteria"][0]["then"]
    data["stories"][0]["acceptance_criteria"][1]["when"] = ""
    assert_rejected(
        ArtifactKind.FEATURE_SPEC,
        data,
        "stories[0].acceptance_criteria[0].then: Field required",
        "stories[0].acceptance_criteria[1].when: String should have at least 1 character",
    )


# ---- architecture -------------------------------------------------------------------------


def test_allowed_imports_must_name_declared_layers():
    data = example(ArtifactKind.ARCHITECTURE)
    data["layers"] = [rule for rule in data["layers"] if rule["name"] != "repository"]
    assert_rejected(
        ArtifactKind.ARCHITECTURE,
        data,
        "layers: layer service may import repository, which is not a declared layer",
    )


def test_a_layer_cannot_import_itself_or_be_declared_twice():
    data = example(ArtifactKind.ARCHITECTURE)
    data["layers"][0]["allowed_imports"].append("route")
    data["layers"].append(copy.deepcopy(data["layers"][-1]))
    assert_rejected(
        ArtifactKind.ARCHITECTURE,
        data,
        "layer route lists itself in allowed_imports",
        "layer migration is declared more than once",
    )


def test_fitness_checks_are_a_command_or_a_test():
    data = example(ArtifactKind.ARCHITECTURE)
    data["nfrs"][0]["fitness_check"] = {"kind": "vibes", "test": "x"}
    data["nfrs"][1]["fitness_check"]["argv"] = []
    assert_rejected(
        ArtifactKind.ARCHITECTURE,
        data,
        "nfrs[0].fitness_check: Input tag 'vibes' found using 'kind' does not match",
        "nfrs[1].fitness_check.command.argv: List should have at least 1 item",
    )


def test_nfr_and_invariant_ids_are_unique_and_well_formed():
    data = example(ArtifactKind.ARCHITECTURE)
    data["nfrs"][1]["id"] = "NFR1"
    data["persistence_invariants"][0]["id"] = "I1"
    assert_rejected(
        ArtifactKind.ARCHITECTURE,
        data,
        "nfrs: NFR id NFR1 is used more than once",
        "persistence_invariants[0].id: String should match pattern",
    )


# ---- db design ----------------------------------------------------------------------------


def stock_records(data: dict[str, Any]) -> dict[str, Any]:
    table: dict[str, Any] = next(t for t in data["tables"] if t["name"] == "stock_records")
    return table


def test_foreign_keys_must_point_at_declared_tables():
    data = example(ArtifactKind.DB_DESIGN)
    data["tables"] = [t for t in data["tables"] if t["name"] != "locations"]
    assert_rejected(
        ArtifactKind.DB_DESIGN,
        data,
        "foreign key stock_records_location_id_fkey: references undeclared table locations",
    )


def test_foreign_keys_must_point_at_declared_columns():
    data = example(ArtifactKind.DB_DESIGN)
    stock_records(data)["foreign_keys"][0]["references_columns"] = ["sku_code"]
    assert_rejected(ArtifactKind.DB_DESIGN, data, "references unknown column skus.sku_code")


def test_foreign_keys_must_point_at_a_unique_key():
    data = example(ArtifactKind.DB_DESIGN)
    stock_records(data)["foreign_keys"][0]["references_columns"] = ["name"]
    assert_rejected(
        ArtifactKind.DB_DESIGN, data, "skus(name) is neither the primary key nor a unique key"
    )


def test_foreign_key_column_counts_must_match():
    data = example(ArtifactKind.DB_DESIGN)
    stock_records(data)["foreign_keys"][0]["columns"] = ["sku_id", "location_id"]
    assert_rejected(ArtifactKind.DB_DESIGN, data, "2 column(s) reference 1")


def test_a_foreign_keys_own_columns_must_exist():
    data = example(ArtifactKind.DB_DESIGN)
    stock_records(data)["foreign_keys"][0]["columns"] = ["sku"]
    assert_rejected(
        ArtifactKind.DB_DESIGN,
        data,
        "tables[2]: foreign key stock_records_sku_id_fkey lists unknown column sku",
    )


def test_primary_key_columns_exist_and_are_not_nullable():
    data = example(ArtifactKind.DB_DESIGN)
    data["tables"][0]["primary_key"] = ["sku_id"]
    data["tables"][1]["columns"][0]["nullable"] = True
    assert_rejected(
        ArtifactKind.DB_DESIGN,
        data,
        "tables[0]: primary key lists unknown column sku_id",
        "tables[1]: primary key column id cannot be nullable",
    )


def test_columns_and_object_names_are_unique():
    data = example(ArtifactKind.DB_DESIGN)
    data["tables"][0]["columns"].append({"name": "code", "type": "text", "nullable": False})
    assert_rejected(
        ArtifactKind.DB_DESIGN, data, "tables[0]: column code is declared more than once"
    )
    data = example(ArtifactKind.DB_DESIGN)
    data["tables"][1]["unique"][0]["name"] = "skus_code_key"
    assert_rejected(
        ArtifactKind.DB_DESIGN,
        data,
        "name skus_code_key is used by more than one table, constraint or index",
    )


def test_set_null_needs_a_nullable_column():
    data = example(ArtifactKind.DB_DESIGN)
    stock_records(data)["foreign_keys"][1]["on_delete"] = "set null"
    assert_rejected(ArtifactKind.DB_DESIGN, data, "sets location_id to null on delete")


def test_story_changes_touch_declared_tables_once_per_story():
    data = example(ArtifactKind.DB_DESIGN)
    data["story_changes"][1]["tables"] = ["stock_levels"]
    data["story_changes"].append(copy.deepcopy(data["story_changes"][0]))
    assert_rejected(
        ArtifactKind.DB_DESIGN,
        data,
        "story_changes[1].tables: stock_levels is not a declared table",
        "story S1 has more than one entry",
    )


def test_sql_names_are_plain_identifiers():
    data = example(ArtifactKind.DB_DESIGN)
    data["tables"][0]["name"] = "Stock Records"
    assert_rejected(ArtifactKind.DB_DESIGN, data, "tables[0].name: String should match pattern")


def test_db_design_cross_check_finds_unknown_stories():
    design = DbDesign.model_validate(
        example(ArtifactKind.DB_DESIGN)
        | {
            "story_changes": [
                {"story": "S9", "description": "d", "tables": ["skus"], "migration": "m"}
            ]
        }
    )
    assert check_db_design_against_spec(design, spec()) == [
        "story_changes[0]: story S9 is not in the feature spec"
    ]


# ---- test list ----------------------------------------------------------------------------


def test_test_list_ids_are_exactly_t1_to_tn_in_order():
    data = example(ArtifactKind.TEST_LIST)
    data["items"][1], data["items"][2] = data["items"][2], data["items"][1]
    assert_rejected(
        ArtifactKind.TEST_LIST,
        data,
        "items[1] has id T3, expected T2",
        "items[2] has id T2, expected T3",
    )


def test_test_list_cannot_skip_or_start_late():
    data = example(ArtifactKind.TEST_LIST)
    del data["items"][0]
    assert_rejected(ArtifactKind.TEST_LIST, data, "items[0] has id T2, expected T1")


def test_test_list_kind_is_behaviour_fitness_or_e2e():
    data = example(ArtifactKind.TEST_LIST)
    data["items"][0]["kind"] = "unit"
    assert_rejected(
        ArtifactKind.TEST_LIST,
        data,
        "items[0].kind: Input should be 'behaviour', 'fitness' or 'e2e'",
    )


def test_test_list_needs_items():
    data = example(ArtifactKind.TEST_LIST) | {"items": []}
    assert_rejected(ArtifactKind.TEST_LIST, data, "items: List should have at least 1 item")


def test_cross_check_finds_every_kind_of_mismatch():
    data = example(ArtifactKind.TEST_LIST)
    data["items"][0]["story"] = "S7"  # unknown story
    data["items"][1]["ac"] = "AC42"  # unknown AC
    data["items"][2]["ac"] = "AC5"  # AC5 belongs to S2, the item says S1
    data["items"] = data["items"][:7]  # AC8 is no longer tested
    problems = check_test_list_against_spec(TestList.model_validate(data), spec())
    assert problems == [
        "T1: story S7 is not in the feature spec",
        "T2: acceptance criterion AC42 is not in the feature spec",
        "T3: acceptance criterion AC5 belongs to story S2, not S1",
        "acceptance criterion AC2 (story S1) has no test-list item",
        "acceptance criterion AC3 (story S1) has no test-list item",
        "acceptance criterion AC8 (story S3) has no test-list item",
    ]


def test_cross_check_finds_another_features_test_list():
    data = example(ArtifactKind.TEST_LIST) | {"feature": "F2"}
    problems = check_test_list_against_spec(TestList.model_validate(data), spec())
    assert problems == ["the test list is for feature F2, the feature spec for F1"]


# ---- ux -----------------------------------------------------------------------------------


def test_every_page_has_a_ready_state_listed_once():
    data = example(ArtifactKind.UX)
    data["pages"][0]["states"] = [s for s in data["pages"][0]["states"] if s["state"] != "ready"]
    data["pages"][1]["states"].append({"state": "loading", "description": "again"})
    assert_rejected(
        ArtifactKind.UX,
        data,
        'pages[0].states: the "ready" state is missing',
        "pages[1].states: state loading is listed more than once",
    )


def test_pages_have_unique_routes_that_start_with_a_slash():
    data = example(ArtifactKind.UX)
    data["pages"][1]["route"] = data["pages"][0]["route"]
    assert_rejected(ArtifactKind.UX, data, "route /locations/{code}/stock is used by more than")
    data = example(ArtifactKind.UX)
    data["pages"][0]["route"] = "locations"
    assert_rejected(ArtifactKind.UX, data, "pages[0].route: String should match pattern")


def test_ux_state_must_be_a_known_state():
    data = example(ArtifactKind.UX)
    data["pages"][0]["states"][0]["state"] = "spinning"
    assert_rejected(ArtifactKind.UX, data, "pages[0].states[0].state: Input should be 'loading'")


def test_ux_cross_check_finds_unknown_stories():
    data = example(ArtifactKind.UX)
    data["pages"][0]["stories"] = ["S4"]
    problems = check_ux_against_spec(UxDesign.model_validate(data), spec())
    assert problems == ["page 'Stock by location': story S4 is not in the feature spec"]


# ---- review verdict and cycle plan --------------------------------------------------------


def test_refactor_verdict_needs_reasons_approve_does_not():
    assert_rejected(
        ArtifactKind.REVIEW,
        {"verdict": "refactor", "reasons": []},
        "reasons: a refactor verdict needs at least one reason",
    )
    assert ReviewVerdict.model_validate({"verdict": "approve"}).reasons == []
    assert_rejected(ArtifactKind.REVIEW, {"verdict": "lgtm"}, "verdict: Input should be")


def test_cycle_plan_pattern_must_compile():
    data = example(ArtifactKind.CYCLE_PLAN)
    data["expected_failure"]["message_pattern"] = "assert (404"
    assert_rejected(
        ArtifactKind.CYCLE_PLAN,
        data,
        "expected_failure.message_pattern: is not a valid regular expression: missing )",
    )


def test_cycle_plan_pattern_with_braces_is_kept_verbatim():
    data = example(ArtifactKind.CYCLE_PLAN)
    data["expected_failure"] = {"kind": "error", "message_pattern": r"No module named '\w{3,}'"}
    plan = CyclePlan.model_validate(data)
    assert plan.expected_failure.message_pattern == r"No module named '\w{3,}'"
    assert plan.expected_failure.kind is FailureKind.ERROR


@pytest.mark.parametrize("path", ["/abs/tests/test_x.py", "../tests/test_x.py", "tests\\test_x.py"])
def test_cycle_plan_test_files_are_project_relative(path):
    data = example(ArtifactKind.CYCLE_PLAN) | {"test_files": [path]}
    assert_rejected(ArtifactKind.CYCLE_PLAN, data, "test_files[0]: must be")


def test_cycle_plan_test_ids_live_in_the_declared_files():
    data = example(ArtifactKind.CYCLE_PLAN)
    data["test_ids"].append("tests/test_other.py::test_something")
    assert_rejected(
        ArtifactKind.CYCLE_PLAN,
        data,
        "test_ids[1]: tests/test_other.py::test_something is not in one of test_files",
    )


def test_cycle_plan_failure_kind_is_assertion_or_error():
    data = example(ArtifactKind.CYCLE_PLAN)
    data["expected_failure"]["kind"] = "timeout"
    assert_rejected(
        ArtifactKind.CYCLE_PLAN,
        data,
        "expected_failure.kind: Input should be 'assertion' or 'error'",
    )


# ---- registry and loading -----------------------------------------------------------------


def test_registry_covers_every_kind_with_the_design_file_names():
    assert set(MODELS) == set(ArtifactKind)
    assert {kind: default_filename(kind) for kind in ArtifactKind} == {
        ArtifactKind.FEATURE_REQUEST: "feature-request.json",
        ArtifactKind.FEATURE_SPEC: "feature-spec.json",
        ArtifactKind.ARCHITECTURE: "architecture.json",
        ArtifactKind.DB_DESIGN: "db-design.json",
        ArtifactKind.TEST_LIST: "test-list.json",
        ArtifactKind.UX: "ux.json",
        ArtifactKind.REVIEW: "review.json",
        ArtifactKind.CYCLE_PLAN: "cycle-plan.json",
    }
    assert MODELS[ArtifactKind.ARCHITECTURE] is Architecture


def test_parse_kind_lists_valid_names_on_a_typo():
    assert parse_kind("db-design") is ArtifactKind.DB_DESIGN
    with pytest.raises(UsageError) as caught:
        parse_kind("db_design")
    assert caught.value.code is ExitCode.USAGE
    assert caught.value.fix is not None
    for kind in ArtifactKind:
        assert kind.value in caught.value.fix


def test_load_names_the_file_and_each_rule(tmp_path):
    data = example(ArtifactKind.FEATURE_SPEC)
    data["stories"][0]["acceptance_criteria"] = []
    data["stories"][1]["id"] = "story-2"
    path = tmp_path / "feature-spec.json"
    path.write_text(json.dumps(data), "utf-8")
    with pytest.raises(InvalidArtifact) as caught:
        load_artifact(ArtifactKind.FEATURE_SPEC, path)
    error = caught.value
    assert error.code is ExitCode.ERROR
    assert str(path) in error.message
    assert "not a valid feature-spec artifact" in error.message
    assert error.problems == [
        "stories[0].acceptance_criteria: List should have at least 1 item after validation, not 0",
        "stories[1].id: String should match pattern '^S[1-9][0-9]*$'",
    ]
    assert error.fix == "`consort schema feature-spec` prints the schema it must follow"
    assert validation_errors(ArtifactKind.FEATURE_SPEC, path) == error.problems


def test_invalid_json_is_reported_with_line_and_column(tmp_path):
    path = tmp_path / "review.json"
    path.write_text('{\n  "verdict": "approve",\n  "reasons": [,]\n}\n', "utf-8")
    assert validation_errors(ArtifactKind.REVIEW, path) == [
        "invalid JSON at line 3 column 15: Expecting value"
    ]
    with pytest.raises(InvalidArtifact, match="line 3 column 15"):
        load_artifact(ArtifactKind.REVIEW, path)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"verdict": "approve", "verdict": "refactor"}', "duplicate key 'verdict'"),
        ('{"verdict": "approve", "score": NaN}', "NaN is not a JSON number"),
        ("", "line 1 column 1"),
        ('["approve"]', "(top level): Input should be a valid dictionary or instance"),
    ],
)
def test_malformed_files_give_feedback_instead_of_raising(tmp_path, text, fragment):
    path = tmp_path / "review.json"
    path.write_text(text, "utf-8")
    problems = validation_errors(ArtifactKind.REVIEW, path)
    assert len(problems) == 1
    assert fragment in problems[0]


def test_missing_and_non_utf8_files(tmp_path):
    missing = tmp_path / "nowhere.json"
    assert validation_errors(ArtifactKind.UX, missing) == ["file not found"]
    with pytest.raises(InvalidArtifact, match=r"nowhere\.json is not a valid ux artifact"):
        load_artifact(ArtifactKind.UX, missing)
    latin1 = tmp_path / "ux.json"
    latin1.write_bytes('{"feature": "F1", "pages": "caf\u00e9"}'.encode("latin-1"))
    assert validation_errors(ArtifactKind.UX, latin1)[0].startswith("not UTF-8 text")


def test_write_then_load_round_trips(tmp_path):
    original = load_artifact(ArtifactKind.DB_DESIGN, FIXTURES / "db-design.json")
    path = tmp_path / "out" / "db-design.json"
    write_artifact(path, original)
    assert load_artifact(ArtifactKind.DB_DESIGN, path) == original


# ---- canonical hashing --------------------------------------------------------------------


def test_canonical_form_is_sorted_compact_utf8():
    value = {"b": 1, "a": [True, None, "caf\u00e9"], "c": {"z": 0.5, "y": "x"}}
    assert canonical_json(value) == '{"a":[true,null,"café"],"b":1,"c":{"y":"x","z":0.5}}'.encode()


def test_sha256_is_of_the_canonical_bytes():
    assert sha256_canonical({}) == hashlib.sha256(b"{}").hexdigest()
    value = {"k": ["v", 1]}
    assert sha256_canonical(value) == hashlib.sha256(b'{"k":["v",1]}').hexdigest()


def test_hash_ignores_key_order_and_whitespace(tmp_path):
    data = example(ArtifactKind.FEATURE_SPEC)
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(data, separators=(",", ":")), "utf-8")
    reordered = tmp_path / "reordered.json"
    reversed_data = {key: data[key] for key in reversed(list(data))}
    reordered.write_text("\n\n" + json.dumps(reversed_data, indent=7) + "\n   \n", "utf-8")
    assert artifact_hash(compact) == artifact_hash(reordered)
    assert artifact_hash(compact) == artifact_hash(FIXTURES / "feature-spec.json")
    assert artifact_hash(compact) == sha256_canonical(data)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["stories"][0]["acceptance_criteria"][0].update(then="answers 200"),
        lambda d: d.update(title=d["title"] + " "),
        lambda d: d["stories"].reverse(),
        lambda d: d["stories"][0]["acceptance_criteria"].pop(),
        lambda d: d.update(extra=None),
        lambda d: d["stories"][0].update(id="S1\u200b"),  # an invisible character
    ],
)
def test_any_content_change_changes_the_hash(tmp_path, change):
    data = example(ArtifactKind.FEATURE_SPEC)
    before = sha256_canonical(data)
    change(data)
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(data, indent=2), "utf-8")
    assert artifact_hash(path) != before


def test_numbers_keep_their_json_type():
    assert sha256_canonical({"n": 1}) != sha256_canonical({"n": 1.0})
    assert sha256_canonical({"n": True}) != sha256_canonical({"n": 1})


def test_unicode_hashes_the_same_however_it_is_escaped(tmp_path):
    literal = tmp_path / "literal.json"
    literal.write_text('{"name": "Lager Süd \u2013 東京"}', "utf-8")  # an en dash
    escaped = tmp_path / "escaped.json"
    escaped.write_text('{"name": "Lager S\\u00fcd \\u2013 \\u6771\\u4eac"}', "utf-8")
    assert artifact_hash(literal) == artifact_hash(escaped)
    assert canonical_json({"name": "Süd"}) == b'{"name":"S\xc3\xbcd"}'
    # Composed and decomposed forms are different text, so they hash differently: no silent
    # normalisation that would let a change pass unnoticed.
    assert sha256_canonical("S\u00fcd") != sha256_canonical("Su\u0308d")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinity_have_no_canonical_form(bad):
    with pytest.raises(NotCanonicalJson):
        canonical_json({"quantity": bad})


def test_non_json_values_are_refused():
    with pytest.raises(NotCanonicalJson):
        canonical_json({"tags": {"a", "b"}})
    with pytest.raises(NotCanonicalJson):
        canonical_json({"text": "\ud800"})  # a lone surrogate is not encodable as UTF-8


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"quantity": NaN}', "NaN is not a JSON number"),
        ('{"quantity": -Infinity}', "-Infinity is not a JSON number"),
        ('{"a": 1, "a": 2}', "duplicate key 'a'"),
        ('{"a": 1,}', "line 1 column 9"),
    ],
)
def test_files_without_a_canonical_form_name_the_file(tmp_path, text, fragment):
    path = tmp_path / "bad.json"
    path.write_text(text, "utf-8")
    with pytest.raises(NotCanonicalJson) as caught:
        artifact_hash(path)
    assert str(path) in caught.value.message
    assert fragment in caught.value.message


def test_hash_of_a_missing_file_names_it(tmp_path):
    with pytest.raises(NotCanonicalJson, match=r"gone\.json not found"):
        artifact_hash(tmp_path / "gone.json")


# ---- JSON Schemas -------------------------------------------------------------------------


def object_schemas(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = [("(top)", schema)]
    found += [(name, sub) for name, sub in schema.get("$defs", {}).items() if "properties" in sub]
    return found


@pytest.mark.parametrize("kind", list(ArtifactKind))
def test_schema_is_json_and_round_trips(kind):
    schema = json_schema(kind)
    text = json.dumps(schema, ensure_ascii=False)
    assert json.loads(text) == schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "object"
    assert schema["title"] == MODELS[kind].__name__
    assert set(schema["properties"]) == set(MODELS[kind].model_fields)


@pytest.mark.parametrize("kind", list(ArtifactKind))
def test_schema_is_closed_and_described_for_agents(kind):
    schema = json_schema(kind)
    for name, sub in object_schemas(schema):
        assert sub.get("additionalProperties") is False, f"{name} accepts unknown keys"
        assert sub.get("description"), f"{name} has no description"
        for field, prop in sub["properties"].items():
            assert prop.get("description"), f"{name}.{field} has no description"
    for name, sub in schema.get("$defs", {}).items():
        if "enum" in sub:
            assert sub.get("description"), f"enum {name} has no description"


@pytest.mark.parametrize("kind", list(ArtifactKind))
def test_schema_requires_what_the_model_requires(kind):
    schema = json_schema(kind)
    required = {name for name, field in MODELS[kind].model_fields.items() if field.is_required()}
    assert set(schema.get("required", [])) == required
    # The valid example uses only keys the schema declares.
    assert set(example(kind)) <= set(schema["properties"])


def test_schema_carries_the_id_patterns_and_enums_agents_must_follow():
    spec_schema = json_schema(ArtifactKind.FEATURE_SPEC)
    criterion = spec_schema["$defs"]["AcceptanceCriterion"]
    assert criterion["properties"]["id"]["pattern"] == "^AC[1-9][0-9]*$"
    assert spec_schema["$defs"]["Layer"]["enum"] == [layer.value for layer in Layer]
    test_list_schema = json_schema(ArtifactKind.TEST_LIST)
    assert test_list_schema["$defs"]["TestKind"]["enum"] == ["behaviour", "fitness", "e2e"]


# ---- consort schema -----------------------------------------------------------------------


@pytest.fixture
def run_cli(tmp_path, monkeypatch):
    """Run `consort ...` from an empty folder: no project anywhere near."""
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> Any:
        return CliRunner().invoke(cli, list(args))

    return run


def test_cli_lists_the_kinds(run_cli):
    result = run_cli("schema", "--list")
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == [kind.value for kind in ArtifactKind]


@pytest.mark.parametrize("kind", list(ArtifactKind))
def test_cli_prints_the_schema_outside_a_project(kind, run_cli):
    result = run_cli("schema", kind.value)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json_schema(kind)


def test_cli_unknown_name_is_a_usage_error_listing_valid_names(run_cli):
    result = run_cli("schema", "feature_spec")
    assert result.exit_code == ExitCode.USAGE
    assert result.stdout == ""
    message = " ".join(result.stderr.split())
    assert "unknown artifact kind 'feature_spec'" in message
    for kind in ArtifactKind:
        assert kind.value in message


@pytest.mark.parametrize("args", [("schema",), ("schema", "ux", "--list")])
def test_cli_needs_exactly_one_of_name_and_list(args, run_cli):
    result = run_cli(*args)
    assert result.exit_code == ExitCode.USAGE
    assert "error" in result.stderr


def test_cli_help_names_every_kind(run_cli):
    result = run_cli("schema", "--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    for kind in ArtifactKind:
        assert kind.value in text
