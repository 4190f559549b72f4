"""A realistic sample vault, so a newcomer sees memosite's output at once (``memosite demo``)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memosite.errors import InvalidArguments
from memosite.freshness import Cite, parse_cite_spec, span_digest, split_lines
from memosite.mutation import Mutation, mutation
from memosite.schema import format_iso, utc_now
from memosite.store import append_event, derive_slug, upsert_record
from memosite.sync.paths import sidecar_path
from memosite.userdirs import user_data_dir
from memosite.vault import CONFLICT_MARK, Vault
from memosite.verify import verify_project

if TYPE_CHECKING:
    from memosite.agentfiles.compile import CompilePlan

DEMO_PROJECT = "acme-shop"


@dataclass(frozen=True)
class _Seed:
    kind: str
    days_ago: float
    body: str
    frontmatter: dict[str, Any]
    path: str | None = None
    cites: tuple[str, ...] = ()  # code of the demo repository the record cites (PATH:START-END)


_TRAPS = [
    _Seed(
        "trap",
        52,
        "Payment retries without an idempotency key double-charge customers.\n\n"
        "Always pass `Idempotency-Key: <order id>` to the payments client; the gateway keeps keys for 24 h.\n",
        {"title": "Payment retries must carry an idempotency key", "severity": "critical", "tags": ["payments"]},
        "src/payments/client.py",
        ("src/payments/client.py:4-11",),
    ),
    _Seed(
        "trap",
        16,
        "A refund must send the idempotency key of the charge it refunds, or the gateway refunds twice "
        "when the request is retried.\n",
        {"title": "Refunds reuse the charge's idempotency key", "severity": "high", "tags": ["payments"]},
        "src/payments/refunds.py",
        ("src/payments/client.py:4-11", "src/payments/refunds.py:3-8"),
    ),
    _Seed(
        "trap",
        30,
        "The session cookie is missing `SameSite=Lax` when the app runs behind the CDN, so "
        "checkout POSTs lose the session and users are logged out.\n",
        {"title": "Session cookie loses SameSite behind the CDN", "severity": "high"},
        "src/web/session.ts",
    ),
    _Seed(
        "trap",
        21,
        "`pytest -n auto` shares one SQLite file between workers; tests that write the "
        "catalogue fail at random. Give each worker its own `tmp_path` database.\n",
        {"title": "Parallel tests share the catalogue database", "severity": "medium", "layer": "tests"},
        "tests/conftest.py",
    ),
    _Seed(
        "trap",
        12,
        "Migrations that add a NOT NULL column without a default lock the orders table for "
        "minutes on production data. Add the column nullable, backfill, then constrain.\n",
        {"title": "NOT NULL migrations lock the orders table", "severity": "high"},
        "migrations/versions",
    ),
    _Seed(
        "trap",
        5,
        "The price formatter rounds half-even; invoices must round half-up. Use "
        "`Decimal.quantize(ROUND_HALF_UP)` in `billing/format.py`.\n",
        {"title": "Invoice rounding is half-up, not banker's", "severity": "low"},
        "src/billing/format.py",
    ),
    # Names in several scripts: the site's search finds them as typed without accents (cafe, Zoe).
    _Seed(
        "trap",
        9,
        "The invoice PDF font covers Latin-1 only. *Zoë Brontë* of *Café Lumière* printed fine, but "
        "Дмитрий Лебедев, Ελένη Παπαδοπούλου, محمد الأمين and 王芳 came out as empty boxes. Embed "
        "Noto Sans in `billing/pdf.py` and keep names in NFC.\n",
        {"title": "Invoice PDFs drop letters outside Latin-1", "severity": "medium", "tags": ["billing"]},
        "src/billing/pdf.py",
    ),
    _Seed(
        "trap",
        40,
        "The staging deploy script read AWS credentials from the developer's shell; it now "
        "uses the CI role. Kept as a reminder until the old script is deleted.\n",
        {
            "title": "Staging deploy used personal cloud credentials",
            "severity": "medium",
            "expires_at": None,
            "ttl": "20d",
        },
        ".github/workflows/deploy.yml",
    ),
]

_DECISIONS = [
    _Seed(
        "decision",
        60,
        "Orders live in PostgreSQL; the catalogue is read-mostly and cached in Redis.\n\n"
        "**Why:** one transactional store keeps payments and stock consistent.\n",
        {"title": "PostgreSQL is the system of record", "id": "postgres-system-of-record"},
    ),
    _Seed(
        "decision",
        45,
        "Search used PostgreSQL `LIKE` queries.\n",
        {"title": "Product search with LIKE queries", "id": "search-with-like"},
    ),
    _Seed(
        "decision",
        20,
        "Product search moves to PostgreSQL full-text search with a `tsvector` column; "
        "`LIKE` scans were 800 ms at 200k products.\n",
        {"title": "Product search uses full-text indexes", "id": "search-full-text", "supersedes": "search-with-like"},
    ),
    _Seed(
        "decision",
        8,
        "Full-text search stays, with `pg_trgm` trigram matching on product names so typos still find "
        "the product (`iphnoe` finds iPhone).\n",
        {"title": "Product search tolerates typos", "id": "search-typos", "supersedes": "search-full-text"},
    ),
    _Seed(
        "decision",
        6,
        "Proposal: move background jobs from cron to a queue (Dramatiq + Redis) so retries and back-off are visible.\n",
        {"title": "Move background jobs to a queue", "status": "paused", "id": "jobs-queue"},
    ),
    _Seed(
        "decision",
        35,
        "Freeze UI changes during the holiday sale.\n",
        {"title": "UI freeze for the holiday sale", "id": "holiday-ui-freeze", "ttl": "21d"},
    ),
]

_OTHERS = [
    _Seed(
        "spec",
        25,
        "# Checkout v2\n\n- One page, address autocomplete\n- Apple Pay and cards\n- Idempotent order submission"
        " (see [the idempotency trap](../traps/payment-retries-must-carry-an-idempotency-key.md))\n",
        {"title": "Checkout v2", "id": "checkout-v2"},
    ),
    _Seed(
        "plan",
        24,
        "1. Split the address form\n2. Add the payment sheet\n3. Load test\n",
        {"title": "Checkout v2 rollout", "id": "checkout-v2-rollout", "status": "active"},
    ),
    _Seed(
        "plan",
        50,
        "Moved images to the CDN with signed URLs.\n",
        {
            "title": "Image CDN migration",
            "id": "image-cdn",
            "status": "shipped",
            "outcome": "All product images served from the CDN; origin traffic down 70%.",
            "verifiedAtSha": "4f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f",
        },
    ),
    _Seed(
        "state",
        1,
        "Branch `checkout-v2`: address form done, payment sheet in progress. Next: wire "
        "Apple Pay merchant validation.\n",
        {"title": "Checkout v2 working state", "id": "checkout-v2-state"},
    ),
    _Seed(
        "scratch",
        2,
        "Try `EXPLAIN ANALYZE` on the slow category query before adding an index.\n",
        {"title": "Slow category query idea"},
    ),
    _Seed("scratch", 10, "Old note: ask ops about the Redis eviction policy.\n", {"title": "Redis eviction question"}),
    _Seed(
        "review",
        3,
        "Checkout PR #412: the retry loop swallows gateway errors; please surface them.\n",
        {"title": "Review of checkout PR #412", "severity": "medium"},
    ),
    _Seed("review", 20, "Search PR #377 looks good; add a test for accents.\n", {"title": "Review of search PR #377"}),
    _Seed(
        "prompt",
        4,
        "Implement merchant validation for Apple Pay in `src/payments/applepay.ts`; "
        "keep the idempotency trap in mind.\n",
        {"title": "Apple Pay merchant validation", "sessionId": "s-2026-11-26", "turn": 3},
    ),
    _Seed(
        "prompt",
        15,
        "Write the migration for the `tsvector` column without locking the table.\n",
        {"title": "Full-text migration", "sessionId": "s-2026-11-15", "turn": 1},
    ),
    _Seed(
        "session",
        4,
        "Worked on Apple Pay; payment sheet renders, validation pending.\n",
        {"title": "Apple Pay session", "sessionId": "s-2026-11-26", "status": "completed", "turns": 7},
    ),
    _Seed(
        "session",
        15,
        "Added full-text search and its migration.\n",
        {"title": "Search migration session", "sessionId": "s-2026-11-15", "status": "completed", "turns": 4},
    ),
]

# Written by an agent, waiting for a person's review: published only by a build that includes it.
_PENDING = _Seed(
    "trap",
    0.5,
    "The payment gateway may deliver `charge.refunded` before `charge.succeeded`; the webhook handler "
    "must not assume the order it reads them in.\n",
    {
        "title": "Webhook events can arrive out of order",
        "severity": "medium",
        "tags": ["payments"],
        "review": "pending",
        "source": "agent",
        "author": "claude-code via memosite",
    },
)

# The product code the citing records cite, as the demo repository holds it when they are written,
# and the change made to it afterwards (so that one citation drifts and the other stays fresh).
_CODE = {
    "src/payments/client.py": (
        '"""The payments gateway client."""\n'
        "\n"
        "\n"
        "def charge(order, gateway):\n"
        "    # The gateway keeps idempotency keys for 24 h: a retried request with the\n"
        "    # same key is answered with the first result, never charged twice.\n"
        "    return gateway.post(\n"
        '        "/charges",\n'
        '        json={"amount": order.total, "currency": order.currency},\n'
        '        headers={"Idempotency-Key": order.id},\n'
        "    )\n"
    ),
    "src/payments/refunds.py": (
        '"""Refunds of charges."""\n'
        "\n"
        "def refund(charge, gateway):\n"
        "    return gateway.post(\n"
        '        "/refunds",\n'
        '        json={"charge": charge.id},\n'
        '        headers={"Idempotency-Key": charge.idempotency_key},\n'
        "    )\n"
    ),
}
_CODE_CHANGED = {
    "src/payments/refunds.py": (
        '"""Refunds of charges."""\n'
        "\n"
        "def refund(charge, gateway, reason=None):\n"
        "    return gateway.post(\n"
        '        "/refunds",\n'
        '        json={"charge": charge.id, "reason": reason},\n'
        "    )\n"
    ),
}
# The record that changed on two machines at once: the other machine's version waits beside it.
_CONFLICTED = "Session cookie loses SameSite behind the CDN"

_LOGS = [
    (44, "Deployed v1.8.0 to production", {"version": "1.8.0"}),
    (41, "Rolled back v1.8.0: checkout error rate 4%", {"version": "1.8.0", "errorRate": 0.04}),
    (38, "Deployed v1.8.1 with the cookie fix", {"version": "1.8.1"}),
    (9, "Load test: checkout p95 420 ms at 300 rps", {"p95_ms": 420, "rps": 300}),
    (2, "Ran the full test suite: 812 passed", {"passed": 812}),
]


@dataclass
class DemoResult:
    vault: str
    project: str
    records: int

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


DEMO_MARKER = ".memosite-demo"
DEMO_REPOSITORY_SUFFIX = "-repo"
DEMO_DIR = "demo"
# What the printed commands ask the demo: words of its payment trap, and the file that trap is about.
DEMO_QUERY = "payment retries"
DEMO_PATH = "src/payments/client.py"


def default_demo_root(env: Mapping[str, str] | None = None) -> Path:
    """Where ``memosite demo`` writes without ``--vault``: ``demo`` in this user's data directory
    (``~/.local/share/memosite/demo``). Not the directory it runs in: the README runs it in a fresh
    clone, a git work tree, where a vault is refused (``--vault ./memosite-demo upsert`` would fail)
    and its files would show in ``git status``."""
    return user_data_dir(env) / DEMO_DIR


def demo_commands(vault_root: Path, project: str = DEMO_PROJECT, program: str = "memosite") -> list[str]:
    """Commands that query the demo from any directory: a search and the brief an agent reads
    (``program``, as a shell reads it, runs memosite: ``memosite`` when it is on PATH, else its
    absolute path)."""
    base = f"{program} --vault {shlex.quote(str(vault_root))} --project {shlex.quote(project)}"
    return [f"{base} search {shlex.quote(DEMO_QUERY)}", f"{base} bootstrap --path {DEMO_PATH}"]


def demo_repository(vault: Vault | Path) -> Path:
    """Where the demo compiles the agents' files: a directory beside the demo vault (never in it),
    standing for the product repository the demo project's memory is about."""
    root = vault.root if isinstance(vault, Vault) else vault
    return root.parent / f"{root.name}{DEMO_REPOSITORY_SUFFIX}"


