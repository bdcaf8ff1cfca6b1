"""More real text: modern Chinese running text from Debian's Simplified-Chinese documentation packages.

The models issue asks for more real modern Chinese text from the reachable registries. PyPI's corpus packages
download their data at run time; Debian's documentation packages ship their text:

| package | licence | what it is |
|---|---|---|
| manpages-zh | GFDL-1.2+ | Chinese manual pages (zh_CN only is read here; zh_TW is the same text in traditional characters) |
| libreoffice-help-zh-cn | MPL-2.0 | LibreOffice's help pages |
| debian-reference-zh-cn | GPL-2+ | the Debian Reference |
| debian-edu-doc-zh-cn | GPL-2+ | the Debian Edu manual (the bookworm edition only; the bullseye one repeats it) |

All technical prose (computers, software), so it holds the computing senses of 文件/窗口/程序/菜单 that the news
and reviews barely have, and little else the lecture needs. fortunes-zh (classical poems) and gimp-help-zh-cn (35 k
characters) are left out.

    python bench/debian_docs.py --out DIR [--debs DIR] [--mix]

downloads the four packages with `apt-get download` into --debs (no install; needs a reachable Debian mirror),
unpacks them there, and writes to --out: docs_{train,valid,test}.txt (one paragraph a line, NFKC, deduplicated, split
by the corpus's own md5 rule, ctxlib.corpus.split_of), stats.json, and with --mix two training texts for
`train --corpus`: base/text.txt (the built-in train split: People's Daily + reviews + supplement) and mix/text.txt
(the same plus docs_train), each shuffled with seed 0. The text itself is not shipped: it stays under the
packages' licences on the machine that downloads it.
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import random
import re
import subprocess
import sys
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PACKAGES = ("manpages-zh", "libreoffice-help-zh-cn", "debian-reference-zh-cn", "debian-edu-doc-zh-cn")
CJK = re.compile(r"[\u4e00-\u9fff]")
MIN_CJK, MIN_SHARE = 8, 0.4  # a paragraph keeps at least 8 Chinese characters, 40% of its non-space characters


def keep(paragraph: str) -> str | None:
    """The paragraph with its white space collapsed, or None when it is mostly not Chinese prose (code, tables)."""
    p = re.sub(r"\s+", " ", paragraph).strip()
    n = len(CJK.findall(p))
    return p if n >= MIN_CJK and n >= MIN_SHARE * len(p.replace(" ", "")) else None


def _unescape(ln: str) -> str:
    ln = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", ln)
    ln = re.sub(r"\\[/,&|^]", "", ln).replace("\\-", "-").replace("\\(em", "—").replace("\\e", "\\")
    return re.sub(r"\\\(..", "", ln)


def groff_paragraphs(text: str) -> list[str]:
    """Paragraphs of a man page's groff source: text lines joined until a request line or a blank line; the
    arguments of font requests (.B, .I, .BR ...) kept as text, escapes (\\fB, \\-, \\(em ...) removed."""
    out, cur = [], []

    def flush():
        if cur:
            out.append(" ".join(cur))
            cur.clear()

    for ln in text.splitlines():
        if ln.startswith((".", "'")):
            flush()
            m = re.match(r"\.(B|I|BR|IR|RB|RI|BI|IB|SM)\s+(.*)", ln)
            if m:
                cur.append(_unescape(m.group(2).replace('"', "")))
            continue
        ln = _unescape(ln)
        if ln.strip():
            cur.append(ln.strip())
        else:
            flush()
    flush()
    return out


class _Blocks(HTMLParser):
    BLOCK = {"p", "li", "td", "th", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "div", "br", "tr", "title"}
    SKIP = {"script", "style", "pre", "code"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.cur, self.skip = [], [], 0

    def flush(self):
        if self.cur:
            self.out.append("".join(self.cur))
            self.cur = []

    def handle_starttag(self, tag, attrs):
        self.skip += tag in self.SKIP
        if tag in self.BLOCK:
            self.flush()

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        if tag in self.BLOCK:
            self.flush()

    def handle_data(self, data):
        if not self.skip:
            self.cur.append(data)


def html_paragraphs(text: str) -> list[str]:
    """The text of an HTML page's block elements (p, li, td, headings ...), without scripts, styles and code."""
    b = _Blocks()
    b.feed(text)
    b.close()
    b.flush()
    return b.out


def _read(p: Path) -> str:
    b = p.read_bytes()
    return (gzip.decompress(b) if p.suffix == ".gz" else b).decode("utf-8", "replace")


def source_files(root: Path) -> dict[str, list[tuple[Path, object]]]:
    """Each package's files under an unpacked root, with the function that splits one into paragraphs."""

    def walk(sub, pattern):
        return sorted(p for p in (root / sub).rglob(pattern) if p.is_file() and not p.is_symlink())

    return {
        "manpages-zh": [(p, groff_paragraphs) for p in walk("manpages-zh/usr/share/man/zh_CN", "*.gz")],
        "libreoffice-help-zh-cn": [
            (p, html_paragraphs) for p in walk("libreoffice-help-zh-cn/usr/share/libreoffice/help/zh-CN/text", "*.html")
        ],
        "debian-reference-zh-cn": [
            (p, html_paragraphs) for p in walk("debian-reference-zh-cn/usr/share/debian-reference", "*.zh-cn.html")
        ],
        "debian-edu-doc-zh-cn": [
            (p, html_paragraphs)
            for p in walk("debian-edu-doc-zh-cn/usr/share/doc/debian-edu-doc-zh-cn", "*bookworm-manual.html")
        ],
    }


def extract(root: Path) -> tuple[list[str], dict]:
    """Deduplicated NFKC paragraphs of all packages, and per-package counts."""
    seen, out, stats = set(), [], {}
    for name, files in source_files(root).items():
        n = chars = 0
        for path, split in files:
            for raw in split(_read(path)):
                p = keep(unicodedata.normalize("NFKC", html.unescape(raw)))
                if p and p not in seen:
                    seen.add(p)
                    out.append(p)
                    n, chars = n + 1, chars + len(p)
        stats[name] = {"files": len(files), "paragraphs": n, "characters": chars}
    return out, stats


def download(debs: Path) -> Path:
    debs.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", *PACKAGES], cwd=debs, check=True)
    root = debs / "x"
    for deb in sorted(debs.glob("*.deb")):
        name = deb.name.split("_")[0]
        if name in PACKAGES:
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root / name)], check=True)
    return root


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--debs", type=Path, default=Path("/tmp/ctxlab-debs"))
    ap.add_argument("--mix", action="store_true", help="also write base/text.txt and mix/text.txt for train --corpus")
    a = ap.parse_args(argv)
    from ctxlib import corpus

    try:
        root = a.debs / "x" if (a.debs / "x").is_dir() else download(a.debs)
    except (OSError, subprocess.CalledProcessError) as e:  # no apt-get/dpkg-deb, no mirror, a full disk
        print(f"error: could not download and unpack {', '.join(PACKAGES)} into {a.debs}: {e}", file=sys.stderr)
        return 2
    paras, stats = extract(root)
    a.out.mkdir(parents=True, exist_ok=True)
    splits = {s: [p for p in paras if corpus.split_of(p) == s] for s in corpus.SPLITS}
    for s, lines in splits.items():
        (a.out / f"docs_{s}.txt").write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
    stats["splits"] = {s: {"paragraphs": len(v), "characters": sum(map(len, v))} for s, v in splits.items()}
    if a.mix:
        base = [p.text for p in corpus.load("all", "train")]
        stats["builtin_train"] = {"paragraphs": len(base), "characters": sum(map(len, base))}
        for name, lines in (("base", base), ("mix", base + splits["train"])):
            lines = list(lines)
            random.Random(0).shuffle(lines)
            (a.out / name).mkdir(exist_ok=True)
            (a.out / name / "text.txt").write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
    (a.out / "stats.json").write_text(json.dumps(stats, ensure_ascii=False, indent=1), encoding="utf-8")
    print(json.dumps(stats, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
