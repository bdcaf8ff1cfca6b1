"""Parts of the Training page (pages/9_Training.py): which shipped models left a timeline to replay."""

import streamlit as st

from ctxlib import checkpoint, kinds, replay
from ctxlib.app import state, widgets
from ctxlib.app.i18n import msg


def replay_models() -> list[str]:
    """The models with a recorded timeline (the URL's ?model= checked against them); a note and the command that
    builds it for each one without; the page stops when none has one."""
    found = replay.find()
    for m, path in found.items():
        if path is None:
            st.caption(
                msg("training.none_w2v") if m not in kinds.names(timeline=True) else msg("training.none", model=m)
            )
            if m in kinds.names(timeline=True):
                widgets.for_teachers([widgets.command_line("teachers.build", checkpoint.rebuild_command(m), model=m)])
    have = [m for m, path in found.items() if path is not None]
    if not have:
        st.warning(msg("training.no_timeline"))
        widgets.for_teachers([widgets.command_line("teachers.build", checkpoint.rebuild_command("bert"), model="bert")])
        st.stop()
    state.choice("tr_model", "model", have, what=msg("training.url.model"))
    return have
