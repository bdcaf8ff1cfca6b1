"""ctxlab home page (placeholder until the app issue lands)."""
import streamlit as st

import ctxlib

st.set_page_config(page_title="ctxlab", layout="wide")
st.title("ctxlab: contextual word embeddings")
names = ctxlib.available()
st.write("Models available:", ", ".join(names) if names else "none yet; build one with `python -m ctxlib train word2vec`")
