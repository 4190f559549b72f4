"""The records and questions of the retrieval-quality benchmark (``bench_recall.py``).

``ANSWERS`` are records a real project accumulates — traps, decisions and specs, most in English,
some in Chinese, Japanese, Korean, Russian, German, French, Portuguese and Spanish — each written the
way people write them, not the way the questions ask. ``QUESTIONS`` are what agents ask, in
sentences, each with the ids of the records that answer it. ``distractors()`` adds a few hundred
records of the same project (logs, plans, reviews, low-stakes traps, other decisions) that share
the vocabulary, so that ranking, not mere matching, decides the figure.
"""

from __future__ import annotations

import random
from typing import Any

Rec = dict[str, Any]


def _trap(slug: str, title: str, body: str, severity: str = "high", **extra: Any) -> Rec:
    return {"id": slug, "kind": "trap", "title": title, "body": body, "severity": severity, **extra}


def _decision(slug: str, title: str, body: str, **extra: Any) -> Rec:
    return {"id": slug, "kind": "decision", "title": title, "body": body, **extra}


def _spec(slug: str, title: str, body: str, **extra: Any) -> Rec:
    return {"id": slug, "kind": "spec", "title": title, "body": body, **extra}


ANSWERS: list[Rec] = [
    # --- traps, English ---------------------------------------------------------------------
    _trap(
        "payment-retry-idempotency",
        "Payment retries must carry an idempotency key",
        "When the gateway times out we retry the charge. Without an `Idempotency-Key` header the "
        "second attempt is a new charge and the customer pays twice.\n\nAlways derive the key from "
        "the order id; the gateway keeps keys for 24 hours.\n",
        "critical",
        pathPatterns=["src/payments/client.py"],
        tags=["payments"],
    ),
    _trap(
        "samesite-cookie-cdn",
        "Session cookie loses SameSite behind the CDN",
        "Behind the CDN the `Set-Cookie` header is rewritten and `SameSite=Lax` disappears, so the "
        "checkout POST arrives without a session and the user is signed out.\n\nSet the attribute in "
        "the app and test through the CDN, not against localhost.\n",
        pathPatterns=["src/web/session.ts"],
    ),
    _trap(
        "not-null-column-lock",
        "NOT NULL migrations lock the orders table",
        "`ALTER TABLE orders ADD COLUMN ... NOT NULL DEFAULT ...` rewrites the table and holds an "
        "exclusive lock for minutes on production data. Add the column nullable, backfill in "
        "batches, then add the constraint.\n",
        pathPatterns=["migrations/versions"],
        tags=["database"],
    ),
    _trap(
        "xdist-shared-sqlite",
        "Parallel test workers share one SQLite file",
        "`pytest -n auto` starts several workers that all open `test.db`; tests that write the "
        "catalogue then fail at random. Give each worker its own database under `tmp_path`.\n",
        "medium",
        pathPatterns=["tests/conftest.py"],
    ),
    _trap(
        "webhook-raw-body",
        "Webhook signatures are computed over the raw body",
        "The provider signs the exact bytes it sent. Verifying the HMAC over re-serialised JSON fails "
        "for payloads with unicode or reordered keys. Read the raw request body before parsing.\n",
        pathPatterns=["src/payments/webhooks.py"],
    ),
    _trap(
        "cron-dst-twice",
        "Nightly job runs twice when clocks change",
        "The scheduler uses the server's local time zone, so on the night daylight saving ends the "
        "02:30 export starts twice and sends duplicate invoices. Schedule jobs in UTC.\n",
        pathPatterns=["src/jobs/schedule.py"],
    ),
    _trap(
        "float-money",
        "Floats lose cents on refunds",
        "Amounts were kept as floats; 0.1 + 0.2 style errors made partial refunds one cent short. "
        "Keep money as integer cents end to end and format only at the edge.\n",
        pathPatterns=["src/billing/**"],
    ),
    _trap(
        "orders-n-plus-one",
        "Order list endpoint issues one query per line item",
        "The `/api/orders` list takes several seconds for big accounts: the serializer touches "
        "`order.lines` lazily, one SELECT per order. Use `selectinload` on the query.\n",
        pathPatterns=["src/orders/api.py"],
        tags=["performance"],
    ),
    _trap(
        "redis-lock-ttl",
        "Redis lock expires before the export finishes",
        "The export takes the `export:lock` key with a 60 s TTL but large tenants need several minutes; "
        "a second worker starts the same export halfway through. Renew the lease while working.\n",
        pathPatterns=["src/jobs/export.py"],
    ),
    _trap(
        "docker-layer-cache",
        "Docker build reuses a stale dependency layer",
        "`COPY . .` comes before `pip install`, so editing any file busts the cache, while editing "
        "`requirements.txt` in a cached layer is missed on CI runners. Copy the requirements file "
        "first, install, then copy the source.\n",
        "medium",
        pathPatterns=["docker/Dockerfile"],
    ),
    _trap(
        "jwt-clock-skew",
        "Tokens rejected because of clock skew between services",
        "The auth service and the API disagree by a few seconds; freshly issued JWTs fail the `nbf` "
        "check. Allow 30 s of leeway when validating.\n",
        pathPatterns=["src/auth/tokens.py"],
    ),
    _trap(
        "csv-excel-bom",
        "Excel shows mojibake in the CSV export",
        "Excel opens our UTF-8 CSV as Windows-1252 unless the file starts with a byte order mark; "
        "customer names with accents turn into garbage. Write `\\ufeff` first.\n",
        "medium",
        pathPatterns=["src/orders/export.py"],
    ),
    _trap(
        "email-template-escape",
        "Admin notification emails render customer names as HTML",
        "The notification template used `|safe` on the customer name; a name containing a script tag "
        "ran in the admin's mail client preview. Never mark user input safe in templates.\n",
        "critical",
        pathPatterns=["templates/email/*.html"],
        tags=["security"],
    ),
    _trap(
        "partner-429",
        "Partner API answers 429 under load",
        "The shipping partner allows 10 requests per second per key. Bursts after a sale return "
        "`429 Too Many Requests`; back off exponentially with jitter and honour `Retry-After`.\n",
        pathPatterns=["src/shipping/client.py"],
    ),
    _trap(
        "flag-cache-delay",
        "Feature flag changes take ten minutes to apply",
        "Each process caches the flag set for 10 minutes, so a toggle in the dashboard seems to do "
        "nothing and people toggle again. Subscribe to the change stream instead of polling.\n",
        "medium",
        pathPatterns=["src/flags/client.py"],
    ),
    _trap(
        "search-index-lag",
        "Catalogue search shows old prices until the nightly rebuild",
        "Products are indexed by a nightly job only; after a price change search results are out of "
        "date for up to a day. Reindex the product in the same transaction as the write.\n",
        pathPatterns=["src/catalogue/search.py"],
    ),
    _trap(
        "worker-connection-leak",
        "Background worker leaks database connections",
        "The worker opens a session per job and never closes it on errors; after a few hundred jobs "
        "the pool is exhausted and requests hang. Use the session as a context manager.\n",
        pathPatterns=["src/jobs/worker.py"],
    ),
    _trap(
        "react-stale-closure",
        "Checkout form submits stale values",
        "The submit handler inside `useEffect` closes over the first render's state, so edits to the "
        "address are lost. Pass the latest state through a ref or add it to the dependencies.\n",
        "medium",
        pathPatterns=["src/web/checkout/*.tsx"],
    ),
    _trap(
        "decimal-comma",
        "Quantities with a decimal comma are parsed as integers",
        "German users type `1,5`; `int()` on the cleaned string drops the fraction. Parse numbers "
        "with the user's locale.\n",
        "medium",
        pathPatterns=["src/web/forms.py"],
    ),
    _trap(
        "presigned-url-expiry",
        "Large uploads fail when the presigned URL expires",
        "Presigned S3 upload URLs are valid for 15 minutes; uploads of big videos on slow links take "
        "longer and fail at the end. Use multipart uploads with a fresh URL per part.\n",
        pathPatterns=["src/media/upload.py"],
    ),
    _trap(
        "consumer-rebalance-duplicates",
        "Kafka rebalances deliver messages twice",
        "When a consumer joins, partitions are reassigned before offsets are committed, and the "
        "order-created event is processed again. Make handlers idempotent on the event id.\n",
        pathPatterns=["src/events/consumer.py"],
    ),
    _trap(
        "graphql-depth",
        "Deeply nested GraphQL queries take the API down",
        "A query nesting `customer { orders { customer { orders ... } } }` forty levels deep ran for "
        "minutes. Enforce a maximum depth and query cost.\n",
        pathPatterns=["src/api/graphql.py"],
        tags=["security"],
    ),
    # --- decisions, English -----------------------------------------------------------------
    _decision(
        "postgres-primary-store",
        "PostgreSQL is the primary database",
        "## Context\n\nWe compared MongoDB and PostgreSQL for orders and payments.\n\n## Decision\n\n"
        "PostgreSQL: transactions across orders and payments, foreign keys, and JSONB where we need "
        "flexible attributes.\n\n## Consequences\n\nSchema changes go through migrations.\n",
    ),
    _decision(
        "sqlite-fts-catalogue",
        "Catalogue search stays on SQLite FTS5",
        "Elasticsearch would cost a cluster to run and operate for 40,000 products; FTS5 answers in a "
        "few milliseconds and ships with the app.\n",
    ),
    _decision(
        "integer-cents",
        "All money is integer cents",
        "Amounts are stored and computed as integer minor units (cents) with the currency beside "
        "them; formatting happens in the presentation layer only.\n",
    ),
    _decision(
        "flags-config-service",
        "Feature flags live in the config service",
        "Environment variables needed a redeploy to flip a flag. The config service holds flags per "
        "environment and tenant and pushes changes to every process.\n",
    ),
    _decision(
        "pnpm-monorepo",
        "One repository with pnpm workspaces",
        "The web app, the admin and the shared UI kit live in one repository as pnpm workspaces, so a "
        "change to a shared component is one pull request.\n",
    ),
    _decision(
        "api-versioning-url",
        "The public API is versioned in the URL",
        "Clients call `/v1/...`; a breaking change ships as `/v2` and the old version keeps working "
        "for twelve months. Header-based versioning confused partners.\n",
    ),
    _decision(
        "rq-job-queue",
        "Background jobs run on RQ",
        "RQ on the Redis we already have instead of Celery with a separate broker: fewer moving "
        "parts, and our jobs need no chords or canvases.\n",
    ),
    _decision(
        "e2e-seeded-container",
        "End-to-end tests run against a seeded container",
        "Shared staging data made the e2e suite flaky. Each CI run starts the app and a database "
        "container seeded from fixtures.\n",
    ),
    _decision(
        "json-logs",
        "Services log JSON lines",
        "Every service writes one JSON object per line to stdout with `level`, `event` and a request "
        "id; the collector parses them without per-service patterns.\n",
    ),
    # --- specs ------------------------------------------------------------------------------
    _spec(
        "guest-checkout",
        "Guest checkout",
        "# Guest checkout\n\n1. Cart review\n2. Email and shipping address, no account needed\n"
        "3. Payment\n4. Confirmation with an offer to create an account\n",
    ),
    _spec(
        "refund-window",
        "Refunds",
        "# Refunds\n\nCustomers may ask for a refund within 30 days of delivery. Partial refunds "
        "are allowed per line item; shipping is refunded only with the last item.\n",
    ),
    _spec(
        "password-reset",
        "Password reset",
        "# Password reset\n\nThe reset link is valid for one hour and works once. Requesting a new "
        "link invalidates the previous one.\n",
    ),
    # --- other scripts ----------------------------------------------------------------------
    _trap(
        "zh-not-null-lock",
        "添加非空列会锁住订单表",
        "在生产数据上执行 `ALTER TABLE orders ADD COLUMN ... NOT NULL` 会锁住订单表好几分钟。"
        "先添加可空列，分批回填，再加约束。\n",
        pathPatterns=["migrations/versions"],
    ),
    _decision(
        "zh-postgres",
        "选择 PostgreSQL 作为主数据库",
        "我们需要订单和支付之间的事务一致性，所以选择了 PostgreSQL，而不是 MongoDB。\n",
    ),
    _trap(
        "ja-batch-timezone",
        "夏時間の切り替えでバッチ処理が二回実行される",
        "スケジューラがサーバーのローカルタイムゾーンを使っているため、夏時間が終わる夜に請求書の"
        "バッチ処理が二回実行される。ジョブは UTC で登録すること。\n",
        pathPatterns=["src/jobs/schedule.py"],
    ),
    _trap(
        "ja-stock-cache",
        "在庫数がキャッシュのせいで古いまま表示される",
        "商品ページの在庫数は五分間キャッシュされるので、売り切れた商品がまだ購入できるように"
        "見える。注文時に在庫を再確認すること。\n",
        "medium",
        pathPatterns=["src/catalogue/stock.py"],
    ),
    _trap(
        "ko-payment-retry",
        "결제 재시도 시 중복 결제가 발생합니다",
        "게이트웨이 시간 초과 후 결제를 재시도하면 멱등성 키가 없어서 고객에게 두 번 청구됩니다.\n",
        pathPatterns=["src/payments/client.py"],
    ),
    _trap(
        "ru-migration-lock",
        "Миграция блокирует таблицу заказов",
        "Добавление столбца NOT NULL блокирует таблицу заказов на несколько минут. Сначала добавьте "
        "столбец без ограничения, заполните его партиями, затем добавьте ограничение.\n",
        pathPatterns=["migrations/versions"],
    ),
    _trap(
        "de-umlaut-export",
        "Export schlägt fehl, wenn Dateinamen Umlaute enthalten",
        "Der Export nach SFTP bricht ab, sobald ein Kundenname Umlaute wie ä, ö oder ü enthält: der "
        "Server erwartet ASCII-Dateinamen. Dateinamen vorher transliterieren.\n",
        pathPatterns=["src/orders/export.py"],
    ),
    _decision(
        "fr-redis-queue",
        "File d'attente Redis pour les tâches en arrière-plan",
        "Nous utilisons la file d'attente Redis déjà en place pour les tâches en arrière-plan plutôt "
        "qu'un courtier séparé : moins de pièces à exploiter.\n",
    ),
    _trap(
        "pt-session-logout",
        "Segurança: o token de sessão não expira após o logout",
        "Depois do logout o token de sessão continua válido até expirar sozinho; quem copiou o token "
        "ainda acessa a conta. Revogar o token no servidor ao sair.\n",
        "critical",
        pathPatterns=["src/auth/session.py"],
    ),
    _trap(
        "es-db-pool",
        "La conexión a la base de datos se agota con muchas peticiones",
        "Con muchas peticiones concurrentes el pool de conexiones se agota y las peticiones esperan "
        "hasta el tiempo límite. Limitar la concurrencia de los trabajadores.\n",
        pathPatterns=["src/db/pool.py"],
    ),
]

