"""Checks across artifacts: each later design artifact against the feature spec it builds on.

Each check returns the problems it finds as sentences (empty: consistent), for an agent's
feedback or a gate's report; none raises.
"""

from __future__ import annotations

from consort.core.artifacts.db_design import DbDesign
from consort.core.artifacts.spec import FeatureSpec
from consort.core.artifacts.test_list import TestList
from consort.core.artifacts.ux import UxDesign


def check_test_list_against_spec(test_list: TestList, spec: FeatureSpec) -> list[str]:
    """Items that name an unknown story or AC (or an AC of another story), and ACs no item tests."""
    problems = _feature_problems("test list", test_list.feature, spec)
    story_of_ac = {ac.id: story.id for story, ac in spec.criteria()}
    story_ids = {story.id for story in spec.stories}
    for item in test_list.items:
        if item.story not in story_ids:
            problems.append(f"{item.id}: story {item.story} is not in the feature spec")
        owner = story_of_ac.get(item.ac)
        if owner is None:
            problems.append(f"{item.id}: acceptance criterion {item.ac} is not in the feature spec")
        elif item.story in story_ids and owner != item.story:
            problems.append(
                f"{item.id}: acceptance criterion {item.ac} belongs to story {owner}, "
                f"not {item.story}"
            )
    tested = {item.ac for item in test_list.items}
    problems += [
        f"acceptance criterion {ac.id} (story {story.id}) has no test-list item"
        for story, ac in spec.criteria()
        if ac.id not in tested
    ]
    return problems


def check_db_design_against_spec(design: DbDesign, spec: FeatureSpec) -> list[str]:
    """Story changes that name a story the spec does not have."""
    problems = _feature_problems("db design", design.feature, spec)
    story_ids = {story.id for story in spec.stories}
    problems += [
        f"story_changes[{index}]: story {change.story} is not in the feature spec"
        for index, change in enumerate(design.story_changes)
        if change.story not in story_ids
    ]
    return problems


def check_ux_against_spec(ux: UxDesign, spec: FeatureSpec) -> list[str]:
    """Pages that serve a story the spec does not have."""
    problems = _feature_problems("ux design", ux.feature, spec)
    story_ids = {story.id for story in spec.stories}
    problems += [
        f"page {page.name!r}: story {sid} is not in the feature spec"
        for page in ux.pages
        for sid in page.stories
        if sid not in story_ids
    ]
    return problems


def _feature_problems(what: str, feature: str, spec: FeatureSpec) -> list[str]:
    if feature == spec.feature:
        return []
    return [f"the {what} is for feature {feature}, the feature spec for {spec.feature}"]
