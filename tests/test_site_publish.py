"""``memosite publish``: a static copy, and a gh-pages branch pushed to a real (local, bare) git remote."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from memosite.cli import cli
from memosite.errors import BuildError, InvalidArguments
from memosite.site.ghpages import github_pages_url, publish_gh_pages
from memosite.store import upsert_record
from memosite.vault import Vault

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

PLANTED_TOKEN = "ghp_" + "Zq8" * 12


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, encoding="utf-8", check=True)
    return done.stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "pages.git"
    _git("init", "--quiet", "--bare", str(bare))
    return bare


@pytest.fixture
def filled(vault: Vault) -> Vault:
    upsert_record(
        vault,
        "shop",
        kind="trap",
        body="Retrying a charge without a key double-charges.",
        frontmatter={"title": "Idempotency keys"},
    )
    return vault


def _files_on(remote: Path, branch: str = "gh-pages") -> set[str]:
    return set(_git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", branch).splitlines())


@pytest.mark.slow
def test_gh_pages_commits_the_built_site_to_the_branch(filled: Vault, remote: Path) -> None:
    result = publish_gh_pages(filled, remote=str(remote))
    files = _files_on(remote)
    assert {"index.html", ".nojekyll", "memory/records.json", "memory/shop/traps/idempotency-keys/index.html"} <= files
    assert _git("--git-dir", str(remote), "rev-parse", "gh-pages") == result.commit
    assert result.parent is None


@pytest.mark.slow
def test_gh_pages_keeps_the_branch_history(filled: Vault, remote: Path) -> None:
    first = publish_gh_pages(filled, remote=str(remote))
    upsert_record(
        filled,
        "shop",
        kind="decision",
        body="Orders live in PostgreSQL.",
        frontmatter={"title": "PostgreSQL for orders"},
    )
    second = publish_gh_pages(filled, remote=str(remote), message="Publish the decision")
    assert second.parent == first.commit
    log = _git("--git-dir", str(remote), "log", "--format=%s", "gh-pages").splitlines()
    assert log[0] == "Publish the decision" and len(log) == 2
    assert "memory/shop/decisions/postgresql-for-orders/index.html" in _files_on(remote)


@pytest.mark.slow
def test_gh_pages_resolves_a_named_remote_of_the_current_repository(
    filled: Vault, remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "product"
    work.mkdir()
    _git("init", "--quiet", cwd=work)
    _git("remote", "add", "origin", str(remote), cwd=work)
    monkeypatch.chdir(work)
    result = CliRunner().invoke(cli, ["publish", "--gh-pages", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["branch"] == "gh-pages" and payload["remote"] == str(remote)
    assert "index.html" in _files_on(remote)
    assert _git("status", "--porcelain", cwd=work) == ""  # the working tree is untouched


def test_gh_pages_with_a_planted_secret_pushes_nothing(filled: Vault, remote: Path) -> None:
    path = filled.record_path("shop", "trap", "idempotency-keys")
    path.write_text(path.read_text(encoding="utf-8") + f"\n{PLANTED_TOKEN}\n", encoding="utf-8")
    with pytest.raises(BuildError, match="GitHub token"):
        publish_gh_pages(filled, remote=str(remote))
    assert _git("--git-dir", str(remote), "branch", "--list") == ""


def test_unknown_remote_name_is_a_clear_error(filled: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["publish", "--gh-pages", "--remote", "upstream"])
    assert result.exit_code == 1
    assert "no git remote named 'upstream'" in result.stderr and "Traceback" not in result.output


def test_publish_needs_exactly_one_destination(filled: Vault) -> None:
    for args in (["publish"], ["publish", "--to", "out", "--gh-pages"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 1 and "--to DIR or --gh-pages" in result.stderr


@pytest.mark.slow
def test_publish_to_writes_a_finished_static_copy(filled: Vault, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["publish", "--to", str(tmp_path / "public"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["records"] == 1
    assert (tmp_path / "public/memory/shop/traps/idempotency-keys/index.html").is_file()
    assert not [p for p in tmp_path.iterdir() if "memosite-" in p.name]


@pytest.mark.parametrize(
    ("url", "pages"),
    [
        ("git@github.com:Acme/handbook.git", "https://acme.github.io/handbook/"),
        ("https://github.com/acme/handbook", "https://acme.github.io/handbook/"),
        ("https://github.com/acme/acme.github.io.git", "https://acme.github.io/"),
        ("/srv/git/pages.git", None),
    ],
)
def test_github_pages_url_follows_the_remote(url: str, pages: str | None) -> None:
    assert github_pages_url(url) == pages


def test_invalid_branch_name_is_rejected(filled: Vault, remote: Path) -> None:
    with pytest.raises(InvalidArguments):
        publish_gh_pages(filled, remote=str(remote), branch="bad..branch")


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["mkdocs", "properdocs", "zensical"])
def test_publish_to_builds_with_the_engine_asked(filled: Vault, tmp_path: Path, engine: str) -> None:
    from memosite.site.engines import installed_engines

    if engine not in installed_engines():
        pytest.skip(f"{engine} is not installed")
    out = tmp_path / "public"
    result = CliRunner().invoke(cli, ["publish", "--to", str(out), "--engine", engine, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["engine"] == engine and payload["records"] == 1
    pages = [path.read_text(encoding="utf-8") for path in out.rglob("index.html")]
    assert any("Retrying a charge without a key double-charges." in page for page in pages)


@pytest.mark.slow
def test_gh_pages_builds_with_the_engine_asked(filled: Vault, remote: Path) -> None:
    from memosite.site.engines import installed_engines

    if "zensical" not in installed_engines():
        pytest.skip("zensical is not installed")
    result = publish_gh_pages(filled, remote=str(remote), engine="zensical")
    files = _files_on(remote)
    assert {"index.html", ".nojekyll"} <= files and result.build.records == 1
    assert any(name.startswith("memory/shop/") for name in files)


def test_publish_names_the_engines_it_knows(filled: Vault, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["publish", "--to", str(tmp_path / "p"), "--engine", "hugo"])
    assert result.exit_code == 2 and "'hugo' is not one of" in result.stderr and not (tmp_path / "p").exists()
