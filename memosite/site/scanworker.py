"""A helper process that scans built pages for secrets while MkDocs renders the next ones.

Protocol, one JSON object per line: the parent writes ``{"where": ..., "text": ...}`` to stdin
and closes it; the worker answers with one finding per line on stdout and exits. Run as
``python -m memosite.site.scanworker``; it needs nothing but :mod:`memosite.secrets`.
"""

from __future__ import annotations

import json
import sys
from typing import IO

from memosite.secrets import scan_text


def serve(source: IO[str], sink: IO[str]) -> int:
    """Scan every item read from ``source``; write the findings to ``sink``; return their count."""
    findings = []
    for line in source:
        if not line.strip():
            continue
        item = json.loads(line)
        findings.extend(scan_text(item["text"], where=item["where"]))
    for finding in findings:
        sink.write(json.dumps(finding.to_dict()) + "\n")
    sink.flush()
    return len(findings)


if __name__ == "__main__":
    source = open(sys.stdin.fileno(), encoding="utf-8", closefd=False)  # noqa: SIM115
    sink = open(sys.stdout.fileno(), "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    serve(source, sink)