# (question, ids of the records that answer it)
QUESTIONS: list[tuple[str, list[str]]] = [
    ("how do payment retries work", ["payment-retry-idempotency"]),
    ("why did we pick postgres", ["postgres-primary-store"]),
    ("why postgres", ["postgres-primary-store"]),
    ("cookie samesite cdn logout", ["samesite-cookie-cdn"]),
    ("why do users get logged out during checkout", ["samesite-cookie-cdn"]),
    ("what happens when I add a NOT NULL column", ["not-null-column-lock"]),
    ("the migration locks the orders table", ["not-null-column-lock"]),
    ("tests fail randomly when run in parallel", ["xdist-shared-sqlite"]),
    ("how should I verify webhook signatures", ["webhook-raw-body"]),
    ("the nightly job ran twice after the clock change", ["cron-dst-twice"]),
    ("how do we store money amounts", ["integer-cents", "float-money"]),
    ("refund is one cent short", ["float-money"]),
    ("the orders endpoint is slow for big accounts", ["orders-n-plus-one"]),
    ("redis lock expired before the export finished", ["redis-lock-ttl"]),
    ("docker build does not pick up new requirements", ["docker-layer-cache"]),
    ("jwt rejected because of clock skew", ["jwt-clock-skew"]),
    ("excel shows garbled characters in the csv export", ["csv-excel-bom"]),
    ("can a customer name inject html into emails", ["email-template-escape"]),
    ("the shipping partner returns 429 too many requests", ["partner-429"]),
    ("toggling a feature flag takes minutes", ["flag-cache-delay"]),
    ("search results show old prices", ["search-index-lag"]),
    ("database connections run out in the worker", ["worker-connection-leak"]),
    ("the checkout form loses the address I typed", ["react-stale-closure"]),
    ("parsing numbers with a decimal comma", ["decimal-comma"]),
    ("big uploads fail when the url expires", ["presigned-url-expiry"]),
    ("duplicate events after a kafka rebalance", ["consumer-rebalance-duplicates"]),
    ("limit how deep graphql queries can go", ["graphql-depth"]),
    ("why not elasticsearch for product search", ["sqlite-fts-catalogue"]),
    ("where do feature flags live", ["flags-config-service"]),
    ("how is the repository organised for the web app and admin", ["pnpm-monorepo"]),
    ("how is the public api versioned", ["api-versioning-url"]),
    ("which job queue do we use", ["rq-job-queue", "fr-redis-queue"]),
    ("where does the e2e suite get its data", ["e2e-seeded-container"]),
    ("what format do services log in", ["json-logs"]),
    ("steps of guest checkout", ["guest-checkout"]),
    ("how long can customers ask for a refund", ["refund-window"]),
    ("how long is a password reset link valid", ["password-reset"]),
    ("idempotency", ["payment-retry-idempotency"]),
    ("retr", ["payment-retry-idempotency", "partner-429"]),
    ("锁表", ["zh-not-null-lock"]),
    ("订单表被锁住怎么办", ["zh-not-null-lock"]),
    ("为什么选择PostgreSQL", ["zh-postgres", "postgres-primary-store"]),
    ("バッチ処理が二回実行される", ["ja-batch-timezone"]),
    ("在庫のキャッシュが古い", ["ja-stock-cache"]),
    ("결제 재시도 중복", ["ko-payment-retry"]),
    ("миграция блокирует таблицу", ["ru-migration-lock"]),
    ("export schlagt fehl umlaute", ["de-umlaut-export"]),
    ("pourquoi une file d'attente redis pour les taches", ["fr-redis-queue"]),
    ("sessao nao expira apos logout", ["pt-session-logout"]),
    ("conexion a la base de datos se agota", ["es-db-pool"]),
]

