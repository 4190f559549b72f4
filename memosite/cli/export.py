"""``memosite export-docs``: the memory section as plain Markdown for MkDocs, Zensical and friends."""

from __future__ import annotations

import click

from memosite.cli._common import App, vault_options


@click.command("export-docs")
@click.argument("directory", metavar="DIR")
@click.option("--prefix", default="memory", show_default=True, help="Folder (and URL prefix) of the memory section.")
@click.option(
    "--include-pending",
    is_flag=True,
    help="Export records that wait for review too, marked unreviewed, with a Review page per project.",
)
@click.option("--author-emails", is_flag=True, help="Publish authors' e-mail addresses (default: their names only).")
@vault_options
def export_docs(app: App, directory: str, prefix: str, include_pending: bool, author_emails: bool) -> None:
    """Write the memory section into the docs folder DIR as plain Markdown pages.

    Records, views, project homes, What changed pages, the Memory page, records.json, the Atom
    feeds and the Memory page's assets, checked for secrets first. Any Material-compatible
    generator (plain MkDocs, Zensical) builds them without memosite's plugin; add the two asset
    lines this command prints to the site's config. Publishes every project (only --project if
    you name it).
    """
    from memosite.site.export import export_docs as run

    result = run(
        app.vault,
        directory,
        prefix=prefix,
        projects=[app.project] if app.project_arg else None,
        include_pending=include_pending,
        author_emails=author_emails,
    )
    payload = result.to_json()
    app.emit(
        payload,
        f"exported {result.records} records of {', '.join(result.projects) or 'no projects'} into"
        f" {result.directory}/{result.prefix} ({len(result.files)} files)\n"
        "add to mkdocs.yml (plain MkDocs or Zensical):\n"
        f"  extra_css: [{payload['extra_css'][0]}]\n"
        f"  extra_javascript: [{payload['extra_javascript'][0]}]\n"
        "  markdown_extensions: [admonition, attr_list, md_in_html, tables, toc]",
    )