def write_demo_agent_files(
    vault: Vault, project: str = DEMO_PROJECT, now: datetime | None = None
) -> CompilePlan | None:
    """Compile the demo project's memory into :func:`demo_repository`, as ``memosite agents
    compile`` does in a real repository: AGENTS.md with the marked block, CLAUDE.md and
    .github/copilot-instructions.md, and the rule files of Cursor, Claude Code and Copilot. A
    rerun rewrites only what memosite wrote there.

    Only into a directory the demo made (it holds :data:`DEMO_MARKER`) or a new or empty one:
    a directory of that name that holds anything else is someone's, and None says it was left
    alone."""
    from memosite.agentfiles.compile import apply_plan, plan_compile
    from memosite.agentfiles.settings import AgentFilesSettings

    target = claimed_demo_repository(vault)
    if target is None:
        return None
    plan = plan_compile(
        vault,
        project,
        target,
        settings=AgentFilesSettings.from_config(vault.config),
        with_files=("claude", "copilot"),
        judge_code=True,  # the demo repository holds the code its records cite
        now=now or utc_now(),
    )
    return apply_plan(plan)


def claimed_demo_repository(vault: Vault) -> Path | None:
    """:func:`demo_repository`, made the demo's (created, marked) when it is new or empty or the
    demo made it; None when a directory of that name holds anyone else's files: the demo writes
    nothing there, neither code nor the agents' files."""
    target = demo_repository(vault)
    if target.is_symlink() or (target.exists() and not _demo_made(target)):
        return None
    target.mkdir(parents=True, exist_ok=True)
    (target / DEMO_MARKER).write_text("written by memosite demo\n", encoding="utf-8")
    return target


