"""bench/debian_docs.py (more real text from Debian's Chinese documentation): the groff and HTML paragraph
splitters, the prose filter, and extraction with deduplication, on tiny made-up files (no download)."""

import gzip
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("debian_docs", ROOT / "bench" / "debian_docs.py")
dd = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dd)

MAN = r""".TH LS 1 2022年9月 "GNU coreutils 9.1" 用户命令
.SH 名称
ls \- 列出目录内容
.PP
列出指定“文件”（默认为当前目录）的信息。如果既没有指定 \fB\-cftuvSUX\fP 中任何一个，
也没有指定 \fB\-\-sort\fP，则按字母排序项目。
.TP
.B \-a
不要忽略以点号起始的条目
"""


def test_groff_joins_wrapped_lines_and_drops_escapes():
    paras = dd.groff_paragraphs(MAN)
    assert "ls - 列出目录内容" in paras
    joined = next(p for p in paras if p.startswith("列出指定"))
    assert "-cftuvSUX" in joined and "--sort" in joined and "\\f" not in joined and "也没有指定" in joined
    assert any(p.startswith("-a") for p in paras)  # a .B request's argument is text


def test_html_blocks_skip_code_and_scripts():
    page = (
        "<html><head><title>标题</title><script>var x='脚本里的中文不要';</script></head><body>"
        "<p>选择「文件 - 打开」，然后<b>选中</b>要打开的文件。</p><pre>代码块里的中文也不要</pre>"
        "<ul><li>第一项说明文字</li><li>第二项</li></ul></body></html>"
    )
    paras = dd.html_paragraphs(page)
    assert "选择「文件 - 打开」，然后选中要打开的文件。" in paras and "第一项说明文字" in paras
    assert not any("不要" in p for p in paras)


def test_keep_wants_chinese_prose():
    assert dd.keep("  选择要复制的文本，\n然后按下复制按钮。 ") == "选择要复制的文本， 然后按下复制按钮。"
    assert dd.keep("太短了") is None  # fewer than 8 Chinese characters
    assert dd.keep("ls -l --color=auto /usr/share/doc 显示文件的详细信息") is None  # mostly code
    assert dd.keep("") is None


def test_extract_dedups_after_nfkc(tmp_path):
    man = tmp_path / "manpages-zh/usr/share/man/zh_CN/man1"
    man.mkdir(parents=True)
    (man / "a.1.gz").write_bytes(gzip.compress(".SH 描述\n这个命令列出目录中的所有文件和子目录。\n".encode()))
    (man / "b.1.gz").write_bytes(
        gzip.compress(".SH 描述\n这个命令列出目录中的所有文件和子目录。\n".replace("。", "。").encode())
    )
    lo = tmp_path / "libreoffice-help-zh-cn/usr/share/libreoffice/help/zh-CN/text/swriter"
    lo.mkdir(parents=True)
    (lo / "x.html").write_text(
        "<p>这个命令列出目录中的所有文件和子目录。</p><p>在对话框中选择要插入的图片文件。</p>", encoding="utf-8"
    )
    paras, stats = dd.extract(tmp_path)
    assert paras == ["这个命令列出目录中的所有文件和子目录。", "在对话框中选择要插入的图片文件。"]
    assert stats["manpages-zh"] == {"files": 2, "paragraphs": 1, "characters": 19}
    assert stats["libreoffice-help-zh-cn"]["paragraphs"] == 1 and stats["debian-edu-doc-zh-cn"]["files"] == 0


def test_a_failed_download_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    def no_apt(*a, **k):
        raise FileNotFoundError("apt-get")

    monkeypatch.setattr(dd.subprocess, "run", no_apt)
    assert dd.main(["--out", str(tmp_path / "out"), "--debs", str(tmp_path / "debs")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: could not download") and not (tmp_path / "out").exists()
