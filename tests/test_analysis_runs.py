"""Stored runs as the analysis reads them (cpustudy.analysis.runs): the reported build name says which
settings differed from the defaults."""

from __future__ import annotations

from cpustudy.analysis.runs import setting_tags


def build_with_setting(run: dict) -> str:
    """The build name plus its setting tags, as a configuration's name begins: ``tf+tfdata``, ``tf+b64``."""
    return "+".join([str(run.get("build")), *setting_tags(run)])


def test_settings_show_in_the_reported_build():
    base = {"study": "cpustudy", "workload": "mnist_mlp", "build": "tf", "vcpus": 2, "intra_threads": 2,
            "inter_threads": 2, "batch_size": 128, "input_pipeline": "numpy", "settings": "{}"}
    assert build_with_setting(base) == "tf"
    assert build_with_setting({**base, "input_pipeline": "tfdata"}) == "tf+tfdata"
    assert build_with_setting({**base, "batch_size": 64, "intra_threads": 1}) == "tf+b64+t1/2"
    assert build_with_setting({**base, "build": "tf-eigen",
                               "settings": '{"env": {"TF_ENABLE_ONEDNN_OPTS": "0"}}'}) == "tf-eigen"
    assert build_with_setting({**base, "settings": '{"env": {"TF_ENABLE_ONEDNN_OPTS": "1"}}'}) == \
        "tf+TF_ENABLE_ONEDNN_OPTS=1"
    assert build_with_setting({**base, "settings": '{"tuning_id": 3}'}) == "tf+tuned"


def test_build_family_is_the_stored_one_else_guessed_from_the_name():
    from cpustudy.analysis.runs import build_family

    assert build_family({"build": "mybuild", "settings": '{"build_family": "jax"}'}) == "jax"
    assert build_family({"build": "tf", "settings": "{}"}) == "pip"  # stored before runs kept their family
    assert build_family({"build": "compiled", "study": "woolf2017", "settings": None}) == "compiled"
    assert build_family({"build": "tf-eigen", "settings": "not JSON"}) == "other"
