"""Targets on any metric: parsing, direction, reading an epoch's logs, and bad input at the CLI."""

import pytest

from cpustudy import targets
from cpustudy.errors import UserError


@pytest.mark.parametrize("text, metric, op, value", [
    ("val_sparse_categorical_accuracy=0.9", "val_sparse_categorical_accuracy", ">=", 0.9),
    ("val_auc=0.8", "val_auc", ">=", 0.8),
    ("val_loss=0.3", "val_loss", "<=", 0.3),  # a loss: lower is better
    ("val_mean_absolute_error=1.5", "val_mean_absolute_error", "<=", 1.5),
    ("val_loss>=0.3", "val_loss", ">=", 0.3),  # said explicitly: as said
    (" val_top5 <= 2e-1 ", "val_top5", "<=", 0.2),
])
def test_a_target_is_parsed_with_its_direction(text, metric, op, value):
    t = targets.parse(text)
    assert (t.metric, t.op, t.value) == (metric, op, value)
    assert targets.parse(t.text) == t  # its stored text reads back the same


@pytest.mark.parametrize("text, says", [
    ("accuracy=0.9", "val_accuracy"),  # a training metric: the validation's is named
    ("val_loss", "METRIC=VALUE"),
    ("val_loss<=abc", "METRIC=VALUE"),
    ("val_loss<=nan", "METRIC=VALUE"),
    ("=0.9", "METRIC=VALUE"),
])
def test_a_bad_target_is_one_error_naming_the_form(text, says):
    with pytest.raises(UserError, match=says):
        targets.parse(text)


def test_reaching_and_reading_a_target():
    loss = targets.parse("val_loss<=0.3")
    assert loss.reached(0.3) and loss.reached(0.1) and not loss.reached(0.31) and not loss.reached(None)
    acc = targets.of_run(None, 0.9)
    assert acc == targets.Target("val_accuracy", ">=", 0.9)
    # --target-accuracy reads the validation accuracy whatever Keras named it
    assert targets.value_in(acc, {"val_sparse_categorical_accuracy": 0.91}) == 0.91
    assert targets.value_in(acc, {"val_binary_accuracy": 0.5, "val_acc": 0.7}) == 0.7  # acc before binary_accuracy
    assert targets.value_in(loss, {"val_accuracy": 0.9}) is None
    assert targets.of_run("val_auc=0.8", None) == targets.Target("val_auc", ">=", 0.8)
    assert targets.of_run(None, None) is None


@pytest.mark.parametrize("argv, says", [
    (["run", "mnist_mlp", "--target", "val_loss<=0.3", "--target-accuracy", "0.9"], "not both"),
    (["run", "mnist_mlp", "--target", "val_loss<=0.3", "--epochs", "3"], "--max-epochs instead of --epochs"),
    (["run", "mnist_mlp", "--target", "loss<=0.3"], "val_loss"),
    (["run", "mnist_mlp", "--target", "val_auc=0.8", "--data", "learnable"], "logs val_loss and val_accuracy only"),
    (["run", "mnist_mlp", "--target", "val_loss<=0.3", "--data", "synthetic"], "synthetic"),
    (["run", "mnist_mlp", "--target", "val_loss<=0.3", "--data", "learnable", "--steps-per-epoch", "20"],
     "drop --steps-per-epoch"),
    (["sweep", "--workloads", "mnist_mlp", "--vcpus", "1", "--target", "val_loss"], "METRIC=VALUE"),
])
def test_bad_target_input_is_one_line_exit_2_and_nothing_stored(tmp_path, capsys, argv, says):
    from cpustudy.cli.main import main

    db = tmp_path / "t.sqlite"
    assert main([*argv, "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1
    assert not db.exists()
