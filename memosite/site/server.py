"""``memosite serve``: the site with live reload, kept current by the vault watcher.

The first build takes every unchanged page from the page cache ``memosite build`` left (serve builds
the same site, so a built vault starts warm) and keeps the cache current while it runs. After that a
record edit goes: watcher (debounced) -> index and views recompiled once -> a dirty MkDocs build
that re-renders only pages whose key changed (the plugin keeps each record's row and page between
builds, and completes the search index and ``records.json``) -> browsers reload. An edit of the
site's own sources, its mkdocs.yml or the set of projects gets a full build.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from memosite.errors import BuildError, InvalidArguments
from memosite.site.build import load_site_config, memosite_plugin, run_build
from memosite.vault import Vault

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.livereload import LiveReloadServer

    from memosite.watch import WatchBatch

log = logging.getLogger("memosite.serve")

# The vault watcher's quiet period is the only wait between a saved record and its rebuild: an
# editor's save (write, or write-and-rename) is one burst of events a few milliseconds long.
VAULT_QUIET_SECONDS = 0.1


def parse_dev_addr(dev_addr: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> (host, port)."""
    host, sep, port_text = dev_addr.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) < 65536:
        raise InvalidArguments(f"invalid --dev-addr {dev_addr!r}: expected HOST:PORT, e.g. 127.0.0.1:8000")
    return host, int(port_text)


def _reload_server_class() -> type[LiveReloadServer]:
    from mkdocs.livereload import LiveReloadServer

    class _ReloadServer(LiveReloadServer):
        _bound = False
        _active = False
        _vault_request = False
        _source_delay = 0.1

        # The build loop waits `build_delay` for more file events before it builds. A request from
        # the vault watcher comes after its own quiet period: waiting again would only add latency.
        @property
        def build_delay(self) -> float:
            return 0.0 if self._vault_request else self._source_delay

        @build_delay.setter
        def build_delay(self, seconds: float) -> None:
            self._source_delay = seconds

        # serve() binds and listens itself; memosite does it first, to fail fast on a busy port
        # and to queue early requests during the first build instead of refusing them.
        def server_bind(self) -> None:
            if not self._bound:
                super().server_bind()
                self._bound = True

        def server_activate(self) -> None:
            if not self._active:
                super().server_activate()
                self._active = True

        def request_rebuild(self) -> None:
            """Ask for a rebuild, exactly as the server's own file watcher does.

            The vault has its own watcher (debounced, ignoring memosite's writes); this is how
            it hands the rebuild to the server's build loop, which also reloads the browsers.
            """
            with self._rebuild_cond:
                self._vault_request = True
                self._want_rebuild = True
                self._rebuild_cond.notify_all()

        def vault_request_taken(self) -> None:
            """The build loop started a build: later requests say again where they come from."""
            self._vault_request = False

    return _ReloadServer


def _sources_stamp(paths: list[Path]) -> tuple[tuple[str, int, int], ...]:
    stamp: list[tuple[str, int, int]] = []
    for base in paths:
        if base.is_file():
            info = base.stat()
            stamp.append((str(base), info.st_mtime_ns, info.st_size))
            continue
        for directory, _dirs, names in os.walk(base):
            for name in names:
                path = os.path.join(directory, name)
                try:
                    info = os.stat(path)
                except FileNotFoundError:
                    continue
                stamp.append((path, info.st_mtime_ns, info.st_size))
    return tuple(sorted(stamp))


