"""The Streamlit layer, the only part of ctxlib that imports streamlit (after spacy-streamlit's util/visualizer).

- `i18n`: the interface language, `msg(id)` from the string catalogue in `strings/<lang>/`, and the lecture
  prose in `strings/<lang>/lecture/*.md`;
- `loaders`: cached model loading and the cached computations of the explorer pages;
- `state`: widget values kept in the URL's query parameters, so a link reopens the same view;
- `widgets`: page header, model and layer pickers, error and model-table helpers.

Numbers are computed in Streamlit-free modules (`ctxlib.explore`, `ctxlib.analysis`, `ctxlib.viz`).
"""
