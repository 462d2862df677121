"""The price catalog (cpustudy.prices): shipped rates, user price files, quotes on one basis,
accelerators told from a run's software report."""

from __future__ import annotations

import csv
import io
import re
from importlib import resources
from pathlib import Path

import pytest

from cpustudy import prices as pricing
from cpustudy.errors import UserError
from cpustudy.store import Store

HEADER = ",".join(pricing.COLUMNS)
#: How a shipped row read from SkyPilot's catalog repository names the file, commit and day it was read.
COMMIT_RE = re.compile(r"^SkyPilot catalog \(github\.com/skypilot-org/skypilot-catalog, catalogs/v8/(?P<cloud>gcp|aws)/"
                       r"vms\.csv at commit (?P<commit>[0-9a-f]{12}), read (?P<date>\d{4}-\d{2}-\d{2})\): ")


def test_catalog_has_the_studys_2017_rates():
    cat = pricing.Catalog.load()
    rows = {r.instance_type: r for r in cat.rows if r.provider == "gcp-2017"}
    eight = 0.060 * 1.0607  # preemptible n1-highcpu-8 with the 6.07 % Skylake premium
    for v, k in ((8, 1), (16, 2), (32, 4), (64, 8)):
        assert rows[f"n1-highcpu-{v}"].spot == pytest.approx(eight * k, abs=1e-9)
        assert rows[f"n1-highcpu-{v}"].vcpus == v
    assert rows["n1-highcpu-64"].spot == pytest.approx(0.509, abs=5e-4)
    gpu = rows["n1-standard-1+1xK80"]
    assert gpu.on_demand == pytest.approx(0.045 + 0.70) and gpu.accelerator == "K80" and gpu.spot is None