class SiteServer:
    """A live site for one vault on ``dev_addr`` (loopback by default)."""

    def __init__(
        self,
        vault: Vault,
        *,
        dev_addr: str = "127.0.0.1:8000",
        config_file: str | Path | None = None,
        livereload: bool = True,
        open_browser: bool = False,
        include_pending: bool = False,
    ) -> None:
        self.vault_root = vault.root
        self.include_pending = include_pending
        self.host, self.port = parse_dev_addr(dev_addr)
        self.dev_addr = dev_addr
        self.config_file = config_file
        self.livereload = livereload
        self.open_browser = open_browser
        self.builds = 0
        self.site_dir = Path(tempfile.mkdtemp(prefix="memosite-serve-"))
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self._server: LiveReloadServer | None = None
        self._sources: list[Path] = []
        self._stamp: tuple[object, ...] = ()
        self._lock = threading.Lock()
        self._last_config: MkDocsConfig | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def _config(self) -> MkDocsConfig:
        vault = Vault.open(self.vault_root, create=False)
        try:
            config = load_site_config(
                vault,
                site_dir=self.site_dir,
                config_file=self.config_file,
                dev_addr=self.dev_addr,
                include_pending=self.include_pending,
            )
        finally:
            vault.close()
        plugin = memosite_plugin(config)
        plugin.watch_vault_on_serve = False
        plugin.serving = True
        # The site as `memosite build` makes it (no site_url unless the config names one): the
        # pages the last build left in the page cache are this site's pages, so the first build of
        # serve copies them instead of rendering them.
        return config

    def build(self) -> None:
        """Build the site: dirty (only changed pages, the rest from the page cache or the last
        build) unless the site's own sources, its config or the set of projects changed."""
        with self._lock:
            config = self._config()
            plugin = memosite_plugin(config)
            sources = [Path(config.docs_dir)]
            if config.config_file_path:
                sources.append(Path(config.config_file_path))
            stamp = (_sources_stamp(sources), tuple(self._projects()))
            full = self.builds > 0 and stamp != self._stamp
            if self._last_config is None:
                # As `mkdocs serve` does: plugins that keep state between builds get told once.
                config.plugins.on_startup(command="serve", dirty=False)
            # After the first build the vault watcher has already recompiled what changed.
            plugin.recompile_vault = self.builds == 0
            self._last_config = config
            run_build(config, dirty=not full, serve_url=self.url)
            self._sources, self._stamp = sources, stamp
            self.builds += 1

    def _projects(self) -> list[str]:
        vault = Vault.open(self.vault_root, create=False)
        try:
            return vault.projects()
        finally:
            vault.close()

    def _vault_changed(self, batch: WatchBatch) -> None:
        if self._server is not None:
            self._server.request_rebuild()  # type: ignore[attr-defined]

    def _rebuild(self) -> None:
        from mkdocs.exceptions import Abort

        if self._server is not None:
            self._server.vault_request_taken()  # type: ignore[attr-defined]
        try:
            self.build()
        except BuildError as exc:
            # Abort is what the server's build loop reports as one line (and keeps serving).
            raise Abort(exc.message) from None

    def _listen(self) -> LiveReloadServer:
        server = _reload_server_class()(builder=self._rebuild, host=self.host, port=self.port, root=str(self.site_dir))
        try:
            server.server_bind()
            server.server_activate()
        except OSError as exc:
            server.server_close()
            raise InvalidArguments(f"cannot listen on {self.dev_addr}: {exc.strerror or exc}") from exc
        self.port = int(server.server_address[1])
        server.url = self.url  # it computed its URL from the requested port, which may be 0
        server.error_handler = self._error_page
        return server

    def serve_forever(self) -> None:
        """Build, then serve until :meth:`stop` (or Ctrl-C); cleans up its temporary site."""
        from memosite.watch import VaultWatcher

        watcher: VaultWatcher | None = None
        server: LiveReloadServer | None = None
        try:
            server = self._listen()
            self.build()
            # The first build leaves tens of thousands of long-lived objects (a Page per record,
            # kept for the rebuilds); a full collection would walk them all, every time, in the
            # middle of a rebuild. Frozen, the collector only looks at what rebuilds allocate.
            gc.freeze()
            self._server = server
            if self.livereload:
                for source in self._sources:
                    server.watch(str(source))
                if self._last_config is not None:
                    self._last_config.plugins.on_serve(server, config=self._last_config, builder=self._rebuild)
                watcher = VaultWatcher(self.vault_root, on_change=self._vault_changed, quiet=VAULT_QUIET_SECONDS)
                watcher.start()
                watcher.wait_ready(timeout=60)
            if self._stopped.is_set():
                return
            self._ready.set()
            log.info("Serving %s on %s", self.vault_root, self.url)
            try:
                server.serve(open_in_browser=self.open_browser)
            except KeyboardInterrupt:
                log.info("Shutting down...")
        finally:
            self._ready.set()
            if watcher is not None:
                watcher.stop()
            if server is not None:
                server.shutdown()
            if self._last_config is not None:
                self._last_config.plugins.on_shutdown()
            gc.unfreeze()  # what this server kept may go now that it has stopped
            shutil.rmtree(self.site_dir, ignore_errors=True)

    def _error_page(self, code: int) -> bytes | None:
        page = self.site_dir / f"{code}.html"
        return page.read_bytes() if code in (404, 500) and page.is_file() else None

    def wait_ready(self, timeout: float | None = None) -> bool:
        """True once the first build is done and the server is about to accept requests."""
        return self._ready.wait(timeout)

    def stop(self) -> None:
        """Stop serving (from another thread)."""
        self._stopped.set()
        if self._server is not None:
            self._server.shutdown()


def serve(
    vault: Vault,
    *,
    dev_addr: str = "127.0.0.1:8000",
    config_file: str | Path | None = None,
    open_browser: bool = False,
    livereload: bool = True,
    include_pending: bool = False,
) -> None:
    """Serve the vault's site with live reload until interrupted (blocks).

    Called from the main thread, SIGTERM stops it like Ctrl-C does, so the temporary site is
    removed either way.
    """
    server = SiteServer(
        vault,
        dev_addr=dev_addr,
        config_file=config_file,
        open_browser=open_browser,
        livereload=livereload,
        include_pending=include_pending,
    )
    with _sigterm_as_interrupt():
        server.serve_forever()


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