# --- distractors ---------------------------------------------------------------------------

_AREAS = ["payments", "checkout", "orders", "catalogue", "auth", "jobs", "web", "billing", "shipping", "search"]
_CHANGES = [
    "bumped the client library",
    "checked the retry settings after the incident",
    "rotated the session signing key",
    "moved the cookie banner to the footer",
    "added an index on orders.created_at",
    "reran the migration on staging",
    "fixed a flaky test in the suite",
    "raised the worker concurrency",
    "cleared the CDN cache for the new logo",
    "renamed the export job",
    "tuned the connection pool size",
    "updated the webhook endpoint URL",
    "reviewed the refund emails",
    "added tracing to the search endpoint",
    "pinned the docker base image",
    "documented the feature flag naming",
    "upgraded postgres to the next minor version",
    "translated the checkout page",
    "deleted unused csv columns",
    "added a dashboard for queue latency",
]
_LOW_TRAPS = [
    ("Log lines are truncated at 8 KB", "The collector cuts lines longer than 8 KB; split big payloads."),
    ("Local dev needs the seed script", "Run the seed script after resetting the database or pages 404."),
    ("Staging certificates expire monthly", "Renew the staging certificate before the first of the month."),
    ("Admin tables paginate at 50 rows", "Exports from the admin only include the visible page."),
    ("The linter rejects default exports", "Use named exports in the web app or CI fails."),
    ("Preview environments sleep after an hour", "The first request after idling takes 20 seconds."),
    ("Image thumbnails are generated lazily", "The first product page view after upload is slow."),
    ("Translations are cached at build time", "New strings need a rebuild of the web app to appear."),
]
_PLANS = [
    "Move invoices to the billing service",
    "Split the checkout page into steps",
    "Replace the search ranking with popularity",
    "Add refunds to the admin",
    "Migrate sessions to signed cookies",
    "Shard the orders table by tenant",
    "Introduce a payment retry queue",
    "Retire the legacy export",
]


