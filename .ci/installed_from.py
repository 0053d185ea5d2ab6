"""Check from pip's installation report (`pip install --report REPORT`) that pytest-kernelperf was
installed from a wheel in FOLDER, not from an index. Exit 1, saying where it came from, otherwise."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit


def main(report: Path, folder: Path) -> int:
    installed = json.loads(report.read_text(encoding="utf-8")).get("install", [])
    ours = [i for i in installed if i.get("metadata", {}).get("name") == "pytest-kernelperf"]
    if len(ours) != 1:
        print(f"{report}: pytest-kernelperf was not installed ({len(ours)} entries)", file=sys.stderr)
        return 1
    url = ours[0].get("download_info", {}).get("url", "")
    where = Path(unquote(urlsplit(url).path)) if url.startswith("file://") else None
    if where is None or where.resolve().parent != folder.resolve() or where.suffix != ".whl":
        print(f"pytest-kernelperf came from {url!r}, not a wheel in {folder}", file=sys.stderr)
        return 1
    print(f"pytest-kernelperf installed from {where.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
