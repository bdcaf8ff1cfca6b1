"""Plot builders: arrays in, a Plotly figure (or an HTML string) out; no Streamlit here.

One concept per module: `common` (fonts, layout, escaping, palette), `explorer`
(type/token maps, atlas, layer charts), `elmo` (the 2L+1 layers and the mixing weights),
`attention` (BERT's attention views) and `pretraining` (MLM examples and fill-mask bars).
"""