def _demo_made(directory: Path) -> bool:
    if not directory.is_dir():
        return False
    return (directory / DEMO_MARKER).is_file() or not any(directory.iterdir())


def write_demo_vault(vault: Vault, project: str = DEMO_PROJECT, now: datetime | None = None) -> DemoResult:
    """Write the sample records into a new (or earlier demo) project.

    A project holding records of its own is refused; in a demo project only the sample records
    that are missing are written, so running it again never overwrites anything.
    """
    now = now or utc_now()
    marker = vault.project_dir(project) / DEMO_MARKER
    if not marker.exists() and any(vault.iter_record_files(project)):
        raise InvalidArguments(
            f"project {project} in {vault.root} already holds records; the demo writes only into a new"
            " project (choose another --vault or --project)"
        )
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("written by memosite demo\n", encoding="utf-8")
    repository = claimed_demo_repository(vault)
    code_is_new = repository is not None and _write_code(repository, _CODE)
    count = 0
    with mutation(vault, f"demo {project}") as unit:
        count += _write_seeds(vault, project, now, repository)
        _write_conflict(unit, project)
    if repository is not None:
        if code_is_new:
            _write_code(repository, _CODE_CHANGED, replace=True)  # the code changed after the records
        verify_project(vault, project, repository, now=now)
    return DemoResult(vault=str(vault.root), project=project, records=count)


