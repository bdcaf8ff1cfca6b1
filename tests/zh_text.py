"""What a Chinese-mode page shows in English: visible text (and Plotly's SVG text) against an allowlist of model names,
formulae, tag codes and symbols. Used by tests/test_browser.py; `python tests/zh_text.py URL` prints a page's words."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Words that stay as they are in zh mode: model and layer-type names, formulae and their symbols, the corpus's tag
# codes, special tokens, file formats and methods known by their English names, the tools a command names.
ALLOWED = {
    # models and architectures
    "word2vec",
    "ELMo",
    "BERT",
    "GPT",
    "LSTM",
    "biLSTM",
    "CNN",
    "RNN",
    "biRNN",
    "CRF",
    "char",
    "LM",
    "Transformer",
    "RoBERTa",
    "ALBERT",
    "TagLM",
    "CoVe",
    "CBOW",
    "ctxlab",
    "ctxlib",
    "SGNS",
    # formulae, measures and their symbols
    "softmax",
    "tanh",
    "cos",
    "IsNext",
    "NotNext",
    "NSP",
    "MLM",
    "F1",
    "task",
    "gamma",
    "exp",
    "log",
    "argmax",
    "top",
    "k",
    "top-1",
    "top-5",
    # the Transformer page's notation (ctxlib/mechanics.py): the block's parts by the names the papers and code use
    "Softmax",
    "RoPE",
    "FFN",
    "LayerNorm",
    "LN",
    "GELU",
    "QK",
    "HW",
    # special tokens
    "CLS",
    "SEP",
    "MASK",
    "UNK",
    "unk",
    "pad",
    "PAD",
    "S",
    # methods, formats, tools
    "PCA",
    "t-SNE",
    "tSNE",
    "SNE",
    "UMAP",
    "means",
    "k-means",
    "CSV",
    "PNG",
    "JSON",
    "URL",
    "jieba",
    "snownlp",
    "PKU",
    "python",
    "GPU",
    "CPU",
    "Plotly",
    "README",
    # units and number formats
    "KiB",
    "MiB",
    "KB",
    "MB",
    "GB",
    "nats",
    "bits",
    "int8",
    "fp32",
    "bf16",
    # People's Daily (PKU) tag codes
    "vn",
    "vd",
    "ad",
    "an",
    "nr",
    "ns",
    "nt",
    "nz",
    "Ng",
    "Vg",
    "Ag",
    "Dg",
    "Tg",
    # the papers the text cites
    "Peters",
    "Devlin",
    "Radford",
    "Lan",
    "Liu",
    "McCann",
    "Coenen",
    "Ethayarajh",
    "Mikolov",
    "Vaswani",
    "Clark",
    "et",
    "al",
    # data sets and organisations named in the lecture, and glossed terms (实例（token）)
    "SQuAD",
    "BooksCorpus",
    "GloVe",
    "POS",
    "NER",
    "B",
    "I",
    "PER",
    "LOC",
    "ORG",
    "OpenAI",
    "Google",
    "token",
    "fill-mask",
    "highway",
    "Highway",
    "ScalarMix",
    # the language switch names each language in its own words
    "Language",
    "English",
}
NAMES_WITH_IDS = ("RoBERTa", "ALBERT", "BERT-base", "BERT-large", "GPT-2")  # models the lecture's text cites
MODEL_IDS = {"word2vec", "elmo", "bert", "gpt"}  # the app's model ids, lower case in pickers and titles
NOT_WORDS = re.compile(
    r"[A-Za-z]+(?:_[A-Za-z]+)+"  # icon ligatures (keyboard_arrow_down) and ids
    r"|[\w<>\u4e00-\u9fff.-]*(?:/[\w<>\u4e00-\u9fff.-]+)+"
    r"|\b\w+\.(?:json|npz|pt|csv|txt|md|toml)\b"
)  # paths and file names
FORMULA = re.compile(r"^h\d$")  # h1, h2: ELMo's layer states h_{k,j}
WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]*[A-Za-z0-9]|[A-Za-z]{2,}")

COLLECT_JS = """() => {
  const root = document.querySelector('[data-testid="stMain"]') || document.body;
  const side = document.querySelector('[data-testid="stSidebar"]');
  const svg = [...document.querySelectorAll('.js-plotly-plot svg text')].map(t => t.textContent);
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {  // hover templates: shown on hover only
    for (const tr of (gd.data || [])) {
      for (const h of [].concat(tr.hovertemplate || [])) svg.push(String(h).replace(/%\\{[^}]*\\}/g, ' ').replace(/<[^>]*>/g, ' '));
    }
  }
  // icons are ligatures (upload, expand_more), not words; KaTeX is a formula (MultiHead(X), head_i, PE, sin)
  const skip = [...document.querySelectorAll('code, pre, textarea, input, .katex, [data-testid="stCode"], [data-testid="stIconMaterial"]')].map(e => e.innerText || e.value || '');
  return {text: root.innerText + '\\n' + (side ? side.innerText : ''), svg: svg, skip: skip};
}"""


def model_tokens(root: Path = ROOT) -> frozenset[str]:
    """Latin-letter tokens of the shipped models' vocabularies (xp, usb, sogo, ...): a page shows them when it shows a
    model's predictions, which are model output, not interface text. Words the English catalogue uses (the, in, check,
    word, ...) are left out, so interface English that leaks into zh mode is still caught."""
    vocab: set[str] = set()
    for f in sorted((root / "checkpoints").glob("*/vocab.json")):
        try:
            v = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        vocab |= {t for t in v.get("itos") or v.get("words") or [] if isinstance(t, str) and WORD.fullmatch(t)}
    catalogue = set()
    for f in (root / "ctxlib" / "app").rglob("*"):
        if f.suffix in (".toml", ".md", ".json") and f.is_file():
            catalogue |= {w.lower() for w in WORD.findall(f.read_text(encoding="utf-8", errors="replace"))}
    return frozenset(t for t in vocab if t.lower() not in catalogue)


MODEL_TOKENS = model_tokens()


def english_words(text: str, allowed=ALLOWED) -> list[str]:
    """The words of `text` written in Latin letters that are not allowed (single letters are symbols: n, v, x, γ)."""
    text = NOT_WORDS.sub(" ", text)
    text = re.sub(r"《[^》]*》", " ", text)  # a cited work's own title
    for name in NAMES_WITH_IDS:  # names that contain a model id: allowed whole, before the ids are split off
        text = text.replace(name, " ")
    for m in sorted(MODEL_IDS, key=len, reverse=True):  # "elmobiLSTM": a model id glued to a layer name
        text = re.sub(m, f" {m} ", text, flags=re.IGNORECASE)
    ok = lambda w: w in allowed or w.lower() in MODEL_IDS or bool(FORMULA.match(w))  # noqa: E731
    return [w for w in WORD.findall(text) if not ok(w) and not all(ok(p) for p in re.split(r"[-']", w) if p)]


def page_english(page, user_text: str = "") -> dict[str, list[str]]:
    """{where: [English words]} on a rendered page: its visible text and Plotly text, after clicking every tab;
    code blocks and input boxes (the user's own text and commands) and `user_text` are left out."""
    found: dict[str, list[str]] = {}
    tabs = page.query_selector_all('[role="tab"]')  # Streamlit 1.67: data-testid=stTab; no baseweb tabs any more
    for i in range(max(1, len(tabs))):
        if tabs:
            page.query_selector_all('[role="tab"]')[i].click()  # again each time: a tab that reruns redraws them
            page.wait_for_timeout(800)
            # a tab that runs when opened (st.tabs on_change="rerun": Type vs token) draws after its rerun
            page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=300_000)
        got = page.evaluate(COLLECT_JS)
        typed = (
            ALLOWED | MODEL_TOKENS | set(WORD.findall(" ".join(got["skip"] + [user_text])))
        )  # the user's own words may be English
        for where, t in (("text", got["text"]), ("plot", "\n".join(got["svg"]))):
            for line in t.splitlines():
                bad = english_words(line, typed)
                if bad:
                    found.setdefault(f"{where}: {line.strip()[:120]}", bad)
    return found


if __name__ == "__main__":
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        pg = b.new_page(viewport={"width": 1400, "height": 1200})
        for url in sys.argv[1:]:
            pg.goto(url)
            pg.wait_for_selector("h1", timeout=150000)
            pg.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=150000)
            pg.wait_for_timeout(1500)
            for where, words in page_english(pg).items():
                print(url.split("/")[-1][:30], "|", where, "->", words)
        b.close()
