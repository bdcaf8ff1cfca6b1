"""2-D maps of token vectors, k-means clusters and the words that label them.

- `project(X, method)`: PCA (numpy SVD, the default: instant and deterministic),
  t-SNE (van der Maaten & Hinton 2008) or UMAP (McInnes et al. 2018). sklearn's
  manifold module and umap are imported only when asked for, because importing
  them costs seconds and the app's cold start matters.
- `kmeans(X, k)`: cosine k-means (k-means++ start, a few restarts), numpy only.
- `cluster_top_words(contexts, clusters)`: the most frequent context words that
  are typical of each cluster, used to label the clusters of the Polysemy atlas
  (after Coenen et al. 2019, "Visualizing and Measuring the Geometry of BERT").
"""

from __future__ import annotations

import logging
import unicodedata
from collections import Counter

import numpy as np

from .vecmath import EPS, unit_rows

log = logging.getLogger(__name__)

METHODS = ("pca", "tsne", "umap")
METHOD_NAMES = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}


def _as_matrix(X) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"expected a (n, dim) matrix, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("the vectors contain NaN or infinite values")
    return X


def pca(X, n_components: int = 2) -> np.ndarray:
    """(n, n_components) coordinates on the top principal components; zeros where there is no variance.

    Signs are fixed (largest |loading| positive) so the same data always gives the same picture.
    """
    X = _as_matrix(X)
    n = len(X)
    out = np.zeros((n, n_components))
    if n < 2:
        return out
    Xc = X - X.mean(0)  # (n, D)
    if not np.any(np.abs(Xc) > 1e-9 * max(1.0, float(np.abs(X).max()))):
        return out  # all points identical (word2vec tokens): one spot at the origin
    U, S, Vt = np.linalg.svd(Xc, full_matrices=False)
    k = min(n_components, len(S))
    for j in range(k):
        if S[j] <= 1e-9 * S[0]:
            break
        sign = 1.0 if Vt[j][np.argmax(np.abs(Vt[j]))] >= 0 else -1.0
        out[:, j] = U[:, j] * S[j] * sign
    return out


def tsne(X, seed: int = 0) -> np.ndarray:
    X = _as_matrix(X)
    n = len(X)
    if n < 4:
        return pca(X)
    from sklearn.manifold import TSNE  # lazy: ~1 s import

    perplexity = float(max(2.0, min(30.0, (n - 1) / 3.0)))
    init = pca(X) if np.ptp(pca(X)) > 0 else "random"
    if isinstance(init, np.ndarray):
        init = init / max(np.std(init[:, 0]), EPS) * 1e-4  # sklearn's recommended scale for PCA init
    from threadpoolctl import threadpool_limits

    # one OpenMP thread: for a few hundred points, more threads only fight over a shared CPU (3 s vs 14 s measured)
    with threadpool_limits(limits=1):
        return TSNE(
            n_components=2, perplexity=perplexity, init=init, random_state=seed, metric="cosine", max_iter=300
        ).fit_transform(X)  # 300 of sklearn's 1000 default: enough for <= 1000 points


_NUMBA_CACHED: list[int] = []  # how many of umap's/pynndescent's jitted functions got a disk cache (once a process)


def numba_disk_cache(prefixes: tuple[str, ...] = ("umap", "pynndescent")) -> int:
    """Give every jitted function of the imported `prefixes` modules that has no disk cache one (numba's
    `Dispatcher.enable_caching`, before its first compile), so their compiled code is kept under $NUMBA_CACHE_DIR.

    umap declares its hot functions without `cache=True` (fast_knn_indices, smooth_knn_dist,
    compute_membership_strengths, the layout epochs): every process compiled them again, ~40 s of CPU holding the
    GIL (the server's warm-up starved the page scripts of a class arriving). With this, a later process loads them
    in well under a second. Returns how many were enabled now; a function numba cannot cache is left as it is."""
    import sys

    try:
        from numba.core.caching import NullCache
        from numba.core.registry import CPUDispatcher
    except Exception:  # no numba: nothing to cache
        return 0
    n = 0
    for name, mod in list(sys.modules.items()):
        if mod is None or not name.startswith(prefixes):
            continue
        for obj in list(vars(mod).values()):
            if (
                isinstance(obj, CPUDispatcher)
                and getattr(obj, "__module__", None) == name
                and isinstance(getattr(obj, "_cache", None), NullCache)
                and not obj.overloads
            ):
                try:
                    obj.enable_caching()
                    n += 1
                except Exception as e:  # e.g. a function numba refuses to cache: it compiles as before
                    log.debug("no numba disk cache for %s.%s: %s", name, obj.__name__, e)
    return n