def _write_code(repository: Path, files: dict[str, str], *, replace: bool = False) -> bool:
    """Write the demo repository's files that are missing (all of ``files`` with ``replace``);
    True when it wrote any."""
    wrote = False
    for relative, text in files.items():
        path = repository / relative
        if replace or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            wrote = True
    return wrote


def _pinned(specs: tuple[str, ...]) -> list[dict[str, Any]]:
    """The citations of ``specs`` as the demo's code read when its records were written (pinned to
    no commit: the demo repository is no git repository of its own). Read from the demo's own
    text, not from the repository's files: a demo vault made again beside a repository an earlier
    demo left holds its code as changed since, where a span may no longer be."""
    pinned = []
    for spec in specs:
        path, lines = parse_cite_spec(spec)
        data = _CODE[path].encode("utf-8")
        digest = span_digest(split_lines(data), lines, data)
        if digest is None:
            raise AssertionError(f"the demo's citation {spec} lies outside its own code")
        pinned.append(Cite(path, lines, digest).to_json())
    return pinned


def _write_conflict(unit: Mutation, project: str) -> None:
    """The other machine's version of one record, in a sync conflict sidecar beside it (unless
    the record already has one, or is gone)."""
    vault = unit.vault
    slug = derive_slug("trap", {"title": _CONFLICTED}, None, utc_now())
    path = vault.record_path(project, "trap", slug)
    if not path.is_file() or any(path.parent.glob(f"{slug}{CONFLICT_MARK}*")):
        return
    text = path.read_text(encoding="utf-8")
    theirs = text.replace("severity: high", "severity: critical", 1).rstrip("\n")
    theirs += "\n\nThe admin app loses its session the same way.\n"
    relative = sidecar_path(vault.relative(path), theirs.encode("utf-8"))
    unit.write_beside(vault.root / relative, theirs)


def _write_seeds(vault: Vault, project: str, now: datetime, repository: Path | None) -> int:
    """The sample records that are missing; without a demo repository (a directory of its name is
    someone else's) the citing samples cite nothing."""
    count = 0
    for seed in [*_TRAPS, *_DECISIONS, *_OTHERS, _PENDING]:
        moment = now - timedelta(days=seed.days_ago)
        frontmatter = {k: v for k, v in seed.frontmatter.items() if v is not None}
        frontmatter.setdefault("created", format_iso(moment))
        frontmatter.setdefault("updated", format_iso(moment))
        slug = derive_slug(seed.kind, frontmatter, None, moment)
        if vault.record_path(project, seed.kind, slug).exists():
            continue  # never overwrite: a person may have edited the sample
        if seed.cites and repository is not None:
            frontmatter["cites"] = _pinned(seed.cites)
        upsert_record(
            vault,
            project,
            kind=seed.kind,
            body=seed.body,
            frontmatter=frontmatter,
            path=seed.path,
            slug=slug,
            allow_duplicate=True,
            now=moment,
        )
        count += 1
    existing_logs = vault.kind_dir(project, "log")
    if not existing_logs.is_dir() or not any(existing_logs.iterdir()):
        for days_ago, text, details in _LOGS:
            append_event(vault, project, event=text, details=details, now=now - timedelta(days=days_ago))
            count += 1
    return count