def distractors(count: int = 400, seed: int = 13) -> list[Rec]:
    """``count`` records of the same project that share the answers' vocabulary."""
    rng = random.Random(seed)
    records: list[Rec] = []
    for n in range(count):
        area = rng.choice(_AREAS)
        roll = rng.random()
        if roll < 0.55:
            change = rng.choice(_CHANGES)
            records.append(
                {
                    "id": f"log-{n:04d}",
                    "kind": "log",
                    "title": f"{area}: {change}",
                    "body": f"Deployed {area} {rng.randint(1, 9)}.{rng.randint(0, 30)}; {change}. "
                    f"{rng.choice(_CHANGES).capitalize()} as well.\n",
                }
            )
        elif roll < 0.7:
            title = rng.choice(_PLANS)
            steps = "\n".join(f"- {rng.choice(_CHANGES)}" for _ in range(rng.randint(2, 5)))
            records.append({"id": f"plan-{n:04d}", "kind": "plan", "title": f"{title} ({area})", "body": f"{steps}\n"})
        elif roll < 0.85:
            title, body = rng.choice(_LOW_TRAPS)
            records.append(
                {
                    "id": f"trap-{n:04d}",
                    "kind": "trap",
                    "title": f"{title} in {area}",
                    "body": f"{body} Seen while we {rng.choice(_CHANGES)}.\n",
                    "severity": rng.choice(["low", "low", "medium"]),
                }
            )
        elif roll < 0.93:
            records.append(
                {
                    "id": f"review-{n:04d}",
                    "kind": "review",
                    "title": f"Review of the {area} change",
                    "body": f"Looks fine; we {rng.choice(_CHANGES)} and {rng.choice(_CHANGES)}.\n",
                }
            )
        else:
            records.append(
                {
                    "id": f"decision-{n:04d}",
                    "kind": "decision",
                    "title": f"{area.capitalize()} owns its {rng.choice(['dashboards', 'alerts', 'runbooks'])}",
                    "body": f"The {area} team maintains it; we {rng.choice(_CHANGES)}.\n",
                }
            )
    return records