def umap(X, seed: int = 0) -> np.ndarray:
    X = _as_matrix(X)
    n = len(X)
    if n < 5:
        return pca(X)
    import umap as umap_lib  # lazy: several seconds (numba)

    if not _NUMBA_CACHED:
        _NUMBA_CACHED.append(numba_disk_cache())

    reducer = umap_lib.UMAP(
        n_components=2,
        n_neighbors=max(2, min(15, n - 1)),
        metric="cosine",
        random_state=seed,
        init="random" if n < 10 else "spectral",
    )
    return reducer.fit_transform(X)


def project(X, method: str = "pca", seed: int = 0, normalize: bool = True) -> np.ndarray:
    """(n, 2) coordinates of the rows of X. `method` is 'pca', 'tsne' or 'umap'.

    With `normalize`, PCA sees unit-length rows, so the map shows directions (what cosine measures) and a few
    long vectors cannot stretch it; t-SNE and UMAP use the cosine metric anyway."""
    method = (method or "pca").lower().replace("-", "")
    if method not in METHODS:
        raise ValueError(f"projection must be one of {METHODS}, got {method!r}")
    X = _as_matrix(X)
    if method == "pca":
        return pca(unit_rows(X) if normalize else X)
    if len(X) >= 2 and np.allclose(X, X[0]):
        return np.zeros((len(X), 2))  # t-SNE/UMAP cannot place identical points meaningfully
    return tsne(X, seed) if method == "tsne" else umap(X, seed)


def kmeans(X, k: int, seed: int = 0, n_init: int = 4, iters: int = 50) -> np.ndarray:
    """Cluster ids (n,) from spherical (cosine) k-means; k is clipped to the number of distinct points."""
    X = unit_rows(_as_matrix(X))
    n = len(X)
    if k < 1:
        raise ValueError("k must be >= 1")
    k = min(k, n)
    if k <= 1 or n == 0:
        return np.zeros(n, dtype=int)
    rng = np.random.default_rng(seed)
    best, best_score = None, -np.inf
    for _ in range(n_init):
        centres = [X[rng.integers(n)]]
        for _c in range(1, k):  # k-means++ on cosine distance
            d = 1.0 - np.max(X @ np.stack(centres).T, axis=1)
            d = np.clip(d, 0, None)
            p = d / d.sum() if d.sum() > 0 else np.full(n, 1.0 / n)
            centres.append(X[rng.choice(n, p=p)])
        C = np.stack(centres)  # (k, D)
        for _it in range(iters):
            assign = np.argmax(X @ C.T, axis=1)
            newC = np.stack([X[assign == j].sum(0) if np.any(assign == j) else C[j] for j in range(k)])
            newC = unit_rows(newC)
            if np.allclose(newC, C):
                break
            C = newC
        score = float(np.sum(np.max(X @ C.T, axis=1)))
        if score > best_score:
            best, best_score = assign, score
    # number clusters by size (0 = largest) so colours are stable
    sizes = Counter(best.tolist())
    order = {c: i for i, (c, _) in enumerate(sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])))}
    return np.array([order[c] for c in best], dtype=int)


def _is_content(word: str) -> bool:
    if not word.strip():
        return False
    return any(unicodedata.category(ch)[0] in "LN" for ch in word)


# function words that would label every cluster
STOPWORDS = frozenset(
    "的 了 在 是 和 与 及 也 就 都 而 又 很 对 把 被 为 以 这 那 一 个 有 我 你 他 她 它 们 我们 "
    "不 没 还 上 中 等 从 到 着 过 将 并 之 其 于 但 或 则 让 给 啊 吧 呢 吗 要 会 能 可以 说".split()
)


def cluster_top_words(contexts: list[list[str]], clusters, topn: int = 3, exclude: tuple[str, ...] = ()) -> dict:
    """{cluster id (any hashable): up to `topn` context words}: frequent in the cluster and typical of it.

    A word's score is count_in_cluster * (count_in_cluster / count_overall): frequency weighted by how
    much of the word's use falls in this cluster, so 的/了-like words that occur everywhere lose.
    """
    clusters = list(clusters)
    if len(contexts) != len(clusters):
        raise ValueError("contexts and clusters differ in length")
    overall: Counter = Counter()
    per: dict = {}
    for words, c in zip(contexts, clusters):
        seen = {w for w in words if _is_content(w) and w not in exclude and w not in STOPWORDS}
        overall.update(seen)
        per.setdefault(c, Counter()).update(seen)
    out = {}
    for c, cnt in per.items():
        scored = sorted(
            ((n * n / overall[w], n, w) for w, n in cnt.items() if n >= 2 or len(cnt) < topn),
            key=lambda x: (-x[0], -x[1], x[2]),
        )
        out[c] = [w for _, _, w in scored[:topn]]
    return out