def _shipped_csv_rows() -> list[dict[str, str]]:
    text = resources.files("cpustudy").joinpath("data/prices.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(line for line in io.StringIO(text) if not line.startswith("#")))


def test_every_row_names_its_source_and_date_and_unchecked_rows_say_so():
    rows = _shipped_csv_rows()
    assert rows and set(pricing.COLUMNS) <= set(rows[0])
    for r in rows:
        assert r["source"].strip() and r["as_of"].strip()
        if r["provider"] == "gcp-2017":
            assert "the study's rate" in r["source"], r
            if r["spot_usd_per_hour"]:  # the 2017 on-demand CPU figure is recalled, not the study's
                assert "not verified on" in r["source"], r
            continue
        # current figures either name the check they passed, the catalog commit they were read from, or
        # say they were not checked
        on_demand_part, _, spot_part = r["source"].partition("spot:")
        checked = "SkyPilot's catalog (gcp vms.csv, us-central1), checked 2026-11-22"
        read = COMMIT_RE.match(r["source"])
        if read:
            assert read["date"] == r["as_of"] and f"on-demand {r['region']}" in on_demand_part, r
            assert re.search(r"zone \S+, the lowest of the region's", spot_part), r
        else:
            assert "not verified on" in on_demand_part or checked in on_demand_part, r
        if r["spot_usd_per_hour"]:
            assert spot_part, r
            assert "estimate" in spot_part or checked.replace("'s", "") in spot_part or read, r
    families = pricing.Catalog.load().families()
    for fam in ("gcp:c3-highcpu", "gcp:n2-highcpu", "gcp:t2d-standard", "aws:c7i", "gcp-2017:n1-highcpu"):
        assert fam in families
    accelerators = {r.accelerator.split("-")[0] for r in pricing.Catalog.load().rows if r.accelerator}
    assert {"T4", "L4", "A100", "K80"} <= accelerators


def test_no_shipped_row_has_spot_above_on_demand():
    rows = pricing.shipped_rows()
    both = [r for r in rows if r.spot is not None and r.on_demand is not None]
    assert len(both) >= 14
    for r in both:
        assert r.spot <= r.on_demand, r.name


def test_no_shipped_spot_price_is_an_unsourced_estimate():
    """Spot figures guessed as a share of on-demand were emptied (SkyPilot's catalog or --prices supplies
    them); the n2-highcpu sizes keep the checked per-vCPU rate, not the old estimate about 24 % lower."""
    for r in pricing.shipped_rows():
        spot_part = r.source.partition("spot:")[2]
        if r.spot is not None and r.provider != "gcp-2017":
            assert "of on-demand" not in spot_part, r.name
            # checked against SkyPilot's catalog, or scaled from the rate so checked
            assert "SkyPilot catalog" in spot_part or "per-vCPU rate of the checked" in spot_part, r.name
        if r.family == "n2-highcpu":
            assert r.spot == pytest.approx(0.09379 / 8 * r.vcpus, rel=5e-4), r.name  # not 24 % lower
    emptied = ("c3-highcpu-8", "t2d-standard-1", "a2-highgpu-1g")
    for name in emptied:
        row = pricing.Catalog.load().instance(f"gcp:{name}")
        assert row.spot is None and row.on_demand is not None
        assert "spot: none with a source" in row.source, row.source


def test_checked_spot_rows_from_skypilot():
    cat = pricing.Catalog.load()
    checked = {8: 0.09379, 16: 0.18758, 32: 0.37517, 64: 0.75034}
    for v, rate in checked.items():
        row = cat.instance(f"gcp:n2-highcpu-{v}")
        assert row.spot == rate, row
        assert "spot: SkyPilot catalog (gcp vms.csv, us-central1), checked 2026-11-22" in row.source
        assert "estimate" not in row.source
    # the other sizes: the checked per-vCPU rate, labelled an estimate
    per_vcpu = 0.09379 / 8
    for v in (2, 4, 48, 80, 96):
        row = cat.instance(f"gcp:n2-highcpu-{v}")
        assert row.spot == pytest.approx(per_vcpu * v, abs=6e-6), row
        assert "per-vCPU rate of the checked n2-highcpu sizes (0.011724 USD/vCPU-h), estimate" in row.source
    h100 = cat.instance("gcp:a3-highgpu-1g")
    assert h100.spot == 3.35377 and h100.spot == pytest.approx(0.36117 + 2.9926)
    assert "checked 2026-11-22" in h100.source


def test_instance_with_as_many_vcpus_or_the_next_larger():
    cat = pricing.Catalog.load()
    p, note = cat.cpu_instance("gcp:c3-highcpu", 8)
    assert p.instance_type == "c3-highcpu-8" and note == ""
    p, note = cat.cpu_instance("gcp:c3-highcpu", 2)
    assert p.instance_type == "c3-highcpu-4" and "next larger" in note and "c3-highcpu-4" in note
    p, note = cat.cpu_instance("gcp:c3-highcpu", 10)
    assert p.instance_type == "c3-highcpu-22"
    p, note = cat.cpu_instance("gcp:t2d-standard", 1000)
    assert p is None and "largest" in note
    with pytest.raises(UserError, match="no CPU instance family 'gcp:c99'"):
        cat.cpu_instance("gcp:c99", 2)
    with pytest.raises(UserError, match="PROVIDER:FAMILY"):
        pricing.parse_family("c3-highcpu")


def test_one_basis_no_fallback_to_the_other_rate():
    cat = pricing.Catalog.load()
    n2 = cat.instance("gcp:n2-highcpu-8")
    q = pricing.quote(n2, spot=True)
    assert q.kind == "spot" and q.usd_per_hour == n2.spot and q.note == ""
    q = pricing.quote(n2, spot=False)
    assert q.kind == "on-demand" and q.usd_per_hour == n2.on_demand
    g6 = cat.instance("aws:g6.xlarge")
    assert g6.spot is None and pricing.quote(g6, spot=True) is None  # not priced on-demand instead
    assert pricing.unpriced_note(g6, spot=True) == (
        "no spot price for aws:g6.xlarge in the catalog: not priced on the spot basis; add one with "
        "--prices FILE or compare on-demand with --on-demand")
    q = pricing.quote(g6, spot=False)
    assert q.kind == "on-demand" and q.usd_per_second == pytest.approx(0.8048 / 3600)
    # a study's own pricing is the one exception, and says so
    k80 = cat.instance("gcp-2017:n1-standard-1+1xK80")
    assert pricing.quote(k80, spot=True) is None
    q = pricing.quote(k80, spot=True, own_pricing_of="Woolf (2017)")
    assert q.kind == "on-demand" and q.usd_per_hour == pytest.approx(0.745)
    assert q.note.startswith("on-demand by the study's own pricing")


def test_basis_sentence():
    assert pricing.basis_sentence(False) == (
        "Costs: spot prices (the study's premise: preemptible instances); on-demand with --on-demand")
    od = pricing.basis_sentence(True)
    assert od.startswith("Costs: on-demand prices") and "spot" in od


def test_price_file_overrides_same_instance_and_adds_new_ones(tmp_path):
    f = tmp_path / "mine.csv"
    f.write_text(
        "# my negotiated rates\n"
        f"{HEADER}\n"
        "gcp,n2-highcpu-8,,8,8,,0,us-central1,0.20,0.05,my contract,2026-11-01\n"
        "acme,box.4,,4,8,,,eu,0.10,,acme price sheet,2026-10-01\n"
    )
    cat = pricing.Catalog.load(f)
    n2 = cat.instance("gcp:n2-highcpu-8")
    assert (n2.on_demand, n2.spot, n2.source, n2.origin) == (0.20, 0.05, "my contract", str(f))
    assert len([r for r in cat.rows if r.instance_type == "n2-highcpu-8"]) == 1
    assert "acme:box" in cat.families()  # family derived from the name
    p, _ = cat.cpu_instance("acme:box", 3)
    assert p.instance_type == "box.4"


@pytest.mark.parametrize(
    "row,message",
    [
        ("gcp,x-8,,8,8,,0,us,-0.5,,src,2026-01-01", "on_demand_usd_per_hour '-0.5' is negative"),
        ("gcp,x-8,,8,8,,0,us,cheap,,src,2026-01-01", "on_demand_usd_per_hour 'cheap' is not a number"),
        ("gcp,x-8,,8,8,,0,us,0.1,free,src,2026-01-01", "spot_usd_per_hour 'free' is not a number"),
        ("gcp,x-8,,8,8,,0,us,0,,src,2026-01-01", "must be greater than zero"),
        ("gcp,x-8,,eight,8,,0,us,0.1,,src,2026-01-01", "vcpus 'eight' is not a whole number"),
        ("gcp,x-8,,8,8,,0,us,,,src,2026-01-01", "no price"),
        ("gcp,x-8,,8,8,,0,us,0.1,,,2026-01-01", "source is empty"),
        ("gcp,x-8,,8,8,,0,us,0.1,,src,", "as_of is empty"),
        ("gcp,x-8,8,8,,0,us,0.1,,src,2026-01-01", "11 fields where the header has 12"),
        ("gcp,x-8,,8,8,,0,us,nan,,src,2026-01-01", "not a finite number"),
    ],
)
def test_malformed_price_rows_name_file_and_line(tmp_path, row, message):
    f = tmp_path / "bad.csv"
    f.write_text(f"{HEADER}\ngcp,ok-2,,2,2,,0,us,0.1,,src,2026-01-01\n{row}\n")
    with pytest.raises(UserError) as exc:
        pricing.Catalog.load(f)
    assert f"{f}:3:" in str(exc.value) and message in str(exc.value)


def test_missing_columns_and_duplicates_are_refused(tmp_path):
    f = tmp_path / "cols.csv"
    f.write_text("provider,instance_type,vcpus\ngcp,x-2,2\n")
    with pytest.raises(UserError, match=r"cols\.csv:1: price file header lacks column\(s\) memory_gib"):
        pricing.Catalog.load(f)
    f.write_text(f"{HEADER}\ngcp,x-2,,2,2,,0,us,0.1,,s,2026\ngcp,x-2,,2,2,,0,us,0.2,,s,2026\n")
    with pytest.raises(UserError, match=r"cols\.csv:3: .*already on line 2"):
        pricing.Catalog.load(f)
    with pytest.raises(UserError, match="no such price file"):
        pricing.Catalog.load(tmp_path / "absent.csv")
    (tmp_path / "empty.csv").write_text("# only a comment\n")
    with pytest.raises(UserError, match="empty price file"):
        pricing.Catalog.load(tmp_path / "empty.csv")


def test_bad_price_file_is_one_line_error_from_the_cli(run_cli, tmp_path, db):
    with Store.open(db) as s:
        m = s.machine_id({"fingerprint": "fp-test", "cpu_model": "Test CPU", "logical_cpus": 2})
        run = s.start_run(m, {"workload": "mnist_mlp", "build": "tf", "vcpus": 2, "epochs": 2})
        s.add_epoch(run, {"epoch": 1, "elapsed_s": 2.0, "warmup": True})
        s.add_epoch(run, {"epoch": 2, "elapsed_s": 1.0})
        s.finish_run(run, "ok", {"epoch_time_s": 1.0, "timed_epochs": 1})
    f = tmp_path / "prices.csv"
    f.write_text(f"{HEADER}\ngcp,n2-highcpu-2,,2,2,,0,us-central1,-1,,src,2026-01-01\n")
    r = run_cli("report", "--db", db, "--prices", f, "--out", tmp_path / "out")
    assert r.code == 2
    assert r.err.count("\n") == 1 and f"{f}:2:" in r.err and "negative" in r.err
    assert "Traceback" not in r.err
    r = run_cli("report", "--db", db, "--instance-family", "gcp:nope", "--out", tmp_path / "out")
    assert r.code == 2 and "no CPU instance family 'gcp:nope'" in r.err


@pytest.mark.parametrize(
    "text,name",
    [("NVIDIA H100 80GB HBM3", "H100"), ("Tesla K80", "K80"), ("nvidia-l4", "L4"), ("Tesla T4", "T4"),
     ("NVIDIA A100-SXM4-40GB", "A100"), ("SSE4.1 SSE4.2 AVX L4cache", None), ("", None)],
)
def test_detect_accelerator(text, name):
    assert pricing.detect_accelerator(text) == name


def test_gpu_instance_by_accelerator():
    cat = pricing.Catalog.load()
    assert cat.gpu_instance("gcp", "L4").instance_type == "g2-standard-4"
    assert cat.gpu_instance("gcp", "A100").instance_type == "a2-highgpu-1g"
    assert cat.gpu_instance("aws", "T4").instance_type == "g4dn.xlarge"
    assert cat.gpu_instance("aws", "A100") is None  # only an 8-GPU instance there
    with pytest.raises(UserError, match="no instance 'gcp:nope'"):
        cat.instance("gcp:nope")


def test_shipped_catalog_is_package_data():
    path = Path(pricing.__file__).parents[1] / "data" / "prices.csv"
    assert path.is_file()
    assert len(pricing.shipped_rows()) >= 40


#: The families a 2026 user would rent, shipped with prices read from SkyPilot's catalog repository.
NEW_CPU_FAMILIES = ("gcp:c4-highcpu", "gcp:c4d-highcpu", "gcp:n4-highcpu", "gcp:t2d-standard", "aws:c7i", "aws:c7a",
                    "aws:c8g")


def test_prices_says_shipped_in_every_format_and_suggests_the_families_a_prefix_names(run_cli):
    """The table said origin `shipped` where CSV and JSON wrote `catalog` for the same rows; `--family n4` failed
    without naming n4-highcpu."""
    import json

    table = run_cli("prices", "--no-skypilot", "--instance", "gcp:n4-highcpu-8")
    assert table.code == 0 and "shipped" in table.out and "catalog  " not in table.out
    (row,) = csv.DictReader(io.StringIO(run_cli("prices", "--no-skypilot", "--instance", "gcp:n4-highcpu-8",
                                                "--format", "csv").out))
    assert row["origin"] == "shipped"
    (row,) = json.loads(run_cli("prices", "--no-skypilot", "--instance", "gcp:n4-highcpu-8", "--format", "json").out)
    assert row["origin"] == "shipped"
    r = run_cli("prices", "--no-skypilot", "--family", "n4")
    assert r.code == 2 and r.err.strip().endswith("no price in the catalog matches --family n4: did you mean "
                                                   "--family gcp:n4-highcpu?")
    r = run_cli("prices", "--no-skypilot", "--family", "aws:c7")
    assert r.code == 2 and "did you mean --family aws:c7a or --family aws:c7i?" in r.err
    # a known family that another flag leaves without a row is not suggested back
    r = run_cli("prices", "--no-skypilot", "--family", "n4-highcpu", "--region", "mars")
    assert r.code == 2 and "did you mean" not in r.err and "see `cpustudy prices` without them" in r.err


@pytest.mark.parametrize("family", NEW_CPU_FAMILIES)
def test_new_families_are_listed_with_source_and_date(run_cli, family):
    r = run_cli("prices", "--no-skypilot", "--family", family, "--format", "csv")
    assert r.code == 0, r.err
    rows = list(csv.DictReader(io.StringIO(r.out)))
    provider = family.split(":")[0]
    assert {row["provider"] for row in rows} == {provider}
    assert {row["region"] for row in rows} == {pricing.DEFAULT_REGIONS[provider]}
    vcpus = {int(row["vcpus"]) for row in rows}
    assert {4, 8, 16, 32} <= vcpus and len(vcpus) >= 6, vcpus
    read = [row for row in rows if COMMIT_RE.match(row["source"])]
    assert len(read) >= 6 and all(COMMIT_RE.match(row["source"])["cloud"] == provider for row in read)
    for row in read:
        assert row["as_of"] == COMMIT_RE.match(row["source"])["date"] and row["origin"] == "shipped"
        assert 0 < float(row["spot_usd_per_hour"]) < float(row["on_demand_usd_per_hour"]), row
        if provider == "aws":  # an availability zone of the region, not a Local Zone such as use1-atl2-az1
            assert re.search(r"zone use1-az\d, ", row["source"]), row["source"]


def test_new_families_are_priced_by_the_cost_function():
    cat = pricing.Catalog.load(sky=False)
    for family in NEW_CPU_FAMILIES:
        provider = family.split(":")[0]
        row, note = cat.cpu_instance(family, 8)
        assert row.vcpus == 8 and note == ""
        cost = cat.cost(pricing.Resources(provider, row.instance_type), 1800.0, spot=True)
        assert cost.price is row and cost.quote.kind == "spot"
        assert cost.usd == pytest.approx(row.spot / 2)
        assert cat.cost(pricing.Resources(provider, row.instance_type), 1800.0, spot=False).usd == pytest.approx(
            row.on_demand / 2)
    # a size the family lacks is priced as the next larger, and says so
    row, note = cat.cpu_instance("aws:c8g", 3)
    assert row.instance_type == "c8g.xlarge" and "next larger" in note
    # a Graviton 4 costs less per vCPU-hour on demand than the Sapphire Rapids c7i of the same size
    graviton, intel = cat.instance("aws:c8g.4xlarge"), cat.instance("aws:c7i.4xlarge")
    assert graviton.vcpus == intel.vcpus and graviton.on_demand < intel.on_demand


GPU_SUM_RE = re.compile(r"= (?P<vm>\S+) VM (?P<vm_od>[\d.]+) \+ (?P<n>\d+)x (?P<acc>\w+) (?P<gpu_od>[\d.]+) USD/h;.*: "
                        r"VM (?P<vm_spot>[\d.]+) \+ \d+x \w+ (?P<gpu_spot>[\d.]+) USD/h$")


def test_new_gpu_vms_are_priced_with_their_gpus():
    cat = pricing.Catalog.load(sky=False)
    gcp = [r for r in cat.rows if r.provider == "gcp" and COMMIT_RE.match(r.source) and r.accelerator]
    expected = {"n1-standard-4+1xT4", "n1-standard-8+1xT4"} | {f"g2-standard-{v}" for v in (4, 12, 16, 24, 32, 48)}
    assert expected <= {r.instance_type for r in gcp}
    for r in gcp:  # the VM's price plus its GPUs', both bases, as the source shows
        m = GPU_SUM_RE.search(r.source)
        assert m and m["acc"] == r.accelerator and int(m["n"]) == r.accelerator_count, r.source
        assert r.on_demand == pytest.approx(float(m["vm_od"]) + float(m["gpu_od"]), abs=1e-6)
        assert r.spot == pytest.approx(float(m["vm_spot"]) + float(m["gpu_spot"]), abs=1e-6)
    t4 = cat.cost(pricing.Resources("gcp", "n1-standard-8", "T4", 1), 3600.0, spot=False)
    assert t4.price.instance_type == "n1-standard-8+1xT4" and t4.usd == pytest.approx(t4.price.on_demand)
    l4 = cat.cost(pricing.Resources("gcp", "g2-standard-24", "L4", 2), 3600.0, spot=True)
    assert l4.price.accelerator_count == 2 and l4.usd == pytest.approx(l4.price.spot)
    with pytest.raises(UserError, match="no price for gcp g2-standard-24 with 1x L4"):
        cat.cost(pricing.Resources("gcp", "g2-standard-24", "L4", 1), 60.0, spot=True)
    for name, acc in (("aws:g4dn.xlarge", "T4"), ("aws:g6.2xlarge", "L4"), ("aws:g6.24xlarge", "L4")):
        row = cat.instance(name)
        assert row.accelerator == acc and COMMIT_RE.match(row.source) and row.spot < row.on_demand
