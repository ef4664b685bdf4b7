"""A short readable summary of each design artifact, for the person deciding at a gate: the
stories and their acceptance criteria, the layers and rules, the tables and constraints, the
test list, the pages. Pure: models in, lines out."""

from __future__ import annotations

from consort.core.artifacts import ArtifactModel
from consort.core.artifacts.architecture import Architecture
from consort.core.artifacts.db_design import DbDesign, Table
from consort.core.artifacts.spec import FeatureSpec
from consort.core.artifacts.test_list import TestList
from consort.core.artifacts.ux import UxDesign


def summary_lines(model: ArtifactModel) -> list[str]:
    """The artifact in a few lines (nested lines are indented by two spaces)."""
    if isinstance(model, FeatureSpec):
        return _spec(model)
    if isinstance(model, Architecture):
        return _architecture(model)
    if isinstance(model, DbDesign):
        return _db_design(model)
    if isinstance(model, TestList):
        return [f"{t.id} {t.story}/{t.ac} {t.kind.value}: {t.title}" for t in model.items]
    if isinstance(model, UxDesign):
        return _ux(model)
    return []


def _spec(spec: FeatureSpec) -> list[str]:
    lines = [f"{spec.title}: {spec.summary}"]
    for story in spec.stories:
        lines.append(
            f"{story.id} {story.title}: as {story.as_a}, I want {story.i_want}, "
            f"so that {story.so_that}"
        )
        lines += [
            f"  {ac.id} given {ac.given}; when {ac.when}; then {ac.then} ({ac.layer.value})"
            for ac in story.acceptance_criteria
        ]
    return lines


def _architecture(architecture: Architecture) -> list[str]:
    lines = [
        f"layer {rule.name.value}"
        + (
            f" (imports {', '.join(i.value for i in rule.allowed_imports)})"
            if rule.allowed_imports
            else ""
        )
        + f": {rule.description}"
        for rule in architecture.layers
    ]
    lines += [f"{nfr.id}: {nfr.statement}" for nfr in architecture.nfrs]
    lines += [f"{inv.id}: {inv.statement}" for inv in architecture.persistence_invariants]
    return lines


def _column(table: Table, index: int) -> str:
    column = table.columns[index]
    text = f"{column.name} {column.type}"
    if not column.nullable:
        text += " not null"
    if column.default is not None:
        text += f" default {column.default}"
    return text


def _db_design(design: DbDesign) -> list[str]:
    lines = []
    for table in design.tables:
        columns = ", ".join(_column(table, i) for i in range(len(table.columns)))
        lines.append(f"table {table.name} ({columns})")
        rules = [f"primary key ({', '.join(table.primary_key)})"] if table.primary_key else []
        rules += [f"unique {u.name} ({', '.join(u.columns)})" for u in table.unique]
        rules += [
            f"foreign key {fk.name} ({', '.join(fk.columns)}) -> {fk.references_table}"
            f" ({', '.join(fk.references_columns)}) on delete {fk.on_delete.value}"
            for fk in table.foreign_keys
        ]
        rules += [f"check {c.name}: {c.expression}" for c in table.checks]
        rules += [
            f"{'unique ' if i.unique else ''}index {i.name} ({', '.join(i.columns)})"
            for i in table.indexes
        ]
        lines += [f"  {rule}" for rule in rules]
    lines += [f"{c.story}: {c.description}" for c in design.story_changes]
    return lines


def _ux(ux: UxDesign) -> list[str]:
    lines = []
    for page in ux.pages:
        lines.append(f"page {page.name} {page.route} ({', '.join(page.stories)})")
        lines.append("  components: " + ", ".join(c.name for c in page.components))
        lines.append("  states: " + ", ".join(s.state.value for s in page.states))
    return lines
