"""bench/page_speed.py's parts that need no server: widget keys, the browser's widget messages, the timing log."""

import importlib.util
import sys
from pathlib import Path

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.Selectbox_pb2 import Selectbox
from streamlit.proto.Slider_pb2 import Slider
from streamlit.proto.TextArea_pb2 import TextArea

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
_spec = importlib.util.spec_from_file_location("page_speed", ROOT / "bench" / "page_speed.py")
ps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ps)


def test_widget_key_is_the_user_key_of_streamlit_ids():
    assert ps.widget_key("$$ID-0123abcd-tt_text") == "tt_text"
    assert ps.widget_key("$$ID-0123abcd-ft_example_True") == "ft_example_True"
    assert ps.widget_key("$$ID-0123abcd") == ""
    assert ps.widget_key("plain") == ""


def test_widget_states_are_what_a_browser_sends():
    t = ps.widget_state("text_area", TextArea(id="a", default="苹果 | 水果"), ("text", ps._new_sentence))
    assert t.id == "a" and t.string_value == "昨天，苹果 | 水果"
    sel = Selectbox(id="b", options=["x", "y", "z"], default=2)
    assert ps.widget_state("selectbox", sel, ("next",)).string_value == "x"  # wraps around
    assert ps.widget_state("selectbox", sel, ("prev",)).string_value == "y"
    s = ps.widget_state("slider", Slider(id="c", default=[0.05]), ("value", 0.1))
    assert list(s.double_array_value.data) == [0.1]
    ss = ps.widget_state("slider", Slider(id="d", options=["0: a", "1: b"], default=[1]), ("prev",))
    assert list(ss.string_array_value.data) == ["0: a"]
    b = BackMsg()
    b.ParseFromString(ps.cl.rerun_msg("lang=zh", "Home", "h", [t], "frag1"))
    assert (
        b.rerun_script.fragment_id == "frag1" and b.rerun_script.widget_states.widgets[0].string_value == t.string_value
    )


def test_server_time_reads_only_lines_after_the_run_was_sent(tmp_path):
    log = tmp_path / "t.log"
    log.write_text("1.0\ttype_token\t5000.0\n", encoding="utf-8")
    skip = len(ps.log_lines(log))
    assert ps.server_ms(log, skip) is None
    log.write_text(log.read_text() + "2.0\twarmup:umap\t9000.0\n2.1\ttraining_step\t30.0\n2.2\ttraining\t45.5\n")
    assert ps.server_ms(log, skip) == 45.5
    assert ps.server_ms(tmp_path / "missing.log", 0) is None
