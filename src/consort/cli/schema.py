"""`consort schema NAME`: print the JSON Schema an artifact must satisfy. Works anywhere, with or
without a project, so an agent can ask for the schema of the output it is writing."""

from __future__ import annotations

import click

from consort.cli.kit import handled


def register(group: click.Group) -> None:
    group.add_command(schema)


@click.command("schema")
@click.argument("name", required=False)
@click.option("--list", "list_kinds", is_flag=True, help="List the artifact names, one a line.")
@handled
def schema(name: str | None, list_kinds: bool) -> None:
    """Print the JSON Schema of artifact NAME.

    \b
    NAME is one of:
      feature-request  the product owner's request
      feature-spec     stories and acceptance criteria
      architecture     layers, NFRs, persistence invariants
      db-design        tables and each story's schema change
      test-list        the ordered tests T1..Tn
      ux               pages, components, states
      review           the navigator's review verdict
      cycle-plan       the tests a cycle adds and how they fail
    """
    import json

    from consort.app import schema as api
    from consort.app.errors import UsageError

    if list_kinds:
        if name is not None:
            raise UsageError("give either NAME or --list, not both")
        for kind in api.kinds():
            click.echo(kind)
        return
    # Field order is kept (not sorted) so the schema reads in the order an author fills it in.
    click.echo(json.dumps(api.schema(name), indent=2, ensure_ascii=False))
